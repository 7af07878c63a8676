"""Reading a PyTorch extension's build files for ROCm (setup.py texts the test writes, shaped like upstream's):
variables and their separators, the side of a CUDA/HIP test each flag is on, allow-lists, traps, and the draft."""

from __future__ import annotations

import jsonschema
import yaml

from rocbuild.draft.torch_reading import read_torch
from rocbuild.draft.torch_text import import_name
from rocbuild.draft.tree import draft_recipe, read_tree
from rocbuild.recipe.load import load_recipe_text
from rocbuild.recipe.schema import recipe_schema
from tests.unit.test_draft_tree import tree

HEAD = "import os\nimport torch\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension, IS_HIP_EXTENSION\n"


def variables(t):
    return {v.name: v for v in read_torch(t).variables}


def test_each_variable_is_classified_and_the_package_arch_variable_keeps_its_separator(tmp_path):
    t = tree(tmp_path, {"setup.py": HEAD + (
        "FORCE = os.getenv('PKG_FORCE_BUILD', 'FALSE') == 'TRUE'\n"        # 4
        "SKIP = os.getenv('PKG_SKIP_CUDA_BUILD', 'FALSE') == 'TRUE'\n"     # 5
        "cuda_archs = os.environ.get('PKG_CUDA_ARCHS', '80;90')\n"          # 6
        "jobs = os.environ['MAX_JOBS']\n"                                   # 7
        "if IS_HIP_EXTENSION:\n"                                            # 8
        "    archs = os.getenv('GPU_ARCHS', 'native').split(';')\n"          # 9
        "    flags = [f'--offload-arch={a}' for a in archs]\n"               # 10
        "    tile = os.getenv('TILE_DIM', '64')\n")})                        # 11
    found = variables(t)
    assert (found["GPU_ARCHS"].kind, found["GPU_ARCHS"].where) == ("arch", "setup.py:9")
    assert found["GPU_ARCHS"].value == "${{ archs | join(';') }}" and "'native'" in found["GPU_ARCHS"].why
    assert (found["PKG_FORCE_BUILD"].kind, found["PKG_FORCE_BUILD"].value) == ("force", "TRUE")  # what it is compared with
    assert (found["PKG_SKIP_CUDA_BUILD"].kind, found["PKG_SKIP_CUDA_BUILD"].value) == ("skip", None)
    assert (found["PKG_CUDA_ARCHS"].kind, found["PKG_CUDA_ARCHS"].value) == ("cuda", None)
    assert (found["MAX_JOBS"].kind, found["MAX_JOBS"].value) == ("jobs", "${{ jobs }}")
    assert found["TILE_DIM"].kind == "option" and "'64'" in found["TILE_DIM"].why  # read only in the HIP branch


def test_separators_space_and_one_flag(tmp_path):
    spaced = tree(tmp_path / "a", {"setup.py": HEAD + (
        "if torch.version.hip:\n    archs = os.getenv('HIP_ARCHITECTURES', 'native').split()\n"
        "    flags = [f'--offload-arch={a}' for a in archs]\n")})
    single = tree(tmp_path / "b", {"setup.py": HEAD + (
        "if IS_HIP_EXTENSION:\n    flags = [f\"--offload-arch={os.getenv('HIP_ARCHITECTURES', 'native')}\"]\n")})
    assert variables(spaced)["HIP_ARCHITECTURES"].value == "${{ archs | join(' ') }}"
    assert variables(single)["HIP_ARCHITECTURES"].value == "${{ archs | join(',') }}"  # clang splits one flag's list


def test_an_arch_variable_without_a_package_offload_arch_flag_is_not_set(tmp_path):
    t = tree(tmp_path, {"setup.py": HEAD + "arch = os.environ.get('DS_EVOFORMER_GPU_ARCH')\n"})
    assert variables(t)["DS_EVOFORMER_GPU_ARCH"].value is None  # torch's PYTORCH_ROCM_ARCH decides then


