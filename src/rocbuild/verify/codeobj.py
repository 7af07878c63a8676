"""AMDGPU code objects: ELF files for the GPU itself (e_machine EM_AMDGPU), the form device code takes
inside an offload bundle, as a `.co`/`.hsaco` file of its own, or embedded in a host library's data.

The target is in the ELF header: e_flags' low byte is the processor (LLVM's EF_AMDGPU_MACH table), and
for code object v4 and later two fields of it say xnack and sramecc (unsupported, any, off or on); v3
has one bit each (on). The table is gfx.MACH, LLVM's complete list.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rocbuild.gfx import MACH
from rocbuild.verify.bundles import Buf, TargetId

ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
ELFABIVERSION_AMDGPU_HSA_V3 = 1
EF_AMDGPU_MACH = 0x0FF

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
