"""One file of a source, read where the source already is on this machine, before it is fetched or
unpacked: the folder of `--source-dir`, the sdist's archive in the cache (a member read, nothing
extracted, no setup.py run), or the git mirror at the commit. What `plan` reads of a source it has not
built yet (an arch allow-list the package keeps itself)."""

from __future__ import annotations

import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rocbuild.compat import assert_never
from rocbuild.source.spec import DirSource, GitSource, SdistSource, SourceSpec

# A source file read to plan by is small (a CMakeLists.txt); a larger member is not read into memory.
MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class Peeked:
    """`text` of the file, None when the source has no such file; `where`: what it was read from."""

    text: str | None
    where: str


def peek(source: SourceSpec, path: str, rev: str | None = None) -> Peeked | None:
    """The file `path` (relative to the tree's top) of `source`, or None when the source is not on this
    machine yet. `rev`: the commit a git source resolved to (else its pin or ref, as the mirror has it)."""
    match source:
        case DirSource():
            return _from_file(Path(source.directory) / path, f"the source folder {source.directory}")
        case SdistSource():
            from rocbuild.source.sdist import archive_of

            archive = archive_of(source)
            return None if archive is None else _from_archive(archive, path, f"the sdist {archive.name}")
        case GitSource():
            return _from_mirror(source, path, rev or source.commit or source.ref or "HEAD")
        case _:
            assert_never(source)


def _from_file(file: Path, where: str) -> Peeked:
    if not file.is_file() or file.stat().st_size > MAX_BYTES:
        return Peeked(None, where)
    return Peeked(file.read_text(errors="replace"), where)


def _from_archive(archive: Path, path: str, where: str) -> Peeked:
    """The member under the archive's one top folder (as unpack_sdist makes it the tree's top)."""
    wanted = PurePosixPath(path)
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if _below_top(info.filename) == wanted and info.file_size <= MAX_BYTES:
                    return Peeked(zf.read(info).decode(errors="replace"), where)
        return Peeked(None, where)
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and _below_top(member.name) == wanted and member.size <= MAX_BYTES:
                fh = tar.extractfile(member)
                return Peeked(fh.read().decode(errors="replace") if fh else None, where)
    return Peeked(None, where)


def _below_top(name: str) -> PurePosixPath:
    parts = PurePosixPath(name).parts
    return PurePosixPath(*parts[1:]) if len(parts) > 1 else PurePosixPath(".")


def _from_mirror(source: GitSource, path: str, rev: str) -> Peeked | None:
    """The blob at `rev:path` in the mirror; None when there is no mirror yet or it lacks `rev`."""
    mirror = Path(source.mirror)
    if not (mirror / "HEAD").is_file():
        return None
    import git  # GitPython: only for git sources

    try:
        commit = git.Repo(mirror).commit(rev)
    except (git.BadName, ValueError, git.GitCommandError):
        return None  # a ref the mirror does not have yet: read once it is fetched
    where = f"the git mirror of {source.url} at {commit.hexsha[:12]}"
    try:
        blob = commit.tree / path
    except KeyError:
        return Peeked(None, where)
    if blob.type != "blob" or blob.size > MAX_BYTES:
        return Peeked(None, where)
    return Peeked(blob.data_stream.read().decode(errors="replace"), where)
