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

import errno
import fnmatch
import mmap
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

from rocbuild.errors import HostNotReady, UsageError
from rocbuild.verify import archive
from rocbuild.verify.archive import AR_MAGIC
from rocbuild.verify.bundles import CCOB_MAGIC, MAGIC, BundleError, TargetId, covers, deep_check, find_bundles
from rocbuild.verify.elf import ELF_MAGIC, RUNTIME_LIB, ElfInfo, inspect_elf
from rocbuild.verify.provenance import read_provenance


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
                 require_device_code: bool = True, deep: bool = False) -> Verdict:
    """`rocm_major`: the major of the ROCm the inputs were built with, when the caller knows it.
    `only`: globs of the files to judge (a multi-backend wheel's ROCm part); the rest are listed.
    `require_device_code`: False lets a package that links or loads the ROCm runtime but ships no
    kernels (a JIT compiler, runtime bindings) pass, said as such."""
    targets = parse_targets(archs)
    inputs = []
    token = deep_check.set(deep)
    try:
        for path in paths:
            inputs.append(_verify_one(Path(path), targets, device_code_in, links, rocm_major, only, allow_cuda,
                                      require_device_code))
    finally:
        deep_check.reset(token)
    return Verdict(list(archs), archs_from, inputs)


def _verify_one(path: Path, targets: list[TargetId], device_code_in: tuple[str, ...], links: tuple[str, ...],
                rocm_major: int | None, only: tuple[str, ...], allow_cuda: bool, require: bool) -> InputFindings:
    found = _inspect_input(path)
    for f in found.files:
        f.judged = not only or any(fnmatch.fnmatch(f.path, g) for g in only)
    _judge(found, targets, device_code_in, links, allow_cuda=allow_cuda, require=require)
    judge_rocm_majors(found, rocm_major)
    return found


# Where a library looks for ROCm (its RUNPATH, else RPATH): how each entry reads.
_PINNED_ROCM = re.compile(r"^/opt/rocm-(\d+\.\d+(?:\.\d+)?)(?:/|$)")
# Absolute paths that exist only on the machine that built the wheel.
_BUILD_PATH = re.compile(r"^/(?:root|home|tmp|project|build|builds|github|__w|work|workspace|src|var/lib/buildkite"
                         r"|opt/conda/conda-bld|io)(?:/|$)")


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


def leaked_build_paths(paths: list[str]) -> list[str]:
    return [p for p in paths if _BUILD_PATH.match(p)]


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
            found.files += inspect_any(str(file.relative_to(path)), file, _head(file))
        return found
    head = _head(path)
    if head != ELF_MAGIC and zipfile.is_zipfile(path):
        return _inspect_wheel(path)
    files = inspect_any(str(path), path, head)
    if not files and head != AR_MAGIC[:4]:
        raise UsageError(f"{path}: not a wheel, an ELF file, a folder, an offload bundle, a code object or a "
                         "static archive", hint="give .whl files, shared libraries (.so), .co/.hsaco or .a files, "
                         "or folders holding them")
    machine = files[0].info.machine if len(files) == 1 else ""
    kind = ("archive" if head == AR_MAGIC[:4] else "bundle" if machine == "offload bundle"
            else "code object" if machine == "EM_AMDGPU" else "elf")
    return InputFindings(str(path), kind, files=files)


def _inspect_wheel(path: Path) -> InputFindings:
    found = InputFindings(str(path), "wheel")
    try:
        with zipfile.ZipFile(path) as zf, tempfile.TemporaryDirectory(prefix="rocbuild-verify-") as tmp:
            for member in zf.infolist():
                if member.is_dir():
                    continue
                with zf.open(member) as fh:
                    head = fh.read(4)
                if head != ELF_MAGIC and head not in BUNDLE_HEADS and head != AR_MAGIC[:4]:
                    continue
                # Extract one file at a time: large libraries are scanned through mmap, not held in memory.
                target = Path(tmp) / "member"
                _check_room(Path(tmp), member, path)
                try:
                    with zf.open(member) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                except OSError as exc:
                    if exc.errno == errno.ENOSPC:
                        _no_room(Path(tmp), member, path)
                    raise
                found.files += inspect_any(member.filename, target, head)
                target.unlink()
    except HostNotReady:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise UsageError(f"{path}: not a readable wheel (zip): {exc}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the wheel: {exc.strerror or exc}") from None
    found.provenance = read_provenance(path)
    return found


def _check_room(tmp: Path, member: zipfile.ZipInfo, wheel: Path) -> None:
    """A member is extracted to read it: say where and how much room that needs before trying."""
    if shutil.disk_usage(tmp).free < member.file_size + (16 << 20):
        _no_room(tmp, member, wheel)


def _no_room(tmp: Path, member: zipfile.ZipInfo, wheel: Path) -> None:
    free = shutil.disk_usage(tmp).free
    raise HostNotReady(
        f"{wheel}: reading {member.filename} needs {member.file_size / (1 << 20):.0f} MiB of temporary space "
        f"in {tmp.parent}, which has {free / (1 << 20):.0f} MiB free",
        hint="point TMPDIR at a folder with more room, e.g. TMPDIR=/var/tmp rocbuild verify ...") from None


