"""Finding ROCm: its prefix, version, CMake module dirs and HIP compiler.

Handles both AMD's /opt/rocm[-X.Y.Z] layout and distro packages under /usr
(Debian/Ubuntu keep CMake files under /usr/lib/<multiarch>/cmake).
"""

from __future__ import annotations

import functools
import glob
import os
import platform
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from rocbuild.detect.query import remembered_query
from rocbuild.errors import HostNotReady, UsageError
from rocbuild.fsutil import within


@functools.total_ordering
class RocmVersion:
    """A ROCm version that templates can compare with plain strings: `rocm.version >= '6.0'`."""

    def __init__(self, text: str):
        self.text = text
        self._v = Version(text)

    @property
    def major(self) -> int:
        return self._v.major

    @property
    def minor(self) -> int:
        return self._v.minor

    @property
    def micro(self) -> int:
        return self._v.micro

    @property
    def short(self) -> str:
        """Major and minor, e.g. '6.1' (what wheel labels and HIP versions agree on)."""
        return f"{self._v.major}.{self._v.minor}"

    @staticmethod
    def _coerce(other: object) -> Version:
        if isinstance(other, RocmVersion):
            return other._v
        if isinstance(other, (int, float)):
            other = str(other)
        if isinstance(other, str):
            try:
                return Version(other)
            except InvalidVersion:
                pass
        raise TypeError(f"cannot compare a ROCm version with {other!r}")

    def __eq__(self, other: object) -> bool:
        try:
            return self._v == self._coerce(other)
        except TypeError:
            return NotImplemented

    def __lt__(self, other: object) -> bool:
        return self._v < self._coerce(other)

    def __hash__(self) -> int:
        return hash(self._v)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"RocmVersion({self.text!r})"


@dataclass(frozen=True)
class OpenMp:
    """OpenMP for the HIP compiler's clang: where its header must be, and the Debian package holding it."""

    compiler: str
    header_glob: str  # <llvm>/lib/clang/*/include/omp.h
    package: str | None  # libomp-N-dev for Debian's /usr/lib/llvm-N, None for other LLVMs (ROCm's own)

    def found(self) -> bool:
        return bool(glob.glob(self.header_glob))


