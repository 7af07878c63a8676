"""A build-only ROCm torch made for real in a Debian ROCm 7.2 root (`rocbuild root torch`), and a torch
extension no recipe of rocbuild's knows (made here: one HIP kernel and its binding, as CUDAExtension
builds them) compiled against it for gfx1100 by torch's own cpp_extension, its device code judged by
LLVM's clang-offload-bundler from the root. Also: a build against the root's CPU torch is refused
before anything compiles."""

from __future__ import annotations

import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.integration.test_build_roots import LLVM_LIST, private_cache, rocbuild, root  # noqa: F401 (fixtures)
from tests.integration.test_kit_lock import held_by_another
from tests.integration.test_torch_install import serve_torch

pytestmark = [pytest.mark.root, pytest.mark.network, pytest.mark.slow]

ARCH = "gfx1100"
# THC/THCAtomics.cuh, which torch keeps for old extensions: hipified to THH/, which the kit must hold as a
# ROCm wheel does.
KERNEL = """\
#include <ATen/cuda/CUDAContext.h>
#include <THC/THCAtomics.cuh>
#include <torch/extension.h>

__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) gpuAtomicAdd(x + i, 1.0f);
}

void add_one_cuda(torch::Tensor x) {
  // at::cuda::warp_size() is libtorch_hip's, the stream c10_hip's: the extension needs both.
  TORCH_CHECK(at::cuda::warp_size() > 0, "no warp");
  int n = x.numel();
  add_one<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), n);
}
"""
BINDING = """\
#include <torch/extension.h>
void add_one_cuda(torch::Tensor x);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_one", &add_one_cuda); }
"""
SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(name="addone", version="0.1", ext_modules=[CUDAExtension("addone_ext", ["binding.cpp", "kernel.cu"])],
      cmdclass={"build_ext": BuildExtension})
"""
RECIPE = """\
schema: 1
name: addone
version: "0.1"
source: {path: addone}
requires:
  torch: rocm
  # ninja: cpp_extension's ninja path is the one that takes PYTORCH_NVCC (the ccache link); a fresh root has none
  python: [setuptools, wheel, ninja]
env:
  ROCM_HOME: "${{ torch.rocm_home or rocm.path }}"
  PYTORCH_ROCM_ARCH: "${{ archs | join(';') }}"
  MAX_JOBS: "${{ jobs }}"
steps:
  - wheel: {}
verify:
  - code-objects: {files: "addone_ext*.so", links: [libamdhip64, libc10_hip, libtorch_hip]}
  - import: addone_ext
"""


# A CMake-driven torch extension, as vLLM's CMakeLists.txt finds torch: its HIP path only where torch's CMake
# package says ROCm. The kernel asks c10_hip (the stream) and torch_hip (warp_size); linked --no-undefined.
CMAKE_PROJECT = """\
cmake_minimum_required(VERSION 3.25)
project(cmext LANGUAGES CXX)
find_package(Torch REQUIRED)
if(NOT PYTORCH_FOUND_HIP)
  message(FATAL_ERROR "torch's CMake package is not a ROCm build: no HIP path")
endif()
add_library(cmext SHARED kernel.hip host.cpp)
set_target_properties(cmext PROPERTIES HIP_ARCHITECTURES "${PYTORCH_ROCM_ARCH}")
target_link_libraries(cmext PRIVATE ${TORCH_LIBRARIES})
target_link_options(cmext PRIVATE -Wl,--no-undefined)
"""
CMAKE_KERNEL = """\
#include <ATen/hip/HIPContext.h>
#include <torch/torch.h>

__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

