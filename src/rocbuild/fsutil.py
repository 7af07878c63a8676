"""Files rocbuild writes and reads back: atomic writes (nothing is ever seen half-written) and hashing.

Everything that lands in a wheelhouse goes through write_atomically, and so do
rocbuild's own small files (stamps, locks, the recipe source registry).
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
from typing import BinaryIO

CHUNK = 1 << 20
PART_SUFFIX = ".part"


def stage(dest: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write what will become `dest` into a temporary `.NAME.XXXX.part` beside it and return that
    path; the caller renames it into place (os.replace). A failure leaves nothing. The file gets
    0666 less the umask (not mkstemp's 0600): wheels and manifests are for everyone to read."""
    import tempfile  # and its random: only for commands that write something

    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=PART_SUFFIX, dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_atomically(dest: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write dest through a temporary file beside it and a rename: a reader never sees a partial file."""
    tmp = stage(dest, write)
    try:
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest


def write_text_atomically(dest: Path, text: str) -> Path:
    return write_atomically(dest, lambda fh: fh.write(text.encode()))


def copier(src: Path) -> Callable[[BinaryIO], None]:
    def write(fh: BinaryIO) -> None:
        with open(src, "rb") as f:
            shutil.copyfileobj(f, fh, CHUNK)
    return write


def copy_atomically(src: Path, dest: Path) -> Path:
    return write_atomically(dest, copier(src))


def within(path: str | os.PathLike[str], folder: str | os.PathLike[str], *, follow_links: bool = False) -> bool:
    """Whether `path` is `folder` or lies below it. By the paths' text (give them normalised), or with
    `follow_links` by where both really lead."""
    if follow_links:
        path, folder = os.path.realpath(path), os.path.realpath(folder)
    p, f = Path(path), Path(folder)
    return p == f or f in p.parents


def json_sha256(data: object) -> str:
    """The sha256 of a value's canonical JSON (sorted keys; what JSON cannot hold, as str)."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def exclusive(lock: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on the file `lock` (made if missing) while the block runs; processes that
    share a folder take turns. `waiting` is called once when another process holds it first."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield
