"""Plans of the shipped recipes against faithful fake ROCm trees (pure: nothing runs)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import make_rocm_tree


def plan_json(cli, *args):
    code, out, err = cli("plan", *args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("archs", ["gfx1100", "gfx90a,gfx1100"])
def test_bitsandbytes_plan(cli, rocm61, tmp_path, archs):
    plan = plan_json(cli, "bitsandbytes", "--arch", archs, "--rocm", rocm61, "--work", tmp_path / "w", "-j", "3")
    src, build = str(tmp_path / "w" / "src"), str(tmp_path / "w" / "build")
    cmake, cmake_build, wheel = plan["steps"]
    assert cmake["argv"][:5] == ["cmake", "-S", src, "-B", build]
    assert f"-DBNB_ROCM_ARCH={archs.replace(',', ';')}" in cmake["argv"]
    assert "-DCOMPUTE_BACKEND=hip" in cmake["argv"] and "-DCMAKE_BUILD_TYPE=MinSizeRel" in cmake["argv"]
    assert f"-DCMAKE_HIP_COMPILER={rocm61}/lib/llvm/bin/clang++" in cmake["argv"]
    assert cmake_build["argv"] == ["cmake", "--build", build, "--parallel", "3"]
    assert wheel["argv"][1:7] == ["-m", "pip", "wheel", src, "--no-deps", "--no-build-isolation"]
    assert wheel["env"] == {"BNB_SKIP_CMAKE": "1"}
    assert plan["env"]["ROCM_PATH"] == str(rocm61) and plan["env"]["HIP_PLATFORM"] == "amd"
    assert plan["requirements"]["cmake_packages"] == ["hipblas", "hiprand", "hipblaslt", "rocblas", "hipcub"]
    assert plan["source"]["commit"] == "37d2a9387f7146ccb85517ff45c665d345bfda79"
    assert plan["archs"] == archs.split(",")


def test_bitsandbytes_other_ref_drops_the_pin(cli, rocm61, tmp_path):
    plan = plan_json(cli, "bitsandbytes", "--arch", "gfx1100", "--rocm", rocm61, "--ref", "main")
    assert plan["source"]["ref"] == "main" and plan["source"]["commit"] is None


def test_bitsandbytes_compact_option(cli, rocm61, tmp_path):
    """Upstream's release builds (MinSizeRel, compressed device code) by default; Release on request."""
    default = plan_json(cli, "bitsandbytes", "--arch", "gfx1100", "--rocm", rocm61)["steps"][0]["argv"]
    assert "-DCMAKE_BUILD_TYPE=MinSizeRel" in default and "-DCMAKE_HIP_FLAGS=--offload-compress" in default
    plain = plan_json(cli, "bitsandbytes", "--arch", "gfx1100", "--rocm", rocm61, "--set", "compact=off")
    argv = plain["steps"][0]["argv"]
    assert "-DCMAKE_BUILD_TYPE=Release" in argv and "-DCMAKE_HIP_FLAGS=" in argv


@pytest.mark.parametrize("archs", ["gfx1100", "gfx90a,gfx1100"])
def test_horovod_plan_rocm61(cli, rocm61, archs):
    plan = plan_json(cli, "horovod", "--arch", archs, "--rocm", rocm61)
    env = plan["env"]
    assert env["HOROVOD_GPU"] == "ROCM" and env["HOROVOD_GPU_OPERATIONS"] == "NCCL"
    assert env["HOROVOD_ROCM_HOME"] == str(rocm61)
    assert env["HCC_AMDGPU_TARGET"] == archs
    assert env["HOROVOD_BUILD_ARCH_FLAGS"] == "-mtune=generic"
    assert env["HOROVOD_WITH_PYTORCH"] == "1" and env["HOROVOD_WITHOUT_TENSORFLOW"] == "1"
    assert "HIP_PATH" not in env  # only for distro layouts
    kinds = [p["kind"] for p in plan["patches"]]
    # link FindHIP, rccl.h, four header fixes for newer compilers, then the two diffs
    assert kinds == ["link", "replace", "replace", "replace", "replace", "replace", "diff", "diff"]
    assert env["CMAKE_POLICY_VERSION_MINIMUM"] == "3.5"
    assert plan["patches"][0]["from"] == f"{rocm61}/lib/cmake/hip/FindHIP*"
    assert plan["patches"][1]["with"] == "#include <rccl/rccl.h>"
    verify = {v["name"]: v for v in plan["verify"]}
    assert verify["check-build"]["argv"] == ["horovodrun", "--check-build"]
    # every wheel build gets the built-in device-code check, for the build's archs
    assert plan["verify"][0]["kind"] == "code-objects" and plan["verify"][0]["archs"] == archs.split(",")
    assert plan["local_version"] == "rocm6.1"
    assert "rccl" in plan["requirements"]["cmake_packages"]


