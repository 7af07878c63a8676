"""`rocbuild index`: a PEP 503 index that a real pip installs from, through file:// URLs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def make_wheel(tmp_path: Path, name: str, version: str, wheelhouse: Path) -> Path:
    project = tmp_path / f"proj-{name}-{version}"
    module = name.lower().replace("-", "_").replace(".", "_")
    (project / module).mkdir(parents=True)
    (project / module / "__init__.py").write_text(f"VERSION = {version!r}\n")
    (project / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\nrequires-python = ">=3.8"\n'
        f'[tool.setuptools]\npackages = ["{module}"]\n')
    before = set(wheelhouse.glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "--disable-pip-version-check", "-w", str(wheelhouse), str(project)], check=True,
                   capture_output=True)
    [made] = set(wheelhouse.glob("*.whl")) - before
    return made


def pip_install(index: Path, target: Path, requirement: str) -> subprocess.CompletedProcess:
    # Only this index: no PyPI, no find-links from the machine's pip configuration.
    return subprocess.run([sys.executable, "-m", "pip", "install", "--isolated", "--no-deps",
                           "--disable-pip-version-check", "--no-cache-dir", "--index-url", index.as_uri() + "/",
                           "--target", str(target), requirement], capture_output=True, text=True)


def test_pip_installs_from_the_index(cli, tmp_path):
    wh = tmp_path / "wheelhouse"
    make_wheel(tmp_path, "Hello_ROCm.Ext", "1.0", wh)
    newest = make_wheel(tmp_path, "Hello_ROCm.Ext", "1.1", wh)
    make_wheel(tmp_path, "other", "0.3", wh)
    (wh / "rocbuild-manifest.json").write_text("{}")  # not a wheel: ignored
    code, out, err = cli("index", wh, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert sorted(result["projects"]) == ["hello-rocm-ext", "other"]  # PEP 503 normalized names
    page = (wh / "simple" / "hello-rocm-ext" / "index.html").read_text()
    assert f'href="../../{newest.name}#sha256=' in page and 'data-requires-python="&gt;=3.8"' in page
    assert '<a href="other/">other</a>' in (wh / "simple" / "index.html").read_text()

    done = pip_install(wh / "simple", tmp_path / "site", "hello-rocm-ext")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "hello_rocm_ext" / "__init__.py").read_text() == "VERSION = '1.1'\n"
    done = pip_install(wh / "simple", tmp_path / "site2", "HELLO_rocm-ext==1.0")
    assert done.returncode == 0, done.stderr

    # The sha256 fragment is checked: a wheel changed after indexing is refused.
    newest.write_bytes(newest.read_bytes() + b"\0")
    done = pip_install(wh / "simple", tmp_path / "site3", "hello-rocm-ext==1.1")
    assert done.returncode != 0 and "hash" in done.stderr.lower()


def test_index_again_replaces_the_old_one(cli, tmp_path):
    wh = tmp_path / "wh"
    old = make_wheel(tmp_path, "gone", "1.0", wh)
    assert cli("index", wh)[0] == 0
    old.unlink()
    make_wheel(tmp_path, "kept", "1.0", wh)
    code, out, _ = cli("index", wh)
    assert code == 0 and "pip install --index-url file://" in out
    assert not (wh / "simple" / "gone").exists() and (wh / "simple" / "kept" / "index.html").is_file()


@pytest.mark.parametrize("setup,message", [
    (lambda wh: None, "no such folder"),
    (lambda wh: wh.mkdir(), "holds no wheels"),
    (lambda wh: (wh.mkdir(), (wh / "not-a-wheel.whl").write_text("x")), "not valid wheel names"),
])
def test_bad_wheelhouse(cli, tmp_path, setup, message):
    wh = tmp_path / "wh"
    setup(wh)
    code, _, err = cli("index", wh)
    assert code == 2 and message in err and "Traceback" not in err


def test_one_index_per_rocm_release(cli, tmp_path):
    """pip on ROCm 6.4 gets the 6.4 build from rocm6.4/simple, never 7.2's higher label."""
    wh = tmp_path / "wheelhouse"
    for label in ("rocm6.4", "rocm7.2", "rocm6.4.gfx1100"):
        make_wheel(tmp_path / label, "hello-ext", f"1.0+{label}", wh)
    code, out, err = cli("index", str(wh), "--by-rocm", "--json")
    assert code == 0, err
    indexes = json.loads(out)
    assert sorted(indexes) == ["6.4", "7.2"]
    assert sorted(indexes["6.4"]["projects"]["hello-ext"]) == ["hello_ext-1.0+rocm6.4-py3-none-any.whl",
                                                               "hello_ext-1.0+rocm6.4.gfx1100-py3-none-any.whl"]
    assert not (wh / "simple").exists()
    for release, wanted in (("7.2", "1.0+rocm7.2"), ("6.4", "1.0+rocm6.4.gfx1100")):
        got = pip_install(wh / f"rocm{release}" / "simple", tmp_path / f"site-{release}", "hello-ext")
        assert got.returncode == 0, got.stderr
        assert list((tmp_path / f"site-{release}").glob(f"hello_ext-{wanted}.dist-info"))
    # An arch's own wheel, pinned by its label:
    got = pip_install(wh / "rocm6.4" / "simple", tmp_path / "site-pinned", "hello-ext==1.0+rocm6.4")
    assert got.returncode == 0 and list((tmp_path / "site-pinned").glob("hello_ext-1.0+rocm6.4.dist-info"))


def test_by_rocm_refuses_wheels_without_a_rocm_label(cli, tmp_path):
    wh = tmp_path / "wheelhouse"
    make_wheel(tmp_path / "a", "hello-ext", "1.0+rocm6.4", wh)
    make_wheel(tmp_path / "b", "hello-ext", "1.0", wh)
    code, _, err = cli("index", str(wh), "--by-rocm")
    assert code == 2 and "hello_ext-1.0-py3-none-any.whl" in err and "+rocmX.Y" in err
    assert not (wh / "rocm6.4").exists()
