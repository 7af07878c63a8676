"""What verify found: per file (FileFindings), per input (InputFindings) and in all (Verdict).

Each is a value: reading makes one, judging makes another from it (verify/rules.py); nothing edits one
in place. The findings themselves are codes with data (verify/finding.py); `problems` and `notes` are
their words."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rocbuild.verify.elf import ElfInfo
from rocbuild.verify.finding import Code, Finding
from rocbuild.verify.floors import Floors, floors_of
from rocbuild.verify.pe import is_windows_code
from rocbuild.verify.provenance import Provenance

if TYPE_CHECKING:
    from packaging.requirements import Requirement

# Where a library looks for ROCm (its RUNPATH, else RPATH): how each entry reads.
_PINNED_ROCM = re.compile(r"^/opt/rocm-(\d+\.\d+(?:\.\d+)?)(?:/|$)")
_ROCM_FOLDER = re.compile(r"^/opt/rocm(?:-\d[^/]*)?(?:/|$)")
# The dynamic linker's own folders, and Debian's multiarch ones below them: on every machine, not the builder's.
_SYSTEM_FOLDER = re.compile(r"^(?:/usr(?:/local)?)?/lib(?:32|64)?(?:/[a-z0-9_]+-linux-gnu[a-z0-9_]*)?$")

RunpathKind = Literal["origin", "pip rocm", "pinned rocm", "rocm", "system", "build", "relative"]


def runpath_kind(entry: str) -> RunpathKind:
    """What one RUNPATH/RPATH entry is. Any other absolute folder than ROCm's and the system's is one
    the build machine had (a work folder, /opt/rh's compiler, a conda build prefix): "build"."""
    if "_rocm_sdk_" in entry:  # AMD's pip ROCm, beside the package ($ORIGIN/..) or at an absolute site-packages
        return "pip rocm"
    if entry.startswith(("$ORIGIN", "${ORIGIN}")):
        return "origin"
    if not entry.startswith("/"):
        return "relative"  # to the working folder, or another $-token: said as it is
    folder = posixpath.normpath(entry)
    if _PINNED_ROCM.match(folder):
        return "pinned rocm"
    if _ROCM_FOLDER.match(folder):
        return "rocm"
    return "system" if _SYSTEM_FOLDER.match(folder) else "build"


_SAID: dict[RunpathKind, str] = {"pip rocm": "AMD's pip ROCm", "rocm": "/opt/rocm", "origin": "inside the package",
                                 "system": "a system folder"}


def rocm_search(paths: list[str]) -> str:
    """How a library finds the ROCm libraries it needs, in words. Build-machine folders are left out
    (the build_paths note names them): on another machine they are no place to find ROCm."""
    if not paths:
        return "no RPATH/RUNPATH: the system's library path (ldconfig, LD_LIBRARY_PATH)"
    kinds = []
    for entry in paths:
        kind = runpath_kind(entry)
        if kind == "pinned rocm":
            m = _PINNED_ROCM.match(posixpath.normpath(entry))
            kinds.append(f"a pinned ROCm {m.group(1) if m else '?'} ({entry})")
        elif kind in _SAID:
            kinds.append(f"{_SAID[kind]} ({entry})")
        elif kind == "relative":
            kinds.append(entry)
    if not kinds:
        return "the system's library path (ldconfig, LD_LIBRARY_PATH): its RPATH/RUNPATH names only build-machine folders"
    return "; ".join(kinds)


@dataclass(frozen=True)
class FileFindings:
    path: str  # as shown: "pkg/lib.so" inside a wheel, else the file's path
    info: ElfInfo
    judged: bool = True  # False: outside --files, listed only
    coverage: Mapping[str, str] = field(default_factory=dict)  # wanted target -> what covers it, or "missing"
    found: tuple[Finding, ...] = ()  # what the rules found (reading's own findings are in info.problems)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return (*self.info.problems, *self.found)

    @property
    def problems(self) -> list[str]:
        return [x.message for x in self.findings if x.problem]

    @property
    def notes(self) -> list[str]:  # worth knowing, not a failure (a leaked build path)
        return [x.message for x in self.findings if not x.problem]

    @property
    def targets(self) -> list[str]:
        seen: list[str] = []
        for t in self.info.targets:
            if str(t) not in seen:
                seen.append(str(t))
        return seen

    @property
    def finds_rocm(self) -> str:
        if is_windows_code(self.info):
            return "Windows' DLL search: the DLL's own folder, then the folders on PATH"
        return rocm_search(self.info.runpath or self.info.rpath)

    def to_json(self) -> dict[str, Any]:
        i = self.info
        return {
            "path": self.path, "machine": i.machine, "soname": i.soname, "needed": i.needed,
            "cuda": i.cuda, "rocm": i.rocm, "rocm_majors": i.rocm_majors, "loads": i.loads,
            "rpath": i.rpath, "runpath": i.runpath, "finds_rocm": self.finds_rocm,
            "targets": self.targets, "coverage": dict(self.coverage),
            "bundles": [{"section": s, **b.to_json()} for s, b in i.bundles],
            "code_objects": [{"section": s, "offset": co.offset, "size": co.size,
                              "target": str(co.target) if co.target else None, "mach": co.mach,
                              "code_object_version": co.code_object_version} for s, co in i.code_objects],
            "runtime_kernels": i.runtime_kernels, "judged": self.judged,
            "problems": self.problems, "notes": self.notes, "findings": [x.to_json() for x in self.findings],
        }


@dataclass(frozen=True)
class InputFindings:
    path: str
    kind: str  # wheel | elf | folder | bundle | code object | windows library | archive
    files: tuple[FileFindings, ...] = ()
    found: tuple[Finding, ...] = ()  # what the rules found of the input as a whole
    provenance: Provenance | None = None  # what rocbuild recorded when it built this wheel
    requires: tuple[Requirement, ...] | None = None  # a wheel's METADATA Requires-Dist; None: no METADATA read

    @property
    def has_device_code(self) -> bool:
        return any(f.info.has_device_code for f in self.files if f.judged)

    @property
    def problems(self) -> list[str]:
        """The input's own problems (each file's are the file's)."""
        return [x.message for x in self.found if x.problem]

    @property
    def notes(self) -> list[str]:
        return [x.message for x in self.found if not x.problem]

    def all_findings(self) -> list[tuple[str, Finding]]:
        """Every finding, the files' first, each with where it is: "input" or "input: file"."""
        out = []
        for f in self.files:
            where = self.path if f.path == self.path else f"{self.path}: {f.path}"
            out += [(where, x) for x in f.findings]
        return out + [(self.path, x) for x in self.found]

    def all_problems(self) -> list[str]:
        return [f"{where}: {x.message}" for where, x in self.all_findings() if x.problem]

    def problem_codes(self) -> list[Code]:
        """The code of each of all_problems(), in the same order."""
        return [x.code for _, x in self.all_findings() if x.problem]

    @property
    def floors(self) -> Floors | None:
        """A wheel's tags and the glibc and libstdc++ its binaries need; None for other inputs."""
        if self.kind != "wheel":
            return None
        return floors_of(Path(self.path).name, (v for f in self.files for v in f.info.versions))

    def to_json(self) -> dict[str, Any]:
        floors = self.floors
        return {"path": self.path, "kind": self.kind, "device_code": self.has_device_code,
                "installs": floors.to_json() if floors is not None else None,
                "provenance": None if self.provenance is None else dict(self.provenance.raw), "notes": self.notes,
                "requires_dist": None if self.requires is None else [str(r) for r in self.requires],
                "files": [f.to_json() for f in self.files], "problems": self.all_problems(),
                "problem_codes": self.problem_codes(), "findings": [x.to_json() for x in self.found]}


@dataclass(frozen=True)
class Verdict:
    archs: list[str]
    archs_from: str
    inputs: list[InputFindings]

    @property
    def problems(self) -> list[str]:
        return [p for i in self.inputs for p in i.all_problems()]

    @property
    def problem_codes(self) -> list[Code]:
        """The code of each of `problems`, in the same order."""
        return [c for i in self.inputs for c in i.problem_codes()]

    @property
    def ok(self) -> bool:
        return not self.problem_codes

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "archs": self.archs, "archs_from": self.archs_from,
                "inputs": [i.to_json() for i in self.inputs], "problems": self.problems,
                "problem_codes": self.problem_codes}