void add_one_hip(torch::Tensor x) {
  TORCH_CHECK(at::cuda::warp_size() > 0, "no warp");  // torch_hip's (its namespace stays at::cuda)
  int n = x.numel();
  add_one<<<(n + 255) / 256, 256, 0, c10::hip::getCurrentHIPStream()>>>(x.data_ptr<float>(), n);  // c10_hip's
}
"""

# A plain C++ file of a target that links torch: a ROCm torch's CMake package hands it the flags torch_hip was
# built with (USE_ROCM, which torch's headers take their HIP side on; the HIP platform; TORCH_HIP_VERSION, which
# hipify writes for CUDA_VERSION), as vLLM's C++ targets need.
CMAKE_HOST = """\
#if !defined(USE_ROCM) || !defined(__HIP_PLATFORM_AMD__) || TORCH_HIP_VERSION < 600
#error "torch's CMake package gave a C++ file none of torch_hip's HIP flags"
#endif
#include <hip/hip_runtime_api.h>
int devices() { int n = 0; return hipGetDeviceCount(&n) == hipSuccess ? n : -1; }
"""


@pytest.fixture(scope="module")
def kit_and_wheel(root: str, tmp_path_factory) -> tuple[str, Path]:  # noqa: F811
    wheels = tmp_path_factory.mktemp("kit-wheel")
    made = rocbuild("root", "torch", root, "--wheel", wheels)
    assert made.returncode == 0, made.stderr[-4000:]
    (wheel,) = wheels.glob("torch-*.whl")
    return made.stdout.strip().splitlines()[-1], wheel


@pytest.fixture(scope="module")
def kit(kit_and_wheel: tuple[str, Path]) -> str:
    return kit_and_wheel[0]


@pytest.fixture
def kit_index(kit_and_wheel: tuple[str, Path], tmp_path: Path):
    """http://127.0.0.1:PORT/simple/ serving the kit's wheel, as a mirror of PyTorch's index would."""
    wheel = kit_and_wheel[1]
    served = tmp_path / "served"
    (served / "files").mkdir(parents=True)
    os.link(wheel, served / "files" / wheel.name)
    with serve_torch(served / "files" / wheel.name, served) as url:
        yield url


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "recipes" / "addone"
    src.mkdir(parents=True)
    (src / "kernel.cu").write_text(KERNEL)
    (src / "binding.cpp").write_text(BINDING)
    (src / "setup.py").write_text(SETUP)
    (tmp_path / "recipes" / "addone.yaml").write_text(RECIPE)
    return tmp_path / "recipes" / "addone.yaml"


def test_the_kit_takes_cpp_extensions_rocm_path(root, kit, tmp_path):  # noqa: F811
    probe = ("import torch; from torch.utils import cpp_extension as c; "
             "print(torch.__version__, torch.version.hip, torch.version.cuda, c.IS_HIP_EXTENSION, "
             "torch.cuda.is_available(), torch.cuda.device_count(), len(torch.cuda.get_arch_list()))")
    said = rocbuild("root", "run", root, "--", kit, "-c", probe, cwd=tmp_path)
    version, hip, cuda, is_hip, available, count, archs = said.stdout.split()
    assert version.endswith("+rocm7.2.buildonly") and hip.startswith("7.2.") and cuda == "None" and is_hip == "True"
    # as a real ROCm torch says on a machine without a GPU (stainx's setup.py asks for the count)
    assert (available, count) == ("False", "0"), said.stderr
    assert archs == "0"  # the kit compiled no kernels of its own (curegot's setup.py asks)


# Every header torch's Python-binding headers include is found in the kit's include paths (the preprocessor alone):
# stable-fast's python_operator.cpp includes pybind_utils.h, whose python_arg_parser.h includes <fmt/format.h>.
PREPROCESS = ("flags=$(\"$1\" -c 'import sysconfig; from torch.utils.cpp_extension import include_paths; "
              "print(\" \".join(\"-I\" + p for p in include_paths() + [sysconfig.get_paths()[\"include\"]]))') && "
              "printf '#include <torch/extension.h>\\n#include <torch/csrc/jit/python/pybind_utils.h>\\n' > \"$2\" && "
              "g++ -std=c++20 -E $flags \"$2\" -o /dev/null")


