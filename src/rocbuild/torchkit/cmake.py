"""The kit's CMake package (torch/share/cmake, where `torch.utils.cmake_prefix_path` points), as a ROCm wheel
of the same release carries it, so that `find_package(Torch)` takes a CMake-driven extension's HIP path.

It is made from the release's own installed files (Debian's libtorch-dev: TorchConfig.cmake, Caffe2Config.cmake
and public/*.cmake, LoadHIP.cmake among them), configured as PyTorch's ROCm wheels configure their templates:
USE_ROCM on (Caffe2Config.cmake includes public/LoadHIP.cmake, which finds the root's ROCm and sets
PYTORCH_FOUND_HIP), protobuf linked into torch (CAFFE2_LINK_LOCAL_PROTOBUF), and the wheel's layout (the package
three folders above its files). Caffe2Targets.cmake, which CMake writes from the build's targets, is written here:
the CPU targets as Debian's, plus c10_hip and torch_hip, every one naming the kit's link-only libraries."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from rocbuild.errors import StepFailed

# (file under cmake/, the text Debian's configured file holds, what the kit's holds, how many times)
CONFIGURED = (
    ("Torch/TorchConfig.cmake", '"${CMAKE_CURRENT_LIST_DIR}/../../../../" ABSOLUTE)',
     '"${CMAKE_CURRENT_LIST_DIR}/../../../" ABSOLUTE)', 1),
    # The one change that is not a ROCm wheel's: its libraries are looked for in the kit only. A root also
    # holds Debian's libtorch.so and libc10.so under /usr/lib, which CMake's default paths would find first
    # (and an extension would then need libc10.so.2.14); a machine with a torch wheel has no such second torch.
    ("Torch/TorchConfig.cmake", 'PATHS "${TORCH_INSTALL_PREFIX}/lib")', 'PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)',
     5),
    ("Caffe2/Caffe2Config.cmake", "# Protobuf\nif(OFF)", "# Protobuf\nif(ON)", 1),
    ("Caffe2/Caffe2Config.cmake", 'if (OFF)\n  include("${CMAKE_CURRENT_LIST_DIR}/public/LoadHIP.cmake")',
     'if (ON)\n  include("${CMAKE_CURRENT_LIST_DIR}/public/LoadHIP.cmake")', 1),
    ("Caffe2/Caffe2Config.cmake", '"${CMAKE_CURRENT_LIST_DIR}/../../../../" ABSOLUTE)',
     '"${CMAKE_CURRENT_LIST_DIR}/../../../" ABSOLUTE)', 1),
)
# What the release's LoadHIP.cmake finds REQUIRED beyond what the kit itself installs (rocbuild root torch): a
# CMake-driven extension's recipe lists them, and --install-missing brings them into the root.
# libhipsolver-fortran1: Debian's hipsolver CMake package names its Fortran library, which that package holds.
LOADHIP_PACKAGES = ("librocblas-dev", "libmiopen-dev", "libhipfft-dev", "librocsolver-dev", "libhipsolver-fortran1")
# The same, as a recipe's requires.cmake-packages names them (torch-cmake-rocm-path's fix lists them: each would
# otherwise cost a try, CMake stopping at the first it misses). The Fortran library is left to rocm-library-missing:
# only Debian ships it apart, and a requirement of it would refuse AMD's ROCm.
LOADHIP_CMAKE_PACKAGES = ("rocblas", "miopen", "hipfft", "rocsolver")
COPIED = ("Torch/TorchConfigVersion.cmake", "Caffe2/public")
HEADER = "# Written by rocbuild for a build-only ROCm torch, as a ROCm wheel of this release configures it.\n"

# What a ROCm build of torch exports to every consumer of torch_hip: caffe2/CMakeLists.txt says
# `target_compile_options(torch_hip PUBLIC ${HIP_CXX_FLAGS})`, and cmake/Dependencies.cmake fills HIP_CXX_FLAGS
# (upstream main, 2026; no -std= in it since torch builds as C++20). CMake-driven extensions rely on it: vLLM's
# plain C++ targets get USE_ROCM and the HIP platform only from here, and its kernels TORCH_HIP_VERSION (what
# hipify turns CUDA_VERSION into). Left out: HIPBLASLT_OUTER_VEC, HIPBLASLT_VEC_EXT and USE_ROCM_CK_GEMM, which
# depend on what the wheel's build found.
HIP_CXX_FLAGS = ("-fPIC", "-D__HIP_PLATFORM_AMD__=1", "-DCUDA_HAS_FP16=1", "-DUSE_ROCM", "-D__HIP_NO_HALF_OPERATORS__=1",
                 "-D__HIP_NO_HALF_CONVERSIONS__=1", "-DTORCH_HIP_VERSION={torch_hip_version}",
                 "-Wno-shift-count-negative", "-Wno-shift-count-overflow", "-DCAFFE2_USE_MIOPEN",
                 "-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_HIP", "-DHIPBLAS_V2", "-DHIP_ENABLE_WARP_SYNC_BUILTINS")

# name -> (library file or None for an interface target, INTERFACE_LINK_LIBRARIES)
TARGETS = {
    "headeronly": (None, ""),
    "c10": ("libc10.so", "headeronly"),
    "c10_hip": ("libc10_hip.so", "c10;hip::amdhip64"),
    "torch_cpu": ("libtorch_cpu.so", "protobuf::libprotobuf;c10"),
    "torch_cpu_library": (None, None),
    "torch_hip": ("libtorch_hip.so", "torch_cpu_library;c10_hip"),
    "torch_hip_library": (None, None),
    "torch": ("libtorch.so", "torch_cpu_library;torch_hip_library"),
    "torch_library": (None, None),
}


def write_cmake_package(debian_cmake: Path, torch: Path, hip: str) -> None:
    """torch/share/cmake/{Torch,Caffe2,ATen} from Debian's cmake/ folder of the same release; `hip`: the HIP
    version the kit says it was built with (torch.version.hip)."""
    out = torch / "share" / "cmake"
    if out.exists():
        shutil.rmtree(out)
    texts: dict[str, str] = {}
    for name, debian, rocm, times in CONFIGURED:
        text = texts.get(name) or _read(debian_cmake / name)
        if text.count(debian) != times:
            raise StepFailed(f"torch kit: {debian_cmake / name} no longer holds `{debian.splitlines()[-1]}` {times} times",
                             hint="this torch release configures its CMake package otherwise: teach torchkit/cmake.py")
        texts[name] = text.replace(debian, rocm)
    for name, text in texts.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(HEADER + text)
    for name in COPIED:
        source = debian_cmake / name
        if source.is_dir():
            shutil.copytree(source, out / name)
        else:
            shutil.copy2(source, out / name)
    definitions = _cpu_definitions(_read(debian_cmake / "Caffe2" / "Caffe2Targets.cmake"))
    (out / "Caffe2" / "Caffe2Targets.cmake").write_text(targets_text(definitions, torch_hip_version(hip)))
    (out / "ATen").mkdir()
    (out / "ATen" / "ATenConfig.cmake").write_text(
        HEADER + f'set(ATEN_FOUND 1)\nset(ATEN_INCLUDE_DIR "{torch / "include"}")\nset(ATEN_LIBRARIES "")\n')


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise StepFailed(f"torch kit: {path} cannot be read ({e.strerror})",
                         hint="rocbuild root torch installs libtorch-dev, which brings torch's CMake package") from e


def _cpu_definitions(targets: str) -> str:
    """torch_cpu's INTERFACE_COMPILE_DEFINITIONS as the release's build exported them (USE_DISTRIBUTED, ...)."""
    match = re.search(r'add_library\(torch_cpu SHARED IMPORTED\)\s*set_target_properties\(torch_cpu PROPERTIES\s*'
                      r'INTERFACE_COMPILE_DEFINITIONS "([^"]*)"', targets)
    return match.group(1) if match else ""


def torch_hip_version(hip: str) -> int:
    """LoadHIP.cmake's TORCH_HIP_VERSION: HIP_VERSION_MAJOR * 100 + HIP_VERSION_MINOR (7.2.53211 is 702)."""
    major, minor = (re.findall(r"\d+", hip) + ["0", "0"])[:2]
    return int(major) * 100 + int(minor)


