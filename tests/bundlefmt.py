"""Writers for the offload bundle formats, as LLVM's ClangOffloadBundler docs describe them.

Tests use these to make bundles (and CCOB-compressed ones, which the Debian 12
toolchain cannot produce) whose content they control.
"""

from __future__ import annotations

import struct
import zlib

import zstandard

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def bundle(entries: dict[str, bytes]) -> bytes:
    """An uncompressed bundle; entry data follows the header, each 8-byte aligned."""
    ids = [i.encode() for i in entries]
    header = len(MAGIC) + 8 + sum(24 + len(i) for i in ids)
    offsets, pos = [], _align(header, 8)
    for data in entries.values():
        offsets.append(pos)
        pos = _align(pos + len(data), 8)
    out = bytearray(MAGIC + struct.pack("<Q", len(ids)))
    for ident, off, data in zip(ids, offsets, entries.values()):
        out += struct.pack("<QQQ", off, len(data), len(ident)) + ident
    for off, data in zip(offsets, entries.values()):
        out += b"\0" * (off - len(out)) + data
    return bytes(out)


def ccob(raw: bytes, *, version: int = 3, method: str = "zstd") -> bytes:
    """Wrap a bundle in the compressed-bundle header (versions 1, 2 and 3)."""
    data = zstandard.ZstdCompressor().compress(raw) if method == "zstd" else zlib.compress(raw)
    code = {"zlib": 0, "zstd": 1}[method]
    hash_ = 0x1234_5678_9ABC_DEF0  # truncated MD5 in LLVM; rocbuild does not check it
    if version == 1:
        head = b"CCOB" + struct.pack("<HHIQ", 1, code, len(raw), hash_)
    elif version == 2:
        head = b"CCOB" + struct.pack("<HHIIQ", 2, code, 24 + len(data), len(raw), hash_)
    else:
        head = b"CCOB" + struct.pack("<HHQQQ", 3, code, 32 + len(data), len(raw), hash_)
    return head + data


def fake_code_object(arch: str) -> bytes:
    """Bytes standing in for an AMDGPU code object (only their size matters to the bundle)."""
    return b"\x7fELF" + arch.encode() * 50


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a
