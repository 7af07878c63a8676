"""Clang offload bundles: where HIP device code lives inside a host library.

Layout (LLVM's ClangOffloadBundler documentation), all integers little-endian:

    "__CLANG_OFFLOAD_BUNDLE__"  u64 entry count, then per entry:
        u64 offset (from the bundle's first byte), u64 size, u64 id length, id

Since ROCm 6.2 `--offload-compress` wraps a whole bundle in a header:

    "CCOB" u16 version, u16 method (0 zlib, 1 zstd), then
        v1: u32 uncompressed size, u64 hash
        v2: u32 total size, u32 uncompressed size, u64 hash
        v3: u64 total size, u64 uncompressed size, u64 hash
    then the compressed bytes of an uncompressed bundle.

Entry ids are `<kind>-<triple>-<target id>`: `hipv4-amdgcn-amd-amdhsa--gfx90a`,
`hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`, the older
`hip-amdgcn-amd-amdhsa-gfx906`, and an empty `host-x86_64-unknown-linux-gnu`.
"""

from __future__ import annotations

import mmap
import re
import struct
import zlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import zstandard

from rocbuild.gfx import GENERIC_MEMBERS
from rocbuild.verify.finding import Finding

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
METHODS = {0: "zlib", 1: "zstd"}
MAX_ENTRIES = 4096
MAX_ID = 512
CHUNK = 1 << 20
KEEP = 4 * CHUNK  # of a decompressed bundle, the front is kept: its header is there

DEVICE_ID_RE = re.compile(r"^(?P<kind>[a-z0-9_]+)-amdgcn-amd-amdhsa-(?:[a-z]*-)?(?P<target>gfx.+)$")
TARGET_RE = re.compile(r"^(?P<proc>gfx[0-9a-z]+(?:-[0-9a-z]+)*)(?P<features>(?::[a-z]+[+-])*)$")

# Set by `verify --deep`: decompress every compressed bundle in full to check its size against its header.
# Otherwise only as much is decompressed as the bundle header needs (its entries and their sizes).
deep_check: ContextVar[bool] = ContextVar("deep_check", default=False)
ZSTD_FEED = 1 << 16  # zstd returns all it can make of its input at once: feed it little

# What bundles are read from: a file mapped into memory, or bytes.
Buf = bytes | bytearray | mmap.mmap


class BundleError(ValueError):
    """A bundle header that does not hold together (truncated, out of bounds, bad data).

    `short`: the data ends before the header does, which more data may mend (a header read from
    the front of a bundle being decompressed)."""

    def __init__(self, message: str, *, short: bool = False):
        super().__init__(message)
        self.short = short


@dataclass(frozen=True, order=True)
class TargetId:
    """A gfx processor and the features it pins (`gfx90a:xnack-`); unpinned features run in any mode."""

    processor: str
    features: tuple[tuple[str, bool], ...] = ()

    @classmethod
    def parse(cls, text: str) -> TargetId | None:
        m = TARGET_RE.match(text)
        if not m:
            return None
        feats = [(f[:-1], f[-1] == "+") for f in m.group("features").split(":") if f]
        return cls(m.group("proc"), tuple(sorted(feats)))

    def __str__(self) -> str:
        return self.processor + "".join(f":{name}{'+' if on else '-'}" for name, on in self.features)


@dataclass(frozen=True)
class BundleEntry:
    id: str
    offset: int
    size: int

    @property
    def target(self) -> TargetId | None:
        m = DEVICE_ID_RE.match(self.id)
        return TargetId.parse(m.group("target")) if m else None

    @property
    def kind(self) -> str:
        return self.id.split("-", 1)[0]

    def to_json(self) -> dict[str, Any]:
        target = self.target
        return {"id": self.id, "kind": self.kind, "target": str(target) if target else None, "size": self.size}


@dataclass(frozen=True)
class Bundle:
    offset: int  # where the bundle (or its CCOB wrapper) starts in the scanned buffer
    size: int  # bytes it occupies there
    entries: tuple[BundleEntry, ...]
    compression: str | None = None  # "zlib" or "zstd" for CCOB
    compressed_version: int | None = None

    @property
    def targets(self) -> list[TargetId]:
        return [t for t in (e.target for e in self.entries if e.size > 0) if t is not None]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offset": self.offset, "size": self.size, "compression": self.compression,
               "entries": [e.to_json() for e in self.entries]}
        if self.compressed_version is not None:
            out["ccob_version"] = self.compressed_version
        return out


