"""Reading what verify is given: wheels (one member at a time), folders, ELF files, offload bundles,
code objects and static archives, into findings (verify/findings.py)."""

from __future__ import annotations

import errno
import mmap
import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from email.parser import BytesHeaderParser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

import rocbuild.verify.archive as archive
from rocbuild.errors import HostNotReady, UsageError
from rocbuild.verify.archive import AR_MAGIC
from rocbuild.verify.bundles import CCOB_MAGIC, MAGIC, find_bundles
from rocbuild.verify.elf import ELF_MAGIC, ElfInfo, inspect_elf
from rocbuild.verify.findings import FileFindings, InputFindings
from rocbuild.verify.pe import PE_HEAD, inspect_pe
from rocbuild.verify.provenance import read_provenance

# The first four bytes of an offload bundle file, uncompressed or CCOB-compressed.
BUNDLE_HEADS = (MAGIC[:4], CCOB_MAGIC)


def inspect_input(path: Path) -> InputFindings:
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    if not path.is_dir() and not stat.S_ISREG(path.stat().st_mode):
        raise UsageError(f"{path}: not a regular file (a device, FIFO or socket is never read)",
                         hint="give .whl files, shared libraries (.so) or folders holding them")
    if path.is_dir():
        inside = [f for file in sorted(_walk(path)) for f in inspect_any(str(file.relative_to(path)), file, _head(file))]
        return InputFindings(str(path), "folder", tuple(inside))
    head = _head(path)
    if head != ELF_MAGIC and zipfile.is_zipfile(path):
        return _inspect_wheel(path)
    files = inspect_any(str(path), path, head)
    if not files and head != AR_MAGIC[:4]:
        raise UsageError(f"{path}: not a wheel, an ELF file, a Windows DLL, a folder, an offload bundle, a code "
                         "object or a static archive", hint="give .whl files, shared libraries (.so, .dll, .pyd), "
                         ".co/.hsaco or .a files, or folders holding them")
    machine = files[0].info.machine if len(files) == 1 else ""
    kind = ("archive" if head == AR_MAGIC[:4] else "bundle" if machine == "offload bundle"
            else "code object" if machine == "EM_AMDGPU" else "windows library" if head[:2] == PE_HEAD else "elf")
    return InputFindings(str(path), kind, files=tuple(files))


def _inspect_wheel(path: Path) -> InputFindings:
    files: list[FileFindings] = []
    try:
        with zipfile.ZipFile(path) as zf, tempfile.TemporaryDirectory(prefix="rocbuild-verify-") as tmp:
            requires = read_requires(zf)
            for member in zf.infolist():
                if member.is_dir():
                    continue
                with zf.open(member) as fh:
                    head = fh.read(4)
                if head != ELF_MAGIC and head not in BUNDLE_HEADS and head != AR_MAGIC[:4] and head[:2] != PE_HEAD:
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
                files += inspect_any(member.filename, target, head)
                target.unlink()
    except HostNotReady:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise UsageError(f"{path}: not a readable wheel (zip): {exc}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the wheel: {exc.strerror or exc}") from None
    return InputFindings(str(path), "wheel", tuple(files), provenance=read_provenance(path), requires=requires)


def read_requires(zf: zipfile.ZipFile) -> tuple[Requirement, ...] | None:
    """What a wheel's METADATA requires (Requires-Dist), each parsed; None for a zip with no METADATA.
    A line packaging cannot parse is left out: pip would refuse it anyway."""
    found = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(found) != 1:
        return None
    headers = BytesHeaderParser().parsebytes(zf.read(found[0]))
    out = []
    for value in headers.get_all("Requires-Dist") or []:
        try:
            out.append(Requirement(" ".join(str(value).split())))  # a folded header's line breaks go
        except InvalidRequirement:
            continue
    return tuple(out)


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


def inspect_file(shown: str, path: Path) -> FileFindings:
    return FileFindings(shown, inspect_elf(path, shown))


def inspect_bundle(shown: str, path: Path) -> FileFindings:
    """A raw offload bundle file (`hipcc --genco` writes one), read through mmap."""
    info = ElfInfo(machine="offload bundle")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        bundles, problems = find_bundles(mm, 0, len(mm), strict=True)
    info.bundles = [("(file)", b) for b in bundles]
    info.problems = problems
    return FileFindings(shown, info)


def inspect_any(shown: str, path: Path, head: bytes) -> list[FileFindings]:
    """The findings for a file by its first bytes: an ELF (host library or code object), a bundle, or
    a static archive (one finding per object file in it); nothing for anything else."""
    if head == ELF_MAGIC:
        return [inspect_file(shown, path)]
    if head in BUNDLE_HEADS and path.stat().st_size > 0:
        return [inspect_bundle(shown, path)]
    if head == AR_MAGIC[:4]:
        return inspect_archive(shown, path)
    if head[:2] == PE_HEAD:
        return [inspect_windows(shown, path)]
    return []


def inspect_windows(shown: str, path: Path) -> FileFindings:
    return FileFindings(shown, inspect_pe(path))


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