@dataclass
class Rocm:
    path: Path
    version: RocmVersion | None
    version_source: str
    found_by: str
    layout: str  # "rocm" (AMD's own tree), "distro" (packages under /usr) or "pip" (AMD's rocm-sdk packages)
    cmake_roots: list[Path] = field(default_factory=list)
    cmake_hip_dir: Path | None = None  # holds FindHIP.cmake and the FindHIP/ folder
    hip_lang_dir: Path | None = None
    hip_compiler: Path | None = None  # the clang++ hipcc drives
    hipcc: Path | None = None
    include_dir: Path | None = None
    device_lib_dir: Path | None = None  # the device libraries' bitcode (ockl.bc, ...) clang links into kernels
    # Where the compilers find a system library's headers (cblas.h, png.h): /usr/local/include, /usr/include and
    # this machine's multiarch folder (Debian's libopenblas-dev puts cblas.h in /usr/include/x86_64-linux-gnu).
    system_include_dirs: list[Path] = field(default_factory=list)

    @property
    def amd_tree(self) -> bool:
        """AMD's own /opt/rocm tree: its packages carry AMD's repository names (hip-dev, rocblas-dev), and a
        distribution's ROCm packages would put a second ROCm under /usr."""
        return self.layout == "rocm"

    def has_header(self, name: str) -> bool:
        """Whether the include folder holds header `name` (a relative path that stays inside it)."""
        if os.path.isabs(name) or ".." in Path(name).parts or "\0" in name:
            raise ValueError(f"has_header({name!r}): give a header path inside the include folder, "
                             "such as 'rccl/rccl.h'")
        if self.include_dir is None:
            return False
        path = self.include_dir / name
        return path.is_file() and within(path, self.include_dir, follow_links=True)

    def finds_header(self, name: str) -> bool:
        """Whether a compile finds header `name`: in the ROCm include folder, or in the system's, where a system
        library's header (cblas.h) is."""
        if self.has_header(name):
            return True
        return any((d / name).is_file() and within(d / name, d, follow_links=True) for d in self.system_include_dirs)

    def header_dirs(self) -> list[Path]:
        return list(dict.fromkeys(d for d in [self.include_dir, *self.system_include_dirs] if d is not None))

    def cmake_package(self, name: str) -> Path | None:
        """The folder holding <name>-config.cmake / <Name>Config.cmake, as find_package would see it."""
        wanted = {f"{name}-config.cmake".lower(), f"{name}config.cmake".lower()}
        roots = list(self.cmake_roots) + [self.path / name / "lib" / "cmake"]
        for root in roots:
            if not root.is_dir():
                continue
            for sub in root.iterdir():
                if sub.name.lower() != name.lower() or not sub.is_dir():
                    continue
                if any(f.name.lower() in wanted for f in sub.iterdir()):
                    return sub
        return None

    @property
    def lib_dirs(self) -> list[Path]:
        """Where its shared libraries are: lib, lib64 and the multiarch folders (those holding cmake/)."""
        dirs = [self.path / "lib", self.path / "lib64"] + [r.parent for r in self.cmake_roots if r.name == "cmake"]
        return [d for d in dict.fromkeys(dirs) if d.is_dir()]

    def library(self, name: str) -> Path | None:
        """lib<name>.so (or a versioned lib<name>.so.N) in its library folders."""
        for folder in self.lib_dirs:
            found = sorted(folder.glob(f"lib{name}.so*"))
            if found:
                return found[0]
        return None

    def openmp(self) -> OpenMp | None:
        """OpenMP for the clang the HIP compiler is: its omp.h sits in that LLVM's clang resource folder."""
        if self.hip_compiler is None:
            return None
        llvm = self.hip_compiler.parent.parent
        m = re.fullmatch(r"llvm-(\d+)", llvm.name)
        package = f"libomp-{m.group(1)}-dev" if m else None  # Debian and Ubuntu name it after the LLVM
        return OpenMp(str(self.hip_compiler), str(llvm / "lib" / "clang" / "*" / "include" / "omp.h"), package)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "version": str(self.version) if self.version else None,
            "version_source": self.version_source,
            "found_by": self.found_by,
            "layout": self.layout,
            "cmake_hip_dir": _s(self.cmake_hip_dir),
            "hip_lang_dir": _s(self.hip_lang_dir),
            "hip_compiler": _s(self.hip_compiler),
            "hipcc": _s(self.hipcc),
        }


def _s(p: Path | None) -> str | None:
    return str(p) if p else None


def _looks_like_rocm(p: Path) -> bool:
    return p.is_dir() and any(
        (p / rel).exists()
        for rel in (".info/version", "include/rocm-core/rocm_version.h", "bin/hipcc", "bin/hipconfig",
                    "lib/cmake/hip", "include/hip/hip_runtime.h")
    )


def _candidates(option: str | None, environ: dict[str, str], python: str | None) -> list[tuple[Path, str, bool]]:
    """(prefix, how it was found, explicit?) in order of preference."""
    out: list[tuple[Path, str, bool]] = []
    if option:
        out.append((Path(option), "--rocm", True))
    for var in ("ROCM_PATH", "ROCM_HOME"):
        if environ.get(var):
            out.append((Path(environ[var]), var, True))
    sdk = _pip_rocm_root(python, environ) if python else None
    if sdk is not None:
        out.append((sdk, "rocm-sdk path --root (AMD's Python packages of ROCm)", False))
    hipcc = shutil.which("hipcc", path=environ.get("PATH"))
    if hipcc:
        out.append((Path(os.path.realpath(hipcc)).parent.parent, "hipcc on PATH", False))
    out.append((Path("/opt/rocm"), "/opt/rocm", False))
    out.append((Path("/usr"), "distro packages", False))
    return out