def test_the_headers_torchs_bindings_include_are_in_the_kit(root, kit, tmp_path):  # noqa: F811
    done = rocbuild("root", "run", root, "--", "sh", "-c", PREPROCESS, "sh", kit, tmp_path / "b.cpp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = Path(rocbuild("root", "path", root).stdout.strip()) / Path(kit).parents[1].relative_to("/")
    assert list(folder.glob("lib/python3*/site-packages/torch/include/fmt/format.h"))


def _kit_lock_in(root: str, kit: str) -> Path:
    """The kit's lock file, as this machine sees it inside the root's folder."""
    folder = Path(kit).parents[1]  # /opt/rocbuild/torch-...-build-only
    return Path(rocbuild("root", "path", root).stdout.strip()) / folder.relative_to("/").with_name(folder.name + ".lock")


def test_a_current_kit_is_kept(root, kit):  # noqa: F811
    """Made again only when its Debian packages or rocbuild's kit code changed: a remake under a running
    build breaks that build's compile."""
    marker = Path(kit).parents[1] / "lib"
    before = rocbuild("root", "run", root, "--", "sh", "-c", f'stat -c %i:%Y {marker}/python3*/site-packages/torch/.rocbuild*')
    again = rocbuild("root", "torch", root)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "is current" in again.stderr and "torch kit: hipify" not in again.stderr
    assert again.stdout.strip().splitlines()[-1] == kit
    after = rocbuild("root", "run", root, "--", "sh", "-c", f'stat -c %i:%Y {marker}/python3*/site-packages/torch/.rocbuild*')
    assert before.stdout and before.stdout == after.stdout, before.stderr
    planned = rocbuild("root", "torch", root, "--dry-run")
    assert "(current: nothing would run" in planned.stdout


def test_an_unseen_extension_compiles_against_it_and_is_marked(root, kit, project, tmp_path, private_cache):  # noqa: F811
    # The kit's lock held the other way, as a `root torch` remaking it would: the build waits, says so, then builds.
    remaking = held_by_another(_kit_lock_in(root, kit), "--exclusive", 5)
    try:
        built = rocbuild(project, "--root", root, "--python", kit, "--arch", ARCH, "--out", tmp_path / "wh",
                         env=private_cache)
    finally:
        remaking.wait()
    assert built.returncode == 0, built.stderr[-4000:]
    assert "waiting: `rocbuild root torch` is making the build-only torch" in built.stderr
    assert "built against a build-only torch: import not tried" in built.stderr
    # The kernel's hipcc ran through the root's ccache (cpp_extension takes PYTORCH_NVCC, the masquerade link):
    # a --try that starts a fresh tree compiles it again from the cache.
    ccache = Path(private_cache["XDG_CACHE_HOME"]) / "rocbuild" / "ccache"
    stored = [p for p in ccache.glob("?/?/*") if p.is_file() and len(p.name) > 30]  # results and manifests
    assert stored, "nothing went through ccache"
    (wheel,) = (tmp_path / "wh").glob("*.whl")
    assert "+rocm7.2.buildonly-" in wheel.name
    report = json.loads(rocbuild("verify", "--json", "--arch", ARCH, wheel).stdout)
    assert report["ok"], report["problems"]
    (ext,) = [f for i in report["inputs"] for f in i["files"] if f["path"].startswith("addone_ext")]
    # The links a real ROCm torch gives an extension, under a ROCm wheel's sonames, never Debian's.
    assert {"libc10.so", "libc10_hip.so", "libtorch_hip.so", "libamdhip64.so.7"} <= set(ext["needed"])
    assert not [n for n in ext["needed"] if n.endswith(".so.2.14")]
    assert any("built against a build-only torch" in n for i in report["inputs"] for n in i["notes"])
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.startswith("addone_ext"))
        zf.extract(name, tmp_path / "x")
    listed = rocbuild("root", "run", root, "--", "sh", "-c", LLVM_LIST, "sh", tmp_path / "x" / name, tmp_path / "fat.bin",
                      cwd=tmp_path)
    assert f"hipv4-amdgcn-amd-amdhsa--{ARCH}" in listed.stdout.split(), listed.stdout + listed.stderr
    refused = rocbuild("index", tmp_path / "wh")
    assert refused.returncode == 2 and "build-only" in refused.stderr


def test_a_cpu_torch_is_refused_before_compiling(root, kit, project, tmp_path, private_cache):  # noqa: F811
    """The root's own python3 holds Debian's CPU torch: the build stops at the torch gate (exit 3)."""
    built = rocbuild(project, "--root", root, "--arch", ARCH, "--out", tmp_path / "wh", "--work", tmp_path / "work",
                     env=private_cache)
    assert built.returncode == 3, built.stderr[-2000:]
    assert "CPU-only build" in built.stderr
    assert not (tmp_path / "work" / "src").exists() and not (tmp_path / "wh").exists()


