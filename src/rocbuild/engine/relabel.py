"""Rewrite a built wheel (PEP 427): local version label, provenance file, RECORD recomputed.

The .dist-info and .data folders are renamed with the new version, METADATA's
Version header follows (and, for a wheel built against torch, a Requires-Dist
pinning torch's release series: its C++ ABI changes from one to the next),
signatures of the old RECORD are dropped (they no longer match), and members
are streamed so a large library is never held in memory; the rewritten wheel
is written atomically (fsutil).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from rocbuild.engine.runpath import is_elf_name, relative_runpath
from rocbuild.errors import StepFailed
from rocbuild.fsutil import CHUNK, write_atomically
from rocbuild.verify.provenance import PROVENANCE
from rocbuild.verify.rules import Series, release_series


def relabel(version: str, label: str) -> str:
    """0.1.0 + rocm6.1 -> 0.1.0+rocm6.1; an existing local part is kept in front (1.0+g1234.rocm6.1)."""
    v = Version(version)
    if not label:
        return str(v)
    if v.local and (v.local == label.lower() or v.local.endswith("." + label.lower())):
        return str(v)
    local = f"{v.local}.{label}" if v.local else label
    return str(Version(f"{v.public}+{local}"))


def plain_platform(tags: str) -> str:
    """A platform tag a build backend claimed by itself (rotary-emb's setup.py sets plat_name to
    manylinux2014_x86_64) as the plain linux_ARCH tag: no auditwheel has checked the wheel against that
    policy, and one built in a root needs that root's glibc. `rocbuild repair` makes a manylinux wheel."""
    plain = [re.sub(r"^(?:many|musl)linux(?:1|2010|2014|_\d+_\d+)_", "linux_", t) for t in tags.split(".")]
    return ".".join(dict.fromkeys(plain))


def record_hash(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def torch_series(version: str | None) -> Series | None:
    """The release series of the torch a wheel was built against (2.14.1+rocm7.2.buildonly -> (2, 14))."""
    try:
        release = Version(version or "").release
    except InvalidVersion:
        return None
    return (release[0], release[1] if len(release) > 1 else 0)


def rewrite_wheel(src: Path, dest_dir: Path, label: str, provenance: dict[str, Any],
                  relative_runpath_under: str | None = None, *, torch: str | None = None) -> Path:
    """`relative_runpath_under`: the work folder, when the recipe asks for `runpath: relative`;
    `torch`: the version of the torch it was built against, for recipes built against torch."""
    try:
        parse_wheel_filename(src.name)
    except InvalidWheelFilename as exc:
        raise StepFailed(f"the build produced a wheel with an invalid name: {src.name} ({exc})") from None
    dist, old_version, *rest = src.name[: -len(".whl")].split("-")
    new_version = relabel(old_version.replace("_", "-"), label)
    new_stem = f"{dist}-{new_version}"
    rest[-1] = plain_platform(rest[-1])
    dest = dest_dir / f"{new_stem}-{'-'.join(rest)}.whl"
    dest_dir.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(src) as zin:
            old_info = _dist_info(zin, src)
            write_atomically(dest, lambda fh: _write_relabelled(zin, fh, old_info, new_stem, new_version, provenance,
                                                                relative_runpath_under, torch_series(torch)))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, ValueError) as exc:
        raise StepFailed(f"the build produced a damaged wheel {src}: {exc}",
                         hint="the wheel step's build backend wrote a file that is not a whole wheel (zip with a "
                              ".dist-info/WHEEL); see its log") from None
    return dest


def _write_relabelled(zin: zipfile.ZipFile, fh: BinaryIO, old_info: str, new_stem: str, new_version: str,
                      provenance: dict[str, Any], relative_runpath_under: str | None = None,
                      torch: Series | None = None) -> None:
    """Every member under its new name, METADATA's version changed (and torch pinned to `torch`'s series),
    the provenance file, a fresh RECORD."""
    old_stem = old_info[: -len(".dist-info")]
    new_info = new_stem + ".dist-info"
    renames = {old_info + "/": new_info + "/", old_stem + ".data/": new_stem + ".data/"}
    skip = {f"{old_info}/RECORD", f"{old_info}/RECORD.jws", f"{old_info}/RECORD.p7s", f"{old_info}/{PROVENANCE}"}
    stamp = zipfile.ZipInfo(date_time=zin.getinfo(f"{old_info}/WHEEL").date_time)
    records = []
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.is_dir() or info.filename in skip:
                continue
            name = _renamed(info.filename, renames)
            if name == f"{new_info}/METADATA":
                records.append(_write_bytes(zout, name, _metadata(zin.read(info), new_version, torch), info))
            elif name == f"{new_info}/WHEEL":
                records.append(_write_bytes(zout, name, _wheel_tags(zin.read(info)), info))
            elif relative_runpath_under is not None and is_elf_name(name):
                data = relative_runpath(zin.read(info), name, relative_runpath_under, zin.namelist())
                records.append(_write_bytes(zout, name, data, info))
            else:
                records.append(_copy(zin, info, zout, name))
        body = (json.dumps(provenance, indent=2, sort_keys=True) + "\n").encode()
        records.append(_write_bytes(zout, f"{new_info}/{PROVENANCE}", body, stamp))
        record_name = f"{new_info}/RECORD"
        lines = [f"{n},{h},{s}" for n, h, s in records] + [f"{record_name},,"]
        _write_bytes(zout, record_name, ("\n".join(lines) + "\n").encode(), stamp)


