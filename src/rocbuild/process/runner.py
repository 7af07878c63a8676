"""The seam through which rocbuild starts external processes.

- `Runner`: build steps, patch tools and checks, through invoke, logged. An
  argv step is executed as that argv (no shell in between, so nothing but the
  command `plan` shows runs); a recipe's explicit `shell:` string runs as
  `bash -c STRING` (its template values were quoted when rendered), with the
  variables that make bash read hidden files or functions removed.
  Each command runs in its own process group: an interrupt (Ctrl-C, SIGTERM,
  SIGHUP) stops the whole group, not just its leader, and the work folder's
  lock is inherited by every step process, so a step that outlives a killed
  rocbuild still keeps other builds out of its folder.
- `query`: short read-only probes (rocminfo, hipconfig --version, a target
  python's version) whose output is parsed, never shown as a step.
The engine takes any `StepRunner`, so its tests can record argv instead of running.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

from rocbuild.process.memory import Governor

SHELL = "/bin/bash"
# Variables that make bash (or sh) run code nobody sees: a startup file, exported functions, traces.
SHELL_HIDDEN_CODE = re.compile(r"^(BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|BASH_FUNC_.*)$")


# A confined step's log says so: a refused write or a failed download reads differently then.
CONFINED_NOTE = "; confined: no network unless the recipe allows it, only the work folder and /tmp writable"


class Sink(Protocol):
    """Where a step's output goes besides its log: the terminal (-v), or a watch of how far it is."""

    def write(self, data: str) -> int: ...
    def flush(self) -> None: ...


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    output: str  # stdout followed by stderr


class StepRunner(Protocol):
    def run(self, argv: Sequence[str] | None, *, cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None,
            log: Path, shell: str | None = None, sandbox: Sequence[str] = (), watch: Sink | None = None) -> RunResult:
        """Run one command with env = os.environ + env; append its output to `log`. With a `sandbox` (a
        bwrap argv up to `--`), the command runs under it with `env` alone. `watch`: also given the output
        (stepwatch.py reads how far the step is from it)."""
        ...

    def keep_open(self, fd: int) -> None:
        """Let every command started from now on inherit `fd` (the work folder's lock)."""
        ...


def step_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not SHELL_HIDDEN_CODE.match(k)}


class _Tee:
    """invoke writes output here: the log file always, the terminal too with -v."""

    def __init__(self, *streams: Sink):
        self.streams = streams

    def write(self, data: str) -> int:
        for s in self.streams:
            try:
                s.write(data)
            except (BrokenPipeError, ValueError):  # a closed terminal must not stop the build
                pass
        return len(data)

    def flush(self) -> None:
        for s in self.streams:
            try:
                s.flush()
            except (BrokenPipeError, ValueError):
                pass


class Runner:
    def __init__(self, *, verbose: bool = False, terminal: TextIO | None = None, memory: int | None = None,
                 memory_per_job: int = 2 << 30):
        """`memory` (--memory) and `memory_per_job` (the recipe's estimate): what keeps a step's processes
        within memory while it runs (process/memory.py)."""
        self.verbose = verbose
        self.terminal = terminal or sys.stderr
        self.keep_fds: list[int] = []
        self.memory, self.memory_per_job = memory, memory_per_job

    def keep_open(self, fd: int) -> None:
        self.keep_fds.append(fd)

    def run(self, argv: Sequence[str] | None, *, cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None,
            log: Path, shell: str | None = None, sandbox: Sequence[str] = (), watch: Sink | None = None) -> RunResult:
        """Run one command with env = os.environ + env; append its output to `log`. With a `sandbox` (a
        bwrap argv up to `--`), the command runs under it with `env` alone. `watch` is given the output
        too, unless -v already streams it to the terminal."""
        from invoke.context import Context  # ~30 ms to import; probes and cached builds never need it

        from rocbuild.process.groups import GroupRunner

        full_env = {} if sandbox else dict(os.environ)
        full_env.update(env or {})
        full_env = step_env(full_env)
        command = [SHELL, "-c", shell] if shell is not None else list(argv or ())
        shown = shlex.join(command)
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8", errors="replace") as fh:
            fh.write(f"$ {shown}\n  (in {cwd}{CONFINED_NOTE if sandbox else ''})\n")
            fh.flush()
            stream = _Tee(fh, self.terminal) if self.verbose else _Tee(fh, watch) if watch is not None else _Tee(fh)
            runner = GroupRunner(Context(), [*sandbox, *command], str(cwd), self.keep_fds, self._governor(stream))
            try:
                result = runner.run(
                    shown, env=full_env, replace_env=True, out_stream=stream, err_stream=stream,
                    in_stream=False, pty=False, warn=True, hide=False, shell=SHELL,
                )
            except FileNotFoundError as exc:
                fh.write(f"cannot run {command[0]}: not found\n[exit 127]\n")
                return RunResult(127, f"{command[0]}: command not found ({exc.strerror})\n")
            except PermissionError as exc:
                fh.write(f"cannot run {command[0]}: {exc.strerror}\n[exit 126]\n")
                return RunResult(126, f"{command[0]}: {exc.strerror}\n")
            finally:
                if runner.interrupt is not None:
                    runner.finish_interrupt()
            if runner.interrupt is not None:
                fh.write(f"[interrupted: {runner.interrupt}]\n")
                raise runner.interrupt
            fh.write(f"[exit {result.exited}]\n")
        return RunResult(int(result.exited), str(result.stdout) + str(result.stderr))

    def _governor(self, log: _Tee) -> Governor:
        def say(line: str) -> None:  # into the step's log, and always to the terminal: a build that slows says why
            log.write(f"[rocbuild] {line}\n")
            if not self.verbose:
                self.terminal.write(f"    {line}\n")

        return Governor(self.memory, self.memory_per_job, say)


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