def test_the_kit_as_a_wheel_is_installed_from_an_index_and_built_against(root, kit_and_wheel, kit_index, project,
                                                                          tmp_path, private_cache):  # noqa: F811
    """`root torch --wheel`: the kit as a wheel, served on loopback, goes into a venv of the root through
    --install-missing --torch-index (replacing the CPU torch that venv sees), and the build uses it."""
    wheel = kit_and_wheel[1]
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        atomic = zf.read("torch/include/torch/headeronly/cuda/Atomic.h").decode()
    assert "torch/include/ATen/hip/HIPConfig.h" in names and "torch/lib/libc10_hip.so" in names
    assert "Version: 2.14.1+rocm7.2.buildonly" in metadata and "Requires-Dist" not in metadata
    # torch/headeronly is hipified in place, as build_amd.py's "torch/*" does: ATen/hip/Atomic.cuh includes it.
    assert "#include <hip/hip_runtime.h>" in atomic and "#include <cuda.h>" not in atomic
    venv = f"/opt/rocbuild/test-venv-{os.getpid()}-{tmp_path.name}"
    made = rocbuild("root", "run", root, "--", "python3", "-m", "venv", "--system-site-packages", venv)
    assert made.returncode == 0, made.stderr[-2000:]
    try:
        built = rocbuild(project, "--root", root, "--python", f"{venv}/bin/python", "--arch", ARCH, "--install-missing",
                         "--torch-index", kit_index, "--out", tmp_path / "wh", env=private_cache)
        assert built.returncode == 0, built.stderr[-4000:]
        assert "==> install-torch" in built.stderr and kit_index in built.stderr
        (built_wheel,) = (tmp_path / "wh").glob("addone-*.whl")
        assert "+rocm7.2.buildonly-" in built_wheel.name
        version = rocbuild("root", "run", root, "--", f"{venv}/bin/python", "-c",
                           "import torch.version as v; print(v.__version__, v.build_only)")
        assert version.stdout.split() == ["2.14.1+rocm7.2.buildonly", "True"], version.stderr
    finally:
        rocbuild("root", "run", root, "--", "rm", "-rf", venv)


def test_a_cmake_torch_extension_takes_the_kits_hip_path_and_links_its_hip_libraries(root, kit, tmp_path):  # noqa: F811
    from rocbuild.torchkit.cmake import LOADHIP_PACKAGES

    installed = rocbuild("root", "install", root, *LOADHIP_PACKAGES)  # what LoadHIP.cmake finds REQUIRED
    assert installed.returncode == 0, installed.stderr[-3000:]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "CMakeLists.txt").write_text(CMAKE_PROJECT)
    (tmp_path / "src" / "kernel.hip").write_text(CMAKE_KERNEL)
    (tmp_path / "src" / "host.cpp").write_text(CMAKE_HOST)
    # The prefix a build reads from torch itself, as vLLM's setup.py passes it to CMake.
    prefix = rocbuild("root", "run", root, "--", kit, "-c", "import torch.utils; print(torch.utils.cmake_prefix_path)")
    assert prefix.returncode == 0, prefix.stderr
    # LoadHIP.cmake needs ROCM_PATH (else: no ROCm); with it at /usr, clang no longer finds Debian's device
    # libraries in its resource folder on its own (rocm.device_lib_dir, as a recipe names it).
    configure = ('export ROCM_PATH=/usr PYTORCH_ROCM_ARCH=gfx1100 HIP_CLANG_PATH="$(hipconfig --hipclangpath)"; '
                 'export HIP_DEVICE_LIB_PATH="$(dirname "$(ls /usr/lib/llvm-*/lib/clang/*/amdgcn/bitcode/ockl.bc)")"; '
                 'cmake -S src -B "$1" "$2" && cmake --build "$1"')
    built = rocbuild("root", "run", root, "--", "sh", "-c", configure, "sh", "rocm",
                     f"-DCMAKE_PREFIX_PATH={prefix.stdout.strip()}", cwd=tmp_path)
    assert built.returncode == 0, (built.stdout + built.stderr)[-4000:]
    needed = subprocess.run(["readelf", "-d", tmp_path / "rocm" / "libcmext.so"], capture_output=True, text=True,
                            check=True).stdout
    for library in ("libtorch_hip.so", "libc10_hip.so", "libtorch_cpu.so", "libc10.so"):
        assert f"[{library}]" in needed, needed  # the kit's sonames, never Debian's libc10.so.2.14
    assert "[libamdhip64.so." in needed, needed
    # Against the root's CPU torch's CMake package (Debian's), the same project finds no HIP path. (Debian's
    # protobuf CMake package, which its Caffe2Config finds, names protoc's library and program.)
    assert rocbuild("root", "install", root, "libprotoc-dev", "protobuf-compiler").returncode == 0
    cpu = rocbuild("root", "run", root, "--", "sh", "-c", configure, "sh", "cpu",
                   "-DTorch_DIR=/usr/lib/x86_64-linux-gnu/cmake/Torch", cwd=tmp_path)
    assert cpu.returncode != 0 and "not a ROCm build" in cpu.stdout + cpu.stderr, (cpu.stdout + cpu.stderr)[-3000:]


