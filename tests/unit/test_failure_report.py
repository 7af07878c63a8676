"""The failure report on logs of real failures (tests/data/failure-logs: real compilers, linkers, CMake and
pip run here, trimmed and with this machine's paths taken out; their README says how each was made)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from rocbuild.draft.fixes import ReplaceText
from rocbuild.draft.logscan import scan
from rocbuild.draft.report import Context, diagnose, write_report
from rocbuild.errors import StepFailed

LOGS = Path(__file__).resolve().parents[1] / "data" / "failure-logs"
CONTEXT = Context(jobs=2, jobs_why="2 cores", memory_per_job="2.0GiB")

# log -> (the kind of its first cause, a piece of that cause's line, the trap it names or None)
FAMILIES = {
    "cxx20-gcc.log": ("#error", "C++20 or later compatible compiler is required to use PyTorch", "cxx20-for-torch"),
    "cxx20-hipcc.log": ("#error", "C++20 or later compatible compiler is required to use ATen", "cxx20-for-torch"),
    "cuda-runtime-header.log": ("compiler", "fatal error: cuda_runtime.h", "force-variable-unset"),
    "cuda-flag.log": ("compiler", "unsupported option '--expt-relaxed-constexpr'", "cuda-flag-for-hipcc"),
    "undefined-reference.log": ("linker", "undefined reference to `missing_fn(int)'", None),
    "rocm-header-missing.log": ("compiler", "'hipblas/hipblas.h' file not found", "rocm-package-missing"),
    "cmake-package-missing.log": ("cmake", "CMake Error at CMakeLists.txt:3 (find_package)", "rocm-package-missing"),
    "rocm-selector-metadata.log": ("python", "AttributeError: 'NoneType' object has no attribute 'split'",
                                   "rocm-selector-unset"),
    "module-missing-metadata.log": ("python", "No module named 'pybind11_nonexistent_helper'", "build-module-missing"),
    "killed-clang.log": ("killed", "unable to execute command: Killed", "compiler-killed"),
    "killed-gcc.log": ("killed", "Killed signal terminated program cc1plus", "compiler-killed"),
    "error-then-warnings.log": ("compiler", "use of undeclared identifier 'undeclared_size'", None),
    "rocm-home-usr.log": ("compiler", "fatal error: 'math.h' file not found", "rocm-home-usr"),
    "cuda-only-header.log": ("compiler", "core.hip:8:10: fatal error: 'device_atomic_functions.h' file not found",
                             "cuda-only-header"),
    "nvcc-flag-value.log": ("compiler", "clang++: error: no such file or directory: '2'", "nvcc-flag-value"),
    "warp-mask-32bit.log": ("compiler", "static assertion failed due to requirement 'sizeof(unsigned int) == 8'",
                            "warp-mask-32bit"),
    "hipify-name-collision.log": ("linker", "multiple definition of `statistics_cuda(at::Tensor const&)'",
                                  "hipify-name-collision"),
    "cuda-feature-missing.log": ("compiler", "fatal error: 'cooperative_groups/memcpy_async.h' file not found",
                                 "cuda-feature-missing"),
    "cmake-cuda-only.log": ("cmake", "CMake Error at /usr/share/cmake-4.3/Modules/Internal/CMakeCUDAFindToolkit.cmake",
                            "cmake-cuda-only"),
    "setuptools-error.log": ("tool", "error: package directory 'romp' does not exist", "sdist-incomplete"),
    "nvvm-intrinsic.log": ("compiler", "use of undeclared identifier '__nvvm_read_ptx_sreg_laneid'",
                           "cuda-feature-missing"),
    "vector-operators.log": ("compiler", "declaration conflicts with target of using declaration",
                             "vector-operators-redefined"),
    "cmake-optional-then-compile.log": ("compiler", "cuda_runtime_api.h: No such file or directory",
                                        "force-variable-unset"),
    "nvcc-version-probe.log": ("python", "TypeError: unsupported operand type(s) for +: 'NoneType' and 'str'",
                               "nvcc-version-probe"),
    "exec-into-locals.log": ("python", "KeyError: '__version__'", "exec-into-locals"),
    "torch-api-renamed.log": ("compiler", "use of undeclared identifier 'AT_CHECK'", "torch-api-renamed"),
    "cuda-toolkit-test.log": ("python", "FORCE_CUDA requires a CUDA-enabled PyTorch", "cuda-toolkit-test"),
    "cucomplex-names.log": ("compiler", "unknown type name 'cuFloatComplex'", "cucomplex-names"),
    "std-include-missing.log": ("compiler", "variable ‘std::ofstream ply_file’ has initializer but incomplete type",
                                "std-include-missing"),
    "sdist-header-missing.log": ("compiler", "fatal error: inter_union_cuda.h: No such file or directory",
                                 "sdist-incomplete"),
    "library-not-found.log": ("linker", "cannot find -lcuda", "cuda-library-linked"),
    "sdist-incomplete.log": ("python", "quartic_forward_cuda_kernel.cu'", "sdist-incomplete"),
    "torch-thc-removed.log": ("compiler", "unknown type name 'hipStream_t'", "torch-thc-removed"),
    "rounding-intrinsics.log": ("compiler", "use of undeclared identifier '__frcp_rd'", "rounding-intrinsics-hidden"),
    "c10-hip-names.log": ("compiler", "no type named 'HIPGuard' in namespace 'c10::hip'", "c10-hip-names-removed"),
    "cuda-version-read.log": ("python", "AttributeError: 'NoneType' object has no attribute 'replace'", "rocm-selector-unset"),
    "cg-reduce-missing.log": ("compiler", "'cooperative_groups/reduce.h' file not found", "cg-reduce-missing"),
    "hip-form-differs.log": ("compiler", "use of undeclared identifier '__floats2bfloat162_rn'", "hip-form-differs"),
    "half2-minmax.log": ("compiler", "use of undeclared identifier '__hmax2'", "hip-form-differs"),
    "limited-api-pybind11.log": ("compiler", "unknown type name 'Py_buffer'", "limited-api-with-pybind11"),
    "system-library-header.log": ("compiler", "blas_hip.h:85:10: fatal error: cblas.h: No such file or directory",
                                  "system-library-header"),
    "warp-size-constant.log": ("compiler", "constexpr variable 'block_x' must be initialized by a constant expression",
                               "warp-size-constant"),
    # the log alone cannot tell a CppExtension's sources from a force variable's: the build files do (below)
    "cpp-extension-cuda-sources.log": ("compiler", "CUDAStream.h:4:10: fatal error: 'cuda_runtime_api.h' file not found",
                                       "force-variable-unset"),
    "bf16-host-compiler.log": ("compiler", "amd_hip_bf16.h:350:43: error: static assertion failed",
                               "bf16-header-for-host-compiler"),
    "python-version-list.log": ("cmake", "CMake Error at cmake/utils.cmake:15 (message)", "python-version-allow-list"),
    "fp16-from-cublas.log": ("compiler", "use of undeclared identifier 'half'", "fp16-from-cublas"),
    "kernel-launch-spaced.log": ("compiler", "simple_knn.hip:223:18: error: expected expression", "kernel-launch-spaced"),
    "cmake-cuda-compiler-check.log": ("cmake", "CMakeDetermineCompilerId.cmake:934", "cmake-cuda-only"),
    "cmake-cuda-tool.log": ("cmake", "CMake Error at CMakeLists.txt:134 (find_program)", "cuda-feature-missing"),
    "vendored-library-hipified.log": ("compiler", 'error: "GLM requires CUDA 7.0 or higher"', "vendored-library-hipified"),
    "cg-feature-missing.log": ("compiler", "no member named 'labeled_partition' in namespace 'cooperative_groups'",
                               "cuda-feature-missing"),
    # setup.py runs `make haste`, whose nvcc is missing, goes on, and fails at the link 11 lines below
    "makefile-nvcc.log": ("tool", "make: nvcc: No such file or directory", "nvcc-build-of-its-own"),
    # what a confined step meets (made in a bubblewrap sandbox with no network, the machine read-only, no GPU)
    "blocked-pip.log": ("tool", "Could not find a version that satisfies the requirement setuptools_scm",
                        "downloads-at-build"),
    "blocked-git.log": ("tool", "Could not resolve host: github.com", "downloads-at-build"),
    "blocked-cmake-git.log": ("tool", "Could not resolve host: github.com", "downloads-at-build"),
    "blocked-cmake-url.log": ("cmake", "download-json-populate.cmake:170", "downloads-at-build"),
    "blocked-curl.log": ("tool", "curl: (6) Could not resolve host: github.com", "downloads-at-build"),
    "blocked-wget.log": ("tool", "unable to resolve host address", "downloads-at-build"),
    "blocked-urllib.log": ("python", "Temporary failure in name resolution", "downloads-at-build"),
    "blocked-rustup.log": ("python", "Temporary failure in name resolution", "downloads-at-build"),
    "write-refused-pip.log": ("tool", "Read-only file system", "write-outside-work"),
    "gpu-probe-rocminfo.log": ("python", "Command '['rocminfo']' returned non-zero exit status 1", "gpu-at-build"),
}


def rendered(name: str, context: Context = CONTEXT) -> list[str]:
    """What the user reads, from the `error:` line on, as the engine raises it."""
    log = LOGS / name
    report = diagnose(log.read_text(), context)
    return StepFailed("step 'wheel' failed with exit code 1 (recipe x.yaml:30)",
                      hint="\n".join(report.lines(log))).render().splitlines()


def test_every_fixture_log_is_a_family_here():
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted(FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_cause_comes_first_and_within_fifteen_lines(name):
    kind, cause, trap = FAMILIES[name]
    errors = scan((LOGS / name).read_text())
    assert errors[0].kind == kind and cause in errors[0].text
    shown = rendered(name)
    assert any(cause in line for line in shown[:15]), "\n".join(shown)
    if trap:
        named = [line.strip() for line in shown[:15] if line.strip().startswith("known trap ")]
        assert named and named[0].startswith(f"known trap {trap}:"), "\n".join(shown)  # the first trap named
    else:
        assert not any("known trap" in line for line in shown)


def test_an_error_followed_by_hundreds_of_warnings_is_shown_first_and_the_tail_is_not():
    text = (LOGS / "error-then-warnings.log").read_text()
    assert text.count("warning:") >= 150  # the last 40 lines hold warnings only
    assert "error:" not in "\n".join(text.splitlines()[-40:-2])
    shown = rendered("error-then-warnings.log")
    assert "use of undeclared identifier" in shown[2]
    assert not any("warning:" in line for line in shown)


def test_the_same_error_from_many_places_is_folded():
    errors = scan((LOGS / "cxx20-hipcc.log").read_text())
    ordering = [e for e in errors if "strong_ordering" in e.message]
    assert len(ordering) == 1 and ordering[0].count == 3


def test_a_traceback_gives_its_last_frame_and_exception_and_pip_comes_after():
    errors = scan((LOGS / "rocm-selector-metadata.log").read_text())
    first = errors[0]
    assert first.kind == "python" and first.where == "<string>:10"
    assert first.message == "AttributeError: 'NoneType' object has no attribute 'split'"
    later = [e.text for e in errors[1:]]
    assert "error: metadata-generation-failed" in later and all(not e.cause for e in errors[1:])


def test_a_cmake_error_brings_its_block():
    error = scan((LOGS / "cmake-package-missing.log").read_text())[0]
    assert error.where == "CMakeLists.txt:3" and 'provided by "hipblas"' in error.message


def test_a_killed_compiler_is_named_with_the_jobs_and_memory_in_force_and_what_to_set():
    shown = "\n".join(rendered("killed-gcc.log", Context(jobs=6, jobs_why="6 cores", memory_per_job="2.5GiB")))
    assert "killed by signal 9: most often out of memory" in shown
    assert "6 parallel job(s) (6 cores), 2.5GiB per job" in shown
    assert "memory-per-job: 5GiB" in shown


def test_a_fix_needs_the_build_files_to_say_where(tmp_path):
    """The C++ standard trap names its fix only where the tree shows the flag: with it, a replace edit."""
    assert "fix: none that can be written" in "\n".join(rendered("cxx20-gcc.log"))
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\nflags = {'cxx': ['-O3', '-std=c++17']}\n")
    shown = "\n".join(rendered("cxx20-gcc.log", Context(tree=tmp_path)))
    assert "in the build files (setup.py:2)" in shown
    assert "find: '-std=c++17'" in shown and "with: '-std=c++20'" in shown


def test_cuda_sources_a_cppextension_was_given_are_built_by_a_cudaextension(tmp_path):
    """torch-quiver: `cpp_extension.CppExtension(..., with_cuda=have_cuda())` over .cu sources, which torch
    hipifies for a CUDAExtension alone."""
    setup = ("import glob\nfrom torch.utils import cpp_extension\n"
             "ext = cpp_extension.CppExtension('q', glob.glob('cuda/*.cu'), with_cuda=True)\n")
    (tmp_path / "setup.py").write_text(setup)
    shown = "\n".join(rendered("cpp-extension-cuda-sources.log", Context(tree=tmp_path)))
    named = [line.strip() for line in shown.splitlines() if line.strip().startswith("known trap ")]
    assert named[0].startswith("known trap cpp-extension-cuda-sources:"), shown  # the one with a fix comes first
    assert "build the CppExtension as a CUDAExtension" in shown
    (tmp_path / "setup.py").write_text(setup + "other = cpp_extension.CUDAExtension('g', ['g.cu'])\n")
    shown = "\n".join(rendered("cpp-extension-cuda-sources.log", Context(tree=tmp_path)))
    assert "build the CppExtension as a CUDAExtension" not in shown  # a CUDAExtension beside it: a force variable's


def test_a_log_with_no_recognised_error_shows_its_tail(tmp_path):
    log = tmp_path / "01-wheel.log"
    log.write_text("$ make\n" + "".join(f"step {n}\n" for n in range(100)) + "[exit 2]\n")
    shown = "\n".join(diagnose(log.read_text(), CONTEXT).lines(log))
    assert "last 40 lines of the log:" in shown and "step 99" in shown and "step 50" not in shown


def test_the_report_is_written_as_json_beside_the_log(tmp_path):
    log = tmp_path / "03-wheel.log"
    log.write_text((LOGS / "module-missing-metadata.log").read_text())
    path = write_report(log, diagnose(log.read_text(), CONTEXT))
    assert path == tmp_path / "03-wheel.report.json"
    data = json.loads(path.read_text())
    assert data["traps"][0]["trap"] == "build-module-missing"
    assert data["traps"][0]["fix"]["text"] == "requires:\n  python: [pybind11_nonexistent_helper]"
    assert data["errors"][0]["kind"] == "python"


def test_the_flag_clang_refused_is_found_in_the_build_files_and_dropped(tmp_path):
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "nvcc = ['-O3', '--use_fast_math', '--expt-relaxed-constexpr', '--maxrregcount=32']\n")
    shown = "\n".join(rendered("cuda-flag.log", Context(tree=tmp_path)))
    assert "in the build files (setup.py:2)" in shown and "drop --expt-relaxed-constexpr from setup.py" in shown
    # A flag no list of CUDA flags names is still the one dropped, when it is the one clang refused.
    report = diagnose("clang: error: unknown argument: '--maxrregcount=32'\n", Context(tree=tmp_path))
    fix = report.hits[0].fix
    assert report.hits[0].trap.id == "cuda-flag-for-hipcc" and fix is not None
    assert fix.describe() == "drop --maxrregcount=32 from setup.py"


def test_a_cuda_only_header_is_traced_to_the_source_that_includes_it(tmp_path):
    (tmp_path / "core.cu").write_text('#include "core.h"\n#include <device_atomic_functions.h>\n')
    report = diagnose((LOGS / "cuda-only-header.log").read_text(), Context(tree=tmp_path))
    hit = report.hits[0]
    assert hit.trap.id == "cuda-only-header" and hit.files is not None and hit.files.where == "core.cu:2"
    assert hit.fix is not None and hit.fix.yaml()[2:5] == [
        "      file: core.cu", "      find: '#include <device_atomic_functions.h>'",
        "      with: '#include <hip/hip_runtime.h>'"]


def test_an_nvcc_flag_and_the_value_clang_took_for_a_file_are_dropped_together(tmp_path):
    setup = 'args = {"nvcc": [\n    "-O3",\n    "--threads",\n    "2",\n    "-std=c++17",\n]}\n'
    (tmp_path / "setup.py").write_text(setup)
    report = diagnose((LOGS / "nvcc-flag-value.log").read_text(), Context(tree=tmp_path))
    hit = next(h for h in report.hits if h.trap.id == "nvcc-flag-value")
    assert hit.files is not None and hit.files.where == "setup.py:3"
    assert isinstance(hit.fix, ReplaceText) and hit.fix.regex
    assert re.sub(hit.fix.find, hit.fix.with_, setup) == 'args = {"nvcc": [\n    "-O3",\n    "-std=c++17",\n]}\n'


def test_an_option_that_takes_a_value_is_dropped_with_it_and_no_other_flag_is_blamed(tmp_path):
    """fpscan 0.1.2, as --try first met it: `--threads` refused and dropped alone left its `2`, and the flag
    before the `2` (a -U define) was then taken for the one that lost it."""
    setup = 'nvcc = [\n    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",\n    "--threads",\n    "2",\n]\n'
    (tmp_path / "setup.py").write_text(setup)
    report = diagnose("clang++: error: unknown argument: '--threads'\n", Context(tree=tmp_path))
    fix = report.hits[0].fix
    assert isinstance(fix, ReplaceText) and fix.describe() == "drop --threads and its value from setup.py"
    assert re.sub(fix.find, fix.with_, setup) == 'nvcc = [\n    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",\n]\n'
    left = 'nvcc = [\n    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",\n    "2",\n]\n'
    (tmp_path / "setup.py").write_text(left)
    report = diagnose("clang++: error: no such file or directory: '2'\n", Context(tree=tmp_path))
    assert [h.fix for h in report.hits] == [None]


@pytest.mark.parametrize("name, host", [("blocked-pip.log", "pypi.org"), ("blocked-git.log", "github.com"),
                                        ("blocked-cmake-git.log", "github.com"), ("blocked-cmake-url.log", "github.com"),
                                        ("blocked-curl.log", "github.com"), ("blocked-wget.log", "example.com"),
                                        # only the URL named 28 lines before the failure says which host
                                        ("blocked-rustup.log", "static.rust-lang.org")])
def test_a_blocked_download_names_the_host_where_the_log_does(name, host):
    shown = rendered(name)
    assert f"blocked host: {host}" in [line.strip() for line in shown[:15]], "\n".join(shown)


def test_a_cuda_feature_hip_lacks_is_not_taken_for_a_missing_rocm_package():
    shown = rendered("cuda-feature-missing.log")
    assert "    fix: by hand (see why): no recipe data fixes it" in shown
    assert not any("rocm-package-missing" in line for line in shown)
    # a ROCm header that is only not installed still is one
    assert any("known trap rocm-package-missing" in line for line in rendered("rocm-header-missing.log"))


def test_a_header_of_its_own_named_by_a_relative_path_is_one_the_sdist_lacks():
    # tvdcn 1.1.0: ops/autocast/deform_conv2d_kernel.cpp includes "../deform_conv2d.h", never packed; a library's
    # header in a folder of its own (glm/glm.hpp) is no such header
    from rocbuild.draft.traps import in_log

    def traps(line: str) -> list[str]:
        return [h.trap.id for h in in_log([(1, line)], None)]

    assert "sdist-incomplete" in traps("src/ops/autocast/k.cpp:4:10: fatal error: ../deform_conv2d.h: No such file or "
                                       "directory")
    assert "sdist-incomplete" in traps("k.hip:4:10: fatal error: '../../common/util.cuh' file not found")
    assert "sdist-incomplete" not in traps("k.cu:3:10: fatal error: glm/glm.hpp: No such file or directory")
    # evnn-pytorch 0.2.0's lib/blas.h includes <cblas.h>: a system library's header (libopenblas-dev), never packed
    assert "sdist-incomplete" not in traps("lib/blas_hip.h:85:10: fatal error: cblas.h: No such file or directory")
    assert "sdist-incomplete" in traps("lib/blas_hip.h:85:10: fatal error: cblas_own.h: No such file or directory")


def test_a_package_cmake_only_warned_about_is_not_taken_for_the_cause():
    """vLLM's configure warns that torch's optional rocshmem is absent, then a compile fails: the report names
    the compile, and no missing ROCm package (a CMake warning block is what CMake went on after)."""
    report = diagnose((LOGS / "cmake-optional-then-compile.log").read_text(), CONTEXT)
    assert report.errors[0].kind == "compiler" and "cuda_runtime_api.h" in report.errors[0].text
    assert "rocm-package-missing" not in [h.trap.id for h in report.hits]
    # The same block as an error (find_package REQUIRED) still names it.
    required = (LOGS / "cmake-optional-then-compile.log").read_text().replace("CMake Warning at", "CMake Error at")
    assert "rocm-package-missing" in [h.trap.id for h in diagnose(required, CONTEXT).hits]


def test_a_library_a_rocm_cmake_package_names_is_required_by_name():
    """vLLM's configure in a Debian ROCm 7.2 root: hipSOLVER's CMake package names libhipsolver_fortran, which
    libhipsolver-dev does not bring; the fix is requires.libraries, which --install-missing maps to its package."""
    log = ('  CMake Error at /usr/lib/x86_64-linux-gnu/cmake/hipsolver/hipsolver-targets.cmake:101 (message):\n'
           '    The imported target "roc::hipsolver_fortran" references the file\n\n'
           '       "/usr/lib/x86_64-linux-gnu/libhipsolver_fortran.so.1.0"\n\n    but this file does not exist.\n')
    hit = next(h for h in diagnose(log, CONTEXT).hits if h.trap.id == "rocm-library-missing")
    assert hit.fix.yaml() == ["requires:", "  libraries: [hipsolver_fortran]"]


def test_a_build_tag_made_of_torch_version_cuda_is_named_with_its_fix_before_the_selector_trap(tmp_path):
    # ramnet-ops 0.1.0rc2: `cuda_tag = torch.version.cuda.replace('.', '')`, no ROCm path, no selector variable: of the
    # two traps the AttributeError line shows, the one the build files give a fix for comes first
    (tmp_path / "setup.py").write_text("import torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                                       "cuda_tag = torch.version.cuda.replace('.', '')\n")
    report = diagnose((LOGS / "cuda-version-read.log").read_text(), Context(tree=tmp_path))
    assert [h.trap.id for h in report.hits][:2] == ["cuda-version-read", "rocm-selector-unset"]
    assert report.hits[0].fix is not None and report.hits[0].files is not None
    assert report.hits[0].files.where == "setup.py:3"
    # with a variable that selects the ROCm path, that trap's fix is the one
    (tmp_path / "setup.py").write_text("import os, torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                                       "if not os.getenv('ROCM_VERSION'):\n    tag = torch.version.cuda.replace('.', '')\n")
    report = diagnose((LOGS / "cuda-version-read.log").read_text(), Context(tree=tmp_path))
    assert report.hits[0].trap.id == "rocm-selector-unset" and report.hits[0].fix is not None


def test_libcuxx_header_not_found_is_a_cuda_feature_not_a_gpu_probe():
    # lite-gaussian-splatting 1.0.1: `'cuda/atomic' file not found` read as "cuda ... not found" (no GPU) before
    from rocbuild.draft.traps import in_log

    line = "litegs/submodules/gaussian_raster/binning.hip:26:10: fatal error: 'cuda/atomic' file not found"
    assert [h.trap.id for h in in_log([(1, line)], None)] == ["cuda-feature-missing"]
    assert "gpu-probe-at-build" in [h.trap.id for h in in_log([(1, "Warning: CUDA not available, skipping")], None)]


def test_a_generator_scikit_build_tries_and_goes_past_is_not_the_cause():
    # d3d 0.1.0rc0 (scikit-build 0.x): its generator trial failed for Ninja, then Unix Makefiles worked; the report
    # named the Ninja trial first, 270 lines before the CMake errors that stopped the build
    from rocbuild.draft.logscan import scan

    trial = ["  -- Trying 'Ninja' generator", "  --------------------------------",
             '  CMake Error: CMake was unable to find a build program corresponding to "Ninja".  CMAKE_MAKE_PROGRAM is '
             "not set.  You probably need to select a different build tool.",
             "  -- Configuring incomplete, errors occurred!", "  -- Trying 'Ninja' generator - failure",
             "  -- Trying 'Unix Makefiles' generator", "  -- Configuring done (0.4s)",
             "  -- Trying 'Unix Makefiles' generator - success"]
    after = ["  CMake Error at CMakeLists.txt:47 (string):", "    string sub-command REPLACE requires at least four arguments.",
             "", "", "  -- Configuring incomplete, errors occurred!"]
    errors = scan("\n".join(trial + ["  -- Found PythonLibs: libpython3.14.so"] + after) + "\n")
    assert errors and errors[0].kind == "cmake" and "CMakeLists.txt:47" in errors[0].text
    assert not any("Ninja" in e.text for e in errors)


def test_a_flag_below_a_commented_out_one_is_dropped_and_the_list_stays_closed(tmp_path):
    """pytorch-extension 0.2 (apex's setup.py): the comma before `'--use_fast_math'` was the one in the comment
    above it, and dropping both had put the list's `]` into that comment (a SyntaxError at metadata)."""
    setup = ("macros = []\nargs = {'nvcc':['-lineinfo',\n                '-O3',\n"
             "                # '--resource-usage',\n                '--use_fast_math'] + macros}\n")
    (tmp_path / "setup.py").write_text(setup)
    report = diagnose("clang++: error: unknown argument: '--use_fast_math'\n", Context(tree=tmp_path))
    fix = report.hits[0].fix
    assert isinstance(fix, ReplaceText) and fix.describe() == "drop --use_fast_math from setup.py"
    out = re.sub(fix.find, fix.with_, setup)
    assert "use_fast_math" not in out and "# '--resource-usage',\n" in out
    assert ast.literal_eval(out.split("args = ", 1)[1].replace(" + macros", "")) == {"nvcc": ["-lineinfo", "-O3"]}
