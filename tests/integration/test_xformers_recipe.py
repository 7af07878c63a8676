"""xformers 0.0.35 recipe: its CK kernels for AMD Instinct GPUs, from the git tag with its submodules.

Nothing is compiled (641 heavy CK translation units, and no ROCm torch can be installed here): the plans show what
setup.py would be given, the refusals show that nothing runs, and the tree check runs for real on small trees made
here (and, with the network, on the real PyPI sdist, which lacks the Composable Kernel submodule).
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.test_flash_deepspeed_recipes import (  # noqa: F401 (rocm72, torch72: fixtures)
    _gated_venv,
    plan_json,
    refused_before_anything_runs,
    rocm72,
    torch72,
)
from tests.integration.test_torch_extension_recipes import _index_sdist
from tests.pyenv_trees import make_venv

RECIPE = REPO / "recipes" / "xformers.yaml"
COMMIT = "03b91d7d9ff295ae68a320e2e733dd6c2ef8f342"  # tag v0.0.35
CLONE = "git clone --recursive --branch v0.0.35 https://github.com/facebookresearch/xformers"

# The lines of v0.0.35's setup.py the recipe's patches match, in a setup.py that stops the build if it ever runs.
SETUP_PY = ('raise SystemExit("the build ran")\n'
            'cxx = ["-O3", "-std=c++17"]\nnvcc = ["-std=c++17"]\nhip = ["-std=c++17"]\n'
            "version += get_local_version_suffix()\n")


def _tree(root: Path, *, ck: bool, cutlass: bool) -> Path:
    """An xformers-shaped tree: setup.py, and the submodule folders, empty (a clone without --recursive) or not."""
    for sub in ("composable_kernel_tiled", "cutlass"):
        (root / "third_party" / sub).mkdir(parents=True)
    if ck:
        (root / "third_party/composable_kernel_tiled/include/ck_tile").mkdir(parents=True)
        (root / "third_party/composable_kernel_tiled/include/ck_tile/core.hpp").write_text("#pragma once\n")
    if cutlass:
        (root / "third_party/cutlass/include/cutlass").mkdir(parents=True)
    (root / "setup.py").write_text(SETUP_PY)
    return root


def _torch(tmp_path: Path, version: str) -> Path:
    """A ROCm 7.2 torch stand-in of another release."""
    python, site = make_venv(tmp_path / f"venv-{version}", "rocm7.2")
    text = (site / "torch" / "version.py").read_text()
    (site / "torch" / "version.py").write_text(text.replace("'2.14.0+rocm7.2'", f"'{version}+rocm7.2'"))
    return python


def test_the_recipe_lints(cli):
    code, out, err = cli("recipes", "lint", RECIPE)
    assert code == 0, err
    assert "ok (xformers 0.0.35, 2 steps)" in out + err


def test_plan_builds_the_ck_kernels_for_the_archs_from_the_tag_with_submodules(cli, rocm72, torch72):
    plan = plan_json(cli, "xformers", "--arch", "gfx942,gfx90a", "--rocm", rocm72, "--python", torch72)
    source = plan["source"]
    assert source["kind"] == "git" and source["url"] == "https://github.com/facebookresearch/xformers.git"
    assert (source["ref"], source["commit"], source["submodules"]) == ("v0.0.35", COMMIT, True)
    check, wheel = plan["steps"]
    assert check["name"] == "check-tree" and "composable_kernel_tiled/include/ck_tile/core.hpp" in check["shell"]
    env = wheel["env"]
    # setup.py splits HIP_ARCHITECTURES on spaces and writes --offload-arch from it; non-empty, it takes the ROCm
    # branch with no GPU visible
    assert env["HIP_ARCHITECTURES"] == "gfx942 gfx90a"
    # the CUDA branch is never asked for: not by FORCE_CUDA=1 nor by a CUDA arch list, even one the caller exports
    assert env["FORCE_CUDA"] == "0" and env["TORCH_CUDA_ARCH_LIST"] == ""
    assert all(e.get("FORCE_CUDA") in (None, "0") for e in (plan["env"], check.get("env", {}), env))
    assert "TORCH_CUDA_ARCH_LIST" not in plan["env"]
    assert env["XFORMERS_CK_FLASH_ATTN"] == "1" and "XFORMERS_SELECTIVE_BUILD" not in env
    assert env["MAX_JOBS"] == plan["env"]["MAX_JOBS"] and env["MAX_JOBS"].isdigit()
    assert "--no-build-isolation" in wheel["argv"]
    assert plan["env"]["PYTORCH_ROCM_ARCH"] == "gfx942;gfx90a" and plan["env"]["ROCM_HOME"] == str(rocm72)
    assert plan["requirements"]["torch"] == "rocm"
    # torch 2.14 needs C++20: setup.py asks for c++17 three times; and no +<git hash>.d<date> version
    std, local = plan["patches"]
    assert (std["file"], std["find"], std["with"], std["count"]) == ("setup.py", '"-std=c++17"', '"-std=c++20"', 3)
    assert (local["file"], local["find"], local["count"]) == ("setup.py", "version += get_local_version_suffix()", 1)
    assert local["with"].startswith("pass  #")
    checks = {v["name"]: v for v in plan["verify"]}
    assert checks["kernels-are-rocm"]["files"] == ["xformers/_C*.so"]
    assert checks["kernels-are-rocm"]["links"] == ["libamdhip64", "libc10_hip"]
    assert "efficient_attention_forward_ck" in checks["ck-kernels-registered"]["argv"][-1]


def test_jobs_come_from_the_recipes_memory_estimate(cli, rocm72, torch72):
    code, out, err = cli("plan", "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                         "--memory", "12GiB")
    assert code == 0, err
    assert "9.0 GiB per job by the recipe" in out
    plan = plan_json(cli, "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72, "--memory", "12GiB")
    assert plan["steps"][1]["env"]["MAX_JOBS"] == "1"


@pytest.mark.parametrize("version, cxx20", [("2.11.0", False), ("2.12.0", True), ("2.14.0", True)])
def test_cxx20_only_for_a_torch_that_needs_it(cli, tmp_path, rocm72, version, cxx20):
    python = _torch(tmp_path, version)
    plan = plan_json(cli, "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", python)
    assert bool([p for p in plan["patches"] if p["find"] == '"-std=c++17"']) == cxx20
    assert [p["find"] for p in plan["patches"]][-1] == "version += get_local_version_suffix()"


@pytest.mark.parametrize("version", ["2.5.1", "2.9.1"])
def test_a_torch_older_than_its_requirement_is_refused(cli, tmp_path, rocm72, version):
    python = _torch(tmp_path, version)
    code, _, err = cli("plan", "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", python)
    assert code == 2, err
    assert "needs torch 2.10 or newer" in err


@pytest.mark.parametrize("flavour", ["cpu", "cuda"])
def test_a_cpu_or_cuda_torch_meets_the_rocm_gate_not_the_version_floor(cli, tmp_path, rocm72, flavour):
    python = _gated_venv(tmp_path, flavour)
    src = _tree(tmp_path / "xformers", ck=True, cutlass=True)
    code, _, err = cli("build", "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", python,
                       "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh")
    assert code == 3, err
    assert ("a ROCm torch" in err or "not ROCm" in err) and "needs torch 2.10" not in err
    assert not (tmp_path / "work" / "src").exists() and not (tmp_path / "wh").exists()


@pytest.mark.parametrize("archs", ["gfx1100", "gfx942,gfx1201", "gfx908", "gfx1030", "gfx90a,gfx1151"])
def test_archs_without_its_kernels_are_refused_before_anything_runs(cli, tmp_path, rocm72, archs):
    src = _tree(tmp_path / "xformers", ck=True, cutlass=True)
    err, planned = refused_before_anything_runs(cli, tmp_path, "xformers", archs, rocm72, src)
    assert "CDNA Instinct GPUs, gfx90a, gfx942 and gfx950" in err and "64-lane wavefronts" in err
    assert "RDNA (gfx10, gfx11, gfx12: wave32, no MFMA)" in err
    assert "MFMA" in planned


@pytest.mark.parametrize("archs", ["gfx90a", "gfx942", "gfx950", "gfx90a,gfx942,gfx950"])
def test_every_cdna_arch_it_has_kernels_for_is_planned(cli, rocm72, torch72, archs):
    plan = plan_json(cli, "xformers", "--arch", archs, "--rocm", rocm72, "--python", torch72)
    assert plan["steps"][1]["env"]["HIP_ARCHITECTURES"] == archs.replace(",", " ")


@pytest.mark.parametrize("cutlass", [True, False], ids=["sdist-like", "clone-without-recursive"])
def test_a_tree_without_the_ck_headers_is_refused_before_compiling(cli, tmp_path, rocm72, cutlass):
    python = _gated_venv(tmp_path, "rocm7.2")
    src = _tree(tmp_path / "xformers", ck=False, cutlass=cutlass)
    code, _, err = cli("build", "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", python,
                       "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh")
    assert code == 1, err
    assert "step 'check-tree' failed" in err
    # what the check printed (the log's tail, `| ` before each line; the script itself is shown above it)
    assert "| missing: third_party/composable_kernel_tiled/include (Composable Kernel" in err
    assert ("| missing: third_party/cutlass/include" in err) != cutlass
    assert "| This xformers tree lacks files of its git submodules (the PyPI sdist has no Composable Kernel" in err
    assert f"|   {CLONE}\n" in err
    # the wheel step (setup.py, the compiler) never started, and nothing reached the wheelhouse
    assert "the build ran" not in err and "[2/2]" not in err
    assert not list((tmp_path / "work" / "logs").glob("02-*")) and not (tmp_path / "wh").exists()


def test_a_tree_with_its_submodules_passes_the_check_and_is_patched(cli, tmp_path, rocm72):
    python = _gated_venv(tmp_path, "rocm7.2")
    src = _tree(tmp_path / "xformers", ck=True, cutlass=True)
    code, out, err = cli("build", "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", python,
                         "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh",
                         "--until", "check-tree")
    assert code == 0, err
    assert "stopped after 'check-tree'" in out + err and "the build ran" not in out + err
    setup = (tmp_path / "work" / "src" / "setup.py").read_text()
    assert setup.count('"-std=c++20"') == 3 and '"-std=c++17"' not in setup
    assert "get_local_version_suffix()" not in setup
    assert (src / "setup.py").read_text() == SETUP_PY  # the --source-dir tree is only read


@pytest.mark.network
def test_the_real_sdist_takes_the_patches_and_is_refused_for_its_missing_ck(cli, tmp_path, rocm72):
    """PyPI's 0.0.35 sdist: its setup.py is the tag's, so the patches apply and the variables the recipe sets are
    read there; it carries cutlass but not the Composable Kernel, so the build stops before compiling."""
    with tarfile.open(_index_sdist("xformers", "xformers-0.0.35.tar.gz", tmp_path)) as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    src = tmp_path / "xformers-0.0.35"
    setup = (src / "setup.py").read_text()
    assert 'os.getenv("HIP_ARCHITECTURES", "native").split()' in setup
    assert 'os.getenv("XFORMERS_CK_FLASH_ATTN", "1") == "1"' in setup
    assert 'os.getenv("FORCE_CUDA", "0") == "1"' in setup and 'os.getenv("TORCH_CUDA_ARCH_LIST", "") != ""' in setup
    assert '"CUTLASS submodule not found' in setup and '"xformers._C"' in setup
    assert '"composable_kernel_tiled"' in setup and '"-Werror"' in setup
    hip = [p for p in (src / "xformers/csrc/attention").glob("hip_*/**/*.cpp")]
    assert len(hip) == 641  # the count the recipe's comments give
    assert (src / "third_party/cutlass/include").is_dir()
    assert not (src / "third_party/composable_kernel_tiled").exists()

    python = _gated_venv(tmp_path, "rocm7.2")
    code, _, err = cli("build", "xformers", "--arch", "gfx942", "--rocm", rocm72, "--python", python,
                       "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh")
    assert code == 1, err
    assert err.count("setup.py: replaced 3") == 1 and err.count("setup.py: replaced 1") == 1, err
    assert "| missing: third_party/composable_kernel_tiled/include" in err and "| missing: third_party/cutlass" not in err
    assert f"|   {CLONE}\n" in err and "[2/2]" not in err
    patched = (tmp_path / "work" / "src" / "setup.py").read_text()
    assert patched.count('"-std=c++20"') == 3 and "version += get_local_version_suffix()" not in patched