# -- several extensions at once (engine/extshim) ------------------------------------------------------------
# Four small CUDAExtensions, each a HIP kernel and a binding that needs no torch header, so that a compile
# costs a second or two: what is shown is how torch's BuildExtension runs them, not what they compute.
MANY_EXTS = 4
MANY_KERNEL = """\
#include <hip/hip_runtime.h>
__global__ void add_{i}(float* x) {{ x[threadIdx.x] += {i}.0f; }}
extern "C" void launch_{i}(float* x) {{ hipLaunchKernelGGL(add_{i}, dim3(1), dim3(64), 0, 0, x); }}
"""
MANY_BINDING = """\
#include <Python.h>
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "many_{i}", NULL, -1, NULL}};
PyMODINIT_FUNC PyInit_many_{i}(void) {{ return PyModule_Create(&def); }}
"""
MANY_SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(name="many", version="0.1", cmdclass={"build_ext": BuildExtension.with_options(use_ninja=%s)},
      ext_modules=[CUDAExtension(f"many_{i}", [f"binding{i}.cpp", f"kernel{i}.hip"]) for i in range(%d)])
"""
# The host compiler (CC: each binding's compile and each link, on both of torch's paths) through a script
# that notes when each run starts and ends, in the work folder (a confined step writes nowhere else): how
# many ran at once is read from it.
TIMED_CXX = """\
#!/bin/sh
echo "start $$ $(date +%s.%N)" >> "$COMPILE_LOG"
c++ "$@"; rc=$?
echo "end $$ $(date +%s.%N)" >> "$COMPILE_LOG"
exit $rc
"""
MANY_RECIPE = """\
schema: 1
name: many
version: "0.1"
source: {path: many}
options:
  order:
    default: parallel
    choices: [parallel, serial]
    help: "serial: setuptools' own order, one extension after another"
requires:
  torch: rocm
  python: [setuptools, wheel, ninja]
env:
  ROCM_HOME: "${{ torch.rocm_home or rocm.path }}"
  PYTORCH_ROCM_ARCH: "${{ archs | join(';') }}"
  CC: "${{ src }}/timed-c++"
  CXX: "${{ src }}/timed-c++"
  COMPILE_LOG: "${{ src }}/compiles.log"
  ROCBUILD_EXTENSION_JOBS:
    value: "1"
    when: "${{ options.order == 'serial' }}"
steps:
  - wheel: {}
verify:
  - code-objects: {files: "many_*.so"}
