"""The trap catalogue: its table, its detectors on build files the test writes, and its fixes written into
recipes (which the recipe loader must then accept)."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import yaml

from rocbuild.draft.edit import apply_fix
from rocbuild.draft.fixes import BuildOption, Edits, Expect, MemoryPerJob, ReplaceText, Require, SetEnv
from rocbuild.draft.torch_reading import read_torch
from rocbuild.draft.traps import (
    REFERENCE_END,
    REFERENCE_START,
    TRAPS,
    BuildFiles,
    Hit,
    in_build_files,
    in_findings,
    in_log,
    reference_text,
)
from rocbuild.draft.tree import draft_recipe, read_tree
from rocbuild.recipe.load import load_recipe_text
from tests.unit.test_draft_tree import tree

REPO = Path(__file__).resolve().parents[2]
# The families of the first-contact survey, in one setup.py: a force variable read through a Python
# variable, a ROCm selector whose absence crashes, and -std=c++17 against torch 2.12+.
FAMILIES = """\
import os
import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension, CUDA_HOME

force = os.getenv("FORCE_CUDA", "0") == "1"
if os.getenv("ROCM_VERSION"):
    tag = "rocm"
else:
    tag = "cu" + torch.version.cuda.split(".")[0]
ext, sources = CppExtension, ["csrc/op.cpp"]
if (torch.cuda.is_available() and CUDA_HOME is not None) or force:
    ext, sources = CUDAExtension, sources + ["csrc/op_cuda.cu"]
setup(name="fam", version="0.1", ext_modules=[ext("fam._C", sources,
      extra_compile_args={"cxx": ["-O3", "-std=c++17"], "nvcc": ["-O3", "-std=c++17"]})],
      cmdclass={"build_ext": BuildExtension})
"""


def test_each_trap_has_a_stable_id_a_why_and_a_way_to_be_seen():
    ids = [t.id for t in TRAPS]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)+", i) for i in ids)
    for trap in TRAPS:
        assert trap.why and trap.title and trap.fixes
        assert trap.log or trap.findings or trap.files, trap.id
        for pattern in trap.log:
            re.compile(pattern)


def test_the_recipe_reference_lists_the_generated_catalogue():
    text = (REPO / "docs" / "recipes.md").read_text()
    shown = text[text.index(REFERENCE_START):text.index(REFERENCE_END) + len(REFERENCE_END)] + "\n"
    assert shown == reference_text(), "regenerate it: rocbuild recipes traps --reference"


def test_the_build_files_show_the_three_families(tmp_path):
    hits = {h.trap.id: h for h in in_build_files(BuildFiles.read(tree(tmp_path, {"setup.py": FAMILIES})))}
    assert set(hits) == {"cxx20-for-torch", "force-variable-unset", "rocm-selector-unset"}
    assert hits["force-variable-unset"].fix == SetEnv("FORCE_CUDA", "1")  # read through `force`
    assert hits["force-variable-unset"].evidence.where == "setup.py:6"
    assert hits["rocm-selector-unset"].fix == SetEnv("ROCM_VERSION", "${{ rocm.version }}")
    assert hits["cxx20-for-torch"].fix == ReplaceText("setup.py", "-std=c++17", "-std=c++20",
                                                      when="${{ torch.version >= '2.12' }}")


def test_a_draft_carries_each_fix_with_the_trap_id_and_still_lints(tmp_path):
    t = tree(tmp_path / "src", {"setup.py": FAMILIES, "csrc/op.cpp": "", "csrc/op_cuda.cu": ""})
    text = draft_recipe("fam", "fam==0.1", "0" * 64, read_tree(t), ["gfx1100"])
    recipe = yaml.safe_load(text)
    assert recipe["steps"][0]["env"]["FORCE_CUDA"] == "1"
    assert recipe["steps"][0]["env"]["ROCM_VERSION"] == "${{ rocm.version }}"
    assert recipe["patches"] == [{"replace": {"file": "setup.py", "find": "-std=c++17", "with": "-std=c++20"},
                                  "when": "${{ torch.version >= '2.12' }}"}]
    assert "# trap cxx20-for-torch (setup.py:15): " in text and "# trap rocm-selector-unset (setup.py:7)" in text
    load_recipe_text(text, tmp_path / "fam.yaml")


def test_a_package_without_the_traps_gets_none(tmp_path):
    t = tree(tmp_path, {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
                                    "import os\nif os.getenv('USE_NINJA'):\n    pass\n"})
    assert in_build_files(BuildFiles.read(t)) == []


def test_kernels_compiled_at_run_time_are_an_expectation_from_the_build_files(tmp_path):
    t = tree(tmp_path / "src", {
        "setup.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension\nsetup(name='j')\n",
        "j/__init__.py": "",
        "j/ops.py": "import os\nfrom torch.utils.cpp_extension import load\n"
                    "mod = load(name='j_ops', sources=[os.path.join(os.path.dirname(__file__), 'csrc', 'ops.cu')])\n"})
    hits = in_build_files(BuildFiles.read(t))
    assert [(h.trap.id, h.fix) for h in hits] == [("kernels-at-run-time", Expect("jit", ("ops.cu",)))]
    text = draft_recipe("j", "j==1.0", "0" * 64, read_tree(t), ["gfx1100"])
    assert {"code-objects": False} in yaml.safe_load(text)["verify"]
    assert {"wheel-contains": "*/ops.cu"} in yaml.safe_load(text)["verify"]
    # The same load() in a package whose setup.py runs CMake (vLLM 0.33.0): its kernels are built at install.
    (t / "setup.py").write_text((t / "setup.py").read_text() + "import subprocess\nsubprocess.check_call(['cmake', '.'])\n")
    assert [h.trap.id for h in in_build_files(BuildFiles.read(t))] == []
    load_recipe_text(text, tmp_path / "j.yaml")
    # ... and in one whose setup.py builds CUDAExtension modules too, through a class it returns from a function
    # (deformops 3.0.1: `return CUDAExtension`, then `cuda_extension(name, sources)`): checked for device code
    (t / "setup.py").write_text("from setuptools import setup\ndef ext():\n"
                                "    from torch.utils.cpp_extension import CUDAExtension\n    return CUDAExtension\n"
                                "make = ext()\nsetup(name='j', ext_modules=[make('j._C', ['k.cu'])])\n")
    assert [h.trap.id for h in in_build_files(BuildFiles.read(t))] == []
    text = draft_recipe("j", "j==1.0", "0" * 64, read_tree(t), ["gfx1100"])
    assert {"code-objects": False} not in yaml.safe_load(text)["verify"]
    assert "and setup.py builds CUDAExtension modules too (setup.py:3)" in text


def test_a_library_binding_the_hip_runtime_without_kernels_expects_no_device_code(tmp_path):
    t = tree(tmp_path, {"CMakeLists.txt": "project(b CXX)\nfind_package(hip REQUIRED)\nadd_library(b SHARED b.cpp)\n"
                                          "target_link_libraries(b PRIVATE hip::host)\n"})
    assert [(h.trap.id, h.fix) for h in in_build_files(BuildFiles.read(t))] == [("hip-runtime-binding", Expect("runtime"))]
    t2 = tree(tmp_path / "k", {"CMakeLists.txt": "project(k CXX HIP)\nadd_library(k SHARED k.hip)\n"
                                                 "target_link_libraries(k PRIVATE hip::host)\n"})
    assert in_build_files(BuildFiles.read(t2)) == []


def test_a_cpu_only_finding_names_the_force_variable_only_where_the_build_files_read_one(tmp_path):
    codes = [("cpu_only", "x.whl: fam/_C.so has no HIP device code")]
    with_force = BuildFiles.read(tree(tmp_path / "a", {"setup.py": FAMILIES}))
    hits = in_findings(codes, with_force)
    assert [(h.trap.id, h.fix) for h in hits] == [("force-variable-unset", SetEnv("FORCE_CUDA", "1"))]
    assert hits[0].evidence.where == "finding cpu_only"
    plain = BuildFiles.read(tree(tmp_path / "b", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"}))
    assert in_findings(codes, plain) == []


STARTER = """\
schema: 1
name: x
version: "1.0"
source:
  sdist: x==1.0
requires:
  tools: [hipcc]
  python: [setuptools]

steps:
  # the wheel
  - wheel: {}
    env:
      MAX_JOBS: "4"

verify:
  - import: x
"""


def test_fixes_go_where_they_belong_and_a_second_time_change_nothing(tmp_path):
    text = STARTER
    for fix in (SetEnv("FORCE_CUDA", "1"), ReplaceText("setup.py", "-std=c++17", "-std=c++20"),
                Require("python", ("pybind11",)), Require("cmake-packages", ("hipblas",)), MemoryPerJob("4GiB")):
        once = apply_fix(text, fix, "trap t (log:3): evidence")
        assert apply_fix(once, fix, "trap t (log:3): evidence") == once, fix
        text = once
    recipe = yaml.safe_load(text)
    assert recipe["steps"][0]["env"] == {"MAX_JOBS": "4", "FORCE_CUDA": "1"}
    assert recipe["patches"][0]["replace"]["find"] == "-std=c++17"
    assert recipe["requires"]["python"] == ["setuptools", "pybind11"]
    assert recipe["requires"]["cmake-packages"] == ["hipblas"] and recipe["requires"]["memory-per-job"] == "4GiB"
    assert text.count("# trap t (log:3): evidence") == 5 and "  # the wheel" in text
    loaded = load_recipe_text(text, tmp_path / "x.yaml")
    assert loaded.requires.memory_per_job == 4 * 1024 ** 3


def test_a_changed_value_is_replaced_and_a_recipe_without_a_wheel_step_gets_top_level_env(tmp_path):
    text = apply_fix(STARTER, SetEnv("MAX_JOBS", "2"), "why")
    assert yaml.safe_load(text)["steps"][0]["env"] == {"MAX_JOBS": "2"}
    cmake = "schema: 1\nname: c\nversion: '1'\nsource:\n  path: .\nsteps:\n  - cmake: {}\n"
    text = apply_fix(cmake, SetEnv("HIP_PLATFORM", "amd"), "why")
    assert yaml.safe_load(text)["env"] == {"HIP_PLATFORM": "amd"}
    load_recipe_text(text, tmp_path / "c.yaml")


def test_a_cmakelists_setup_py_never_runs_is_not_where_the_standard_is_fixed(tmp_path):
    """torch-cluster 1.6.3 ships a CMakeLists.txt (CMAKE_CXX_STANDARD 14) for its C++ API, which its setup.py
    never runs: editing it fixes nothing."""
    setup = "from torch.utils.cpp_extension import CUDAExtension\nsetup(ext_modules=[CUDAExtension('a', ['a.cu'])])\n"
    t = tree(tmp_path / "a", {"setup.py": setup, "CMakeLists.txt": "set(CMAKE_CXX_STANDARD 14)\n"})
    assert [h.trap.id for h in in_build_files(BuildFiles.read(t))] == []
    runs = setup + "subprocess.check_call(['cmake', '-S', '.'])\n"
    t = tree(tmp_path / "b", {"setup.py": runs, "CMakeLists.txt": "set(CMAKE_CXX_STANDARD 14)\n"})
    assert [(h.trap.id, h.evidence.where) for h in in_build_files(BuildFiles.read(t))] == [
        ("cxx20-for-torch", "CMakeLists.txt:1")]


def test_a_gpu_probe_no_variable_overrules_is_replaced_by_true(tmp_path):
    setup = ("import torch\nfrom torch.utils.cpp_extension import CUDAExtension, CppExtension\n"
             "if torch.cuda.is_available():\n    ext = CUDAExtension('p._C', ['p.cu'])\nelse:\n"
             "    ext = CppExtension('p._C', ['p.cpp'])\n")
    hits = in_build_files(BuildFiles.read(tree(tmp_path / "a", {"setup.py": setup})))
    assert [(h.trap.id, h.evidence.where, h.fix) for h in hits] == [
        ("gpu-probe-at-build", "setup.py:3", ReplaceText("setup.py", "torch.cuda.is_available()", "True",
                                                         says=hits[0].fix.describe() if hits[0].fix else ""))]
    # With a force variable in the same test, the variable is the way: the probe stays.
    forced = setup.replace("if torch.cuda.is_available():", "import os\nif torch.cuda.is_available() or "
                           "os.getenv('FORCE_CUDA') == '1':")
    hits = in_build_files(BuildFiles.read(tree(tmp_path / "b", {"setup.py": forced})))
    assert [h.trap.id for h in hits] == ["force-variable-unset"]


def test_a_package_whose_setup_py_builds_nothing_but_whose_modules_load_kernels_is_a_jit_draft(tmp_path):
    """qtorch 0.3.0's shape: setup.py never names cpp_extension; its modules call load() on shipped sources."""
    t = tree(tmp_path / "src", {
        "setup.py": "from setuptools import setup, find_packages\nsetup(name='q', packages=find_packages(), "
                    "include_package_data=True)\n",
        "q/__init__.py": "",
        "q/quant.py": "import os\nfrom torch.utils.cpp_extension import load\nhere = os.path.dirname(__file__)\n"
                      "cuda = load(name='q_cuda', sources=[os.path.join(here, 'k/q.cpp'), os.path.join(here, 'k/q.cu')])\n"})
    reading = read_tree(t)
    assert reading.torch is not None and reading.torch.jit == "q/quant.py:2"
    text = draft_recipe("q", "q==1.0", "0" * 64, reading, ["gfx1100"])
    verify = yaml.safe_load(text)["verify"]
    assert {"code-objects": False} in verify and {"wheel-contains": "*/q.cu"} in verify
    assert "no known HIP/ROCm switch" not in text
    load_recipe_text(text, tmp_path / "q.yaml")


def test_after_a_cpu_only_build_a_force_variable_left_unset_for_its_cuda_flags_is_the_fix(tmp_path):
    """dbscan-torch 0.2.0's shape: FORCE_CUDA or torch.version.cuda (None on ROCm) picks the CUDA build, whose
    nvcc flags include --use_fast_math. The draft leaves FORCE_CUDA unset for those flags; once the build
    came out CPU-only, setting it is the way on (and the flags meet a trap of their own)."""
    setup = ("import os, torch\nfrom torch.utils.cpp_extension import CUDAExtension, CppExtension, CUDA_HOME\n"
             "force = os.environ.get('FORCE_CUDA', '0') == '1'\n"
             "WITH_CUDA = force or (torch.version.cuda is not None and CUDA_HOME is not None)\n"
             "args = {'cxx': ['-O3']}\nif WITH_CUDA:\n    args['nvcc'] = ['-O3', '--use_fast_math']\n")
    files = BuildFiles.read(tree(tmp_path, {"setup.py": setup}))
    # the draft drops the flag hipcc would refuse (dbscan-torch's third try met it), leaves FORCE_CUDA unset,
    # and makes the tests of CUDA's toolkit pass (so it takes the CUDA branch without the force variable)
    assert [h.trap.id for h in in_build_files(files)] == ["cuda-toolkit-test", "cuda-flag-for-hipcc"]
    hits = in_findings([("cpu_only", "x.whl: has no HIP device code")], files)
    assert (hits[0].trap.id, hits[0].fix) == ("force-variable-unset", SetEnv("FORCE_CUDA", "1"))


def test_fixes_written_into_every_shipped_recipe_keep_it_a_recipe(tmp_path):
    """The editor works on text: on each shipped recipe (hand-written, commented, of every shape) each kind
    of fix lands where the loader reads it."""
    fixes = (SetEnv("TRY_PROBE", "1"), ReplaceText("setup.py", "-std=c++17", "-std=c++20"),
             Require("python", ("probe_module",)), MemoryPerJob("7GiB"))
    for path in sorted((REPO / "recipes").glob("*.yaml")):
        text = path.read_text()
        for fix in fixes:
            text = apply_fix(text, fix, "trap probe (log:1): evidence")
        copy = path.parent / f".probe-{path.name}"  # beside it: `extends` and diff patches resolve as before
        try:
            copy.write_text(text)
            recipe = load_recipe_text(text, copy)
        finally:
            copy.unlink(missing_ok=True)
        env = dict(recipe.env) | {k: v for s in recipe.steps for k, v in s.env}
        assert "TRY_PROBE" in env, path.name
        assert any(getattr(p, "find", None) == "-std=c++17" for p in recipe.patches), path.name
        assert "probe_module" in [c.value for c in recipe.requires.python], path.name
        assert recipe.requires.memory_per_job == 7 * 1024 ** 3, path.name


def test_an_nvcc_probe_runs_hipcc_instead(tmp_path):
    """torchsort 0.1.10's shape: the CUDA extension is built only where `nvcc` runs."""
    setup = ("from subprocess import call\nfrom torch.utils import cpp_extension\n\ndef cuda():\n"
             "    try:\n        call(['nvcc'])\n        return True\n    except FileNotFoundError:\n        return False\n")
    hits = in_build_files(BuildFiles.read(tree(tmp_path, {"setup.py": setup})))
    assert [(h.trap.id, h.evidence.where) for h in hits] == [("nvcc-probe", "setup.py:6")]
    assert hits[0].fix is not None and hits[0].fix.yaml()[3:5] == ["      find: '''nvcc'''", "      with: '''hipcc'''"]


def test_a_gpu_probe_beside_a_cuda_home_test_turns_both_true(tmp_path):
    """DCNv4 1.0.0.post2's shape: `torch.cuda.is_available() and CUDA_HOME is not None`, else it raises.
    CUDA_HOME is None on a ROCm torch (no nvcc), so the probe alone would not take the GPU branch."""
    setup = ("import torch\nfrom torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\n"
             "if torch.cuda.is_available() and CUDA_HOME is not None:\n    ext = CUDAExtension('d.ext', ['d.cu'])\n"
             "else:\n    raise NotImplementedError('Cuda is not available')\n")
    hits = in_build_files(BuildFiles.read(tree(tmp_path, {"setup.py": setup})))
    fix = hits[0].fix
    assert isinstance(fix, ReplaceText) and fix.regex
    assert re.sub(fix.find, fix.with_, setup).splitlines()[2] == "if True and True:"


def test_a_force_variable_with_a_suffix_kept_in_a_variable_beside_the_probe(tmp_path):
    """torch-harmonics 0.8.0's shape: `BUILD_CUDA = FORCE_CUDA_EXTENSION or (torch.cuda.is_available() and ...)`."""
    setup = ("import os, torch\nfrom torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\n"
             "FORCE_CUDA_EXTENSION = os.getenv('FORCE_CUDA_EXTENSION', '0') == '1'\n"
             "BUILD_CUDA = FORCE_CUDA_EXTENSION or (torch.cuda.is_available() and (CUDA_HOME is not None))\n")
    hits = in_build_files(BuildFiles.read(tree(tmp_path, {"setup.py": setup})))
    assert [(h.trap.id, h.fix) for h in hits] == [("force-variable-unset", SetEnv("FORCE_CUDA_EXTENSION", "1"))]


def test_a_native_arch_variable_keeps_the_separator_its_reader_splits_on(tmp_path):
    """causal-conv1d's HIP_ARCHITECTURES goes into one --offload-arch flag: a ','-separated list, as the
    drafter reads it, never replaced by the catalogue's ';' default."""
    setup = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "flags = [f\"--offload-arch={os.getenv('HIP_ARCHITECTURES', 'native')}\"]\n")
    hits = {h.trap.id: h for h in in_build_files(BuildFiles.read(tree(tmp_path, {"setup.py": setup})))}
    assert hits["gpu-arch-at-build"].fix == SetEnv("HIP_ARCHITECTURES", "${{ archs | join(',') }}")


# warp-rnnt's and torch-harmonics' shapes of a 32-bit full mask, with what hipify wrote beside them.
MASKED = {
    "setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
    "csrc/core.cu": "__global__ void k(float b) {\n  float a = __shfl_up_sync(0xffffffff, b, 1);\n"
                    "  a += __shfl_xor_sync(0xFFFFFFFFu, a, 2);\n  __syncwarp(0xffffffff);\n"
                    "  unsigned long long ok = __ballot_sync(0xffffffffffffffffULL, a > 0);\n}\n",
    "csrc/core.hip": "// hipify's copy of core.cu\nfloat a = __shfl_up_sync(0xffffffff, b, 1);\n",
    "csrc/attention_utils.cuh": "#pragma once\n#define FULL_MASK (0xFFFFFFFF)\n",
    "csrc/attention_utils_hip.cuh": "#define FULL_MASK (0xFFFFFFFF)\n",
    "csrc/scan.cuh": "static constexpr unsigned int kWarpMask = 0xffffffff;\n",
    "csrc/held.cu": "__device__ float f(unsigned m, float v) { return __shfl_sync(m, v, 0); }\n",
}


def test_full_lane_masks_are_widened_in_the_sources_only(tmp_path):
    from rocbuild.draft.fixes import Edits
    from rocbuild.engine.patch import apply_replace
    from rocbuild.plan.model import ReplacePatch

    t = tree(tmp_path / "src", MASKED)
    hits = {h.trap.id: h for h in in_build_files(BuildFiles.read(t, torch=False))}
    fix = hits["warp-mask-32bit"].fix
    assert isinstance(fix, Edits)
    # hipify's copies (core.hip, attention_utils_hip.cuh) are left alone: the next try starts from a fresh tree
    assert sorted(e.file for e in fix.edits) == ["csrc/attention_utils.cuh", "csrc/core.cu", "csrc/scan.cuh"]
    for edit in fix.edits:
        patch = ReplacePatch(file=edit.file, find=edit.find, replacement=edit.with_, regex=edit.regex, count=None,
                             where="test")
        assert "replaced" in apply_replace(patch, t)
        assert apply_replace(patch, t).endswith("already applied")
    core = (t / "csrc/core.cu").read_text()
    assert core.count("0xffffffffffffffffULL") == 4 and "0xffffffff," not in core and "0xFFFFFFFFu" not in core
    assert (t / "csrc/attention_utils.cuh").read_text().endswith("#define FULL_MASK (0xffffffffffffffffULL)\n")
    assert (t / "csrc/scan.cuh").read_text() == "static constexpr unsigned long long kWarpMask = 0xffffffffffffffffULL;\n"
    assert "(unsigned m" in (t / "csrc/held.cu").read_text()  # a mask held in a variable: by hand
    recipe = "schema: 1\nname: m\nversion: '1'\nsource:\n  sdist: m==1\nsteps:\n  - wheel: {}\n"
    text = apply_fix(recipe, fix, "trap warp-mask-32bit (csrc/core.cu:2): ...")
    assert [p["replace"]["file"] for p in yaml.safe_load(text)["patches"]] == [e.file for e in fix.edits]
    assert text.count("# trap warp-mask-32bit") == 1 and apply_fix(text, fix, "again") == text
    load_recipe_text(text, tmp_path / "m.yaml")


def test_cuda_only_headers_are_replaced_in_every_source_at_once(tmp_path):
    # warp-rnnt 0.7.0: three sources, each including two of CUDA's own headers; one try used to fix one include
    from rocbuild.draft.fixes import Edits

    includes = "#include <device_atomic_functions.h>\n#include \"device_launch_parameters.h\"\n__global__ void k() {}\n"
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "core.cu": includes, "core_gather.cu": includes, "core.hip": includes,
                                "ok.cu": "#include <cuda_runtime.h>\n"})
    hits = {h.trap.id: h for h in in_build_files(BuildFiles.read(t, torch=False))}
    fix = hits["cuda-only-header"].fix
    assert isinstance(fix, Edits) and fix.describe().startswith("include HIP's runtime header instead of CUDA's own (4 edits")
    assert sorted((e.file, e.find) for e in fix.edits) == sorted(
        (f, line) for f in ("core.cu", "core_gather.cu")
        for line in ("#include <device_atomic_functions.h>", '#include "device_launch_parameters.h"'))
    assert {e.with_ for e in fix.edits} == {"#include <hip/hip_runtime.h>"}


