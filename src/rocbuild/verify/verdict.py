"""Judge wheels, libraries and folders: nothing links CUDA, device code covers every arch.

Rules:
- an ELF that needs a CUDA library fails (it was built against CUDA);
- an ELF that carries device code must carry it for every requested arch;
- an input (wheel, library, folder) with no device code anywhere fails when
  archs were requested: that is the silent CPU-only build. One that links or
  loads the ROCm runtime but ships no kernels (a JIT compiler, runtime
  bindings) is said to be that, and fails only where device code is required
  (rocbuild's own builds);
- device code is an offload bundle (in any section), an AMDGPU code object
  embedded in a library's data, or a code object / bundle file of its own;
  the ROCm runtime's own helper kernels do not count;
- `device_code_in` globs name files that must exist and carry device code;
- `links` names libraries those files (else every file with device code) must need (DT_NEEDED).
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.verify.bundles import BundleError, TargetId, deep_check
from rocbuild.verify.findings import FileFindings, InputFindings, Verdict
from rocbuild.verify.inputs import inspect_input
from rocbuild.verify.rules import judge, judge_rocm_majors


def parse_targets(archs: list[str]) -> list[TargetId]:
    out = []
    for a in archs:
        t = TargetId.parse(a)
        if t is None:
            raise UsageError(f"not a gfx target: {a!r}", hint="accepted: gfx90a, gfx1100, gfx942:sramecc+:xnack-")
        out.append(t)
    return out


def verify_paths(paths: list[Path], archs: list[str], archs_from: str = "--arch",
                 device_code_in: tuple[str, ...] = (), links: tuple[str, ...] = (),
                 rocm_major: int | None = None, *, only: tuple[str, ...] = (), allow_cuda: bool = False,
                 require_device_code: bool = True, deep: bool = False,
                 inspected: dict[Path, InputFindings] | None = None) -> Verdict:
    """`rocm_major`: the major of the ROCm the inputs were built with, when the caller knows it.
    `only`: globs of the files to judge (a multi-backend wheel's ROCm part); the rest are listed.
    `require_device_code`: False lets a package that links or loads the ROCm runtime but ships no
    kernels (a JIT compiler, runtime bindings) pass, said as such.
    `inspected`: what earlier calls read, by path, filled here: a second check of the same unchanged
    files (a build's own and its recipe's) judges them again without reading them again."""
    targets = parse_targets(archs)
    inputs = []
    token = deep_check.set(deep)
    try:
        for path in paths:
            inputs.append(_verify_one(Path(path), targets, device_code_in, links, rocm_major, only, allow_cuda,
                                      require_device_code, inspected))
    finally:
        deep_check.reset(token)
    return Verdict(list(archs), archs_from, inputs)


def _verify_one(path: Path, targets: list[TargetId], device_code_in: tuple[str, ...], links: tuple[str, ...],
                rocm_major: int | None, only: tuple[str, ...], allow_cuda: bool, require: bool,
                inspected: dict[Path, InputFindings] | None) -> InputFindings:
    memo = inspected if inspected is not None and not deep_check.get() else None  # --deep reads everything
    if memo is not None and path in memo:
        found = unjudged(memo[path])
    else:
        found = inspect_input(path)
        if memo is not None:
            memo[path] = unjudged(found)
    for f in found.files:
        f.judged = not only or any(fnmatch.fnmatch(f.path, g) for g in only)
    judge(found, targets, device_code_in, links, allow_cuda=allow_cuda, require=require)
    judge_rocm_majors(found, rocm_major)
    return found


def unjudged(found: InputFindings) -> InputFindings:
    """A copy of what was read, before any rule wrote its verdict into it; what was read (each
    file's info) is shared, as rules only read it."""
    files = [replace(f, coverage=dict(f.coverage), problems=list(f.problems), notes=list(f.notes))
             for f in found.files]
    return replace(found, files=files, problems=list(found.problems), notes=list(found.notes))


__all__ = ["BundleError", "FileFindings", "InputFindings", "Verdict", "verify_paths"]
