"""Moved from tests/unit/test_detect_rocm.py: these run real host probes (hipconfig, rocminfo, a python)."""

from __future__ import annotations

import json
import shutil
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
