"""What every command family shares: the parser class, the value a handler gets besides its
arguments (read once by main), and JSON output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn, TypeAlias

from rocbuild.errors import UsageError
from rocbuild.roots.info import RootInfo

ROOT_HELP = "run inside this build root (see `rocbuild root list`): a root's name, or a folder holding a Debian tree"


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own errors: same shape and exit code as ours
        raise UsageError(message, hint=f"see `{self.prog} --help`")


@dataclass(frozen=True)
class Invocation:
    """What main() read once and every handler is given: the environment, and the build root rocbuild
    runs in (None on the machine itself)."""

    environ: dict[str, str]
    root: RootInfo | None
    argv: tuple[str, ...]  # the command line as given (re-run inside a root by --root)


Handler = Callable[[argparse.Namespace, Invocation], int]
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"


def dump(data: object) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


# (command, action) -> the parser of that action, for saying where a misplaced option belongs.
ACTION_PARSERS: dict[tuple[str, str], argparse.ArgumentParser] = {}


def actions(sub: Subparsers, command: str, help: str) -> Subparsers:
    """`rocbuild COMMAND ACTION ...`: a command whose actions are subcommands of their own."""
    parser = sub.add_parser(command, help=help)
    return parser.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=Parser)


def action(actions_of: Subparsers, command: str, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
    parser = actions_of.add_parser(name, help=help)
    parser.set_defaults(handler=handler)
    ACTION_PARSERS[(command, name)] = parser
    return parser


def misplaced(command: str, name: str, flag: str) -> UsageError | None:
    """An option given to an action of COMMAND that another of its actions takes: say which."""
    homes = [other for (cmd, other), parser in ACTION_PARSERS.items()
             if cmd == command and other != name and flag in parser._option_string_actions]
    if not homes:
        return None
    return UsageError(f"`{command} {name}` takes no {flag}",
                      hint=f"{flag} goes with " + " or ".join(f"`{command} {h}`" for h in homes))