"""


def _libraries(wheel: Path, scratch: Path) -> dict[str, list[str]]:
    """Each library's symbols (address, kind, name) and device code targets, as `verify` reads them. Not their
    bytes: clang names each translation unit's HIP symbols (__hip_cuid_<hash>) from its paths, which differ in
    any other work folder, and its debug info names those paths."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".so")]
        zf.extractall(scratch, names)
    facts = {}
    for name in names:
        symbols = subprocess.run(["nm", scratch / name], capture_output=True, text=True, check=True).stdout
        facts[name] = sorted(re.sub(r"(__hip_(?:cuid|gpubin_handle)_)[0-9a-f]+", r"\1#", symbols).splitlines())
    report = json.loads(rocbuild("verify", "--json", "--arch", ARCH, wheel).stdout)
    for f in (f for i in report["inputs"] for f in i["files"] if f["path"] in facts):
        facts[f["path"]].append(f"targets: {f['targets']}")
    return facts


def _most_at_once(log: Path) -> int:
    events = sorted((float(t), 1 if what == "start" else -1) for what, _, t in (line.split() for line in
                                                                              log.read_text().splitlines()))
    running = most = 0
    for _, change in events:
        running += change
        most = max(most, running)
    return most


@pytest.mark.parametrize("ninja", [True, False], ids=["ninja", "no-ninja"])
def test_several_extensions_compile_at_once_within_the_job_count(root, kit, tmp_path, private_cache, ninja):  # noqa: F811
    """Both of torch's paths: ninja's (a build.ninja per build_temp) and use_ninja=False (torch-scatter's), where
    torch swaps the shared compiler's executable around each file."""
    src = tmp_path / "recipes" / "many"
    src.mkdir(parents=True)
    for i in range(MANY_EXTS):
        (src / f"kernel{i}.hip").write_text(MANY_KERNEL.format(i=i))
        (src / f"binding{i}.cpp").write_text(MANY_BINDING.format(i=i))
    (src / "setup.py").write_text(MANY_SETUP % (ninja, MANY_EXTS))
    (src / "timed-c++").write_text(TIMED_CXX)
    (src / "timed-c++").chmod(0o755)
    recipe = tmp_path / "recipes" / "many.yaml"
    recipe.write_text(MANY_RECIPE)
    results = {}
    for how in ("serial", "parallel"):
        work = tmp_path / f"work-{how[:3]}"  # paths of one length: the debug info names them, so sizes agree
        args = ["--set", f"order={how}"]
        built = rocbuild(recipe, "--root", root, "--python", kit, "--arch", ARCH, "--jobs", "2", "--no-cache",
                         "--work", work, "--out", tmp_path / f"wh-{how}", "-v", *args, env=private_cache)
        assert built.returncode == 0, built.stderr[-4000:]
        (wheel,) = (tmp_path / f"wh-{how}").glob("*.whl")
        contents = _libraries(wheel, tmp_path / f"x-{how}")
        temps = sorted({p.parent.name for p in (work / "src" / "build").glob("temp.*/**/kernel*.o")})
        results[how] = (built, contents, temps, _most_at_once(work / "src" / "compiles.log"))
    serial, parallel = results["serial"], results["parallel"]
    # Serial: objects in the shared build_temp, one compile at a time. Parallel: a build folder per extension,
    # two compilers at once and never more than --jobs.
    assert len(serial[2]) == 1 and serial[3] == 1, (serial[2], serial[3])
    assert parallel[2] == [f"many_{i}" for i in range(MANY_EXTS)], parallel[2]
    assert parallel[3] == 2, parallel[3]
    # The same libraries: the same symbols at the same addresses, the same device code; both verified.
    assert serial[1] == parallel[1] and len(serial[1]) == MANY_EXTS
    # The plan shows the shim, its job count, and the build environment's tools (ninja) first on the wheel's PATH.
    for how, jobs in (("serial", "1"), ("parallel", "2")):
        plan = json.loads(rocbuild("plan", recipe, "--root", root, "--python", kit, "--arch", ARCH, "--jobs", "2",
                                   "--work", tmp_path / f"work-{how[:3]}", "--set", f"order={how}", "--json",
                                   env=private_cache).stdout)
        assert plan["env"]["ROCBUILD_EXTENSION_JOBS"] == jobs and "/extshim/" in plan["env"]["PYTHONPATH"]
        (wheel_step,) = plan["steps"]
        assert wheel_step["env"]["PATH"].startswith(str(tmp_path / f"work-{how[:3]}" / "buildenv" / "bin") + ":")


