"""The build identity: what changes it (and so the cache key and the reuse of a work folder), and what
must not. Pure: plans are made for faithful fake ROCm trees and no process starts."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from rocbuild.cli.app import build_parser
from rocbuild.cli.build import make_build_plan
from rocbuild.cli.common import Invocation
from rocbuild.detect.python import PythonInfo
from rocbuild.detect.torch import TorchInfo
from rocbuild.engine.identity import (
    PACKAGE,
    RULE_MODULES,
    BuildIdentity,
    build_identity,
    host_build_env,
    rules_digest,
    toolchain_of,
)
from rocbuild.plan.model import Plan
from tests.conftest import make_rocm_tree


def plan_of(rocm: Path, *extra: str, recipe: str = "horovod") -> Plan:
    args = build_parser().parse_args(["plan", recipe, "--rocm", str(rocm), "--arch", "gfx90a", *extra])
    return make_build_plan(args, Invocation(dict(os.environ), None, ()))


def identity_of(plan: Plan, *, env: dict[str, str] | None = None, source: str = "0" * 40,
                versions: dict[str, str] | None = None, torch: TorchInfo | None = None) -> BuildIdentity:
    """`versions`: what `TOOL --version` answers, by tool file name (nothing runs)."""
    answers = versions or {}
    toolchain = toolchain_of(plan.host.rocm, lambda argv: answers.get(Path(argv[0]).name))
    return build_identity(plan, source, toolchain, torch, env or {})


def test_where_and_how_fast_do_not_change_it(rocm61, tmp_path, monkeypatch):
    base = identity_of(plan_of(rocm61))
    assert identity_of(plan_of(rocm61, "-j", "7")) == base
    assert identity_of(plan_of(rocm61, "--work", str(tmp_path / "elsewhere"), "--out", str(tmp_path / "wh"))) == base
    monkeypatch.setenv("ROCBUILD_CCACHE", "0")
    assert identity_of(plan_of(rocm61)) == base
    monkeypatch.setenv("PATH", "/somewhere/else:" + __import__("os").environ["PATH"])
    assert identity_of(plan_of(rocm61)).key() == base.key()
    assert identity_of(plan_of(rocm61), env={"HOME": "/elsewhere", "TERM": "dumb"}) == base


def test_every_input_changes_the_key(rocm61, tmp_path):
    plan = plan_of(rocm61)
    base = identity_of(plan)
    other_python = dataclasses.replace(plan_of(rocm61), host=dataclasses.replace(
        plan.host, python=PythonInfo(plan.host.python.executable, "3.12", "cp312")))
    changed = {
        "arch": identity_of(plan_of(rocm61, "--arch", "gfx1100")),
        "rocm release": identity_of(plan_of(make_rocm_tree(tmp_path / "o", "6.2.0"))),
        "label": identity_of(plan_of(rocm61, "--local-version", "none")),
        "CXXFLAGS": identity_of(plan, env={"CXXFLAGS": "-O3"}),
        "hipcc flags": identity_of(plan, env={"HIPCC_COMPILE_FLAGS_APPEND": "--offload-compress"}),
        "python": identity_of(other_python),
        "commit": identity_of(plan, source="1" * 40),
        "compiler": identity_of(plan, versions={"clang++": "clang version 22.1.0"}),
        "hipcc": identity_of(plan, versions={"hipcc": "HIP version: 7.2.53211"}),
        "option": identity_of(plan_of(rocm61, "--set", "frameworks=none")),
    }
    for what, identity in changed.items():
        assert identity.key() != base.key(), what


def test_the_tree_is_reused_only_while_the_toolchain_and_environment_hold(rocm61):
    plan = plan_of(rocm61)
    base = identity_of(plan)
    for what, identity in {
        "compiler": identity_of(plan, versions={"clang++": "clang version 22.1.0"}),
        "host variable": identity_of(plan, env={"HIPCC_COMPILE_FLAGS_APPEND": "--offload-compress"}),
        "source": identity_of(plan, source="1" * 40),
    }.items():
        assert identity.tree_digest() != base.tree_digest(), what
    # A new label or check changes the key (another wheel) but not what the tree was built from.
    relabelled = identity_of(plan_of(rocm61, "--local-version", "none"))
    assert relabelled.tree_digest() == base.tree_digest() and relabelled.key() != base.key()


def test_a_changed_recipe_env_changes_it(rocm61, tmp_path):
    text = Path(plan_of(rocm61, recipe="hello-hip").recipe.path).read_text()
    recipe = tmp_path / "hello-hip.yaml"
    recipe.write_text(text.replace("path: ../examples/hello-hip", "path: /nowhere"))
    base = identity_of(plan_of(rocm61, recipe=str(recipe)))
    recipe.write_text(recipe.read_text() + "env:\n  HIPCC_COMPILE_FLAGS_APPEND: --offload-compress\n")
    with_env = identity_of(plan_of(rocm61, recipe=str(recipe)))
    assert with_env.env["HIPCC_COMPILE_FLAGS_APPEND"] == "--offload-compress"
    assert with_env.tree_digest() != base.tree_digest()


def test_the_target_torch_counts_for_torch_recipes_only(rocm61):
    torch = TorchInfo("/site/torch", "2.4.0+rocm6.1", "6.1.40091", None)
    newer = dataclasses.replace(torch, version="2.4.1+rocm6.1")
    mamba = plan_of(rocm61, recipe="mamba-ssm")
    assert identity_of(mamba, torch=torch).key() != identity_of(mamba, torch=newer).key()
    assert identity_of(mamba, torch=torch).python.torch == {"version": "2.4.0+rocm6.1", "hip": "6.1.40091",
                                                            "cuda": None}
    # Horovod needs torch only for its PyTorch plugin.
    horovod_tf = plan_of(rocm61, "--set", "frameworks=tensorflow")
    assert identity_of(horovod_tf, torch=torch) == identity_of(horovod_tf, torch=newer)
    horovod = plan_of(rocm61)
    assert identity_of(horovod, torch=torch).key() != identity_of(horovod, torch=newer).key()


def test_host_build_env_picks_compiler_inputs():
    env = {"CC": "clang", "CFLAGS": "-O2", "HIP_CLANG_PATH": "/x", "PYTORCH_ROCM_ARCH": "gfx90a",
           "HIPCC_COMPILE_FLAGS_APPEND": "--offload-compress",
           "CMAKE_CXX_COMPILER_LAUNCHER": "ccache", "HOME": "/root", "CCACHE_DIR": "/c", "LANG": "C"}
    assert host_build_env(env) == {"CC": "clang", "CFLAGS": "-O2", "HIPCC_COMPILE_FLAGS_APPEND": "--offload-compress",
                                   "HIP_CLANG_PATH": "/x", "PYTORCH_ROCM_ARCH": "gfx90a"}


def test_an_extra_sources_commit_counts_and_none_leaves_the_identity_as_it_was(rocm61):
    """An `extra-sources:` tree is part of what the build is made from: its resolved commit changes the key and
    the tree digest. A recipe without any serialises no such field, so its keys and work folders stay what
    they were before extra sources existed."""
    plan = plan_of(rocm61)
    toolchain = toolchain_of(plan.host.rocm, lambda argv: None)
    bare = build_identity(plan, "0" * 40, toolchain, None, {})
    assert "extra_sources" not in bare.to_json()
    one = build_identity(plan, "0" * 40, toolchain, None, {}, extra_sources={"triton": "1" * 40})
    other = build_identity(plan, "0" * 40, toolchain, None, {}, extra_sources={"triton": "2" * 40})
    assert len({bare.key(), one.key(), other.key()}) == 3
    assert len({bare.tree_digest(), one.tree_digest(), other.tree_digest()}) == 3


def test_a_module_added_to_the_build_environment_builds_the_wheel_again(rocm61):
    """requires.python is what the wheel step's environment holds (inplace-abn's setuptools_scm decides its
    version): a changed list is a new tree digest, so the step is not skipped as done."""
    plan = plan_of(rocm61)
    assert plan.build_env is not None
    more = dataclasses.replace(plan, build_env=dataclasses.replace(plan.build_env,
                                                                   modules=(*plan.build_env.modules, "setuptools_scm")))
    assert identity_of(more).tree_digest() != identity_of(plan).tree_digest()
    assert "setuptools_scm" in identity_of(more).to_json()["build_env"]


def test_a_changed_build_rule_builds_again_and_starts_the_tree_afresh(rocm61, tmp_path):
    """A rule of rocbuild's own that shapes the wheel (how the build environment is made) is part of the
    identity: a wheel built under the old rule is not served from the cache, nor its work folder resumed."""
    rules = [tmp_path / "engine" / "buildenv.py", tmp_path / "plan" / "buildenv.py"]
    for path in rules:
        path.parent.mkdir()
        path.write_text("RULE = 1\n")
    before = rules_digest(rules)
    rules[1].write_text("RULE = 2\n")
    assert rules_digest(rules) != before
    # The same text under another folder's name is another rule set.
    rules[1].write_text("RULE = 1\n")
    assert rules_digest(rules[:1]) != rules_digest(rules[1:])

    base = identity_of(plan_of(rocm61))
    assert base.build_rules == rules_digest(PACKAGE / module for module in RULE_MODULES)
    other = dataclasses.replace(base, build_rules=before)
    assert other.key() != base.key() and other.tree_digest() != base.tree_digest()


def test_the_rule_modules_exist():
    """A rule module renamed or moved would otherwise drop out of the digest unnoticed."""
    for module in RULE_MODULES:
        assert (PACKAGE / module).is_file(), module