def test_cuda_only_flags_are_judged_by_the_side_of_the_test_they_sit_under(tmp_path):
    t = tree(tmp_path, {"setup.py": HEAD + (
        "if not IS_HIP_EXTENSION:\n    a = ['--expt-relaxed-constexpr']\n"                    # 4-5: CUDA side
        "if torch.version.hip:\n    b = ['--use_fast_math']\nelse:\n    c = ['-lineinfo']\n"   # 6-9: HIP, then CUDA
        "if torch.cuda.is_available() or os.getenv('FORCE_CUDA', '0') == '1':\n"              # 10: names no marker
        "    d = ['--ptxas-options=-v']\n"
        "if CUDA_HOME is not None or os.getenv('FORCE_NVCC', '0') == '1':\n"                 # 12: decides nothing
        "    e = ['-gencode', 'arch=compute_80']\n")})
    notes = read_torch(t).notes
    assert ("CUDA-only flags hipcc would be given: --use_fast_math at setup.py:7 "
            "(the draft drops those it can from setup.py: trap cuda-flag-for-hipcc)") in notes
    assert ("CUDA-only flags --ptxas-options=-v at setup.py:11 are behind no CUDA or HIP test: could not decide "
            "whether hipcc gets them") in notes
    undecided = next(n for n in notes if "sit under the test at setup.py:12, which does not decide" in n)
    assert "-gencode at setup.py:13" in undecided and "FORCE_NVCC" in undecided
    assert not any("--expt-relaxed-constexpr" in n or "-lineinfo" in n for n in notes)
    # FORCE_CUDA takes the branch that passes a CUDA-only flag, even with a GPU-gated build: left unset
    assert variables(t)["FORCE_CUDA"].value is None


def test_force_cuda_is_set_where_the_gpu_build_otherwise_needs_a_visible_gpu(tmp_path):
    t = tree(tmp_path, {"setup.py": HEAD + (
        "WITH_CUDA = torch.cuda.is_available() and (torch.version.hip or CUDA_HOME)\n"
        "if torch.cuda.is_available():\n    suffices = ['cpu', 'cuda']\n"
        "if os.getenv('FORCE_CUDA', '0') == '1':\n    suffices = ['cuda', 'cpu']\n"
        "if os.getenv('FORCE_ONLY_CPU', '0') == '1':\n    suffices = ['cpu']\n")})
    found = variables(t)
    assert found["FORCE_CUDA"].value == "1" and found["FORCE_ONLY_CPU"].value is None
    assert any(n.startswith("torch.cuda.is_available() at setup.py:4, setup.py:5 asks for a visible GPU")
               and "FORCE_CUDA is set" in n for n in read_torch(t).notes)


def test_an_allow_list_refuses_other_targets_in_the_draft(tmp_path):
    t = tree(tmp_path, {"setup.py": HEAD + (
        "def check(archs):\n    allowed = ['native', 'gfx90a', 'gfx942']\n"
        "    assert all(a in allowed for a in archs)\n"
        "DEFAULTS = ['gfx1100', 'gfx1201']\n")})
    reading = read_tree(t)
    assert reading.torch is not None and reading.torch.allow_lists == [(("gfx90a", "gfx942"), "setup.py:5")]
    assert any("list of targets (gfx1100, gfx1201) at setup.py:7 is not tested" in n for n in reading.torch.notes)
    text = draft_recipe("pkg", "pkg==1.0", "0" * 64, reading, ["gfx1100", "gfx942"])
    assert "# DRAFT: setup.py:5 accepts only gfx90a, gfx942 (see unsupported: below); it rejects the requested gfx1100" in text
    (entry,) = yaml.safe_load(text)["unsupported"]
    assert entry["when"] == "${{ archs | reject('in', ['gfx90a', 'gfx942']) | list | length > 0 }}"
    load_recipe_text(text, tmp_path / "pkg.yaml")


