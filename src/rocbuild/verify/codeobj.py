"""AMDGPU code objects: ELF files for the GPU itself (e_machine EM_AMDGPU), the form device code takes
inside an offload bundle, as a `.co`/`.hsaco` file of its own, or embedded in a host library's data.

The target is in the ELF header: e_flags' low byte is the processor (LLVM's EF_AMDGPU_MACH table), and
for code object v4 and later two fields of it say xnack and sramecc (unsupported, any, off or on); v3
has one bit each (on). The table below is LLVM's complete list (llvm/BinaryFormat/ELF.h, LLVM 22).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rocbuild.verify.bundles import Buf, TargetId

ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
ELFABIVERSION_AMDGPU_HSA_V3 = 1
EF_AMDGPU_MACH = 0x0FF

MACH: dict[int, str] = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702", 0x025: "gfx703",
    0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803", 0x02B: "gfx810", 0x02C: "gfx900",
    0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906", 0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c",
    0x033: "gfx1010", 0x034: "gfx1011", 0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032",
    0x039: "gfx1033", 0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805", 0x03D: "gfx1035", 0x03E: "gfx1034",
    0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150", 0x044: "gfx1103",
    0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200", 0x049: "gfx1250", 0x04A: "gfx1151",
    0x04B: "gfx941", 0x04C: "gfx942", 0x04E: "gfx1201", 0x04F: "gfx950", 0x050: "gfx1310",
    0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic", 0x054: "gfx11-generic",
    0x055: "gfx1152", 0x057: "gfx1154", 0x058: "gfx1153", 0x059: "gfx12-generic", 0x05A: "gfx1251",
    0x05B: "gfx12-5-generic", 0x05C: "gfx1172", 0x05D: "gfx1170", 0x05E: "gfx1171", 0x05F: "gfx9-4-generic",
    0x062: "gfx11-7-generic", 0x063: "gfx13-generic",
}
_V4_MODES = {0x1: None, 0x2: False, 0x3: True}  # 0: unsupported, 1: any (nothing pinned), 2: off, 3: on


@dataclass(frozen=True)
class CodeObject:
    offset: int  # where it starts in the scanned buffer
    size: int  # its extent (to the end of its section or program header table, whichever is later)
    target: TargetId | None  # None: an EF_AMDGPU_MACH value this table does not know
    mach: int
    abi_version: int

    @property
    def code_object_version(self) -> int | None:
        """Code object v2..v6 (EI_ABIVERSION 0..4 of ELFOSABI_AMDGPU_HSA)."""
        return self.abi_version + 2 if 0 <= self.abi_version <= 4 else None

    def describe(self) -> str:
        return str(self.target) if self.target else f"unknown EF_AMDGPU_MACH {self.mach:#x}"


def target_of(flags: int, abi_version: int) -> TargetId | None:
    name = MACH.get(flags & EF_AMDGPU_MACH)
    if name is None:
        return None
    features: list[tuple[str, bool]] = []
    if abi_version >= 2:  # code object v4+: two-bit fields
        for feature, shift in (("sramecc", 10), ("xnack", 8)):
            mode = _V4_MODES.get((flags >> shift) & 0x3)
            if mode is not None:
                features.append((feature, mode))
    elif abi_version == ELFABIVERSION_AMDGPU_HSA_V3:
        if flags & 0x200:
            features.append(("sramecc", True))
        if flags & 0x100:
            features.append(("xnack", True))
    return TargetId(name, tuple(sorted(features)))


def parse_code_object(buf: Buf, at: int, end: int) -> CodeObject | None:
    """The code object whose ELF header starts at `at`, when it is one (64-bit, little-endian,
    EM_AMDGPU) and fits before `end`; None for anything else."""
    head = bytes(buf[at:at + 64])
    if len(head) < 64 or head[:4] != ELF_MAGIC or head[4] != 2 or head[5] != 1:
        return None
    machine, = struct.unpack_from("<H", head, 18)
    if machine != EM_AMDGPU:
        return None
    phoff, shoff, flags = struct.unpack_from("<QQI", head, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 54)
    size = max(64, phoff + phentsize * phnum, shoff + shentsize * shnum)
    if at + size > end:
        return None
    abi_version = head[8]
    return CodeObject(at, size, target_of(flags, abi_version), flags & EF_AMDGPU_MACH, abi_version)


def find_code_objects(buf: Buf, start: int, end: int, skip: list[tuple[int, int]]) -> list[CodeObject]:
    """Every code object in buf[start:end] outside the `skip` ranges (offload bundles already read)."""
    found: list[CodeObject] = []
    pos = buf.find(ELF_MAGIC, start, end)
    while pos != -1:
        if not any(lo <= pos < hi for lo, hi in skip) and not (found and pos < found[-1].offset + found[-1].size):
            co = parse_code_object(buf, pos, end)
            if co is not None:
                found.append(co)
        pos = buf.find(ELF_MAGIC, pos + 1, end)
    return found