def judge_file(f: FileFindings, targets: list[TargetId], *, allow_cuda: bool = False) -> None:
    """One ELF file's own rules: no CUDA library; its device code (if any) covers every target."""
    leaked = leaked_build_paths(f.info.runpath or f.info.rpath)
    if leaked:
        f.notes.append(f"its {'RUNPATH' if f.info.runpath else 'RPATH'} holds build-machine paths "
                       f"({', '.join(leaked)}): harmless where they do not exist, a hijack risk where they do")
    if not f.judged:
        return
    for lib in f.info.cuda:
        if allow_cuda:
            f.notes.append(f"links the CUDA library {lib} (allowed by --allow-cuda)")
            continue
        f.problems.append(f"links the CUDA library {lib}: it was built against CUDA, not ROCm "
                          "(for a torch extension: a CUDA torch was in the build environment; for a "
                          "multi-backend wheel, scope the check with --files or --allow-cuda)")
    if f.info.has_device_code and f.info.machine != "EM_AMDGPU":  # code object files are judged together
        have = f.info.targets
        for wanted in targets:
            ok, why = covers(have, wanted)
            f.coverage[str(wanted)] = why if ok else "missing"
            if not ok:
                f.problems.append(f"{why}; rebuild with --arch including {wanted}")


def inspect_file(shown: str, path: Path) -> FileFindings:
    info = inspect_elf(path, shown)
    return FileFindings(shown, info, problems=list(info.problems))


def inspect_bundle(shown: str, path: Path) -> FileFindings:
    """A raw offload bundle file (`hipcc --genco` writes one), read through mmap."""
    info = ElfInfo(machine="offload bundle")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        bundles, problems = find_bundles(mm, 0, len(mm), strict=True)
    info.bundles = [("(file)", b) for b in bundles]
    info.problems = problems
    return FileFindings(shown, info, problems=list(problems))


def inspect_any(shown: str, path: Path, head: bytes) -> list[FileFindings]:
    """The findings for a file by its first bytes: an ELF (host library or code object), a bundle, or
    a static archive (one finding per object file in it); nothing for anything else."""
    if head == ELF_MAGIC:
        return [inspect_file(shown, path)]
    if head in BUNDLE_HEADS and path.stat().st_size > 0:
        return [inspect_bundle(shown, path)]
    if head == AR_MAGIC[:4]:
        return inspect_archive(shown, path)
    return []


def inspect_archive(shown: str, path: Path) -> list[FileFindings]:
    """Each ELF object file of a static archive, as `lib.a(member.o)`."""
    out: list[FileFindings] = []
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if bytes(mm[:len(AR_MAGIC)]) != AR_MAGIC:
            return out
        with tempfile.TemporaryDirectory(prefix="rocbuild-verify-") as tmp:
            target = Path(tmp) / "member.o"
            for name, offset, size in archive.members(mm):
                if bytes(mm[offset:offset + 4]) != ELF_MAGIC:
                    continue
                target.write_bytes(mm[offset:offset + size])
                out.append(inspect_file(f"{shown}({name})", target))
    return out


def _judge(found: InputFindings, targets: list[TargetId], device_code_in: tuple[str, ...],
           links: tuple[str, ...] = (), *, allow_cuda: bool = False, require: bool = True) -> None:
    for f in found.files:
        judge_file(f, targets, allow_cuda=allow_cuda)
    judged = [f for f in found.files if f.judged]
    # One code object holds one target: a package ships one file per target, judged together (with any
    # other device code of the package, which its loader may pick from as well).
    loose = [f for f in judged if f.info.machine == "EM_AMDGPU" and f.info.has_device_code]
    if loose:
        have = [t for f in judged for t in f.info.targets]
        for wanted in targets:
            ok, why = covers(have, wanted)
            if not ok:
                found.problems.append(f"its {len(loose)} code object file(s) have {why}; rebuild with --arch "
                                      f"including {wanted}")
    unreadable = any("unreadable offload bundle" in p or "not a readable ELF" in p for f in judged for p in f.problems)
    if targets and not found.has_device_code and not unreadable:  # an unreadable bundle is its own cause
        runtime = sorted({lib for f in judged for lib in list(f.info.rocm) + f.info.loads if RUNTIME_LIB.match(lib)})
        n = len(judged)
        if runtime:
            what = (f"ships no GPU kernels of its own, but {'links' if any(f.info.rocm for f in judged) else 'loads'}"
                    f" the ROCm runtime ({', '.join(runtime)}): a runtime binding or JIT compiler needs no kernels")
            if require:
                found.problems.append(f"{what}; this build was meant to carry device code for "
                                      f"{', '.join(map(str, targets))} (was the HIP backend of the project enabled?)")
            else:
                found.notes.append(what + f"; nothing to check for {', '.join(map(str, targets))}")
        else:
            if found.kind in ("elf", "bundle", "code object"):
                what = "carries no HIP device code (no offload bundle, no code object)"
            elif n:
                what = f"has no HIP device code: none of its {n} ELF file(s) carries an offload bundle or a code object"
            else:
                what = "holds no ELF file at all, so no HIP device code"
            found.problems.append(
                f"{what}, and nothing in it links the ROCm runtime, but {', '.join(map(str, targets))} requested: "
                "a CPU-only build (was the HIP/ROCm backend of the project enabled?)")
    named: list[FileFindings] = []  # files the globs name, in the order found
    for pattern in device_code_in:
        matched = [f for f in found.files if fnmatch.fnmatch(f.path, pattern)]
        if not matched:
            found.problems.append(f"no ELF file matches {pattern!r}, which must carry device code")
        for f in matched:
            if not f.info.has_device_code:
                f.problems.append(f"carries no device code (it matches {pattern!r}, which must)")
            if f not in named:
                named.append(f)
    if links:
        linked = named if device_code_in else [f for f in found.files if f.info.has_device_code and f.judged]
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


# The first four bytes of an offload bundle file, uncompressed or CCOB-compressed.
BUNDLE_HEADS = (MAGIC[:4], CCOB_MAGIC)

__all__ = ["BundleError", "FileFindings", "InputFindings", "Verdict", "verify_paths"]