def test_the_torch_draft_requires_a_rocm_torch_and_sets_the_arch_list_everywhere(tmp_path):
    t = tree(tmp_path, {"setup.py": HEAD + (
        "import packaging.version, psutil\nimport urllib.request\n"
        "FORCE = os.getenv('PKG_FORCE_BUILD', 'FALSE') == 'TRUE'\n"
        "if not FORCE:\n    urllib.request.urlretrieve('https://example.invalid/x.whl', 'x.whl')\n"
        "if IS_HIP_EXTENSION:\n    home = os.environ.get('ROCM_PATH')\n"
        "    archs = os.getenv('GPU_ARCHS', 'native').split(';')\n    flags = [f'--offload-arch={a}' for a in archs]\n"),
        "pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch>=2.10"]\nbuild-backend = "setuptools.build_meta"\n'})
    text = draft_recipe("pkg", "pkg==1.0", "0" * 64, read_tree(t))
    recipe = yaml.safe_load(text)
    assert recipe["requires"]["torch"] == "rocm" and recipe["requires"]["tools"] == ["hipcc"]
    assert recipe["requires"]["python"] == ["ninja", "packaging", "psutil", "setuptools", "wheel"]
    assert recipe["env"]["PYTORCH_ROCM_ARCH"] == "${{ archs | join(';') }}"
    assert recipe["env"]["ROCM_HOME"] == "${{ torch.rocm_home or rocm.path }}"
    assert recipe["env"]["ROCM_PATH"]["when"] == "${{ rocm.layout == 'rocm' }}"
    assert recipe["steps"] == [{"wheel": {}, "env": {"PKG_FORCE_BUILD": "TRUE", "GPU_ARCHS": "${{ archs | join(';') }}",
                                                     "MAX_JOBS": "${{ jobs }}"}}]
    assert "# DRAFT: downloads at setup.py:8 (urllib.request.urlretrieve)" in text and "PKG_FORCE_BUILD is set" in text
    assert "build-system.requires pins torch>=2.10" in text
    assert "no known HIP/ROCm switch" not in text  # the CMake reading's verdict is not a torch extension's
    assert list(jsonschema.Draft202012Validator(recipe_schema()).iter_errors(recipe)) == []
    load_recipe_text(text, tmp_path / "pkg.yaml")


def test_run_time_compilation_is_said_and_an_ops_switch_is_set(tmp_path):
    t = tree(tmp_path, {
        "setup.py": "import os\nBUILD_OPS = int(get_env_if_set('DS_BUILD_OPS', 0))\n",
        "op_builder/builder.py": "import os, subprocess\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                                 "def arch():\n    return subprocess.check_output(['rocminfo'])\n"
                                 "def jit():\n    os.environ['PYTORCH_ROCM_ARCH'] = arch()\n",
        "pkg/__init__.py": "", "pkg/ops.py": "from torch.utils.cpp_extension import load\n"})
    reading = read_torch(t)
    assert reading is not None and reading.jit == "pkg/ops.py:1"
    text = draft_recipe("pkg", "pkg==1.0", "0" * 64, read_tree(t))
    assert "# DRAFT: kernels are compiled at run time (cpp_extension.load at pkg/ops.py:1) unless DS_BUILD_OPS" in text
    assert yaml.safe_load(text)["steps"][0]["env"]["DS_BUILD_OPS"] == "1"
    assert any(n.startswith("rocminfo at op_builder/builder.py:4") for n in reading.notes)
    assert "op_builder/builder.py:6 set PYTORCH_ROCM_ARCH itself" in text


def test_a_precompiled_ops_switch_builds_the_ops_at_install(tmp_path):
    # arctic-inference 0.3.0: its CUDA ops are a CMake project built only under ARCTIC_INFERENCE_PRECOMPILED_OPS;
    # without it the op builder compiles them at run time, and the wheel came out with no device code
    setup = ("import os, subprocess\next_modules = []\n"
             "if os.environ.get('ARCTIC_INFERENCE_PRECOMPILED_OPS', '').lower() in ('1', 'true', 'on'):\n"
             "    ext_modules.append(CMakeExtension('a.custom_ops', 'csrc/custom_ops'))\n"
             "def build(ext):\n    subprocess.run(['cmake', ext.sourcedir], check=True)\n")
    t = tree(tmp_path, {"setup.py": setup, "a/__init__.py": "", "a/builder.py": "from torch.utils.cpp_extension import load\n",
                        "csrc/custom_ops/CMakeLists.txt": "project(c CXX CUDA)\nfind_package(Torch)\n"})
    text = draft_recipe("a", "a==1.0", "0" * 64, read_tree(t))
    assert yaml.safe_load(text)["steps"][-1]["env"]["ARCTIC_INFERENCE_PRECOMPILED_OPS"] == "1"


def test_without_an_ops_switch_nothing_is_compiled_at_install_time(tmp_path):
    t = tree(tmp_path, {"setup.py": "from setuptools import setup\nimport torch.utils.cpp_extension\nsetup()\n",
                        "pkg/__init__.py": "", "pkg/k.py": "from torch.utils import cpp_extension\n\n"
                                                           "mod = cpp_extension.load_inline('k', '')\n"})
    text = draft_recipe("pkg", "pkg==1.0", "0" * 64, read_tree(t))
    assert "cpp_extension.load at pkg/k.py:3): nothing may be compiled at install time" in text


def test_submodules_missing_from_the_sdist_are_named(tmp_path):
    t = tree(tmp_path, {
        "setup.py": HEAD + "from pathlib import Path\nck = Path('.') / 'third_party' / 'ck_tiled' / 'include'\n"
                           "cutlass = Path('.') / 'third_party' / 'cutlass'\n",
        "third_party/cutlass/include/cutlass.h": "", ".gitmodules": '[submodule "x"]\n\tpath = csrc/x\n'})
    (tmp_path / "csrc" / "x").mkdir(parents=True)  # there, but empty
    notes = read_torch(t).notes
    assert any(n.startswith("csrc/x (named at .gitmodules:2) is missing from the sdist or empty") for n in notes)
    assert any(n.startswith("third_party/ck_tiled (named at setup.py:5) is missing") for n in notes)
    assert not any("cutlass" in n for n in notes)


def test_a_package_that_never_tests_for_rocm_is_said_to_have_no_rocm_support(tmp_path):
    t = tree(tmp_path, {"setup.py": "from subprocess import call\nfrom torch.utils import cpp_extension\n"
                                    "if call(['nvcc']) == 0:\n    ext = cpp_extension.CUDAExtension('k', ['k.cu'], "
                                    "extra_compile_args={'nvcc': ['--use_fast_math']})\n"})
    notes = read_torch(t).notes
    assert any(n.startswith("nothing in setup.py tests for ROCm") for n in notes)
    assert "setup.py:3 runs nvcc, which ROCm lacks: what depends on it (its GPU extension?) is left out" in notes
    assert ("CUDA-only flags hipcc would be given: --use_fast_math at setup.py:4 "
            "(the draft drops those it can from setup.py: trap cuda-flag-for-hipcc)") in notes


def test_a_setup_py_this_python_cannot_parse_is_said_not_read(tmp_path):
    t = tree(tmp_path, {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\nprint 'python 2'\n"})
    reading = read_torch(t)
    assert reading is not None and reading.marker == "torch.utils.cpp_extension at setup.py"
    assert reading.notes[0] == "setup.py: SyntaxError: not parsed (not Python 3?), nothing was read from it: check it by hand"
    load_recipe_text(draft_recipe("p", "p==1.0", "0" * 64, read_tree(t)), tmp_path / "p.yaml")


def test_not_a_torch_extension(tmp_path):
    t = tree(tmp_path, {"setup.py": "import os\nfrom setuptools import setup\nsetup()\n"})
    assert read_torch(t) is None


def test_a_setuptools_project_that_passes_cmake_args_on_gets_its_switches_there(tmp_path):
    t = tree(tmp_path, {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools", "cmake"]\nbuild-backend = "setuptools.build_meta"\n',
        "setup.py": "import os\nargs = []\nif 'CMAKE_ARGS' in os.environ:\n"
                    "    args += [i for i in os.environ['CMAKE_ARGS'].split(' ') if i]\n",
        "CMakeLists.txt": "project(x CXX)\n",
        "lib/ggml/CMakeLists.txt": "option(GGML_HIP \"hip\" OFF)\nif(GGML_HIP)\n"
                                   "  set(CMAKE_HIP_ARCHITECTURES ${AMDGPU_TARGETS})\n  enable_language(HIP)\nendif()\n"})
    text = draft_recipe("w", "w==1.0", "0" * 64, read_tree(t))
    args = yaml.safe_load(text)["env"]["CMAKE_ARGS"]
    assert args.startswith("-DGGML_HIP=ON ") and " -DAMDGPU_TARGETS=${{ archs | join(';') }}" in args
    assert " -DCMAKE_HIP_COMPILER=${{ rocm.hip_compiler }}" in args
    assert "setup.py passes CMAKE_ARGS on to cmake (setup.py:3)" in text and "-DGGML_HIP" not in text.split("env:")[0]
    load_recipe_text(text, tmp_path / "w.yaml")


def test_an_opt_in_variable_that_gates_the_whole_extension_is_set(tmp_path):
    # torch-linear-assignment 0.1.0's shape: no extension at all unless a variable opts in; its draft came out
    # with none, and a wheel with no ELF file.
    t = tree(tmp_path, {"setup.py": HEAD + (
        "def modules():\n"
        "    if os.environ.get('TLA_BUILD_LEGACY_CUDA') != '1':\n        return []\n"
        "    ok = torch.backends.cuda.is_built() and (os.environ.get('FORCE_CUDA') == '1' or torch.cuda.is_available())\n"
        "    return [CUDAExtension('pkg._backend', ['a.cpp', 'b.cu'])]\n")})
    found = variables(t)
    assert (found["TLA_BUILD_LEGACY_CUDA"].kind, found["TLA_BUILD_LEGACY_CUDA"].value) == ("force", "1")
    assert found["FORCE_CUDA"].value == "1"
    # words that only look alike are not taken for one
    t2 = tree(tmp_path / "2", {"setup.py": HEAD + "x = os.environ.get('BUILD_CUDA_DOCS_DIR')\n"})
    assert variables(t2)["BUILD_CUDA_DOCS_DIR"].kind != "force"


def test_kernels_compiled_at_run_time_are_found_in_a_namespace_package(tmp_path):
    # optimum-quanto 0.2.7's shape: optimum/ has no __init__.py (PEP 420), the load() sits deep inside, and
    # setup.py builds nothing (its draft first said "probably for the CPU only", then failed as CPU-only).
    t = tree(tmp_path, {
        "pyproject.toml": "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'setuptools.build_meta'\n",
        "optimum/quanto/__init__.py": "",
        "optimum/quanto/library/extensions/extension.py": (
            "from torch.utils.cpp_extension import load\n\nclass Extension:\n"
            "    def lib(self):\n        return load(name=self.name, sources=self.sources)\n"),
        "examples/run.py": "from torch.utils.cpp_extension import load\n",
    })
    reading = read_torch(t)
    assert reading is not None and reading.jit == "optimum/quanto/library/extensions/extension.py:1"
    assert reading.packages == ["optimum.quanto"]  # what the draft imports, not optimum_quanto
    assert import_name("optimum-quanto", reading.packages) == "optimum.quanto"
    assert import_name("torch-scatter", ["torch_scatter", "tools"]) == "torch_scatter"
    assert import_name("chamferdist", []) == "chamferdist"


def test_what_setup_requires_names_is_a_build_requirement(tmp_path):
    """pip never installs setup_requires: inplace-abn 1.1.0's setuptools_scm then goes missing, and
    `use_scm_version` makes the wheel 0.0.0 without a word."""
    t = tree(tmp_path, {"setup.py": HEAD + "setup(use_scm_version=True, setup_requires=['setuptools_scm', \"pybind11>=2.6\"])\n"})
    recipe = yaml.safe_load(draft_recipe("pkg", "pkg==1.0", "0" * 64, read_tree(t)))
    assert {"setuptools_scm", "pybind11"} <= set(recipe["requires"]["python"])


def test_an_import_setup_py_can_do_without_is_not_a_build_requirement(tmp_path):
    # turbo-gnn 0.1.0rc4: `try: import nvidia ... except ImportError: pass` looks for CUDA's pip packages; the
    # draft had asked the build environment for a module 'nvidia', which pip cannot install
    setup = ("import os\nimport psutil\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
             "try:\n    import nvidia\n    from cupy import cuda\nexcept ImportError:\n    pass\n"
             "try:\n    import pybind11\nexcept OSError:\n    pass\n"
             "try:\n    import cython\nexcept ImportError:\n    raise RuntimeError('Cython is needed')\n"
             "setup(name='t', ext_modules=[CUDAExtension('t', ['k.cu'])])\n")
    setup = "import sys\nsys.path.insert(0, 'pkg')\nimport version\n" + setup  # torchopt's pkg/version.py
    reading = read_torch(tree(tmp_path / "src", {"setup.py": setup, "k.cu": "__global__ void k() {}\n",
                                                 "pkg/version.py": "__version__ = '1'\n"}))
    assert reading is not None
    assert "nvidia" not in reading.python and "cupy" not in reading.python and "version" not in reading.python
    assert "psutil" in reading.python and "pybind11" in reading.python  # an OSError handler does not make it optional
    assert "cython" in reading.python  # nor one that gives up