def parse_uncompressed(buf: Buf, at: int = 0, limit: int | None = None) -> Bundle:
    """Read the bundle starting at `at`; `limit` is where its data ends (buf may hold only the front)."""
    end = len(buf) if limit is None else limit
    if bytes(buf[at:at + len(MAGIC)]) != MAGIC:
        raise BundleError("no __CLANG_OFFLOAD_BUNDLE__ magic")
    pos = at + len(MAGIC)
    count = _u64(buf, pos, end)
    pos += 8
    if not 1 <= count <= MAX_ENTRIES:
        raise BundleError(f"implausible entry count {count}")
    entries = []
    extent = pos - at
    for _ in range(count):
        offset, size, id_len = _u64(buf, pos, end), _u64(buf, pos + 8, end), _u64(buf, pos + 16, end)
        pos += 24
        if not 1 <= id_len <= MAX_ID or pos + id_len > end:
            raise BundleError(f"implausible entry id length {id_len}")
        raw = bytes(buf[pos:pos + id_len])
        if len(raw) != id_len:
            raise BundleError("truncated header", short=True)
        pos += id_len
        try:
            ident = raw.decode("ascii")
        except UnicodeDecodeError:
            raise BundleError(f"entry id is not text: {raw[:40]!r}") from None
        if not ident.isprintable() or "-" not in ident:
            raise BundleError(f"entry id {ident[:60]!r} is not a bundle id")
        if size and at + offset + size > end:
            raise BundleError(f"entry {ident} ({size} bytes at +{offset}) runs past the end of the data", short=True)
        entries.append(BundleEntry(ident, offset, size))
        extent = max(extent, offset + size)
    extent = max(extent, pos - at)
    return Bundle(at, extent, tuple(entries))


def parse_compressed(buf: Buf, at: int = 0, limit: int | None = None) -> Bundle:
    """Read a CCOB-wrapped bundle: decompress in chunks, keep only its header."""
    end = len(buf) if limit is None else limit
    if bytes(buf[at:at + 4]) != CCOB_MAGIC:
        raise BundleError("no CCOB magic")
    version, method = _u16(buf, at + 4, end), _u16(buf, at + 6, end)
    if method not in METHODS:
        raise BundleError(f"unknown compression method {method} (known: 0 zlib, 1 zstd)")
    if version == 1:
        total, raw_size, header = None, _u32(buf, at + 8, end), 20
    elif version == 2:
        total, raw_size, header = _u32(buf, at + 8, end), _u32(buf, at + 12, end), 24
    elif version == 3:
        total, raw_size, header = _u64(buf, at + 8, end), _u64(buf, at + 16, end), 32
    else:
        raise BundleError(f"unknown CCOB version {version} (known: 1, 2, 3)")
    if total is not None and (total < header or at + total > end):
        raise BundleError(f"CCOB v{version} says {total} bytes, only {end - at} are there")
    data_end = end if total is None else at + total
    # v1 says nothing of its compressed length: the stream must be read to its end to know the extent.
    whole = deep_check.get() or total is None
    head, produced, consumed = _decompress_head(METHODS[method], memoryview(buf)[at + header:data_end], raw_size,
                                                whole, length_known=total is not None)
    if whole and produced != raw_size:
        raise BundleError(f"CCOB {METHODS[method]} data decompresses to {produced} bytes, header says {raw_size}")
    # Only the front of a bundle is decompressed (and kept); its header is there, and entry bounds are
    # checked against the decompressed size the CCOB header gives.
    inner = parse_uncompressed(head, 0, raw_size)
    size = total if total is not None else header + consumed
    return Bundle(at, size, inner.entries, METHODS[method], version)


def _decompress_head(method: str, data: memoryview, raw_size: int, whole: bool, *,
                     length_known: bool = True) -> tuple[bytes, int, int]:
    """Stream through compressed data with output read CHUNK bytes at a time (memory stays bounded
    however well the data compresses: one zstd call could otherwise return hundreds of MB).

    Returns the first bytes (where the bundle header is), the decompressed size, and how many
    compressed bytes the stream used. Unless `whole`, it stops as soon as the header parses."""
    keep = bytearray()
    produced = 0
    try:
        if method == "zstd":
            consumed = len(data) if length_known else _zstd_frame_size(data)  # CCOB v1 does not say
            reader = zstandard.ZstdDecompressor().stream_reader(data[:consumed], read_size=ZSTD_FEED,
                                                                read_across_frames=False)
            while True:
                out = reader.read(CHUNK)
                if not out:
                    break
                produced += len(out)
                if len(keep) < KEEP:
                    keep += out[: KEEP - len(keep)]
                    if not whole and _header_complete(bytes(keep), raw_size):
                        return bytes(keep), produced, 0
            return bytes(keep), produced, consumed
        d = zlib.decompressobj()
        fed = 0
        while not d.eof:
            chunk: bytes | memoryview
            if d.unconsumed_tail:
                chunk = d.unconsumed_tail
            elif fed < len(data):
                chunk = data[fed:fed + CHUNK]
                fed += len(chunk)
            else:
                break
            out = d.decompress(chunk, CHUNK)
            produced += len(out)
            if len(keep) < KEEP:
                keep += out[: KEEP - len(keep)]
                if not whole and _header_complete(bytes(keep), raw_size):
                    return bytes(keep), produced, fed
        if not d.eof:
            raise BundleError("zlib data is truncated")
        return bytes(keep), produced, fed - len(d.unused_data)
    except (zlib.error, zstandard.ZstdError) as exc:
        raise BundleError(f"{method} data does not decompress: {exc}") from None


