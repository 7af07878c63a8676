"""flash-attn and DeepSpeed recipes: planned against stand-in ROCm trees and ROCm torches, and prepared from
the real sdists (network) to show every patch applies there.

No ROCm torch can be installed here, so nothing is compiled: the plans show what each build would be given,
the refusals show that nothing runs, and the patched DeepSpeed op builder is run with rocminfo stood in for.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import make_rocm_tree
from tests.pyenv_trees import make_venv

FLASH_SDIST = ("flash-attn==2.8.3.post2", "d0f9f0b08a986cdeadbffcf5ec8b3a8f514366c68ad1853d3ab061bc83cc340b")
DS_SDIST = ("deepspeed==0.19.8", "9e491abd0827ea5c389dd702e15e11e13d83d904bac4a20d6c2a4cb37207a9af")
DS_OPS = ("FUSED_ADAM", "FUSED_LAMB", "FUSED_LION", "RANDOM_LTD", "QUANTIZER", "TRANSFORMER",
          "STOCHASTIC_TRANSFORMER", "TRANSFORMER_INFERENCE", "CPU_ADAM", "CPU_ADAGRAD", "CPU_LION")


def plan_json(cli, *args) -> dict:
    code, out, err = cli("plan", "--json", *args)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def rocm72(tmp_path_factory) -> Path:
    return make_rocm_tree(tmp_path_factory.mktemp("opt"), "7.2.0")


@pytest.fixture
def torch72(tmp_path) -> Path:
    python, _ = make_venv(tmp_path / "venv", "rocm7.2")  # torch 2.14: its headers need C++20
    return python


def _gated_venv(tmp_path: Path, flavour: str) -> Path:
    """A ROCm torch venv holding every build module, so that only the recipe itself can refuse."""
    python, site = make_venv(tmp_path / "venv", flavour)
    for module in ("setuptools", "wheel", "packaging", "ninja", "psutil"):
        (site / module).mkdir(exist_ok=True)
        (site / module / "__init__.py").write_text("")
    return python


def _tripwire_tree(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "setup.py").write_text("raise SystemExit('the build ran')\n")
    return root


def refused_before_anything_runs(cli, tmp_path: Path, recipe: str, archs: str, rocm: Path,
                                 src: Path | None = None) -> tuple[str, str]:
    """`build` (from `src`, a tripwire tree by default) and `plan` both refused with exit 2, nothing
    fetched or built; their messages."""
    python = _gated_venv(tmp_path, "rocm7.2")
    src = src or _tripwire_tree(tmp_path / recipe)
    code, _, built = cli("build", recipe, "--arch", archs, "--rocm", rocm, "--python", python,
                         "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh")
    assert code == 2, built
    assert not (tmp_path / "work" / "src").exists() and not (tmp_path / "wh").exists()
    code, _, planned = cli("plan", recipe, "--arch", archs, "--rocm", rocm, "--python", python)
    assert code == 2, planned
    return built, planned


# -- flash-attn ----------------------------------------------------------------------------------------


def test_flash_attn_plans_its_ck_backend_for_gfx942(cli, rocm72, torch72):
    plan = plan_json(cli, "flash-attn", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72)
    assert plan["source"]["kind"] == "sdist" and plan["source"]["requirement"] == FLASH_SDIST[0]
    assert plan["source"]["sha256"] == FLASH_SDIST[1]
    (step,) = plan["steps"]
    env = step["env"]
    assert env["BUILD_TARGET"] == "rocm" and env["GPU_ARCHS"] == "gfx942"
    assert env["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"  # else it downloads a prebuilt wheel
    assert "FLASH_ATTENTION_TRITON_AMD_ENABLE" not in env  # the CK backend
    assert "--no-build-isolation" in step["argv"]
    assert plan["env"]["PYTORCH_ROCM_ARCH"] == "gfx942" and plan["env"]["ROCM_HOME"] == str(rocm72)
    assert plan["requirements"]["torch"] == "rocm"
    # torch 2.14 needs C++20; setup.py asks for c++17 in four places
    (std,) = plan["patches"]
    assert (std["file"], std["find"], std["with"], std["count"]) == ("setup.py", '"-std=c++17"', '"-std=c++20"', 4)
    check = next(v for v in plan["verify"] if v["name"] == "kernels-are-rocm")
    assert check["files"] == ["flash_attn_2_cuda*.so"] and check["links"] == ["libamdhip64", "libc10_hip"]
    assert env["OPT_DIM"] == "32,64,128,256"  # upstream's default head dims


def test_flash_attn_head_dims_narrow_cks_generator(cli, rocm72, torch72):
    plan = plan_json(cli, "flash-attn", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                     "--set", "head_dims=128,64")
    assert plan["steps"][0]["env"]["OPT_DIM"] == "128,64"
    code, _, err = cli("plan", "flash-attn", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                       "--set", "head_dims=96")
    assert code == 2 and "head_dims" in err and "96" in err


def test_flash_attn_jobs_come_from_its_own_memory_estimate(cli, rocm72, torch72):
    """Upstream's heuristic: ~9 GB a job. 12 GiB holds one such job, whatever the cores (2 GiB, the default
    estimate, would give six)."""
    code, out, err = cli("plan", "flash-attn", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                         "--memory", "12GiB")
    assert code == 0, err
    assert "9.0 GiB per job by the recipe" in out
    plan = plan_json(cli, "flash-attn", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                     "--memory", "12GiB")
    assert plan["steps"][0]["env"]["MAX_JOBS"] == "1" and plan["env"]["CMAKE_BUILD_PARALLEL_LEVEL"] == "1"


@pytest.mark.parametrize("archs", ["gfx1100", "gfx942,gfx1201", "gfx908"])
def test_flash_attn_refuses_archs_its_release_rejects_before_anything_runs(cli, tmp_path, rocm72, archs):
    err, planned = refused_before_anything_runs(cli, tmp_path, "flash-attn", archs, rocm72)
    assert "accepts only gfx90a, gfx942 and gfx950" in err
    # names the upstream version that accepts RDNA, and the backend that serves it today
    assert "main from commit 5301a359" in err and "no PyPI release yet" in err
    assert "FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE" in err
    assert "5301a359" in planned


@pytest.mark.parametrize("archs", ["gfx90a", "gfx942", "gfx950", "gfx90a,gfx942,gfx950"])
def test_flash_attn_accepts_every_arch_of_its_allow_list(cli, rocm72, torch72, archs):
    plan = plan_json(cli, "flash-attn", "--arch", archs, "--rocm", rocm72, "--python", torch72)
    assert plan["steps"][0]["env"]["GPU_ARCHS"] == archs.replace(",", ";")


# -- DeepSpeed -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("archs, wave", [("gfx942", "64"), ("gfx90a,gfx950", "64"), ("gfx1100", "32"),
                                         ("gfx1201,gfx1030", "32")])
def test_deepspeed_wavefront_size_follows_the_archs(cli, rocm72, torch72, archs, wave):
    plan = plan_json(cli, "deepspeed", "--arch", archs, "--rocm", rocm72, "--python", torch72)
    assert plan["env"]["DS_ROCM_WAVEFRONT_SIZE"] == wave
    assert plan["env"]["PYTORCH_ROCM_ARCH"] == archs.replace(",", ";")
    # the patches that make the op builder read both instead of rocminfo (and give hipcc C++20 for a new torch)
    files = [(p["file"], "DS_ROCM_WAVEFRONT_SIZE" in p["with"]) for p in plan["patches"]]
    assert sorted(files) == sorted([("op_builder/builder.py", False), ("deepspeed/ops/op_builder/builder.py", False),
                                    ("op_builder/builder.py", True), ("deepspeed/ops/op_builder/builder.py", True)]
                                   + [("op_builder/builder.py", False), ("deepspeed/ops/op_builder/builder.py", False)] * 3)


def test_deepspeed_plans_its_named_ops_ahead_of_time(cli, rocm72, torch72):
    plan = plan_json(cli, "deepspeed", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72)
    assert plan["source"]["requirement"] == DS_SDIST[0] and plan["source"]["sha256"] == DS_SDIST[1]
    (step,) = plan["steps"]
    env = step["env"]
    # DS_BUILD_OPS=0: only the named ops; the ROCm op builders even with no GPU visible
    assert env["DS_BUILD_OPS"] == "0" and env["DS_ACCELERATOR"] == "cuda" and env["DS_ENABLE_NINJA"] == "1"
    assert {op: env[f"DS_BUILD_{op}"] for op in DS_OPS} == {op: "1" if op == "FUSED_ADAM" else "0" for op in DS_OPS}
    assert "--no-build-isolation" in step["argv"]
    # the host optimizers for every x86-64-v3 CPU, not this builder's (-march=native and its SIMD width)
    assert (plan["env"]["DS_CPU_MARCH"], plan["env"]["DS_CPU_SIMD"]) == ("-march=x86-64-v3", "-D__AVX256__")
    for level, simd in (("x86-64-v4", "-D__AVX512__"), ("x86-64-v2", "-D__SCALAR__")):
        env = plan_json(cli, "deepspeed", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                        "--set", f"cpu_level={level}")["env"]
        assert (env["DS_CPU_MARCH"], env["DS_CPU_SIMD"]) == (f"-march={level}", simd)
    native = plan_json(cli, "deepspeed", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                       "--set", "cpu_level=native")["env"]
    assert "DS_CPU_MARCH" not in native and "DS_CPU_SIMD" not in native
    checks = {v["name"]: v for v in plan["verify"]}
    assert checks["fused-adam-op-is-rocm"]["files"] == ["deepspeed/ops/adam/fused_adam_op*.so"]
    assert checks["fused-adam-op-is-rocm"]["links"] == ["libamdhip64", "libc10_hip"]
    assert [n for n in checks if n.endswith(("-op-is-rocm", "-op-in-wheel"))] == ["fused-adam-op-is-rocm"]
    assert checks["every-asked-op-compiled"]["argv"][-1] == "fused_adam"

    plan = plan_json(cli, "deepspeed", "--arch", "gfx1100", "--rocm", rocm72, "--python", torch72,
                     "--set", "ops=random_ltd,cpu_adam")
    env = plan["steps"][0]["env"]
    assert {op for op in DS_OPS if env[f"DS_BUILD_{op}"] == "1"} == {"RANDOM_LTD", "CPU_ADAM"}
    names = {v["name"]: v for v in plan["verify"]}
    # one check for each asked-for op only: device code for the GPU op, presence for the host one
    assert [n for n in names if n.endswith(("-op-is-rocm", "-op-in-wheel"))] == ["random-ltd-op-is-rocm",
                                                                               "cpu-adam-op-in-wheel"]
    assert names["random-ltd-op-is-rocm"]["files"] == ["deepspeed/ops/random_ltd_op*.so"]
    assert names["cpu-adam-op-in-wheel"]["glob"] == "deepspeed/ops/adam/cpu_adam_op*.so"
    assert names["every-asked-op-compiled"]["argv"][-1] == "random_ltd,cpu_adam"


def test_deepspeed_refuses_an_op_it_does_not_know(cli, rocm72, torch72):
    code, _, err = cli("plan", "deepspeed", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                       "--set", "ops=fused_adam,evoformer_attn")
    assert code != 0 and "evoformer_attn" in err


@pytest.mark.parametrize("archs", ["gfx942,gfx1100", "gfx1201,gfx90a"])
def test_deepspeed_refuses_wave64_and_wave32_archs_in_one_build(cli, tmp_path, rocm72, archs):
    err, _ = refused_before_anything_runs(cli, tmp_path, "deepspeed", archs, rocm72)
    assert "one ROCM_WAVEFRONT_SIZE for the whole build" in err and "Build one wheel for each kind" in err


# -- the real sdists -----------------------------------------------------------------------------------


@pytest.mark.network
def test_flash_attn_sdist_prepares_with_ck_and_cxx20(cli, tmp_path, rocm72, torch72):
    code, out, err = cli("prepare", "flash-attn", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                         "--work", tmp_path / "work")
    assert code == 0, err
    tree = Path(out.strip().splitlines()[-1])
    setup = (tree / "setup.py").read_text()
    assert setup.count('"-std=c++20"') == 4 and '"-std=c++17"' not in setup
    # what the recipe relies on is still there: the allow-list, its variables, CK in the sdist
    assert 'allowed_archs = ["native", "gfx90a", "gfx950", "gfx942"]' in setup
    assert 'os.getenv("GPU_ARCHS", "native").split(";")' in setup and 'os.environ.get("BUILD_TARGET"' in setup
    assert 'os.getenv("FLASH_ATTENTION_FORCE_BUILD", "FALSE") == "TRUE"' in setup
    assert "free_memory_gb / 9" in setup  # upstream's 9 GB a job, requires.memory-per-job
    assert (tree / "csrc/composable_kernel/example/ck_tile/01_fmha/generate.py").is_file()
    assert 'optdim = os.getenv("OPT_DIM", "32,64,128,256")' in setup  # the head_dims option
    assert 'name="flash_attn_2_cuda"' in setup  # the library the verify check names


@pytest.mark.network
def test_deepspeed_sdist_prepares_and_its_op_builder_needs_no_rocminfo(cli, tmp_path, rocm72, torch72):
    code, out, err = cli("prepare", "deepspeed", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                         "--work", tmp_path / "work")
    assert code == 0, err
    tree = Path(out.strip().splitlines()[-1])
    assert err.count("replaced 1") == 10, err
    for builder in ("op_builder/builder.py", "deepspeed/ops/op_builder/builder.py"):
        text = (tree / builder).read_text()
        assert text.count("rocbuild:") == 5
        # hipcc's standard follows torch's as cxx_args' does: C++20 from torch 2.12 (its headers need it)
        assert "'-std=c++17', '-U__HIP_NO_HALF_OPERATORS__'" not in text
        assert text.count("'-std=c++20' if (TORCH_MAJOR, TORCH_MINOR) >= (2, 12) else '-std=c++17'") == 2
    # the op's import path gives the library's name the verify check looks for
    assert "return f'deepspeed.ops.adam.{self.NAME}_op'" in (tree / "op_builder/fused_adam.py").read_text()
    # the build-time variables the recipe sets are read there
    setup = (tree / "setup.py").read_text()
    assert "get_env_if_set('DS_BUILD_OPS'" in setup and 'is_env_set("DS_ENABLE_NINJA")' in setup
    assert 'os.environ["DS_ACCELERATOR"]' in (tree / "accelerator/real_accelerator.py").read_text()

    # The patched op builder, run with no torch and rocminfo stood in for: absent, or a host GPU of the
    # other kind. The build's variables win; without them upstream's fallback (32, no arch) is left as it was.
    probe = textwrap.dedent("""
        import importlib.util, json, os, subprocess, sys
        mode = sys.argv[2]
        def fake(argv, **kw):
            if mode == "absent":
                raise FileNotFoundError(argv[0])
            return b"  Name:                    gfx1100\\n  Wavefront Size:          32(0x20)\\n"
        subprocess.check_output = fake
        spec = importlib.util.spec_from_file_location("ds_builder", sys.argv[1])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        # the host optimizers' flags, asked only with the variables set: upstream's own answer is this machine's CPU
        host = [mod.OpBuilder.cpu_arch(None), mod.OpBuilder.simd_width(None)] if "DS_CPU_MARCH" in os.environ else []
        print(json.dumps([mod.OpBuilder.get_rocm_wavefront_size(), mod.OpBuilder.get_rocm_gpu_arch(), *host]))
    """)

    def run(builder: str, mode: str, **env: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", probe, str(tree / builder), mode], capture_output=True,
                              text=True, env={"PATH": "/nonexistent", **env}, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    for builder in ("op_builder/builder.py", "deepspeed/ops/op_builder/builder.py"):
        wanted = {"DS_ROCM_WAVEFRONT_SIZE": "64", "PYTORCH_ROCM_ARCH": "gfx942", "DS_CPU_MARCH": "-march=x86-64-v3",
                  "DS_CPU_SIMD": "-D__AVX256__"}
        assert run(builder, "absent", **wanted) == ["64", "gfx942", "-march=x86-64-v3", "-D__AVX256__"]
        assert run(builder, "host-gpu", **wanted) == ["64", "gfx942", "-march=x86-64-v3", "-D__AVX256__"]
        assert run(builder, "absent") == ["32", ""]  # upstream's trap, kept when the variables are unset
        assert run(builder, "host-gpu") == ["32", "gfx1100"]

    # Each op's check names the library its builder gives it: absolute_name with NAME filled in, read from
    # the sdist's own op builders (the host optimizers' from op_builder/cpu, as the CUDA accelerator takes them).
    ops = ",".join(op.lower() for op in DS_OPS)
    checks = {v["name"]: v for v in plan_json(cli, "deepspeed", "--arch", "gfx942", "--rocm", rocm72, "--python",
                                               torch72, "--set", f"ops={ops}")["verify"]}
    for op in ops.split(","):
        builder = tree / "op_builder" / ("cpu/" if op.startswith("cpu_") else "") / f"{op}.py"
        text = builder.read_text()
        name = re.search(r'^\s+NAME = "(\w+)"$', text, re.M).group(1)
        module = re.search(r"return f'([\w.{}]+)'", text).group(1).replace("{self.NAME}", name)
        library = module.replace(".", "/") + ".cpython-314-x86_64-linux-gnu.so"
        check = checks[f"{op.replace('_', '-')}-op-" + ("in-wheel" if op.startswith("cpu_") else "is-rocm")]
        globs = [check["glob"]] if "glob" in check else check["files"]
        assert [fnmatch.fnmatch(library, g) for g in globs] == [True], (op, library, globs)

    # prepared again: every patch is already in, which is fine
    code, out, err = cli("prepare", "deepspeed", "--arch", "gfx942", "--rocm", rocm72, "--python", torch72,
                         "--work", tmp_path / "work")
    assert code == 0, err
    assert (tree / "op_builder/builder.py").read_text().count("rocbuild:") == 5
