"""What verify found: per file (FileFindings), per input (InputFindings) and in all (Verdict)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rocbuild.verify.elf import ElfInfo
from rocbuild.verify.pe import is_windows_code

# Where a library looks for ROCm (its RUNPATH, else RPATH): how each entry reads.
_PINNED_ROCM = re.compile(r"^/opt/rocm-(\d+\.\d+(?:\.\d+)?)(?:/|$)")


def rocm_search(paths: list[str]) -> str:
    """How a library finds the ROCm libraries it needs, in words."""
    if not paths:
        return "no RPATH/RUNPATH: the system's library path (ldconfig, LD_LIBRARY_PATH)"
    kinds = []
    for entry in paths:
        if "_rocm_sdk_core" in entry or "_rocm_sdk_libraries" in entry:
            kinds.append(f"AMD's pip ROCm ({entry})")
        elif m := _PINNED_ROCM.match(entry):
            kinds.append(f"a pinned ROCm {m.group(1)} ({entry})")
        elif entry.startswith("/opt/rocm"):
            kinds.append(f"/opt/rocm ({entry})")
        elif entry.startswith("$ORIGIN") or entry.startswith("${ORIGIN}"):
            kinds.append(f"inside the package ({entry})")
        else:
            kinds.append(entry)
    return "; ".join(kinds)


@dataclass
class FileFindings:
    path: str  # as shown: "pkg/lib.so" inside a wheel, else the file's path
    info: ElfInfo
    coverage: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # worth knowing, not a failure (a leaked build path)
    judged: bool = True  # False: outside --files, listed only

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
            "targets": self.targets, "coverage": self.coverage,
            "bundles": [{"section": s, **b.to_json()} for s, b in i.bundles],
            "code_objects": [{"section": s, "offset": co.offset, "size": co.size,
                              "target": str(co.target) if co.target else None, "mach": co.mach,
                              "code_object_version": co.code_object_version} for s, co in i.code_objects],
            "runtime_kernels": i.runtime_kernels, "judged": self.judged,
            "problems": self.problems, "notes": self.notes,
        }


@dataclass
class InputFindings:
    path: str
    kind: str  # wheel | elf | folder | bundle
    files: list[FileFindings] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] | None = None  # what rocbuild recorded when it built this wheel

    @property
    def has_device_code(self) -> bool:
        return any(f.info.has_device_code for f in self.files if f.judged)

    def all_problems(self) -> list[str]:
        out = []
        for f in self.files:
            where = self.path if f.path == self.path else f"{self.path}: {f.path}"
            out += [f"{where}: {p}" for p in f.problems]
        return out + [f"{self.path}: {p}" for p in self.problems]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "device_code": self.has_device_code,
                "provenance": self.provenance, "notes": self.notes,
                "files": [f.to_json() for f in self.files], "problems": self.all_problems()}


@dataclass
class Verdict:
    archs: list[str]
    archs_from: str
    inputs: list[InputFindings]

    @property
    def problems(self) -> list[str]:
        return [p for i in self.inputs for p in i.all_problems()]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "archs": self.archs, "archs_from": self.archs_from,
                "inputs": [i.to_json() for i in self.inputs], "problems": self.problems}
