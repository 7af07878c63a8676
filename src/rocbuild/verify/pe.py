"""Windows libraries (PE/COFF: .dll, .pyd): HIP device code sits in an offload bundle section (the HIP
SDK writes `.hip_fat`), compressed or not, read as an ELF library's bundles are; the DLLs a library
imports say whether it links CUDA or ROCm. The result is an ElfInfo like any other file's, its
machine naming Windows, so a wheel whose device code is Windows code is never called CPU-only."""

from __future__ import annotations

import mmap
import re
import struct
from pathlib import Path

from rocbuild.verify.bundles import find_bundles
from rocbuild.verify.codeobj import find_code_objects
from rocbuild.verify.elf import ElfInfo, section_at
from rocbuild.verify.finding import Finding

PE_HEAD = b"MZ"
MACHINES = {0x8664: "x86-64", 0xAA64: "arm64", 0x14C: "i386"}
# Sections where a bundle is the content: a magic there that does not parse is a damaged bundle.
FATBIN_SECTION = re.compile(r"^\.hip_fat|^\.hipFatB|^__CLANG_OFFLOAD")
WINDOWS = "(Windows)"


def is_windows_code(info: ElfInfo) -> bool:
    return info.machine.endswith(WINDOWS)


def inspect_pe(path: Path) -> ElfInfo:
    info = ElfInfo()
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            sections, imports = _read_headers(mm, info)
            info.needed = imports
            for name, offset, size in sections:
                end = min(offset + size, len(mm))
                bundles, problems = find_bundles(mm, offset, end, strict=bool(FATBIN_SECTION.match(name)), section=name)
                info.bundles += [(name, b) for b in bundles]
                info.problems += problems
            skip = [(b.offset, b.offset + b.size) for _, b in info.bundles]
            info.code_objects += [(section_at(sections, co.offset), co) for co in find_code_objects(mm, 0, len(mm), skip)]
    except (ValueError, struct.error, IndexError) as exc:
        info.problems.append(Finding("unreadable_pe", {"reason": str(exc)}))
    return info


def _read_headers(mm: mmap.mmap, info: ElfInfo) -> tuple[list[tuple[str, int, int]], list[str]]:
    """The sections (name, file offset, size) and the names of the DLLs imported."""
    (pe,) = struct.unpack_from("<I", mm, 0x3C)
    if mm[pe:pe + 4] != b"PE\0\0":
        raise ValueError("no PE signature where the DOS header points")
    machine, count, _, symbols, n_symbols, optional_size, _ = struct.unpack_from("<HHIIIHH", mm, pe + 4)
    optional = pe + 24
    (magic,) = struct.unpack_from("<H", mm, optional)
    kind = {0x20B: "PE32+", 0x10B: "PE32"}.get(magic)
    if kind is None:
        raise ValueError(f"unknown optional header magic {magic:#x}")
    info.machine = f"{kind} {MACHINES.get(machine, hex(machine))} {WINDOWS}"
    strings = symbols + 18 * n_symbols  # long section names ("/123") point into the COFF string table
    sections: list[tuple[str, int, int]] = []
    mapped: list[tuple[int, int, int]] = []  # (virtual address, virtual size, file offset)
    for i in range(count):
        at = optional + optional_size + 40 * i
        raw_name, vsize, vaddr, size, offset = struct.unpack_from("<8sIIII", mm, at)
        name = raw_name.rstrip(b"\0").decode("latin-1")
        if name.startswith("/") and name[1:].isdigit() and symbols:
            start = strings + int(name[1:])
            name = mm[start:mm.find(b"\0", start)].decode("latin-1")
        if size and offset:
            sections.append((name, offset, size))
        mapped.append((vaddr, max(vsize, size), offset))
    directory = optional + (112 if kind == "PE32+" else 96) + 8  # data directory 1: the import table
    (rva, _) = struct.unpack_from("<II", mm, directory)
    return sections, _imports(mm, rva, mapped)


def _imports(mm: mmap.mmap, rva: int, mapped: list[tuple[int, int, int]]) -> list[str]:
    def offset(address: int) -> int | None:
        return next((off + address - va for va, size, off in mapped if va <= address < va + size), None)

    names: list[str] = []
    at = offset(rva) if rva else None
    while at is not None and at + 20 <= len(mm):
        *_, name_rva, first_thunk = struct.unpack_from("<IIIII", mm, at)
        if name_rva == 0 and first_thunk == 0:
            break
        where = offset(name_rva)
        if where is not None:
            names.append(mm[where:mm.find(b"\0", where)].decode("latin-1"))
        at += 20
    return names
