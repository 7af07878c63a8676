"""Relabelled wheels stay valid: RECORD matches, pip installs them, `wheel unpack` accepts them."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rocbuild.wheels import MANIFEST, PROVENANCE, relabel, rewrite_wheel, update_manifest


def make_wheel(folder: Path, version: str = "1.2.0") -> Path:
    """A wheel as a PEP 517 backend would write it, with a .data folder and a RECORD signature."""
    info = f"demo_pkg-{version}.dist-info"
    files = {
        "demo_pkg/__init__.py": b"VALUE = 42\n",
        "demo_pkg/lib.so": b"\x7fELF" + bytes(range(256)) * 40,
        f"demo_pkg-{version}.data/scripts/demo-tool": b"#!python\nprint('tool')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: demo-pkg\nVersion: {version}\n\nVersion: body text\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
        f"{info}/RECORD.jws": b"{}",
    }
    path = folder / f"demo_pkg-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        record = []
        for name, data in files.items():
            zf.writestr(name, data)
            record.append(f"{name},,")
        zf.writestr(f"{info}/RECORD", "\n".join(record + [f"{info}/RECORD,,"]) + "\n")
    return path


@pytest.mark.parametrize("version, label, expected", [
    ("1.0", "rocm6.1", "1.0+rocm6.1"),
    ("1.0+g1234", "rocm6.1", "1.0+g1234.rocm6.1"),
    ("1.0+rocm6.1", "rocm6.1", "1.0+rocm6.1"),
    ("2.0.dev3", "", "2.0.dev3"),
    ("0.50.1", "ROCm6.2", "0.50.1+rocm6.2"),
])
def test_relabel(version, label, expected):
    assert relabel(version, label) == expected


def test_rewrite_keeps_the_wheel_valid(tmp_path):
    src = make_wheel(tmp_path / "in")
    out = rewrite_wheel(src, tmp_path / "out", "rocm6.1", {"recipe": {"name": "demo"}})
    assert out.name == "demo_pkg-1.2.0+rocm6.1-py3-none-any.whl"
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        info = "demo_pkg-1.2.0+rocm6.1.dist-info"
        assert f"{info}/RECORD.jws" not in names  # the signature no longer matches
        assert "demo_pkg-1.2.0+rocm6.1.data/scripts/demo-tool" in names
        assert not any(n.startswith("demo_pkg-1.2.0.") for n in names)
        metadata = zf.read(f"{info}/METADATA").decode()
        assert "\nVersion: 1.2.0+rocm6.1\n" in metadata and "\nVersion: body text" in metadata
        assert json.loads(zf.read(f"{info}/{PROVENANCE}")) == {"recipe": {"name": "demo"}}
        rows = list(csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode())))
        listed = {r[0] for r in rows}
        assert listed == set(names)
        for name, digest, size in rows:
            if name.endswith("/RECORD"):
                assert digest == size == ""
                continue
            data = zf.read(name)
            expected = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (expected, len(data)), name
    # The ecosystem's own tools agree.
    subprocess.run([sys.executable, "-m", "wheel", "unpack", "-d", str(tmp_path / "unpacked"), str(out)],
                   check=True, capture_output=True)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                    "--target", str(site), str(out)], check=True, capture_output=True)
    assert (site / "demo_pkg" / "lib.so").read_bytes() == b"\x7fELF" + bytes(range(256)) * 40
    assert (site / "demo_pkg-1.2.0+rocm6.1.dist-info" / PROVENANCE).is_file()


def test_rewrite_failure_leaves_nothing(tmp_path):
    bad = tmp_path / "in" / "demo_pkg-1.0-py3-none-any.whl"
    bad.parent.mkdir()
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("demo_pkg/__init__.py", "")  # no .dist-info
    from rocbuild.errors import StepFailed
    with pytest.raises(StepFailed, match="one top-level .dist-info"):
        rewrite_wheel(bad, tmp_path / "out", "rocm6.1", {})
    assert list((tmp_path / "out").iterdir()) == []


def test_manifest_merges_and_forgets_removed_wheels(tmp_path):
    house = tmp_path / "wheelhouse"
    house.mkdir()
    (house / "a-1.0-py3-none-any.whl").write_bytes(b"a")
    (house / "b-1.0-py3-none-any.whl").write_bytes(b"b")
    update_manifest(house, {"a-1.0-py3-none-any.whl": {"sha256": "1"}})
    update_manifest(house, {"b-1.0-py3-none-any.whl": {"sha256": "2"}})
    data = json.loads((house / MANIFEST).read_text())
    assert set(data["wheels"]) == {"a-1.0-py3-none-any.whl", "b-1.0-py3-none-any.whl"}
    (house / "a-1.0-py3-none-any.whl").unlink()
    update_manifest(house, {"b-1.0-py3-none-any.whl": {"sha256": "3"}})
    data = json.loads((house / MANIFEST).read_text())
    assert data["wheels"] == {"b-1.0-py3-none-any.whl": {"sha256": "3"}}