def test_horovod_plan_old_rocm_layout(cli, tmp_path):
    old = make_rocm_tree(tmp_path, "5.1.3")
    plan = plan_json(cli, "horovod", "--arch", "gfx90a", "--rocm", old, "--set", "frameworks=none", "--until", "kernels")
    assert plan["patches"][0]["from"] == f"{old}/hip/cmake/FindHIP*"
    # rccl.h stays: no rccl/ there
    assert [p["kind"] for p in plan["patches"]] == ["link", "replace", "replace", "replace", "replace", "diff", "diff"]
    assert plan["env"]["HOROVOD_WITHOUT_PYTORCH"] == "1"
    assert "torch" not in plan["requirements"]["python_modules"]


def test_plan_text_shows_argv(cli, rocm61):
    code, out, _ = cli("plan", "bitsandbytes", "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 0
    assert '"-DBNB_ROCM_ARCH=gfx90a"' in out and "argv: [" in out


def test_dry_run_is_plan(cli, rocm61, tmp_path):
    code, out, _ = cli("build", "horovod", "--arch", "gfx90a", "--rocm", rocm61, "--dry-run", "--out", tmp_path / "wh")
    assert code == 0 and "plan: horovod" in out
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("args,code,fragment", [
    (["--set", "framework=pytorch"], 2, "did you mean 'frameworks'"),
    (["--set", "frameworks=jax"], 2, "'jax' is not allowed"),
    (["--set", "frameworks"], 2, "expected NAME=VALUE"),
    (["--ref", "--upload-pack=touch /tmp/x"], 2, "not a valid git ref"),
    (["--jobs", "0"], 2, "must be 1 or more"),
    (["--arch", "gfx1100;gfx90a"], 2, "separate several targets with commas"),
])
def test_bad_values(cli, rocm61, args, code, fragment):
    got, _, err = cli("plan", "horovod", "--rocm", rocm61, *(["--arch", "gfx90a"] if "--arch" not in args else []), *args)
    assert got == code
    assert fragment in err
    assert "Traceback" not in err


def test_unknown_recipe_suggests(cli):
    code, _, err = cli("plan", "horovd", "--arch", "gfx90a")
    assert code == 2 and "did you mean: horovod" in err


def test_no_rocm_exits_3(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "missing"))
    code, _, err = cli("plan", "horovod", "--arch", "gfx90a")
    assert code == 3 and "not a ROCm install" in err


def test_user_recipes_dir_shadows_builtin(cli, tmp_path, rocm61):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "horovod.yaml").write_text("schema: 1\nname: horovod\nversion: 9.9\nsource: {path: .}\n"
                                    "steps:\n  - run: [python, -V]\n")
    code, out, _ = cli("recipes", "--recipes", d)
    assert code == 0
    line = next(row for row in out.splitlines() if row.startswith("horovod"))
    assert "9.9" in line and "--recipes" in line
    plan = plan_json(cli, "horovod", "--recipes", d, "--arch", "gfx90a", "--rocm", rocm61)
    assert plan["recipe"]["version"] == "9.9"


def test_hello_hip_plan(cli, rocm61, tmp_path):
    plan = plan_json(cli, "hello-hip", "--arch", "gfx90a,gfx1030", "--rocm", rocm61, "--work", tmp_path / "w")
    (wheel,) = plan["steps"]
    assert f"--config-settings=cmake.define.CMAKE_CXX_COMPILER={rocm61}/bin/hipcc" in wheel["argv"]
    assert "--config-settings=cmake.define.HIP_ARCHITECTURES=gfx90a;gfx1030" in wheel["argv"]
    assert plan["source"]["kind"] == "dir" and plan["source"]["directory"].endswith("examples/hello-hip")
    assert plan["local_version"] == "rocm6.1"
    checks = {v["name"]: v for v in plan["verify"]}
    assert checks["device-code"]["archs"] == ["gfx90a", "gfx1030"]
    assert checks["kernel-module"]["files"] == ["hello_hip/_core*.so"]
    assert checks["import"]["argv"][-1] == "hello_hip" and checks["import"]["kind"] == "import"


