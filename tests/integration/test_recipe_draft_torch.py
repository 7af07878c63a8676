"""`rocbuild recipes new NAME --sdist NAME==VERSION` on real PyTorch-extension sdists from PyPI: each draft lints,
requires a ROCm torch, and its plan sets PYTORCH_ROCM_ARCH and the package's own variables from the one arch
list; the traps each package hides (allow-lists, run-time compilation, missing submodules, a GPU-gated build)
are said with their file and line. torchsort never tests for ROCm, and the draft says so."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.network
ARCHS = "gfx1100,gfx942"


def draft(cli, tmp_path, name, requirement, *more):
    out = tmp_path / f"{name}.yaml"
    code, _, said = cli("recipes", "new", name, "--sdist", requirement, "-o", out, *more)
    assert code == 0, said
    code, text, err = cli("recipes", "lint", out)
    assert code == 0 and text.startswith(f"{out}: ok"), err
    return out, out.read_text(), said


def plan(cli, out, rocm, archs=ARCHS):
    code, text, err = cli("plan", out, "--arch", archs, "--rocm", rocm, "--json")
    assert code == 0, err
    result = json.loads(text)
    (step,) = result["steps"]
    assert "--no-build-isolation" in step["argv"] and result["requirements"]["torch"] == "rocm"
    assert result["env"]["PYTORCH_ROCM_ARCH"] == ";".join(archs.split(","))
    assert result["env"]["ROCM_HOME"] == str(rocm)
    return result, step["env"]


@pytest.mark.parametrize("name, requirement, env, said", [
    ("causal-conv1d", "causal-conv1d==1.7.0",
     {"HIP_ARCHITECTURES": "gfx1100,gfx942", "CAUSAL_CONV1D_FORCE_BUILD": "TRUE"},
     ["# DRAFT: downloads at setup.py:330 (urllib.request.urlretrieve)",
      "# It writes --offload-arch itself (setup.py:213)"]),
    ("mamba-ssm", "mamba-ssm==2.3.2.post1",
     {"HIP_ARCHITECTURES": "gfx1100,gfx942", "MAMBA_FORCE_BUILD": "TRUE"},
     ["# Found: MAMBA_SKIP_CUDA_BUILD (skip) at setup.py:42: left unset"]),
    ("torch-scatter", "torch-scatter==2.1.2", {"FORCE_CUDA": "1"},
     ["# DRAFT: torch.cuda.is_available() at setup.py:18, setup.py:117 asks for a visible GPU at build time: "
      "FORCE_CUDA is set"]),
    ("xformers", "xformers==0.0.35", {"HIP_ARCHITECTURES": "gfx1100 gfx942"},
     ["# DRAFT: third_party/composable_kernel_tiled (named at setup.py:295) is missing from the sdist",
      "# Found: FORCE_CUDA (force) at setup.py:214: left unset: it takes a branch that passes CUDA-only flags",
      "sit under the test at setup.py:208, which does not decide CUDA or HIP (it reads FORCE_CUDA, TORCH_CUDA_ARCH_LIST"]),
    ("deepspeed", "deepspeed==0.19.8", {"DS_BUILD_OPS": "1"},
     ["# DRAFT: kernels are compiled at run time (cpp_extension.load at op_builder/builder.py:",
      ") unless DS_BUILD_OPS asks for them at install time",
      "# DRAFT: rocminfo at op_builder/builder.py:275", "e.g. the wavefront size at op_builder/builder.py:",
      # and the copy of op_builder/ it ships, which setup.py reaches through the deepspeed package
      "op_builder/builder.py:610, op_builder/builder.py:829, deepspeed/ops/op_builder/builder.py:610",
      "set PYTORCH_ROCM_ARCH itself"]),
])
def test_a_torch_extension_draft_sets_its_own_variables_from_the_arch_list(cli, tmp_path, rocm61, name, requirement,
                                                                         env, said):
    out, text, _ = draft(cli, tmp_path, name, requirement)
    assert "no known HIP/ROCm switch" not in text and "# A PyTorch extension (torch.utils.cpp_extension at " in text
    for line in said:
        assert line in text
    # its ops are built at install (DS_BUILD_OPS): its Triton kernels do not make it a package without device code
    assert "code-objects: false" not in text
    _, step_env = plan(cli, out, rocm61)
    assert step_env["MAX_JOBS"].isdigit()  # the plan's jobs
    for key, value in env.items():
        assert step_env[key] == value
    # never the switches that skip the GPU build or send it down CUDA's branch
    never = {"FORCE_ONLY_CPU", "TORCH_CUDA_ARCH_LIST", "MAMBA_SKIP_CUDA_BUILD", "CAUSAL_CONV1D_SKIP_CUDA_BUILD"}
    assert not never & set(step_env)
    if name == "xformers":
        assert "FORCE_CUDA" not in step_env


@pytest.mark.parametrize("name, requirement, files, computed", [
    ("causal-conv1d", "causal-conv1d==1.7.0", ["causal_conv1d_cuda*.so"], None),
    # two CUDAExtension calls of one module: the CUDA branch's (setup.py:227) and the ROCm one's
    ("flash-attn", "flash-attn==2.8.3", ["flash_attn_2_cuda*.so"], None),
    # names built in a loop, by `Extension = CppExtension if suffix == 'cpu' else CUDAExtension`: nothing to
    # name, and the draft says where they are made
    ("torch-scatter", "torch-scatter==2.1.2", None, "setup.py:94"),
])
def test_the_draft_names_the_modules_that_must_carry_device_code(cli, tmp_path, rocm61, name, requirement, files,
                                                                 computed):
    out, text, _ = draft(cli, tmp_path, name, requirement)
    result, _ = plan(cli, out, rocm61, "gfx942")
    checks = {c["name"]: c for c in result["verify"]}
    if files is None:
        assert "kernels-are-rocm" not in checks
    else:
        assert checks["kernels-are-rocm"]["files"] == files and checks["kernels-are-rocm"]["links"] == ["libamdhip64"]
    if computed is None:
        assert "have computed names" not in text
    else:
        assert f"# DRAFT: the modules built at {computed} have computed names" in text


def test_flash_attn_allow_list_refuses_the_targets_its_release_rejects(cli, tmp_path, rocm61):
    out, text, err = draft(cli, tmp_path, "flash-attn", "flash-attn==2.8.3", "--arch", ARCHS)
    assert "setup.py:135 accepts only gfx90a, gfx950, gfx942 (see unsupported: below); it rejects the requested gfx1100" in err
    assert "# DRAFT: downloads at setup.py:486 (urllib.request.urlretrieve)" in text
    _, step_env = plan(cli, out, rocm61, "gfx942,gfx90a")
    assert step_env["GPU_ARCHS"] == "gfx942;gfx90a" and step_env["BUILD_TARGET"] == "rocm"
    assert step_env["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE" and "FLASH_ATTENTION_SKIP_CUDA_BUILD" not in step_env
    code, _, err = cli("plan", out, "--arch", ARCHS, "--rocm", rocm61)
    assert code != 0 and "flash-attn 2.8.3 accepts only gfx90a, gfx950, gfx942 (setup.py:135)" in err


def test_a_torch_extension_without_rocm_support_is_said_to_have_none(cli, tmp_path, rocm61):
    """torchsort 0.1.9 builds its CUDA extension only when nvcc runs, and never tests for HIP."""
    out, text, _ = draft(cli, tmp_path, "torchsort", "torchsort==0.1.9")
    assert "# DRAFT: nothing in setup.py tests for ROCm (torch.version.hip, IS_HIP_EXTENSION, ROCM_HOME)" in text
    assert "# DRAFT: setup.py:17 runs nvcc, which ROCm lacks" in text
    assert "# ROCm in its build files" not in text
    plan(cli, out, rocm61)


def test_a_setuptools_project_driving_cmake_gets_its_switches_in_cmake_args(cli, tmp_path, rocm61):
    """pywhispercpp's setup.py passes $CMAKE_ARGS (split on spaces) on to cmake; GGML_HIP is whisper.cpp's."""
    out, text, _ = draft(cli, tmp_path, "pywhispercpp", "pywhispercpp==1.4.1")
    assert "setup.py passes CMAKE_ARGS on to cmake (setup.py:90)" in text
    code, result, err = cli("plan", out, "--arch", ARCHS, "--rocm", rocm61, "--json")
    assert code == 0, err
    args = json.loads(result)["env"]["CMAKE_ARGS"].split(" ")
    assert "-DGGML_HIP=ON" in args and "-DAMDGPU_TARGETS=gfx1100;gfx942" in args
    assert f"-DCMAKE_HIP_COMPILER_ROCM_ROOT={rocm61}" in args
