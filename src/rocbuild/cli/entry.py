"""The `rocbuild` command's first moment: a build run again with nothing changed is answered from its
no-op stamp (engine/noop.py) before the rest of rocbuild is loaded; any other command line goes on to
cli/app.main, which reads the environment for the command itself."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import rocbuild.engine.noop as noop


def run() -> NoReturn:
    argv = sys.argv[1:]
    if argv and not argv[0].startswith("-") and not noop.wants_full_run(argv):
        code = noop.serve(_stamp(argv))
        if code is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    from rocbuild.cli.app import run as run_command

    run_command()


def _stamp(argv: list[str]) -> str:
    from rocbuild import __version__
    from rocbuild.paths import cache_root

    try:
        cwd = os.getcwd()
    except OSError:  # the folder it ran in is gone: the full run says so
        return ""
    return noop.stamp_path(str(cache_root() / "noop"), argv, cwd, os.environ, __version__)
