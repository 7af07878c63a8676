"""`rocbuild index WHEELHOUSE`: a PEP 503 simple repository over a folder of wheels.

WHEELHOUSE/simple/index.html lists the projects under their normalized names
(with --by-rocm: WHEELHOUSE/rocmX.Y/simple, one index per ROCm release);
WHEELHOUSE/simple/NAME/index.html links each wheel (relative href, with a
#sha256= fragment and data-requires-python from its METADATA). The index is
written to a temporary folder and swapped in, so pip never reads half of one.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import zipfile
from email.parser import BytesHeaderParser
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from rocbuild.errors import UsageError
from rocbuild.fsutil import file_sha256
from rocbuild.wheelhouse.publishable import refuse_build_only

PAGE = ('<!DOCTYPE html>\n<html>\n<head>\n<meta name="pypi:repository-version" content="1.0">\n'
        "<title>{title}</title>\n</head>\n<body>\n<h1>{title}</h1>\n{links}</body>\n</html>\n")


ROCM_LABEL = re.compile(r"^rocm(\d+\.\d+)(?:\.|$)")


def build_index(wheelhouse: Path, out: Path | None = None, *,
                allow_build_only: bool = False) -> tuple[Path, dict[str, list[str]]]:
    """Write the index; returns its folder and the wheels listed under each project."""
    projects = _projects(wheelhouse, allow_build_only)
    return _write(projects, (out or wheelhouse / "simple").absolute())


def build_rocm_indexes(wheelhouse: Path, *, allow_build_only: bool = False) -> dict[str, tuple[Path, dict[str, list[str]]]]:
    """One index per ROCm release, WHEELHOUSE/rocmX.Y/simple, from each wheel's local version label
    (+rocmX.Y, +rocmX.Y.gfx1100): {release: (index folder, wheels by project)}."""
    by_release: dict[str, dict[str, list[Path]]] = {}
    unlabelled = []
    for name, wheels in _projects(wheelhouse, allow_build_only).items():
        for wheel in wheels:
            m = ROCM_LABEL.match(parse_wheel_filename(wheel.name)[1].local or "")
            if m is None:
                unlabelled.append(wheel.name)
                continue
            by_release.setdefault(m.group(1), {}).setdefault(name, []).append(wheel)
    if unlabelled:
        raise UsageError(f"{wheelhouse}: wheels without a +rocmX.Y local version label cannot be sorted by ROCm "
                         "release:", hint="\n".join("- " + w for w in unlabelled)
                         + "\nbuild them with rocbuild's default label, or index them without --by-rocm")
    return {release: _write(projects, (wheelhouse / f"rocm{release}" / "simple").absolute())
            for release, projects in sorted(by_release.items())}


def _projects(wheelhouse: Path, allow_build_only: bool) -> dict[str, list[Path]]:
    if not wheelhouse.is_dir():
        raise UsageError(f"{wheelhouse}: no such folder", hint="give the folder that holds the wheels")
    projects: dict[str, list[Path]] = {}
    bad = []
    for wheel in sorted(wheelhouse.glob("*.whl")):
        try:
            name: str = canonicalize_name(parse_wheel_filename(wheel.name)[0])
        except InvalidWheelFilename as exc:
            bad.append(f"{wheel.name}: {exc}")
            continue
        projects.setdefault(name, []).append(wheel)
    if bad:
        raise UsageError(f"{wheelhouse} holds files that are not valid wheel names:",
                         hint="\n".join("- " + b for b in bad) + "\nrename or remove them (PEP 427 names)")
    if not projects:
        raise UsageError(f"{wheelhouse} holds no wheels (*.whl)")
    refuse_build_only((w for ws in projects.values() for w in ws), "index", allowed=allow_build_only)
    return projects


def _write(projects: dict[str, list[Path]], out: Path) -> tuple[Path, dict[str, list[str]]]:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    top = "".join(f'<a href="{html.escape(n)}/">{html.escape(n)}</a><br>\n' for n in sorted(projects))
    (tmp / "index.html").write_text(PAGE.format(title="Simple index", links=top))
    for name, wheels in projects.items():
        folder = tmp / name
        folder.mkdir()
        links = "".join(_link(w, out / name) for w in wheels)
        (folder / "index.html").write_text(PAGE.format(title=f"Links for {html.escape(name)}", links=links))
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
    return out, {n: [w.name for w in ws] for n, ws in projects.items()}


def _link(wheel: Path, page_dir: Path) -> str:
    href = os.path.relpath(wheel.absolute(), page_dir)
    attrs = ""
    requires = _requires_python(wheel)
    if requires:
        attrs = f' data-requires-python="{html.escape(requires)}"'
    return (f'<a href="{html.escape(href)}#sha256={file_sha256(wheel)}"{attrs}>'
            f"{html.escape(wheel.name)}</a><br>\n")


def _requires_python(wheel: Path) -> str | None:
    try:
        with zipfile.ZipFile(wheel) as zf:
            meta = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
            if meta is None:
                return None
            headers = BytesHeaderParser().parsebytes(zf.read(meta))
    except (OSError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{wheel}: not a readable wheel ({exc})") from None
    return headers.get("Requires-Python")