def _zstd_frame_size(data: memoryview) -> int:
    """How many bytes the zstd frame at the start of `data` takes (CCOB v1 does not record it). Fed a
    little at a time, so what each call returns stays small however well the data compresses."""
    d: Any = zstandard.ZstdDecompressor().decompressobj()
    fed = 0
    while not d.eof and fed < len(data):
        piece = bytes(data[fed:fed + 256])
        d.decompress(piece)
        fed += len(piece)
    if not d.eof:
        raise BundleError("zstd data is truncated")
    return fed - len(d.unused_data)


def _header_complete(front: bytes, raw_size: int) -> bool:
    if len(front) < len(MAGIC) + 8:
        return False
    try:
        parse_uncompressed(front, 0, raw_size)
    except BundleError as exc:
        return not exc.short
    return True


def find_bundles(buf: Buf, start: int = 0, end: int | None = None, *, strict: bool = True, section: str = ""
                 ) -> tuple[list[Bundle], list[Finding]]:
    """Every bundle in buf[start:end]. With strict, a magic that does not parse is reported (as in
    `section`, when one is named); without, it is skipped (outside .hip_fatbin the magic may be an
    ordinary string)."""
    end = len(buf) if end is None else end
    found: list[Bundle] = []
    problems: list[Finding] = []
    for at, magic in _magics(buf, start, end):
        if found and at < found[-1].offset + found[-1].size:
            continue
        try:
            bundle = (parse_uncompressed if magic == MAGIC else parse_compressed)(buf, at, end)
        except BundleError as exc:
            if strict:
                problems.append(Finding("unreadable_bundle", {"section": section, "offset": at, "reason": str(exc)}))
            continue
        found.append(bundle)
    return found, problems


def _magics(buf: Buf, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    hits = []
    for magic in (MAGIC, CCOB_MAGIC):
        pos = buf.find(magic, start, end)
        while pos != -1:
            hits.append((pos, magic))
            pos = buf.find(magic, pos + 1, end)
    yield from sorted(hits)


def covers(targets: list[TargetId], wanted: TargetId) -> tuple[bool, str]:
    """Does some code object run on every GPU mode `wanted` allows? Returns (ok, why)."""
    exact = [t for t in targets if t.processor == wanted.processor]
    generic = [t for t in targets if wanted.processor in GENERIC_MEMBERS.get(t.processor, ())]
    for pool, via in ((exact, ""), (exact + generic, " (partly through a generic ISA)")):
        if not pool:
            continue
        missing = _uncovered_mode(pool, wanted)
        if missing is None:
            return True, ", ".join(sorted({str(t) for t in pool})) + via
    if not exact and not generic:
        return False, f"no code object for {wanted}"
    pool = exact + generic
    missing = _uncovered_mode(pool, wanted)
    have = ", ".join(sorted({str(t) for t in pool}))
    return False, (f"no code object for {wanted} running with {missing} (present: {have}; an id without "
                   "features serves every mode)")


def _uncovered_mode(pool: list[TargetId], wanted: TargetId) -> str | None:
    pinned = dict(wanted.features)
    free = sorted({name for t in pool for name, _ in t.features} - set(pinned))
    for n in range(1 << len(free)):
        mode = {**pinned, **{name: bool(n >> i & 1) for i, name in enumerate(free)}}
        if not any(all(mode.get(name, on) == on for name, on in t.features) for t in pool):
            return ":".join(f"{k}{'+' if v else '-'}" for k, v in sorted(mode.items()))
    return None


def _u64(buf: Buf, pos: int, end: int) -> int:
    return _unpack("<Q", buf, pos, end)


def _u32(buf: Buf, pos: int, end: int) -> int:
    return _unpack("<I", buf, pos, end)


def _u16(buf: Buf, pos: int, end: int) -> int:
    return _unpack("<H", buf, pos, end)


def _unpack(fmt: str, buf: Buf, pos: int, end: int) -> int:
    n = struct.calcsize(fmt)
    data = bytes(buf[pos:pos + n])
    if pos + n > end or len(data) != n:
        raise BundleError("truncated header", short=True)
    value: int = struct.unpack(fmt, data)[0]
    return value
