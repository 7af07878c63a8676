"""Stopping a build from outside: SIGINT, SIGTERM and SIGHUP become one exception with the exit code
they mean. A leaf module: the command line installs the handlers before it imports anything heavy."""

from __future__ import annotations

import signal


class Interrupted(KeyboardInterrupt):
    """rocbuild was asked to stop (Ctrl-C, SIGTERM, SIGHUP); `signum` decides the exit code (128 + signum)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def raise_interrupted(signum: int, frame: object) -> None:
    """A signal handler: SIGTERM and SIGHUP stop a build the way Ctrl-C does."""
    raise Interrupted(signum)
