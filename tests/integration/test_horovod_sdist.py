"""`prepare horovod` on the real Horovod 0.28.1 sdist from PyPI (network: PyPI only)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import make_rocm_tree, tree_digest

pytestmark = pytest.mark.network

NCCL_OPS = "horovod/common/ops/nccl_operations.h"


@pytest.fixture(scope="module")
def sdist_tree(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sdist")
    cache = os.environ.get("ROCBUILD_TEST_SDIST_CACHE")
    archive = Path(cache, "horovod-0.28.1.tar.gz") if cache else None
    if archive is None or not archive.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "--disable-pip-version-check", "horovod==0.28.1", "-d", str(d)],
                       check=True, capture_output=True)
        archive = d / "horovod-0.28.1.tar.gz"
    with tarfile.open(archive) as tar:
        # The safe extraction filter exists from Python 3.10.12 / 3.11.4 on.
        tar.extractall(d, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return d / "horovod-0.28.1"


def prepare(cli, tree, rocm, work, *extra):
    return cli("prepare", "horovod", "--source-dir", tree, "--arch", "gfx90a", "--rocm", rocm, "--work", work, *extra)


def test_prepare_horovod_twice(cli, sdist_tree, tmp_path):
    rocm = make_rocm_tree(tmp_path, "6.1.0")
    given = tree_digest(sdist_tree)
    code, out, err = prepare(cli, sdist_tree, rocm, tmp_path / "w")
    assert code == 0, err
    src = Path(out.strip().splitlines()[-1])
    mods = src / "cmake" / "Modules"
    assert os.readlink(mods / "FindHIP.cmake") == str(rocm / "lib/cmake/hip/FindHIP.cmake")
    assert os.readlink(mods / "FindHIP") == str(rocm / "lib/cmake/hip/FindHIP")
    header = (src / NCCL_OPS).read_text()
    assert header.count("#include <rccl/rccl.h>") == 1 and "#include <rccl.h>" not in header
    torch_cmake = (src / "horovod/torch/CMakeLists.txt").read_text()
    assert "set(CMAKE_CXX_STANDARD $ENV{HOROVOD_TORCH_CXX_STANDARD})" in torch_cmake
    assert "OR (DEFINED Pytorch_CXX17 AND Pytorch_CXX17)))" in (src / "CMakeLists.txt").read_text()
    assert "ENV{HIP_CLANG_PATH}" in (src / "horovod/common/ops/rocm/CMakeLists.txt").read_text()
    first = tree_digest(src)

    code, out2, err = prepare(cli, sdist_tree, rocm, tmp_path / "w")
    assert code == 0 and "up to date" in err
    assert tree_digest(src) == first

    code, _, err = prepare(cli, sdist_tree, rocm, tmp_path / "w", "--clean")
    assert code == 0, err
    assert tree_digest(src) == first  # from scratch: the same tree again
    assert tree_digest(sdist_tree) == given  # the user's tree is untouched


def test_prepare_horovod_old_rocm_keeps_rccl_include(cli, sdist_tree, tmp_path):
    rocm = make_rocm_tree(tmp_path, "5.1.3")  # RCCL of that era installs include/rccl.h
    code, out, err = prepare(cli, sdist_tree, rocm, tmp_path / "w")
    assert code == 0, err
    src = Path(out.strip().splitlines()[-1])
    assert "#include <rccl.h>" in (src / NCCL_OPS).read_text()
    assert os.readlink(src / "cmake/Modules/FindHIP.cmake") == str(rocm / "hip/cmake/FindHIP.cmake")


@pytest.mark.skipif(not Path("/usr/bin/hipcc").exists(), reason="needs the distro HIP toolchain")
def test_prepare_horovod_on_distro_hip(cli, sdist_tree, tmp_path):
    code, out, err = prepare(cli, sdist_tree, "/usr", tmp_path / "w")
    assert code == 0, err
    src = Path(out.strip().splitlines()[-1])
    target = os.readlink(src / "cmake/Modules/FindHIP.cmake")
    assert target.startswith("/usr/lib/") and target.endswith("/cmake/hip/FindHIP.cmake")
