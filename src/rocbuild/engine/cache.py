"""The content-addressed build cache: verified wheels filed under the hash of every build input.

The key is the build identity's hash (identity.py): the recipe as rendered
at fixed locations, patch file contents, the resolved source commit (or the
contents of a source folder), the toolchain down to its compiler binaries,
the target python (and its torch, for recipes built against torch), the
environment that reaches the steps, archs and options. Anything that only
says *where* or *how fast* a build runs (the work folder, the job count,
ccache) is not in it, so the same inputs give the same key on another machine
of the same kind, e.g. a CI runner restoring the cache.

Layout: CACHE/builds/KEY/entry.json plus the wheels. An entry appears whole
(written to a temporary folder, then renamed) or not at all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocbuild.fsutil import file_sha256


@dataclass(frozen=True)
class CachedWheel:
    path: Path
    sha256: str
    provenance: dict[str, Any]


@dataclass(frozen=True)
class CacheEntry:
    key: str
    folder: Path
    data: dict[str, Any]

    @property
    def wheels(self) -> list[CachedWheel]:
        return [CachedWheel(self.folder / w["name"], w["sha256"], w["provenance"]) for w in self.data["wheels"]]

    @property
    def last_used(self) -> float:
        try:
            return (self.folder / "entry.json").stat().st_mtime
        except OSError:
            return 0.0

    def size(self) -> int:
        return sum(f.stat().st_size for f in self.folder.iterdir() if f.is_file())

    def to_json(self) -> dict[str, Any]:
        d = self.data
        return {"key": self.key, "recipe": d["recipe"], "version": d["version"], "archs": d["archs"],
                "rocm": d["rocm"], "python": d["python"], "created": d["created"],
                "last_used": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.last_used)),
                "wheels": [w["name"] for w in d["wheels"]], "size": self.size(), "path": str(self.folder)}


class BuildCache:
    def __init__(self, root: Path):
        self.root = root  # CACHE/builds

    def folder(self, key: str) -> Path:
        return self.root / key

    def lookup(self, key: str) -> CacheEntry | None:
        """The entry for `key` when it is whole: every wheel present with the checksum it was stored with.
        Anything else (a missing, truncated or hand-edited entry) is no entry: the build runs."""
        folder = self.folder(key)
        entry = read_entry(key, folder)
        if entry is None:
            return None
        for wheel in entry.wheels:
            if not wheel.path.is_file() or wheel.path.is_symlink() or file_sha256(wheel.path) != wheel.sha256:
                return None
        os.utime(folder / "entry.json")  # last used, for `cache prune --older-than`
        return entry

    def store(self, key: str, wheels: dict[Path, dict[str, Any]], about: dict[str, Any], inputs: dict[str, Any]) -> CacheEntry:
        """File verified wheels (path -> provenance) under `key`; an existing whole entry is kept."""
        existing = self.lookup(key)
        if existing is not None:
            return existing
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-{key[:16]}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        records = []
        for wheel, provenance in wheels.items():
            shutil.copyfile(wheel, tmp / wheel.name)
            records.append({"name": wheel.name, "sha256": file_sha256(wheel), "provenance": provenance})
        data = {**about, "key": key, "created": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
                "wheels": records, "inputs": inputs}
        (tmp / "entry.json").write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
        folder = self.folder(key)
        shutil.rmtree(folder, ignore_errors=True)  # a broken entry (lookup said no)
        try:
            os.replace(tmp, folder)
        except OSError:  # another build stored the same key meanwhile: keep the whole one there
            shutil.rmtree(tmp, ignore_errors=True)
            existing = self.lookup(key)
            if existing is None:
                raise
            return existing
        return CacheEntry(key, folder, data)

    def entries(self) -> list[CacheEntry]:
        return self._scan()[0]

    def _scan(self) -> tuple[list[CacheEntry], list[Path]]:
        """The whole entries, and the entry folders that are not (an interrupted or damaged store)."""
        whole: list[CacheEntry] = []
        broken: list[Path] = []
        if not self.root.is_dir():
            return whole, broken
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            entry = read_entry(folder.name, folder)
            if entry is None:
                broken.append(folder)
            else:
                whole.append(entry)
        return whole, broken

    def prune(self, older_than_days: float | None) -> list[tuple[CacheEntry, int]]:
        """Remove entries not used for that many days (all of them without a limit); (entry, bytes freed)."""
        now = time.time()
        cutoff = None if older_than_days is None else now - older_than_days * 86400
        removed = []
        whole, broken = self._scan()
        for entry in whole:
            if cutoff is None or entry.last_used < cutoff:
                size = entry.size()
                shutil.rmtree(entry.folder, ignore_errors=True)
                removed.append((entry, size))
        for folder in broken:  # never used again: lookup ignores them, store replaces them
            shutil.rmtree(folder, ignore_errors=True)
        if self.root.is_dir():  # leftovers of an interrupted store; a store in progress is younger
            for stray in self.root.glob(".tmp-*"):
                if stray.stat().st_mtime < now - 3600:
                    shutil.rmtree(stray, ignore_errors=True)
        return removed


WHEEL_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+!-]*\.whl$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
ABOUT_KEYS = ("recipe", "version", "archs", "rocm", "python", "created")


def read_entry(key: str, folder: Path) -> CacheEntry | None:
    """The entry in `folder` when entry.json has the shape `store` writes, else None. Wheel names are
    plain file names, so no member of an entry can point outside its folder."""
    try:
        data = json.loads((folder / "entry.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("wheels"), list) or not data["wheels"]:
        return None
    if any(k not in data for k in ABOUT_KEYS) or not isinstance(data["created"], str):
        return None
    if not isinstance(data["archs"], list) or not all(isinstance(a, str) for a in data["archs"]):
        return None
    for w in data["wheels"]:
        if not (isinstance(w, dict) and isinstance(w.get("name"), str) and WHEEL_NAME_RE.match(w["name"])
                and isinstance(w.get("sha256"), str) and SHA256_RE.match(w["sha256"])
                and isinstance(w.get("provenance"), dict)):
            return None
    return CacheEntry(key, folder, data)
