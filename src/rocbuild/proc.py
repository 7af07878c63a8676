"""The seam through which rocbuild starts external processes.

- `Runner`: build steps, patch tools and checks, through invoke's Context.run,
  logged. Commands arrive as argv lists and are joined with shlex, so no value
  can change a command's shape; a recipe's explicit `shell:` string is the
  only text run as written (its template values were quoted when rendered).
- `query`: short read-only probes (rocminfo, hipconfig --version, a target
  python's version) whose output is parsed, never shown as a step.
The engine takes any `StepRunner`, so its tests can record argv instead of running.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str  # stdout followed by stderr


class StepRunner(Protocol):
    def run(self, argv: Sequence[str] | None, *, cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None,
            log: Path, shell: str | None = None) -> RunResult:
        """Run one command with env = os.environ + env; append its output to `log`."""
        ...


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

    def run(self, argv: Sequence[str] | None, *, cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None,
            log: Path, shell: str | None = None) -> RunResult:
        """Run one command with env = os.environ + env; append its output to `log`."""
        from invoke.context import Context  # ~30 ms to import; probes and cached builds never need it

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
        return RunResult(int(result.exited), str(result.stdout) + str(result.stderr))


@dataclass(frozen=True)
class QueryResult:
    exit_code: int
    stdout: str
    stderr: str


def query_process(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 60,
                  cwd: str | None = None) -> QueryResult | str:
    """Run a short read-only probe; its result, or why it could not run (missing, hung, refused)."""
    path = env.get("PATH") if env is not None else None
    if shutil.which(argv[0], path=path) is None and not os.path.isfile(argv[0]):
        return f"{argv[0]}: not found"
    try:
        proc = subprocess.run(list(argv), check=False, capture_output=True, text=True, timeout=timeout,
                              env=dict(env) if env is not None else None, cwd=cwd,
                              stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        return f"{argv[0]}: no answer within {timeout:g}s"
    except OSError as exc:
        return f"cannot run {argv[0]}: {exc.strerror or exc}"
    return QueryResult(proc.returncode, proc.stdout, proc.stderr)


def query(argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 60) -> str | None:
    """A probe's stdout; None when the tool is missing, fails or hangs."""
    result = query_process(argv, env=env, timeout=timeout)
    if isinstance(result, str) or result.exit_code != 0:
        return None
    return result.stdout
