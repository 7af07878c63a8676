"""The build cache key: what changes it, and what must not (pure: nothing runs)."""

from __future__ import annotations

import dataclasses

from rocbuild import plan as planning
from rocbuild.buildcache import build_env, cache_inputs, cache_key
from rocbuild.cli import build_parser
from rocbuild.commands import make_build_plan
from rocbuild.detect.python import PythonInfo
from rocbuild.recipe import load_recipe


def key_of(rocm, *extra, env=None) -> str:
    args = build_parser().parse_args(["plan", "horovod", "--rocm", str(rocm), "--arch", "gfx90a", *extra])
    plan = make_build_plan(args)
    return cache_key(cache_inputs(plan.cache_basis, "0" * 40, env or {}))


def test_where_and_how_fast_do_not_change_the_key(rocm61, tmp_path, monkeypatch):
    base = key_of(rocm61)
    assert key_of(rocm61, "-j", "7") == base
    assert key_of(rocm61, "--work", str(tmp_path / "elsewhere"), "--out", str(tmp_path / "wh")) == base
    monkeypatch.setenv("ROCBUILD_CCACHE", "0")
    assert key_of(rocm61) == base
    monkeypatch.setenv("PATH", "/somewhere/else:" + __import__("os").environ["PATH"])
    assert key_of(rocm61) == base


def test_inputs_change_the_key(rocm61, tmp_path):
    from tests.conftest import make_rocm_tree

    base = key_of(rocm61)
    assert key_of(rocm61, "--arch", "gfx1100") != base
    assert key_of(make_rocm_tree(tmp_path / "o", "6.2.0")) != base
    assert key_of(rocm61, "--local-version", "none") != base
    assert key_of(rocm61, env={"CXXFLAGS": "-O3"}) != base
    assert key_of(rocm61, env={"HOME": "/elsewhere", "TERM": "dumb"}) == base  # not build inputs
    args = build_parser().parse_args(["plan", "horovod", "--rocm", str(rocm61), "--arch", "gfx90a"])
    plan = make_build_plan(args)
    other_python = dataclasses.replace(plan.host, python=PythonInfo(plan.host.python.executable, "3.12", "cp312"))
    basis = planning.cache_basis(load_recipe(plan.recipe.path), other_python, plan.options)
    assert cache_key(cache_inputs(basis, "0" * 40, {})) != base
    assert cache_key(cache_inputs(plan.cache_basis, "1" * 40, {})) != base  # another commit


def test_build_env_picks_compiler_inputs():
    env = {"CC": "clang", "CFLAGS": "-O2", "HIP_CLANG_PATH": "/x", "PYTORCH_ROCM_ARCH": "gfx90a",
           "CMAKE_CXX_COMPILER_LAUNCHER": "ccache", "HOME": "/root", "CCACHE_DIR": "/c", "LANG": "C"}
    assert build_env(env) == {"CC": "clang", "CFLAGS": "-O2", "HIP_CLANG_PATH": "/x", "PYTORCH_ROCM_ARCH": "gfx90a"}