def test_an_extension_that_fails_beside_others_fails_the_build_and_names_its_error(root, kit, tmp_path,  # noqa: F811
                                                                                   private_cache):
    """Two extensions at once, one of them broken: the build stops with the step's exit code (1), and the
    failure report names the compiler's error, however the children's output interleaved."""
    src = tmp_path / "recipes" / "many"
    src.mkdir(parents=True)
    for i in range(2):
        (src / f"kernel{i}.hip").write_text(MANY_KERNEL.format(i=i))
        (src / f"binding{i}.cpp").write_text(MANY_BINDING.format(i=i))
    (src / "kernel1.hip").write_text('#error "planted: many_1 does not compile"\n')
    (src / "setup.py").write_text(MANY_SETUP % (True, 2))
    (src / "timed-c++").write_text(TIMED_CXX)
    (src / "timed-c++").chmod(0o755)
    recipe = tmp_path / "recipes" / "many.yaml"
    recipe.write_text(MANY_RECIPE)
    built = rocbuild(recipe, "--root", root, "--python", kit, "--arch", ARCH, "--jobs", "2", "--no-cache",
                     "--work", tmp_path / "work", "--out", tmp_path / "wh", env=private_cache)
    assert built.returncode == 1, built.stderr[-3000:]
    assert "planted: many_1 does not compile" in built.stderr, built.stderr[-3000:]
    log = (tmp_path / "work" / "logs" / "01-wheel.log").read_text()
    assert "building extension(s) many_1 failed" in log, log[-3000:]
    assert not list((tmp_path / "wh").glob("*.whl"))


# -- a CMake project written for CUDA alone, drafted as HIP (trap cmake-cuda-only) -------------------------------
CUDA_CMAKE = Path(__file__).resolve().parents[1] / "data" / "projects" / "cuda-cmake"


def test_a_cmake_project_written_for_cuda_alone_is_drafted_as_hip_and_built_for_the_arch_asked(  # noqa: F811
        root, kit, tmp_path, private_cache):
    """project(LANGUAGES CXX CUDA), find_package(CUDAToolkit), CUDA::cudart, a kernel in a subfolder whose header
    sits in a folder named cuda/: as drafted, the sources are hipified in place (the kit's torch.utils.hipify) and
    CMake builds them as HIP, for gfx1100 alone (not the 80;86 the project names)."""
    import shutil

    from rocbuild.draft.tree import draft_recipe, read_tree

    src = tmp_path / "cudacmk"
    shutil.copytree(CUDA_CMAKE, src)
    text = draft_recipe("cudacmk", "cudacmk==0.1.0", "0" * 64, read_tree(src), [ARCH])
    assert "# trap cmake-cuda-only (CMakeLists.txt:4): project(cudacmk VERSION 0.1 LANGUAGES CXX CUDA)" in text
    text = re.sub(r"(?ms)^source:\n.*?(?=^\S)", f"source:\n  path: {src}\n\n", text)
    (tmp_path / "cudacmk.yaml").write_text(text)
    built = rocbuild(tmp_path / "cudacmk.yaml", "--root", root, "--python", kit, "--arch", ARCH, "--out", tmp_path / "wh",
                     "--work", tmp_path / "work", env=private_cache)
    assert built.returncode == 0, built.stderr[-4000:]
    assert "hipified in place: 3 files" in (tmp_path / "work" / "logs" / "01-hipify.log").read_text()
    (wheel,) = (tmp_path / "wh").glob("cudacmk-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.startswith("cudacmk/_cudacmk")]
        zf.extract(name, tmp_path / "x")
    listed = rocbuild("root", "run", root, "--", "sh", "-c", LLVM_LIST, "sh", tmp_path / "x" / name, tmp_path / "fat.bin",
                      cwd=tmp_path)
    targets = [t for t in listed.stdout.split() if t.startswith("hipv4-")]
    assert targets == [f"hipv4-amdgcn-amd-amdhsa--{ARCH}"], listed.stdout + listed.stderr
    needed = subprocess.run(["readelf", "-d", tmp_path / "x" / name], capture_output=True, text=True, check=True).stdout
    assert "[libamdhip64.so." in needed and "cudart" not in needed, needed
