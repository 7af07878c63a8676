"""The one seam through which rocbuild runs external commands (invoke's Context.run).

Commands arrive as argv lists and are joined with shlex, so no value can
change a command's shape; a recipe's explicit `shell:` string is the only
text run as written (its template values were quoted when it was rendered).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TextIO

from invoke import Context


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str  # stdout followed by stderr


class _Tee:
    """invoke writes output here: the log file always, the terminal too with -v."""

    def __init__(self, *streams: TextIO):
        self.streams = streams

    def write(self, data: str) -> int:
        for s in self.streams:
            s.write(data)
        return len(data)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


def command_text(argv: Sequence[str] | None, shell: str | None, cwd: str) -> str:
    body = shell if shell is not None else shlex.join(argv or ())
    return f"cd {shlex.quote(cwd)} && {body}"


class Runner:
    def __init__(self, *, verbose: bool = False, terminal: TextIO | None = None):
        self.verbose = verbose
        self.terminal = terminal or sys.stderr

    def run(
        self,
        argv: Sequence[str] | None,
        *,
        cwd: str | os.PathLike,
        env: dict[str, str] | None = None,
        log: Path,
        shell: str | None = None,
    ) -> RunResult:
        """Run one command with env = os.environ + env; append its output to `log`."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        log.parent.mkdir(parents=True, exist_ok=True)
        shown = shell if shell is not None else shlex.join(argv or ())
        with open(log, "a", encoding="utf-8", errors="replace") as fh:
            fh.write(f"$ {shown}\n  (in {cwd})\n")
            fh.flush()
            stream = _Tee(fh, self.terminal) if self.verbose else _Tee(fh)
            result = Context().run(
                command_text(argv, shell, str(cwd)),
                env=full_env,
                replace_env=True,
                out_stream=stream,
                err_stream=stream,
                in_stream=False,
                pty=False,
                warn=True,
                hide=False,
                shell="/bin/bash",
            )
            fh.write(f"[exit {result.exited}]\n")
        return RunResult(result.exited, result.stdout + result.stderr)
