"""invoke's local runner, starting an argv as the leader of its own process group (see runner.py)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

from invoke.runners import Local

from rocbuild.process.interrupts import Interrupted
from rocbuild.process.memory import Governor

# Seconds a process group gets between SIGTERM and SIGKILL after an interrupt.
GRACE_SECONDS = 10.0


class GroupRunner(Local):
    """invoke's local runner, starting an argv (not a shell string) as the leader of a new process group."""

    def __init__(self, context: Any, argv: Sequence[str], cwd: str, keep_fds: Sequence[int],
                 governor: Governor | None = None):
        super().__init__(context)
        self.argv = list(argv)
        self.cwd = cwd
        self.keep_fds = tuple(keep_fds)
        self.governor = governor  # keeps the group within memory while it runs (process/memory.py)
        self.interrupt: Interrupted | None = None
        self._killer: threading.Timer | None = None

    def start(self, command: str, shell: str, env: dict[str, Any]) -> None:
        self.process = subprocess.Popen(
            self.argv, cwd=self.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=self.keep_fds,
        )

    def close_proc_stdin(self) -> None:  # stdin is /dev/null
        pass

    def stop(self) -> None:
        """invoke closes only a pty: the pipes of start() would wait for the garbage collector (two
        descriptors held, and two ResourceWarnings, per step). A pipe whose reader thread still runs (a
        stray grandchild holds it open) is left open: closing it would free its number under the thread."""
        super().stop()
        process = getattr(self, "process", None)  # none when Popen itself failed
        if process is None or any(thread.is_alive() for thread in getattr(self, "threads", {}).values()):
            return
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()

    def wait(self) -> None:
        """Until the process ends, seen at once through a pidfd (invoke polls every 10 ms, which
        each step pays once); a reader thread that died still ends the wait."""
        try:
            pidfd = os.pidfd_open(self.process.pid)
        except (AttributeError, OSError):  # no pidfd (before Linux 5.3): invoke's polling
            super().wait()
            return
        try:
            while not self.process_is_finished and not self.has_dead_threads:
                select.select([pidfd], [], [], 0.25)
                if self.governor is not None:
                    self.governor.tick(self.process.pid)
        finally:
            os.close(pidfd)
            if self.governor is not None:
                self.governor.release()

    def send_interrupt(self, interrupt: KeyboardInterrupt) -> None:
        """First interrupt: SIGTERM to the whole group, SIGKILL after a grace period; a second one: SIGKILL."""
        first = self.interrupt is None
        self.interrupt = interrupt if isinstance(interrupt, Interrupted) else Interrupted(signal.SIGINT)
        if first:
            self._signal_group(signal.SIGTERM)
            self._killer = threading.Timer(GRACE_SECONDS, self._signal_group, (signal.SIGKILL,))
            self._killer.daemon = True
            self._killer.start()
        else:
            self._signal_group(signal.SIGKILL)

    def finish_interrupt(self) -> None:
        """After the leader ended: nothing of the group may outlive an interrupted step."""
        if self._killer is not None:
            self._killer.cancel()
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
