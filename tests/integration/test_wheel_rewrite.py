"""Relabelled wheels stay valid: RECORD matches, pip installs them, `wheel unpack` accepts them."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rocbuild.engine.publish import MANIFEST, publish
from rocbuild.engine.relabel import relabel, rewrite_wheel
from rocbuild.verify.provenance import PROVENANCE


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
    house, built = tmp_path / "wheelhouse", tmp_path / "built"
    built.mkdir()
    for name in ("a", "b"):
        (built / f"{name}-1.0-py3-none-any.whl").write_bytes(name.encode())
    publish(house, {built / "a-1.0-py3-none-any.whl": {"n": 1}}, None, None, False)
    publish(house, {built / "b-1.0-py3-none-any.whl": {"n": 2}}, None, None, False)
    data = json.loads((house / MANIFEST).read_text())
    assert set(data["wheels"]) == {"a-1.0-py3-none-any.whl", "b-1.0-py3-none-any.whl"}
    (house / "a-1.0-py3-none-any.whl").unlink()
    publish(house, {built / "b-1.0-py3-none-any.whl": {"n": 3}}, None, None, False)
    data = json.loads((house / MANIFEST).read_text())
    assert list(data["wheels"]) == ["b-1.0-py3-none-any.whl"]
    assert data["wheels"]["b-1.0-py3-none-any.whl"]["provenance"] == {"n": 3}


def test_a_part_file_left_by_a_killed_writer_is_swept_by_the_next_publish(tmp_path):
    """SIGKILL during a copy leaves `.NAME.XXXX.part`; nobody else would ever remove it."""
    house, built = tmp_path / "wheelhouse", tmp_path / "built"
    house.mkdir()
    built.mkdir()
    stale = house / ".a-1.0-py3-none-any.whl.k2j4_x.part"
    stale.write_bytes(b"half a wheel")
    (built / "a-1.0-py3-none-any.whl").write_bytes(b"a")
    publish(house, {built / "a-1.0-py3-none-any.whl": {}}, None, None, False)
    assert sorted(p.name for p in house.iterdir()) == [".rocbuild-manifest.json.lock", "a-1.0-py3-none-any.whl",
                                                         "rocbuild-manifest.json"]

def test_a_full_wheelhouse_places_nothing_and_the_build_is_not_repeated(cli, tmp_path, rocm61):
    """A wheelhouse on a full file system (a real 64 KiB tmpfs, in a private mount namespace)."""
    src = tmp_path / "project"
    shutil.copytree(Path(__file__).parents[1] / "data" / "projects" / "recorder", src)
    (tmp_path / "recipes").mkdir()
    recipe = tmp_path / "recipes" / "big.yaml"
    recipe.write_text(f"""\
schema: 1
name: recorder
version: "1.0"
source: {{path: {src}}}
steps:
  - name: blob
    run: [python, -c, "import os; open('recorder/blob.txt', 'wb').write(os.urandom(300000))"]
  - wheel: {{}}
verify:
  - code-objects: false
""")
    out, listing = tmp_path / "wheelhouse", tmp_path / "listing"
    out.mkdir()
    argv = [sys.executable, "-m", "rocbuild", "build", str(recipe), "--arch", "gfx90a", "--rocm", str(rocm61),
            "--work", str(tmp_path / "w"), "--out", str(out)]
    script = 'mount -t tmpfs -o size=64k tmpfs "$OUT" || exit 99; "$@"; rc=$?; ls -A "$OUT" > "$LISTING"; exit $rc'
    env = dict(os.environ, OUT=str(out), LISTING=str(listing), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    ns = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-Urm"]
    full = subprocess.run([*ns, "sh", "-c", script, "sh", *argv], env=env, capture_output=True, text=True)
    assert full.returncode == 1, full.stderr
    assert "cannot write the wheels into --out" in full.stderr and "No space left on device" in full.stderr
    assert "Traceback" not in full.stderr
    assert listing.read_text().split() == [".rocbuild-manifest.json.lock"]  # no wheel, no .part, no manifest
    again = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "(skipped: done in an earlier run" in again.stderr and len(list(out.glob("*.whl"))) == 1
