"""The target Python (the one wheels are built for)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.process.runner import query_process, step_env


@dataclass(frozen=True)
class PythonInfo:
    executable: str
    version: str  # "3.11"
    tag: str  # "cp311"

    def to_json(self) -> dict[str, str]:
        return {"executable": self.executable, "version": self.version}


VERSION_ONLY = re.compile(r"^3\.\d{1,3}$")
VERSIONED_NAME = re.compile(r"^python3\.\d{1,3}$")


def python_choices(option: str | None, path: str) -> list[str | None]:
    """--python as a list: one value, several comma-separated, or `all` (every python3.X on `path`, the
    first of each version). A bare version names that python on PATH: 3.13 is python3.13."""
    if option is None:
        return [None]
    if option.strip() == "all":
        found = pythons_on(path)
        if not found:
            raise UsageError("--python all: no python3.X executable on PATH", hint="name them: --python 3.11,3.12")
        return list(found)
    items = [x.strip() for x in option.split(",") if x.strip()]
    if not items:
        raise UsageError(f"--python {option!r}: names no python", hint="e.g. --python 3.13,3.14 or --python all")
    return [f"python{x}" if VERSION_ONLY.match(x) else x for x in items]


def pythons_on(path: str) -> list[str]:
    """Every python3.X on `path`, the first of each version found, oldest version first."""
    found: dict[str, str] = {}
    for folder in path.split(os.pathsep):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            full = os.path.join(folder, name)
            if VERSIONED_NAME.match(name) and name not in found and os.access(full, os.X_OK) and _runs(full, name):
                found[name] = full
    return [found[n] for n in sorted(found, key=lambda n: int(n.split(".")[1]))]


def _runs(exe: str, name: str) -> bool:
    """It is the python its name says (a pyenv shim of a version not selected answers nothing)."""
    proc = query_process([exe, "-c", "import sys; print('python%d.%d' % sys.version_info[:2])"], timeout=30)
    return not isinstance(proc, str) and proc.exit_code == 0 and proc.stdout.strip() == name


def find_python(option: str | None = None) -> PythonInfo:
    if option is None:
        v = sys.version_info
        return PythonInfo(sys.executable, f"{v.major}.{v.minor}", f"cp{v.major}{v.minor}")
    if VERSION_ONLY.match(option):
        option = f"python{option}"
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


def _interpreter_answer(exe: str, environ: Mapping[str, str]) -> str | None:
    """What INTERPRETER_QUERY prints. A python binary answers the same while its file and this machine's glibc
    stay (remembered: every build says where its wheels install, a cache hit too); a script in its place (a
    pyenv shim picks its python by folder and variables) is asked each time."""
    argv = [exe, "-c", INTERPRETER_QUERY]
    try:
        with open(os.path.realpath(exe), "rb") as fh:
            binary = fh.read(4) == b"\x7fELF"
    except OSError:
        binary = False
    if binary:
        from rocbuild.detect.query import remembered_query

        return remembered_query(argv, {"PATH": os.path.dirname(exe)}, salt=_libc())
    # A shim is a bash script: without the variables that make bash run code nobody sees (BASH_ENV, ...)
    proc = query_process(argv, env=step_env(environ), timeout=30)
    return None if isinstance(proc, str) or proc.exit_code != 0 else proc.stdout


def _libc() -> str:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # not a glibc system
        return ""


def default_interpreter(path: str, environ: Mapping[str, str]) -> Interpreter | None:
    """`python3` as found on `path` (the caller's PATH): the Python a user installs wheels into by default,
    asked with the caller's `environ` (less what makes bash run hidden code)."""
    exe = shutil.which("python3", path=path)
    if exe is None:
        return None
    out = _interpreter_answer(exe, environ)
    if out is None or len(out.split()) != 4:
        return None
    executable, version, glibc, machine = out.split()
    major, minor = (int(x) for x in version.split("."))
    libc = tuple(int(x) for x in glibc.split(".")) if glibc != "-" else None
    return Interpreter(executable, (major, minor), libc, machine)

