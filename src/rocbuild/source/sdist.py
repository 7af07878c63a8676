"""An sdist source: downloaded once from the index pip is configured with (source/index.py: nothing is
built, no setup.py runs) into the cache, checked against the index's sha256 and the recipe's pin,
unpacked into the work folder without letting any member out of it."""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name, parse_sdist_filename
from packaging.version import Version

from rocbuild.errors import StepFailed
from rocbuild.fsutil import file_sha256, within
from rocbuild.source.index import IndexFile, IndexSettings, download, index_settings, project_files
from rocbuild.source.spec import SdistSource

Log = Callable[[str], None]
ARCHIVES = ("*.tar.gz", "*.tgz", "*.zip", "*.tar.bz2", "*.tar.xz")


def archive_of(spec: SdistSource) -> Path | None:
    folder = Path(spec.download_dir)
    found = sorted(p for pattern in ARCHIVES for p in folder.glob(pattern)) if folder.is_dir() else []
    return found[0] if len(found) == 1 else None


def resolve_sdist(spec: SdistSource, log: Log, log_file: Path) -> tuple[str, bool]:
    """('NAME==VERSION sha256:HEX', downloaded now?). Downloads when the cache has no archive, from the
    index pip is configured with, building nothing; `log` says what happens."""
    archive = archive_of(spec)
    downloaded = False
    if archive is None:
        folder = Path(spec.download_dir)
        shutil.rmtree(folder, ignore_errors=True)  # a partial or ambiguous download starts over
        folder.mkdir(parents=True)
        settings = index_settings(spec.python, log)
        file = sdist_file(spec.requirement, settings, log)
        log(f"downloading the sdist {spec.requirement}: {file.url}")
        try:
            download(file, folder / file.filename, settings)
        except StepFailed:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        archive = folder / file.filename
        downloaded = True
    digest = file_sha256(archive)
    if spec.sha256 is not None and digest != spec.sha256:
        raise StepFailed(f"the sdist {spec.requirement} ({archive.name}) has sha256 {digest}, the recipe pins "
                         f"{spec.sha256}",
                         hint="the index served other bytes than the recipe was written for: check the index, "
                              "or update source.sha256 if the new archive is trusted")
    log(f"sdist {archive.name}: sha256 {digest}")
    return f"{spec.requirement} sha256:{digest}", downloaded


def fetch_sdist(spec: SdistSource, dest: Path, log: Log) -> str:
    """Download (unless cached) and unpack at `dest`, outside any build; the archive's sha256."""
    with tempfile.TemporaryDirectory(prefix="rocbuild-sdist-") as tmp:
        identity, _ = resolve_sdist(spec, log, Path(tmp) / "fetch.log")
    unpack_sdist(spec, dest)
    return identity.rsplit("sha256:", 1)[-1]


def sdist_file(requirement: str, settings: IndexSettings, log: Log) -> IndexFile:
    """The index's file for one release's sdist (NAME==VERSION): a .tar.gz before a .zip, never a yanked one."""
    name, _, version = requirement.partition("==")
    page, files = project_files(name, settings, log)
    wanted = Version(version)
    found = [f for f in files if f.sdist_version == wanted and not f.yanked
             and canonicalize_name(parse_sdist_filename(f.filename)[0]) == canonicalize_name(name)]
    if not found:
        releases = sorted({v for f in files if (v := f.sdist_version) is not None and not f.yanked})
        raise StepFailed(f"{page} lists no sdist of {requirement}",
                         hint="sdists it lists: " + (", ".join(str(v) for v in releases[-8:]) or "none")
                         + " (a project may publish only wheels; then build from its git tree)")
    return sorted(found, key=lambda f: (not f.filename.endswith(".tar.gz"), f.filename))[0]


def unpack_sdist(spec: SdistSource, dest: Path) -> None:
    """The archive's one top-level folder becomes `dest`; links, devices and paths out of it are refused."""
    archive = archive_of(spec)
    if archive is None:
        raise StepFailed(f"the sdist {spec.requirement} is no longer in {spec.download_dir}",
                         hint="run the same command again: it is downloaded again")
    staging = dest.parent / (dest.name + ".unpack")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zf:
                for name in zf.namelist():
                    if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
                        raise StepFailed(f"{archive.name}: member {name!r} leaves the archive's folder")
                zf.extractall(staging)
        else:
            if not hasattr(tarfile, "data_filter"):
                raise StepFailed("unpacking sdists safely needs Python 3.10.12, 3.11.4 or newer (tarfile filters)")
            with tarfile.open(archive) as tar:
                try:
                    tar.extractall(staging, filter="data")
                except tarfile.FilterError as exc:
                    raise StepFailed(f"{archive.name}: refused member ({exc})") from None
        tops = list(staging.iterdir())
        top = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
        if not within(top, staging):
            raise StepFailed(f"{archive.name}: its top folder leaves the archive")
        shutil.rmtree(dest, ignore_errors=True)
        top.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
