"""The generic shape checks of recipe files: mappings with known keys, strings, templates, booleans,
lists, argv lists, `when:`, environment maps, name lists and entries of one kind. Each failure is a
RecipeError naming file:line:column, the key path, the value and what is accepted; the section
loaders (recipe/load.py) build on these."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, TypeVar

import jinja2
import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet

import rocbuild.recipe.keys as keys
import rocbuild.recipe.templating as templating
from rocbuild.errors import RecipeError
from rocbuild.recipe.model import Conditional, Position
from rocbuild.recipe.yamlpos import DuplicateKey, Mark, TooComplex, YList, YMap, compose, key_path_at

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# A tool on PATH or a CMake package: a plain name, never a path.
PLAIN_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENV_NAME_RE = IDENT_RE
# Options after which the next argv word is a program text (bash/sh -c, python -c, perl/node/ruby -e).
CODE_OPTIONS = ("-c", "-e", "-E", "--eval", "--command", "-Command")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# A tool on PATH or a CMake package: a plain name, never a path.
PLAIN_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENV_NAME_RE = IDENT_RE
# Variables that run code nobody sees in the plan: startup files and exported functions of shells, the
# dynamic loader's preloads and auditors, every git variable (config injection, helper programs) and the
# folders git and other tools read configuration from (HOME: ~/.gitconfig's core.fsmonitor runs a
# program), interpreters' startup hooks.
CODE_RUNNING_ENV = re.compile(
    r"^(?:BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|BASH_FUNC_\w*|BASH_XTRACEFD"
    r"|LD_PRELOAD|LD_AUDIT|LD_DEBUG\w*|LD_PROFILE\w*|LD_ORIGIN_PATH|GCONV_PATH|HOSTALIASES"
    r"|GIT_\w*|SSH_ASKPASS|PAGER|EDITOR|VISUAL|HOME|XDG_CONFIG_HOME|XDG_CONFIG_DIRS"
    r"|PYTHONSTARTUP|PYTHONINSPECT|PYTHONHOME|PYTHONEXECUTABLE|PYTHONUSERBASE|PYTHONSAFEPATH|PYTHONWARNINGS"
    r"|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|NODE_OPTIONS|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS"
    r"|LESSOPEN|LESSCLOSE|MANPAGER|TERMINFO)$")
KindT = TypeVar("KindT", bound=str)
CONDITIONAL_KEYS = keys.required(keys.CONDITIONAL_VALUE)
NAMED_KEYS = keys.required(keys.NAMED)
VERSIONED_KEYS = keys.required(keys.VERSIONED)


class ShapeReader:
    """Reads values of one recipe file (and the files it extends) with their positions."""

    def __init__(self, text: str, path: Path):
        self.text = text
        self.path = path
        self.texts = {str(path): text}  # every file read: this recipe and the ones it extends

    # -- errors -------------------------------------------------------------

    def error(self, message: str, key: str | None, mark: Mark | None, **extra: Any) -> RecipeError:
        line = mark.line if mark else None
        column = mark.column if mark else None
        file = (mark.file if mark else None) or str(self.path)
        lines = self.texts.get(file, "").splitlines()
        source_line = lines[line - 1] if line and 0 < line <= len(lines) else None
        return RecipeError(
            message, file=file, line=line, column=column, key=key,
            source_line=source_line, **extra,
        )

    def pos(self, key: str, mark: Mark) -> Position:
        return Position(mark.file or str(self.path), mark.line, mark.column, key)

    def parse(self, text: str, path: Path) -> Any:
        try:
            return compose(text, str(path))
        except TooComplex as exc:
            raise self.error(f"invalid recipe: {exc.message}", None, exc.mark) from None
        except DuplicateKey as dup:
            raise self.error(f"duplicate key (first given at line {dup.first.line})", dup.key, dup.mark,
                             value=dup.key, accepted="each key once per mapping") from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            m = Mark(mark.line + 1, mark.column + 1, str(path)) if mark else Mark(1, 1, str(path))
            raise self.error(f"invalid YAML: {exc.problem or exc.context}", None, m) from None
        except yaml.reader.ReaderError as exc:  # a character YAML refuses (a control character, say)
            line = text.count("\n", 0, exc.position) + 1
            column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
            char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
            raise self.error(f"invalid YAML: character {char} is not allowed in a recipe",
                             key_path_at(text, line), Mark(line, column, str(path)),
                             accepted="printable text (tabs and line breaks are fine)") from None
        except yaml.YAMLError as exc:
            raise self.error(f"invalid YAML: {exc}", None, Mark(1, 1, str(path))) from None

    # -- generic shape checks -----------------------------------------------

    def mapping(self, value: Any, key: str, mark: Mark | None, allowed: dict[str, bool]) -> YMap:
        if not isinstance(value, YMap):
            raise self.error("expected a mapping", key, mark, value=_show(value),
                             accepted="keys " + ", ".join(allowed))
        for name in value:
            if name not in allowed:
                close = difflib.get_close_matches(str(name), list(allowed), n=1, cutoff=0.6)
                raise self.error("unknown key", _join(key, name), value.key_marks[name],
                                 value=name, accepted=", ".join(allowed),
                                 suggestion=close[0] if close else None)
        for name, required in allowed.items():
            if required and name not in value:
                raise self.error(f"missing required key {name!r}", key, mark,
                                 accepted=", ".join(k for k, r in allowed.items() if r) + " (required)")
        return value

    def string(self, value: Any, key: str, mark: Mark, *, what: str = "a string") -> str:
        if isinstance(value, bool) or value is None or isinstance(value, (YMap, YList)):
            hint = what
            if isinstance(value, bool):
                hint += " (YAML reads yes/no/on/off/true/false as booleans: quote the value)"
            raise self.error(f"expected {what}", key, mark, value=_show(value), accepted=hint)
        if isinstance(value, (int, float)):
            # What was written, not what YAML made of it: `ref: 1.10` is not 1.1.
            return str(getattr(value, "raw", str(value)))
        if not isinstance(value, str):  # a date, bytes (!!binary), a set: not something a recipe writes
            raise self.error(f"expected {what}, not a {type(value).__name__}", key, mark, value=str(value),
                             accepted=what + " (quote it to keep YAML from reading it as a date or other type)")
        if "\0" in value:
            raise self.error("contains a NUL character, which no command, path or file can hold", key, mark,
                             value=value, accepted=what + " without \\0")
        return value

    def template(self, value: str, key: str, mark: Mark) -> str:
        if templating.is_template(value):
            try:
                unknown = templating.undeclared_names(value)
            except jinja2.TemplateSyntaxError as exc:
                raise self.error(f"template syntax error: {exc.message}", key, mark, value=value,
                                 accepted="jinja2 expressions inside ${{ ... }}") from None
            if unknown:
                name = min(unknown)
                close = difflib.get_close_matches(name, sorted(templating.CONTEXT_NAMES), n=2)
                raise self.error(f"template uses undefined name {name!r}", key, mark, value=value,
                                 accepted=", ".join(sorted(templating.CONTEXT_NAMES)),
                                 suggestion=close or None)
        return value

    def tstring(self, value: Any, key: str, mark: Mark) -> str:
        return self.template(self.string(value, key, mark), key, mark)

    def boolean(self, value: Any, key: str, mark: Mark) -> bool:
        if not isinstance(value, bool):
            raise self.error("expected true or false", key, mark, value=_show(value), accepted="true, false")
        return value

    def seq(self, value: Any, key: str, mark: Mark | None, what: str) -> YList:
        if not isinstance(value, YList):
            raise self.error("expected a list", key, mark, value=_show(value), accepted=f"a list of {what}")
        return value

    def argv(self, value: Any, key: str, mark: Mark) -> tuple[str, ...]:
        if isinstance(value, str):
            raise self.error("expected an argv list, not a string", key, mark, value=value,
                             accepted="a list such as [python, setup.py, bdist_wheel]; "
                                      "use a `shell:` step for a shell command line")
        items = self.seq(value, key, mark, "strings")
        if not items:
            raise self.error("argv list is empty", key, mark, accepted="a non-empty list of strings")
        argv = tuple(self.tstring(v, f"{key}[{i}]", items.item_marks[i]) for i, v in enumerate(items))
        for i, word in enumerate(argv[1:], start=1):
            # The word after -c/-e is a script for bash, sh, python, perl, node...: a value spliced in
            # there becomes code. Passed as an argument of its own it stays data.
            if argv[i - 1] in CODE_OPTIONS and templating.is_template(word):
                raise self.error(f"a ${{{{ }}}} value inside the script after {argv[i - 1]} would become code",
                                 f"{key}[{i}]", items.item_marks[i], value=word,
                                 accepted="the value as an argument of its own, e.g. [bash, -c, 'echo \"$1\"', "
                                          "bash, '${{ options.msg }}'] or [python, -c, 'import sys; "
                                          "print(sys.argv[1])', '${{ options.msg }}']")
        return argv

    def when(self, entry: YMap, key: str) -> str | None:
        if "when" not in entry:
            return None
        value = entry["when"]
        if isinstance(value, bool):
            return "true" if value else "false"
        return self.tstring(value, _join(key, "when"), entry.value_marks["when"])

    def when_at(self, entry: YMap, key: str) -> Position | None:
        return self.pos(_join(key, "when"), entry.value_marks["when"]) if "when" in entry else None

    def env_map(self, value: Any, key: str, mark: Mark) -> tuple[tuple[str, Conditional], ...]:
        if not isinstance(value, YMap):
            raise self.error("expected a mapping of variable names to values", key, mark,
                             value=_show(value), accepted="NAME: value, or NAME: {value: ..., when: ...}")
        out = []
        for name, raw in value.items():
            ekey = _join(key, name)
            kmark, vmark = value.key_marks[name], value.value_marks[name]
            if not isinstance(name, str) or not ENV_NAME_RE.match(name):
                raise self.error("not a valid environment variable name", ekey, kmark, value=name,
                                 accepted="letters, digits and _, not starting with a digit")
            if CODE_RUNNING_ENV.match(name):
                raise self.error("this variable makes a shell, the dynamic loader, git or an interpreter run "
                                 "code that no command in the plan shows", ekey, kmark, value=name,
                                 accepted="variables that configure a build (CC, CXXFLAGS, CMAKE_*, HIP_*, PATH, ...)")
            when, when_pos = None, None
            if isinstance(raw, YMap):
                self.mapping(raw, ekey, vmark, CONDITIONAL_KEYS)
                when, when_pos = self.when(raw, ekey), self.when_at(raw, ekey)
                vmark = raw.value_marks["value"]
                raw = raw["value"]
                ekey = _join(ekey, "value")
            text = self.tstring(raw, ekey, vmark)
            out.append((name, Conditional(text, when, self.pos(ekey, vmark), when_pos)))
        return tuple(out)

    def names(self, value: Any, key: str, mark: Mark, pattern: re.Pattern[str] = PLAIN_NAME_RE,
              what: str = "a name of letters, digits and . _ + - (no path)",
              versions: dict[str, str] | None = None) -> tuple[Conditional, ...]:
        """`versions`: where entries may carry `version:` (a PEP 440 specifier), collected by name."""
        items = self.seq(value, key, mark, "names (or {name: ..., when: ...})")
        out = []
        for i, item in enumerate(items):
            ikey, imark = f"{key}[{i}]", items.item_marks[i]
            when, when_pos = None, None
            if isinstance(item, YMap):
                self.mapping(item, ikey, imark, VERSIONED_KEYS if versions is not None else NAMED_KEYS)
                when, when_pos = self.when(item, ikey), self.when_at(item, ikey)
                if versions is not None and "version" in item:
                    spec = self.string(item["version"], f"{ikey}.version", item.value_marks["version"])
                    try:
                        SpecifierSet(spec)
                    except InvalidSpecifier:
                        raise self.error("not a version specifier", f"{ikey}.version", item.value_marks["version"],
                                         value=spec, accepted="PEP 440 specifiers, e.g. \">=3.22.1\"") from None
                    versions[str(item["name"])] = spec
                item, imark, ikey = item["name"], item.value_marks["name"], _join(ikey, "name")
            text = self.tstring(item, ikey, imark)
            if not templating.is_template(text) and not pattern.match(text):
                raise self.error("not a valid name here", ikey, imark, value=text, accepted=what)
            out.append(Conditional(text, when, self.pos(ikey, imark), when_pos))
        return tuple(out)

    def entry_kind(self, item: Any, key: str, mark: Mark, kinds: tuple[KindT, ...],
                   extra: tuple[str, ...]) -> tuple[KindT, YMap]:
        """The one kind key of an entry, as the member of `kinds` it names (so typed as that kind)."""
        accepted = "one of " + ", ".join(kinds) + " (plus " + ", ".join(extra) + ")"
        if not isinstance(item, YMap):
            raise self.error("expected a mapping with one kind key", key, mark, value=_show(item), accepted=accepted)
        found = [k for k in item if k in kinds]
        for name in item:
            if name not in kinds and name not in extra:
                close = difflib.get_close_matches(str(name), list(kinds) + list(extra), n=1, cutoff=0.6)
                raise self.error("unknown key", _join(key, name), item.key_marks[name], value=name,
                                 accepted=accepted, suggestion=close[0] if close else None)
        if len(found) != 1:
            raise self.error("needs exactly one kind key" if not found else
                             f"has more than one kind key ({', '.join(found)})", key, mark,
                             value=sorted(item), accepted=accepted)
        return next(k for k in kinds if k == found[0]), item

    def string_map(self, raw: Any, key: str, mark: Mark, key_re: re.Pattern[str], what: str, form: str,
                   keys_accepted: str) -> dict[str, str]:
        """A mapping of names to (template) strings; YAML booleans become CMake's ON/OFF."""
        if not isinstance(raw, YMap):
            raise self.error(f"expected a mapping of {what}", key, mark, value=_show(raw), accepted=form)
        out = {}
        for name, value in raw.items():
            k = f"{key}.{name}"
            if not isinstance(name, str) or not key_re.match(name):
                raise self.error(f"not a valid key for {what}", k, raw.key_marks[name], value=name,
                                 accepted=keys_accepted)
            if isinstance(value, bool):
                value = "ON" if value else "OFF"
            out[name] = self.tstring(value, k, raw.value_marks[name])
        return out


def _join(prefix: str, name: Any) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _show(value: Any) -> Any:
    if isinstance(value, YMap):
        return dict(value)
    if isinstance(value, YList):
        return list(value)
    return value