def test_cusparses_v2_header_becomes_hipsparses(tmp_path):
    # turbo-gnn 0.1.0rc4: `#include <cusparse_v2.h>` in a .cpp, which hipify leaves (g++: No such file or directory)
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "csrc/spmm/cusparse_spmm.cpp": "#include <cusparse_v2.h>\n"})
    hit = _only_hit(t, "cuda-only-header")
    assert isinstance(hit.fix, Edits) and [e.with_ for e in hit.fix.edits] == ["#include <hipsparse/hipsparse.h>"]
    line = "<tree>/csrc/spmm/cusparse_spmm_hip.cpp:3:10: fatal error: cusparse_v2.h: No such file or directory"
    assert [h.trap.id for h in in_log([(5, line)], None)] == ["cuda-only-header"]


def test_a_kernel_handed_to_a_hip_call_that_takes_a_pointer_is_cast(tmp_path):
    # torch-harmonics 0.8.0: `cudaFuncGetAttributes(&attrs, empty_k)`, which HIP declares with `const void*`
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "k.cu": "CHECK_CUDA(cudaFuncGetAttributes(&attrs, empty_k));\n"
                                        "cudaFuncSetAttribute(kern<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, n);\n"
                                        "cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(done_k));\n"
                                        # vLLM 0.33.0 and fused-lncc 0.1.0: a template list with commas, cast whole
                                        "cudaFuncSetAttribute(gemm_k<batch, m, k>, cudaFuncAttributeMaxDynamicSharedMemorySize,"
                                        " n);\n"
                                        # a list holding parentheses is left to a hand edit
                                        "cudaFuncSetAttribute(deep_k<(n + 1), m>, cudaFuncAttributePreferredSharedMemoryCarveout,"
                                        " 50);\n"})
    hits = {h.trap.id: h for h in in_build_files(BuildFiles.read(t, torch=False))}
    fix = hits["kernel-as-pointer"].fix
    assert [(e.find, e.with_) for e in fix.edits] == [
        ("CHECK_CUDA(cudaFuncGetAttributes(&attrs, empty_k));",
         "CHECK_CUDA(cudaFuncGetAttributes(&attrs, reinterpret_cast<const void*>(empty_k)));"),
        ("cudaFuncSetAttribute(kern<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, n);",
         "cudaFuncSetAttribute(reinterpret_cast<const void*>(kern<T>), cudaFuncAttributeMaxDynamicSharedMemorySize, n);"),
        ("cudaFuncSetAttribute(gemm_k<batch, m, k>, cudaFuncAttributeMaxDynamicSharedMemorySize, n);",
         "cudaFuncSetAttribute(reinterpret_cast<const void*>(gemm_k<batch, m, k>), "
         "cudaFuncAttributeMaxDynamicSharedMemorySize, n);")]


def test_the_draft_drops_every_cuda_only_flag_hipcc_is_given_in_one_fix(tmp_path):
    # fpscan 0.1.2: -lineinfo and --use_fast_math in the nvcc list of a package that never tests for HIP
    from rocbuild.draft.fixes import Edits

    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
             "setup(name='f', ext_modules=[CUDAExtension('f._C', ['k.cu'], extra_compile_args={'cxx': ['-O3'],\n"
             "    'nvcc': ['-O3', '-lineinfo',\n             '--use_fast_math', '-U__CUDA_NO_HALF_OPERATORS__']})],\n"
             "    cmdclass={'build_ext': BuildExtension})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": ""})
    hit = _only_hit(t, "cuda-flag-for-hipcc")
    assert isinstance(hit.fix, Edits) and len(hit.fix.edits) == 2
    _drafted(t)
    assert "'nvcc': ['-O3', '-U__CUDA_NO_HALF_OPERATORS__']" in " ".join((t / "setup.py").read_text().split())


def test_cuda_vector_helpers_are_guarded_by_the_drafter_and_the_recipe_edit_loads(tmp_path):
    # nerfacc 0.5.3's utils_math.cuh (CUDA's helper_math.h): 155 operators, one regex edit for them all
    from rocbuild.draft.fixes import Edits

    header = ("inline __host__ __device__ float2 operator+(float2 a, float2 b)\n{\n    return make_float2(a.x + b.x, 0);\n}\n"
              "inline __device__ __host__ float lerp(float a, float b, float t)\n{\n    return a + t * (b - a);\n}\n")
    t = tree(tmp_path / "src", {"csrc/include/utils_math.cuh": header, "csrc/k.cu": "#include \"include/utils_math.cuh\"\n"})
    hits = {h.trap.id: h for h in in_build_files(BuildFiles.read(t, torch=False))}
    fix = hits["vector-operators-redefined"].fix
    assert isinstance(fix, Edits) and [(e.file, e.regex) for e in fix.edits] == [
        ("csrc/include/utils_math.cuh", True), ("csrc/include/utils_math.cuh", True)]
    recipe = "schema: 1\nname: m\nversion: '1'\nsource:\n  sdist: m==1\nsteps:\n  - wheel: {}\n"
    text = apply_fix(recipe, fix, "trap vector-operators-redefined (csrc/include/utils_math.cuh:1): ...")
    loaded = load_recipe_text(text, tmp_path / "m.yaml")
    assert [p.regex for p in loaded.patches] == [True, True]


def test_a_full_mask_written_as_a_32_bit_minus_one_is_widened_too(tmp_path):
    # pytorch-fast-transformers 0.4.0: __shfl_xor_sync(uint32_t(-1), ...), found after 18 minutes of compiling
    import re

    from rocbuild.draft.masks import CALL, FULL, find_masks

    text = ("a = __shfl_xor_sync(uint32_t(-1), v, m);\nb = __ballot_sync(~0u, p);\n"
            "c = __shfl_sync((unsigned)-1, v, 0);\nd = __shfl_sync(mask, v, 0);\n")
    (edit,) = find_masks({"k.cu": text})
    assert edit.line == 1 and re.sub(CALL, FULL, text).count(FULL) == 3 and "(mask, v, 0)" in re.sub(CALL, FULL, text)


# inplace-abn 1.1.0's shape (met in the survey): src/abn.cpp and src/abn_cuda.cu both become abn_hip.o.
COLLIDING = {
    "setup.py": ("from setuptools import setup\n"
                 "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
                 "setup(name='abn', version='1', cmdclass={'build_ext': BuildExtension}, ext_modules=[\n"
                 "    CUDAExtension('abn._backend', ['src/abn.cpp', 'src/abn_cpu.cpp', 'src/abn_cuda.cu'])])\n"),
    "src/abn.cpp": "#include <torch/extension.h>\nat::Tensor forward_cuda(at::Tensor x);\n",
    "src/abn_cpu.cpp": "#include <torch/extension.h>\nint cpu_only() { return 1; }\n",
    "src/abn_cuda.cu": "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] = 0; }\n",
}


def test_two_sources_that_hipify_to_one_object_are_told_apart_by_a_copy_of_the_kernel_file(tmp_path):
    """abn.cpp names CUDA, so hipify writes abn_hip.cpp; abn_cuda.cu becomes abn_hip.hip: both compile to
    abn_hip.o. The drafter copies the .cu file to abn_cuda_kernels.cu (abn_hip_kernels.o) and points setup.py
    at the copy; written into a recipe, that is a copy and a replace patch the loader takes, once."""
    files = BuildFiles.read(tree(tmp_path / "t", COLLIDING))
    hits = [h for h in in_build_files(files) if h.trap.id == "hipify-name-collision"]
    assert len(hits) == 1 and hits[0].evidence.where == "setup.py:4"
    assert "src/abn_cuda.cu and src/abn.cpp both compile to src/abn_hip.o" in hits[0].evidence.text
    fix = hits[0].fix
    assert "\n".join(fix.yaml()) == ("patches:\n  - copy:\n      from: 'src/abn_cuda.cu'\n"
                                     "      to: 'src/abn_cuda_kernels.cu'\n  - remove: 'src/abn_cuda.cu'\n"
                                     "  - replace:\n      file: setup.py\n"
                                     "      find: 'abn_cuda.cu'\n      with: 'abn_cuda_kernels.cu'")
    once = apply_fix(STARTER, fix, "trap hipify-name-collision (setup.py:4)")
    assert apply_fix(once, fix, "again") == once
    recipe = load_recipe_text(once, tmp_path / "x.yaml")
    assert [p.KIND for p in recipe.patches] == ["copy", "remove", "replace"]
    # A kernel file whose name hipify keeps apart (abn_kernel.cu -> abn_kernel.hip) is left alone.
    apart = {**COLLIDING, "setup.py": COLLIDING["setup.py"].replace("abn_cuda.cu", "abn_kernel.cu")}
    apart["src/abn_kernel.cu"] = apart.pop("src/abn_cuda.cu")
    assert not [h for h in in_build_files(BuildFiles.read(tree(tmp_path / "a", apart)))
                if h.trap.id == "hipify-name-collision"]


def test_a_setup_py_that_scans_its_folder_gets_the_kernel_file_moved_without_naming_it(tmp_path):
    """inplace-abn 1.1.0's setup.py: `for file in listdir(root_dir)` over src/, so a copy alone would be
    compiled beside the original: the original is removed, and setup.py is left as it is."""
    scanning = {**COLLIDING, "setup.py": (
        "from os import listdir, path\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "def find_sources(root):\n"
        "    return [path.join(root, f) for f in listdir(root) if f.endswith(('.cpp', '.cu'))]\n"
        "setup(name='abn', version='1', cmdclass={'build_ext': BuildExtension},\n"
        "      ext_modules=[CUDAExtension('abn._backend', find_sources('src'))])\n")}
    (hit,) = [h for h in in_build_files(BuildFiles.read(tree(tmp_path, scanning))) if h.trap.id == "hipify-name-collision"]
    assert hit.evidence.where == "setup.py:5"
    assert [type(e).__name__ for e in hit.fix.edits] == ["CopyFile", "RemoveFile"]


def _only_hit(t: Path, trap: str) -> Hit:
    """The one hit of `trap` the drafter's detectors find in the tree's build files."""
    (hit,) = [h for h in in_build_files(BuildFiles.read(t)) if h.trap.id == trap]
    return hit


def _seen(t: Path) -> list[str]:
    """The traps the drafter's detectors find in the tree's build files."""
    return [h.trap.id for h in in_build_files(BuildFiles.read(t))]


def _drafted(t: Path) -> None:
    """The tree as a draft for gfx1100 leaves it: the draft's replace edits applied."""
    _apply_draft_patches(t, draft_recipe("p", "p==1.0", "0" * 64, read_tree(t), ["gfx1100"]))


def _apply_draft_patches(t: Path, text: str) -> None:
    from rocbuild.engine.patch import apply_replace
    from rocbuild.plan.model import ReplacePatch

    for p in yaml.safe_load(text)["patches"]:
        if "replace" in p:
            r = p["replace"]
            apply_replace(ReplacePatch(file=r["file"], find=r["find"], replacement=r["with"], regex=r.get("regex", False),
                                       count=None, where="test"), t)


# rotary-emb 0.5.2's shape (apex's setup.py): CUDA's version from `nvcc -V`, -gencode appended a statement at a time.
APEX = '''\
import subprocess
from packaging.version import parse, Version
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CUDA_HOME


def get_cuda_bare_metal_version(cuda_dir):
    raw_output = subprocess.check_output([cuda_dir + "/bin/nvcc", "-V"], universal_newlines=True)
    output = raw_output.split()
    release_idx = output.index("release") + 1
    return raw_output, parse(output[release_idx].split(",")[0])


cc_flag = []
_, bare_metal_version = get_cuda_bare_metal_version(CUDA_HOME)
if bare_metal_version < Version("11.0"):
    raise RuntimeError("only supported on CUDA 11 and above")
cc_flag.append("-gencode")
cc_flag.append("arch=compute_80,code=sm_80")
if bare_metal_version >= Version("11.8"):
    cc_flag.append("-gencode")
    cc_flag.append("arch=compute_90,code=sm_90")
nvcc = ["-O3", "--use_fast_math"] + cc_flag
'''


def test_an_apex_style_nvcc_version_probe_gets_nvccs_answer_and_appended_flags_become_pass(tmp_path):
    t = tree(tmp_path / "src", {"setup.py": APEX + "CUDAExtension('r', ['r.cpp', 'k.cu'])\n", "k.cu": "", "r.cpp": ""})
    ids = [h.trap.id for h in in_build_files(BuildFiles.read(t))]
    assert "nvcc-version-probe" in ids and "cuda-flag-for-hipcc" in ids
    _drafted(t)
    code = (t / "setup.py").read_text()
    assert "nvcc" not in code.split("def get_cuda_bare_metal_version")[1].split("\n\n")[0]
    # What is left runs: the version tests pass on the answer, and no CUDA flag (nor an empty append) remains.
    from packaging.version import Version, parse

    space: dict[str, object] = {"parse": parse, "Version": Version, "CUDA_HOME": None, "CUDAExtension": lambda *a: a}
    kept = (line for line in code.splitlines() if not re.match(r"\s*(?:import|from)\s", line))
    exec(compile("\n".join(kept), "setup.py", "exec"), space)
    assert space["bare_metal_version"] == Version("12.4") and space["nvcc"] == ["-O3"] and space["cc_flag"] == []


def test_exec_into_a_functions_locals_gets_a_dict_of_its_own(tmp_path):
    # cumcubes 0.0.3's get_version (OpenMMLab's shape), which raises KeyError from Python 3.13 on
    setup = ("import os\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\n"
             "def get_version():\n    version_file = os.path.join('pkg', 'version.py')\n"
             "    with open(version_file, 'r', encoding='utf-8') as f:\n"
             "        exec(compile(f.read(), version_file, 'exec'))\n    return locals()['__version__']\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "pkg/version.py": "__version__ = '0.0.3'\n", "k.cu": ""})
    hit = _only_hit(t, "exec-into-locals")
    assert hit.evidence.where == "setup.py:7"
    _drafted(t)
    code = "\n".join(line for line in (t / "setup.py").read_text().splitlines() if "torch" not in line)
    space: dict[str, object] = {}
    exec(compile(code, "setup.py", "exec"), space)
    cwd = os.getcwd()
    try:
        os.chdir(t)
        assert space["get_version"]() == "0.0.3"  # type: ignore[operator]
    finally:
        os.chdir(cwd)


def test_a_removed_torch_macro_is_renamed_in_every_source_that_calls_it(tmp_path):
    # modulated-deform-conv 1.0.2: AT_CHECK (removed in torch 1.5) in two kernel files; a name that merely
    # contains it is left alone
    from rocbuild.draft.fixes import Edits

    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
             "setup(name='m', ext_modules=[CUDAExtension('m', ['a.cu', 'b.cu'])], cmdclass={'build_ext': BuildExtension})\n")
    a = "void f(at::Tensor x) {\n  AT_CHECK(x.is_contiguous(), \"x\");\n  AT_CHECK (x.dim() == 4, \"4d\");\n}\n"
    b = "#define MY_AT_CHECK(c) c\nvoid g(at::Tensor y) { AT_CHECK(y.is_cuda(), \"y\"); MY_AT_CHECK(1); }\n"
    t = tree(tmp_path / "src", {"setup.py": setup, "a.cu": a, "b.cu": b})
    hit = _only_hit(t, "torch-api-renamed")
    assert hit.evidence.where == "a.cu:2" and isinstance(hit.fix, Edits) and len(hit.fix.edits) == 2
    _drafted(t)
    assert (t / "a.cu").read_text().count("TORCH_CHECK") == 2 and "AT_CHECK" not in (t / "a.cu").read_text()
    assert "TORCH_CHECK(y.is_cuda()" in (t / "b.cu").read_text() and "MY_AT_CHECK(1)" in (t / "b.cu").read_text()


def test_dispatch_on_a_tensors_type_dispatches_on_its_scalar_type(tmp_path):
    # svox 0.2.32: AT_DISPATCH_FLOATING_TYPES(data.type(), ...), which torch 2.14's macros no longer convert
    k = ('void f(at::Tensor data, at::Tensor o) {\n  AT_DISPATCH_FLOATING_TYPES(data.type(), "f", [&] { g(); });\n'
         '  AT_DISPATCH_FLOATING_TYPES_AND_HALF(o.scalar_type(), "g", [&] {});\n'
         '  AT_DISPATCH_FLOATING_TYPES(tree.data.type(), __FUNCTION__, [&] { h(o.type().is_cuda()); });\n}\n')
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "k.cu": k})
    hit = _only_hit(t, "torch-api-renamed")
    assert hit.evidence.where == "k.cu:2"
    _drafted(t)
    assert (t / "k.cu").read_text() == k.replace("data.type(),", "data.scalar_type(),")  # is_cuda() on type() stays
    assert "torch-api-renamed" not in _seen(t)
    # lietorch (in wildgs-slam 1.0.7): a dispatch macro of its own, the tensor's type its second argument
    own = 'void f(at::Tensor a) {\n  DISPATCH_GROUP_AND_FLOATING_TYPES(group_id, a.type(), "exp", ([&] { g(); }));\n}\n'
    t = tree(tmp_path / "own", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "l.cpp": own})
    _drafted(t)
    assert (t / "l.cpp").read_text() == own.replace("a.type(),", "a.scalar_type(),")


def test_tests_of_cudas_toolkit_pass_where_setup_py_has_no_rocm_path(tmp_path):
    # torch-ms-deform-attn 0.1.1: FORCE_CUDA, then a refusal unless CUDA_HOME and torch.version.cuda are set
    setup = ("import os, torch\nfrom torch.utils.cpp_extension import CUDA_HOME, CUDAExtension, CppExtension\n"
             "force_cuda = os.getenv('FORCE_CUDA', '0') == '1'\n"
             "if cpp_ext.CUDA_HOME is None and _cuda_home:\n    cpp_ext.CUDA_HOME = _cuda_home\n"
             "if force_cuda and (CUDA_HOME is None or torch.version.cuda is None):\n"
             "    raise RuntimeError('FORCE_CUDA requires a CUDA-enabled PyTorch and CUDA toolkit')\n"
             "with_cuda = CUDA_HOME is not None and torch.version.cuda is not None and (\n"
             "    force_cuda or torch.cuda.is_available())\n"
             "ext = CUDAExtension('x', ['k.cu']) if with_cuda else CppExtension('x', ['k.cpp'])\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "", "k.cpp": ""})
    hits = {h.trap.id: h for h in in_build_files(BuildFiles.read(t))}
    assert "cuda-toolkit-test" in hits and "force-variable-unset" in hits
    _drafted(t)
    code = (t / "setup.py").read_text()
    assert "if force_cuda and (False or False):" in code and "with_cuda = True and True and" in code
    assert "if False and _cuda_home:" in code  # fussim 0.3.1's qualified name: not `cpp_ext.False`
    # With a ROCm path of its own, setup.py's tests are its business.
    rocm = setup.replace("force_cuda = ", "IS_ROCM = torch.version.hip is not None\nforce_cuda = ")
    rocm_files = BuildFiles.read(tree(tmp_path / "r", {"setup.py": rocm, "k.cu": ""}))
    assert "cuda-toolkit-test" not in {h.trap.id for h in in_build_files(rocm_files)}


def test_a_cuda_torch_told_by_its_version_label_passes_too(tmp_path):
    # megablocks 0.10.0: `if 'cu' in torch.__version__ and CUDA_HOME is not None:`, else "No CUDA devices"
    setup = ("import torch\nfrom torch.utils.cpp_extension import CUDA_HOME, CUDAExtension\next_modules = []\n"
             "if 'cu' in torch.__version__ and CUDA_HOME is not None:\n"
             "    ext_modules = [CUDAExtension('m', ['k.cu'])]\nelif CUDA_HOME is None:\n    pass\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": ""})
    assert "cuda-toolkit-test" in _seen(t)
    _drafted(t)
    assert "if True and True:" in (t / "setup.py").read_text()


def test_an_nvcc_asked_for_its_version_and_found_on_path_gets_both_fixes_in_an_order_that_applies(tmp_path):
    # fussim 0.3.1: `nvcc --version` (bytes) read for CUDA's version, `shutil.which("nvcc")` for the build, and
    # -gencode flags appended as f-strings
    setup = ("import shutil, subprocess\nfrom torch.utils.cpp_extension import CUDAExtension\n\n"
             "def get_cuda_version():\n"
             "    output = subprocess.check_output([\"nvcc\", \"--version\"], stderr=subprocess.STDOUT)\n"
             "    return output.decode('utf-8')\n\n"
             "nvcc_path = shutil.which(\"nvcc\")\nflags = ['-O3']\nfor arch_num in ['80', '90']:\n"
             "    flags.append(f\"-gencode=arch=compute_{arch_num},code=sm_{arch_num}\")\n"
             "CUDAExtension('f', ['k.cu'], extra_compile_args={'nvcc': flags})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": ""})
    ids = [h.trap.id for h in in_build_files(BuildFiles.read(t))]
    assert ids.index("nvcc-version-probe") < ids.index("nvcc-probe") and "cuda-flag-for-hipcc" in ids
    _drafted(t)  # each edit finds its text
    code = (t / "setup.py").read_text()
    assert 'output = b"Cuda compilation tools, release 12.4' in code and 'shutil.which("hipcc")' in code
    assert "-gencode" not in code and "]:\n    pass\n" in code


def test_cucomplex_names_get_hips_in_every_source_that_uses_them(tmp_path):
    # torch-projectors 0.13.1: cuFloatComplex and its functions, which hipify leaves as they are
    from rocbuild.draft.fixes import Edits

    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
             "setup(name='c', ext_modules=[CUDAExtension('c', ['k.cu'])], cmdclass={'build_ext': BuildExtension})\n")
    kernel = ("#include <cuComplex.h>\n__device__ cuFloatComplex mul(cuFloatComplex a, cuFloatComplex b) {\n"
              "  return make_cuFloatComplex(cuCrealf(a) * cuCrealf(b), cuCimagf(a));\n}\n"
              "__device__ cuDoubleComplex add(cuDoubleComplex a) { return cuCadd(a, cuConj(a)); }\n"
              "int cuCount;  // not one of cuComplex's\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": kernel})
    hit = _only_hit(t, "cucomplex-names")
    assert hit.evidence.where == "k.cu:2" and isinstance(hit.fix, Edits) and len(hit.fix.edits) == 1
    _drafted(t)
    out = (t / "k.cu").read_text()
    assert "make_hipFloatComplex(hipCrealf(a) * hipCrealf(b), hipCimagf(a))" in out
    assert "hipDoubleComplex add(hipDoubleComplex a) { return hipCadd(a, hipConj(a)); }" in out
    assert "#include <cuComplex.h>" in out and "int cuCount;" in out  # hipify maps the header itself


def test_a_missing_standard_header_named_in_a_hipified_copy_is_included_in_the_original(tmp_path):
    # cumcubes 0.0.3: GCC compiled torch's copy cumcubes_hip.cpp and named <fstream>; the fix edits cumcubes.cpp
    cpp = "#include <torch/extension.h>\nvoid save() { std::ofstream f(\"x\"); }\n"
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "pkg/src/cumcubes.cpp": cpp, "pkg/src/cumcubes_hip.cpp": cpp})
    log = (REPO / "tests/data/failure-logs/std-include-missing.log").read_text().replace("<work>/src/cumcubes", str(t / "pkg"))
    (hit,) = [h for h in in_log(list(enumerate(log.splitlines(), 1)), BuildFiles.read(t)) if h.trap.id == "std-include-missing"]
    assert hit.fix == ReplaceText("pkg/src/cumcubes.cpp", r"\A", "#include <fstream>\n", regex=True,
                                  says="include <fstream> first in pkg/src/cumcubes.cpp")
    from rocbuild.engine.patch import apply_replace
    from rocbuild.plan.model import ReplacePatch

    apply_replace(ReplacePatch(file=hit.fix.file, find=hit.fix.find, replacement=hit.fix.with_, regex=True, count=None,
                               where="test"), t)
    assert (t / "pkg/src/cumcubes.cpp").read_text() == "#include <fstream>\n" + cpp


