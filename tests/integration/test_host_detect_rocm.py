"""Moved from tests/unit/test_detect_rocm.py: these run real host probes (hipconfig, rocminfo, a python)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from rocbuild.detect.rocm import find_rocm
from tests.conftest import make_rocm_tree


def test_version_from_hipconfig(tmp_path):
    prefix = make_rocm_tree(tmp_path, "6.3.0")
    shutil.rmtree(prefix / ".info")
    (prefix / "include/rocm-core/rocm_version.h").unlink()
    rocm = find_rocm(str(prefix), environ={"PATH": "/usr/bin:/bin"})
    # HIP's patch number is not ROCm's: only major.minor are kept.
    assert str(rocm.version) == "6.3" and "hipconfig" in rocm.version_source


@pytest.mark.skipif(not Path("/usr/bin/hipcc").exists(), reason="needs the distro HIP toolchain (hipcc)")
def test_distro_layout_on_this_host(cli):
    code, out, _ = cli("detect", "--json", "--rocm", "/usr")
    data = json.loads(out)["rocm"]
    assert data["layout"] == "distro"
    assert data["cmake_hip_dir"].startswith("/usr/lib/") and data["cmake_hip_dir"].endswith("/cmake/hip")
    assert data["hip_lang_dir"].endswith("/cmake/hip-lang")
    assert Path(data["hip_compiler"]).name.startswith("clang++")
    assert Path(data["hip_compiler"]).exists()


def test_rocm_from_amds_python_packages_is_found_through_the_target_python(cli, tmp_path):
    """`pip install rocm[devel]` + `rocm-sdk init`: the venv's rocm-sdk names the tree (a stand-in here)."""
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    tree = make_rocm_tree(site, "7.0.2")
    devel = tree.rename(site / "_rocm_sdk_devel")
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "rocm-sdk").write_text(f'#!/bin/sh\n[ "$1 $2" = "path --root" ] && echo {devel}\n')
    (bin_dir / "rocm-sdk").chmod(0o755)
    env_python = str(bin_dir / "python")
    code, out, err = cli("detect", "--json", "--arch", "gfx1100", "--python", env_python)
    assert code == 0, err
    rocm = json.loads(out)["rocm"]
    assert rocm["path"] == str(devel) and rocm["layout"] == "pip" and rocm["version"].startswith("7.0.2")
    assert "rocm-sdk" in rocm["found_by"]
    code, out, err = cli("doctor", "--json", "--python", env_python)
    checks = {c["id"]: c for c in json.loads(out)["checks"]}
    assert str(devel) in checks["rocm"]["message"], checks["rocm"]
