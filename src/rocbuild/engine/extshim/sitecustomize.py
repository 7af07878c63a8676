"""rocbuild's build-time shim for torch extensions: a package's extensions compile at the same time.

setuptools builds a package's extensions one after another, so a package of many small extensions
(torch-scatter, torch-sparse) keeps one core busy. `build_ext --parallel` exists, but runs them in threads
of one command, and torch's BuildExtension is not safe there: its ninja path writes one build.ninja into
the shared build_temp, and its other path (use_ninja=False, as torch-scatter's) swaps the shared
compiler's executable around each file.

This file is put first on PYTHONPATH for the steps of a torch extension's build (`plan` shows it), as
`sitecustomize`. When torch.utils.cpp_extension is imported, BuildExtension is changed so that, with two
or more extensions and unless setup.py asked for `--parallel` itself:
- each extension is built in a child process of its own (a fork, once torch has set its flags and
  compiler up), in its own build_temp subfolder: its own compiler object, build.ninja and objects;
- P extensions at a time, and MAX_JOBS = J // P for each one's ninja, so that no more than J compilers
  run (J: ROCBUILD_EXTENSION_JOBS, rocbuild's job count for the build's memory budget).
The sources, flags and compilers are torch's own: the wheel is that of a serial build. The first failure
stops new extensions from starting; the running ones finish, and the build fails naming them.
ROCBUILD_EXTENSION_JOBS=1 (a recipe's `env:`) builds one extension at a time, as setuptools does."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import traceback
from types import ModuleType
from typing import Any

_MODULE = "torch.utils.cpp_extension"
_JOBS = "ROCBUILD_EXTENSION_JOBS"


def _jobs() -> int:
    text = os.environ.get(_JOBS, "")
    return int(text) if text.isdigit() else 1


def _child(cmd: Any, ext: Any, build_temp: str) -> None:
    """In the forked child: build one extension, then leave without running the parent's cleanup."""
    code = 1
    try:
        cmd.build_temp = build_temp
        with cmd._filter_build_errors(ext):  # an optional extension's failure is a warning, as in setuptools
            cmd.build_extension(ext)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _build_forked(cmd: Any, at_once: int) -> None:
    base, pending = cmd.build_temp, list(cmd.extensions)
    running: dict[int, str] = {}
    failed: list[str] = []
    while pending or running:
        while pending and len(running) < at_once and not failed:
            ext = pending.pop(0)
            getattr(ext, "_convert_pyx_sources_to_lang", lambda: None)()  # what setuptools does, in the parent
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(cmd, ext, os.path.join(base, ext.name))
            running[pid] = ext.name
        if not running:
            break
        pid, status = os.wait()
        name = running.pop(pid, None)
        if name is not None and os.waitstatus_to_exitcode(status) != 0:
            failed.append(name)
    if failed:
        errors = importlib.import_module("setuptools.errors")  # setuptools' own error: "error: ..." from pip
        raise errors.CompileError(f"building extension(s) {', '.join(failed)} failed (see their errors above)")


def _wrap(cpp: ModuleType) -> None:
    cls = cpp.BuildExtension
    serial = cls.build_extensions

    def build_extensions(self: Any) -> None:
        count, jobs = len(self.extensions), _jobs()
        if count < 2 or jobs < 2 or self.parallel:
            serial(self)
            return
        at_once, before = min(count, jobs), os.environ.get("MAX_JOBS")
        os.environ["MAX_JOBS"] = str(max(1, jobs // at_once))  # read by each extension's ninja run
        # torch's build_extensions sets flags and compiler up, then calls setuptools', which (without
        # --parallel) calls this for the extensions themselves.
        self._build_extensions_serial = lambda: _build_forked(self, at_once)
        print(f"rocbuild: building {count} extensions, {at_once} at a time, "
              f"MAX_JOBS={os.environ['MAX_JOBS']} each", flush=True)
        try:
            serial(self)
        finally:  # what setup.py runs afterwards (a CMake build, say) sees the job count it was given
            if before is None:
                os.environ.pop("MAX_JOBS", None)
            else:
                os.environ["MAX_JOBS"] = before

    cls.build_extensions = build_extensions


class _Finder:
    """Finds torch.utils.cpp_extension as the path finder would, and wraps it once it has run."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _wrap(module)

        loader.exec_module = exec_module
        return spec


def _next_sitecustomize() -> None:
    """Run the sitecustomize this file hides (Debian's, for one), as Python would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != os.path.abspath(__file__):
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # Python itself only warns when a sitecustomize fails
            print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{error!r}", file=sys.stderr)


if _jobs() > 1 and not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())
_next_sitecustomize()
