"""A build-only ROCm torch: what it is made of, where it lives in a build root, and the commands that make it.

No ROCm build of torch can be installed where PyPI and Debian are the only registries (PyTorch's ROCm
wheels are on its own index; Debian has CPU and CUDA builds only). What a torch extension's build needs
from torch is its headers, its metadata and libraries to link against, and those can be made from one
real torch release, Debian's, with that release's own hipify, as PyTorch's ROCm build makes its tree:

- Debian's `python3-torch` (the Python package, its `torch/utils/hipify`) and `libtorch-dev` (the headers:
  `ATen/cuda`, `c10/cuda`, the hand-written `ATen/hip/impl/*MasqueradingAsCUDA.h`), laid out as PyTorch's
  source tree and hipified with `tools/amd_build/build_amd.py`'s include and ignore lists (HIPIFY_INCLUDES),
  give `c10/hip`, `ATen/hip` and a hipified `torch/csrc`, installed under `torch/include` as a ROCm wheel
  lays them out, with `ATen/hip/HIPConfig.h` and `c10/hip/impl/hip_cmake_macros.h` written for ROCm;
- `torch/version.py` says `hip` and `rocm` for the root's ROCm, `cuda = None`, and `build_only = True`;
  `torch.cuda._is_compiled()` is true, so `torch.utils.cpp_extension` takes its ROCm path;
- `torch/lib` holds link-only libraries with the sonames of PyTorch's ROCm wheels: `libc10.so`,
  `libtorch.so`, `libtorch_cpu.so`, `libtorch_python.so` carry the symbols of Debian's libraries
  (LLVM's `llvm-ifs` writes stubs from them), and `libc10_hip.so`, `libtorch_hip.so` the functions the
  hipified `c10/hip` and `ATen/hip` headers declare (read by the ROCm clang from its AST), so an extension
  links them as it would a real ROCm torch's, `--as-needed` or not.

It lives in its own virtual environment in the root (KIT_HOME), over the root's python3 and its
packages, so the root's own torch stays as Debian made it. Nothing built against it can be imported:
its libraries hold no code. docs/build-roots.md lists what else differs from a real ROCm torch wheel."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the kit is made from (Debian), and what hipified ATen's headers include (hipblas, thrust, hipcub...):
# an extension's build needs the same.
# libfmt-dev: Debian's torch builds with the system's fmt, whose headers torch's own include (python_arg_parser.h's
# <fmt/format.h>, through pybind_utils.h: stable-fast); a PyTorch wheel carries them in torch/include/fmt.
KIT_PACKAGES = ("python3-torch", "libtorch-dev", "pybind11-dev", "python3-venv", "libhipblas-dev", "libhipblaslt-dev",
                "libhipsparse-dev", "libhipsolver-dev", "libhiprand-dev", "librocrand-dev", "libhipcub-dev",
                "librocprim-dev", "librocthrust-dev", "libfmt-dev")
KIT_HOME = Path("/opt/rocbuild")
# Debian's torch: the Python package of the root's python3, its libraries and headers.
DEBIAN_TORCH = Path("/usr/lib/python3/dist-packages/torch")
DEBIAN_LIBS = Path("/usr/lib/x86_64-linux-gnu")
DEBIAN_INCLUDE = Path("/usr/include")
MARKER = ".rocbuild-build-only.json"  # in the kit's torch package: what it was made from
# PyTorch's tools/amd_build/build_amd.py: the entries of its include and ignore lists that name headers an
# installed torch ships (the rest name sources, caffe2 and third-party trees that no install holds).
HIPIFY_INCLUDES = (
    "c10/cuda/*", "aten/src/ATen/cuda/*", "aten/src/ATen/native/cuda/*", "aten/src/ATen/native/cudnn/*",
    "aten/src/ATen/native/quantized/cudnn/*", "aten/src/ATen/native/nested/cuda/*",
    "aten/src/ATen/native/sparse/cuda/*", "aten/src/ATen/native/quantized/cuda/*",
    "aten/src/ATen/native/transformers/cuda/sdp_utils.h",
    "aten/src/ATen/native/transformers/cuda/mem_eff_attention/debug_utils.h",
    "aten/src/ATen/native/transformers/cuda/mem_eff_attention/gemm_kernel_utils.h",
    "aten/src/ATen/native/transformers/cuda/mem_eff_attention/pytorch_utils.h", "aten/src/THC/*", "torch/*")
HIPIFY_IGNORES = ("*/hip/*", "aten/src/ATen/core/*", "aten/src/ATen/cuda/CUDAConfig.h", "torch/include/*")
# Where each header folder of an install sits in PyTorch's source tree (hipify tells PyTorch's files by it).
# torch/headeronly (torch >= 2.9) is under torch/ too, so build_amd.py's "torch/*" hipifies it in place: its
# cuda/Atomic.h, which ATen/hip/Atomic.cuh includes, must include HIP's runtime and not cuda.h.
SOURCE_LAYOUT = (("ATen", "aten/src/ATen"), ("c10", "c10"), ("torch/csrc", "torch/csrc"),
                 ("torch/headeronly", "torch/headeronly"))
# Debian's shared libraries (soname libNAME.so.X.Y) and the names a ROCm wheel gives them: libNAME.so.
CPU_LIBRARIES = ("c10", "torch", "torch_cpu", "torch_python")
HIP_LIBRARIES = {"c10_hip": ("c10/hip/",), "torch_hip": ("ATen/hip/", "ATen/native/hip/")}
# Headers of c10/hip and ATen/hip that do not compile on their own in this release (amdsmi missing from
# Debian; a masquerading allocator upstream marks "SHOULD NOT BE USED"), left out of the symbol read.
UNREADABLE_HEADERS = ("c10/hip/driver_api.h", "ATen/hip/impl/HIPAllocatorMasqueradingAsCUDA.h")
# aten/src/THC of the torch release, kept for extensions that include <THC/THCAtomics.cuh> (torchvision's
# old kernels, DCNv3/v4, mmcv ops). A CPU install (Debian's) has no THC; PyTorch's ROCm build hipifies it to
# THH and its wheel ships torch/include/THH (setup.py's package data), which cpp_extension's ROCm path puts
# on the include path. So the two files, as torch 2.14's aten/src/THC/CMakeLists.txt installs them, go into
# the source tree before hipify, which writes aten/src/THH from them.
THC_GUARD = ("#if !defined(TORCH_STABLE_ONLY) && !defined(TORCH_TARGET_VERSION)\n#pragma once\n{body}\n#else\n"
             '#error "This file should not be included when either TORCH_STABLE_ONLY or TORCH_TARGET_VERSION is '
             'defined."\n#endif  // !defined(TORCH_STABLE_ONLY) && !defined(TORCH_TARGET_VERSION)\n')
THC_HEADERS = {
    "THCAtomics.cuh": THC_GUARD.format(body="// TODO: Remove once torchvision has been updated to use the ATen header\n"
                                            "#include <ATen/cuda/Atomic.cuh>\n"),
    "THCDeviceUtils.cuh": THC_GUARD.format(body="// TODO: Remove this header\n#include <ATen/cuda/DeviceUtils.cuh>\n"),
}
# The configured headers a ROCm build writes (CMake fills CUDAConfig.h.in and hip_cmake_macros.h.in);
# neither template ships in an install, so they are written from what the templates hold.
HIP_CONFIG = """\
#pragma once
// Written by rocbuild for a build-only ROCm torch, as a ROCm build configures ATen/cuda/CUDAConfig.h.in.
#define AT_CUDNN_ENABLED() 0
#define AT_CUSPARSELT_ENABLED() 0
#define AT_HIPSPARSELT_ENABLED() 0
#define AT_ROCM_ENABLED() 1
#define AT_MAGMA_ENABLED() 0
#define NVCC_FLAGS_EXTRA ""
"""
HIP_CMAKE_MACROS = """\
#pragma once
// Written by rocbuild for a build-only ROCm torch, as c10/hip/CMakeLists.txt configures it (shared libraries).
#define C10_HIP_BUILD_SHARED_LIBS
#define C10_CUDA_BUILD_SHARED_LIBS
"""
IS_COMPILED = 'return hasattr(torch._C, "_cuda_getDeviceCount")'
# torch.cuda.is_available() then asks the runtime, which Debian's CPU torch._C lacks (AttributeError, where a
# real ROCm torch on a machine without a GPU says False; torch-scatter's setup.py asks it even with FORCE_CUDA).
DEVICE_COUNT = "return torch._C._cuda_getDeviceCount() > 0"
# torch.cuda.device_count() asks the same runtime when amdsmi gives no count (stainx's setup.py asks it): a ROCm
# torch on a machine without a GPU says 0.
NO_SMI_COUNT = "r = torch._C._cuda_getDeviceCount() if nvml_count < 0 else nvml_count"
# torch.cuda.get_arch_list() (and get_gencode_flags()) ask for the archs torch's own kernels were compiled for,
# which Debian's CPU torch._C cannot say (AttributeError; curegot's setup.py asks): the kit compiled none.
ARCH_FLAGS = "arch_flags = torch._C._cuda_getArchFlags()"
# Not patched: torch.backends.cuda.is_built() (torch._C._has_cuda), true in a ROCm build and false here. torch's
# own import (torch/_native) registers CUDA kernels where it says true, which Debian's CPU torch._C lacks.


@dataclass(frozen=True)
class KitInfo:
    """A kit as its marker file records it (and as provenance and verify report it)."""

    torch: str  # the release it was made from, e.g. 2.14.1
    rocm: str  # the root's ROCm, e.g. 7.2.4
    hip: str  # what torch.version.hip says (hipconfig --version, no hash)
    made_from: dict[str, str]  # Debian package -> version

    @property
    def version(self) -> str:
        """torch.__version__ of the kit: the local label says ROCm and that it is build-only."""
        major_minor = ".".join(self.rocm.split(".")[:2])
        return f"{self.torch}+rocm{major_minor}.buildonly"

    def to_json(self) -> dict[str, Any]:
        return {"build_only": True, "torch": self.torch, "rocm": self.rocm, "hip": self.hip,
                "made_from": dict(sorted(self.made_from.items())),
                "limits": "headers and link-only libraries: nothing built against it can be imported"}


def kit_folder(torch: str, rocm: str) -> Path:
    return KIT_HOME / f"torch-{torch}-rocm{rocm}-build-only"


def kit_python(folder: Path) -> Path:
    return folder / "bin" / "python"


def version_py(info: KitInfo, rocm_home: Path) -> str:
    """torch/version.py of the kit, as PyTorch's tools/generate_torch_version.py writes it for ROCm, with
    two lines no real torch has: build_only and rocm_home (read by rocbuild's torch probe)."""
    return ("from typing import Optional\n\n"
            "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
            f"__version__ = {info.version!r}\n"
            "debug = False\n"
            "cuda: Optional[str] = None\n"
            "git_version = 'Unknown'\n"
            f"hip: Optional[str] = {info.hip!r}\n"
            f"rocm: Optional[str] = {info.rocm!r}\n"
            "xpu: Optional[str] = None\n"
            "# rocbuild: a build-only ROCm torch (headers and link-only libraries; nothing built against it\n"
            "# can be imported). Made from: " + json.dumps(info.made_from, sort_keys=True) + "\n"
            "build_only = True\n"
            f"rocm_home = {str(rocm_home)!r}  # cpp_extension's ROCM_HOME: a prefix of links to the root's ROCm\n")