def _dist_info(zf: zipfile.ZipFile, src: Path) -> str:
    found = [n.split("/")[0] for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/WHEEL")]
    if len(found) != 1:
        raise StepFailed(f"{src.name}: expected one top-level .dist-info with a WHEEL file, found {len(found)}")
    return found[0]


def _renamed(name: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        if name.startswith(old):
            return new + name[len(old):]
    return name


def _metadata(metadata: bytes, version: str, torch: Series | None) -> bytes:
    lines = metadata.decode("utf-8").split("\n")
    # headers end at the first blank line; the body may say anything
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    fields = [f"Version: {version}" if f.lower().startswith("version:") else f for f in _fields(lines[:end])]
    if torch is not None:
        fields = _pin_torch(fields, torch)
    return "\n".join(fields + lines[end:]).encode("utf-8")


def _wheel_tags(wheel: bytes) -> bytes:
    """WHEEL's Tag lines with plain platform tags (plain_platform), each once."""
    lines = wheel.decode("utf-8").split("\n")
    out: list[str] = []
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip().lower() == "tag" and value.strip().count("-") == 2:
            py, abi, plat = value.strip().split("-")
            line = f"Tag: {py}-{abi}-{plain_platform(plat)}"
            if line in out:
                continue
        out.append(line)
    return "\n".join(out).encode("utf-8")


def _fields(lines: list[str]) -> list[str]:
    """Header lines joined with their continuation lines (folded: they start with white space)."""
    out: list[str] = []
    for line in lines:
        if line[:1] in (" ", "\t") and out:
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def _pin_torch(fields: list[str], series: Series) -> list[str]:
    """The project's unconditional torch requirements become one, `torch==X.Y.*` of the series it was built
    against (in place of the first; its extras kept), unless one already confines torch to that series
    (==2.14.1, ~=2.14.1, >=2.14,<2.15: kept as written). Requirements behind a marker stay: pip honours
    every requirement of a name at once, so the pin bounds them too."""
    torch: dict[int, Requirement] = {}
    for i, f in enumerate(fields):
        name, _, value = f.partition(":")
        if name.strip().lower() == "requires-dist":
            try:
                req = Requirement(" ".join(value.split()))
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) == "torch" and req.marker is None:
                torch[i] = req
    if any(release_series(r.specifier) == series for r in torch.values()):
        return fields
    pin = next(iter(torch.values()), None) or Requirement("torch")
    pin.specifier = SpecifierSet(f"=={series[0]}.{series[1]}.*")
    if torch:
        first = min(torch)
        return [f"Requires-Dist: {pin}" if i == first else f for i, f in enumerate(fields)
                if i == first or i not in torch]
    requires = [i for i, f in enumerate(fields) if f.lower().startswith("requires-dist:")]
    at = requires[-1] + 1 if requires else len(fields)
    return [*fields[:at], f"Requires-Dist: {pin}", *fields[at:]]


def _new_info(name: str, like: zipfile.ZipInfo) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=like.date_time)
    info.external_attr = like.external_attr or (0o644 << 16)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _write_bytes(zout: zipfile.ZipFile, name: str, data: bytes, like: zipfile.ZipInfo) -> tuple[str, str, int]:
    zout.writestr(_new_info(name, like), data)
    return name, record_hash(hashlib.sha256(data).digest()), len(data)


def _copy(zin: zipfile.ZipFile, info: zipfile.ZipInfo, zout: zipfile.ZipFile, name: str) -> tuple[str, str, int]:
    h, size = hashlib.sha256(), 0
    with zin.open(info) as src, zout.open(_new_info(name, info), "w", force_zip64=True) as dst:
        while chunk := src.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    return name, record_hash(h.digest()), size
