"""torch-scatter and torch-sparse recipes: PyG's extensions from their released sdists, with the ROCm
fixes that are only on upstream's master written as patch files.

Their setup.py builds the GPU modules only when a GPU is visible or FORCE_CUDA=1, and otherwise,
silently, the CPU ones alone: the plan must set FORCE_CUDA and torch's arch variable, and the
device-code check must fail a wheel holding only the _cpu modules. The patches are applied to the
real sdists from PyPI (network tests) and their result is run through the C preprocessor.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.conftest import make_rocm_tree
from tests.integration.test_torch_extension_recipes import _index_sdist
from tests.pyenv_trees import compile_hip, compile_host, make_venv

RECIPES = Path(__file__).resolve().parents[2] / "recipes"

# recipe: (sdist requirement, its sha256, package, the modules that carry kernels)
PYG = {
    "torch-scatter": ("torch-scatter==2.1.2", "69b3aa435f2424ac6a1bfb6ff702da6eb73b33ca0db38fb26989c74159258e47",
                      "torch_scatter", ["_scatter", "_segment_coo", "_segment_csr"]),
    "torch-sparse": ("torch-sparse==0.6.18", "2f14c510a6e93f404c6ea357210615b3c15a71731f9dbd86f25434e34fb5a741",
                     "torch_sparse", ["_spmm", "_convert", "_diag", "_rw"]),
}


def plan_json(cli, *args) -> dict:
    code, out, err = cli("plan", "--json", *args)
    assert code == 0, err
    return json.loads(out)


def _kernels_check(recipe: str):
    from rocbuild.recipe.load import load_recipe
    from rocbuild.recipe.model import CodeObjects

    return next(v for v in load_recipe(RECIPES / f"{recipe}.yaml").verify
                if isinstance(v, CodeObjects) and v.name == "kernels-are-rocm")


@pytest.mark.parametrize("recipe", sorted(PYG))
def test_plan_forces_the_gpu_build_with_torchs_arch_list(cli, tmp_path, rocm61, recipe):
    requirement, sha256, package, kernels = PYG[recipe]
    python, _ = make_venv(tmp_path / "venv", "rocm7.2")
    plan = plan_json(cli, recipe, "--arch", "gfx90a,gfx1100", "--rocm", rocm61, "--python", python)
    assert plan["source"]["kind"] == "sdist" and plan["source"]["requirement"] == requirement
    assert plan["source"]["sha256"] == sha256
    (step,) = plan["steps"]
    # No GPU on a builder: without FORCE_CUDA=1 setup.py quietly builds the CPU modules alone.
    assert step["env"]["FORCE_CUDA"] == "1"
    # cpp_extension's arch variable, `;`-separated; the packages have no arch variable of their own.
    assert plan["env"]["PYTORCH_ROCM_ARCH"] == "gfx90a;gfx1100"
    assert plan["env"]["ROCM_HOME"] == str(rocm61)
    assert "HIP_ARCHITECTURES" not in step["env"] and "FORCE_ONLY_CPU" not in step["env"]
    # setup.py imports torch: the target's own, never an isolated build's
    assert "--no-build-isolation" in step["argv"]
    assert plan["requirements"]["torch"] == "rocm"
    # The ROCm fix is one patch file against the sdist's csrc/cuda/utils.cuh; setup.py no longer asks
    # torch.cuda.is_available() when FORCE_CUDA=1 decides (a build-only torch raises there).
    assert [(p["kind"], p.get("name") or p["file"]) for p in plan["patches"]] == [
        ("diff", f"{recipe}/0001-rocm-half-warp-shuffles.patch"), ("replace", "setup.py"), ("replace", "setup.py")]
    assert [(p["find"], p["with"]) for p in plan["patches"][1:]] == [
        ("if torch.cuda.is_available():", "if os.getenv('FORCE_CUDA', '0') != '1' and torch.cuda.is_available():"),
        ("if torch.cuda.is_available() and torch.version.hip:", "if torch.version.hip:")]
    check = next(v for v in plan["verify"] if v["name"] == "kernels-are-rocm")
    assert check["files"] == [f"{package}/{m}_cuda*.so" for m in kernels]
    assert check["links"] == ["libamdhip64", "libc10_hip"]
    # torch 2.14 gets C++20 from cpp_extension itself: neither setup.py pins a standard to patch
    assert not [p for p in plan["patches"] if "-std=" in p.get("find", "")]


@pytest.mark.parametrize("recipe", sorted(PYG))
@pytest.mark.parametrize("flavour", ["cpu", "cuda"])
def test_a_cpu_or_cuda_torch_is_refused_before_anything_is_fetched(cli, tmp_path, recipe, flavour):
    python, site = make_venv(tmp_path / "venv", flavour)
    for module in ("setuptools", "wheel", "ninja"):  # so only the torch gate can refuse
        (site / module).mkdir(exist_ok=True)
        (site / module / "__init__.py").write_text("")
    rocm = make_rocm_tree(tmp_path / "opt", "7.2.0")
    plan = plan_json(cli, recipe, "--arch", "gfx1100", "--rocm", rocm, "--python", python)
    # plan says what --install-missing would put in its place
    assert plan["requirements"]["torch_install_argv"][-2:] == ["--index-url", "https://download.pytorch.org/whl/rocm7.2"]
    src = tmp_path / "tree"
    src.mkdir()
    (src / "setup.py").write_text("raise SystemExit('must not run')\n")
    code, _, err = cli("build", recipe, "--arch", "gfx1100", "--rocm", rocm, "--python", python,
                       "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh")
    assert code == 3, err
    assert "a ROCm torch" in err or "not ROCm" in err
    assert not (tmp_path / "work" / "src").exists() and not (tmp_path / "wh").exists()


def _cpu_modules(site: Path, package: str, names: list[str], work: Path) -> None:
    for name in ["_version", *names]:
        compile_host(site, f"{package}/{name}_cpu.so", work)


@pytest.mark.parametrize("recipe", sorted(PYG))
def test_a_cpu_only_build_fails_the_device_code_check(tmp_path, recipe):
    """What setup.py makes without FORCE_CUDA on a GPU-less builder: the _cpu modules alone."""
    from rocbuild.verify.verdict import verify_paths

    _, _, package, kernels = PYG[recipe]
    check = _kernels_check(recipe)
    _cpu_modules(tmp_path / "site", package, kernels, tmp_path / "b")
    verdict = verify_paths([tmp_path / "site"], ["gfx1100"], device_code_in=check.files, links=check.links)
    assert not verdict.ok
    assert any(f"no ELF file matches '{package}/{kernels[0]}_cuda*.so'" in p for p in verdict.problems), \
        verdict.problems


@pytest.mark.hipcc
def test_the_device_code_check_passes_gpu_modules(tmp_path):
    """The same check passes once the _cuda modules carry device code (links aside: a stand-in module
    needs no libc10_hip), so the failure above is the missing GPU build."""
    from rocbuild.verify.verdict import verify_paths

    _, _, package, kernels = PYG["torch-scatter"]
    check = _kernels_check("torch-scatter")
    site = tmp_path / "site"
    _cpu_modules(site, package, kernels, tmp_path / "b")
    for name in kernels:
        compile_hip(site, f"{package}/{name}_cuda.so", ["gfx90a"], tmp_path / f"b-{name}")
    verdict = verify_paths([site], ["gfx90a"], device_code_in=check.files, links=())
    assert verdict.ok, verdict.problems
    with_links = verify_paths([site], ["gfx90a"], device_code_in=check.files, links=check.links)
    assert not with_links.ok and "does not link libc10_hip" in with_links.problems[0]


def _preprocess(header: Path, tmp_path: Path, *defines: str) -> str:
    """The header through the C preprocessor, its torch include replaced by nothing: which functions
    each side of USE_ROCM declares."""
    into = tmp_path / ("pp-" + "-".join(defines or ("cuda",)))
    (into / "cuda").mkdir(parents=True)
    (into / "extensions.h").write_text("")
    (into / "cuda" / "utils.cuh").write_text(header.read_text())
    return subprocess.run(["gcc", "-E", "-P", "-x", "c++", *[f"-D{d}" for d in defines],
                           str(into / "cuda" / "utils.cuh")], check=True, capture_output=True, text=True).stdout


@pytest.mark.network
@pytest.mark.parametrize("recipe", sorted(PYG))
def test_the_rocm_patch_applies_to_the_released_sdist(cli, tmp_path, rocm61, recipe):
    """prepare fetches the pinned sdist itself (its sha256 checked) and applies the patch file; on the
    ROCm side no at::Half overload keeps a 32-bit mask (HIP's *_sync static_assert a 64-bit one) and
    at::Half gets shuffles of its own (it converts to float and to __half: ambiguous)."""
    requirement, _, package, _ = PYG[recipe]
    name, version = requirement.split("==")
    filename = f"{package}-{version}.tar.gz"
    with tarfile.open(_index_sdist(name, filename, tmp_path)) as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    upstream = tmp_path / f"{package}-{version}" / "csrc" / "cuda" / "utils.cuh"
    before = _preprocess(upstream, tmp_path / "before", "USE_ROCM")
    assert "const unsigned mask" in before  # the release's bug, seen by the same reading

    python, _ = make_venv(tmp_path / "venv", "rocm7.2")
    code, out, err = cli("prepare", recipe, "--arch", "gfx1100", "--rocm", rocm61, "--python", python,
                         "--work", tmp_path / "work")
    assert code == 0, err
    assert "0001-rocm-half-warp-shuffles.patch: applied" in err
    tree = Path(out.strip().splitlines()[-1])
    setup = (tree / "setup.py").read_text()
    assert f"__version__ = '{version}'" in setup
    # setup.py asks for a GPU no more when FORCE_CUDA=1 (the recipe sets it): never on a build-only torch
    assert setup.count("torch.cuda.is_available()") == 1
    assert "if os.getenv('FORCE_CUDA', '0') != '1' and torch.cuda.is_available():" in setup
    patched = tree / "csrc" / "cuda" / "utils.cuh"
    rocm = _preprocess(patched, tmp_path / "after", "USE_ROCM")
    assert "unsigned mask" not in rocm and "_sync(" not in rocm
    assert "at::Half __shfl_up(const at::Half var" in " ".join(rocm.split()) \
        or recipe == "torch-sparse" and "at::Half __shfl(const at::Half var" in " ".join(rocm.split())
    assert "__shfl_down(var.operator __half(), delta)" in rocm
    # CUDA keeps what it had
    cuda = _preprocess(patched, tmp_path / "after")
    assert cuda == _preprocess(upstream, tmp_path / "before")
    # prepared again: the patch is already applied, which is fine
    code, _, err = cli("prepare", recipe, "--arch", "gfx1100", "--rocm", rocm61, "--python", python,
                       "--work", tmp_path / "work")
    assert code == 0, err