@pytest.mark.parametrize("recipe_line, cli_args, expected", [
    ("", [], "rocm6.1"),                                            # default: the ROCm release
    ('local-version: "rocm${{ rocm.version.major }}"', [], "rocm6"),  # the recipe's template
    ('local-version: ""', [], None),                                # the recipe drops it
    ("", ["--local-version", "mybuild.3"], "mybuild.3"),           # the command line wins
    ('local-version: "rocm6"', ["--local-version", "none"], None),
])
def test_local_version(cli, rocm61, tmp_path, recipe_line, cli_args, expected):
    (tmp_path / "recipes").mkdir()
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.write_text("schema: 1\nname: demo\nversion: '1.0'\nsource: {path: .}\nsteps:\n  - wheel: {}\n"
                      f"{recipe_line}\nverify:\n  - code-objects: false\n")
    plan = plan_json(cli, str(recipe), "--arch", "gfx90a", "--rocm", rocm61, *cli_args)
    assert plan["local_version"] == expected
    # code-objects: false keeps the CUDA check but asks for no device code
    assert [(v["kind"], v["archs"]) for v in plan["verify"]] == [("code-objects", [])]


@pytest.mark.parametrize("section, key, line", [
    ("env:\n  X:\n    value: a\n    when: \"${{ jobs }}\"\n", "env.X.when", 8),
    ("requires:\n  tools:\n    - name: cmake\n      when: \"${{ jobs }}\"\n", "requires.tools[0].when", 8),
    ("patches:\n  - replace: {file: a, find: b, with: c}\n    when: \"${{ jobs }}\"\n", "patches[0].when", 7),
])
def test_a_when_error_points_at_the_when(cli, rocm61, tmp_path, section, key, line):
    """D36: the message names the `when:` key and its line, not the value's."""
    (tmp_path / "recipes").mkdir()
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.write_text("schema: 1\nname: demo\nversion: '1.0'\nsource: {path: .}\n" + section
                      + "steps:\n  - run: [echo]\n")
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 2
    assert err.startswith(f"{recipe}:{line}:") and f"error: {key}: `when` must render to true or false" in err, err


def test_an_invalid_ref_is_refused_at_load_with_its_line(cli, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("schema: 1\nname: r\nversion: '1'\nsource:\n  git: https://example.invalid/r.git\n"
                      "  ref: ../x\nsteps:\n  - run: [echo]\n")
    code, _, err = cli("recipes", "lint", recipe)
    assert code == 2 and err.startswith(f"{recipe}:6:8: error: source.ref:"), err


def test_an_unsupported_combination_is_refused_before_anything_runs(cli, tmp_path):
    rocm70 = make_rocm_tree(tmp_path / "r7", "7.0.0")
    code, _, err = cli("plan", "mamba-ssm", "--arch", "gfx942", "--rocm", rocm70, "--set", "pins=torch2.4")
    assert code == 2
    assert "mamba-ssm cannot be built with ROCm 7.0.0 and pins=torch2.4" in err and "use pins=current" in err
    assert "mamba-ssm.yaml:" in err  # where the recipe says so
    code, _, err = cli("plan", "mamba-ssm", "--arch", "gfx942", "--rocm", rocm70)
    assert code == 0, err
    rocm61 = make_rocm_tree(tmp_path / "r6", "6.1.0")
    code, _, err = cli("plan", "mamba-ssm", "--arch", "gfx942", "--rocm", rocm61, "--set", "pins=torch2.4")
    assert code == 0, err


def test_unsupported_entries_need_a_reason(cli, tmp_path):
    recipe = tmp_path / "x.yaml"
    recipe.write_text("schema: 1\nname: x\nversion: '1'\noutput: tree\nsource: {path: .}\n"
                      "unsupported:\n  - when: \"${{ true }}\"\n")
    code, _, err = cli("plan", recipe, "--arch", "gfx90a")
    assert code == 2 and "unsupported[0]" in err and "why" in err