def targets_text(cpu_definitions: str, hip_version: int) -> str:
    """Caffe2Targets.cmake: the imported targets of a ROCm build, at the kit's libraries (torch/lib), with the
    `_library` interface targets that link their library whole (--no-as-needed), as PyTorch exports them."""
    lines = [HEADER.rstrip(), "cmake_policy(PUSH)", "cmake_policy(VERSION 3.0.0...4.1)",
             "if(TARGET torch)", "  cmake_policy(POP)", "  return()", "endif()",
             'get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../../" ABSOLUTE)']
    for name, (library, links) in TARGETS.items():
        if library is None and links is not None:
            lines.append(f"add_library({name} INTERFACE IMPORTED)")
        elif library is None:
            lines += _whole(name.removesuffix("_library"), name)
            continue
        else:
            lines.append(f"add_library({name} SHARED IMPORTED)")
        props = {"INTERFACE_INCLUDE_DIRECTORIES": "${_IMPORT_PREFIX}/include"} if library else {}
        if library:
            props |= {"IMPORTED_LOCATION": f"${{_IMPORT_PREFIX}}/lib/{library}", "IMPORTED_SONAME": library}
        if links:
            props["INTERFACE_LINK_LIBRARIES"] = links
        if name == "torch_cpu" and cpu_definitions:
            props["INTERFACE_COMPILE_DEFINITIONS"] = cpu_definitions
        if name == "torch_hip":
            props["INTERFACE_COMPILE_OPTIONS"] = ";".join(HIP_CXX_FLAGS).format(torch_hip_version=hip_version)
        if props:
            lines.append(f"set_target_properties({name} PROPERTIES")
            lines += [f'  {key} "{value}"' for key, value in props.items()]
            lines.append(")")
    return "\n".join([*lines, "unset(_IMPORT_PREFIX)", "cmake_policy(POP)"]) + "\n"


def _whole(library: str, name: str) -> list[str]:
    """An interface target that links `library` whole and passes on its usage requirements (as PyTorch's
    caffe2_interface_library does: definitions, options, include folders, libraries)."""
    of = f"\\$<TARGET_PROPERTY:{library},"
    return [f"add_library({name} INTERFACE IMPORTED)", f"set_target_properties({name} PROPERTIES",
            f'  INTERFACE_COMPILE_DEFINITIONS "{of}INTERFACE_COMPILE_DEFINITIONS>"',
            f'  INTERFACE_COMPILE_OPTIONS "{of}INTERFACE_COMPILE_OPTIONS>"',
            f'  INTERFACE_INCLUDE_DIRECTORIES "{of}INTERFACE_INCLUDE_DIRECTORIES>"',
            f'  INTERFACE_LINK_LIBRARIES "-Wl,--no-as-needed,\\"\\$<TARGET_FILE:{library}>\\" -Wl,--as-needed;'
            f'{of}INTERFACE_LINK_LIBRARIES>"', ")"]