def test_clang_names_the_type_and_the_header_is_found_from_it(tmp_path):
    # clang (hipcc) says what GCC's note says without naming the header (line as clang 15 printed it here)
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "k.cu": "int k;\n"})
    line = f"{t}/k.hip:2:26: error: implicit instantiation of undefined template 'std::basic_ofstream<char>'"
    (hit,) = [h for h in in_log([(7, line)], BuildFiles.read(t)) if h.trap.id == "std-include-missing"]
    assert isinstance(hit.fix, ReplaceText) and (hit.fix.file, hit.fix.with_) == ("k.cu", "#include <fstream>\n")
    line = "../../k.hip:3:5: error: unknown type name 'uint8_t'"
    (hit,) = [h for h in in_log([(9, line)], BuildFiles.read(t)) if h.trap.id == "std-include-missing"]
    assert isinstance(hit.fix, ReplaceText) and hit.fix.with_ == "#include <cstdint>\n"


def test_a_cuda_extension_without_kernel_sources_expects_the_runtime_bound(tmp_path):
    # torch-unified 0.1: CUDAExtension around one .cpp that calls cudaMallocManaged
    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
             "setup(name='u', ext_modules=[CUDAExtension('_u_gpu', ['u.cpp'])], cmdclass={'build_ext': BuildExtension})\n")
    cpp = "#include <cuda_runtime.h>\nvoid* alloc(size_t n) { void* p; cudaMallocManaged(&p, n); return p; }\n"
    hits = in_build_files(BuildFiles.read(tree(tmp_path / "a", {"setup.py": setup, "u.cpp": cpp})))
    assert [h.fix for h in hits if h.trap.id == "hip-runtime-binding"] == [Expect("runtime")]
    # a kernel anywhere in the tree (a .cu file, or __global__ in a source) means device code is expected
    for name, files in (("b", {"u.cu": "__global__ void k() {}\n"}), ("c", {"k.h": "__global__ void k();\n"})):
        hits = in_build_files(BuildFiles.read(tree(tmp_path / name, {"setup.py": setup, "u.cpp": cpp, **files})))
        assert "hip-runtime-binding" not in [h.trap.id for h in hits]


def test_an_nvcc_version_call_over_several_lines_is_answered_whole(tmp_path):
    # torch-lap-cuda 0.0.3 wraps apex's call over three lines
    setup = APEX.replace('subprocess.check_output([cuda_dir + "/bin/nvcc", "-V"], universal_newlines=True)',
                         'subprocess.check_output(\n        [cuda_dir + "/bin/nvcc", "-V"], universal_newlines=True\n    )')
    t = tree(tmp_path / "src", {"setup.py": setup + "CUDAExtension('r', ['k.cu'])\n", "k.cu": ""})
    hit = _only_hit(t, "nvcc-version-probe")
    assert hit.evidence.where == "setup.py:7"
    _drafted(t)
    assert 'raw_output = "Cuda compilation tools, release 12.4, V12.4.131"\n' in (t / "setup.py").read_text()
    # stable-fast 1.0.5 names nvcc in a variable: `nvcc_bin = ... cuda_dir + "/bin/nvcc"`, then `[nvcc_bin, "-V"]`
    setup = ("import subprocess\nfrom torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\n"
             "def get_cuda_version(cuda_dir):\n    nvcc_bin = 'nvcc' if cuda_dir is None else cuda_dir + '/bin/nvcc'\n"
             "    raw_output = subprocess.check_output([nvcc_bin, \"-V\"],\n                                         "
             "universal_newlines=True)\n    return raw_output.split()\nCUDAExtension('s', ['k.cu'])\n")
    t = tree(tmp_path / "variable", {"setup.py": setup, "k.cu": ""})
    assert _only_hit(t, "nvcc-version-probe").evidence.where == "setup.py:5"
    _drafted(t)
    assert '    raw_output = "Cuda compilation tools, release 12.4, V12.4.131"\n' in (t / "setup.py").read_text()


def test_the_standard_gcc_and_hipcc_read_is_fixed_before_msvcs(tmp_path):
    # fussim 0.3.1: a Windows branch's /std:c++17 comes first in setup.py, the -std=c++17 hipcc gets later
    setup = ("import sys\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "if sys.platform == 'win32':\n    cxx = ['/O2', '/std:c++17']\nelse:\n    cxx = ['-O3', '-std=c++17']\n"
             "CUDAExtension('f', ['k.cu'], extra_compile_args={'cxx': cxx, 'nvcc': ['-std=c++17']})\n")
    hits = in_build_files(BuildFiles.read(tree(tmp_path, {"setup.py": setup, "k.cu": ""})))
    (fix,) = [h.fix for h in hits if h.trap.id == "cxx20-for-torch"]
    assert isinstance(fix, ReplaceText) and (fix.find, fix.with_) == ("-std=c++17", "-std=c++20")
    # torch-ans 0.4.0: both on one line, MSVC's first
    setup = ("import sys\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "std = '/std:c++17' if sys.platform == 'win32' else '-std=c++17'\n")
    hits = in_build_files(BuildFiles.read(tree(tmp_path / "b", {"setup.py": setup, "k.cu": ""})))
    (fix,) = [h.fix for h in hits if h.trap.id == "cxx20-for-torch"]
    assert isinstance(fix, ReplaceText) and fix.find == "-std=c++17"


def test_the_draft_drops_register_limits_and_host_compiler_options_too(tmp_path):
    # biwkv4-cuda 0.3.2's --maxrregcount=60 (clang: unknown argument), and nvcc's -Xcompiler with its value
    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
             "setup(name='b', ext_modules=[CUDAExtension('b', ['k.cu'], extra_compile_args={'cxx': ['-O3'],\n"
             "    'nvcc': ['-O3', '--maxrregcount=60', '-Xcompiler', '-fopenmp', '--fmad=false', '-DKEEP']})],\n"
             "    cmdclass={'build_ext': BuildExtension})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": ""})
    _drafted(t)
    assert "'nvcc': ['-O3', '-DKEEP']" in " ".join((t / "setup.py").read_text().split())


def test_a_passed_on_value_that_holds_the_other_quote_goes_whole_with_its_option(tmp_path):
    # transformer-engine-torch 2.20.2's build_tools/build_ext.py: `cflags.extend(["--compiler-options", "'-fPIC'"])`;
    # the value's `'` was taken for its end, and `[-fPIC'"]` stopped metadata with a SyntaxError
    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
             "cflags = ['-O3']\ncflags.extend([\"--compiler-options\", \"'-fPIC'\"])\n"
             "flags = ['-O2', '-Xcompiler', '\"-fno-strict-aliasing\"', '-DKEEP']\n"
             "setup(name='b', ext_modules=[CUDAExtension('b', ['k.cu'], extra_compile_args={'nvcc': cflags + flags})],\n"
             "    cmdclass={'build_ext': BuildExtension})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": ""})
    _drafted(t)
    code = (t / "setup.py").read_text()
    ast.parse(code)
    assert "cflags.extend([])" in code and "flags = ['-O2', '-DKEEP']" in code and "fPIC" not in code


def test_a_full_mask_with_an_upper_case_prefix_is_widened_too(tmp_path):
    # biwkv4-cuda 0.3.2 writes __shfl_sync(0Xffffffff, o2, i)
    from rocbuild.draft.masks import FULL, find_masks

    (edit,) = find_masks({"k.cu": "__device__ float f(float o2, int i) { return __shfl_sync(0Xffffffff, o2, i); }\n"})
    assert edit.with_ == FULL and re.sub(edit.find, edit.with_, "__shfl_sync(0Xffffffff, o2, i)") == f"__shfl_sync({FULL}, o2, i)"


def test_an_f_string_value_appended_after_its_flag_and_a_value_in_a_variable_go_with_their_flags(tmp_path):
    # torch-lap-cuda 0.0.3: nvcc_flags.append(f"arch=compute_{75},code=sm_{75}"), ["--threads", nvcc_threads]
    setup = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension\nnvcc_flags = []\n"
             "nvcc_flags.append(\"-gencode\")\nnvcc_flags.append(f\"arch=compute_{75},code=sm_{75}\")\n\n"
             "def append_nvcc_threads(nvcc_extra_args):\n    nvcc_threads = os.getenv('NVCC_THREADS') or '4'\n"
             "    return nvcc_extra_args + [\"--threads\", nvcc_threads]\n\n"
             "CUDAExtension('l', ['k.cu'], extra_compile_args={'nvcc': append_nvcc_threads(['-O3'] + nvcc_flags)})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": ""})
    _drafted(t)
    code = (t / "setup.py").read_text()
    assert "arch=compute" not in code and "--threads" not in code and "nvcc_threads]" not in code
    assert "return nvcc_extra_args + []" in code


def test_a_full_mask_defined_under_a_warp_name_is_widened(tmp_path):
    # torch-lap-cuda 0.0.3: #define FULLWARP 0xffffffff, then __shfl_down_sync(FULLWARP, ...)
    from rocbuild.draft.masks import FULL, find_masks

    text = "#define FULLWARP 0xffffffff\n__device__ int f(int v) { return __shfl_sync(FULLWARP, v, 0); }\n"
    (edit,) = find_masks({"lap.cuh": text})
    assert edit.with_ == f"#define FULLWARP {FULL}"


def test_a_cuda_library_linked_by_name_is_dropped_where_setup_py_names_it(tmp_path):
    # torch-lap-cuda 0.0.3: extra_link_args=['-lcuda'], which ld cannot find on ROCm
    setup = "from torch.utils.cpp_extension import CUDAExtension\nCUDAExtension('l', ['k.cu'], extra_link_args=['-lcuda'])\n"
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": ""})
    line = "/usr/bin/x86_64-linux-gnu-ld.bfd: cannot find -lcuda: No such file or directory"
    (hit,) = [h for h in in_log([(3, line)], BuildFiles.read(t)) if h.trap.id == "cuda-library-linked"]
    assert isinstance(hit.fix, ReplaceText) and re.sub(hit.fix.find, hit.fix.with_, setup).endswith("extra_link_args=[])\n")
    # vision3d 0.5.2 links CUDA's static runtime by its file: `extra_link_args = ["-l:libcudart_static.a", "-lpthread"]`
    static = "from torch.utils.cpp_extension import CUDAExtension\ne = CUDAExtension('v', ['k.cu'])\n" \
             "e.extra_link_args = ['-l:libcudart_static.a', '-lpthread']\n"
    t = tree(tmp_path / "static", {"setup.py": static, "k.cu": ""})
    assert _only_hit(t, "cuda-library-linked").evidence.where == "setup.py:3"
    _drafted(t)
    assert (t / "setup.py").read_text().endswith("e.extra_link_args = ['-lpthread']\n")
    line = "  /usr/bin/x86_64-linux-gnu-ld.bfd: cannot find -l:libcudart_static.a: No such file or directory"
    from rocbuild.draft.logscan import scan

    (error,) = [e for e in scan(line + "\n") if e.kind == "linker"]
    assert "-l:libcudart_static.a" in error.text


def test_a_vendored_library_that_knows_hip_is_kept_out_of_hipify_by_its_breadcrumb(tmp_path):
    # ds-splat 0.0.2: gsplat's third_party/glm tests __CUDACC__ before its own __HIP__; hipify rewrote the first to
    # __HIPCC__ ("GLM requires CUDA 7.0 or higher"), and copied to _hip names the headers whose includes it rewrote or
    # normalised, which GLM's .inl files never include
    platform = ("#pragma once\n#if defined(__clang__) && !defined(__CUDACC__)\n#define C 1\n"
                "#elif defined(__CUDACC__)\n#  if CUDA_VERSION < 7000\n#    error \"GLM requires CUDA 7.0 or higher\"\n"
                "#  endif\n#elif defined(__HIP__)\n#  define C 2\n#endif\n")
    files = {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
             "cpp/k.cu": '#include "third_party/glm/glm/glm.hpp"\n#include <glm/gtc/ptr.hpp>\n__global__ void k() {}\n',
             "cpp/third_party/glm/glm/simd/platform.h": platform,
             "cpp/third_party/glm/glm/glm.hpp": '#include "detail/setup.hpp"\n#include "detail/func.inl"\n',
             "cpp/third_party/glm/glm/gtc/ptr.hpp": '#include "../detail/setup.hpp"\n',
             "cpp/third_party/glm/glm/detail/setup.hpp": '#include "../simd/platform.h"\n',
             "cpp/third_party/glm/glm/detail/func.inl": "// GLM_CUDA_FUNC_DECL\n",
             # a vendored library with no HIP branch of its own is hipify's to translate; so is the package's own header
             "cpp/third_party/cub/util.cuh": "#if defined(__CUDACC__)\n#include <cuda_runtime.h>\n#endif\n",
             "cpp/own.cuh": "#if defined(__HIP__)\n#elif defined(__CUDACC__)\n#endif\n"}
    t = tree(tmp_path / "src", files)
    hit = _only_hit(t, "vendored-library-hipified")
    assert hit.evidence.where == "cpp/third_party/glm/glm/glm.hpp:1"
    _drafted(t)
    # hipify_python.preprocessor neither rewrites nor follows a file whose first line is exactly its breadcrumb: on
    # the headers the package includes, and on the one that names CUDA's macros
    crumb = "// !!! This is a file automatically generated by hipify!!!\n"
    for name in ("cpp/third_party/glm/glm/glm.hpp", "cpp/third_party/glm/glm/gtc/ptr.hpp",
                 "cpp/third_party/glm/glm/simd/platform.h"):
        assert (t / name).read_text() == crumb + files[name], name
    for name in ("cpp/third_party/glm/glm/detail/setup.hpp", "cpp/third_party/glm/glm/detail/func.inl",
                 "cpp/third_party/cub/util.cuh", "cpp/own.cuh"):
        assert (t / name).read_text() == files[name], name
    # a tree drafted again after the fix finds nothing left to do
    assert "vendored-library-hipified" not in [h.trap.id for h in in_build_files(BuildFiles.read(t))]


def test_c10_hip_names_torch_dropped_become_c10_cuda_names_from_torch_2_11(tmp_path):
    # torch-ans 0.4.0: `using DeviceGuard = c10::hip::HIPGuard;` for ROCm; torch 2.11's c10/hip headers declare
    # c10::cuda::CUDAGuard instead. The Masquerading names ATen/hip/impl still declares are left as they are.
    header = ("#include <c10/hip/HIPGuard.h>\nusing DeviceGuard = c10::hip::HIPGuard;\n"
              "using Opt = c10::hip::OptionalHIPGuard;\nauto s = c10::hip::getCurrentHIPStream();\n"
              "using M = c10::hip::OptionalHIPGuardMasqueradingAsCUDA;\nusing G2 = c10::hip::HIPGuard;\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "ta/api.hpp": header})
    hit = _only_hit(t, "c10-hip-names-removed")
    assert hit.evidence.where == "ta/api.hpp:2" and len(hit.fix.edits) == 3  # type: ignore[union-attr]
    text = draft_recipe("a", "a==1.0", "0" * 64, read_tree(t), ["gfx1100"])
    assert all(p["when"] == "${{ torch.version >= '2.11' }}" for p in yaml.safe_load(text)["patches"]
               if "api.hpp" in p["replace"]["file"])
    _apply_draft_patches(t, text)
    assert (t / "ta/api.hpp").read_text() == (
        "#include <c10/hip/HIPGuard.h>\nusing DeviceGuard = c10::cuda::CUDAGuard;\n"
        "using Opt = c10::cuda::OptionalCUDAGuard;\nauto s = c10::cuda::getCurrentCUDAStream();\n"
        "using M = c10::hip::OptionalHIPGuardMasqueradingAsCUDA;\nusing G2 = c10::cuda::CUDAGuard;\n")


def test_a_rocm_extension_class_torch_lacks_falls_back_to_cuda_extension_not_a_cpp_one(tmp_path):
    # torch-ans 0.4.0: `from torch.utils.cpp_extension import ROCMExtension` in a try, None on ImportError, and its
    # ROCm branch then builds a CppExtension: the .cu sources compiled unhipified
    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension\n"
             "try:\n    from torch.utils.cpp_extension import ROCMExtension\nexcept ImportError:\n    ROCMExtension = None\n"
             "ext = ROCMExtension if ROCMExtension is not None else CppExtension\n"
             "setup(name='a', ext_modules=[ext('a', ['k.cu'])], cmdclass={'build_ext': BuildExtension})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    hit = _only_hit(t, "rocm-extension-class-missing")
    assert hit.evidence.where == "setup.py:6"
    _drafted(t)
    assert "    ROCMExtension = CUDAExtension  # rocbuild: hipifies on ROCm\n" in (t / "setup.py").read_text()
    # without CUDAExtension to fall back to, nothing is written
    t2 = tree(tmp_path / "b", {"setup.py": setup.replace(", CUDAExtension", ""), "k.cu": "__global__ void k() {}\n"})
    assert "rocm-extension-class-missing" not in [h.trap.id for h in in_build_files(BuildFiles.read(t2))]


def test_directed_rounding_intrinsics_call_the_device_librarys_functions(tmp_path):
    # clic-inference-extensions 0.1.0.post2 called `__frcp_rd(a)`, which clang's HIP headers hide behind
    # OCML_BASIC_ROUNDED_OPERATIONS; ROCm's ocml.bc has directed add, sub, mul and fma, and no directed division,
    # reciprocal or square root (its first fix, __ocml_div_rtn_f32, failed to link): those are left as they are
    header = ("__device__ float r(float a) { return __frcp_rd(a) + __fdiv_ru(a, a); }\n"
              "__device__ double s(double a, double b) { return __dadd_ru(a, b) + __fma_rz(a, b, a) + __dsqrt_rd(a); }\n"
              "__device__ float t(float a) { return __fmul_rn(a, a) + __fmaf_ru(a, a, a) + __fsub_rd(a, a); }\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "common.h": header})
    hit = _only_hit(t, "rounding-intrinsics-hidden")
    assert hit.evidence.where == "common.h:2"
    _drafted(t)
    # each as clang's __clang_hip_math.h defines it under OCML_BASIC_ROUNDED_OPERATIONS
    assert (t / "common.h").read_text() == (
        "__device__ float r(float a) { return __frcp_rd(a) + __fdiv_ru(a, a); }\n"
        "__device__ double s(double a, double b) { return __ocml_add_rtp_f64(a, b) + __ocml_fma_rtz_f64(a, b, a)"
        " + __dsqrt_rd(a); }\n"
        "__device__ float t(float a) { return __fmul_rn(a, a) + __ocml_fma_rtp_f32(a, a, a) + __ocml_sub_rtn_f32(a, a); }\n")
    # a reciprocal alone: named from the log, with no fix to write
    t2 = tree(tmp_path / "b", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                               "common.h": "__device__ float r(float a) { return __frcp_rd(a); }\n"})
    line = "../../common_hip.h:1:45: error: use of undeclared identifier '__frcp_rd'; did you mean '__frcp_rn'?"
    (hit,) = [h for h in in_log([(3, line)], BuildFiles.read(t2)) if h.trap.id == "rounding-intrinsics-hidden"]
    assert hit.evidence.value == "__frcp_rd" and hit.fix is None


def test_a_packages_own_cuda_switch_defaulting_to_auto_is_set(tmp_path):
    # beamgrad 2.3.0: BEAMGRAD_CUDA=auto asks nvcc (none here) and drops the CUDA extension when its build fails
    setup = ("import os\nfrom torch.utils.cpp_extension import CUDA_HOME, CUDAExtension, CppExtension\n"
             "CUDA_MODE = os.environ.get('BEAMGRAD_CUDA', 'auto').strip().lower()\n"
             "def build_cuda():\n    if CUDA_MODE in {'1', 'on'}:\n        return True\n    return CUDA_HOME is not None\n"
             "ext = [CUDAExtension('b._C', ['k.cu'])] if build_cuda() else []\n")
    hits = in_build_files(BuildFiles.read(tree(tmp_path / "a", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})))
    assert [h.fix for h in hits if h.trap.id == "force-variable-unset"] == [SetEnv("BEAMGRAD_CUDA", "1")]
    # a switch whose default is not 'auto' is the package's choice, left as it is
    plain = setup.replace("'auto'", "'0'")
    hits = in_build_files(BuildFiles.read(tree(tmp_path / "b", {"setup.py": plain, "k.cu": "__global__ void k() {}\n"})))
    assert "force-variable-unset" not in [h.trap.id for h in hits]


def test_a_cpu_only_build_of_a_cmake_project_with_a_cuda_only_backend_names_that_trap(tmp_path):
    # serron 0.5.1: check_language(CUDA) finds no nvcc, and CMake builds the C++ backend alone
    cmake = ("project(s LANGUAGES CXX)\ninclude(CheckLanguage)\ncheck_language(CUDA)\n"
             "if(CMAKE_CUDA_COMPILER)\n  enable_language(CUDA)\nendif()\n")
    t = tree(tmp_path / "src", {"CMakeLists.txt": cmake, "pyproject.toml": "[build-system]\n"})
    (hit,) = [h for h in in_findings([("cpu_only", "no device code")], BuildFiles.read(t)) if h.trap.id == "cmake-cuda-only"]
    assert hit.files is not None and hit.files.where == "CMakeLists.txt:3"
    assert isinstance(hit.fix, Edits) and hit.fix.first is not None and hit.fix.first.name == "hipify"


def test_a_cpp_file_hipify_copies_for_its_header_collides_with_its_kernel_file(tmp_path):
    # torch-ans 0.4.0: rans.cpp names nothing of CUDA's, but includes rans.hpp, which does: hipify rewrites the include
    # and writes rans_hip.cpp, which compiles to rans_hip.o as rans_cuda.cu (hipified to rans_hip.hip) does; ninja
    # said "multiple rules generate .../rans_hip.o"
    setup = ("from glob import glob\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "CUDAExtension('t._C', glob('t/*.cpp') + glob('t/*.cu'))\n")
    files = {"setup.py": setup, "t/rans.cpp": '#include "rans.hpp"\nint f() { return 1; }\n',
             "t/rans.hpp": "#include <cuda_runtime.h>\n", "t/rans_cuda.cu": '#include "rans.hpp"\n__global__ void k() {}\n',
             "t/other.cpp": '#include "plain.hpp"\n', "t/plain.hpp": "int g();\n", "t/other_cuda.cu": "__global__ void j() {}\n"}
    t = tree(tmp_path / "src", files)
    hit = _only_hit(t, "hipify-name-collision")
    assert [(p.file, p.with_) for p in hit.evidence.also] == [("t/rans_cuda.cu", "t/rans_cuda_kernels.cu")]
    line = "  ninja: error: build.ninja:31: multiple rules generate /w/src/build/temp.linux-x86_64-cpython-314/t/rans_hip.o"
    assert [h.trap.id for h in in_log([(9, line)], BuildFiles.read(t))] == ["hipify-name-collision"]


def test_a_source_another_trap_edits_is_moved_after_its_edit(tmp_path):
    # pytorch-extension 0.2 (apex): additive_masked_softmax_dropout_cuda.cu collides with its .cpp once hipified, and
    # includes <cuda_profiler_api.h>; the edit of that include had come after the move, on a file removed
    setup = "from torch.utils.cpp_extension import CUDAExtension\nCUDAExtension('m', ['m/a.cpp', 'm/a_cuda.cu'])\n"
    t = tree(tmp_path / "src", {"setup.py": setup, "m/a.cpp": "#include <cuda_runtime.h>\nint f();\n",
                                "m/a_cuda.cu": "#include <cuda_profiler_api.h>\n#include <device_launch_parameters.h>\n"})
    patches = yaml.safe_load(draft_recipe("p", "p==1.0", "0" * 64, read_tree(t), ["gfx1100"]))["patches"]
    touched = [p.get("remove") or p.get("copy", {}).get("from") or p.get("replace", {}).get("file") for p in patches]
    assert touched.index("m/a_cuda.cu") < touched.index("m/a_cuda.cu", touched.index("m/a_cuda.cu") + 1)
    last_edit = max(i for i, p in enumerate(patches) if p.get("replace", {}).get("file") == "m/a_cuda.cu")
    assert last_edit < next(i for i, p in enumerate(patches) if p.get("remove") == "m/a_cuda.cu")


def test_cg_reduce_is_written_for_hip_where_cudas_reduce_header_is_included(tmp_path):
    # ds-splat 0.0.2 and ramnet-ops 0.1.0rc2: `#include <cooperative_groups/reduce.h>` and cg::reduce(tile, v, cg::plus)
    from rocbuild.draft.masks import CG_REDUCE

    kernel = ('#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\nnamespace cg = cooperative_groups;\n'
              "__device__ float s(cg::thread_block_tile<32>& t, float v) { return cg::reduce(t, v, cg::plus<float>()); }\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "k.cu": kernel,
                                "other.cu": "#include <cooperative_groups.h>\n"})
    hit = _only_hit(t, "cg-reduce-missing")
    assert hit.evidence.where == "k.cu:2" and len(hit.fix.edits) == 1  # type: ignore[union-attr]
    _drafted(t)
    out = (t / "k.cu").read_text()
    assert out == kernel.replace("#include <cooperative_groups/reduce.h>", CG_REDUCE)
    # for HIP only, once per unit, and CUDA's own header everywhere else
    assert CG_REDUCE.startswith("#if defined(__HIP_PLATFORM_AMD__) && !defined(ROCBUILD_CG_REDUCE)")
    assert "#elif !defined(__HIP_PLATFORM_AMD__)\n#include <cooperative_groups/reduce.h>\n#endif" in CG_REDUCE
    assert "cg-reduce-missing" not in [h.trap.id for h in in_build_files(BuildFiles.read(t))]


