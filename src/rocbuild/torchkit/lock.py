"""The lock between a build-only torch and the builds compiling against it.

`rocbuild root torch` remakes a kit in place (its venv is made again with --clear), and a build whose
compiler is reading the kit's headers or linking its libraries at that moment fails ("Error compiling
objects for extension"). So a build holds the kit's lock shared for as long as it runs, and a remake
holds it exclusively: each waits for the other, and says so. The lock file sits beside the kit folder,
which a remake empties.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rocbuild.torchkit.kit import KIT_HOME


def kit_lock_path(inside: Path, home: Path = KIT_HOME) -> Path | None:
    """The lock of the kit that `inside` (its python, its torch package) belongs to; None when it is in
    no kit folder (a kit installed as a wheel into a venv is never remade in place)."""
    path = inside.absolute()  # never resolved: the kit's bin/python links to the root's python3
    for parent in path.parents:
        if parent.parent == home and parent.name.startswith("torch-") and parent.name.endswith("-build-only"):
            return parent.with_name(parent.name + ".lock")  # kit_folder's name
    return None


@contextmanager
def holding(lock: Path | None, *, exclusive: bool, waiting: str, say: Callable[[str], None]) -> Iterator[int | None]:
    """Hold `lock` (shared, or exclusive) while the block runs; yields its file descriptor, for the
    commands started meanwhile to inherit (None: no lock to hold). When another holds it the other way,
    `waiting` is said once and this waits: a build is never broken, and never refused, for it."""
    if lock is None:
        yield None
        return
    try:
        fh = open(lock, "a+")
    except OSError:  # a kit folder this user cannot write to was made by someone else, and is not remade by us
        yield None
        return
    with fh:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(fh, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            say(waiting)
            fcntl.flock(fh, mode)
        yield fh.fileno()
