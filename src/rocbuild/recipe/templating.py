"""The template language of recipes: jinja2 expressions in `${{ ... }}`, sandboxed, strict and bounded.

`${{` keeps recipe files valid YAML (a bare `{{` starts a flow mapping).

A recipe may come from a stranger, so a template can do little: expressions only
(no `${% %}` statements, so no loops, macros or assignments), no global functions,
a short list of filters and methods, and no value larger than MAX_VALUE
characters or items (checked before `*`, `+`, `~`, `join` or `replace` build
it). Everything else is refused with an error, never a hang or a 10 GB string.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextvars import ContextVar
from functools import cache, lru_cache
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

MARKER = "${{"
BLOCK_MARKER = "${%"
MAX_VALUE = 100_000  # characters of a string, items of a list
MAX_INT_BITS = 256

# The names a template may use; render.py fills them in.
CONTEXT_NAMES = frozenset(
    {"archs", "arch", "rocm", "python", "jobs", "options", "src", "build", "dist", "ref", "recipe", "torch",
     "sources"}
)
# Filters that neither reach attributes by name (attr, map, selectattr, groupby, sort(attribute=), ...) nor
# format strings nor pad text to a width; `join` and `replace` are bounded below.
FILTERS = ("join", "replace", "lower", "upper", "trim", "title", "capitalize", "default", "d", "length", "count",
           "first", "last", "list", "string", "int", "float", "abs", "round", "reverse", "select", "reject",
           "wordcount")
# Methods a template may call: the read-only ones of str/dict and rocm.has_header.
METHODS = frozenset({"has_header", "startswith", "endswith", "split", "rsplit", "lower", "upper", "strip",
                     "lstrip", "rstrip", "replace", "join", "count", "find", "get", "keys", "values", "items",
                     "removeprefix", "removesuffix", "isdigit"})

# Set while a shell step is rendered: each `${{ }}` result is collected there and replaced by a
# placeholder, which render.py turns into a reference to an environment variable.
_shell_values: ContextVar[list[str] | None] = ContextVar("_shell_values", default=None)
PLACEHOLDER = "\0{}\0"


class TooLarge(SecurityError):
    pass


def size(value: Any) -> int:
    """How large a value is, for the limits: characters of a string, items (and their sizes) of a list."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, tuple)):
        return len(value) + sum(size(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        return MAX_VALUE + 1
    return 1


def _bounded(value: Any, what: str) -> Any:
    if size(value) > MAX_VALUE:
        raise TooLarge(f"{what} would be larger than {MAX_VALUE} characters or items")
    return value


class _BoundedConcat(CodeGenerator):
    """`a ~ b` goes through the environment, which checks the size before joining."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class RecipeSandbox(ImmutableSandboxedEnvironment):
    code_generator_class = _BoundedConcat
    intercepted_binops = frozenset({"*", "**", "+", "%", "//"})

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        if op == "%" and isinstance(left, str):
            raise SecurityError("string formatting with % is not available in recipe templates")
        if op == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
                    if size(seq) * max(times, 0) > MAX_VALUE:
                        raise TooLarge(f"repeating a value {times} times would be larger than {MAX_VALUE}")
        if op == "**" and isinstance(left, int) and isinstance(right, int):
            if right > 0 and max(abs(left), 2).bit_length() * right > MAX_INT_BITS:
                raise TooLarge(f"{left} ** {right} is larger than templates need")
        if op == "+" and size(left) + size(right) > MAX_VALUE:
            raise TooLarge(f"joining these values would be larger than {MAX_VALUE}")
        return _bounded(self.binop_table[op](left, right), "the result")

    def bounded_concat(self, parts: tuple[Any, ...]) -> str:
        texts = [str(p) for p in parts]
        if sum(len(t) for t in texts) > MAX_VALUE:
            raise TooLarge(f"joining these values with ~ would be larger than {MAX_VALUE} characters")
        return "".join(texts)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 (jinja's signature)
        name = getattr(__obj, "__name__", "")
        if getattr(__obj, "__self__", None) is None or name not in METHODS:
            raise SecurityError(f"calling {name or __obj!r} is not available in recipe templates "
                                f"(methods: {', '.join(sorted(METHODS))})")
        owner = __obj.__self__
        if name == "join" and args and isinstance(owner, str):
            _check_join([str(a) for a in args[0]], owner)
        if name == "replace" and isinstance(owner, str) and len(args) >= 2:
            _check_replace(owner, str(args[0]), str(args[1]))
        return _bounded(super().call(__context, __obj, *args, **kwargs), "the result")


def _check_join(items: list[str], sep: str) -> None:
    """Before `sep.join(items)` (the filter or the method): the items, and a separator for each, within bounds."""
    if sum(len(i) for i in items) + len(items) * (2 + len(sep)) > MAX_VALUE:
        raise TooLarge(f"the joined text would be larger than {MAX_VALUE} characters")


def _check_replace(text: str, find: str, repl: str) -> None:
    """Before `text.replace(find, repl)` (the filter or the method): the result within bounds."""
    grows = text.count(find) * max(len(repl) - len(find), 0) if find else (len(text) + 1) * len(repl)
    if len(text) + grows > MAX_VALUE:
        raise TooLarge(f"the replaced text would be larger than {MAX_VALUE} characters")


@jinja2.pass_eval_context
def _join_filter(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> str:
    if attribute is not None:
        raise SecurityError("join(attribute=...) is not available in recipe templates")
    items = [str(v) for v in value]
    _check_join(items, str(d))
    return str(d).join(items)


def _replace_filter(value: Any, old: Any, new: Any, count: int | None = None) -> str:
    text, find, repl = str(value), str(old), str(new)
    _check_replace(text, find, repl)
    return text.replace(find, repl, -1 if count is None else int(count))


def _string_filter(value: Any) -> str:
    return str(_bounded(str(value), "the text"))


def _make_env(finalize: Callable[[Any], Any] | None) -> RecipeSandbox:
    env = RecipeSandbox(
        variable_start_string="${{",
        variable_end_string="}}",
        block_start_string="${%",
        block_end_string="%}",
        comment_start_string="${#",
        comment_end_string="#}",
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=finalize,
    )
    kept = {name: env.filters[name] for name in FILTERS}
    kept.update(join=_join_filter, replace=_replace_filter, string=_string_filter)
    env.filters = kept
    env.globals = {}
    return env


def is_template(value: Any) -> bool:
    return isinstance(value, str) and (MARKER in value or BLOCK_MARKER in value)


def _finalize(value: Any) -> Any:
    values = _shell_values.get()
    if values is None:
        return value
    values.append(_to_text(value))
    return PLACEHOLDER.format(len(values))


@cache
def environment() -> RecipeSandbox:
    """The shared environment (shell steps collect their values through `collecting_shell_values`)."""
    return _make_env(_finalize)


class collecting_shell_values:  # noqa: N801 (used as a context manager, like a function)
    """Inside it, every `${{ }}` result goes to `values` and renders as a numbered placeholder."""

    def __init__(self) -> None:
        self.values: list[str] = []

    def __enter__(self) -> list[str]:
        self.token = _shell_values.set(self.values)
        return self.values

    def __exit__(self, *exc: object) -> None:
        _shell_values.reset(self.token)


def _to_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def parse(source: str) -> nodes.Template:
    """Parse a template; statements are refused (TemplateSyntaxError), deep nesting too."""
    try:
        ast = environment().parse(source)
    except RecursionError:
        raise jinja2.TemplateSyntaxError("expression nested too deeply", 1) from None
    for node in ast.body:
        if not isinstance(node, nodes.Output):
            raise jinja2.TemplateSyntaxError(
                "statements (${% ... %}) are not available in recipe templates: use expressions in ${{ ... }}, "
                "such as ${{ 'a' if options.x == 'y' else 'b' }}", node.lineno)
    return ast


@lru_cache(maxsize=1024)
def compile_template(source: str) -> jinja2.Template:
    """The template for `source`, statements refused (the loader and the renderer both parse with `parse`)."""
    return environment().from_string(parse(source))


def undeclared_names(source: str) -> set[str]:
    """Names a template reads that are not in the rendering context (raises TemplateSyntaxError)."""
    return set(meta.find_undeclared_variables(parse(source))) - CONTEXT_NAMES



VALUE_ENV = "ROCBUILD_VALUE_{}"


class ShellQuoting(Exception):
    """A `${{ }}` sits where its value could become code: inside quotes, a here-document, or after eval."""


def _could_be_code(where: str) -> ShellQuoting:
    return ShellQuoting(f"a ${{{{ }}}} value {where} could become code for a shell; put it outside quotes as a "
                        "word of its own (it is passed as a variable, never as code)")


def bind_shell_values(script: str, values: list[str]) -> tuple[str, dict[str, str]]:
    """Replace the placeholders of a rendered shell step by `"${ROCBUILD_VALUE_N}"`, references to
    environment variables holding the values: bash expands a variable as data, never as code.

    That holds only where the reference is a word of a command. Inside quotes (a value in
    `bash -c '...'` or `"..."` is code for the inner shell once the outer one expands it), inside a
    here-document (often fed to an interpreter), in arithmetic (`$(( ))`, `(( ))`, `[[ ]]` and `let`
    evaluate `a[$(cmd)]`), or where the script hands it to an interpreter as code (after `eval`, a
    `-c` option or `<<<`), a template is refused. Command substitutions `$( )` and backticks are
    commands again, inside quotes too."""
    env = {VALUE_ENV.format(i + 1): v for i, v in enumerate(values)}
    return _ShellScanner(script).run(), env


# A value placed here is handed to an interpreter as code: after eval or -c, in a here-string, in let.
_AS_CODE = re.compile(r"(?:(?:^|[\s;&|(`])(?:eval|-c)\s+|<<<\s*|(?:^|[\s;&|(`])let\s[^;&|\n]*)$")


class _ShellScanner:
    """One pass over a rendered shell script, keeping the open quoting contexts, innermost last: ""
    (the script), "$(" and "`" (commands), "'", '"', "$'" (quotes), "$((" and "((" (arithmetic),
    "[[" (a conditional expression). One method per kind of context; each consumes what it reads."""

    def __init__(self, script: str):
        self.script = script
        self.out: list[str] = []
        self.stack: list[str] = [""]
        self.depth: list[int] = [0]  # unmatched "(" inside each context
        self.heredocs: list[tuple[str, bool]] = []  # delimiters (and <<-) waiting for the end of the line
        self.in_heredoc = False
        self.i = 0

    def run(self) -> str:
        while self.i < len(self.script):
            c, top = self.script[self.i], self.stack[-1]
            if self.in_heredoc:
                self._heredoc_line()
            elif c == "\0":
                self._value()
            elif c == "\\" and top != "'" and self.script[self.i + 1:self.i + 2] != "\0":
                self._emit(2)
            elif top in ("'", "$'"):
                self._in_single_quotes()
            elif top == '"':
                self._in_double_quotes()
            else:
                self._in_command()
        return "".join(self.out)

    # -- moving on ----------------------------------------------------------

    def _ahead(self, n: int) -> str:
        return self.script[self.i:self.i + n]

    def _emit(self, n: int) -> None:
        self.out.append(self.script[self.i:self.i + n])
        self.i += n

    def _push(self, context: str, n: int) -> None:
        self.stack.append(context)
        self.depth.append(0)
        self._emit(n)

    def _pop(self, n: int) -> None:
        self.stack.pop()
        self.depth.pop()
        self._emit(n)

    def _written_ends_with(self, pattern: str) -> bool:
        return re.search(pattern, "".join(self.out)) is not None

    # -- the contexts -------------------------------------------------------

    def _value(self) -> None:
        """A placeholder: refused where it could become code, else a quoted variable reference."""
        end = self.script.index("\0", self.i + 1)
        where = _CONTEXT_NAMES.get(self.stack[-1]) or next(
            (_CONTEXT_NAMES[f] for f in self.stack if f in ("[[", "((", "$((")), None)
        if where is None and _AS_CODE.search("".join(self.out)):
            where = "after eval, let, -c or <<<"
        if where is not None:
            raise _could_be_code(where)
        self.out.append('"${' + VALUE_ENV.format(self.script[self.i + 1:end]) + '}"')
        self.i = end + 1

    def _heredoc_line(self) -> None:
        line_end = self.script.find("\n", self.i)
        line = self.script[self.i:] if line_end < 0 else self.script[self.i:line_end]
        if "\0" in line:
            raise _could_be_code("inside a here-document")
        self.out.append(line if line_end < 0 else line + "\n")
        delimiter, strip_tabs = self.heredocs[0]
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            self.heredocs.pop(0)
            self.in_heredoc = bool(self.heredocs)
        self.i = len(self.script) if line_end < 0 else line_end + 1

    def _in_single_quotes(self) -> None:
        if self.script[self.i] == "'":
            self._pop(1)
        else:
            self._emit(1)

    def _in_double_quotes(self) -> None:
        if self.script[self.i] == '"':
            self._pop(1)
        elif not self._substitution():
            self._emit(1)

    def _substitution(self) -> bool:
        """`$((`, `$(` or a backtick opens (in a command or inside double quotes)."""
        if self._ahead(3) == "$((":
            self._push("$((", 3)
        elif self._ahead(2) == "$(":
            self._push("$(", 2)
        elif self.script[self.i] == "`":
            self._push("`", 1)
        else:
            return False
        return True

    def _in_command(self) -> None:
        c, top = self.script[self.i], self.stack[-1]
        if top == "`" and c == "`":
            self._pop(1)
        elif self._substitution():
            pass
        elif c == "'":
            self._push("$'" if self.script[self.i - 1:self.i] == "$" else "'", 1)
        elif c == '"':
            self._push('"', 1)
        elif not (self._group() or self._paren() or self._heredoc_start()):
            self._emit(1)

    def _group(self) -> bool:
        """Arithmetic `(( ))` and conditional `[[ ]]` groups, opened where a command starts."""
        top, two = self.stack[-1], self._ahead(2)
        if top in ("$((", "((") and two == "))" and self.depth[-1] == 0:
            self._pop(2)
        elif top == "[[" and two == "]]":
            self._pop(2)
        elif two == "((" and self._written_ends_with(r"(?:^|[\s;&|(])$"):
            self._push("((", 2)
        elif two == "[[" and self._written_ends_with(r"(?:^|[\s;&|(!])$"):
            self._push("[[", 2)
        else:
            return False
        return True

    def _paren(self) -> bool:
        c = self.script[self.i]
        if c == "(":
            self.depth[-1] += 1
        elif c == ")" and self.stack[-1] == "$(" and self.depth[-1] == 0:
            self._pop(1)
            return True
        elif c == ")":
            self.depth[-1] = max(self.depth[-1] - 1, 0)
        else:
            return False
        self._emit(1)
        return True

    def _heredoc_start(self) -> bool:
        """`<<DELIM` (not `<<<`) at the top level: its body starts at the next line."""
        if len(self.stack) != 1:
            return False
        if self._ahead(2) == "<<" and self._ahead(3) != "<<<" and self.script[self.i - 1:self.i] != "<":
            m = re.match(r"<<(-?)\s*(['\"]?)([^\s'\"<>;&|()]+)\2", self.script[self.i:])
            if m:
                self.heredocs.append((m.group(3), m.group(1) == "-"))
                self._emit(2)
            else:
                self._emit(1)
            return True
        if self.script[self.i] == "\n" and self.heredocs:
            self._emit(1)
            self.in_heredoc = True
            return True
        return False


_CONTEXT_NAMES = {"'": "inside single quotes", '"': "inside double quotes", "$'": "inside $'...' quotes",
                  "$((": "inside arithmetic $(( ))", "((": "inside arithmetic (( ))", "[[": "inside [[ ]]"}


def check_shell_template(source: str) -> None:
    """The load-time form of bind_shell_values: each `${{ ... }}` of the source taken as a value."""
    spans = re.sub(r"\$\{\{.*?\}\}", lambda m: "\0" + "1" + "\0", source, flags=re.DOTALL)
    bind_shell_values(spans, ["x"])
