"""The template language of recipes: jinja2 with `${{ ... }}` delimiters, sandboxed and strict.

`${{` keeps recipe files valid YAML (a bare `{{` starts a flow mapping).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from functools import cache
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

MARKER = "${{"
BLOCK_MARKER = "${%"

# The names a template may use; render.py fills them in.
CONTEXT_NAMES = frozenset(
    {"archs", "arch", "rocm", "python", "jobs", "options", "src", "build", "dist", "ref", "recipe"}
)


def is_template(value: Any) -> bool:
    return isinstance(value, str) and (MARKER in value or BLOCK_MARKER in value)


def _make_env(finalize: Callable[[Any], Any] | None) -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
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
    return env


@cache
def environment(shell_quote: bool = False) -> ImmutableSandboxedEnvironment:
    """The shared environment; with shell_quote every `${{ }}` result is shlex-quoted.

    Shell steps use the quoting variant so a value (an option, a path) can
    never change the shape of the command it is put into.
    """
    if shell_quote:
        return _make_env(lambda v: shlex.quote(_to_text(v)))
    return _make_env(None)


def _to_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def undeclared_names(source: str) -> set[str]:
    """Names a template reads that are not in the rendering context (raises TemplateSyntaxError)."""
    ast = environment().parse(source)
    return set(meta.find_undeclared_variables(ast)) - CONTEXT_NAMES
