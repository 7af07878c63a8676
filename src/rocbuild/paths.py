"""Where rocbuild keeps things: the XDG cache (mirrors, work trees), XDG data (build roots) and per-build
folders."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from rocbuild.fsutil import json_sha256


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rocbuild"


def config_root() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rocbuild"


def data_root() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rocbuild"


def mirror_path(url: str, root: Path | None = None) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", url.rstrip("/").split("/")[-1].removesuffix(".git"))[:40] or "repo"
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return (root or cache_root()) / "mirrors" / f"{slug}-{digest}.git"


def short_hash(data: object, n: int = 10) -> str:
    return json_sha256(data)[:n]


@dataclass(frozen=True)
class WorkDirs:
    root: Path

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def sources(self) -> Path:
        """The recipe's extra sources, each in a folder of its name."""
        return self.root / "sources"

    @property
    def dist(self) -> Path:
        return self.root / "dist"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def stamps(self) -> Path:
        return self.root / "stamps"

    @property
    def verify(self) -> Path:
        return self.root / "verify"

    @property
    def final(self) -> Path:
        """Wheels after relabelling and provenance, before verify lets them out."""
        return self.root / "final"
