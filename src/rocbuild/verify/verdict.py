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
- `links` names libraries those files (else every file with device code) must need (DT_NEEDED);
- one ROCm major inside each library and across the libraries loaded together,
  and the same one the build says of itself (the ROCm it was built with, its
  provenance, its label); a library named for a ROCm release answers for that
  release alone;
- a RUNPATH/RPATH naming the build machine's folders (absolute, neither ROCm's
  nor the system's) is noted, not failed, and is no place that finds ROCm;
- a wheel whose files need torch's libraries and whose METADATA confines torch
  to no release series is noted, not failed (pip may pair it with another torch).

Each rule (verify/rules.py) returns findings: a code and its data
(verify/finding.py, where the words for each are). What passes is decided on
the codes, never on the words; what was read is never edited, only judged into
new findings.
"""

from __future__ import annotations

from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.verify.bundles import BundleError, TargetId, deep_check
from rocbuild.verify.findings import FileFindings, InputFindings, Verdict
from rocbuild.verify.inputs import inspect_input
from rocbuild.verify.rules import judge


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
            read = _read(Path(path), inspected)
            inputs.append(judge(read, targets, device_code_in, links, only=only, allow_cuda=allow_cuda,
                                require=require_device_code, built_with=rocm_major))
    finally:
        deep_check.reset(token)
    return Verdict(list(archs), archs_from, inputs)


def _read(path: Path, inspected: dict[Path, InputFindings] | None) -> InputFindings:
    """What `path` holds, read once per `inspected` (judging never changes it, so it is kept as read)."""
    memo = inspected if inspected is not None and not deep_check.get() else None  # --deep reads everything
    if memo is not None and path in memo:
        return memo[path]
    found = inspect_input(path)
    if memo is not None:
        memo[path] = found
    return found


__all__ = ["BundleError", "FileFindings", "InputFindings", "Verdict", "verify_paths"]
