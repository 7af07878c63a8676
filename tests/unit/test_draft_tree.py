"""Reading a project's build files for its HIP switches and target variables (trees the test writes)."""

from __future__ import annotations

from pathlib import Path

import yaml

from rocbuild.draft.tree import draft_recipe, read_tree
from rocbuild.recipe.load import load_recipe_text


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_cmake_switch_under_scikit_build_becomes_config_settings(tmp_path):
    t = tree(tmp_path, {
        "pyproject.toml": '[build-system]\nrequires = ["scikit-build-core"]\nbuild-backend = "scikit_build_core.build"\n',
        "CMakeLists.txt": "project(x CXX)\noption(GGML_HIP \"hip\" OFF) # the backend\n",
        "src/CMakeLists.txt": "if(GGML_HIP)\n  set(CMAKE_HIP_ARCHITECTURES ${GPU_TARGETS})\nendif()\n",
    })
    reading = read_tree(t)
    assert [(f.name, f.where) for f in reading.switches] == [("GGML_HIP", "CMakeLists.txt:2")]
    assert {f.name for f in reading.archs} == {"GPU_TARGETS", "CMAKE_HIP_ARCHITECTURES"}
    text = draft_recipe("x", "x==1.0", "0" * 64, reading)
    steps = yaml.safe_load(text)["steps"][0]["wheel"]["config-settings"]
    assert steps["cmake.define.GGML_HIP"] == "ON" and steps["cmake.define.GPU_TARGETS"] == "${{ archs | join(';') }}"
    assert "# Found: GGML_HIP (CMake) at CMakeLists.txt:2" in text
    load_recipe_text(text, tmp_path / "x.yaml")  # it lints


def test_an_environment_switch_read_by_setup_py_becomes_env(tmp_path):
    t = tree(tmp_path, {"setup.py": "import os\nif os.environ.get('USE_ROCM'):\n    run(['hipcc', '-c'])\n"
                                     "home = os.getenv('ROCM_HOME')\n"})
    reading = read_tree(t)
    text = draft_recipe("y", "y==2.0", "0" * 64, reading)
    env = yaml.safe_load(text)["env"]
    assert env == {"ROCM_HOME": "${{ rocm.path }}", "USE_ROCM": "1", "HCC_AMDGPU_TARGET": "${{ archs | join(',') }}"}
    assert "no [build-system]" in text


def test_a_project_without_a_hip_switch_says_so(tmp_path):
    t = tree(tmp_path, {"pyproject.toml": '[build-system]\nrequires = ["flit_core"]\nbuild-backend = "flit_core.buildapi"\n'})
    text = draft_recipe("z", "z==3.0", "0" * 64, read_tree(t))
    assert "# DRAFT: no known HIP/ROCm switch in its build files" in text
    assert "env:" not in text and yaml.safe_load(text)["steps"] == [{"wheel": {}}]


def test_a_pure_python_sdist_compiles_nothing_and_any_source_or_extension_says_otherwise(tmp_path):
    from rocbuild.draft.tree import compiles_nothing

    # torch-pconv 0.1.1: a torch package with no extension at all
    plain = {"setup.py": "from setuptools import setup\nsetup(name='p', packages=['p'])\n", "p/__init__.py": ""}
    assert compiles_nothing(tree(tmp_path / "plain", plain))
    assert not compiles_nothing(tree(tmp_path / "cu", {**plain, "p/k.cu": "__global__ void k() {}\n"}))
    assert not compiles_nothing(tree(tmp_path / "pyx", {**plain, "p/fast.pyx": "def f(): pass\n"}))
    ext = {"setup.py": "from setuptools import setup, Extension\nsetup(ext_modules=[Extension('m', ['m.c'])])\n"}
    assert not compiles_nothing(tree(tmp_path / "ext", ext))
    assert not compiles_nothing(tree(tmp_path / "cmake", {**plain, "CMakeLists.txt": "project(p)\n"}))
    # what a build left (build/) is not the package's own
    assert compiles_nothing(tree(tmp_path / "built", {**plain, "build/temp/x.cpp": "int x;\n"}))


def test_kernels_generated_in_python_and_compiled_at_run_time_are_something_to_build(tmp_path):
    """trainkernel 0.2.0 writes its CUDA source in Python and hands it to load_inline: no source file in the
    sdist, yet a package whose kernels are compiled at run time, drafted as one (a wheel of no device code)."""
    from rocbuild.draft.tree import compiles_nothing

    plain = {"setup.py": "from setuptools import setup\nsetup(name='p', packages=['p'])\n", "p/__init__.py": ""}
    runtime = ("def build(source):\n    from torch.utils.cpp_extension import CUDA_HOME, load_inline\n"
               "    return load_inline('k', cpp_sources='', cuda_sources=source)\n")
    t = tree(tmp_path / "jit", {**plain, "p/runtime.py": runtime})
    assert not compiles_nothing(t)
    text = draft_recipe("p", "p==1.0", "0" * 64, read_tree(t))
    assert {"code-objects": False} in yaml.safe_load(text)["verify"] and "p/runtime.py:2" in text
    # the same call in a test of the package's is not the package's
    assert compiles_nothing(tree(tmp_path / "test", {**plain, "tests/test_k.py": runtime}))
