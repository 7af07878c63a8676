"""`rocbuild index WHEELHOUSE`: a PEP 503 simple repository over a folder of wheels.

WHEELHOUSE/simple/index.html lists the projects under their normalized names;
WHEELHOUSE/simple/NAME/index.html links each wheel (relative href, with a
#sha256= fragment and data-requires-python from its METADATA). The index is
written to a temporary folder and swapped in, so pip never reads half of one.
"""

from __future__ import annotations

import html
import os
import shutil
import zipfile
from email.parser import BytesHeaderParser
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from rocbuild.errors import UsageError
from rocbuild.fsutil import file_sha256

PAGE = ('<!DOCTYPE html>\n<html>\n<head>\n<meta name="pypi:repository-version" content="1.0">\n'
        "<title>{title}</title>\n</head>\n<body>\n<h1>{title}</h1>\n{links}</body>\n</html>\n")


def build_index(wheelhouse: Path, out: Path | None = None) -> tuple[Path, dict[str, list[str]]]:
    """Write the index; returns its folder and the wheels listed under each project."""
    if not wheelhouse.is_dir():
        raise UsageError(f"{wheelhouse}: no such folder", hint="give the folder that holds the wheels")
    out = (out or wheelhouse / "simple").absolute()
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