def _pip_rocm_root(python: str, environ: dict[str, str]) -> Path | None:
    """The ROCm that AMD's Python packages (rocm-sdk) put in the target python's environment, if any."""
    tool = Path(python).parent / "rocm-sdk"
    if not (tool.is_file() and os.access(tool, os.X_OK)):
        return None
    answer = probe_tool([str(tool), "path", "--root"], environ)
    line = answer.strip().splitlines()[-1].strip() if answer and answer.strip() else ""
    return Path(line) if line.startswith("/") else None


def find_rocm(option: str | None = None, environ: dict[str, str] | None = None, *,
              python: str | None = None) -> Rocm | None:
    """`python`: the target python; a ROCm installed into its environment by AMD's Python packages
    (`rocm-sdk`) is found before the system's."""
    environ = dict(environ or {})  # the command line passes the environment it was started with
    for prefix, how, explicit in _candidates(option, environ, python):
        if _looks_like_rocm(prefix):
            return inspect_prefix(prefix, how, environ)
        if explicit:
            fix = "point it at a ROCm install (the folder holding bin/hipcc or .info/version)"
            if how == "--rocm":
                raise UsageError(f"--rocm {prefix}: not a ROCm install", hint=fix)
            raise HostNotReady(f"{how}={prefix} is not a ROCm install", hint=fix + f", or unset {how}")
    return None


def require_rocm(rocm: Rocm | None) -> Rocm:
    if rocm is not None:
        return rocm
    raise HostNotReady(
        "no ROCm found",
        hint="install ROCm (AMD's packages put it in /opt/rocm) or Debian/Ubuntu's HIP toolchain:\n"
        "  apt-get install hipcc libamdhip64-dev rocm-device-libs rocminfo\n"
        "or point rocbuild at it with --rocm PATH or ROCM_PATH",
    )


def inspect_prefix(prefix: Path, found_by: str, environ: dict[str, str]) -> Rocm:
    prefix = Path(prefix)
    if "_rocm_sdk" in str(prefix):  # AMD's Python packages: site-packages/_rocm_sdk_devel, _rocm_sdk_core
        layout = "pip"
    else:
        layout = "distro" if prefix.resolve() in (Path("/usr"), Path("/usr/local")) else "rocm"
    multiarch = sorted(p for p in (prefix / "lib").glob("*-linux-gnu*") if p.is_dir()) if (prefix / "lib").is_dir() else []
    cmake_roots = [prefix / "lib" / "cmake", prefix / "lib64" / "cmake"] + [m / "cmake" for m in multiarch]
    cmake_roots += [prefix / "share" / "cmake"]
    cmake_roots = [r for r in cmake_roots if r.is_dir()]

    def first(paths: list[Path]) -> Path | None:
        return next((p for p in paths if p.exists()), None)

    hip_dirs = [prefix / "lib" / "cmake" / "hip", prefix / "hip" / "cmake"] + [r / "hip" for r in cmake_roots]
    cmake_hip_dir = next((d for d in hip_dirs if (d / "FindHIP.cmake").is_file()), None)
    hip_lang_dir = next((r / "hip-lang" for r in cmake_roots if (r / "hip-lang" / "hip-lang-config.cmake").is_file()), None)
    hipcc = first([prefix / "bin" / "hipcc"])
    version, version_source = _version(prefix, hipcc, environ)
    compiler = _hip_compiler(prefix, hipcc, environ)
    return Rocm(
        path=prefix,
        version=version,
        version_source=version_source,
        found_by=found_by,
        layout=layout,
        cmake_roots=cmake_roots,
        cmake_hip_dir=cmake_hip_dir,
        hip_lang_dir=hip_lang_dir,
        hip_compiler=compiler,
        hipcc=hipcc,
        include_dir=prefix / "include" if (prefix / "include").is_dir() else None,
        device_lib_dir=_device_libs(prefix, compiler),
        system_include_dirs=_system_include_dirs(),
    )


