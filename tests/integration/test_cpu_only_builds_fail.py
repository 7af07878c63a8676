"""A torch extension built without its GPU half fails, whichever shipped recipe built it.

Every torch extension's setup.py has a way to come out CPU-only without an error: no GPU visible at build
time, a FORCE_CUDA unset, a `*_SKIP_CUDA_BUILD` exported, an op asked for that its builder calls
incompatible. Each recipe that builds against torch names the modules that must carry device code; here
those modules are made host-only, as such a build leaves them, and each recipe's own checks (as its plan
renders them) must fail them, and pass the same modules once hipcc gave them device code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_rocm_tree
from tests.pyenv_trees import compile_hip, compile_host, make_venv

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
ARCH = "gfx90a"  # every torch recipe accepts it (flash-attn and xformers take CDNA only), and so does Debian 12 hipcc
SUFFIX = ".cpython-314-x86_64-linux-gnu"


def _torch_recipes() -> list[str]:
    from rocbuild.recipe.load import load_recipe

    return sorted(p.stem for p in RECIPES.glob("*.yaml") if load_recipe(p).requires.torch is not None)


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> dict[str, list[dict]]:
    """Each torch recipe's device-code checks that name their modules, from `rocbuild plan --json`."""
    tmp = tmp_path_factory.mktemp("plans")
    rocm = make_rocm_tree(tmp / "opt", "7.2.0")
    python, _ = make_venv(tmp / "venv", "rocm7.2")
    out: dict[str, list[dict]] = {}
    for recipe in _torch_recipes():
        done = subprocess.run([sys.executable, "-m", "rocbuild", "plan", "--json", recipe, "--arch", ARCH,
                               "--rocm", str(rocm), "--python", str(python)], capture_output=True, text=True,
                              env={**os.environ, "XDG_CONFIG_HOME": str(tmp / "config"),
                                   "XDG_CACHE_HOME": str(tmp / "cache")})
        assert done.returncode == 0, (recipe, done.stderr)
        out[recipe] = [v for v in json.loads(done.stdout)["verify"] if v["kind"] == "code-objects" and v["files"]]
    return out


def test_every_torch_recipe_is_checked():
    # the recipes built against torch; a new one joins this test by itself
    assert {"causal-conv1d", "deepspeed", "flash-attn", "mamba-ssm", "torch-scatter", "torch-sparse",
            "xformers"} <= set(_torch_recipes())


@pytest.mark.hipcc
@pytest.mark.parametrize("recipe", _torch_recipes())
def test_a_cpu_only_build_fails_the_recipes_own_checks(planned, tmp_path, recipe):
    from rocbuild.verify.verdict import verify_paths

    checks = planned[recipe]
    assert checks, f"{recipe}: no device-code check names a module, so a CPU-only wheel would pass"
    for i, check in enumerate(checks):
        rels = [glob.replace("*", SUFFIX, 1) for glob in check["files"]]
        cpu, gpu = tmp_path / f"cpu-{i}", tmp_path / f"gpu-{i}"
        for rel in rels:
            compile_host(cpu, rel, tmp_path / "b")
            compile_hip(gpu, rel, [ARCH], tmp_path / "b")
        failed = verify_paths([cpu], [ARCH], device_code_in=tuple(check["files"]), links=tuple(check["links"]))
        assert not failed.ok, (recipe, check["name"])
        assert any("no device code" in p or "CPU-only" in p for p in failed.problems), failed.problems
        # the same modules with device code pass (links aside: a stand-in links no torch)
        passed = verify_paths([gpu], [ARCH], device_code_in=tuple(check["files"]), links=())
        assert passed.ok, (recipe, check["name"], passed.problems)
