"""The build cache on the real tiny CMake project: hits, misses on every input, tampering, ccache."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import git, make_rocm_tree
from tests.integration.test_engine_build import build, repo, wheels, write_recipe  # noqa: F401 (fixture)

needs_ccache = pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed")


def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "xdg-cache" / "rocbuild"


def with_diff_patch(recipe: Path, comment: str) -> Path:
    """Add a diff patch (a real file beside the recipe) that puts a comment on top of tiny.c."""
    upstream = (recipe.parent / "upstream" / "tiny.c").read_text().splitlines(keepends=True)
    patched = [f"/* {comment} */\n"] + upstream
    diff = "".join(difflib.unified_diff(upstream, patched, "a/tiny.c", "b/tiny.c"))
    patch = recipe.parent / "patches" / "tiny" / "0001-comment.patch"
    patch.parent.mkdir(parents=True, exist_ok=True)
    patch.write_text(diff)
    text = recipe.read_text()
    if "0001-comment.patch" not in text:
        recipe.write_text(text.replace("patches:\n", "patches:\n  - diff: tiny/0001-comment.patch\n", 1))
    return recipe


def test_unchanged_rebuild_comes_from_the_cache(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, expect="5")
    code, out, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 0, err
    assert "build cache: stored as" in err
    first = Path(out.strip().splitlines()[-1]).read_bytes()
    shutil.rmtree(tmp_path / "wheelhouse")

    # Another work folder, same inputs: no step runs, verify runs again, the same wheel lands.
    code, out, err = build(cli, recipe, tmp_path, rocm61, work="elsewhere")
    assert code == 0, err
    assert "==> build cache  hit" in err and "no build step ran" in err
    assert "[1/5]" not in err and "prepare" not in err
    assert "==> verify verify-1" in err  # the recipe's own check, run on the cached wheel
    assert Path(out.strip().splitlines()[-1]).read_bytes() == first
    manifest = json.loads((tmp_path / "wheelhouse" / "rocbuild-manifest.json").read_text())
    assert manifest["wheels"][wheels(tmp_path)[0]]["build_cache"]["hit"] is True

    code, out, _ = cli("cache", "list", "--json")
    listed = json.loads(out)
    assert [(e["recipe"], e["archs"], e["wheels"]) for e in listed["builds"]] == [
        ("tiny", ["gfx90a", "gfx1100"], ["tiny-1.0+rocm6.1-py3-none-any.whl"])]
    assert cli("cache", "path")[1].strip() == str(cache_dir(tmp_path))


def test_every_input_change_rebuilds(cli, tmp_path, repo, rocm61, monkeypatch):
    recipe = with_diff_patch(write_recipe(tmp_path, repo, expect="5"), "one")
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 0, err

    def rebuilt(*extra, rocm=rocm61, arch="gfx90a,gfx1100") -> bool:
        code, _, err = cli("build", recipe, "--arch", arch, "--rocm", rocm, "--work", tmp_path / "w",
                           "--out", tmp_path / "wheelhouse", *extra)
        assert code == 0, err
        # Compiled again: neither served by the build cache nor resumed from the work folder's stamps.
        return "[1/5] cmake" in err and "[1/5] cmake  (skipped" not in err and "build cache  hit" not in err

    assert not rebuilt()  # the control: nothing changed
    with_diff_patch(recipe, "two")  # patch file contents
    assert rebuilt()
    assert rebuilt(arch="gfx90a")  # archs
    assert rebuilt(rocm=make_rocm_tree(tmp_path / "opt62", "6.2.0"))  # ROCm version
    monkeypatch.setenv("CFLAGS", "-O1")
    assert not rebuilt()  # a confined step never sees the caller's CFLAGS: nothing changed
    assert rebuilt("--no-confine")  # unconfined: whether steps are confined is in the build identity
    monkeypatch.delenv("CFLAGS")  # the environment that reaches the compiler of an unconfined step
    assert rebuilt("--no-confine")
    assert rebuilt("--set", "gate=")  is False  # the option's default: same rendered plan (confined, from the cache)
    assert rebuilt("--set", f"gate={recipe}")  # an option that changes a step
    # A new upstream commit behind the same branch.
    recipe.write_text(recipe.read_text().replace("ref: v1.0", "ref: main"))
    # The branch still points at v1.0's commit: nothing compiles again. (The recipe's text is part of the
    # build identity, so the wheel is relabelled and cached under a new key, from the same build.)
    assert rebuilt("--set", f"gate={recipe}") is False
    (tmp_path / "upstream" / "README").write_text("news\n")
    git(tmp_path / "upstream", "add", "README")
    git(tmp_path / "upstream", "commit", "-qm", "news")
    assert rebuilt("--set", f"gate={recipe}")
    assert len(json.loads(cli("cache", "list", "--json")[1])["builds"]) == 9


def test_tampered_cache_entry_is_not_used(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, expect="5")
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    [cached] = (cache_dir(tmp_path) / "builds").glob("*/*.whl")
    cached.write_bytes(cached.read_bytes() + b"\0")
    code, _, err = build(cli, recipe, tmp_path, rocm61, work="w2")
    assert code == 0, err
    assert "build cache  hit" not in err and "[5/5] wheel" in err
    code, _, err = build(cli, recipe, tmp_path, rocm61, work="w3")
    assert "build cache  hit" in err  # stored again, whole


def test_cached_wheel_is_verified_again(cli, tmp_path, repo, rocm61):
    gate = tmp_path / "verify-gate"
    gate.write_text("")
    recipe = write_recipe(tmp_path, repo, expect="5")
    recipe.write_text(recipe.read_text() + f"  - name: gate\n    command: [test, -e, {gate}]\n")
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    gate.unlink()  # not a build input: the key is unchanged, but the check now fails
    shutil.rmtree(tmp_path / "wheelhouse")
    code, _, err = build(cli, recipe, tmp_path, rocm61, work="w2")
    assert code == 1
    assert "build cache  hit" in err and "verify gate: command exited with 1" in err
    assert wheels(tmp_path) == []


def test_cache_prune(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, expect="5")
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    assert build(cli, recipe, tmp_path, rocm61, "--set", f"gate={recipe}")[0] == 0
    entries = sorted((cache_dir(tmp_path) / "builds").glob("*/entry.json"))
    assert len(entries) == 2
    old = time.time() - 10 * 86400
    os.utime(entries[0], (old, old))
    code, out, _ = cli("cache", "prune", "--older-than", "5")
    assert code == 0 and out.startswith("removed 1 build cache entry unused for 5 days")
    assert not entries[0].exists() and entries[1].exists()
    code, _, err = cli("cache", "prune", "--older-than", "-1")
    assert code == 2 and "must be 0 or more days" in err
    assert cli("cache", "prune")[0] == 0
    assert not entries[1].exists()


def _ccache_stats(ccache_dir: Path) -> dict[str, int]:
    out = subprocess.run(["ccache", "--print-stats"], env=dict(os.environ, CCACHE_DIR=str(ccache_dir)),
                         capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


@needs_ccache
def test_ccache_serves_a_second_work_folder(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, expect="5")
    code, out, _ = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert f"CCACHE_DIR={cache_dir(tmp_path) / 'ccache'}" in out
    assert "CMAKE_C_COMPILER_LAUNCHER=" in out
    assert build(cli, recipe, tmp_path, rocm61, "--no-cache")[0] == 0
    before = _ccache_stats(cache_dir(tmp_path) / "ccache")
    assert before.get("cache_miss", 0) >= 1
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--no-cache", work="w2")
    assert code == 0, err
    after = _ccache_stats(cache_dir(tmp_path) / "ccache")
    hits = after.get("direct_cache_hit", 0) + after.get("preprocessed_cache_hit", 0)
    assert hits >= 1 and after.get("cache_miss", 0) == before["cache_miss"]


@needs_ccache
@pytest.mark.hipcc
def test_ccache_catches_hipcc_called_by_name(cli, tmp_path):
    src = tmp_path / "kernels"
    src.mkdir()
    (src / "k.hip").write_text("#include <hip/hip_runtime.h>\n"
                               "__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    (src / "Makefile").write_text("k.o: k.hip\n\thipcc --offload-arch=gfx90a -c k.hip -o k.o\n")
    recipe = tmp_path / "kernels.yaml"
    recipe.write_text("schema: 1\nname: kernels\nversion: '1'\noutput: tree\nsource:\n  path: kernels\n"
                      "requires:\n  tools: [hipcc, make]\nsteps:\n  - make: {target: k.o}\n")
    for work in ("w1", "w2"):
        code, _, err = cli("build", recipe, "--arch", "gfx90a", "--work", tmp_path / work)
        assert code == 0, err
        assert (tmp_path / work / "src" / "k.o").stat().st_size > 0
    link = cache_dir(tmp_path) / "ccache" / "bin" / "hipcc"
    assert os.readlink(link) == shutil.which("ccache")
    stats = _ccache_stats(cache_dir(tmp_path) / "ccache")
    assert stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0) == 1
    assert stats.get("cache_miss", 0) == 1


def test_the_target_torch_is_part_of_the_key(tmp_path, rocm61, monkeypatch):
    """mamba-ssm built against torch 2.4 must not be reused for torch 2.5 in the same venv."""
    from rocbuild.cli.app import build_parser
    from rocbuild.cli.build import make_build_plan
    from rocbuild.cli.common import Invocation
    from rocbuild.engine.identity import build_identity, toolchain_of
    from rocbuild.engine.requirements import probe_torch
    from rocbuild.process.runner import Runner
    from tests.pyenv_trees import TORCHES, make_venv

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    python, site = make_venv(tmp_path / "venv", "rocm6.1")

    def key() -> str:
        args = build_parser().parse_args(["build", "mamba-ssm", "--arch", "gfx90a", "--rocm", str(rocm61),
                                          "--python", str(python), "--work", str(tmp_path / "w")])
        plan = make_build_plan(args, Invocation(dict(os.environ), None, ()))
        env = probe_torch(plan, Runner(), tmp_path / "probe.log")  # the engine's own probe, really run
        toolchain = toolchain_of(plan.host.rocm, lambda argv: None)
        return build_identity(plan, "0" * 40, toolchain, env.torch if env else None, {}).key()

    before = key()
    assert key() == before
    version_py = site / "torch" / "version.py"
    old, new = TORCHES["rocm6.1"][0], "2.4.1+rocm6.1"
    version_py.write_text(version_py.read_text().replace(old, new))
    assert key() != before


def test_a_rocm_component_that_changes_runs_the_build_again(cli, tmp_path, repo, rocm61):
    """Two real versions of one component (rocprim's CMake package in the ROCm prefix): a downgrade is
    seen, the work folder starts afresh and the build cache is not used; the plan lists what is held."""
    config = rocm61 / "lib" / "cmake" / "rocprim"
    config.mkdir(parents=True)
    (config / "rocprim-config.cmake").write_text("# rocprim\n")
    (config / "rocprim-config-version.cmake").write_text('set(PACKAGE_VERSION "4.2.0")\n')
    recipe = write_recipe(tmp_path, repo, expect="5")
    code, out, _ = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--json")
    assert json.loads(out)["components"] == {"rocprim": "4.2.0"}
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 0 and "[1/5] cmake  (skipped" in err or "build cache  hit" in err  # the control: unchanged

    (config / "rocprim-config-version.cmake").write_text('set(PACKAGE_VERSION "3.4.0")\n')
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 0, err
    assert "build cache  hit" not in err and "[1/5] cmake  (skipped" not in err
    assert "ROCm components: rocprim 4.2.0 -> 3.4.0" in err
    code, out, _ = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert "ROCm components (in the build identity: a change runs the build again): rocprim 3.4.0" in out