def test_calls_hip_declares_in_another_form_take_the_form_both_declare(tmp_path):
    # ramnet-ops 0.1.0rc2: __floats2bfloat162_rn(v.x, v.y), which HIP's bf16 header lacks; torch-projectors 0.13.1:
    # cudaMalloc3DArray(&a, &desc, extent), whose flags HIP's takes without a default
    kernel = ("__device__ __nv_bfloat162 c(const float2 &v) { return __floats2bfloat162_rn(v.x, v.y); }\n"
              "void m() { cudaMalloc3DArray(&real_array, &channelDesc, extent);\n"
              "  cudaMalloc3DArray(&a, &d, e, cudaArrayLayered); }\n"
              "using floatX = nv_bfloat16; using pairX = nv_bfloat162;\n"  # mhc-cuda's typedefs
              "__device__ __nv_bfloat162 z() { return __float2bfloat162_rn(0.0f); }\n")  # turbo-gnn's
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "k.cu": kernel})
    hit = _only_hit(t, "hip-form-differs")
    assert hit.evidence.where == "k.cu:1" and len(hit.fix.edits) == 4  # type: ignore[union-attr]
    _drafted(t)
    assert (t / "k.cu").read_text() == (
        "__device__ __nv_bfloat162 c(const float2 &v) { return __float22bfloat162_rn(make_float2(v.x, v.y)); }\n"
        "void m() { cudaMalloc3DArray(&real_array, &channelDesc, extent, 0);\n"
        "  cudaMalloc3DArray(&a, &d, e, cudaArrayLayered); }\n"
        "using floatX = __hip_bfloat16; using pairX = __hip_bfloat162;\n"
        "__device__ __nv_bfloat162 z() { return __bfloat162bfloat162(__float2bfloat16(0.0f)); }\n")


