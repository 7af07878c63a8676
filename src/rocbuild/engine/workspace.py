"""The work folder of one build: its lock, the stamps of finished phases, and the logs.

rocbuild empties and rewrites its work folder, so it only ever works in a
folder it made itself: one that carries its marker file (written when the
folder was created, or when an empty folder was taken over). Any other
non-empty folder given as --work is refused, never cleaned.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rocbuild import __version__
from rocbuild.errors import UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.paths import WorkDirs, cache_root

MARKER = ".rocbuild-work"
LOCK = ".lock"


class Workspace:
    def __init__(self, dirs: WorkDirs):
        self.dirs = dirs

    @contextmanager
    def locked(self, clean: bool, say: Callable[[str], None]) -> Iterator[int]:
        """Hold the folder's lock (yields its file descriptor, which step processes inherit); --clean
        empties the folder only once the lock is held, and keeps the lock file and the marker."""
        root = self.dirs.root
        claim(root)
        try:
            fh = open(root / LOCK, "a+")
        except OSError as exc:
            raise UsageError(f"--work {root}: cannot write there ({exc.strerror})") from None
        with fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip()
                raise UsageError(
                    f"another rocbuild is building in {root}" + (f" (process {holder})" if holder else ""),
                    hint="wait for it, or give this build its own --work DIR; a step of a rocbuild that was "
                         "killed holds the folder until that step ends") from None
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            if clean:
                say(f"--clean: emptying {root}")
                for child in root.iterdir():
                    if child.name in (LOCK, MARKER):
                        continue
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
            yield fh.fileno()

    def reset_tree(self) -> None:
        """Everything made from an earlier tree goes: sources, build folders (CMake caches), wheels, stamps."""
        d = self.dirs
        for folder in (d.src, d.sources, d.build, d.dist, d.stamps, d.final, d.verify):
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

    def finish(self, name: str, fp: str, extra: dict[str, Any] | None = None) -> str:
        """Stamp a phase that really ran with its inputs' fingerprint, and return what the next phase
        chains from: new every time, so a phase that ran again (its output was gone, its stamp
        damaged) makes every later one run again too."""
        chain = fingerprint(fp, os.urandom(16).hex())
        self.dirs.stamps.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self.dirs.stamps / f"{name}.json",
                              json.dumps({"fingerprint": fp, "chain": chain, **(extra or {})}))
        return chain

    def drop_stamp(self, name: str) -> None:
        (self.dirs.stamps / f"{name}.json").unlink(missing_ok=True)


def fingerprint(previous: str, identity: object) -> str:
    return hashlib.sha256((previous + "\n" + json.dumps(identity, sort_keys=True, default=str)).encode()).hexdigest()


def chain_of(stamp: dict[str, Any] | None, fp: str) -> str | None:
    """What a finished phase's stamp says the next one chains from, when it was made from inputs `fp`."""
    if stamp is None or stamp.get("fingerprint") != fp or not isinstance(stamp.get("chain"), str):
        return None
    return str(stamp["chain"])


def claim(root: Path) -> None:
    """Make sure `root` is a work folder of rocbuild's: create it (with the marker), take over an
    empty folder, or accept one that has the marker; refuse anything else (exit 2)."""
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise UsageError(f"--work {root} is not a folder", hint="give a new or empty folder, or leave --work out")
    if root.is_dir():
        if (root / MARKER).is_file():
            return
        own_area = cache_root() / "work"
        if any(root.iterdir()) and root.parent.resolve() != own_area.resolve():
            raise UsageError(
                f"--work {root} is a folder rocbuild did not create, and it is not empty",
                hint="rocbuild empties and rewrites its work folder, so it works only in a new or empty folder "
                     f"(or one it made before, which holds {MARKER}); give another --work DIR, or leave it out")
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / MARKER).write_text(json.dumps({"rocbuild": __version__, "made_for": "rocbuild work folder"}) + "\n")
    except OSError as exc:
        raise UsageError(f"--work {root}: cannot create or write it ({exc.strerror})",
                         hint="give a folder you can write, or leave --work out") from None
