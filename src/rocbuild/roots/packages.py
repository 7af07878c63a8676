"""A recipe's requirements (CMake packages, tools) as the packages that provide them, checked against
what the root's apt offers: a Debian root's suite as the archive lists it now, or an image root's own
apt indexes. A ROCm under /opt/rocm (AMD's images) comes from AMD's repository, whose names differ from
Debian's (hip-dev, rocblas-dev; AMD's "package manager integration" reference): those are tried first
there, so that no second ROCm is installed under /usr beside it."""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass
from pathlib import Path

from rocbuild.roots.store import ROCM_PACKAGE

# A system library's header -> the Debian (and Ubuntu) package of the library: trap system-library-header.
SYSTEM_HEADERS = {"cblas.h": "libopenblas-dev", "lapacke.h": "liblapacke-dev", "png.h": "libpng-dev",
                  "zlib.h": "zlib1g-dev", "fftw3.h": "libfftw3-dev", "lz4.h": "liblz4-dev", "zstd.h": "libzstd-dev",
                  "gmp.h": "libgmp-dev", "jpeglib.h": "libjpeg-dev", "turbojpeg.h": "libturbojpeg0-dev",
                  "webp/decode.h": "libwebp-dev", "gflags/gflags.h": "libgflags-dev",
                  "glog/logging.h": "libgoogle-glog-dev"}
# Names Debian spells differently from the requirement; the rest follow lib<name>-dev or <name>.
CMAKE_PACKAGES = {"hip": "libamdhip64-dev", "hip-lang": "libamdhip64-dev", "hiprtc": "libamdhip64-dev",
                  "rocm-core": "librocm-core-dev", "amd_comgr": "libamd-comgr-dev",
                  "hsa-runtime64": "libhsa-runtime-dev", "rocm_smi": "librocm-smi-dev"}
# Headers and libraries of components without a CMake package (Debian packages roctx from roctracer's
# source alone; roctracer64 itself has no package).
HEADERS = {"roctx.h": "libroctx-dev", "roctracer/roctx.h": "libroctx-dev", "omp.h": "libomp-dev", **SYSTEM_HEADERS}
# Debian ships hipSOLVER's Fortran library (which its CMake package names) on its own, with no -dev package.
LIBRARIES = {"roctx64": "libroctx-dev", "hipsolver_fortran": "libhipsolver-fortran1"}
# AMD's repository (repo.radeon.com), where it names a component otherwise; the rest are <name>-dev.
AMD_CMAKE_PACKAGES = {"hip": "hip-dev", "hip-lang": "hip-dev", "hiprtc": "hip-dev", "rocm-core": "rocm-core",
                      "amd_comgr": "comgr", "hsa-runtime64": "hsa-rocr-dev", "rocm_smi": "rocm-smi-lib"}
AMD_HEADERS = {"roctx.h": "roctracer-dev", "roctracer/roctx.h": "roctracer-dev", "omp.h": "openmp-extras-dev"}
AMD_LIBRARIES = {"roctx64": "roctracer-dev", "roctracer64": "roctracer-dev"}
TOOLS = {"hipconfig": "hipcc", "ninja": "ninja-build", "pkg-config": "pkgconf", "c++": "g++", "cc": "gcc",
         "python3": "python3", "pip": "python3-pip", "roc-obj-ls": "hipcc", "libpng-config": "libpng-dev"}
APT_LISTS = Path("/var/lib/apt/lists")


@dataclass(frozen=True)
class Mapping:
    packages: dict[str, str]  # requirement (as the recipe names it) -> Debian package
    unknown: tuple[str, ...]  # requirements no package of the suite is known to provide


def cmake_candidates(name: str, amd: bool = False) -> list[str]:
    """`amd`: the ROCm is AMD's (/opt/rocm): its repository's names first."""
    low = name.lower()
    debian = [CMAKE_PACKAGES[low]] if low in CMAKE_PACKAGES else [f"lib{low}-dev", f"{low}-dev", low]
    if not amd:
        return debian
    # Debian's name of a ROCm component would put a second one under /usr beside AMD's: never offered.
    return [AMD_CMAKE_PACKAGES.get(low, f"{low}-dev")] + [c for c in debian if not ROCM_PACKAGE.match(c)]


def tool_candidates(name: str) -> list[str]:
    return [TOOLS[name]] if name in TOOLS else [name]


def header_candidates(name: str, amd: bool = False) -> list[str]:
    low = name.lower()
    if amd and low in AMD_HEADERS:
        return [AMD_HEADERS[low]]
    if low in HEADERS:
        return [HEADERS[low]]
    top = low.split("/")[0].removesuffix(".h").removesuffix(".hpp")
    return [f"lib{top}-dev", f"{top}-dev"]


def library_candidates(name: str, amd: bool = False) -> list[str]:
    low = name.lower()
    if amd and low in AMD_LIBRARIES:
        return [AMD_LIBRARIES[low]]
    return [LIBRARIES[low]] if low in LIBRARIES else [f"lib{low}-dev", f"lib{low.rstrip('0123456789')}-dev"]


@dataclass(frozen=True)
class Wanted:
    """What a recipe lacks, as requirement labels (`tool 'cmake'`) with the packages that may provide it."""

    items: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def of(cls, tools: Iterable[str] = (), cmake_packages: Iterable[str] = (), headers: Iterable[str] = (),
           libraries: Iterable[str] = (), openmp: str | None = None, amd: bool = False) -> Wanted:
        """`openmp`: the Debian package of OpenMP for the HIP compiler, when that is what is missing;
        `amd`: the ROCm is AMD's (under /opt/rocm), whose repository names its packages otherwise."""
        items = [(f"tool {t!r}", tuple(tool_candidates(t))) for t in tools]
        items += [(f"CMake package {p!r}", tuple(cmake_candidates(p, amd))) for p in cmake_packages]
        items += [(f"header {h!r}", tuple(header_candidates(h, amd))) for h in headers]
        items += [(f"library {n!r}", tuple(library_candidates(n, amd))) for n in libraries]
        if openmp is not None:
            items.append(("OpenMP for the HIP compiler", (openmp,)))
        return cls(tuple(items))


def map_requirements(wanted: Wanted, available: Container[str]) -> Mapping:
    found: dict[str, str] = {}
    unknown: list[str] = []
    for label, candidates in wanted.items:
        package = next((c for c in candidates if c in available), None)
        if package is None:
            unknown.append(label)
        else:
            found[label] = package
    return Mapping(found, tuple(unknown))


def listed_packages(lists: Path = APT_LISTS) -> set[str]:
    """Package names in apt's downloaded indexes (empty until `apt-get update` ran)."""
    from rocbuild.roots.archive import parse_packages  # urllib and lzma: only for a root's own lists

    names: set[str] = set()
    if not lists.is_dir():
        return names
    for index in lists.glob("*_Packages"):
        try:
            names.update(parse_packages(index.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return names
