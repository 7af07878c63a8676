"""RUNPATHs made relative (recipe `runpath: relative`): a library built in the work folder often
carries that folder in its RUNPATH (CMake's build or install RPATH), which exists on the build
machine only. Each such entry becomes $ORIGIN-relative: the folder, inside the wheel, that holds the
libraries it names; entries elsewhere (a ROCm prefix) stay. The string is rewritten in place in
.dynstr (the new one is never longer: `$ORIGIN...` replaces an absolute work path), so the file's
layout does not change and no tool needs to run."""

from __future__ import annotations

import io
import os
import posixpath
from typing import Any

from rocbuild.errors import StepFailed


def relative_runpath(data: bytes, member: str, work: str, members: list[str]) -> bytes:
    """`data`: the ELF file at `member` in the wheel; `work`: the build's work folder; `members`: every
    file in the wheel. Returns the file with its work-folder RUNPATH/RPATH entries made relative."""
    # pyelftools only when a wheel has an ELF file: a tree build never loads it.
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(data))
        dynamic = next((s for s in elf.iter_sections() if isinstance(s, DynamicSection)), None)
        if dynamic is None:
            return data
        # pyelftools sets `needed`, `rpath`, `runpath` on those tags only (untyped)
        tags: list[Any] = list(dynamic.iter_tags())
        dynstr = elf.get_section(dynamic["sh_link"])
    except ELFError:
        return data
    needed = [t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"]
    out = bytearray(data)
    for tag in tags:
        if tag.entry.d_tag not in ("DT_RUNPATH", "DT_RPATH"):
            continue
        old = tag.runpath if tag.entry.d_tag == "DT_RUNPATH" else tag.rpath
        new = ":".join(_entries(old.split(":"), member, work, members, needed))
        if new == old:
            continue
        if len(new.encode()) > len(old.encode()):  # cannot happen for $ORIGIN paths, said if it does
            raise StepFailed(f"{member}: its RUNPATH {old!r} cannot be rewritten as {new!r} in place")
        at = dynstr["sh_offset"] + tag.entry.d_val
        out[at:at + len(old.encode())] = new.encode().ljust(len(old.encode()), b"\0")
    return bytes(out)


def _entries(entries: list[str], member: str, work: str, members: list[str], needed: list[str]) -> list[str]:
    here = posixpath.dirname(member)
    kept: list[str] = []
    for entry in entries:
        if not (entry == work or entry.startswith(work.rstrip("/") + "/")):
            kept.append(entry)
            continue
        # Where, in the wheel, the libraries this file needs are: each such folder, from $ORIGIN.
        for lib in needed:
            for found in members:
                if posixpath.basename(found) == lib:
                    rel = posixpath.relpath(posixpath.dirname(found) or ".", here or ".")
                    value = "$ORIGIN" if rel == "." else f"$ORIGIN/{rel}"
                    if value not in kept:
                        kept.append(value)
    return kept


def is_elf_name(name: str) -> bool:
    base = os.path.basename(name)
    return base.endswith(".so") or ".so." in base