def test_pkg_resources_is_required_by_its_name_and_brought_by_a_setuptools_that_has_it(tmp_path):
    # FastGeodis 1.0.5: `import pkg_resources` in setup.py; setuptools 82 removed it, and the root's is newer
    from rocbuild.plan.buildenv import distribution_of

    setup = ("import pkg_resources\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "setup(name='g', ext_modules=[CUDAExtension('g._C', ['k.cu'])])\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    recipe = yaml.safe_load(draft_recipe("g", "g==1.0", "0" * 64, read_tree(t), ["gfx1100"]))
    assert "pkg_resources" in recipe["requires"]["python"]
    assert distribution_of("pkg_resources") == "setuptools<82"


def test_a_setup_py_running_nvcc_on_its_sources_explains_a_cpu_only_build(tmp_path):
    # cuda-kernels 0.2.0: `cmd = ['nvcc'] + nvcc_flags + [source, '-o', output]`, failures degraded to a CPU-only wheel
    setup = ("import subprocess\nv = subprocess.check_output(['nvcc', '--version'])\n"
             "cmd = ['nvcc'] + ['-O3', '--shared'] + ['k.cu', '-o', 'k.so']\n")
    files = BuildFiles.read(tree(tmp_path / "a", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"}))
    (hit,) = [h for h in in_findings([("cpu_only", "no device code")], files) if h.trap.id == "nvcc-build-of-its-own"]
    assert hit.files is not None and hit.files.where == "setup.py:3" and hit.fix is None
    # nvcc asked for its version alone is nvcc-version-probe's, not this
    files = BuildFiles.read(tree(tmp_path / "b", {"setup.py": setup.splitlines()[1] + "\n", "k.cu": ""}))
    assert "nvcc-build-of-its-own" not in [h.trap.id for h in in_findings([("cpu_only", "")], files)]


def test_a_gpu_probe_followed_by_questions_to_the_device_is_left_to_its_no_gpu_path(tmp_path):
    # stainx 0.1.6: `self.cuda_available = torch.cuda.is_available()`, then torch.cuda.current_device() when true;
    # made True, setup.py asked a GPU there is none of. Its gates (`if torch.cuda.is_available():`) are still made True.
    setup = ("import torch\nfrom torch.utils.cpp_extension import CUDAExtension\nclass Info:\n    def __init__(self):\n"
             "        self.cuda_available = torch.cuda.is_available()\n        if not self.cuda_available:\n"
             "            self.cc = 75\n            return\n        self.device = torch.cuda.current_device()\n"
             "if torch.cuda.is_available():\n    info = Info()\n    ext = [CUDAExtension('s._C', ['k.cu'])]\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    _drafted(t)
    out = (t / "setup.py").read_text()
    assert "        self.cuda_available = torch.cuda.is_available()\n" in out and "\nif True:\n" in out


def test_a_cuda_library_linked_by_name_is_dropped_by_the_drafter(tmp_path):
    # stainx 0.1.6: extra_link_args=["-lcudart"] cost a try (ld: cannot find -lcudart) before the drafter knew it
    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
             "ext = CUDAExtension('s._C', ['k.cu'], extra_link_args=['-O2', '-lcudart'])\n"
             "setup(name='s', ext_modules=[ext], cmdclass={'build_ext': BuildExtension})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    hit = _only_hit(t, "cuda-library-linked")
    assert hit.evidence.where == "setup.py:3"
    _drafted(t)
    assert "extra_link_args=['-O2'])" in (t / "setup.py").read_text()
    # torchdtw 0.4.2 filters cudart out itself: the string in its test stays (dropping it left `if not in lib`)
    filters = ("from torch.utils.cpp_extension import CUDAExtension\next = CUDAExtension('d._C', ['k.cu'])\n"
               "ext.libraries = [lib for lib in ext.libraries if \"cudart\" not in lib]\n"
               "flags = [f for f in FLAGS if f != '-lcudart' and '--use_fast_math' in f]\n")
    t = tree(tmp_path / "filters", {"setup.py": filters, "k.cu": "__global__ void k() {}\n"})
    assert _seen(t) == []
    assert "patches" not in yaml.safe_load(draft_recipe("d", "d==1.0", "0" * 64, read_tree(t), ["gfx1100"]))


def test_a_gpu_probe_whose_block_only_asks_the_device_for_an_arch_stays(tmp_path):
    # gimbal-engine 2.1.2: `if torch.cuda.is_available():` then get_device_capability(0), to set TORCH_CUDA_ARCH_LIST;
    # made True, setup.py asked for a CUDA device and died ("Torch not compiled with CUDA enabled")
    picks = ("import os, torch\nfrom torch.utils.cpp_extension import CUDAExtension\ndef arch():\n"
             "    if torch.cuda.is_available():\n        major, minor = torch.cuda.get_device_capability(0)\n"
             "        os.environ['TORCH_CUDA_ARCH_LIST'] = f'{major}.{minor}'\n"
             "ext = [CUDAExtension('g._cuda', ['k.cu'])]\n")
    t = tree(tmp_path / "a", {"setup.py": picks, "k.cu": "__global__ void k() {}\n"})
    assert "gpu-probe-at-build" not in _seen(t)
    # a block that builds the extension is the GPU branch, and is still taken
    gates = ("import torch\nfrom torch.utils.cpp_extension import CUDAExtension\nif torch.cuda.is_available():\n"
             "    ext = [CUDAExtension('g._cuda', ['k.cu'])]\n    cap = torch.cuda.get_device_capability(0)\n")
    t = tree(tmp_path / "b", {"setup.py": gates, "k.cu": "__global__ void k() {}\n"})
    _drafted(t)
    assert "\nif True:\n" in (t / "setup.py").read_text()


def test_extensions_built_only_for_build_ext_on_the_command_line_are_built_in_the_wheel(tmp_path):
    # torch-llm-kernels 0.1.0: `needs_ext_modules = 'build_ext' in sys.argv`; pip's backend runs bdist_wheel, and the
    # wheel came out with no extension at all
    setup = ("import sys\nfrom setuptools import setup\nneeds_ext_modules = 'build_ext' in sys.argv\n"
             "if needs_ext_modules:\n    from torch.utils.cpp_extension import CUDAExtension\n"
             "    ext = [CUDAExtension('t._C', ['k.cu'])]\nelse:\n    ext = []\nsetup(ext_modules=ext)\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    hit = _only_hit(t, "extension-behind-argv")
    assert hit.evidence.where == "setup.py:3"
    _drafted(t)
    assert "needs_ext_modules = True\n" in (t / "setup.py").read_text()
    # a wheel pip builds is what `bdist_wheel in sys.argv` asks for: left as it is
    t = tree(tmp_path / "b", {"setup.py": setup.replace("'build_ext'", "'bdist_wheel'"), "k.cu": ""})
    assert "extension-behind-argv" not in _seen(t)


def test_a_cpu_only_build_names_a_setup_py_in_a_folder_the_build_never_runs(tmp_path):
    # tiny-torch-nevmenko 0.1.0: pyproject.toml and setup.cfg build a pure-Python wheel; tiny_torch/setup.py holds the
    # CUDAExtension
    t = tree(tmp_path / "src", {
        "pyproject.toml": "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'setuptools.build_meta'\n",
        "setup.cfg": "[metadata]\nname = tiny\n", "tiny_torch/relu_kernel.cu": "__global__ void k() {}\n",
        "tiny_torch/setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
                               "setup(ext_modules=[CUDAExtension('relu', ['relu_kernel.cu'])])\n"})
    hits = [h for h in in_findings([("cpu_only", "no ELF file")], BuildFiles.read(t)) if h.trap.id == "extension-in-subfolder"]
    assert len(hits) == 1 and hits[0].files is not None and hits[0].files.where == "tiny_torch/setup.py:2"
    assert hits[0].fix is None
    # a top-level setup.py that builds one is not this
    (t / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\nx = CUDAExtension('a', ['b.cu'])\n")
    assert "extension-in-subfolder" not in [h.trap.id for h in in_findings([("cpu_only", "")], BuildFiles.read(t))]


def test_a_cpu_only_build_names_a_library_shipped_built_for_cuda(tmp_path):
    # deepgpr 0.1.3: src/DeepGPR/lib/deepgpr.so (built with nvcc) and deepgpr.cu, which its build never compiles
    t = tree(tmp_path / "src", {"pyproject.toml": "[project]\nname = 'd'\n", "src/d/lib/d.cu": "__global__ void k() {}\n",
                                "src/d/lib/d.so": "\x7fELF", "src/d/__init__.py": ""})
    (hit,) = [h for h in in_findings([("cpu_only", "")], BuildFiles.read(t)) if h.trap.id == "prebuilt-cuda-binary"]
    assert hit.files is not None and hit.files.value == "src/d/lib/d.so" and "d.cu" in hit.files.text
    (t / "src/d/lib/d.cu").unlink()  # a library without sources of its own is not this
    assert "prebuilt-cuda-binary" not in [h.trap.id for h in in_findings([("cpu_only", "")], BuildFiles.read(t))]


def test_a_makefile_that_runs_nvcc_is_a_build_of_its_own_not_hipcc_on_nvidias_platform():
    # haste-pytorch 0.5.0rc0: setup.py runs `make haste`, whose rules call nvcc; hipcc is never involved
    ids = [h.trap.id for h in in_log([(107, "make: nvcc: No such file or directory")], None)]
    assert ids == ["nvcc-build-of-its-own"]
    assert [h.trap.id for h in in_log([(3, "sh: 1: nvcc: not found")], None)] == ["hip-platform-nvidia"]


def test_a_cpu_only_build_names_kernels_a_setup_script_installs_beside_the_wheel(tmp_path):
    # hqq 0.2.8.post1: its egg_info command runs `python setup_cuda.py install` in hqq/kernels, which compiles
    # hqq_aten into hqq/kernels/build/ and installs it into the build's python; the wheel is pure Python
    setup = ("import os\nfrom setuptools import setup\n# python setup.py install is the usual way\n"
             "def install_cuda_cmd():\n    return 'cd hqq/kernels; python setup_cuda.py install; cd ../..;'\n"
             "def run_setup_cuda():\n    os.system(install_cuda_cmd())\nsetup(name='hqq')\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "hqq/kernels/hqq_aten_cuda_kernel.cu": "__global__ void k() {}\n",
                                "hqq/kernels/build/lib.linux-x86_64-cpython-314/hqq_aten.so": "\x7fELF"})
    ids = [h.trap.id for h in in_findings([("cpu_only", "")], BuildFiles.read(t))]
    assert "kernels-installed-aside" in ids
    assert "prebuilt-cuda-binary" not in ids  # what the failed build made is not shipped in the sdist
    (hit,) = [h for h in in_findings([("cpu_only", "")], BuildFiles.read(t)) if h.trap.id == "kernels-installed-aside"]
    assert hit.files is not None and hit.files.where == "setup.py:5" and hit.files.value == "setup_cuda.py"
    (t / "setup.py").write_text(setup.replace("os.system(install_cuda_cmd())", "pass"))  # named, never run
    assert "kernels-installed-aside" not in [h.trap.id for h in in_findings([("cpu_only", "")], BuildFiles.read(t))]


def test_half2_max_and_min_call_a_function_written_first_in_the_file(tmp_path):
    # cugpt 0.1.0: `#define H2RELU(x) __hmax2(__float2half2_rn(0.0f), (x))`; HIP's fp16 has __hmax, not __hmax2
    from rocbuild.draft.masks import HALF2_MINMAX

    kernel = ("#include <cuda_fp16.h>\n#define H2RELU(x) __hmax2(__float2half2_rn(0.0f), (x))\n"
              "__device__ half2 c(half2 a, half2 b) { return __hmin2 (a, b); }\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "k.cu": kernel})
    hit = _only_hit(t, "hip-form-differs")
    assert hit.evidence.where == "k.cu:2" and len(hit.fix.edits) == 2  # type: ignore[union-attr]
    draft = draft_recipe("p", "p==1.0", "0" * 64, read_tree(t), ["gfx1100"])
    _apply_draft_patches(t, draft)
    out = (t / "k.cu").read_text()
    assert out == HALF2_MINMAX + kernel.replace("__hmax2(", "rocbuild_hmax2(").replace("__hmin2 (", "rocbuild_hmin2(")
    _apply_draft_patches(t, draft)  # applied again (a resumed tree), the same
    assert (t / "k.cu").read_text() == out
    assert "hip-form-differs" not in _seen(t)


def test_the_limited_api_is_dropped_for_an_extension_that_includes_pybind11(tmp_path):
    # torch-llm-kernels 0.1.0: py_limited_api=True (torch then adds -DPy_LIMITED_API to hipcc's compile too), a
    # -DPy_LIMITED_API flag of its own and an abi3 tag, with kernels.h including torch/extension.h: pybind11 met
    # no Py_buffer
    setup = ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "args = {'cxx': ['-O3', '-DPy_LIMITED_API=0x03090000'], 'nvcc': ['-O3']}\n"
             "ext = [CUDAExtension('t._C', ['k.cu'], extra_compile_args=args, py_limited_api=True)]\n"
             "setup(ext_modules=ext, options={'bdist_wheel': {'py_limited_api': 'cp39'}})\n")
    t = tree(tmp_path / "a", {"setup.py": setup, "k.cu": '#include <torch/extension.h>\n__global__ void k() {}\n'})
    hit = _only_hit(t, "limited-api-with-pybind11")
    assert hit.evidence.where == "setup.py:4" and hit.evidence.value == "k.cu"
    _drafted(t)
    out = (t / "setup.py").read_text()
    assert "args = {'cxx': ['-O3', ], 'nvcc'" in out and "py_limited_api=False)]" in out
    assert "{'py_limited_api': False}" in out
    # an extension written against torch/library.h alone may keep the limited API
    t = tree(tmp_path / "b", {"setup.py": setup, "k.cu": '#include <torch/library.h>\n__global__ void k() {}\n'})
    assert "limited-api-with-pybind11" not in _seen(t)


PORT_CMAKE = """\
cmake_minimum_required(VERSION 3.24)
project(k VERSION 0.1 LANGUAGES CXX CUDA)
set(CMAKE_CXX_STANDARD 17)
find_package(CUDAToolkit REQUIRED)
find_package(CUDA)
cuda_select_nvcc_arch_flags(ARCH_FLAGS Auto)
find_package(Torch REQUIRED)
add_subdirectory(third_party/lib)
add_library(_k MODULE k.cu host.cpp)
target_link_libraries(_k PRIVATE CUDA::cudart CUDA::cublas ${TORCH_LIBRARIES})
"""


def test_a_cmake_project_whose_gpu_language_is_cuda_is_drafted_as_hip(tmp_path):
    # cuneb-chenn 0.0.4, fusedtok 2.5.0, gpuastar-cu 0.1.0, cuda-moea 0.2.0: project(... CUDA), find_package(CUDAToolkit),
    # CUDA::cudart; CMake looked for nvcc. A vendored library's own CMakeLists.txt is left as it is.
    t = tree(tmp_path / "src", {"CMakeLists.txt": PORT_CMAKE, "k.cu": "__global__ void k() {}\n", "host.cpp": "",
                                "pyproject.toml": "[build-system]\nbuild-backend = 'scikit_build_core.build'\n",
                                "third_party/lib/CMakeLists.txt": "enable_language(CUDA)\n"})
    hit = _only_hit(t, "cmake-cuda-only")
    assert hit.evidence.where == "CMakeLists.txt:2" and isinstance(hit.fix, Edits)
    assert {e.file for e in hit.fix.edits} == {"CMakeLists.txt"}
    text = draft_recipe("k", "k==0.1", "0" * 64, read_tree(t), ["gfx1100"])
    recipe = load_recipe_text(text, tmp_path / "k.yaml")
    # the sources hipified in place by a step of their own, before the wheel's; torch's CMake package found
    assert [s.KIND for s in recipe.steps] == ["run", "wheel"] and recipe.steps[0].name == "hipify"
    assert recipe.steps[0].argv[:2] == ("python", "-c") and "hipify_python" in recipe.steps[0].argv[2]  # type: ignore[attr-defined]
    assert dict(recipe.steps[1].env)["CMAKE_PREFIX_PATH"].value == "${{ torch.cmake_prefix }}"
    _apply_draft_patches(t, text)
    out = (t / "CMakeLists.txt").read_text()
    pre, rest = out.split("project(k VERSION 0.1 LANGUAGES CXX HIP)\n")
    assert 'set(CMAKE_HIP_ARCHITECTURES "${{ archs | join(\';\') }}")' in pre and "set(CMAKE_HIP_STANDARD 20)" in pre
    assert "set(CMAKE_CXX_STANDARD 20)\nfind_package(CUDAToolkit" not in rest and "set(CMAKE_CXX_STANDARD 20)" in rest
    assert "set(CUDAToolkit_FOUND TRUE)" in rest and "find_package(CUDAToolkit" not in rest
    # torchopt 0.7.3: the legacy `find_package(CUDA)` gates enable_language(CUDA), then cuda_select_nvcc_arch_flags
    assert "set(CUDA_FOUND TRUE)" in rest and "find_package(CUDA)" not in rest
    assert 'set(ARCH_FLAGS "")' in rest and "cuda_select_nvcc_arch_flags" not in rest
    assert "find_package(hipblas REQUIRED)" in rest and "cublas=roc::hipblas" in rest
    assert rest.rstrip().endswith('_rocbuild_cu_as_hip("${CMAKE_CURRENT_SOURCE_DIR}")')
    assert 'if(s MATCHES "\\\\.cu$"' in rest  # CMake's "\\.cu$", as written (a regex replacement undoes escapes)
    assert (t / "third_party/lib/CMakeLists.txt").read_text() == "enable_language(CUDA)\n"
    _apply_draft_patches(t, text)  # a tree patched already is left as it is
    assert (t / "CMakeLists.txt").read_text() == out
    assert "cmake-cuda-only" not in _seen(t)
    # a torch extension built by setup.py, beside a CMakeLists.txt for its C++ API that setup.py never runs
    # (torch-scatter 2.1.2's): not ported
    (t / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\nx = CUDAExtension('a', ['k.cu'])\n")
    (t / "CMakeLists.txt").write_text(PORT_CMAKE)
    assert "cmake-cuda-only" not in _seen(t)


# fast-rnnt 1.3's (k2-fsa's) top CMakeLists.txt, trimmed: CUDA joins a languages variable only where nvcc is found,
# and torch is found by an included cmake/torch.cmake
LANGUAGES_CMAKE = """set(languages CXX)
set(_FT_WITH_CUDA ON)
set(CMAKE_CXX_STANDARD 14 CACHE STRING "The C++ version to be used.")
find_program(FT_HAS_NVCC nvcc)
if(NOT FT_HAS_NVCC AND "$ENV{CUDACXX}" STREQUAL "")
  set(_FT_WITH_CUDA OFF)
endif()
if(_FT_WITH_CUDA)
  set(languages ${languages} CUDA)
endif()
message(STATUS "Enabled languages: ${languages}")
project(fast_rnnt ${languages})
include(cmake/torch.cmake)
add_library(core k.cu)
"""


def test_a_cmake_project_that_adds_cuda_to_a_languages_variable_where_nvcc_is_found_is_ported(tmp_path):
    # fast-rnnt 1.3 had built CPU-only: no nvcc, so CUDA never joined its languages, and nothing said so
    t = tree(tmp_path / "src", {"CMakeLists.txt": LANGUAGES_CMAKE, "k.cu": "__global__ void k() {}\n",
                                "cmake/torch.cmake": "find_package(Torch REQUIRED)\n",
                                "setup.py": "import torch\nsubprocess.check_call(['cmake', src])\n"})
    hit = _only_hit(t, "cmake-cuda-only")
    assert hit.evidence.where == "CMakeLists.txt:9" and hit.evidence.text == "set(languages ${languages} CUDA)"
    assert "torch-cmake-rocm-path" in _seen(t)  # its find_package(Torch) sits in a module the top file includes
    text = draft_recipe("k", "k==0.1", "0" * 64, read_tree(t), ["gfx1100"])
    _apply_draft_patches(t, text)
    out = (t / "CMakeLists.txt").read_text()
    assert "set(languages ${languages} HIP)" in out and "${languages} CUDA" not in out
    assert "set(FT_HAS_NVCC TRUE)" in out and "find_program" not in out
    pre, rest = out.split("project(fast_rnnt ${languages})\n")
    assert "set(CMAKE_HIP_STANDARD 20)" in pre and 'set(CMAKE_CXX_STANDARD 20 CACHE STRING' in pre
    assert rest.startswith("# rocbuild (trap cmake-cuda-only): HIP's runtime") and "find_package(hip REQUIRED)" in rest
    _apply_draft_patches(t, text)  # a tree patched already is left as it is
    assert (t / "CMakeLists.txt").read_text() == out
    assert "cmake-cuda-only" not in _seen(t)
    # a languages variable CUDA never joins is not a CUDA project
    plain = LANGUAGES_CMAKE.replace("${languages} CUDA", "${languages} C")
    assert "cmake-cuda-only" not in _seen(tree(tmp_path / "plain", {"CMakeLists.txt": plain, "setup.py": "import torch\n"}))
    # fast-rnnt's own setup.py: its build_ext, named BuildExtension, runs cmake through a shell string
    shell = ("import os\nfrom setuptools.command.build_ext import build_ext\n"
             "class BuildExtension(build_ext):\n    def build_extension(self, ext):\n"
             "        cmd = f\"\"\"\n            cd {self.build_temp}\n\n            cmake {args} {here}\n\n"
             "            make {jobs} _fast_rnnt\n        \"\"\"\n        os.system(cmd)\n"
             "setup(ext_modules=[e], cmdclass={'build_ext': BuildExtension})\n")
    t = tree(tmp_path / "shell", {"CMakeLists.txt": LANGUAGES_CMAKE, "k.cu": "__global__ void k() {}\n",
                                  "cmake/torch.cmake": "find_package(Torch REQUIRED)\n", "setup.py": shell})
    reading = read_torch(t)
    assert reading is not None and reading.cmake
    assert {"cmake-cuda-only", "torch-cmake-rocm-path"} <= set(_seen(t))
    # a shell string that only names cmake (a message, a path) runs nothing
    (t / "setup.py").write_text(shell.replace("cmake {args}", "echo cmake-{args}"))
    assert not read_torch(t).cmake  # type: ignore[union-attr]


def test_lane_masks_kept_in_32_bit_variables_get_overloads_written_first_in_the_file(tmp_path):
    # gpuastar-cu 0.1.0: `unsigned const mask = __activemask();` then `__shfl_sync(mask, base, leader)`
    from rocbuild.draft.masks import WARP32

    kernel = ("__device__ int f(int base) {\n  unsigned const mask = __activemask();\n"
              "  return __shfl_sync(mask, base, 0);\n}\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "k.cu": kernel})
    hit = _only_hit(t, "lane-mask-variable-32bit")
    assert hit.evidence.where == "k.cu:3"
    _drafted(t)
    assert (t / "k.cu").read_text() == WARP32 + kernel
    assert "lane-mask-variable-32bit" not in _seen(t)
    # a 64-bit variable, or a literal mask (warp-mask-32bit's), is not this
    wide = kernel.replace("unsigned const mask", "unsigned long long const mask")
    t = tree(tmp_path / "b", {"setup.py": "", "k.cu": wide})
    assert "lane-mask-variable-32bit" not in _seen(t)
    # deformops 3.0.1's utils.cuh takes the mask as a parameter: `softmax_forward_warp(acc_t *w, int64_t N,
    # unsigned lane_mask)`, then `__shfl_xor_sync(lane_mask, local_max, offset)`
    param = ("template <typename T>\n__device__ void f(T *w, int64_t N,\n    unsigned lane_mask) {\n"
             "  w[0] = __shfl_xor_sync(lane_mask, w[0], 1);\n}\n")
    t = tree(tmp_path / "c", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "utils.cuh": param})
    assert _only_hit(t, "lane-mask-variable-32bit").evidence.where == "utils.cuh:4"


def test_a_triton_package_expects_no_device_code_and_requires_rocms_triton(tmp_path):
    # flash-sparse-attn 2.0.6: its kernels are @triton.jit (its csrc/ is 1.x's, never built), `triton>=3.6.0` in
    # pyproject.toml's dependencies; the draft expected device code, and PyPI's triton has no AMD backend
    pyproject = ('[project]\nname = "f"\ndependencies = [\n  "triton>=3.6.0",\n]\n'
                 '[build-system]\nbuild-backend = "setuptools.build_meta"\n')
    t = tree(tmp_path / "src", {"pyproject.toml": pyproject, "setup.py": "from setuptools import setup\nsetup()\n",
                                "f/__init__.py": "", "f/ops.py": "import triton\n\n@triton.jit\ndef k(x):\n    pass\n",
                                "csrc/old.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "triton-kernels").evidence.where == "f/ops.py:3"
    assert _only_hit(t, "cuda-triton-required").evidence.where == "pyproject.toml:4"
    recipe = load_recipe_text(draft_recipe("f", "f==1.0", "0" * 64, read_tree(t), ["gfx1100"]), tmp_path / "f.yaml")
    assert [v.required for v in recipe.verify if v.KIND == "code-objects"] == [False]  # type: ignore[attr-defined]
    _drafted(t)
    assert '  "pytorch-triton-rocm",\n' in (t / "pyproject.toml").read_text()
    # an extension built at install is not a Triton package, whatever it imports
    (t / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\nx = CUDAExtension('a', ['b.cu'])\n")
    assert "triton-kernels" not in _seen(t)
    # nor is DeepSpeed 0.19.8, whose setup.py appends its op builders' extensions to `ext_modules = []`
    (t / "setup.py").write_text("ext_modules = []\nif BUILD_OPS:\n    ext_modules.append(builder.builder())\n")
    assert "triton-kernels" not in _seen(t)


def test_a_cuda_arch_variable_read_before_the_gpu_is_asked_is_set(tmp_path):
    # mhc-cuda 0.1.0: `cuda_arch = os.environ.get("CUDA_ARCH")`, and only without it `if not torch.cuda.is_available():
    # raise`, then torch.cuda.get_device_capability(): setup.py died asking a GPU there is none of
    setup = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension\ndef flags():\n    import torch\n"
             "    cuda_arch = os.environ.get('CUDA_ARCH')\n    if cuda_arch:\n        return [f'-DARCH={cuda_arch}']\n"
             "    if not torch.cuda.is_available():\n        raise RuntimeError('CUDA is required')\n"
             "    major, minor = torch.cuda.get_device_capability()\n    return []\n"
             "ext = CUDAExtension('m._C', ['k.cu'], extra_compile_args={'nvcc': flags()})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    hit = _only_hit(t, "cuda-arch-before-probe")
    assert hit.evidence.where == "setup.py:5" and hit.fix == SetEnv("CUDA_ARCH", "80")
    # one read where no probe follows is the package's own choice
    t = tree(tmp_path / "b", {"setup.py": setup.replace("torch.cuda.is_available()", "False").replace(
        "torch.cuda.get_device_capability()", "(8, 0)"), "k.cu": ""})
    assert "cuda-arch-before-probe" not in _seen(t)


def test_hip_bf16_header_reached_by_a_host_source_makes_clang_the_host_compiler(tmp_path):
    # ista-daslab-optimizers-cuda 1.1.0: its .cpp bindings include utils.h, which includes cuda_bf16.h; hipify makes
    # it hip/hip_bf16.h, which g++ cannot read (ROCm 7.2: static assertion failed on __bf16_2)
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "kernels/tools/tools.cpp": '#include <torch/extension.h>\n#include "../utils.h"\n',
                                "kernels/utils.h": '#pragma once\n#include "types.h"\n',
                                "kernels/types.h": "#include <cuda_bf16.h>\ntypedef __nv_bfloat16 bfloat16;\n",
                                "kernels/k.cu": "#include <cuda_bf16.h>\n"})
    hit = _only_hit(t, "bf16-header-for-host-compiler")
    assert (hit.evidence.where, hit.evidence.text) == ("kernels/tools/tools.cpp:2", '#include "../utils.h"')
    assert hit.fix == SetEnv("CXX", "${{ rocm.hip_compiler }}")
    # only device sources (hipcc's) include it, or a host source includes a header that does not: nothing to do
    for files in ({"kernels/k.cu": "#include <cuda_bf16.h>\n", "a.cpp": '#include "b.h"\n', "b.h": "int b();\n"},
                  {"a.cpp": '#include "a.cpp"\n#include "missing.h"\n'}):  # a cycle and a header not in the tree
        assert "bf16-header-for-host-compiler" not in _seen(tree(tmp_path / str(len(files)), files))


def test_half_that_cublas_brought_gets_the_fp16_header_where_cublas_is_included(tmp_path):
    # cuda-moea: cuda_globals.cuh's `sizeof(half)`, which CUDA code gets through cublas_v2.h (cublas_api.h includes
    # cuda_fp16.h); hipBLAS's header does not include hip_fp16.h
    t = tree(tmp_path / "src", {"CMakeLists.txt": "project(m CXX CUDA)\n",
                                "utils.cuh": "#pragma once\n#include <cublas_v2.h>\n",
                                "both.cu": "#include <cuda_fp16.h>\n#include <cublas_v2.h>\n",  # has it: left alone
                                "globals.cuh": '#include "utils.cuh"\nconstexpr size_t HALF_SIZE = sizeof(half);\n'})
    hit = _only_hit(t, "fp16-from-cublas")
    assert [(e.file, e.find) for e in hit.fix.edits] == [("utils.cuh", "#include <cublas_v2.h>")]  # type: ignore[union-attr]
    _drafted(t)
    assert (t / "utils.cuh").read_text().splitlines()[1:] == [
        "#include <cuda_fp16.h>  // rocbuild: cuBLAS's header brings half, hipBLAS's does not", "#include <cublas_v2.h>"]
    assert "fp16-from-cublas" not in _seen(t)
    # `half` as a word in a comment is no use of the type
    quiet = tree(tmp_path / "quiet", {"CMakeLists.txt": "project(m CXX CUDA)\n",
                                      "k.cu": "#include <cublas_v2.h>\n// half of the threads wait\n"})
    assert "fp16-from-cublas" not in _seen(quiet)


def test_a_cmake_list_of_python_versions_gets_the_target_pythons(tmp_path):
    # attention-kernels 0.2.0.post2 (vLLM's CMake): set(PYTHON_SUPPORTED_VERSIONS "3.8" ... "3.12") against 3.14
    line = 'set(PYTHON_SUPPORTED_VERSIONS "3.8" "3.9" "3.10" "3.11" "3.12")'
    t = tree(tmp_path / "src", {"setup.py": "from setuptools import setup\nsetup(name='a')\n",
                                "CMakeLists.txt": f"cmake_minimum_required(VERSION 3.26)\n{line}\nproject(a CXX)\n"})
    hit = _only_hit(t, "python-version-allow-list")
    assert hit.evidence.where == "CMakeLists.txt:2"
    assert hit.fix == ReplaceText("CMakeLists.txt", line, line[:-1] + ' "${{ python.version }}")',
                                  says="add the target python's version to CMakeLists.txt:2's list")
    recipe = draft_recipe("a", "a==1.0", "0" * 64, read_tree(t), ["gfx1100"])
    assert load_recipe_text(recipe, "a.yaml").patches  # the draft carries it, and loads
    # one string, semicolons: the version goes inside it
    one = tree(tmp_path / "one", {"CMakeLists.txt": 'set(PYTHON_SUPPORTED_VERSIONS "3.9;3.10")\nproject(a CXX)\n'})
    assert _only_hit(one, "python-version-allow-list").fix.with_ == (  # type: ignore[union-attr]
        'set(PYTHON_SUPPORTED_VERSIONS "3.9;3.10;${{ python.version }}")')


def test_a_cpu_only_build_shows_what_the_build_said_of_its_cpu_path(tmp_path):
    # dynquant-kernels 0.5.3: its CMake warns, and builds CPU-only, on a torch whose torch.version.cuda is None
    from rocbuild.draft.report import cpu_path_said

    log = tmp_path / "02-wheel.log"
    log.write_text("  -- Found Threads: TRUE\n  Optional package rccl not found\n"
                   "  No GPU arch specified for ROCm build.  Please use PYTORCH_ROCM_ARCH\n"
                   "  CMake Warning at CMakeLists.txt:133 (message):\n"
                   "    A CUDA toolkit was found but this torch (2.14.1) is a CPU\n"
                   "    build, so the extension cannot link torch's CUDA libraries.  Building\n"
                   "    CPU-only.\n\n\n  -- Configuring done (3.3s)\n  CUDA not available: skipping the CUDA ops\n"
                   "  CUDA not available: skipping the CUDA ops\n")  # said again: shown once
    said = cpu_path_said([("cpu_only", "m.so: no device code")], [log])
    assert said == ["the build said (02-wheel.log:4): CMake Warning at CMakeLists.txt:133 (message): A CUDA toolkit "
                    "was found but this torch (2.14.1) is a CPU build, so the extension cannot link torch's CUDA "
                    "libraries.  Building CPU-only.",
                    "the build said (02-wheel.log:11): CUDA not available: skipping the CUDA ops"]
    assert cpu_path_said([("cuda_linked", "m.so links libcudart")], [log]) == []  # not a CPU-only finding


def test_cusolver_status_names_become_hipsolvers(tmp_path):
    # cuda-moea 0.2.0: `cusolverStatus_t status = cusolverDnCreate(&handle_); if (status != CUSOLVER_STATUS_SUCCESS)`;
    # torch's hipify maps the call and leaves the status names
    t = tree(tmp_path / "src", {"CMakeLists.txt": "project(m CXX CUDA)\n",
                                "m.cu": "cusolverStatus_t status = cusolverDnCreate(&handle_);\n"
                                        "if (status != CUSOLVER_STATUS_SUCCESS || s == CUSOLVER_STATUS_ZERO_PIVOT) {}\n"})
    hit = _only_hit(t, "cusolver-status-names")
    assert hit.evidence.where == "m.cu:1" and len(hit.fix.edits) == 2  # type: ignore[union-attr]
    _drafted(t)
    assert (t / "m.cu").read_text() == ("hipsolverStatus_t status = cusolverDnCreate(&handle_);\n"
                                        "if (status != HIPSOLVER_STATUS_SUCCESS || s == HIPSOLVER_STATUS_ZERO_PIVOT) {}\n")
    assert "cusolver-status-names" not in _seen(t)


def test_cuda_flags_made_by_a_call_a_concatenation_or_a_comprehension_leave_valid_python(tmp_path):
    # torch-baidu-ctc 0.3.0: `["-gencode", "arch=compute_{},code=sm_{}".format(a, b)]` and
    # `.append("-ccbin=" + CC)`; bf16-fused-adam 0.1: `[f"--generate-code=arch=compute_{arch},code=sm_{arch}" for
    # arch in ARCHS]`. Dropping the string alone left `[.format(a, b)]`, `append(+ CC)` and `[ for arch in ARCHS]`.
    setup = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension\nflags = ['-O3']\nCC = os.getenv('CC')\n"
             "if CC is not None:\n    args['nvcc'].append('-ccbin=' + CC)\n"
             "flags.extend(['-gencode', 'arch=compute_{},code=sm_{}'.format(a, b)])\n"
             "arch_flags = flags + [\n    f'--generate-code=arch=compute_{arch},code=sm_{arch}'\n"
             "    for arch in ARCHS\n]\nCUDAExtension('e', ['e.cu'], extra_compile_args={'nvcc': arch_flags})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "e.cu": "__global__ void k() {}\n"})
    _drafted(t)
    out = (t / "setup.py").read_text()
    ast.parse(out)
    assert "gencode" not in out and "generate-code" not in out and "ccbin" not in out
    assert "if CC is not None:\n    pass\n" in out and "flags.extend([])" in out and "arch_flags = flags + [" in out


def test_a_kernel_launch_spaced_inside_its_chevrons_is_written_together(tmp_path):
    # gaussian-splatting 2.11.0's simple-knn: `coord2Morton << <(P + 255) / 256, 256 >> > (P, points, ...)`
    kernel = ("void f() {\n  coord2Morton << <(P + 255) / 256, 256 >> > (P, points, minn, maxx);\n"
              "  boxMinMax << <num_boxes, BOX_SIZE >> > (P, points);\n  k<float> << < g, b >> >(x);\n"
              "  ok<<<g, b>>>(x);\n  int s = a << 2;\n}\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "knn.cu": kernel,
                                "host.cpp": "void g() { x << <y >> > (z); }\n"})  # not CUDA: left
    hit = _only_hit(t, "kernel-launch-spaced")
    assert hit.evidence.where == "knn.cu:2" and len(hit.fix.edits) == 1  # type: ignore[union-attr]
    _drafted(t)
    assert (t / "knn.cu").read_text() == (
        "void f() {\n  coord2Morton<<<(P + 255) / 256, 256 >>>(P, points, minn, maxx);\n"
        "  boxMinMax<<<num_boxes, BOX_SIZE >>>(P, points);\n  k<float><<< g, b >>>(x);\n"
        "  ok<<<g, b>>>(x);\n  int s = a << 2;\n}\n")
    assert "kernel-launch-spaced" not in _seen(t)


def test_a_float_atomic_max_of_its_own_is_guarded_out_for_hip(tmp_path):
    # svox 0.2.32: `__device__ inline void atomicMax(float* result, float value){ ... do { } while (...); }`, and a
    # double one; HIP's runtime declares both, returning float
    body = ("__device__ inline void atomicMax(float* result, float value){\n    unsigned old = 0, assumed;\n"
            "    do {\n        assumed = old; // }\n    } while (old != assumed);\n    return;\n}\n")
    double = "static __device__ double atomicMin(double* a, double v) { return v; }\n"
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "common.cuh": f"#pragma once\n{body}\n{double}__device__ int atomicMax(int* a, int v);\n"})
    hit = _only_hit(t, "atomic-redefined")
    assert hit.evidence.where == "common.cuh:2" and len(hit.fix.edits) == 2  # type: ignore[union-attr]
    _drafted(t)
    guard = "#if !defined(__HIP_PLATFORM_AMD__)  // rocbuild: HIP's runtime defines this atomic"
    assert (t / "common.cuh").read_text() == (f"#pragma once\n{guard}\n{body.rstrip()}\n#endif\n\n{guard}\n"
                                              f"{double.rstrip()}\n#endif\n__device__ int atomicMax(int* a, int v);\n")
    assert "atomic-redefined" not in _seen(t)


def test_a_cmake_project_that_finds_torch_is_told_where_rocm_is(tmp_path):
    # attention-kernels 0.2.0.post2: find_package(Torch) ran LoadHIP.cmake, which found no ROCM_PATH and no /opt/rocm
    # ("Building without ROCm support"), then vLLM's CMake stopped: "Can't find CUDA or HIP installation."
    t = tree(tmp_path / "src", {"setup.py": "from setuptools import setup\nsetup(name='a')\n",
                                "CMakeLists.txt": "project(a CXX)\nfind_package(Torch REQUIRED)\n"})
    hit = _only_hit(t, "torch-cmake-rocm-path")
    assert hit.evidence.where == "CMakeLists.txt:2"
    recipe = draft_recipe("a", "a==1.0", "0" * 64, read_tree(t), ["gfx1100"])
    loaded = load_recipe_text(recipe, "a.yaml")
    env = dict(loaded.steps[0].env)  # type: ignore[union-attr]
    assert env["ROCM_PATH"].value == "${{ rocm.path }}" and env["ROCM_PATH"].when is None
    assert env["HIP_DEVICE_LIB_PATH"].value == "${{ rocm.device_lib_dir }}"
    assert env["HIP_DEVICE_LIB_PATH"].when == "${{ rocm.layout == 'distro' }}"
    # fast-rnnt 1.3: CMake then stopped at each package LoadHIP.cmake finds REQUIRED, one a try (five tries)
    assert [c.value for c in loaded.requires.cmake_packages] == ["rocblas", "miopen", "hipfft", "rocsolver"]
    assert "  cmake-packages: [rocblas, miopen, hipfft, rocsolver]" in hit.fix.yaml()  # type: ignore[union-attr]
    assert apply_fix(recipe, hit.fix, "again") == recipe  # written once  # type: ignore[arg-type]


def test_cub_names_hipify_leaves_and_cudas_math_constants_become_hips(tmp_path):
    # cuda-moea 0.2.0: `cub::DoubleBuffer<ull>` beside hipify's hipcub::DeviceRadixSort, and math_constants.h's
    # CUDART_INF_F; torch 2.14's hipify leaves both
    t = tree(tmp_path / "src", {"CMakeLists.txt": "project(m CXX CUDA)\n",
                                "sort.cu": "#include <cub/cub.cuh>\nvoid f() { cub::DoubleBuffer<int> b(x, y); "
                                           "hipcub::DoubleBuffer<int> c; my::cub::x; }\n",
                                "k.cu": '#include "math_constants.h"\nfloat a = CUDART_INF_F, b = CUDART_PI, '
                                        "c = CUDART_VERSION;\n"})
    assert len(_only_hit(t, "cub-names-left").fix.edits) == 1  # type: ignore[union-attr]
    assert len(_only_hit(t, "cuda-math-constants").fix.edits) == 2  # type: ignore[union-attr]
    _drafted(t)
    assert (t / "sort.cu").read_text().splitlines()[1] == (
        "void f() { hipcub::DoubleBuffer<int> b(x, y); hipcub::DoubleBuffer<int> c; my::cub::x; }")
    assert (t / "k.cu").read_text() == ("#include <hip/hip_math_constants.h>\nfloat a = HIP_INF_F, b = HIP_PI, "
                                        "c = CUDART_VERSION;\n")
    seen = _seen(t)
    assert "cub-names-left" not in seen and "cuda-math-constants" not in seen
    # without CUB included, cub:: is someone else's
    assert "cub-names-left" not in _seen(tree(tmp_path / "other", {"a.cu": "void f() { cub::x(); }\n"}))


def test_ldg_of_a_type_hip_lacks_becomes_a_plain_load_after_the_failure(tmp_path):
    # megablocks 0.10.0: `T value = __ldg((T*)x + bin_idx);` with T = c10::Half: "no matching function for call to
    # '__ldg'"; never drafted (the calls that compile lose nothing)
    k = "template <class T> __device__ void r(const T* x, int i) {\n  T value = __ldg((T*)x + i);\n  T w = __ldg (&x[0]);\n}\n"
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "replicate.h": k})
    assert "ldg-type-missing" not in _seen(t)
    (hit,) = [h for h in in_log([(7, "../../csrc/replicate_hip.h:46:13: error: no matching function for call to '__ldg'")],
                                BuildFiles.read(t)) if h.trap.id == "ldg-type-missing"]
    assert isinstance(hit.fix, Edits) and len(hit.fix.edits) == 1
    _apply_draft_patches(t, apply_fix(draft_recipe("p", "p==1.0", "0" * 64, read_tree(t), ["gfx1100"]), hit.fix, "t"))
    assert (t / "replicate.h").read_text() == k.replace("__ldg(", "*(").replace("__ldg (", "*(")


def test_a_cmake_test_of_hip_found_reads_torchs_pytorch_found_hip_too(tmp_path):
    # attention-kernels 0.2.0.post2 (vLLM's CMake of 2024): `if (NOT HIP_FOUND AND CUDA_FOUND)`, `elseif(HIP_FOUND)`;
    # torch 2.14's LoadHIP.cmake sets PYTORCH_FOUND_HIP only
    cmake = ("project(a CXX)\nfind_package(Torch REQUIRED)\nif (NOT HIP_FOUND AND CUDA_FOUND)\n  set(L CUDA)\n"
             "elseif(HIP_FOUND)\n  message(STATUS \"${HIP_FOUND}\")\nendif()\n")
    t = tree(tmp_path / "src", {"setup.py": "from setuptools import setup\nsetup(name='a')\n", "CMakeLists.txt": cmake})
    assert _only_hit(t, "hip-found-renamed").evidence.where == "CMakeLists.txt:3"
    _drafted(t)
    assert (t / "CMakeLists.txt").read_text() == cmake.replace("NOT HIP_FOUND", "NOT (HIP_FOUND OR PYTORCH_FOUND_HIP)") \
        .replace("elseif(HIP_FOUND)", "elseif((HIP_FOUND OR PYTORCH_FOUND_HIP))")
    assert "hip-found-renamed" not in _seen(t)


def test_torchs_cxx20_error_finds_the_standard_a_cmake_file_of_the_tree_sets(tmp_path):
    # attention-kernels 0.2.0.post2: cmake/utils.cmake's `set_property(TARGET ... PROPERTY CXX_STANDARD 17)`, and
    # HIP sources with no standard at all (clang's default is C++17): torch/all.h's #error
    cmake = "cmake_minimum_required(VERSION 3.26)\nproject(a LANGUAGES CXX)\nfind_package(Torch REQUIRED)\n"
    t = tree(tmp_path / "src", {"setup.py": "from setuptools import setup\nsetup(name='a')\n", "CMakeLists.txt": cmake,
                                "cmake/utils.cmake": "set_property(TARGET ${M} PROPERTY CXX_STANDARD 17)\n"})
    assert "cxx20-for-torch" not in _seen(t)  # nothing in setup.py or the top CMakeLists.txt says it
    line = "torch/all.h:5:2: error: C++20 or later compatible compiler is required to use PyTorch."
    (hit,) = [h for h in in_log([(9, line)], BuildFiles.read(t)) if h.trap.id == "cxx20-for-torch"]
    assert isinstance(hit.fix, Edits) and len(hit.fix.edits) == 2
    recipe = apply_fix(draft_recipe("a", "a==1.0", "0" * 64, read_tree(t), ["gfx1100"]), hit.fix, "t")
    _apply_draft_patches(t, recipe)
    assert (t / "cmake/utils.cmake").read_text() == "set_property(TARGET ${M} PROPERTY CXX_STANDARD 20)\n"
    assert (t / "CMakeLists.txt").read_text() == cmake.replace(
        "project(", "# rocbuild (trap cxx20-for-torch): torch needs C++20 of HIP sources too\n"
                    "set(CMAKE_HIP_STANDARD 20)\nproject(")


def test_an_extension_switch_of_its_own_read_into_a_variable_is_set_to_what_it_is_compared_with(tmp_path):
    # basicsr 1.4.2: `cuda_ext = os.getenv('BASICSR_EXT')`, then `if cuda_ext == 'True':` builds its CUDA ops;
    # unset, the wheel is pure Python
    setup = ("import os\nfrom setuptools import setup\next_modules = []\ncuda_ext = os.getenv('BASICSR_EXT')\n"
             "if cuda_ext == 'True':\n    from torch.utils.cpp_extension import CUDAExtension\n"
             "    ext_modules = [CUDAExtension('b', ['k.cu'])]\nsetup(name='b', ext_modules=ext_modules)\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "force-variable-unset").fix == SetEnv("BASICSR_EXT", "True")


def test_a_packages_build_ext_switch_is_set(tmp_path):
    # torchani 2.9.0: `if "ext" in sys.argv or os.getenv("TORCHANI_BUILD_EXT"):` adds the SMs to build; with
    # none, setup.py builds no extension and the wheel is pure Python
    setup = ("import os, sys\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "sms = set()\nif 'ext' in sys.argv or os.getenv('TORCHANI_BUILD_EXT'):\n    sms.add('80')\n"
             "setup(name='t', ext_modules=[CUDAExtension('t', ['k.cu'])] if sms else [])\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "force-variable-unset").fix == SetEnv("TORCHANI_BUILD_EXT", "1")


def test_an_upper_bound_on_python_that_stopped_pip_is_dropped(tmp_path):
    # deformops 3.0.1: requires-python = ">=3.12,<3.14", and the root's python is 3.14: pip refuses before building
    t = tree(tmp_path / "src", {"setup.py": "from setuptools import setup\nsetup()\n",
                                "pyproject.toml": '[project]\nname = "d"\nrequires-python = ">=3.12,<3.14"\n'})
    assert "requires-python-bound" not in _seen(t)  # not before a build met it
    line = "ERROR: Package 'd' requires a different Python: 3.14.10 not in '<3.14,>=3.12'"
    (hit,) = [h for h in in_log([(3, line)], BuildFiles.read(t)) if h.trap.id == "requires-python-bound"]
    assert hit.fix == ReplaceText("pyproject.toml", 'requires-python = ">=3.12,<3.14"', 'requires-python = ">=3.12"',
                                  says="drop the upper bound of '>=3.12,<3.14' in pyproject.toml")
    setup = tree(tmp_path / "s", {"setup.py": "from setuptools import setup\nsetup(python_requires='<3.13, >=3.9')\n"})
    (hit,) = [h for h in in_log([(3, line)], BuildFiles.read(setup)) if h.trap.id == "requires-python-bound"]
    assert hit.fix.with_ == "setup(python_requires='>=3.9')"  # type: ignore[union-attr]


def test_a_build_ext_that_tests_for_cu_sources_takes_hipifys_hip_too(tmp_path):
    # deformops 3.0.1: its BuildExtension names a .cu file's object <stem>.cuda.o, by
    # `os.path.splitext(src)[1] == ".cu"`; torch has hipified the source to .hip, and ninja met two rules for <stem>.o
    setup = ("import os\nfrom torch.utils.cpp_extension import BuildExtension\nclass B(BuildExtension):\n"
             "    def names(self, srcs, objs):\n"
             "        return [o[:-2] + '.cuda.o' if os.path.splitext(src)[1] == \".cu\" else o for src, o in zip(srcs, objs)]\n"
             "def other(p):\n    return p.suffix == '.cu'\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "cu-suffix-after-hipify").evidence.where == "setup.py:5"
    _drafted(t)
    out = (t / "setup.py").read_text()
    assert 'os.path.splitext(src)[1] in (".cu", ".hip") else o' in out and 'p.suffix in (".cu", ".hip")' in out
    # a setup.py with no build_ext of its own filters its source list before hipify: left alone
    assert "cu-suffix-after-hipify" not in _seen(tree(tmp_path / "p", {"setup.py": "x = [s for s in S if s.suffix == '.cu']\n"}))


def test_cuda_flags_kept_in_a_module_setup_py_loads_are_dropped_there(tmp_path):
    # deformops 3.0.1 keeps `--use_fast_math` in sources/deformops/core/configs.py, which setup.py loads with
    # SourceFileLoader(..., str(root / "deformops" / "core" / "configs.py")); a build_utils.py it imports
    # holds another. Neither is setup.py's, and clang refused the first.
    setup = ("from importlib.machinery import SourceFileLoader\nimport build_utils\n"
             "from torch.utils.cpp_extension import CUDAExtension\n"
             "configs = SourceFileLoader('c', str(root / 'pkg' / 'core' / 'configs.py')).load_module()\n"
             "CUDAExtension('pkg._C', ['k.cu'], extra_compile_args={'nvcc': configs.FLAGS + build_utils.MORE})\n"
             "setup(package_dir={'': 'sources'})\n")
    configs = "FLAGS = [\n    '-std=c++20',\n    '--use_fast_math',\n    '-DUSE_CUDA',\n]\n"
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n",
                                "sources/pkg/__init__.py": "", "sources/pkg/core/__init__.py": "",
                                "sources/pkg/core/configs.py": configs, "build_utils.py": "MORE = ['-Xptxas=-v']\n",
                                "tests/configs.py": "FLAGS = ['--use_fast_math']\n"})  # not the one loaded
    files = BuildFiles.read(t)
    assert sorted(files.helpers) == ["build_utils.py", "sources/pkg/core/configs.py"]
    hit = _only_hit(t, "cuda-flag-for-hipcc")
    assert hit.evidence.where == "build_utils.py:1" and len(hit.evidence.also) == 2  # sorted by path
    line = "clang++: error: unknown argument: '--use_fast_math'"
    (failed,) = [h for h in in_log([(4, line)], files) if h.trap.id == "cuda-flag-for-hipcc"]
    assert failed.files is not None and failed.files.file == "sources/pkg/core/configs.py"
    _drafted(t)
    out = (t / "sources/pkg/core/configs.py").read_text()
    ast.parse(out)
    assert out == "FLAGS = [\n    '-std=c++20',\n    '-DUSE_CUDA',\n]\n"
    assert (t / "build_utils.py").read_text() == "MORE = []\n"
    assert (t / "tests/configs.py").read_text() == "FLAGS = ['--use_fast_math']\n"


def test_the_packages_under_a_package_dir_root_are_imported_by_their_own_names(tmp_path):
    # deformops 3.0.1: `package_dir={"": "sources"}`; the draft's import check read `sources.deformops`
    from rocbuild.draft.torch_reading import read_torch

    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
                                            "setup(package_dir={'': 'sources'}, ext_modules=[CUDAExtension('x._C', ['k.cu'])])\n",
                                "k.cu": "__global__ void k() {}\n", "sources/x/__init__.py": ""})
    reading = read_torch(t)
    assert reading is not None and reading.packages == ["x"]


def test_pip_run_by_setup_py_itself_is_dropped(tmp_path):
    # MinkowskiEngine 0.5.4: `run_command("pip", "uninstall", "MinkowskiEngine", "-y")` at the top of setup.py,
    # which the root's pip refused (externally-managed-environment) before anything compiled
    setup = ("import os, subprocess, sys\ndef run_command(*args):\n    subprocess.check_call(args)\n"
             "run_command('rm', '-rf', 'build')\nrun_command('pip', 'uninstall', 'M', '-y')\n"
             "if os.getenv('X'):\n    subprocess.check_call([sys.executable, '-m', 'pip', 'install', 'ninja'])\n"
             "os.system('pip3 install wheel')\nout = subprocess.run(['pip', 'list'])  # kept: its value is used\n")
    t = tree(tmp_path / "src", {"setup.py": setup})
    hit = _only_hit(t, "pip-run-by-setup")
    assert hit.evidence.where == "setup.py:5" and len(hit.evidence.also) == 3
    _drafted(t)
    out = (t / "setup.py").read_text()
    ast.parse(out)
    assert out.splitlines()[3:8] == ["run_command('rm', '-rf', 'build')", "pass", "if os.getenv('X'):", "    pass", "pass"]
    assert "pip-run-by-setup" not in _seen(t)
    line = "error: externally-managed-environment"
    (again,) = [h for h in in_log([(6, line)], BuildFiles.read(tree(tmp_path / "b", {"setup.py": setup})))
                if h.trap.id == "pip-run-by-setup"]
    assert again.fix is not None


def test_a_module_gone_from_current_pythons_is_named_and_never_required(tmp_path):
    # MinkowskiEngine 0.5.4 imports numpy.distutils (gone in numpy 2): the report asked to require numpy
    files = BuildFiles.read(tree(tmp_path, {"setup.py": "import numpy.distutils\n"}))
    for line, trap in (("ModuleNotFoundError: No module named 'numpy.distutils'", "build-module-removed"),
                       ("ModuleNotFoundError: No module named 'imp'", "build-module-removed"),
                       ("ModuleNotFoundError: No module named 'impala'", "build-module-missing"),
                       ("ModuleNotFoundError: No module named 'numpy'", "build-module-missing")):
        (hit,) = in_log([(3, line)], files)
        assert hit.trap.id == trap, line
        assert (hit.fix is None) == (trap == "build-module-removed")


def test_a_warp_call_instantiated_with_a_32_bit_mask_is_fixed_in_the_file_the_note_names(tmp_path):
    # deformops 3.0.1: the mask reaches utils.cuh's __shfl_xor_sync through a template; clang's note names torch's
    # hipified copy (backends/hip/include/utils.cuh), and the fix goes into the original under cuda/
    from rocbuild.draft.masks import WARP32

    body = "template <typename T> __device__ T f(T v, M m) { return __shfl_xor_sync(m.bits, v, 1); }\n"
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "pkg/cuda/include/utils.cuh": body, "pkg/cuda/k.cu": "#include \"include/utils.cuh\"\n"})
    assert "lane-mask-variable-32bit" not in _seen(t)  # nothing in the text says the mask is 32-bit
    note = ("../../pkg/cuda/include/../../hip/include/utils.cuh:1:62: note: in instantiation of function template "
            "specialization '__shfl_xor_sync<unsigned int, float>' requested here")
    hits = [h for h in in_log([(9, note)], BuildFiles.read(t)) if h.trap.id == "lane-mask-variable-32bit"]
    assert len(hits) == 1 and isinstance(hits[0].fix, Edits)
    (edit,) = hits[0].fix.edits
    assert edit.file == "pkg/cuda/include/utils.cuh" and edit.with_ == WARP32
    wide = note.replace("<unsigned int,", "<unsigned long long,")
    assert not [h for h in in_log([(9, wide)], BuildFiles.read(t)) if h.trap.id == "lane-mask-variable-32bit"]


