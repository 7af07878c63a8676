"""The horovod recipe's choices, planned against stand-in torch installs of several releases (real
venvs whose torch is a stand-in tree): the C++ standard the plugin is compiled with, when torch is
required, the plugin import check, and the refusal of a build that could only make an empty wheel."""

from __future__ import annotations

import json

import pytest

from tests.pyenv_trees import make_venv


def plan_json(cli, *args) -> dict:
    code, out, err = cli("plan", "--json", "horovod", "--arch", "gfx90a", *args)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("torch, standard", [("rocm5.6", "14"), ("rocm6.1", "17"), ("rocm6.2", "17"),
                                             ("rocm7.2", "20")])
def test_cxx_standard_follows_the_target_torch(cli, tmp_path, rocm61, torch, standard):
    python, _ = make_venv(tmp_path / "venv", torch)
    plan = plan_json(cli, "--rocm", rocm61, "--python", python)
    assert plan["env"]["HOROVOD_TORCH_CXX_STANDARD"] == standard
    assert plan["requirements"]["torch"] == "rocm"
    assert any(p.get("name") == "horovod/0001-torch-cxx-standard-from-the-build.patch" for p in plan["patches"])


def test_no_torch_no_standard_and_torch_required(cli, tmp_path, rocm61):
    python, _ = make_venv(tmp_path / "venv", None)
    plan = plan_json(cli, "--rocm", rocm61, "--python", python)
    assert "HOROVOD_TORCH_CXX_STANDARD" not in plan["env"]
    assert plan["requirements"]["torch"] == "rocm" and plan["requirements"]["torch_check_argv"]


def test_torch_required_and_imported_only_for_the_pytorch_plugin(cli, tmp_path, rocm61):
    python, _ = make_venv(tmp_path / "venv", "rocm7.2")
    with_torch = plan_json(cli, "--rocm", rocm61, "--python", python)
    imports = [c for c in with_torch["verify"] if c["kind"] == "import"]
    assert [c["module"] for c in imports] == ["horovod.torch"]
    tf = plan_json(cli, "--rocm", rocm61, "--python", python, "--set", "frameworks=tensorflow")
    assert tf["requirements"]["torch"] is None and tf["requirements"]["torch_check_argv"] is None
    assert "HOROVOD_TORCH_CXX_STANDARD" not in tf["env"]
    assert not [c for c in tf["verify"] if c["kind"] == "import"]
    assert [s["name"] for s in tf["steps"]] == ["wheel"]


def test_frameworks_none_refused_before_anything_runs(cli, tmp_path, rocm61):
    src = tmp_path / "horovod"
    src.mkdir()
    (src / "setup.py").write_text("raise SystemExit('must not run')\n")
    work, out = tmp_path / "work", tmp_path / "wh"
    code, _, err = cli("build", "horovod", "--arch", "gfx90a", "--rocm", rocm61, "--set", "frameworks=none",
                       "--source-dir", src, "--work", work, "--out", out)
    assert code == 2, err
    assert "frameworks=none" in err and "holds no library" in err and "horovod.yaml" in err
    assert "--until" in err and "unsupported[0]" in err
    assert not work.exists() and not out.exists()
    # The same refusal in plan, also when --until reaches the wheel step.
    for until in ((), ("--until", "wheel")):
        code, _, err = cli("plan", "horovod", "--arch", "gfx90a", "--rocm", rocm61, "--set", "frameworks=none", *until)
        assert code == 2 and "holds no library" in err


def test_frameworks_none_until_kernels_plans_the_kernel_library(cli, tmp_path, rocm61):
    plan = plan_json(cli, "--rocm", rocm61, "--set", "frameworks=none", "--until", "kernels")
    assert [s["name"] for s in plan["steps"]] == ["configure", "kernels", "wheel"]
    configure, kernels, _ = plan["steps"]
    assert configure["argv"][:2] == ["cmake", "-S"]
    assert "-DCMAKE_LIBRARY_OUTPUT_DIRECTORY_RELWITHDEBINFO=" + plan["work"] + "/build/horovod/lib" in configure["argv"]
    assert kernels["argv"][kernels["argv"].index("--target") + 1] == "horovod_cuda_kernels"
    assert plan["requirements"]["torch"] is None
