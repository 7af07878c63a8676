"""Judge wheels, libraries and folders: nothing links CUDA, device code covers every arch.

Rules:
- an ELF that needs a CUDA library fails (it was built against CUDA);
- an ELF that carries device code must carry it for every requested arch;
- an input (wheel, library, folder) with no device code anywhere fails when
  archs were requested: that is the silent CPU-only build;
- `device_code_in` globs name files that must exist and carry device code;
- `links` names libraries those files (else every file with device code) must need (DT_NEEDED).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from rocbuild.errors import UsageError
from rocbuild.verify.bundles import CCOB_MAGIC, MAGIC, BundleError, TargetId, covers, find_bundles
from rocbuild.verify.elf import ELF_MAGIC, ElfInfo, inspect_elf
from rocbuild.wheels import read_provenance


@dataclass
class FileFindings:
    path: str  # as shown: "pkg/lib.so" inside a wheel, else the file's path
    info: ElfInfo
    coverage: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def targets(self) -> list[str]:
        seen: list[str] = []
        for _, bundle in self.info.bundles:
            for t in bundle.targets:
                if str(t) not in seen:
                    seen.append(str(t))
        return seen

    def to_json(self) -> dict[str, Any]:
        i = self.info
        return {
            "path": self.path, "machine": i.machine, "soname": i.soname, "needed": i.needed,
            "cuda": i.cuda, "rocm": i.rocm, "targets": self.targets, "coverage": self.coverage,
            "bundles": [{"section": s, **b.to_json()} for s, b in i.bundles],
            "problems": self.problems,
        }


@dataclass
class InputFindings:
    path: str
    kind: str  # wheel | elf | folder | bundle
    files: list[FileFindings] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    provenance: dict[str, Any] | None = None  # what rocbuild recorded when it built this wheel

    @property
    def has_device_code(self) -> bool:
        return any(f.info.bundles for f in self.files)

    def all_problems(self) -> list[str]:
        out = []
        for f in self.files:
            where = self.path if f.path == self.path else f"{self.path}: {f.path}"
            out += [f"{where}: {p}" for p in f.problems]
        return out + [f"{self.path}: {p}" for p in self.problems]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "device_code": self.has_device_code,
                "provenance": self.provenance,
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
                 rocm_major: int | None = None) -> Verdict:
    """`rocm_major`: the major of the ROCm the inputs were built with, when the caller knows it."""
    targets = parse_targets(archs)
    inputs = []
    for path in paths:
        found = _inspect_input(Path(path))
        _judge(found, targets, device_code_in, links)
        judge_rocm_majors(found, rocm_major)
        inputs.append(found)
    return Verdict(list(archs), archs_from, inputs)


LABEL_MAJOR = re.compile(r"(?:^|[.])rocm(\d+)(?:[.]\d+)?(?:[.]|$)")


def judge_rocm_majors(found: InputFindings, built_with: int | None) -> None:
    """One ROCm major across every file, and the one the wheel was built with and is labelled for.

    A wheel linking libamdhip64.so.6 that says +rocm7.2 was built from a stale build folder; one whose
    files link two majors cannot load either way."""
    linked: dict[int, list[str]] = {}
    for f in found.files:
        for lib, major in f.info.rocm_majors.items():
            linked.setdefault(major, []).append(f"{f.path} links {lib}")
    if not linked:
        return
    if len(linked) > 1:
        found.problems.append("mixes ROCm majors: " + "; ".join(
            f"ROCm {m}: {', '.join(sorted(set(w))[:3])}" for m, w in sorted(linked.items()))
            + " (a stale library from an earlier build?)")
        return
    (major, where), = linked.items()
    claims: list[tuple[str, int]] = []
    if built_with is not None:
        claims.append(("it was built with", built_with))
    prov = found.provenance or {}
    toolchain = ((prov.get("identity") or {}).get("toolchain") or {}) if isinstance(prov, dict) else {}
    version = str(toolchain.get("rocm_version") or "")
    if version[:1].isdigit() and built_with is None:
        claims.append((f"its provenance says it was built with ROCm {version}", int(version.split(".")[0])))
    if found.kind == "wheel":
        label = _local_label(Path(found.path).name)
        m = LABEL_MAJOR.search(label)
        if m:
            claims.append((f"its label +{label} says", int(m.group(1))))
    for what, claimed in claims:
        if claimed != major:
            found.problems.append(f"links ROCm {major} libraries ({where[0]}), but {what} ROCm {claimed}: "
                                  "built from a stale build folder or against another ROCm; rebuild with --clean")


def _inspect_input(path: Path) -> InputFindings:
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    if not path.is_dir() and not stat.S_ISREG(path.stat().st_mode):
        raise UsageError(f"{path}: not a regular file (a device, FIFO or socket is never read)",
                         hint="give .whl files, shared libraries (.so) or folders holding them")
    if path.is_dir():
        found = InputFindings(str(path), "folder")
        for file in sorted(_walk(path)):
            if _head(file) == ELF_MAGIC:
                found.files.append(inspect_file(str(file.relative_to(path)), file))
        return found
    head = _head(path)
    if head == ELF_MAGIC:
        found = InputFindings(str(path), "elf")
        found.files.append(inspect_file(str(path), path))
        return found
    if zipfile.is_zipfile(path):
        return _inspect_wheel(path)
    if head in (MAGIC[:4], CCOB_MAGIC):
        return _inspect_bundle_file(path)
    raise UsageError(f"{path}: not a wheel, an ELF file, a folder or an offload bundle",
                     hint="give .whl files, shared libraries (.so) or folders holding them")


def _inspect_wheel(path: Path) -> InputFindings:
    found = InputFindings(str(path), "wheel")
    try:
        with zipfile.ZipFile(path) as zf, tempfile.TemporaryDirectory(prefix="rocbuild-verify-") as tmp:
            for member in zf.infolist():
                if member.is_dir():
                    continue
                with zf.open(member) as fh:
                    if fh.read(4) != ELF_MAGIC:
                        continue
                # Extract one ELF at a time: large libraries are scanned through mmap, not held in memory.
                target = Path(tmp) / "member"
                with zf.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                found.files.append(inspect_file(member.filename, target))
                target.unlink()
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"{path}: cannot read the wheel: {exc}") from None
    found.provenance = read_provenance(path)
    return found


def _inspect_bundle_file(path: Path) -> InputFindings:
    found = InputFindings(str(path), "bundle")
    data = path.read_bytes()
    info = ElfInfo(machine="offload bundle")
    bundles, problems = find_bundles(data, 0, len(data), strict=True)
    info.bundles = [("(file)", b) for b in bundles]
    info.problems = problems
    found.files.append(FileFindings(str(path), info, problems=list(problems)))
    return found


def judge_file(f: FileFindings, targets: list[TargetId]) -> None:
    """One ELF file's own rules: no CUDA library; its device code (if any) covers every target."""
    for lib in f.info.cuda:
        f.problems.append(f"links the CUDA library {lib}: it was built against CUDA, not ROCm "
                          "(for a torch extension: a CUDA torch was in the build environment)")
    if f.info.bundles:
        have = [t for _, b in f.info.bundles for t in b.targets]
        for wanted in targets:
            ok, why = covers(have, wanted)
            f.coverage[str(wanted)] = why if ok else "missing"
            if not ok:
                f.problems.append(f"{why}; rebuild with --arch including {wanted}")


