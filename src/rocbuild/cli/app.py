"""Command line: rocbuild [build] RECIPE | plan | prepare | lock | verify | doctor | detect | recipes | cache
| index | repair | ci | root.

Exit codes: 0 ok; 1 a step or a verify check failed; 2 bad usage, recipe or value; 3 host not
ready (no ROCm, no GPU and no --arch, missing tool or package); with --try, 4 no known trap with a fix
matched the failure and 5 the tries or the time ran out; 130 interrupted (Ctrl-C), 143
SIGTERM, 129 SIGHUP: a running step's whole process group is stopped.

main() is the one place that reads the process environment for a command: it reads it once, with the
build root rocbuild runs in, and hands both to the command's handler (cli/common.Invocation). Before
it, the `rocbuild` script (cli/entry.py) reads it only to find a no-op build's stamp.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

import rocbuild.cli.build as build
import rocbuild.cli.cache as cache
import rocbuild.cli.ci as ci
import rocbuild.cli.host as host
import rocbuild.cli.recipes as recipes
import rocbuild.cli.root as root
import rocbuild.cli.verify as verify
import rocbuild.cli.wheelhouse as wheelhouse
from rocbuild import __version__
from rocbuild.cli.common import Invocation, Parser, misplaced
from rocbuild.errors import RocbuildError, UsageError
from rocbuild.process.interrupts import Interrupted, raise_interrupted
from rocbuild.roots.info import root_from_environ

# Each family registers its commands' parsers and handlers; the order is --help's.
FAMILIES = (build, verify, host, root, recipes, cache, wheelhouse, ci)
# The commands each family registers: a command line that names one is parsed by its family's parsers
# alone (all of them take ~15 ms to build; tests/unit/test_cli.py holds this to what the families register).
COMMANDS: dict[str, ModuleType] = {
    "build": build, "plan": build, "prepare": build, "lock": build, "verify": verify, "diagnose": verify, "doctor": host,
    "detect": host, "root": root, "recipes": recipes, "cache": cache, "index": wheelhouse, "repair": wheelhouse,
    "ci": ci,
}
# Commands whose action may be left out.
DEFAULT_ACTIONS = {"recipes": "list", "cache": "list"}


def build_parser(family: ModuleType | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with `family` only that family's commands (what parsing one of them needs)."""
    parser = Parser(prog="rocbuild", description="Build ROCm-native Python extensions from recipes.",
                    epilog="`rocbuild RECIPE ...` is short for `rocbuild build RECIPE ...`")
    parser.add_argument("--version", action="version", version=f"rocbuild {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for each in FAMILIES if family is None else (family,):
        each.register(sub)
    return parser


def normalised(argv: list[str], commands: Sequence[str]) -> list[str]:
    """`rocbuild RECIPE ...` is `rocbuild build RECIPE ...`; `rocbuild recipes [--json]` is `... recipes list`."""
    if argv and argv[0] not in commands and not argv[0].startswith("-"):
        return ["build", *argv]
    if argv and argv[0] in DEFAULT_ACTIONS and (len(argv) == 1 or (argv[1].startswith("-") and argv[1] not in
                                                                   ("-h", "--help"))):
        return [argv[0], DEFAULT_ACTIONS[argv[0]], *argv[1:]]
    return argv


def check_text(argv: Sequence[str]) -> None:
    """Every argument must be text: a path or value with bytes that are not UTF-8 (Python keeps them as
    surrogates) cannot go into the logs, JSON files and commands a build writes."""
    for i, item in enumerate(argv):
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            flag, value = item.split("=", 1) if item.startswith("--") and "=" in item else (
                argv[i - 1] if i and argv[i - 1].startswith("-") else "argument", item)
            shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise UsageError(f"{flag} {shown}: holds bytes that are not UTF-8 text",
                             hint="give paths and values in UTF-8 (rename the folder, or choose another one)") from None


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    args, extra = parser.parse_known_args(argv)
    if extra:
        flag = next((e.split("=")[0] for e in extra if e.startswith("-")), None)
        action = getattr(args, "action", None)
        wrong = misplaced(args.command, action, flag) if flag and isinstance(action, str) else None
        if wrong is not None:
            raise wrong
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    environ = dict(os.environ)
    handlers = {sig: signal.signal(sig, raise_interrupted) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        args_list = normalised(list(sys.argv[1:] if argv is None else argv), list(COMMANDS))
        check_text(args_list)
        parser = build_parser(COMMANDS.get(args_list[0]) if args_list else None)
        args = parse(parser, args_list)
        if args.command is None:
            parser.print_help()
            return 0
        inv = Invocation(environ, root_from_environ(environ), tuple(args_list))
        return _dispatch(args, inv)
    except RocbuildError as exc:
        _say(exc.render())
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or Interrupted by SIGTERM/SIGHUP; a running step's group is stopped
        code = exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT
        _say(f"\ninterrupted ({exc if isinstance(exc, Interrupted) else 'SIGINT'}): run the same command again "
             "to resume (finished steps are kept)")
        return code
    except BrokenPipeError:  # the reader of our output went away (`| head`): nothing more to say
        _quiet_stdout()
        return 0
    except OSError as exc:  # the machine, not the input: a full disk, a folder that vanished, no permission
        where = f" ({exc.filename})" if exc.filename else ""
        _say(f"error: {exc.strerror or exc}{where}\n  free space or fix the folder, then run the same command "
             "again: finished steps are kept")
        return 1
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)


def run() -> NoReturn:
    """The `rocbuild` command: main(), then out without the interpreter's teardown of every module
    it loaded (~40 ms of each command; rocbuild registers no exit handlers and leaves no thread
    that matters running)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader went away: nothing more can be said
            pass
    os._exit(code)


def _dispatch(args: argparse.Namespace, inv: Invocation) -> int:
    """--root re-runs the command inside the root; otherwise the command's own handler runs here."""
    if getattr(args, "root", None) and inv.root is None:
        return root.run_in_root(args, inv)
    result: int = args.handler(args, inv)
    return result


def _say(text: str) -> None:
    try:
        print(text, file=sys.stderr)
    except (BrokenPipeError, ValueError):
        pass


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not raise a second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