def test_omp_h_in_a_source_the_hip_compiler_builds_asks_for_its_clangs_openmp(tmp_path):
    # torch-baidu-ctc 0.3.0: warp-ctc's cpu_ctc.h includes <omp.h>, reached from its .cu file: hipcc's clang
    # stopped at "fatal error: 'omp.h' file not found" (GCC's libgomp is not clang's)
    from rocbuild.draft.fixes import HipOpenMP

    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "k.cu": "#include <omp.h>\n__global__ void k() {}\n", "h.cpp": "#include <omp.h>\n"})
    hit = _only_hit(t, "openmp-for-hip-compiler")
    assert hit.evidence.where == "k.cu:1" and hit.fix == HipOpenMP()
    text = draft_recipe("p", "p==1.0", "0" * 64, read_tree(t), ["gfx1100"])
    assert yaml.safe_load(text)["requires"]["openmp"] == "hip"
    assert load_recipe_text(text, tmp_path / "p.yaml").requires.openmp == "hip"
    only_cpp = BuildFiles.read(tree(tmp_path / "b", {"setup.py": "", "h.cpp": "#include <omp.h>\n"}))
    assert "openmp-for-hip-compiler" not in [h.trap.id for h in in_build_files(only_cpp)]
    line = "third-party/warp-ctc/include/detail/cpu_ctc.h:10:10: fatal error: 'omp.h' file not found"
    (failed,) = [h for h in in_log([(5, line)], only_cpp) if h.trap.id == "openmp-for-hip-compiler"]
    assert failed.fix == HipOpenMP()
    bare = text.replace("  openmp: hip\n", "")
    assert "openmp" not in yaml.safe_load(bare)["requires"]
    assert yaml.safe_load(apply_fix(bare, failed.fix, "n"))["requires"]["openmp"] == "hip"


def test_a_switch_compared_with_no_first_is_set_to_the_value_that_builds(tmp_path):
    # orionvis 1.1.3: `BUILD_CUDA_EXT = os.getenv("BUILD_CUDA_EXT", "AUTO").upper()`, `if BUILD_CUDA_EXT == "NO":
    # return []`, then `if BUILD_CUDA_EXT == "YES":`; after its CPU-only build the report said BUILD_CUDA_EXT=NO
    setup = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "BUILD_CUDA_EXT = os.getenv('BUILD_CUDA_EXT', 'AUTO').upper()\ndef exts():\n"
             "    if BUILD_CUDA_EXT == 'NO':\n        return []\n    if BUILD_CUDA_EXT == 'YES':\n"
             "        return [CUDAExtension('o._C', ['k.cu'])]\n    return []\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    files = BuildFiles.read(t)
    assert files.torch is not None and files.torch.on_values.get("BUILD_CUDA_EXT") == "YES"
    fixes = [h.fix for h in in_findings([("cpu_only", "o.whl: holds no ELF file at all")], files)]
    assert SetEnv("BUILD_CUDA_EXT", "YES") in fixes and SetEnv("BUILD_CUDA_EXT", "NO") not in fixes


def test_a_vendored_cuda_project_is_hipified_and_only_the_library_inside_it_that_knows_hip_is_kept_out(tmp_path):
    # wildgs-slam 1.0.7 vendors lietorch (its own .cu sources, and Eigen, which knows HIP, inside it) and
    # diff-gaussian-rasterization (with GLM in its own third_party/): the breadcrumb went on lietorch's and the
    # rasterizer's own headers too, hipify left their <cuda.h>, and g++ stopped at "cuda.h: No such file"
    knows = "#if defined(__HIP__)\n#define X 1\n#endif\n"
    files = {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
             "thirdparty/lietorch/lietorch/src/gpu.cu": '#include "gpu.h"\n__global__ void k() {}\n',
             "thirdparty/lietorch/lietorch/src/lie.cpp": '#include "gpu.h"\n',
             "thirdparty/lietorch/lietorch/include/gpu.h": "#include <cuda.h>\n#include <Eigen/Dense>\n",
             "thirdparty/lietorch/eigen/Eigen/Dense": "#include \"src/Macros.h\"\n",
             "thirdparty/lietorch/eigen/Eigen/src/Macros.h": knows + "#if defined(__CUDACC__)\n#endif\n",
             "thirdparty/dgr/cuda_rasterizer/forward.cu": '#include "forward.h"\n__global__ void f() {}\n',
             "thirdparty/dgr/cuda_rasterizer/forward.h": '#include <cuda.h>\n#include "../third_party/glm/glm/glm.hpp"\n',
             "thirdparty/dgr/third_party/glm/glm/glm.hpp": knows}
    t = tree(tmp_path / "src", files)
    _drafted(t)
    crumb = "// !!! This is a file automatically generated by hipify!!!\n"
    for name in ("thirdparty/lietorch/lietorch/include/gpu.h", "thirdparty/dgr/cuda_rasterizer/forward.h"):
        assert (t / name).read_text() == files[name], name
    assert (t / "thirdparty/dgr/third_party/glm/glm/glm.hpp").read_text() == crumb + knows
    assert (t / "thirdparty/lietorch/eigen/Eigen/src/Macros.h").read_text().startswith(crumb)
    # the rasterizer's helper_math.h, once vector-operators-redefined guarded it for HIP, still knows no HIP of its
    # own: a build that failed later reads it so, and adds no breadcrumb to the rasterizer's headers
    (t / "thirdparty/dgr/cuda_rasterizer/forward.h").write_text(
        files["thirdparty/dgr/cuda_rasterizer/forward.h"] + "#if !defined(__HIP_PLATFORM_AMD__)  // rocbuild: ...\n#endif\n")
    hit = _only_hit(t, "vendored-library-hipified") if "vendored-library-hipified" in _seen(t) else None
    assert hit is None or all("cuda_rasterizer" not in e.file for e in hit.evidence.also)


def test_cudart_cb_is_dropped_where_hipify_leaves_it(tmp_path):
    # torch-cudagraph-debug 0.2.0: `static void CUDART_CB host_callback(void* user_data);` in probe_context.h;
    # g++ stopped at "variable or field 'CUDART_CB' declared void"
    header = "struct P {\n    static void CUDART_CB host_callback(void* user_data);\n};\n"
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "p.h": header,
                                "p.cpp": "void CUDART_CB P::host_callback(void* d) {}\n"})
    hit = _only_hit(t, "cudart-cb-left")
    assert hit.evidence.where in ("p.cpp:1", "p.h:2") and len(hit.evidence.also) == 2
    _drafted(t)
    assert (t / "p.h").read_text() == header.replace("CUDART_CB ", "")
    assert (t / "p.cpp").read_text() == "void P::host_callback(void* d) {}\n"
    assert "cudart-cb-left" not in _seen(t)


