"""The content-addressed build cache: verified wheels filed under the hash of every build input.

The key covers the recipe as rendered for this host (steps, env, patches with
their file contents, options, verify entries), the resolved source commit (or
the contents of a source folder), archs, ROCm version, python (and its torch,
for recipes built against torch), the variables of the caller's environment
that reach a compiler, and rocbuild's own version.
Anything that only says *where* or *how fast* a build runs (the work folder,
the job count, ccache) is left out, so the same inputs give the same key on
another machine of the same kind, e.g. a CI runner restoring the cache.

Layout: CACHE/builds/KEY/entry.json plus the wheels. An entry appears whole
(written to a temporary folder, then renamed) or not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from rocbuild import __version__
from rocbuild.wheels import file_sha256

KEY_SCHEMA = 1
# Variables of the caller's environment that change what a compiler or build backend produces.
ENV_NAMES = frozenset({
    "CC", "CXX", "CPP", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "HIPFLAGS", "HIPCC", "NVCC",
    "PYTHONPATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "SETUPTOOLS_SCM_PRETEND_VERSION",
})
ENV_PREFIXES = ("HIP_", "HIPCC_", "ROCM_", "HSA_", "HCC_", "AMDGPU_", "PYTORCH_", "TORCH_", "CMAKE_",
                "SKBUILD_", "BNB_", "HOROVOD_", "MAMBA_", "CAUSAL_CONV1D_")
# Launchers and cache settings do not change the output.
ENV_IGNORED = frozenset({"CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER",
                         "CMAKE_HIP_COMPILER_LAUNCHER", "CMAKE_BUILD_PARALLEL_LEVEL"})


def build_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of the caller's environment that reaches a compiler and changes its output."""
    return {k: v for k, v in sorted(environ.items())
            if k not in ENV_IGNORED and (k in ENV_NAMES or k.startswith(ENV_PREFIXES))}


def cache_inputs(basis: Mapping[str, Any], source_identity: str, environ: Mapping[str, str],
                 torch: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything the key is made of, as one JSON-able mapping (kept in the entry).

    `torch`: for recipes built against the target python's torch, its version (and HIP/CUDA versions)."""
    inputs = {"schema": KEY_SCHEMA, "rocbuild": __version__, "plan": basis, "source": source_identity,
              "env": build_env(environ)}
    if torch is not None:
        inputs["torch"] = dict(torch)
    return inputs


def cache_key(inputs: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class CachedWheel:
    path: Path
    sha256: str
    provenance: dict


@dataclass(frozen=True)
class Entry:
    key: str
    folder: Path
    data: dict

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

    def to_json(self) -> dict:
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

    def lookup(self, key: str) -> Entry | None:
        """The entry for `key` when it is whole: every wheel present with the checksum it was stored with."""
        folder = self.folder(key)
        try:
            data = json.loads((folder / "entry.json").read_text())
        except (OSError, ValueError):
            return None
        entry = Entry(key, folder, data)
        for wheel in entry.wheels:
            if not wheel.path.is_file() or file_sha256(wheel.path) != wheel.sha256:
                return None
        os.utime(folder / "entry.json")  # last used, for `cache prune --older-than`
        return entry

    def store(self, key: str, wheels: dict[Path, dict], about: dict, inputs: dict) -> Entry:
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
        return Entry(key, folder, data)

    def entries(self) -> list[Entry]:
        out = []
        if not self.root.is_dir():
            return out
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            try:
                out.append(Entry(folder.name, folder, json.loads((folder / "entry.json").read_text())))
            except (OSError, ValueError, KeyError):
                continue
        return out

    def prune(self, older_than_days: float | None) -> list[tuple[Entry, int]]:
        """Remove entries not used for that many days (all of them without a limit); (entry, bytes freed)."""
        now = time.time()
        cutoff = None if older_than_days is None else now - older_than_days * 86400
        removed = []
        for entry in self.entries():
            if cutoff is None or entry.last_used < cutoff:
                size = entry.size()
                shutil.rmtree(entry.folder, ignore_errors=True)
                removed.append((entry, size))
        if self.root.is_dir():  # leftovers of an interrupted store; a store in progress is younger
            for stray in self.root.glob(".tmp-*"):
                if stray.stat().st_mtime < now - 3600:
                    shutil.rmtree(stray, ignore_errors=True)
        return removed