def inspect_file(shown: str, path: Path) -> FileFindings:
    info = inspect_elf(path)
    return FileFindings(shown, info, problems=list(info.problems))


def _judge(found: InputFindings, targets: list[TargetId], device_code_in: tuple[str, ...],
           links: tuple[str, ...] = ()) -> None:
    for f in found.files:
        judge_file(f, targets)
    if targets and not found.has_device_code:
        n = len(found.files)
        if found.kind in ("elf", "bundle"):
            what = "carries no HIP device code (no offload bundle)"
        elif n:
            what = f"has no HIP device code: none of its {n} ELF file(s) carries an offload bundle"
        else:
            what = "holds no ELF file at all, so no HIP device code"
        found.problems.append(
            f"{what}, but {', '.join(map(str, targets))} requested: a CPU-only build "
            "(was the HIP/ROCm backend of the project enabled?)")
    named: list[FileFindings] = []  # files the globs name, in the order found
    for pattern in device_code_in:
        matched = [f for f in found.files if fnmatch.fnmatch(f.path, pattern)]
        if not matched:
            found.problems.append(f"no ELF file matches {pattern!r}, which must carry device code")
        for f in matched:
            if not f.info.bundles:
                f.problems.append(f"carries no device code (it matches {pattern!r}, which must)")
            if f not in named:
                named.append(f)
    if links:
        linked = named if device_code_in else [f for f in found.files if f.info.bundles]
        for f in linked:
            for lib in links:
                if not any(n == lib or n.startswith(lib + ".so") for n in f.info.needed):
                    f.problems.append(f"does not link {lib} (DT_NEEDED: {', '.join(f.info.needed) or 'none'}): "
                                      "not a ROCm build of this extension")


def _local_label(wheel_name: str) -> str:
    """The local version label of a wheel file name (`1.0+rocm7.2-...` -> rocm7.2), "" when none."""
    try:
        return parse_wheel_filename(wheel_name)[1].local or ""
    except InvalidWheelFilename:
        return ""


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if not p.is_symlink() and stat.S_ISREG(p.lstat().st_mode):  # never a FIFO, which would block
                yield p


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(4)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None


__all__ = ["BundleError", "FileFindings", "InputFindings", "Verdict", "verify_paths"]
