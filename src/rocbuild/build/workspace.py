"""The work folder of one build: its lock, the stamps of finished phases, and the logs."""

from __future__ import annotations

import fcntl
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rocbuild.errors import UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.paths import WorkDirs


class Workspace:
    def __init__(self, dirs: WorkDirs):
        self.dirs = dirs

    @contextmanager
    def locked(self, clean: bool, say: Callable[[str], None]) -> Iterator[None]:
        root = self.dirs.root
        if clean and root.exists():
            say(f"--clean: removing {root}")
            shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
        with open(root / ".lock", "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UsageError(f"another rocbuild is building in {root}",
                                 hint="wait for it, or give this build its own --work DIR") from None
            yield

    def reset_tree(self) -> None:
        """Everything made from an earlier tree goes: sources, build folders (CMake caches), wheels, stamps."""
        d = self.dirs
        for folder in (d.src, d.build, d.dist, d.stamps, d.final, d.verify):
            shutil.rmtree(folder, ignore_errors=True)

    def log_path(self, index: int, name: str, *, fresh: bool = True) -> Path:
        self.dirs.logs.mkdir(parents=True, exist_ok=True)
        log = self.dirs.logs / f"{index:02d}-{name}.log"
        if fresh:
            log.write_text("")
        return log

    def stamp(self, name: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.dirs.stamps / f"{name}.json").read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def stamp_matches(self, name: str, fingerprint: str) -> bool:
        data = self.stamp(name)
        return data is not None and data.get("fingerprint") == fingerprint

    def write_stamp(self, name: str, fingerprint: str, extra: dict[str, Any] | None = None) -> None:
        self.dirs.stamps.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self.dirs.stamps / f"{name}.json", json.dumps({"fingerprint": fingerprint,
                                                                              **(extra or {})}))

    def drop_stamp(self, name: str) -> None:
        (self.dirs.stamps / f"{name}.json").unlink(missing_ok=True)
