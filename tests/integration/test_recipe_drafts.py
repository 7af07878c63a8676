"""`rocbuild recipes new NAME --sdist NAME==VERSION` on real sdists from PyPI: the draft lints, and its plan
turns the GPU backend on for the requested archs; a project without a HIP switch is said to have none."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.network


@pytest.mark.parametrize("name, requirement, expect", [
    ("lightgbm", "lightgbm==4.7.0", {"define": {"USE_ROCM": "ON", "CMAKE_HIP_ARCHITECTURES": "gfx1100;gfx942"}}),
    ("cupy", "cupy==14.2.0", {"env": {"CUPY_INSTALL_USE_HIP": "1", "HCC_AMDGPU_TARGET": "gfx1100,gfx942"}}),
])
def test_a_draft_from_an_sdist_turns_the_backend_on(cli, tmp_path, rocm61, name, requirement, expect):
    out = tmp_path / f"{name}.yaml"
    code, _, err = cli("recipes", "new", name, "--sdist", requirement, "-o", out)
    assert code == 0, err
    assert cli("recipes", "lint", out)[0] == 0
    code, text, err = cli("plan", out, "--arch", "gfx1100,gfx942", "--rocm", rocm61, "--json")
    assert code == 0, err
    plan = json.loads(text)
    argv = plan["steps"][0]["argv"]
    for key, value in expect.get("define", {}).items():
        assert f"--config-settings=cmake.define.{key}={value}" in argv
    for key, value in expect.get("env", {}).items():
        assert plan["env"][key] == value
    assert plan["source"]["kind"] == "sdist" and plan["source"]["sha256"]


def test_an_sdist_that_compiles_nothing_is_refused_with_the_pip_command(cli, tmp_path):
    # tomli_w is pure Python: there is nothing to build for a GPU (a project with sources but no HIP switch gets
    # a draft that says so: tests/unit/test_draft_tree.py)
    out = tmp_path / "tomli-w.yaml"
    code, _, err = cli("recipes", "new", "tomli-w", "--sdist", "tomli_w==1.2.0", "-o", out)
    assert code == 2 and "tomli_w==1.2.0 compiles nothing" in err and "pip install tomli_w==1.2.0" in err
    assert not out.exists() and "Traceback" not in err


def test_a_bad_sdist_requirement_is_refused(cli, tmp_path):
    code, _, err = cli("recipes", "new", "x", "--sdist", "x>=1", "-o", tmp_path / "x.yaml")
    assert code == 2 and "--sdist 'x>=1': not NAME==VERSION" in err and not (tmp_path / "x.yaml").exists()