def _system_include_dirs() -> list[Path]:
    """The compilers' own: /usr/local/include, /usr/include and this machine's multiarch folder (Debian's and
    Ubuntu's triplet, x86_64-linux-gnu), not the cross-compilers' beside it."""
    usr = Path("/usr/include")
    return [d for d in [Path("/usr/local/include"), usr, usr / f"{platform.machine()}-linux-gnu"] if d.is_dir()]


def _device_libs(prefix: Path, compiler: Path | None) -> Path | None:
    """Where the device libraries are: AMD's tree keeps them under amdgcn/bitcode, a distribution in its clang's
    resource folder (Debian: /usr/lib/llvm-N/lib/clang/N/amdgcn/bitcode). clang finds the latter only when
    ROCM_PATH does not point it elsewhere; a CMake HIP build that must set ROCM_PATH (torch's LoadHIP.cmake)
    names them as HIP_DEVICE_LIB_PATH."""
    candidates = [prefix / "amdgcn" / "bitcode"]
    if compiler is not None:
        llvm = compiler.resolve().parent.parent  # .../llvm-N/bin/clang++ -> .../llvm-N
        candidates += sorted((llvm / "lib" / "clang").glob("*/amdgcn/bitcode"))
        candidates += sorted((llvm / "lib" / "clang").glob("*/lib/amdgcn/bitcode"))
    return next((c for c in candidates if (c / "ockl.bc").is_file()), None)


def _version(prefix: Path, hipcc: Path | None, environ: dict[str, str]) -> tuple[RocmVersion | None, str]:
    info = prefix / ".info" / "version"
    if info.is_file():
        m = re.match(r"^\s*(\d+\.\d+\.\d+)", info.read_text(errors="replace"))
        if m:
            return RocmVersion(m.group(1)), str(info)
    header = prefix / "include" / "rocm-core" / "rocm_version.h"
    if header.is_file():
        text = header.read_text(errors="replace")
        parts = [re.search(rf"#define\s+ROCM_VERSION_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
        if parts[0] and parts[1]:
            patch = parts[2].group(1) if parts[2] else "0"
            return RocmVersion(f"{parts[0].group(1)}.{parts[1].group(1)}.{patch}"), str(header)
    hipconfig = prefix / "bin" / "hipconfig"
    if hipconfig.exists():
        out = probe_tool([str(hipconfig), "--version"], environ)
        m = re.match(r"^\s*(\d+)\.(\d+)", out or "")
        if m:
            # HIP's patch number (e.g. 40091) is not ROCm's: only major.minor agree.
            return RocmVersion(f"{m.group(1)}.{m.group(2)}"), f"{hipconfig} --version"
    return None, "unknown"


def _hip_compiler(prefix: Path, hipcc: Path | None, environ: dict[str, str]) -> Path | None:
    dirs = []
    if environ.get("HIP_CLANG_PATH"):
        dirs.append(Path(environ["HIP_CLANG_PATH"]))
    dirs += [prefix / "lib" / "llvm" / "bin", prefix / "llvm" / "bin"]
    for d in dirs:
        if (d / "clang++").exists():
            return d / "clang++"
    if hipcc is None:
        return None
    # Distro hipcc drives a versioned clang (Debian 12: /usr/bin/clang++-15): ask it which.
    out = probe_tool([str(hipcc), "--version"], environ) or ""
    m = re.search(r"clang version (\d+)", out)
    if not m:
        return None
    major = m.group(1)
    for cand in (prefix / "lib" / f"llvm-{major}" / "bin" / "clang++", prefix / "bin" / f"clang++-{major}"):
        if cand.exists():
            return cand
    return None


def probe_tool(argv: list[str], environ: Mapping[str, str]) -> str | None:
    """A HIP tool's answer (`hipconfig --version`, ...), remembered while the tool is unchanged."""
    # hipcc and hipconfig pick the NVIDIA platform when they also see nvcc.
    return remembered_query(argv, dict(environ, HIP_PLATFORM="amd"))
