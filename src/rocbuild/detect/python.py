"""The target Python (the one wheels are built for)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.process.runner import query_process


@dataclass(frozen=True)
class PythonInfo:
    executable: str
    version: str  # "3.11"
    tag: str  # "cp311"

    def to_json(self) -> dict[str, str]:
        return {"executable": self.executable, "version": self.version}


def find_python(option: str | None = None) -> PythonInfo:
    if option is None:
        v = sys.version_info
        return PythonInfo(sys.executable, f"{v.major}.{v.minor}", f"cp{v.major}{v.minor}")
    exe = shutil.which(option) or option
    if not Path(exe).is_file() or not os.access(exe, os.X_OK):
        raise UsageError(f"--python {option}: no such executable", hint="give a path or a name on PATH, e.g. python3.11")
    proc = query_process([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], timeout=30)
    if isinstance(proc, str):
        raise UsageError(f"--python {option}: cannot run it ({proc})")
    version = proc.stdout.strip()
    if proc.exit_code != 0 or not re.fullmatch(r"3\.\d{1,3}", version):
        shown = version[:60] or "nothing"
        raise UsageError(f"--python {option}: not a working Python 3 interpreter (asked for its version, it "
                         f"answered {shown!r} with exit code {proc.exit_code})",
                         hint="give the path of a python3 executable, e.g. ~/venv/bin/python")
    major, minor = version.split(".")
    return PythonInfo(str(Path(exe).absolute()), version, f"cp{major}{minor}")


@dataclass(frozen=True)
class Interpreter:
    """A Python a wheel may be installed into (this machine's python3, say), as it reports itself."""

    executable: str
    version: tuple[int, int]
    glibc: tuple[int, ...] | None  # os.confstr('CS_GNU_LIBC_VERSION'); None: not a glibc system
    machine: str  # x86_64


INTERPRETER_QUERY = ("import os, platform, sys; v = os.confstr('CS_GNU_LIBC_VERSION') or ''; "
                     "print(sys.executable, '%d.%d' % sys.version_info[:2], v.split()[-1] if v.startswith('glibc') "
                     "else '-', platform.machine())")


def default_interpreter(path: str) -> Interpreter | None:
    """`python3` as found on `path` (the caller's PATH): the Python a user installs wheels into by default."""
    exe = shutil.which("python3", path=path)
    if exe is None:
        return None
    proc = query_process([exe, "-c", INTERPRETER_QUERY], timeout=30)
    if isinstance(proc, str) or proc.exit_code != 0 or len(proc.stdout.split()) != 4:
        return None
    executable, version, glibc, machine = proc.stdout.split()
    major, minor = (int(x) for x in version.split("."))
    libc = tuple(int(x) for x in glibc.split(".")) if glibc != "-" else None
    return Interpreter(executable, (major, minor), libc, machine)

