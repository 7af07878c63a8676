"""A rebuild with nothing changed, answered without planning: `rocbuild build` run again as make and
ninja answer an up-to-date target.

A finished build records what it read in a stamp: the command line, the folder it ran in, the
environment, rocbuild's version, and the size, modification time and inode of every file the build
depended on (the recipe and the files it extends, patch files, the lock file, a folder source's
files, the target python and its import path folders, the toolchain, the dpkg database, rocbuild's
own modules, /dev/kfd) and of the wheels it placed. The same command run again finds that stamp by
its key, stats those files, and when not one changed prints the same wheels: no recipe is loaded,
no host probed, no wheel verified again. It was verified when the stamp was written, against the
same files.

Anything changed, gone or unreadable, and the command runs in full: planning, the build cache (whose
wheels are verified again), verify. A stamp is written only for builds that name their targets
(--arch: detecting GPUs is not a file read) and whose source cannot move under the same command (a
pinned commit, an sdist pinned by sha256, a folder of at most MAX_TREE_FILES files); never for
--clean, --no-cache, --until, --ref, --dry-run or a build in a root.

Only the standard library is imported here: serving a no-op must cost less than loading rocbuild."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence

STAMP_VERSION = 1
# Set per shell or per terminal, and never read by a build.
VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES", "TERM_SESSION_ID"})
# Flags after which the command must run in full (or that a stamp is never written for).
FULL_RUN = frozenset({"--dry-run", "--clean", "--no-cache", "--until", "--ref", "--root", "--json", "-h", "--help"})
MAX_TREE_FILES = 5000  # a folder source larger than this is fingerprinted by the full run instead
Signature = list[int] | None  # [mtime_ns, size, inode], or None: the file did not exist


def wants_full_run(argv: Sequence[str]) -> bool:
    return any(a.split("=", 1)[0] in FULL_RUN for a in argv)


def stamp_path(folder: str, argv: Sequence[str], cwd: str, environ: Mapping[str, str], version: str) -> str:
    """The stamp of this exact command: its key covers all it is given, so any other command misses.
    `rocbuild RECIPE ...` is `rocbuild build RECIPE ...` (cli/app.normalised), and shares its stamp."""
    command = list(argv) if list(argv[:1]) == ["build"] else ["build", *argv]
    env = sorted((k, v) for k, v in environ.items() if k not in VOLATILE)
    key = hashlib.sha256(json.dumps([STAMP_VERSION, version, command, cwd, env]).encode()).hexdigest()
    return os.path.join(folder, key[:32] + ".json")


def signature(path: str) -> Signature:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def serve(path: str) -> int | None:
    """Print the stamped build's wheels and return 0 when nothing it read has changed; None when the
    command must run in full (no stamp, a damaged one, a change, an unreadable file)."""
    started = time.perf_counter()
    try:
        with open(path, encoding="utf-8") as fh:
            stamp = json.load(fh)
        files: dict[str, Signature] = stamp["files"]
        if stamp.get("version") != STAMP_VERSION or any(signature(p) != sig for p, sig in files.items()):
            return None
        stdout, built = str(stamp["stdout"]), str(stamp["built"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    elapsed = time.perf_counter() - started
    sys.stderr.write(f"==> up to date: none of the {len(files)} files this build read has changed since it was "
                     f"built and verified ({built}Z), nor the command or its environment ({elapsed * 1000:.0f} ms)\n")
    sys.stdout.write(stdout)
    sys.stderr.write("    nothing ran; `--clean` runs it again (its wheels then come from the build cache and are "
                     "verified again)\n")
    return 0


def write(path: str, files: Iterable[str], stdout: str) -> None:
    """The stamp of a build that just finished, signatures taken now (after its wheels were placed);
    `stdout` is what it printed there (its wheels), printed again when the stamp serves."""
    stamp = {"version": STAMP_VERSION, "built": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
             "files": {p: signature(p) for p in sorted(set(files))}, "stdout": stdout}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.part"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(stamp, fh)
    os.replace(tmp, path)


def tree_files(folder: str) -> list[str] | None:
    """Every file and folder under `folder` (a folder's own signature changes when an entry is added or
    removed), or None when there are more than MAX_TREE_FILES."""
    found = [folder]
    for dirpath, dirnames, filenames in os.walk(folder):
        found += [os.path.join(dirpath, n) for n in dirnames + filenames]
        if len(found) > MAX_TREE_FILES:
            return None
    return found
