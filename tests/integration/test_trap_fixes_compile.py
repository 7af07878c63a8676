"""What the trap catalogue writes into sources compiles for a GPU with a real HIP compiler: cg::reduce written for
HIP where CUDA's cooperative_groups/reduce.h was included (cg-reduce-missing), with this machine's hipcc for
gfx1030; and CUDA's directed-rounding intrinsics turned into the device library's calls (rounding-intrinsics-hidden),
with the ROCm 7.2 root's hipcc for gfx1100 (Debian 12's device library has none of them); and half2's max and min
written for HIP (hip-form-differs), which ROCm 7.2's fp16 header lacks; and arithmetic on a void* counted on a char
pointer (void-pointer-arithmetic), with this machine's hipcc, which counts as g++'s GNU extension did; and functions
made host-and-device for clang's HIP sides too (device-arch-hostdev-guard), with this machine's hipcc and g++. A
function the device library lacks fails the device link `hipcc -c` runs. The CUDA binaries stale-cuda-binaries
removes are real ELF files, made by gcc against a libcudart.so.12 of its own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from rocbuild.draft.masks import rounding_intrinsics
from rocbuild.draft.traps import BuildFiles, Hit, in_build_files, in_log
from rocbuild.draft.tree import draft_recipe, read_tree
from rocbuild.engine.patch import apply_replace
from rocbuild.plan.model import ReplacePatch
from tests.integration.test_build_roots import rocbuild, root  # noqa: F401  (the session's ROCm 7.2 root)
from tests.unit.test_draft_tree import tree
from tests.unit.test_traps import _only_hit, _seen

REDUCE = """\
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>  // what hipify makes of <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void k(float* x, int* y) {
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  x[threadIdx.x] = cg::reduce(tile, x[threadIdx.x], cg::plus<float>());
  y[threadIdx.x] = cg::reduce(tile, y[threadIdx.x], cg::greater<int>());
}
"""
ROUNDING = """\
#include <hip/hip_runtime.h>
__global__ void k(float* x, double* z) {
  x[threadIdx.x] = __fadd_rd(x[0], x[1]) + __fmul_ru(x[2], x[3]) + __fmaf_rz(x[0], x[1], x[2]);
  z[threadIdx.x] = __dsub_rd(z[0], z[1]) + __fma_ru(z[0], z[1], z[2]);
}
"""


def fixed(tree: Path, source: str, trap: str) -> str:
    """`source` as k.hip in `tree`, with the fix the drafter writes for `trap` applied."""
    (tree / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    (tree / "k.hip").write_text(source)
    (hit,) = [h for h in in_build_files(BuildFiles.read(tree)) if h.trap.id == trap]
    apply_edits(hit, tree)
    return (tree / "k.hip").read_text()


def apply_edits(hit: Hit, tree: Path) -> None:
    """The replace edits of `hit`'s fix, applied to `tree` as the engine's patch step applies them."""
    for edit in hit.fix.edits:  # type: ignore[union-attr]
        apply_replace(ReplacePatch(file=edit.file, find=edit.find, replacement=edit.with_, regex=edit.regex,
                                   count=None, where="test"), tree)


@pytest.mark.hipcc
def test_cg_reduce_written_for_hip_compiles_and_links_device_code(tmp_path: Path) -> None:
    assert "cooperative_groups/reduce.h>\n#endif" in fixed(tmp_path, REDUCE, "cg-reduce-missing")
    # HIP_PLATFORM: where nvcc is installed too, hipcc would take the NVIDIA platform (trap hip-platform-nvidia)
    done = subprocess.run(["hipcc", "--offload-arch=gfx1030", "-c", "k.hip", "-o", "k.o"], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "HIP_PLATFORM": "amd"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert b"hipv4-amdgcn-amd-amdhsa--gfx1030" in (tmp_path / "k.o").read_bytes()


@pytest.mark.root
@pytest.mark.network
def test_directed_rounding_as_the_device_librarys_calls_links_in_rocm_7_2(root: str, tmp_path: Path) -> None:  # noqa: F811
    assert not rounding_intrinsics({"k.hip": fixed(tmp_path, ROUNDING, "rounding-intrinsics-hidden")})
    done = rocbuild("root", "run", root, "--", "hipcc", "--offload-arch=gfx1100", "-c", "k.hip", "-o", "k.o", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert b"hipv4-amdgcn-amd-amdhsa--gfx1100" in (tmp_path / "k.o").read_bytes()


def fails_then_compiles(root: str, tmp_path: Path, source: str, trap: str) -> str:
    """What ROCm 7.2's hipcc says of `source` as it is (it must fail); then, with `trap`'s fix, k.o holds gfx1100's
    code."""
    (tmp_path / "as-is.hip").write_text(source)
    done = rocbuild("root", "run", root, "--", "hipcc", "--offload-arch=gfx1100", "-c", "as-is.hip", cwd=tmp_path)
    assert done.returncode != 0
    fixed(tmp_path, source, trap)
    built = rocbuild("root", "run", root, "--", "hipcc", "--offload-arch=gfx1100", "-c", "k.hip", "-o", "k.o", cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    assert b"hipv4-amdgcn-amd-amdhsa--gfx1100" in (tmp_path / "k.o").read_bytes()
    return done.stderr


HALF2 = """\
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>
#define H2RELU(x) __hmax2(__float2half2_rn(0.0f), (x))
__global__ void k(__half2* x) { x[threadIdx.x] = __hmin2(H2RELU(x[threadIdx.x]), x[0]); }
__global__ void b(__hip_bfloat162* y) { y[threadIdx.x] = __hmax2(y[threadIdx.x], y[0]); }
"""


@pytest.mark.root
@pytest.mark.network
def test_half2_max_and_min_written_for_hip_compile_in_rocm_7_2(root: str, tmp_path: Path) -> None:  # noqa: F811
    # cugpt 0.1.0's ReLU: ROCm 7.2's fp16 header has __hmax, and no __hmax2; turbo-gnn's bf16 pairs, which HIP's
    # bf16 header has __hmax2 for, go to that one
    said = fails_then_compiles(root, tmp_path, HALF2, "hip-form-differs")
    assert "no matching function for call to '__hmax2'" in said  # bf16's __hmax2 is declared, half2's not
    assert [h.trap.id for h in in_log(list(enumerate(said.splitlines(), 1)), None)][:1] == ["hip-form-differs"]
    # 3 calls, 2 functions for half2, 2 templates for any other pair (bf16's, to HIP's own), 2 #defines
    assert (tmp_path / "k.hip").read_text().count("rocbuild_hm") == 9


LANE_MASKS = """\
#include <hip/hip_runtime.h>
__global__ void k(int* x) {
  unsigned const mask = __activemask();
  unsigned lower = mask & ((1U << (threadIdx.x % 32)) - 1U);
  x[threadIdx.x] = __shfl_sync(mask, x[threadIdx.x], 0) + __popc(lower);
  x[0] += static_cast<int>(__ballot_sync(mask, x[1] > 0)) + __shfl_xor_sync(mask, 1.0f, 1) + __any_sync(mask, 1);
  __syncwarp(mask);
}
"""


@pytest.mark.root
@pytest.mark.network
def test_lane_masks_in_32_bit_variables_compile_for_wave32_and_stop_for_wave64(root: str, tmp_path: Path) -> None:  # noqa: F811
    # gpuastar-cu 0.1.0: `unsigned const mask = __activemask()` handed to __shfl_sync; ROCm 7.2 static_asserts 64 bits
    assert "The mask must be a 64-bit integer" in fails_then_compiles(root, tmp_path, LANE_MASKS, "lane-mask-variable-32bit")
    # a wave64 GPU: the code would address half a wavefront, and says so
    done = rocbuild("root", "run", root, "--", "hipcc", "--offload-arch=gfx90a", "-c", "k.hip", "-o", "k64.o", cwd=tmp_path)
    assert done.returncode != 0 and "build it for wave32 GPUs (RDNA) only" in done.stderr, done.stderr[-3000:]


VOID_ARITH = """\
#include <hip/hip_runtime.h>
#include <cstdio>
struct Buffer { void* data; long bytes; };
__global__ void k(void* base, const void* src, int n) {
  float* out = (float*)(base + n * sizeof(float));
  out[threadIdx.x] = *(const float*)(src + 4 * threadIdx.x);
}
long offsets(Buffer* b, void* p, int n) {
  p += n;
  void* q = (void*)b->data + 2 * n;
  return (char*)q - (char*)(b->data + n) + ((char*)p - (char*)b->data);
}
int main() {
  char bytes[64];
  Buffer b{bytes, 64};
  std::printf("%ld\\n", offsets(&b, bytes + 1, 5));
}
"""


@pytest.mark.hipcc
def test_void_pointer_arithmetic_counted_in_bytes_compiles_and_counts_as_gcc_did(tmp_path: Path) -> None:
    # torch-quiver 0.1.1: arithmetic on a void*, which gcc and nvcc take as a GNU extension and clang refuses
    (tmp_path / "k.hip").write_text(VOID_ARITH)
    (tmp_path / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    hipcc = ["hipcc", "--offload-arch=gfx1030", "k.hip", "-o", "k"]
    failed = subprocess.run(hipcc, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert failed.returncode != 0 and failed.stderr.count("error: arithmetic on a pointer to void") == 5, failed.stderr
    (hit,) = [h for h in in_log(list(enumerate(failed.stderr.splitlines(), 1)), BuildFiles.read(tmp_path))
              if h.trap.id == "void-pointer-arithmetic"]
    assert len(hit.fix.edits) == 5  # type: ignore[union-attr]  # every line the compiler named, in one fix
    apply_edits(hit, tmp_path)
    built = subprocess.run(hipcc, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    assert b"hipv4-amdgcn-amd-amdhsa--gfx1030" in (tmp_path / "k").read_bytes()
    # gcc's GNU extension counts bytes: the original, built by g++, prints what the fixed one does
    host = VOID_ARITH.replace("#include <hip/hip_runtime.h>", "#define __global__\nstruct { int x; } threadIdx;")
    (tmp_path / "gnu.cpp").write_text(host)
    subprocess.run(["g++", "-w", "gnu.cpp", "-o", "gnu"], cwd=tmp_path, check=True)
    gnu = subprocess.run(["./gnu"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert gnu == subprocess.run(["./k"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout == "11\n"


# fast-rnnt 1.3's mutual_information.h: its functions are __host__ __device__ only where __CUDA_ARCH__ is defined
HOSTDEV = """\
#pragma once
#include <cmath>
#ifdef __CUDA_ARCH__
#define FT_CUDA_HOSTDEV __host__ __device__
#else
#define FT_CUDA_HOSTDEV
#endif
FT_CUDA_HOSTDEV inline double LogAdd(double x, double y) { return x < y ? y + log1p(exp(x - y)) : x + log1p(exp(y - x)); }
"""


@pytest.mark.hipcc
def test_functions_made_host_and_device_under_cuda_arch_alone_compile_for_hip_and_for_gcc(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    (tmp_path / "lse.h").write_text(HOSTDEV)
    (tmp_path / "k.hip").write_text('#include <hip/hip_runtime.h>\n#include "lse.h"\n'
                                    "__global__ void k(double* x) { x[threadIdx.x] = LogAdd(x[0], x[1]); }\n")
    (tmp_path / "cpu.cpp").write_text('#include "lse.h"\nint main() { return LogAdd(0.0, 0.0) > 0.69 ? 0 : 1; }\n')
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    hipcc = ["hipcc", "--offload-arch=gfx1030", "-c", "k.hip", "-o", "k.o"]
    failed = subprocess.run(hipcc, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert failed.returncode != 0 and "call to __host__ function from __global__ function" in failed.stderr, failed.stderr
    files = BuildFiles.read(tmp_path)
    (hit,) = [h for h in in_log(list(enumerate(failed.stderr.splitlines(), 1)), files)
              if h.trap.id == "device-arch-hostdev-guard"]
    assert hit.files is not None and hit.files.where == "lse.h:3"
    apply_edits(hit, tmp_path)
    built = subprocess.run(hipcc, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    assert b"hipv4-amdgcn-amd-amdhsa--gfx1030" in (tmp_path / "k.o").read_bytes()
    # g++ reads the header as it did: no __HIPCC__, so no __host__ __device__ it has never heard of
    subprocess.run(["g++", "cpu.cpp", "-o", "cpu"], cwd=tmp_path, check=True)
    subprocess.run(["./cpu"], cwd=tmp_path, check=True)
    assert not [h for h in in_build_files(BuildFiles.read(tmp_path)) if h.trap.id == "device-arch-hostdev-guard"]


def test_cuda_binaries_packed_beside_a_run_time_build_are_removed(tmp_path):
    # sevenn 0.13.0's sdist packs sevenn/pair_d3.so, which its load() had compiled on a CUDA machine (NEEDED
    # libcudart.so.12): the wheel carried it, and the device-code check refused it as a CUDA build
    loader = "from torch.utils.cpp_extension import load\n\ndef build():\n    return load(name='d3', sources=['d3.cu'])\n"
    t = tree(tmp_path / "src", {"setup.py": "from setuptools import setup\nsetup(name='s')\n", "s/__init__.py": "",
                                "s/calc.py": loader, "s/d3/d3.cu": "__global__ void k() {}\n", "s/notes.so.txt": "x"})
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "stub.c").write_text("int cudaMalloc(void) { return 0; }\n")
    (libs / "d3.c").write_text("int cudaMalloc(void);\nint d3(void) { return cudaMalloc(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "stub.c", "-o", "libcudart.so.12"],
                   cwd=libs, check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "d3.c", "-L.", "-l:libcudart.so.12", "-o", t / "s/d3.so"], cwd=libs,
                   check=True)
    hit = _only_hit(t, "stale-cuda-binaries")
    assert hit.evidence.where == "s/d3.so" and "libcudart.so.12" in hit.evidence.text
    patches = yaml.safe_load(draft_recipe("s", "s==1.0", "0" * 64, read_tree(t), ["gfx1100"]))["patches"]
    assert [p["remove"] for p in patches if "remove" in p] == ["s/d3.so"]
    (t / "s/d3.so").unlink()  # as that patch does
    # a library of its own, or one a package that never compiles at run time loads (prebuilt-cuda-binary's), stays
    subprocess.run(["gcc", "-shared", "-fPIC", "stub.c", "-o", t / "s/mine.so"], cwd=libs, check=True)
    assert "stale-cuda-binaries" not in _seen(t)
    subprocess.run(["gcc", "-shared", "-fPIC", "d3.c", "-L.", "-l:libcudart.so.12", "-o", t / "s/d3.so"], cwd=libs,
                   check=True)
    (t / "s/calc.py").write_text("import ctypes\nlib = ctypes.CDLL('d3.so')\n")
    assert "stale-cuda-binaries" not in _seen(t)
