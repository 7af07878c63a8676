"""ROCm discovery on faithful file trees of several releases, and on this host's distro packages."""

from __future__ import annotations

import shutil

import pytest

from rocbuild.detect.rocm import RocmVersion, find_rocm
from rocbuild.errors import HostNotReady, UsageError
from tests.conftest import make_rocm_tree


@pytest.mark.parametrize("version,hip_rel,compiler_rel", [
    ("5.1.3", "hip/cmake", "llvm/bin/clang++"),
    ("5.7.1", "lib/cmake/hip", "llvm/bin/clang++"),
    ("6.1.0", "lib/cmake/hip", "lib/llvm/bin/clang++"),
])
def test_release_layouts(tmp_path, version, hip_rel, compiler_rel):
    prefix = make_rocm_tree(tmp_path, version)
    rocm = find_rocm(str(prefix), environ={})
    assert str(rocm.version) == version
    assert rocm.version_source.endswith(".info/version")
    assert rocm.cmake_hip_dir == prefix / hip_rel
    assert rocm.hip_compiler == prefix / compiler_rel
    assert rocm.layout == "rocm" and rocm.found_by == "--rocm"
    assert rocm.cmake_package("hipblas") == prefix / "lib/cmake/hipblas"
    assert rocm.cmake_package("hipsparse") is None


def test_version_from_header_when_no_info(tmp_path):
    prefix = make_rocm_tree(tmp_path, "6.2.4")
    shutil.rmtree(prefix / ".info")
    rocm = find_rocm(str(prefix), environ={})
    assert str(rocm.version) == "6.2.0" and rocm.version_source.endswith("rocm_version.h")


def test_rocm_path_env_is_used(tmp_path):
    prefix = make_rocm_tree(tmp_path, "6.1.0")
    rocm = find_rocm(None, environ={"ROCM_PATH": str(prefix), "PATH": ""})
    assert rocm.path == prefix and rocm.found_by == "ROCM_PATH"


def test_bad_rocm_option_is_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not a ROCm install"):
        find_rocm(str(tmp_path), environ={})


def test_bad_rocm_path_env_is_host_error(tmp_path):
    with pytest.raises(HostNotReady, match="ROCM_PATH="):
        find_rocm(None, environ={"ROCM_PATH": str(tmp_path / "nope")})


def test_version_compares_with_strings():
    v = RocmVersion("6.1.0")
    assert v >= "6.0" and v >= "6.1" and not v < "6.1" and v < "6.10" and v == "6.1"
    with pytest.raises(TypeError):
        v < "not a version"




def test_a_system_librarys_header_is_found_in_the_system_include_folders(tmp_path):
    """requires.headers: a ROCm header is looked for under the ROCm include folder; a system library's
    (cblas.h, which Debian's libopenblas-dev puts in the multiarch folder) in the system's too."""
    rocm = find_rocm(str(make_rocm_tree(tmp_path / "rocm", "6.1.0")), environ={})
    assert rocm is not None and not rocm.finds_header("rocbuild-test-cblas.h")
    system = tmp_path / "usr-include" / "x86_64-linux-gnu"
    (system / "rocbuild-test-cblas.h").parent.mkdir(parents=True)
    (system / "rocbuild-test-cblas.h").write_text("")
    rocm.system_include_dirs = [tmp_path / "usr-include", system]
    assert rocm.finds_header("rocbuild-test-cblas.h") and not rocm.has_header("rocbuild-test-cblas.h")
    assert system in rocm.header_dirs()