def test_libcuxx_std_headers_the_standard_has_become_the_standards(tmp_path):
    # vision3d 0.5.2's iou_box3d.cu: `#include <cuda/std/array>`, `cuda::std::array<float3, 8>`: hipify leaves both
    kernel = ("#include <cuda/std/array>\n#include <cuda/std/utility>\n"
              "__device__ float f() { cuda::std::array<float, 2> a{1, 2}; return ::cuda::std::get<0>(a); }\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "k.cu": kernel})
    assert _only_hit(t, "cuda-std-to-std").evidence.where == "k.cu:1"
    _drafted(t)
    assert (t / "k.cu").read_text() == ("#include <array>\n#include <utility>\n"
                                        "__device__ float f() { std::array<float, 2> a{1, 2}; return std::get<0>(a); }\n")
    assert "cuda-std-to-std" not in _seen(t)
    # a tree that also uses libcu++ where the standard library has no device counterpart is a port: left
    atomic = tree(tmp_path / "b", {"setup.py": "", "k.cu": kernel, "a.cu": "#include <cuda/std/atomic>\n"})
    assert "cuda-std-to-std" not in _seen(atomic)


def test_cuda_home_used_as_a_path_takes_rocms_home_where_it_is_none(tmp_path):
    # evnn-pytorch 0.2.0: `include_dirs=[..., os.path.join(CUDA_HOME, 'include'), os.path.join(CUDA_HOME, 'lib64')]`:
    # TypeError (None) while pip prepared metadata
    setup = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\n"
             "CUDAExtension('e', ['k.cu'], include_dirs=[os.path.join(CUDA_HOME, 'include'),\n"
             "              os.path.join(CUDA_HOME, 'lib64')])\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "cuda-home-as-path").evidence.where == "setup.py:3"
    _drafted(t)
    out = (t / "setup.py").read_text()
    home = '(CUDA_HOME or __import__("os").environ.get("ROCM_HOME", "/opt/rocm"))'
    assert out.count(f"os.path.join({home}, ") == 2
    namespace = {"__name__": "x"}
    exec(compile(f"import os\nCUDA_HOME = None\nx = os.path.join({home}, 'include')\n", "s", "exec"), namespace)
    assert str(namespace["x"]).endswith("/include")
    assert "cuda-home-as-path" not in _seen(t)
    # orionvis 1.1.3: `cuda_home = CUDA_HOME`, then `if not cuda_available or not cuda_home: raise RuntimeError(...)`
    kept = ("from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\ndef exts():\n    cuda_home = CUDA_HOME\n"
            "    if not cuda_home:\n        return []\n    return [CUDAExtension('o', ['k.cu'])]\n")
    t = tree(tmp_path / "kept", {"setup.py": kept, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "cuda-home-as-path").evidence.where == "setup.py:3"
    _drafted(t)
    assert f"    cuda_home = {home}\n" in (t / "setup.py").read_text()
    # curegot 0.1.0: `if "CUDA_HOME" not in os.environ and CUDA_HOME is not None: os.environ["CUDA_HOME"] = CUDA_HOME`,
    # its test made to pass by cuda-toolkit-test: None into the environment, TypeError
    env = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\n"
           "if 'CUDA_HOME' not in os.environ and CUDA_HOME is not None:\n    os.environ['CUDA_HOME'] = CUDA_HOME\n"
           "CUDAExtension('c', ['k.cu'])\n")
    t = tree(tmp_path / "env", {"setup.py": env, "k.cu": "__global__ void k() {}\n"})
    assert "cuda-toolkit-test" in _seen(t) and "cuda-home-as-path" in _seen(t)
    _drafted(t)
    assert f"    os.environ['CUDA_HOME'] = {home}\n" in (t / "setup.py").read_text()
    # pytorch-extension 0.2 (apex): check_cuda_torch_binary_vs_bare_metal(CUDA_HOME) prints `cuda_dir + "/bin"`
    call = ("from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\nprint(CUDA_HOME)\n"
            "check_cuda_torch_binary_vs_bare_metal(CUDA_HOME)\nCUDAExtension('a', ['k.cu'])\n")
    t = tree(tmp_path / "call", {"setup.py": call, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "cuda-home-as-path").evidence.where == "setup.py:3"
    _drafted(t)
    assert f"print(CUDA_HOME)\ncheck_cuda_torch_binary_vs_bare_metal({home})\n" in (t / "setup.py").read_text()
    # stable-fast 1.0.5: `assert CUDA_HOME is not None, "Cannot find CUDA installation. ..."` stopped metadata
    asserted = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\n"
                "if os.getenv('WITH_CUDA', '1') != '0':\n"
                "    assert CUDA_HOME is not None, 'Cannot find CUDA installation.'\nCUDAExtension('s', ['k.cu'])\n")
    t = tree(tmp_path / "assert", {"setup.py": asserted, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "cuda-home-as-path").evidence.where == "setup.py:4"
    _drafted(t)
    assert f"    assert {home} is not None, 'Cannot find" in (t / "setup.py").read_text()
    line = "AssertionError: Cannot find CUDA installation. If you want to compile without CUDA, set `WITH_CUDA=0`."
    assert [h.trap.id for h in in_log([(3, line)], None)] == ["cuda-home-as-path"]


def test_a_cuda_home_test_that_alone_decides_is_made_to_pass_and_an_arch_list_demand_is_met(tmp_path):
    # torchdtw 0.4.2: `use_cuda = CUDA_HOME is not None and sys.platform != "win32"` builds its CUDA extension, and
    # raises unless TORCH_CUDA_ARCH_LIST is set; no GPU probe, no force variable: the wheel came out CPU-only
    setup = ("import os, sys\nfrom torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension\n"
             "use_cuda = CUDA_HOME is not None and sys.platform != 'win32'\nexts = [CppExtension('d._C', ['d.cpp'])]\n"
             "if use_cuda:\n    exts.append(CUDAExtension('d._C_cuda', ['k.cu']))\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n", "d.cpp": ""})
    assert _only_hit(t, "cuda-toolkit-test").evidence.where == "setup.py:3"
    _drafted(t)
    assert "use_cuda = True and sys.platform" in (t / "setup.py").read_text()
    # beside a force variable, the test is left to it
    forced = tree(tmp_path / "b", {"setup.py": setup.replace("use_cuda = ", "use_cuda = os.getenv('FORCE_CUDA') or "),
                                   "k.cu": "__global__ void k() {}\n"})
    assert "cuda-toolkit-test" not in _seen(forced)
    line = "    You must explicitly set TORCH_CUDA_ARCH_LIST to build from source if CUDA is found."
    (hit,) = [h for h in in_log([(30, line)], BuildFiles.read(t)) if h.trap.id == "cuda-arch-list-demanded"]
    assert hit.fix == SetEnv("TORCH_CUDA_ARCH_LIST", "8.0")


def test_the_old_libstdcxx_abi_forced_by_setup_py_is_dropped(tmp_path):
    # evnn-pytorch 0.2.0 and pytorch-cgx 0.1.1 hard-code -D_GLIBCXX_USE_CXX11_ABI=0 in their cxx and nvcc flags;
    # torch 2.14 is built with the C++11 ABI, and BuildExtension passes that one itself
    setup = ("from torch.utils.cpp_extension import CUDAExtension\n"
             "CUDAExtension('e', ['k.cu'], extra_compile_args={'cxx': ['-O3', '-D_GLIBCXX_USE_CXX11_ABI=0'],\n"
             "              'nvcc': ['-D_GLIBCXX_USE_CXX11_ABI=0', '-O3']})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    assert _only_hit(t, "cxx11-abi-forced").evidence.where == "setup.py:2"
    _drafted(t)
    out = (t / "setup.py").read_text()
    assert "_GLIBCXX_USE_CXX11_ABI" not in out and "'cxx': ['-O3']" in out and "'nvcc': ['-O3']" in out
    assert "cxx11-abi-forced" not in _seen(t)


def test_nvcc_runtime_choice_is_a_cuda_flag_the_drafter_drops(tmp_path):
    # vision3d 0.5.2: `nvcc: ["-std=c++20", "--cudart=static"]` cost a try ("unknown argument: '--cudart=static'")
    setup = ("from torch.utils.cpp_extension import CUDAExtension\n"
             "CUDAExtension('v._C', ['k.cu'], extra_compile_args={'nvcc': ['-std=c++20', '--cudart=static']})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    _drafted(t)
    assert "'nvcc': ['-std=c++20']" in (t / "setup.py").read_text()


def test_cudas_device_trap_becomes_clangs_builtin(tmp_path):
    # wildgs-slam 1.0.7's diff-gaussian-rasterization: auxiliary.h calls `__trap();` (undeclared on HIP)
    aux = "__device__ void check(bool ok) {\n  if (!ok) {\n    __trap();\n  }\n}\nvoid my__trap();\n"
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "aux.h": aux})
    assert _only_hit(t, "device-trap-intrinsic").evidence.where == "aux.h:3"
    _drafted(t)
    assert (t / "aux.h").read_text() == aux.replace("    __trap();", "    __builtin_trap();")


def test_eigens_member_templates_get_the_template_keyword_once_clang_asked_for_it(tmp_path):
    # lietorch (in wildgs-slam 1.0.7): `Eigen::Map<PointGrad>(dp + i*3) = dq * X.Matrix4x4().block<3,3>(0,0);` in a
    # templated kernel; clang: "reference to non-static member function must be called"
    kernel = ("template <typename G> __global__ void k(G X, float* dp) {\n"
              "  auto m = X.Matrix4x4().block<3,3>(0,0);\n  auto v = a.head<3>();\n  bool lt = node.head < 3;\n}\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "g.cu": kernel})
    assert "template-keyword-missing" not in _seen(t)  # the drafter leaves it: nvcc takes it as it is
    line = "g.hip:2:40: error: reference to non-static member function must be called"
    (hit,) = [h for h in in_log([(7, line)], BuildFiles.read(t)) if h.trap.id == "template-keyword-missing"]
    assert isinstance(hit.fix, Edits)
    (edit,) = hit.fix.edits
    out = re.sub(edit.find, edit.with_, kernel)
    assert "X.Matrix4x4().template block<3,3>(0,0)" in out and "a.template head<3>()" in out
    assert "node.head < 3" in out


def test_a_system_librarys_header_is_required_and_named_as_its_package():
    """evnn-pytorch's <cblas.h>: requires.headers names it, and a root's apt offers it as libopenblas-dev."""
    from rocbuild.roots.packages import Wanted, map_requirements

    text = (REPO / "tests/data/failure-logs/system-library-header.log").read_text()
    hits = {h.trap.id: h for h in in_log(list(enumerate(text.splitlines(), 1)), None)}
    fix = hits["system-library-header"].fix
    assert fix == Require("headers", ("cblas.h",))
    assert "sdist-incomplete" not in hits  # a system library's header is never the sdist's own
    mapping = map_requirements(Wanted.of(headers=fix.names), {"libopenblas-dev", "libblas-dev"})
    assert mapping.packages == {"header 'cblas.h'": "libopenblas-dev"}


def test_a_gpu_probe_a_function_returns_is_made_true(tmp_path):
    # torch-quiver 0.1.1: `def have_cuda(): if os.getenv('QUIVER_ENABLE_CUDA') == 1: return True` (never: a
    # string is not 1), then `return torch.cuda.is_available()`; `create_extension(have_cuda())` builds CPU-only
    setup = ("import os\nfrom setuptools import setup\nfrom torch.utils import cpp_extension\n"
             "def have_cuda():\n    if os.getenv('QUIVER_ENABLE_CUDA') == 1: return True\n    import torch\n"
             "    return torch.cuda.is_available()\n"
             "setup(name='q', ext_modules=[cpp_extension.CppExtension('q', ['k.cpp'], with_cuda=have_cuda())])\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    hit = _only_hit(t, "gpu-probe-at-build")
    assert hit.evidence.where == "setup.py:7"
    _apply_draft_patches(t, draft_recipe("q", "q==1", "0" * 64, read_tree(t), ["gfx1100"]))
    assert "    return True\n" in (t / "setup.py").read_text()


def test_c10_warp_size_as_a_host_constant_is_taken_as_32_lanes_for_wave32(tmp_path):
    # torchani 2.9.0: `constexpr int block_x = C10_WARP_SIZE;` then a launch of cuAngularAEVs<block_x, ...>
    kernel = ("#include <c10/macros/Macros.h>\ntemplate <int X> __global__ void k() {}\n"
              "void launch() {\n  constexpr int block_x = C10_WARP_SIZE;\n  k<block_x><<<1, block_x>>>();\n}\n")
    t = tree(tmp_path / "src", {"setup.py": "", "torchani/csrc/aev.cu": kernel})
    log = (REPO / "tests/data/failure-logs/warp-size-constant.log").read_text()
    (hit,) = [h for h in in_log(list(enumerate(log.splitlines(), 1)), BuildFiles.read(t)) if h.trap.id == "warp-size-constant"]
    assert hit.files is not None and hit.files.where == "torchani/csrc/aev.cu:4"  # the original, not aev.hip
    assert isinstance(hit.fix, Edits)
    _apply_draft_patches(t, apply_fix(STARTER, hit.fix, "trap warp-size-constant (log:8): evidence"))
    out = (t / "torchani/csrc/aev.cu").read_text()
    assert "  constexpr int block_x = 32;\n" in out and out.startswith("#if !defined(ROCBUILD_WARP32_SIZE)")
    assert "__GFX9__" in out and "#error" in out
    assert not [h for h in in_log(list(enumerate(log.splitlines(), 1)), BuildFiles.read(t))
                if h.trap.id == "warp-size-constant" and h.fix]  # written once


def test_cub_wrapped_in_a_namespace_of_its_own_is_named_as_cub(tmp_path):
    # torchani 2.9.0: nvcc's -DCUB_NS_QUALIFIER=::cuaev::cub, and `CUB_WRAPPER(cuaev::cub::DeviceScan::ExclusiveSum, ...)`;
    # hipify made it cuaev::hipcub::, which names nothing
    setup = ("from torch.utils.cpp_extension import CUDAExtension\n"
             "CUDAExtension('a', ['k.cu'], extra_compile_args={'nvcc': ['-DCUB_NS_QUALIFIER=::cuaev::cub',\n"
             "              '-DCUB_NS_PREFIX=namespace cuaev {', '-DCUB_NS_POSTFIX=}']})\n")
    header = "#include <cub/cub.cuh>\nvoid f() { cuaev::cub::DeviceScan::ExclusiveSum(0, 0); ::cuaev::cub::X y; }\n"
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n", "cuaev_cub.cuh": header})
    assert _only_hit(t, "cub-namespace-wrapped").evidence.where == "cuaev_cub.cuh:2"
    _drafted(t)
    assert "void f() { cub::DeviceScan::ExclusiveSum(0, 0); cub::X y; }" in (t / "cuaev_cub.cuh").read_text()


def test_torchs_fp16_switch_is_tested_by_its_hip_name(tmp_path):
    # turbo-gnn 0.1.0rc4: `#ifdef __CUDA_NO_HALF_OPERATORS__` before its own __half operator<, which hipify leaves:
    # on ROCm torch defines __HIP_NO_HALF_OPERATORS__, the operators were dropped, and `a < b` failed
    header = ("#ifdef __CUDA_NO_HALF_OPERATORS__\n__device__ bool operator<(const __half& a, const __half& b);\n#endif\n"
              "#if defined(__CUDA_NO_HALF_CONVERSIONS__) && !defined(X)\n#endif\n"
              "// __CUDA_NO_HALF_OPERATORS__ in a comment stays\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "k.cu": "__global__ void k() {}\n", "common.cuh": header})
    assert _only_hit(t, "half-switch-cuda-name").evidence.where == "common.cuh:1"
    _drafted(t)
    assert (t / "common.cuh").read_text() == header.replace("#ifdef __CUDA_NO_HALF_OPERATORS__",
                                                              "#ifdef __HIP_NO_HALF_OPERATORS__").replace(
        "defined(__CUDA_NO_HALF_CONVERSIONS__)", "defined(__HIP_NO_HALF_CONVERSIONS__)")
    line = "../../csrc/common_hip.cuh:962:85: error: invalid operands to binary expression ('__half' and '__half')"
    assert [h.trap.id for h in in_log([(1, line)], None)] == ["half-switch-cuda-name"]


def test_an_atomic_add_of_a_16_bit_float_gets_rocbuilds_overloads(tmp_path):
    # turbo-gnn 0.1.0rc4: atomicAdd(&grad_x[...], grad_out[...]) instantiated with __hip_bfloat16, which HIP's
    # runtime declares no atomicAdd for
    kernel = ("#include <cuda_bf16.h>\ntemplate <class T> __global__ void k(T* x, const T* y) { atomicAdd(&x[0], y[0]); }\n"
              "template __global__ void k<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*);\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "csrc/reduction/reduction_aggr.cu": kernel})
    line = "../../csrc/reduction/reduction_aggr.hip:2:60: error: no matching function for call to 'atomicAdd'"
    (hit,) = [h for h in in_log([(7, line)], BuildFiles.read(t)) if h.trap.id == "atomic-add-16bit"]
    assert hit.files is not None and hit.files.where == "csrc/reduction/reduction_aggr.cu:2"
    _apply_draft_patches(t, apply_fix(STARTER, hit.fix, "trap atomic-add-16bit (log:7): evidence"))  # type: ignore[arg-type]
    out = (t / "csrc/reduction/reduction_aggr.cu").read_text()
    assert out.startswith("#if !defined(ROCBUILD_ATOMIC_ADD_16)") and out.endswith(kernel)
    assert "__device__ inline __hip_bfloat16 atomicAdd(__hip_bfloat16* address, __hip_bfloat16 val)" in out
    # an atomicAdd of another type (a signed long, which HIP lacks too) in a file without 16-bit floats: not this
    (t / "csrc/reduction/reduction_aggr.cu").write_text("__global__ void k(long* x) { atomicAdd(x, 1L); }\n")
    assert "atomic-add-16bit" not in [h.trap.id for h in in_log([(7, line)], BuildFiles.read(t))]  # not named at all


def test_a_cuda_name_whose_hip_counterpart_the_compiler_suggests_is_renamed(tmp_path):
    # turbo-gnn 0.1.0rc4: `hipsparseSpMMAlg_t best_alg = CUSPARSE_SPMM_ALG_DEFAULT;` after hipify, and g++'s
    # "did you mean 'HIPSPARSE_SPMM_ALG_DEFAULT'?"
    source = ("cusparseSpMMAlg_t a = CUSPARSE_SPMM_ALG_DEFAULT;\n"
              "auto b = {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_ALG_DEFAULTX};\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "csrc/spmm/cusparse_spmm.cpp": source})
    line = ("<tree>/csrc/spmm/cusparse_spmm_hip.cpp:66:35: error: ‘CUSPARSE_SPMM_ALG_DEFAULT’ was not declared in "
            "this scope; did you mean ‘HIPSPARSE_SPMM_ALG_DEFAULT’?")
    (hit,) = [h for h in in_log([(3, line)], BuildFiles.read(t)) if h.trap.id == "hip-name-suggested"]
    _apply_draft_patches(t, apply_fix(STARTER, hit.fix, "trap hip-name-suggested (log:3): evidence"))  # type: ignore[arg-type]
    assert (t / "csrc/spmm/cusparse_spmm.cpp").read_text() == (
        "cusparseSpMMAlg_t a = HIPSPARSE_SPMM_ALG_DEFAULT;\n"
        "auto b = {HIPSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_ALG_DEFAULTX};\n")  # a longer name is another
    # mhc-cuda 0.1.0: clang's form for a type, cuBLASLt's
    (t / "csrc/ops.cuh").write_text("cublasLtOrder_t order;\n")
    typed = "../../csrc/ops_hip.cuh:285:9: error: unknown type name 'cublasLtOrder_t'; did you mean 'hipblasLtOrder_t'?"
    (hit,) = [h for h in in_log([(4, typed)], BuildFiles.read(t)) if h.trap.id == "hip-name-suggested"]
    assert hit.files is not None and hit.files.where == "csrc/ops.cuh:1"
    # each name the log suggests (pytorch-block-sparse 0.1.2's CUTLASS headers, which hipify never saw), in one fix
    (t / "csrc/util.h").write_text("cudaFuncAttributes a;\nvoid f() { cudaGetDevice(0); }\n")
    both = [(5, "../csrc/util.h:1:1: error: unknown type name 'cudaFuncAttributes'; did you mean 'hipFuncAttributes'?"),
            (9, "../csrc/util.h:2:12: error: use of undeclared identifier 'cudaGetDevice'; did you mean 'hipGetDevice'?")]
    (hit,) = [h for h in in_log(both, BuildFiles.read(t)) if h.trap.id == "hip-name-suggested"]
    _apply_draft_patches(t, apply_fix(STARTER, hit.fix, "trap hip-name-suggested (log:5): evidence"))  # type: ignore[arg-type]
    assert (t / "csrc/util.h").read_text() == "hipFuncAttributes a;\nvoid f() { hipGetDevice(0); }\n"
    # a suggestion that is another name altogether (clang's nearest spelling) is not followed
    other = "use of undeclared identifier 'cudaFooBar'; did you mean 'hipFooBaz'?"
    assert "hip-name-suggested" not in [h.trap.id for h in in_log([(3, other)], BuildFiles.read(t))]


def test_a_cuda_math_library_linked_by_name_becomes_rocms(tmp_path):
    # turbo-gnn 0.1.0rc4: `libraries=["cusparse"]` beside hipified hipsparse calls: ld's `cannot find -lcusparse`
    setup = ("from torch.utils.cpp_extension import CUDAExtension\n"
             "CUDAExtension('g', ['k.cu'], libraries=[\"cusparse\"], extra_link_args=['-lcublas'])\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n"})
    assert len(_only_hit(t, "cuda-math-library-linked").fix.edits) == 2  # type: ignore[union-attr]
    _drafted(t)
    assert "libraries=[\"hipsparse\"], extra_link_args=['-lhipblas']" in (t / "setup.py").read_text()
    line = "/usr/bin/x86_64-linux-gnu-ld.bfd: cannot find -lcusparse: No such file or directory"
    assert "cuda-math-library-linked" in [h.trap.id for h in in_log([(9, line)], None)]


def test_a_thrust_algorithm_called_without_its_header_gets_it(tmp_path):
    # torch-quiver 0.1.1: quiver.cu.hpp includes <thrust/device_vector.h> and calls thrust::sort and
    # thrust::sequence, which rocThrust's device_vector.h does not bring
    header = ("#include <thrust/binary_search.h>\n#include <thrust/device_vector.h>\n"
              "void f(thrust::device_vector<int>& e) {\n  thrust::sort(e.begin(), e.end());\n"
              "  thrust::sequence(e.begin(), e.end());\n  thrust::lower_bound(e.begin(), e.end(), 1);\n}\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "srcs/cpp/include/quiver/quiver.cu.hpp": header})
    line = "../../srcs/cpp/include/quiver/quiver.cu_hip.hpp:226:21: error: no member named 'sort' in namespace 'thrust'"
    (hit,) = [h for h in in_log([(121, line)], BuildFiles.read(t)) if h.trap.id == "thrust-header-missing"]
    _apply_draft_patches(t, apply_fix(STARTER, hit.fix, "trap thrust-header-missing (log:121): evidence"))  # type: ignore[arg-type]
    out = (t / "srcs/cpp/include/quiver/quiver.cu.hpp").read_text()
    assert out == "#include <thrust/sequence.h>\n#include <thrust/sort.h>\n" + header  # binary_search.h was there
    assert "thrust-header-missing" not in [h.trap.id for h in in_log([(121, line)], BuildFiles.read(t))]


def test_nvccs_diagnostic_numbers_are_a_flag_value_clang_would_take_for_a_file(tmp_path):
    # gsplat 1.5.3: `nvcc_flags += ["-diag-suppress", "20012,186"]`; clang drops the flag and opens "20012,186"
    t = tree(tmp_path / "src", {"setup.py": 'nvcc_flags = ["-O3"]\nnvcc_flags += ["-diag-suppress", "20012,186"]\n'})
    line = "clang++: error: no such file or directory: '20012,186'"
    (hit,) = [h for h in in_log([(2991, line)], BuildFiles.read(t)) if h.trap.id == "nvcc-flag-value"]
    assert hit.files is not None and hit.files.where == "setup.py:2"
    _apply_draft_patches(t, apply_fix(STARTER, hit.fix, "trap nvcc-flag-value (log:2991): evidence"))  # type: ignore[arg-type]
    assert (t / "setup.py").read_text() == 'nvcc_flags = ["-O3"]\nnvcc_flags += []\n'


def test_a_version_setup_py_dates_unless_told_it_is_a_release_gets_the_variable(tmp_path):
    # torch-encoding 1.2.1: `if not os.getenv('RELEASE'): version += today.strftime("b%Y%m%d")`
    setup = ("import os\nfrom torch.utils.cpp_extension import load\nversion = '1.2.1'\ntry:\n"
             "    if not os.getenv('RELEASE'):\n        from datetime import date\n"
             "        version += date.today().strftime('b%Y%m%d')\nexcept Exception:\n    pass\n"
             "if not os.environ.get('VERBOSE'):\n    quiet = True\nsetup(version=version)\n")
    t = tree(tmp_path / "src", {"setup.py": setup})
    hit = _only_hit(t, "version-changed-unless-release")
    assert hit.files is not None and hit.files.where == "setup.py:5" and hit.fix == SetEnv("RELEASE", "1")
    drafted = draft_recipe("t", "t==1.2.1", "0" * 64, read_tree(t), ["gfx1100"])
    assert "RELEASE: '1'" in drafted and "left unset: VERBOSE (setup.py:10)" in drafted  # RELEASE is set
    line = "error: verify: t-1.2.1b20261203-py3-none-any.whl: the wheel's version is 1.2.1b20261203, where the " \
           "recipe builds 1.2.1 from its sdist: setup.py changed the release's version"
    (after,) = [h for h in in_log([(1, line)], BuildFiles.read(t)) if h.trap.id == "version-changed-unless-release"]
    assert after.fix == SetEnv("RELEASE", "1")
    # a variable that turns the suffix on is not one to set, nor any dict's get
    for test in ("if os.getenv('RELEASE'):", "if not config.get('RELEASE'):"):
        (t / "setup.py").write_text(setup.replace("if not os.getenv('RELEASE'):", test))
        assert "version-changed-unless-release" not in [h.trap.id for h in in_build_files(BuildFiles.read(t))]


def test_extensions_built_only_for_setup_py_flags_get_them_through_pip(tmp_path):
    # pytorch-extension 0.2 (apex): `if "--cuda_ext" in sys.argv: ... ext_modules.append(CUDAExtension(...))`;
    # its optional features (--xentropy) are left alone
    setup = ("import sys\nfrom torch.utils.cpp_extension import CppExtension, CUDAExtension\next_modules = []\n"
             "if \"--cpp_ext\" in sys.argv or \"--cuda_ext\" in sys.argv:\n    pass\n"
             "if \"--cpp_ext\" in sys.argv:\n    sys.argv.remove(\"--cpp_ext\")\n"
             "    ext_modules.append(CppExtension('apex_C', ['csrc/flatten_unflatten.cpp']))\n"
             "if \"--cuda_ext\" in sys.argv:\n    sys.argv.remove(\"--cuda_ext\")\n"
             "    ext_modules.append(CUDAExtension(name='amp_C', sources=['csrc/amp_C_frontend.cpp', 'csrc/k.cu']))\n"
             "if \"--xentropy\" in sys.argv:\n    ext_modules.append(CUDAExtension('xentropy_cuda', ['x.cu']))\n"
             "if \"--pyprof\" in sys.argv:\n    sys.argv.remove(\"--pyprof\")\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "csrc/k.cu": "__global__ void k() {}\n"})
    hit = _only_hit(t, "extensions-by-argv")
    assert hit.files is not None and hit.files.where == "setup.py:6" and hit.fix == BuildOption("--cpp_ext --cuda_ext")
    recipe = yaml.safe_load(draft_recipe("apex", "apex==0.2", "0" * 64, read_tree(t), ["gfx1100"]))
    (wheel,) = [s["wheel"] for s in recipe["steps"] if "wheel" in s]
    assert wheel["config-settings"] == {"--build-option": "--cpp_ext --cuda_ext"}
    loaded = load_recipe_text(draft_recipe("apex", "apex==0.2", "0" * 64, read_tree(t), ["gfx1100"]), Path("apex.yaml"))
    assert loaded.steps[-1].config_settings == (("--build-option", "--cpp_ext --cuda_ext"),)  # type: ignore[union-attr]


def test_pybind11_that_cmake_would_download_comes_from_pypis_sdist(tmp_path):
    """fast-rnnt 1.3 (and optimized-transducer, k2-fsa's): cmake/pybind11.cmake declares pybind11 2.6.0 from GitHub
    for FetchContent, in both branches of an if(); the draft brings PyPI's pybind11 sdist as an extra source and
    points every declaration at it (a commented-out one and another package's are left)."""
    pybind = ("# FetchContent_Declare(pybind11 URL https://example.invalid/old.tar.gz)\n"
              "function(download_pybind11)\n  include(FetchContent)\n"
              '  set(pybind11_URL  "https://github.com/pybind/pybind11/archive/v2.6.0.tar.gz")\n'
              "  if(NOT WIN32)\n    FetchContent_Declare(pybind11\n      URL               ${pybind11_URL}\n"
              "      URL_HASH          ${pybind11_HASH}\n    )\n  else()\n    FetchContent_Declare(pybind11\n"
              "      URL               ${pybind11_URL}\n    )\n  endif()\n"
              "  FetchContent_Declare(googletest URL https://github.com/google/googletest/archive/v1.tar.gz)\n"
              "endfunction()\n")
    t = tree(tmp_path / "src", {"setup.py": "import setuptools\n", "CMakeLists.txt": "include(pybind11)\n",
                                "cmake/pybind11.cmake": pybind})
    hit = _only_hit(t, "pybind11-downloaded")
    assert hit.evidence.where == "cmake/pybind11.cmake:6" and hit.evidence.text == "FetchContent_Declare(pybind11"
    text = apply_fix(STARTER, hit.fix, "trap pybind11-downloaded (cmake/pybind11.cmake:6): evidence")  # type: ignore[arg-type]
    recipe = load_recipe_text(text, tmp_path / "p.yaml")
    (extra,) = recipe.extra_sources
    assert extra.name == "pybind11" and extra.sdist == "pybind11==3.1.0"
    _apply_draft_patches(t, text)
    out = (t / "cmake/pybind11.cmake").read_text()
    assert out.count('FetchContent_Declare(pybind11 SOURCE_DIR "${{ sources.pybind11 }}")') == 2
    # pybind11 2's classic Python variables (PYTHON_INCLUDE_DIRS) for a project written for pybind11 2
    assert out.count("    set(PYBIND11_FINDPYTHON OFF)\n    FetchContent_Declare(pybind11 SOURCE_DIR") == 2
    assert "URL_HASH" not in out and "FetchContent_Declare(googletest URL" in out
    # a failed download of pybind11 names the trap, ahead of downloads-at-build's "fix by hand"
    line = "error: downloading 'https://github.com/pybind/pybind11/archive/v2.6.0.tar.gz' failed"
    assert [h.trap.id for h in in_log([(70, line)], BuildFiles.read(t))][0] == "pybind11-downloaded"
    # a project that declares pybind11 3 already finds Python its way
    (t / "cmake/pybind11.cmake").write_text("FetchContent_Declare(pybind11\n  GIT_REPOSITORY https://github.com/pybind/"
                                            "pybind11\n  GIT_TAG v3.0.1)\n")
    (hit,) = [h for h in in_build_files(BuildFiles.read(t)) if h.trap.id == "pybind11-downloaded"]
    assert hit.files is not None and "FINDPYTHON" not in hit.files.also[0].with_
    # one that only finds pybind11's CMake package is no download
    (t / "cmake/pybind11.cmake").write_text("find_package(pybind11 CONFIG REQUIRED)\n")
    assert "pybind11-downloaded" not in _seen(t)


def test_a_libtorch_that_cmake_would_download_is_the_target_pythons_torch(tmp_path):
    """openequivariance 0.7.0: its CMakeLists.txt has FetchContent download libtorch 2.10 for the CPU, for headers
    and libraries that the target python's own torch package holds (include/, lib/)."""
    cmake = ('set(LIBTORCH_URL "https://download.pytorch.org/libtorch/cpu/libtorch-shared-with-deps-2.10.0%2Bcpu.zip")\n'
             'FetchContent_Declare(\n    libtorch\n    URL "${LIBTORCH_URL}"\n)\nFetchContent_MakeAvailable(libtorch)\n')
    t = tree(tmp_path / "src", {"pyproject.toml": "[build-system]\n", "CMakeLists.txt": cmake})
    hit = _only_hit(t, "libtorch-downloaded")
    assert hit.evidence.where == "CMakeLists.txt:2" and "pybind11-downloaded" not in _seen(t)
    text = apply_fix(STARTER, hit.fix, "trap libtorch-downloaded (CMakeLists.txt:2): evidence")  # type: ignore[arg-type]
    assert load_recipe_text(text, tmp_path / "p.yaml").extra_sources == ()
    _apply_draft_patches(t, text)
    assert (t / "CMakeLists.txt").read_text().splitlines()[1:3] == [
        'FetchContent_Declare(libtorch SOURCE_DIR "${{ torch.folder }}")', "FetchContent_MakeAvailable(libtorch)"]
    line = ("error: downloading 'https://download.pytorch.org/libtorch/cpu/libtorch-shared-with-deps-2.10.0%2Bcpu.zip' "
            "failed")
    assert [h.trap.id for h in in_log([(32, line)], BuildFiles.read(t))][0] == "libtorch-downloaded"


def test_a_cuda_flag_in_the_cuda_branch_of_a_package_that_never_tests_for_hip_is_dropped_by_the_draft(tmp_path):
    """pytorch-extension 0.2 (apex's setup.py): `if CUDA_HOME is None: raise ... else:` puts its nvcc flags on CUDA's
    side, which a ROCm torch takes too where nothing tests for HIP; --try had met them one try each."""
    setup = ("import sys\nfrom torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\nmacros = []\next_modules = []\n"
             "if CUDA_HOME is None:\n    raise RuntimeError('nvcc was not found')\nelse:\n"
             "    ext_modules.append(CUDAExtension(name='mlp_cuda', sources=['mlp.cpp', 'mlp_cuda.cu'],\n"
             "                       extra_compile_args={'cxx': ['-O3'] + macros,\n"
             "                                           'nvcc': ['-maxrregcount=50',\n"
             "                                                    '-O3',\n"
             "                                                    '--use_fast_math'] + macros}))\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "mlp.cpp": "", "mlp_cuda.cu": "__global__ void k() {}\n"})
    assert "cuda-flag-for-hipcc" in _seen(t)
    _drafted(t)
    out = (t / "setup.py").read_text()
    ast.parse(out)
    assert "--use_fast_math" not in out and "-maxrregcount" not in out and "'-O3'" in out
    # where the package has a HIP branch, its CUDA branch's flags stay CUDA's
    aware = setup.replace("if CUDA_HOME is None:", "if torch.version.hip:\n    pass\nelif CUDA_HOME is None:")
    assert "cuda-flag-for-hipcc" not in _seen(tree(tmp_path / "aware", {"setup.py": "import torch\n" + aware,
                                                                     "mlp_cuda.cu": ""}))


def test_a_gemm_ex_compute_type_given_as_a_data_type_becomes_a_compute_type(tmp_path):
    """pytorch-extension 0.2 (apex's csrc/mlp_cuda.cu): `cublasGemmEx(..., C, CUDA_R_64F, ldc, CUDA_R_64F,
    CUBLAS_GEMM_DEFAULT)`, whose hipified HIP_R_64F hipBLAS's v2 hipblasGemmEx refuses as its compute type."""
    source = ("return cublasGemmEx(handle, ta, tb, m, n, k, alpha, A, CUDA_R_64F, lda, B, CUDA_R_64F, ldb,\n"
              "    beta, C, CUDA_R_64F, ldc, CUDA_R_64F, CUBLAS_GEMM_DEFAULT);\n"
              "cublasGemmEx(h, ta, tb, m, n, k, a, A, CUDA_R_16F, lda, B, CUDA_R_16F, ldb, b, C, CUDA_R_16F, ldc,\n"
              "    CUDA_R_32F,\n    CUBLAS_GEMM_DEFAULT_TENSOR_OP);\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "csrc/mlp_cuda.cu": source})
    _drafted(t)
    out = (t / "csrc/mlp_cuda.cu").read_text()
    assert "ldc, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);" in out
    assert "CUBLAS_COMPUTE_32F,\n    CUBLAS_GEMM_DEFAULT_TENSOR_OP" in out
    assert out.count("CUDA_R_64F") == 3 and out.count("CUDA_R_16F") == 3  # the matrices' own types stay
    note = ("hipblas.h:23705:32: note: candidate function not viable: no known conversion from 'hipDataType' to "
            "'hipblasComputeType_t' for 18th argument")
    assert "gemm-ex-compute-type" in [h.trap.id for h in in_log([(9, note)], BuildFiles.read(t))]


def test_a_stable_abi_module_calling_the_shims_gpu_functions_defines_use_rocm_first(tmp_path):
    """openequivariance 0.7.0: its CMake builds libtorch_tp_jit_stable.cpp with g++ and -DHIP_BACKEND, and calls
    aoti_torch_get_current_cuda_stream, which a ROCm torch's shim.h declares under USE_ROCM only."""
    source = ("#include <torch/csrc/inductor/aoti_torch/c/shim.h>\n"
              "Stream get_current_stream() {\n"
              "    TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device_idx, &stream_ptr));\n}\n")
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import load\n",
                                "extension/stable.cpp": source, "extension/other.cpp": "int f();\n",
                                "extension/aware.cpp": "#ifdef USE_ROCM\n" + source + "#endif\n"})
    assert "shim-gpu-calls-undeclared" in _seen(t)
    _drafted(t)
    out = (t / "extension/stable.cpp").read_text()
    assert out.startswith("#ifndef USE_ROCM\n#define USE_ROCM 1") and out.endswith(source)
    assert (t / "extension/other.cpp").read_text() == "int f();\n"
    assert (t / "extension/aware.cpp").read_text().startswith("#ifdef USE_ROCM\n")  # a file that tests it is its own
    gxx = ("src/openequivariance/extension/libtorch_tp_jit_stable.cpp:72:28: error: ‘aoti_torch_get_current_cuda_stream’"
           " was not declared in this scope; did you mean ‘aoti_torch_get_current_stream’?")
    clang = "stable.cpp:3:28: error: use of undeclared identifier 'aoti_torch_get_current_cuda_stream'"
    fresh = tree(tmp_path / "fresh", {"setup.py": "from torch.utils.cpp_extension import load\n",
                                      "extension/stable.cpp": source})
    for line in (gxx, clang):
        hits = in_log([(72, line)], BuildFiles.read(fresh))
        assert hits and hits[0].trap.id == "shim-gpu-calls-undeclared", line
        assert hits[0].evidence.value == "aoti_torch_get_current_cuda_stream"


def test_functions_made_host_and_device_under_cuda_arch_alone_are_for_hips_two_sides_too(tmp_path):
    # fast-rnnt 1.3's mutual_information.h: `#ifdef __CUDA_ARCH__` / `#define FT_CUDA_HOSTDEV __host__ __device__`;
    # clang never defines __CUDA_ARCH__, and its kernels' calls of LogAdd were refused as calls of host functions
    header = ("#pragma once\n#ifdef __CUDA_ARCH__\n#define HD __host__ __device__\n#else\n#define HD\n#endif\n"
              "  #if defined(__CUDA_ARCH__)  // the device pass\n#define HD2 __device__ __forceinline__\n#endif\n"
              "HD inline float f(float x) { return x; }\n")
    code = "#ifdef __CUDA_ARCH__\n  x = __ldg(p);\n#else\n  x = *p;\n#endif\n"  # code for each side: nvcc's to keep
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "csrc/f.h": header, "csrc/k.cu": code})
    hit = _only_hit(t, "device-arch-hostdev-guard")
    assert hit.evidence.where == "csrc/f.h:2" and len(hit.fix.edits) == 1  # type: ignore[union-attr]
    _drafted(t)
    guard = "#if defined(__CUDA_ARCH__) || defined(__HIPCC__)  // rocbuild: clang's HIP host side calls them too\n"
    assert (t / "csrc/f.h").read_text() == (f"#pragma once\n{guard}#define HD __host__ __device__\n#else\n#define HD\n"
                                            f"#endif\n{guard}#define HD2 __device__ __forceinline__\n#endif\n"
                                            "HD inline float f(float x) { return x; }\n")
    assert (t / "csrc/k.cu").read_text() == code
    assert "device-arch-hostdev-guard" not in _seen(t)
    # clang's note names the header that declares the function; a header that only uses the macro leads to its guard
    (t / "csrc/f.h").write_text(header)
    (t / "csrc/g.h").write_text('#include "f.h"\nHD inline int g(int x) { return x; }\n')
    note = "../csrc/g.h:2:15: note: candidate function not viable: call to __host__ function from __global__ function"
    (log_hit,) = [h for h in in_log([(7, note)], BuildFiles.read(t)) if h.trap.id == "device-arch-hostdev-guard"]
    assert log_hit.files is not None and log_hit.files.where == "csrc/f.h:2"
    # a host function called from a kernel for another reason is not this trap's
    (t / "csrc/f.h").write_text("#pragma once\ninline float f(float x) { return x; }\n")
    assert not [h for h in in_log([(7, note)], BuildFiles.read(t)) if h.trap.id == "device-arch-hostdev-guard"]


def test_a_setup_py_that_globs_a_folder_the_sdist_lacks_leaves_the_kernels_to_run_time(tmp_path):
    # monai 1.6.1: setup.py's CUDAExtension takes what monai/csrc holds, which its sdist leaves out; its one kernel,
    # gmm, is compiled at run time by load(), imported through `optional_import("torch.utils.cpp_extension", name="load")`
    setup = ("import glob, os\nimport torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "FORCE_CUDA = os.getenv('FORCE_CUDA', '0') == '1'\n"
             "BUILD_CUDA = FORCE_CUDA or torch.cuda.is_available()\n"
             "ext_dir = os.path.join(os.path.dirname(__file__), 'm', 'csrc')\n"
             "sources = glob.glob(os.path.join(ext_dir, '**', '*.cu'), recursive=True)\n"
             "ext = [CUDAExtension('m._C', sources)] if sources else []\n")
    loader = ("from m.utils import optional_import\n\ndef load_module(name):\n"
              "    load, _ = optional_import(\"torch.utils.cpp_extension\", name=\"load\")\n"
              "    return load(name=name, sources=[])\n")
    files = {"setup.py": setup, "m/__init__.py": "", "m/_ext/loader.py": loader, "m/_ext/gmm/gmm_cuda.cu": ""}
    t = tree(tmp_path / "src", files)
    reading = read_torch(t)
    assert reading is not None and reading.jit == "m/_ext/loader.py:4" and reading.built_at is None
    assert "setup.py compiles what m/csrc holds, which the sdist lacks" in " ".join(reading.notes)
    recipe = load_recipe_text(draft_recipe("m", "m==1.0", "0" * 64, read_tree(t), ["gfx1100"]), tmp_path / "m.yaml")
    assert [v.required for v in recipe.verify if v.KIND == "code-objects"] == [False]  # type: ignore[attr-defined]
    # the folder packed, its kernels are built at install, whatever load() does later
    t = tree(tmp_path / "packed", {**files, "m/csrc/k.cu": "__global__ void k() {}\n"})
    assert read_torch(t).built_at == "setup.py:3"  # type: ignore[union-attr]



def test_a_header_of_the_packages_own_folder_never_packed_is_named_and_not_taken_for_rocms(tmp_path):
    # pipablepytorch3d 0.7.6 packs pytorch3d/csrc/pulsar/ with its sources and no header: `fatal error:
    # pulsar/global.h: No such file or directory` had been named rocm-package-missing, with no fix
    t = tree(tmp_path / "src", {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n",
                                "p/csrc/ext.cpp": '#include "pulsar/global.h"\n', "p/csrc/pulsar/warnings.cpp": ""})
    line = "/w/src/p/csrc/ext.cpp:10:10: fatal error: pulsar/global.h: No such file or directory"
    ids = [h.trap.id for h in in_log([(4, line)], BuildFiles.read(t))]
    assert ids == ["sdist-header-missing"]
    (hit,) = [h for h in in_log([(4, line)], BuildFiles.read(t))]
    assert hit.files is not None and hit.files.where == "p/csrc/pulsar" and hit.fix is None
    # packed after all, or a folder the tree does not have: not this trap's
    (t / "p/csrc/pulsar/global.h").write_text("")
    assert not in_log([(4, line)], BuildFiles.read(t))
    other = "/w/k.cu:1:10: fatal error: cutlass/cutlass.h: No such file or directory"
    assert "sdist-header-missing" not in [h.trap.id for h in in_log([(4, other)], BuildFiles.read(t))]
    # a ROCm library's header is still rocm-package-missing's
    rocm = "/w/k.cu:1:10: fatal error: hipblaslt/hipblaslt.h: No such file or directory"
    assert [h.trap.id for h in in_log([(4, rocm)], BuildFiles.read(t))] == ["rocm-package-missing"]


def test_nvidias_own_python_packages_are_never_required(tmp_path):
    # transformer-engine-torch 2.20.2: build_tools/utils.py imports `nvidia` (its CUDA wheels' namespace); --try had
    # listed it, and pip found no `nvidia` at all
    line = "ModuleNotFoundError: No module named 'nvidia'"
    (hit,) = in_log([(11, line)], None)
    assert hit.trap.id == "cuda-python-module" and hit.fix is None and hit.evidence.value == "nvidia"
    assert [h.trap.id for h in in_log([(3, "ModuleNotFoundError: No module named 'cuda.bindings'")], None)] == [
        "cuda-python-module"]
    (other,) = in_log([(11, "ModuleNotFoundError: No module named 'nvidiafoo'")], None)
    assert other.trap.id == "build-module-missing" and other.fix == Require("python", ("nvidiafoo",))


def test_cudas_fp8_header_is_named_a_cuda_feature_to_port(tmp_path):
    # arctic-inference 0.3.0's csrc/custom_ops/reshape_and_cache_flash_fp4.cu: `#include <cuda_fp8.h>`, which hipify
    # leaves; the report had named no trap
    line = "/w/src/csrc/custom_ops/reshape_and_cache_flash_fp4.cu:23:10: fatal error: 'cuda_fp8.h' file not found"
    (hit,) = in_log([(532, line)], None)
    assert hit.trap.id == "cuda-feature-missing" and hit.evidence.value == "cuda_fp8.h" and hit.fix is None


def test_the_rocm_packages_a_cmake_build_finds_required_are_listed_by_the_draft(tmp_path):
    # CMake stops at the first package it cannot find: fast-rnnt 1.3 spent a try on each of five
    top = ("cmake_minimum_required(VERSION 3.21)\nproject(p LANGUAGES CXX HIP)\nfind_package(hip REQUIRED)\n"
           "find_package(rocprim REQUIRED CONFIG)\nfind_package(rccl QUIET)\n# find_package(miopen REQUIRED)\n"
           "add_subdirectory(sub)\n")
    sub = "find_package(hipcub REQUIRED)\nfind_package(Python REQUIRED)\n"
    t = tree(tmp_path / "src", {"CMakeLists.txt": top, "sub/CMakeLists.txt": sub, "setup.py": "import subprocess\n"
                                "subprocess.run(['cmake', '.'])\n"})
    hit = _only_hit(t, "rocm-package-missing")
    assert hit.evidence.where == "CMakeLists.txt:4" and hit.fix == Require("cmake-packages", ("rocprim", "hipcub"))
    recipe = load_recipe_text(draft_recipe("p", "p==1.0", "0" * 64, read_tree(t), ["gfx1100"]), tmp_path / "p.yaml")
    assert [c.value for c in recipe.requires.cmake_packages] == ["rocprim", "hipcub"]
    # a CUDA-only project the port builds as HIP: the ROCm libraries it finds for CUDA's targets are listed too
    cuda = "project(c LANGUAGES CXX CUDA)\nadd_library(c k.cu)\ntarget_link_libraries(c CUDA::cublas CUDA::cudart)\n"
    t = tree(tmp_path / "cuda", {"CMakeLists.txt": cuda, "k.cu": "__global__ void k() {}\n"})
    recipe = load_recipe_text(draft_recipe("c", "c==1.0", "0" * 64, read_tree(t), ["gfx1100"]), tmp_path / "c.yaml")
    assert [c.value for c in recipe.requires.cmake_packages] == ["hipblas"]
    # a setup.py that never runs CMake lists nothing from a CMakeLists.txt beside it
    t = tree(tmp_path / "py", {"CMakeLists.txt": top, "setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"})
    assert "rocm-package-missing" not in _seen(t)


def test_a_missing_module_is_required_by_the_distribution_that_brings_it(tmp_path):
    # ppq 0.6.6: `from google.protobuf.internal import ...` failed as "No module named 'google'"; --try had required
    # `google`, an unrelated PyPI package, and the import failed again
    (hit,) = in_log([(62, "ModuleNotFoundError: No module named 'google'")], None)
    assert hit.trap.id == "build-module-missing" and hit.fix == Require("python", ("protobuf",))
    (hit,) = in_log([(3, "ModuleNotFoundError: No module named 'yaml'")], None)
    assert hit.fix == Require("python", ("pyyaml",))
    # the drafter's reading of setup.py's own imports too
    t = tree(tmp_path / "src", {"setup.py": "import yaml\nfrom torch.utils.cpp_extension import CUDAExtension\n"})
    reading = read_torch(t)
    assert reading is not None and "pyyaml" in reading.python and "yaml" not in reading.python
    # mmcv 2.2.0 imports Cambricon's torch_mlu on its FORCE_MLU branch: pip found none, the build environment failed
    (t / "setup.py").write_text("import os\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                                "if os.getenv('FORCE_MLU', '0') == '1':\n    import torch_mlu\n")
    assert "torch_mlu" not in read_torch(t).python  # type: ignore[union-attr]


def test_a_cmake_project_with_a_hip_path_in_another_file_is_not_ported(tmp_path):
    # deepmd-kit 3.2.0: source/lib/src/gpu/CMakeLists.txt enables HIP under USE_ROCM_TOOLKIT; source/op/pt's CUDA
    # operators (no project() of their own) had been ported, and the port's edit found no project() there
    top = "project(d CXX)\nadd_subdirectory(gpu)\nadd_subdirectory(op)\n"
    gpu = "if(USE_ROCM_TOOLKIT)\n  enable_language(HIP)\nelse()\n  enable_language(CUDA)\nendif()\n"
    op = "if(USE_CUDA_TOOLKIT)\n  enable_language(CUDA)\n  add_library(op k.cu)\nendif()\n"
    files = {"CMakeLists.txt": top, "gpu/CMakeLists.txt": gpu, "op/CMakeLists.txt": op, "op/k.cu": ""}
    assert "cmake-cuda-only" not in _seen(tree(tmp_path / "src", files))
    # without the HIP path, the CUDA-only operators are ported
    assert "cmake-cuda-only" in _seen(tree(tmp_path / "cuda", {**files, "gpu/CMakeLists.txt": "enable_language(CUDA)\n"}))


def test_libcuxx_named_from_the_global_namespace_is_a_cuda_feature(tmp_path):
    # grouped-gemm 0.3.0's fill_arguments.cuh: `__device__ ::cuda::std::tuple<int&> operator()(...)`
    line = "../../csrc/fill_arguments_hip.cuh:23:16: error: no member named 'cuda' in the global namespace"
    (hit,) = in_log([(700, line)], None)
    assert hit.trap.id == "cuda-feature-missing" and hit.evidence.value == "cuda"


def test_a_cuda_flag_a_function_returns_is_left_valid_python(tmp_path):
    # warpconvnet 1.8.2's build_arch.py: `return f"-gencode=arch=compute_{self.code},code=sm_{self.code}"` in a
    # property; the drop had left `return` and the next line's `@property` together, a SyntaxError at metadata
    arch = ("class Target:\n    @property\n    def cubin_flag(self) -> str:\n"
            "        return f\"-gencode=arch=compute_{self.code},code=sm_{self.code}\"\n\n"
            "    @property\n    def other(self) -> str:\n        return 'x'\n")
    setup = ("from torch.utils.cpp_extension import CUDAExtension\nfrom build_arch import Target\n"
             "flags = ['-O3', '--use_fast_math', Target().cubin_flag]\n"
             "CUDAExtension('w', ['k.cu'], extra_compile_args={'nvcc': flags})\n")
    t = tree(tmp_path / "src", {"setup.py": setup, "build_arch.py": arch, "k.cu": ""})
    _drafted(t)
    out = (t / "build_arch.py").read_text()
    ast.parse(out)
    assert '        return f"-gencode=arch=compute_{self.code},code=sm_{self.code}"\n\n    @property\n' in out


def test_protobuf_modules_an_older_protoc_generated_are_read_by_the_pure_python_backend():
    # ppq 0.6.6: setup.py imports ppq, whose ppl_caffe_pb2.py protobuf 5 refuses
    (hit,) = in_log([(72, "TypeError: Descriptors cannot be created directly.")], None)
    assert hit.trap.id == "protobuf-generated-too-old"
    assert hit.fix == SetEnv("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
