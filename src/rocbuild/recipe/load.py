"""Load a recipe file: YAML with positions -> validated Recipe (templates left unevaluated).

Every problem is a RecipeError naming file:line:column, the key path, the
bad value and what is accepted; misspelt keys get a "did you mean".
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import jinja2
import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from rocbuild.errors import RecipeError, UsageError
from rocbuild.fsutil import within
from rocbuild.labels import LOCAL_LABEL_RE
from rocbuild.recipe import templating
from rocbuild.recipe.extends import MergeError, merge
from rocbuild.recipe.files import (
    RECIPE_SUFFIXES,
    SOURCE_FILE_ACCEPTED,
    TREE_PATH_ACCEPTED,
    find_patch_file,
    patch_dirs_for,
    tree_path_problem,
)
from rocbuild.recipe.model import (
    PATCH_KINDS,
    SCHEMA_VERSION,
    STEP_KINDS,
    VERIFY_KINDS,
    Conditional,
    Entry,
    Option,
    PatchKind,
    Position,
    Recipe,
    Refusal,
    Requires,
    Source,
    StepKind,
    VerifyKind,
)
from rocbuild.recipe.yamlpos import DuplicateKey, Mark, TooComplex, YList, YMap, compose
from rocbuild.source.spec import (
    FULL_SHA_RE,
    GIT_URLS_ACCEPTED,
    SDIST_ACCEPTED,
    SHA256_RE,
    check_ref,
    git_url_problem,
    sdist_problem,
)

MAX_RECIPE_BYTES = 1 << 20
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
# Finds the recipe an `extends: NAME` means, searching `beside` first; raises UsageError (with a
# "did you mean" hint) when there is none. The catalog provides the real one.
RecipeFinder = Callable[[str, Path], Path]

TOP_KEYS = {
    "schema": True, "name": True, "version": True, "summary": False, "homepage": False,
    "source": True, "requires": False, "options": False, "env": False,
    "patches": False, "steps": False, "verify": False, "local-version": False, "output": False, "runpath": False,
    "extends": False, "unsupported": False,
}
UNSUPPORTED_KEYS = {"when": True, "why": True, "step": False}
OUTPUTS = ("wheel", "tree")
RUNPATHS = ("as-built", "relative")
TREE_VERIFY_KINDS = ("command",)
SOURCE_KEYS = {"git": False, "path": False, "sdist": False, "ref": False, "commit": False, "submodules": False,
               "sha256": False}
GIT_ONLY_KEYS = ("ref", "commit", "submodules")
REQUIRES_KEYS = {"rocm": False, "tools": False, "python": False, "cmake-packages": False, "torch": False}
TORCH_FLAVOURS = ("rocm",)
OPTION_KEYS = {"default": True, "choices": False, "multi": False, "help": False}
COPY_KEYS = {"from": True, "to": True}
REPLACE_KEYS = {"file": True, "find": True, "with": True, "count": False, "regex": False}
LINK_KEYS = {"from": True, "into": True}
STEP_COMMON = ("when", "name", "env", "cwd")
CMAKE_KEYS = {"source": False, "build": False, "defines": False, "generator": False, "args": False}
CMAKE_BUILD_KEYS = {"dir": False, "target": False, "jobs": False, "config": False}
MAKE_KEYS = {"dir": False, "target": False, "args": False, "jobs": False}
WHEEL_KEYS = {"dir": False, "args": False, "config-settings": False}
CODE_OBJECT_KEYS = {"archs": False, "files": False, "links": False}
LIB_RE = re.compile(r"^lib[A-Za-z0-9_+.-]+$")
CMAKE_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")
CONFIG_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
VERIFY_KEYS_EXTRA = ("expect", "when", "env", "name")


def load_recipe(path: str | Path, find_recipe: RecipeFinder | None = None) -> Recipe:
    path = Path(path)
    return load_recipe_text(read_recipe_text(path), path, find_recipe)


def read_recipe_text(path: Path) -> str:
    """A recipe file's text: a regular .yaml/.yml file of at most MAX_RECIPE_BYTES, in UTF-8."""
    if path.suffix not in RECIPE_SUFFIXES or Path(os.path.realpath(path)).suffix not in RECIPE_SUFFIXES:
        raise RecipeError("not a recipe file", file=str(path), accepted="a .yaml or .yml file")
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise RecipeError("not a regular file", file=str(path), accepted="a .yaml or .yml file")
        if info.st_size > MAX_RECIPE_BYTES:
            raise RecipeError(f"{info.st_size} bytes: larger than any recipe", file=str(path),
                              accepted=f"at most {MAX_RECIPE_BYTES} bytes")
        with open(path, "rb") as fh:
            data = fh.read(MAX_RECIPE_BYTES + 1)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise RecipeError("recipe file not found", file=str(path)) from None
    except OSError as exc:
        raise RecipeError(f"cannot read recipe: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise RecipeError(f"not UTF-8 text (byte {exc.start})", file=str(path), accepted="a UTF-8 YAML file") from None
    if len(data) > MAX_RECIPE_BYTES:
        raise RecipeError("larger than any recipe", file=str(path), accepted=f"at most {MAX_RECIPE_BYTES} bytes")
    return text


def load_recipe_text(text: str, path: str | Path, find_recipe: RecipeFinder | None = None) -> Recipe:
    return _Loader(text, Path(path), find_recipe or _same_folder).load()


def _same_folder(name: str, beside: Path) -> Path:
    """Without a catalog, `extends:` finds only recipes in the extending recipe's own folder."""
    if _is_path(name):
        return confined_recipe(beside / name, [beside])
    for suffix in RECIPE_SUFFIXES:
        if (beside / (name + suffix)).is_file():
            return confined_recipe(beside / (name + suffix), [beside])
    raise UsageError(f"no recipe named {name!r} in {beside}")


def _is_path(name: str) -> bool:
    return Path(name).suffix in RECIPE_SUFFIXES or "/" in name


def confined_recipe(path: Path, roots: list[Path]) -> Path:
    """`path` when it is a recipe file (.yaml/.yml) that, links followed, lies inside one of `roots`;
    a UsageError otherwise, which never shows the file's contents."""
    real = Path(os.path.realpath(path))
    if not real.is_file():
        raise UsageError(f"no recipe file {path}")
    if real.suffix not in RECIPE_SUFFIXES:
        raise UsageError(f"{path} is not a .yaml or .yml recipe file")
    if any(within(real, root, follow_links=True) for root in roots):
        return path
    raise UsageError(f"{path} is outside the recipe folders", hint="recipes extend recipes of their own folder "
                     "or of a recipe folder (--recipes, ROCBUILD_RECIPES, recipe sources, built-in)")


class _Loader:
    def __init__(self, text: str, path: Path, find_recipe: RecipeFinder):
        self.text = text
        self.path = path
        self.find_recipe = find_recipe
        self.texts = {str(path): text}  # every file read: this recipe and the ones it extends
        self.bases: list[tuple[Path, str]] = []

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

    # -- extends ------------------------------------------------------------

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
        except yaml.YAMLError as exc:
            raise self.error(f"invalid YAML: {exc}", None, Mark(1, 1, str(path))) from None

    def extend(self, data: YMap, chain: list[Path]) -> YMap:
        """Follow `extends:` down to a recipe that extends nothing, merging on the way back."""
        if "extends" not in data:
            return data
        mark = data.value_marks["extends"]
        name = self.string(data["extends"], "extends", mark)
        base_path = self.find_base(name, chain[-1], mark)
        if base_path.resolve() in [p.resolve() for p in chain]:
            cycle = " -> ".join(p.name for p in chain + [base_path])
            raise self.error("recipes extend each other in a circle", "extends", mark, value=name,
                             accepted=f"a recipe that does not lead back here ({cycle})")
        try:
            text = read_recipe_text(base_path)
        except RecipeError as exc:
            raise self.error(f"cannot read the recipe it extends ({base_path}): {exc.message}", "extends", mark,
                             value=name, accepted=exc.accepted) from None
        self.texts[str(base_path)] = text
        self.bases.append((base_path, text))
        base = self.parse(text, base_path)
        if not isinstance(base, YMap):
            raise self.error("the recipe it extends is not a YAML mapping", "extends", mark, value=name)
        base = self.extend(base, chain + [base_path])
        child = YMap(data)
        child.mark, child.key_marks, child.value_marks = data.mark, dict(data.key_marks), dict(data.value_marks)
        del child["extends"]
        try:
            return merge(base, child)
        except MergeError as exc:
            raise self.error(exc.message, exc.key, exc.mark, accepted=exc.accepted) from None

    def find_base(self, name: str, beside: Path, mark: Mark) -> Path:
        """A recipe of the same folder, any known recipe, or a path (relative to the extending file)
        to a recipe file inside a recipe folder: the finder decides, and refuses anything else."""
        try:
            return self.find_recipe(name, beside.parent)
        except UsageError as exc:
            if _is_path(name):
                raise self.error(f"cannot extend {name!r}: {exc.message}", "extends", mark, value=name,
                                 accepted="a recipe name, or the path of a .yaml recipe inside this recipe's "
                                          "folder or another recipe folder") from None
            raise self.error(f"no recipe named {name!r} to extend", "extends", mark, value=name,
                             accepted="a recipe name (`rocbuild recipes`) or a path to a .yaml file",
                             suggestion=exc.hint.split("\n")[0] if exc.hint and "did you mean" in exc.hint
                             else None) from None

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
                self.mapping(raw, ekey, vmark, {"value": True, "when": False})
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
                keys = {"name": True, "when": False, **({"version": False} if versions is not None else {})}
                self.mapping(item, ikey, imark, keys)
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

    # -- sections -----------------------------------------------------------

    def load(self) -> Recipe:
        data = self.parse(self.text, self.path)
        if not isinstance(data, YMap):
            raise self.error("a recipe is a YAML mapping", None, Mark(1, 1), value=_show(data),
                             accepted="keys " + ", ".join(TOP_KEYS))
        data = self.extend(data, [self.path])
        top = self.mapping(data, "", data.mark, TOP_KEYS)
        vm = top.value_marks

        schema = top["schema"]
        if schema != SCHEMA_VERSION or isinstance(schema, bool):
            raise self.error("unsupported schema version", "schema", vm["schema"], value=schema,
                             accepted=str(SCHEMA_VERSION))
        name = self.string(top["name"], "name", vm["name"])
        if not NAME_RE.match(name):
            raise self.error("invalid recipe name", "name", vm["name"], value=name,
                             accepted="lower-case letters, digits, '.', '_' and '-', starting with a letter or digit")
        version = self.string(top["version"], "version", vm["version"])
        try:
            Version(version)
        except InvalidVersion:
            raise self.error("not a PEP 440 version", "version", vm["version"], value=version,
                             accepted="a version such as 0.50.1 or 2.2.4.post1") from None

        options = self.options(top.get("options"), vm.get("options"))
        output = self.output(top, vm)
        steps = self.steps(top["steps"], vm["steps"], output) if "steps" in top else ()
        if not steps and output == "wheel":
            raise self.error("missing required key 'steps'" if "steps" not in top else
                             "a recipe needs at least one step", "steps", vm.get("steps", top.mark),
                             accepted=", ".join(STEP_KINDS) + " (a recipe with `output: tree` may have none)")
        verify = self.verify(top.get("verify"), vm.get("verify"))
        if output == "tree":
            for entry in verify:
                if entry.kind not in TREE_VERIFY_KINDS:
                    raise self.error(f"a {entry.kind} check needs a wheel; this recipe's output is a tree",
                                     entry.pos.key, Mark(entry.pos.line, entry.pos.column), value=entry.kind,
                                     accepted="command: [...] (with expect:), run in the prepared tree")
        return Recipe(
            path=self.path,
            text=self.text,
            name=name,
            version=version,
            summary=self.string(top.get("summary", ""), "summary", vm.get("summary", top.mark)),
            homepage=self.string(top.get("homepage", ""), "homepage", vm.get("homepage", top.mark)),
            source=self.source(top["source"], vm["source"]),
            requires=self.requires(top.get("requires"), vm.get("requires")),
            options=options,
            env=self.env_map(top["env"], "env", vm["env"]) if "env" in top else (),
            patches=self.patches(top.get("patches"), vm.get("patches")),
            steps=steps,
            verify=verify,
            local_version=self.local_version(top, vm),
            output=output,
            runpath=self.runpath(top, vm),
            unsupported=self.unsupported(top.get("unsupported"), vm.get("unsupported"),
                                         tuple(e.name or e.kind for e in steps)),
            bases=tuple(self.bases),
            patch_dirs=tuple(self.patch_dirs()),
        )

    def unsupported(self, value: Any, mark: Mark | None, step_names: tuple[str, ...]) -> tuple[Conditional, ...]:
        """Combinations (of ROCm, options, targets) the recipe knows cannot build: each a `when:` and a
        `why:`, refused before anything is fetched; with `step:`, only builds that would run that step
        are (one stopped before it with --until is not)."""
        if value is None:
            return ()
        items = self.seq(value, "unsupported", mark or Mark(1, 1), "entries {when: TEMPLATE, why: TEXT}")
        out = []
        for i, item in enumerate(items):
            key, imark = f"unsupported[{i}]", items.item_marks[i]
            entry = self.mapping(item, key, imark, UNSUPPORTED_KEYS)
            why = self.string(entry["why"], f"{key}.why", entry.value_marks["why"])
            step = self.string(entry["step"], f"{key}.step", entry.value_marks["step"]) if "step" in entry else None
            if step is not None and step not in step_names:
                raise self.error("names no step of this recipe", f"{key}.step", entry.value_marks["step"],
                                 value=step, accepted=", ".join(step_names),
                                 suggestion=difflib.get_close_matches(step, step_names, n=1) or None)
            out.append(Conditional(Refusal(why, step), self.when(entry, key), self.pos(key, imark),
                                   self.when_at(entry, key)))
        return tuple(out)

    def output(self, top: YMap, vm: dict[str, Any]) -> str:
        return self.choice(top, vm, "output", OUTPUTS, "unknown output kind",
                           "wheel (the default: verified wheels in the wheelhouse) or tree "
                           "(a prepared, patched source tree)")

    def runpath(self, top: YMap, vm: dict[str, Any]) -> str:
        return self.choice(top, vm, "runpath", RUNPATHS, "unknown runpath choice",
                           "as-built (the default: the wheel's libraries keep the RUNPATH the build gave "
                           "them) or relative (entries into the work folder become $ORIGIN-relative)")

    def choice(self, top: YMap, vm: dict[str, Any], key: str, choices: tuple[str, ...], problem: str,
               accepted: str) -> str:
        """A top-level key that takes one of `choices`; the first is its default."""
        if key not in top:
            return choices[0]
        value = self.string(top[key], key, vm[key])
        if value not in choices:
            raise self.error(problem, key, vm[key], value=value, accepted=accepted,
                             suggestion=difflib.get_close_matches(value, choices, n=1) or None)
        return value

    def local_version(self, top: YMap, vm: dict[str, Any]) -> str | None:
        if "local-version" not in top:
            return None
        raw = top["local-version"]
        if raw is None:
            return ""
        value = self.tstring(raw, "local-version", vm["local-version"])
        if value and not templating.is_template(value) and not LOCAL_LABEL_RE.match(value):
            raise self.error("not a PEP 440 local version label", "local-version", vm["local-version"],
                             value=value, accepted="letters and digits separated by '.', '_' or '-' "
                             "(e.g. rocm6.1), or \"\" for none")
        return value

    def source(self, value: Any, mark: Mark) -> Source:
        src = self.mapping(value, "source", mark, SOURCE_KEYS)
        vm = src.value_marks
        if sum(k in src for k in ("git", "path", "sdist")) != 1:
            raise self.error("give exactly one of git, path or sdist", "source", mark, value=sorted(src),
                             accepted="git: URL (with ref/commit/submodules), path: a local folder, or "
                                      "sdist: NAME==VERSION (with sha256)")
        for key in GIT_ONLY_KEYS:
            if key in src and "git" not in src:
                raise self.error(f"{key} applies to git sources only", f"source.{key}", vm[key], value=src[key],
                                 accepted="ref, commit and submodules beside git:; sha256 beside sdist:")
        if "sha256" in src and "sdist" not in src:
            raise self.error("sha256 applies to sdist sources only", "source.sha256", vm["sha256"],
                             value=src["sha256"], accepted="sha256 beside sdist: NAME==VERSION")
        if "sdist" in src:
            return self.sdist_source(src, vm)
        commit = None
        if "commit" in src:
            commit = self.tstring(src["commit"], "source.commit", vm["commit"])
            if not templating.is_template(commit):
                commit = commit.lower()
            if not templating.is_template(commit) and not FULL_SHA_RE.match(commit):
                raise self.error("not a whole commit id", "source.commit", vm["commit"], value=src["commit"],
                                 accepted="the commit's full 40 hexadecimal digits (an abbreviation can be "
                                          "matched by a crafted commit)")
        # ref and commit may be templates (e.g. picked by an option); they are rendered when planning.
        ref = self.tstring(src["ref"], "source.ref", vm["ref"]) if "ref" in src else None
        if ref is not None and not templating.is_template(ref):
            try:
                check_ref(ref, "source.ref")
            except UsageError as exc:
                raise self.error(exc.message, "source.ref", vm["ref"], value=ref,
                                 accepted="a branch, tag or commit id, e.g. v0.28.1") from None
        git = self.string(src["git"], "source.git", vm["git"]) if "git" in src else None
        if git is not None and (problem := git_url_problem(git)) is not None:
            raise self.error(problem, "source.git", vm["git"], value=git, accepted=GIT_URLS_ACCEPTED)
        return Source(
            git=git,
            path=self.source_path(src, vm) if "path" in src else None,
            ref=ref,
            commit=commit,
            submodules=self.boolean(src["submodules"], "source.submodules", vm["submodules"])
            if "submodules" in src else False,
        )

    def sdist_source(self, src: YMap, vm: dict[str, Any]) -> Source:
        requirement = self.string(src["sdist"], "source.sdist", vm["sdist"])
        if (problem := sdist_problem(requirement)) is not None:
            raise self.error(problem, "source.sdist", vm["sdist"], value=requirement, accepted=SDIST_ACCEPTED)
        sha256 = None
        if "sha256" in src:
            sha256 = self.string(src["sha256"], "source.sha256", vm["sha256"]).lower()
            if not SHA256_RE.match(sha256):
                raise self.error("not a sha256 digest", "source.sha256", vm["sha256"], value=src["sha256"],
                                 accepted="64 hexadecimal digits, as `sha256sum` prints them")
        return Source(sdist=requirement, sha256=sha256)

    def source_path(self, src: YMap, vm: dict[str, Any]) -> str:
        """Relative to the file that says it: a base recipe's folder stays its own when extended."""
        path = self.string(src["path"], "source.path", vm["path"])
        written_in = vm["path"].file
        if written_in and Path(written_in) != self.path:
            return str(Path(written_in).parent / path)
        return path

    def requires(self, value: Any, mark: Mark | None) -> Requires:
        if value is None:
            return Requires()
        req = self.mapping(value, "requires", mark, REQUIRES_KEYS)
        vm = req.value_marks
        rocm = None
        if "rocm" in req:
            rocm = self.string(req["rocm"], "requires.rocm", vm["rocm"])
            try:
                SpecifierSet(rocm)
            except InvalidSpecifier:
                raise self.error("not a version specifier", "requires.rocm", vm["rocm"], value=rocm,
                                 accepted="a PEP 440 specifier such as '>=6.1' or '>=5.7,<7'") from None
        torch = self.torch_requirement(req["torch"], vm["torch"]) if "torch" in req else None
        tool_versions: dict[str, str] = {}
        return Requires(
            torch=torch,
            rocm=rocm,
            tools=self.names(req["tools"], "requires.tools", vm["tools"], versions=tool_versions)
            if "tools" in req else (),
            tool_versions=tuple(sorted(tool_versions.items())),
            python=self.names(req["python"], "requires.python", vm["python"], MODULE_RE,
                              "an importable module name such as setuptools or torch.utils") if "python" in req else (),
            cmake_packages=self.names(req["cmake-packages"], "requires.cmake-packages", vm["cmake-packages"])
            if "cmake-packages" in req else (),
        )

    def torch_requirement(self, raw: Any, mark: Mark) -> Conditional:
        """`torch: rocm`, or `torch: {value: rocm, when: TEMPLATE}` where only some options need torch."""
        key, when, when_pos = "requires.torch", None, None
        if isinstance(raw, YMap):
            self.mapping(raw, key, mark, {"value": True, "when": False})
            when, when_pos = self.when(raw, key), self.when_at(raw, key)
            mark, raw, key = raw.value_marks["value"], raw["value"], "requires.torch.value"
        flavour = self.string(raw, key, mark)
        if flavour not in TORCH_FLAVOURS:
            raise self.error("unknown torch flavour", key, mark, value=flavour,
                             accepted="rocm (the target python's torch must be a ROCm build), or "
                                      "{value: rocm, when: TEMPLATE}")
        return Conditional(flavour, when, self.pos(key, mark), when_pos)

    def options(self, value: Any, mark: Mark | None) -> tuple[Option, ...]:
        if value is None:
            return ()
        if not isinstance(value, YMap):
            raise self.error("expected a mapping of option names", "options", mark, value=_show(value),
                             accepted="NAME: {default: ..., choices: [...], help: ...}")
        out = []
        for name, body in value.items():
            key = f"options.{name}"
            if not isinstance(name, str) or not IDENT_RE.match(name):
                raise self.error("invalid option name", key, value.key_marks[name], value=name,
                                 accepted="letters, digits and _ (it is used as options.NAME in templates)")
            body = self.mapping(body, key, value.value_marks[name], OPTION_KEYS)
            vm = body.value_marks
            multi = self.boolean(body["multi"], f"{key}.multi", vm["multi"]) if "multi" in body else False
            choices = None
            if "choices" in body:
                items = self.seq(body["choices"], f"{key}.choices", vm["choices"], "strings")
                choices = tuple(self.string(c, f"{key}.choices[{i}]", items.item_marks[i])
                                for i, c in enumerate(items))
            default = self.string(body["default"], f"{key}.default", vm["default"])
            parts = tuple(p.strip() for p in default.split(",") if p.strip()) if multi else (default,)
            if choices is not None:
                for part in parts:
                    if part not in choices:
                        raise self.error("default is not one of the choices", f"{key}.default", vm["default"],
                                         value=part, accepted=", ".join(choices))
            out.append(Option(
                name=name,
                default=parts if multi else default,
                choices=choices,
                multi=multi,
                help=self.string(body.get("help", ""), f"{key}.help", vm.get("help", body.mark)),
            ))
        return tuple(out)

    def patches(self, value: Any, mark: Mark | None) -> tuple[Entry[PatchKind], ...]:
        if value is None:
            return ()
        items = self.seq(value, "patches", mark, "patch entries")
        out = []
        for i, item in enumerate(items):
            key, imark = f"patches[{i}]", items.item_marks[i]
            kind, entry = self.entry_kind(item, key, imark, PATCH_KINDS, ("when",))
            bkey, bmark = f"{key}.{kind}", entry.value_marks[kind]
            body = entry[kind]
            if kind == "diff":
                body = self.string(body, bkey, bmark)
                if templating.is_template(body):
                    raise self.error("a diff file name cannot be a template", bkey, bmark, value=body,
                                     accepted="a path under patches/, e.g. horovod/0001-fix.patch")
                if self.find_patch(body) is None:
                    raise self.error("patch file not found", bkey, bmark, value=body,
                                     accepted="a file under " + " or ".join(str(d) for d in self.patch_dirs()))
            elif kind == "replace":
                m = self.mapping(body, bkey, bmark, REPLACE_KEYS)
                vm = m.value_marks
                body = {
                    "file": self.tree_path(m["file"], f"{bkey}.file", vm["file"]),
                    "find": self.tstring(m["find"], f"{bkey}.find", vm["find"]),
                    "with": self.tstring(m["with"], f"{bkey}.with", vm["with"]),
                    "regex": self.boolean(m["regex"], f"{bkey}.regex", vm["regex"]) if "regex" in m else False,
                    "count": None,
                }
                if "count" in m:
                    count = m["count"]
                    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                        raise self.error("expected a positive whole number", f"{bkey}.count", vm["count"],
                                         value=count, accepted="1, 2, ... (how many matches are expected)")
                    body["count"] = count
                if body["regex"] and not templating.is_template(body["find"]):
                    try:
                        re.compile(body["find"], re.MULTILINE)
                    except re.error as exc:
                        raise self.error(f"invalid regular expression: {exc}", f"{bkey}.find", vm["find"],
                                         value=body["find"], accepted="a Python regular expression") from None
                if not body["find"]:
                    raise self.error("find is empty", f"{bkey}.find", vm["find"], accepted="a non-empty string")
            elif kind == "copy":
                m = self.mapping(body, bkey, bmark, COPY_KEYS)
                vm = m.value_marks
                body = {"from": self.source_file(m["from"], f"{bkey}.from", vm["from"]),
                        "to": self.tree_path(m["to"], f"{bkey}.to", vm["to"])}
            else:
                m = self.mapping(body, bkey, bmark, LINK_KEYS)
                vm = m.value_marks
                body = {"from": self.source_file(m["from"], f"{bkey}.from", vm["from"]),
                        "into": self.tree_path(m["into"], f"{bkey}.into", vm["into"])}
            out.append(Entry(kind, body, self.when(entry, key), self.pos(key, imark),
                             when_pos=self.when_at(entry, key)))
        return tuple(out)

    def tree_path(self, value: Any, key: str, mark: Mark) -> str:
        """A path in the source tree that a patch changes: relative, and staying inside the tree."""
        text = self.tstring(value, key, mark)
        if not templating.is_template(text) and (problem := tree_path_problem(text)) is not None:
            raise self.error(problem, key, mark, value=text, accepted=TREE_PATH_ACCEPTED)
        return text

    def source_file(self, value: Any, key: str, mark: Mark) -> str:
        """What copy/link read: relative to the source tree (and inside it), or an absolute path that
        the plan checks against the ROCm prefix and the recipe's folders."""
        text = self.tstring(value, key, mark)
        if not templating.is_template(text) and not os.path.isabs(text) and tree_path_problem(text) is not None:
            raise self.error("leaves the source tree", key, mark, value=text, accepted=SOURCE_FILE_ACCEPTED)
        return text

    def patch_dirs(self) -> list[Path]:
        """Beside this recipe first, then beside each recipe it extends, then the built-in patches."""
        dirs: list[Path] = []
        for path in [self.path] + [p for p, _ in self.bases]:
            dirs += [d for d in patch_dirs_for(path) if d not in dirs]
        return dirs

    def find_patch(self, name: str) -> Path | None:
        return find_patch_file(name, self.patch_dirs())

    def steps(self, value: Any, mark: Mark, output: str) -> tuple[Entry[StepKind], ...]:
        items = self.seq(value, "steps", mark, "step entries")
        out = []
        names: set[str] = set()
        for i, item in enumerate(items):
            key, imark = f"steps[{i}]", items.item_marks[i]
            kind, entry = self.entry_kind(item, key, imark, STEP_KINDS, STEP_COMMON)
            if kind == "wheel" and output == "tree":
                raise self.error("a wheel step in a recipe whose output is a tree", f"{key}.wheel",
                                 entry.key_marks["wheel"], value="wheel",
                                 accepted="cmake, cmake-build, make, run, shell (or drop `output: tree`)")
            bkey, bmark = f"{key}.{kind}", entry.value_marks[kind]
            body = self.step_body(kind, entry[kind], bkey, bmark)
            name = None
            if "name" in entry:
                name = self.string(entry["name"], f"{key}.name", entry.value_marks["name"])
                if not NAME_RE.match(name):
                    raise self.error("invalid step name", f"{key}.name", entry.value_marks["name"], value=name,
                                     accepted="lower-case letters, digits, '.', '_' and '-'")
            name = name or _unique(kind, names)
            if name in names:
                raise self.error("duplicate step name", f"{key}.name", entry.value_marks.get("name", imark),
                                 value=name, accepted="a name not used by another step")
            names.add(name)
            cwd = None
            if "cwd" in entry:
                cwd = self.tstring(entry["cwd"], f"{key}.cwd", entry.value_marks["cwd"])
            env = self.env_map(entry["env"], f"{key}.env", entry.value_marks["env"]) if "env" in entry else ()
            out.append(Entry(kind, body, self.when(entry, key), self.pos(key, imark), name=name, env=env, cwd=cwd,
                             when_pos=self.when_at(entry, key)))
        return tuple(out)

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

    def step_body(self, kind: str, body: Any, key: str, mark: Mark) -> Any:
        if kind == "run":
            return self.argv(body, key, mark)
        if kind == "shell":
            script = self.tstring(body, key, mark)
            try:
                templating.check_shell_template(script)
            except templating.ShellQuoting as exc:
                raise self.error(str(exc), key, mark, value=script, accepted="${{ ... }} as a word of its own "
                                 "outside quotes, e.g. echo ${{ options.msg }}") from None
            return script
        allowed = {"cmake": CMAKE_KEYS, "cmake-build": CMAKE_BUILD_KEYS, "make": MAKE_KEYS, "wheel": WHEEL_KEYS}[kind]
        if body is None:
            body = YMap()
            body.mark, body.key_marks, body.value_marks = mark, {}, {}
        m = self.mapping(body, key, mark, allowed)
        vm = m.value_marks
        out: dict[str, Any] = {}
        for name, raw in m.items():
            k = f"{key}.{name}"
            if name == "config-settings":
                out[name] = self.string_map(raw, k, vm[name], CONFIG_KEY_RE, "build backend settings",
                                            "KEY: value (passed as --config-settings=KEY=value)",
                                            "letters, digits, _ . - (e.g. cmake.define.FOO)")
            elif name == "defines":
                out[name] = self.string_map(raw, k, vm[name], CMAKE_VAR_RE, "CMake variables", "NAME: value",
                                            "letters, digits, _ . : -")
            elif name == "args":
                out[name] = self.argv(raw, k, vm[name])
            elif name == "jobs":
                if isinstance(raw, bool) or not (isinstance(raw, int) and raw > 0 or isinstance(raw, str)):
                    raise self.error("expected a positive whole number", k, vm[name], value=raw,
                                     accepted="1, 2, ... or a template such as ${{ jobs }}")
                out[name] = self.tstring(raw, k, vm[name])
            else:
                out[name] = self.tstring(raw, k, vm[name])
        return out

    def verify(self, value: Any, mark: Mark | None) -> tuple[Entry[VerifyKind], ...]:
        if value is None:
            return ()
        items = self.seq(value, "verify", mark, "verify entries")
        out = []
        for i, item in enumerate(items):
            key, imark = f"verify[{i}]", items.item_marks[i]
            kind, entry = self.entry_kind(item, key, imark, VERIFY_KINDS, VERIFY_KEYS_EXTRA)
            if "expect" in entry and kind != "command":
                raise self.error("expect only goes with command", f"{key}.expect", entry.key_marks["expect"],
                                 value="expect", accepted="command: [...] with expect: [regex, ...]")
            body = self.verify_body(kind, entry, key)
            env = self.env_map(entry["env"], f"{key}.env", entry.value_marks["env"]) if "env" in entry else ()
            name = self.string(entry["name"], f"{key}.name", entry.value_marks["name"]) if "name" in entry else None
            out.append(Entry(kind, body, self.when(entry, key), self.pos(key, imark), when_pos=self.when_at(entry, key),
                             name=name or f"verify-{i + 1}", env=env))
        return tuple(out)

    def verify_body(self, kind: str, entry: YMap, key: str) -> dict[str, Any]:
        k, mark, raw = f"{key}.{kind}", entry.value_marks[kind], entry[kind]
        if kind == "command":
            return {"argv": self.argv(raw, k, mark), "expect": self.expect(entry, key)}
        if kind == "wheel-contains":
            return {"glob": self.tstring(raw, k, mark)}
        if kind == "import":
            module = self.tstring(raw, k, mark)
            if not templating.is_template(module) and not MODULE_RE.match(module):
                raise self.error("not a module name", k, mark, value=module, accepted="a dotted name such as pkg.sub")
            return {"module": module}
        # code-objects: true/empty (the build's archs, every ELF), {archs: [...], files: [globs]}, or
        # false: the wheel has no device code of its own (a wrapper over rocBLAS, say); CUDA is still checked.
        if raw is None or raw is True:
            return {"archs": None, "files": (), "links": (), "required": True}
        if raw is False:
            return {"archs": None, "files": (), "links": (), "required": False}
        m = self.mapping(raw, k, mark, CODE_OBJECT_KEYS)
        archs = None
        if "archs" in m:
            seq = self.seq(m["archs"], f"{k}.archs", m.value_marks["archs"], "gfx targets")
            archs = tuple(self.tstring(a, f"{k}.archs[{j}]", seq.item_marks[j]) for j, a in enumerate(seq))
        files: tuple[str, ...] = ()
        if "files" in m:
            fv, fm = m["files"], m.value_marks["files"]
            if isinstance(fv, str):
                files = (self.tstring(fv, f"{k}.files", fm),)
            else:
                seq = self.seq(fv, f"{k}.files", fm, "globs of paths inside the wheel")
                files = tuple(self.tstring(g, f"{k}.files[{j}]", seq.item_marks[j]) for j, g in enumerate(seq))
        links: tuple[str, ...] = ()
        if "links" in m:
            seq = self.seq(m["links"], f"{k}.links", m.value_marks["links"], "library names such as libamdhip64")
            for j, lib in enumerate(seq):
                lib = self.string(lib, f"{k}.links[{j}]", seq.item_marks[j])
                if not LIB_RE.match(lib):
                    raise self.error("not a library name", f"{k}.links[{j}]", seq.item_marks[j], value=lib,
                                     accepted="a shared library name without .so, e.g. libamdhip64 or libc10_hip")
                links += (lib,)
        return {"archs": archs, "files": files, "links": links, "required": True}

    def expect(self, entry: YMap, key: str) -> tuple[str, ...]:
        if "expect" not in entry:
            return ()
        ekey, emark = f"{key}.expect", entry.value_marks["expect"]
        items = self.seq(entry["expect"], ekey, emark, "regular expressions")
        pats = []
        for j, pat in enumerate(items):
            pk, pm = f"{ekey}[{j}]", items.item_marks[j]
            pat = self.tstring(pat, pk, pm)
            if not templating.is_template(pat):
                try:
                    re.compile(pat, re.MULTILINE)
                except re.error as exc:
                    raise self.error(f"invalid regular expression: {exc}", pk, pm, value=pat,
                                     accepted="a Python regular expression") from None
            pats.append(pat)
        return tuple(pats)


def _join(prefix: str, name: Any) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _unique(kind: str, taken: set[str]) -> str:
    if kind not in taken:
        return kind
    n = 2
    while f"{kind}-{n}" in taken:
        n += 1
    return f"{kind}-{n}"


def _show(value: Any) -> Any:
    if isinstance(value, YMap):
        return dict(value)
    if isinstance(value, YList):
        return list(value)
    return value
