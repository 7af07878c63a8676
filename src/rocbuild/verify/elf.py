"""One ELF file: the libraries it needs (DT_NEEDED), where it looks for them (RPATH/RUNPATH), and the
device code it carries: offload bundles, and AMDGPU code objects embedded in its data (or the file
itself being one)."""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

from rocbuild.cudalibs import CUDA_LIB
from rocbuild.verify.bundles import Bundle, TargetId, find_bundles
from rocbuild.verify.codeobj import EM_AMDGPU, CodeObject, find_code_objects, parse_code_object
from rocbuild.verify.finding import Finding

ELF_MAGIC = b"\x7fELF"
FATBIN_SECTION = re.compile(r"^\.hip_fatbin")

ROCM_LIB = re.compile(
    r"^lib(?:amdhip64|hiprtc[\w-]*|hsa-runtime64|amd_comgr|hsakmt|rocblas|hipblas|hipblaslt|rocrand|hiprand|rccl"
    r"|MIOpen|rocsparse|hipsparse(?:lt)?|rocsolver|hipsolver|rocfft|hipfft|roctx64|roctracer64|rocm_smi64"
    r"|amd_smi|c10_hip|torch_hip|rocprofiler[\w-]*|migraphx[\w-]*|hipsparselt|rocm-core|rocm_sysdeps_[\w-]+"
    r"|drm_amdgpu|hipfort\w*|rocroller|hipdnn\w*|hiptensor|rocwmma|composable_kernel\w*)(?:-[0-9a-f]{8})?\.so"
    # and the HIP SDK's Windows DLLs (amdhip64_6.dll, hipblas.dll, rocblas.dll)
    r"|^(?:amdhip64(?:_\d+)?|hiprtc\w*|amd_comgr\w*|hipblas(?:lt)?|rocblas|hiprand|rocrand|hipfft|rocfft|hipsparse"
    r"|rocsparse|hipsolver|rocsolver|miopen|rccl)\.dll$",
    re.IGNORECASE,
)
# The runtime itself: its own helper kernels (blit kernels for every target it supports, embedded in
# libhsa-runtime64) are not the device code of the package that ships it.
RUNTIME_LIB = re.compile(r"^lib(?:hsa-runtime64|amdhip64|hiprtc[\w-]*|amd_comgr|rocprofiler[\w-]*)(?:-[0-9a-f]{8})?\.so"
                         r"|^(?:amdhip64(?:_\d+)?|hiprtc\w*|amd_comgr\w*)\.dll$", re.IGNORECASE)
# auditwheel's vendored copies: libamdhip64-1a2b3c4d.so.6 is libamdhip64.so.6
VENDORED_HASH = re.compile(r"-[0-9a-f]{8}(?=\.so)")
# The runtime libraries a package may load with dlopen instead of linking (JIT compilers, bindings).
RUNTIME_NAMES = (b"libamdhip64.so", b"libhsa-runtime64.so", b"libhiprtc.so")


WINDOWS_HIP_DLL = re.compile(r"^amdhip64_(\d+)\.dll$", re.IGNORECASE)
# Soname majors of ROCm libraries whose soname moves with the ROCm major: lib -> {soname major: ROCm major}.
# (libhipblaslt, librccl, libhiprand keep or move their sonames independently, so they say nothing.)
ROCM_MAJOR_BY_SONAME: dict[str, dict[str, int]] = {
    "libamdhip64": {"5": 5, "6": 6, "7": 7},
    "libhiprtc": {"5": 5, "6": 6, "7": 7},
    "libhipblas": {"0": 5, "1": 5, "2": 6, "3": 7},
    "librocblas": {"3": 5, "4": 6, "5": 7},
}


@dataclass
class ElfInfo:
    machine: str = ""
    soname: str | None = None
    needed: list[str] = field(default_factory=list)
    bundles: list[tuple[str, Bundle]] = field(default_factory=list)  # (section, bundle)
    code_objects: list[tuple[str, CodeObject]] = field(default_factory=list)  # (section or "(file)", object)
    runtime_kernels: int = 0  # code objects of the ROCm runtime's own (not counted as device code)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)  # ROCm runtime libraries named in its data (dlopen)
    versions: list[str] = field(default_factory=list)  # symbol versions it needs: GLIBC_2.34, GLIBCXX_3.4.30, ...
    problems: list[Finding] = field(default_factory=list)  # what reading it found wrong

    @property
    def has_device_code(self) -> bool:
        return bool(self.bundles or self.code_objects)

    @property
    def targets(self) -> list[TargetId]:
        """Every target some device code here is for, bundles and code objects alike."""
        found = [t for _, b in self.bundles for t in b.targets]
        return found + [co.target for _, co in self.code_objects if co.target is not None]

    @property
    def cuda(self) -> list[str]:
        return [n for n in self.needed if CUDA_LIB.match(n)]

    @property
    def rocm(self) -> dict[str, str | None]:
        """ROCm libraries needed, with the soname version (libamdhip64.so.6 -> "6")."""
        out = {}
        for name in self.needed:
            if ROCM_LIB.match(name):
                _, _, version = name.partition(".so.")
                out[name] = version or None
        return out


    @property
    def rocm_majors(self) -> dict[str, int]:
        """The ROCm major each needed library names (libamdhip64.so.6 -> 6), where its soname says it."""
        out = {}
        for name, version in self.rocm.items():
            if m := WINDOWS_HIP_DLL.match(name):  # the HIP SDK's amdhip64_6.dll is HIP 6
                out[name] = int(m.group(1))
                continue
            lib = VENDORED_HASH.sub("", name).partition(".so")[0]
            major = ROCM_MAJOR_BY_SONAME.get(lib, {}).get((version or "").split(".")[0])
            if major is not None:
                out[name] = major
        return out


def inspect_elf(path: Path, name: str | None = None) -> ElfInfo:
    """`name`: the file's name as shipped (a wheel member is read from a temporary copy)."""
    info = ElfInfo()
    fatbins: list[tuple[str, int, int]] = []
    sections: list[tuple[str, int, int]] = []
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if len(head) >= 20 and int.from_bytes(head[18:20], "little") == EM_AMDGPU:
                return _code_object_file(path, info)
            fh.seek(0)
            elf = ELFFile(fh)
            info.machine = str(elf["e_machine"])
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        # pyelftools sets `needed`, `soname`, `rpath`, `runpath` on those tags only (untyped)
                        named: Any = tag
                        kind = tag.entry.d_tag
                        if kind == "DT_NEEDED":
                            info.needed.append(str(named.needed))
                        elif kind == "DT_SONAME":
                            info.soname = str(named.soname)
                        elif kind == "DT_RPATH":
                            info.rpath += [p for p in str(named.rpath).split(":") if p]
                        elif kind == "DT_RUNPATH":
                            info.runpath += [p for p in str(named.runpath).split(":") if p]
                if isinstance(section, GNUVerNeedSection):
                    info.versions += [str(aux.name) for _, auxes in section.iter_versions() for aux in auxes]
                if section["sh_type"] != "SHT_NOBITS" and section["sh_size"]:
                    sections.append((section.name, section["sh_offset"], section["sh_size"]))
                if FATBIN_SECTION.match(section.name) and section["sh_type"] != "SHT_NOBITS":
                    fatbins.append((section.name, section["sh_offset"], section["sh_size"]))
    except (ELFError, ValueError, KeyError, OSError, struct.error) as exc:
        info.problems.append(Finding("unreadable_elf", {"reason": _why(exc)}))
        return info
    runtime = bool(RUNTIME_LIB.match(info.soname or "") or RUNTIME_LIB.match(Path(name or path.name).name))
    _scan(path, fatbins, sections, info, runtime)
    return info


def _code_object_file(path: Path, info: ElfInfo) -> ElfInfo:
    """A file that is itself a GPU code object (.co, .hsaco): its target is in its header."""
    info.machine = "EM_AMDGPU"
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        co = parse_code_object(mm, 0, len(mm))
    if co is None:
        info.problems.append(Finding("broken_code_object"))
    else:
        info.code_objects.append(("(file)", co))
        if co.target is None:
            info.problems.append(Finding("unknown_processor", {"mach": co.mach}))
    return info


def _why(exc: BaseException) -> str:
    """A reason a reader understands ("[Errno 22] Invalid argument" says nothing)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} (the file may be truncated or not a real ELF file)"
    return str(exc) or type(exc).__name__


def section_at(sections: list[tuple[str, int, int]], offset: int) -> str:
    for name, start, size in sections:
        if start <= offset < start + size:
            return name
    return "(no section)"


def _scan(path: Path, fatbins: list[tuple[str, int, int]], sections: list[tuple[str, int, int]], info: ElfInfo,
          runtime: bool) -> None:
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for name, offset, length in fatbins:
            bundles, problems = find_bundles(mm, offset, min(offset + length, size), strict=True, section=name)
            info.bundles += [(name, b) for b in bundles]
            info.problems += problems
            if not bundles and not problems and length > 0:
                info.problems.append(Finding("empty_fatbin", {"section": name, "size": length}))
        # Outside .hip_fatbin a magic may be an ordinary string (the HIP runtime
        # itself contains one): there only headers that parse completely count.
        start = 0
        for lo, hi in sorted((o, min(o + n, size)) for _, o, n in fatbins) + [(size, size)]:
            if lo > start:
                others, _ = find_bundles(mm, start, lo, strict=False)
                info.bundles += [(section_at(sections, b.offset), b) for b in others]
            start = max(start, hi)
        # Code objects not in a bundle: in .rodata, say, loaded with hipModuleLoadData. Those inside the
        # bundles just read are their entries, not more device code.
        skip = [(b.offset, b.offset + b.size) for _, b in info.bundles]
        embedded = find_code_objects(mm, 0, size, skip)
        if runtime:
            info.runtime_kernels = len(embedded)
        else:
            info.code_objects += [(section_at(sections, co.offset), co) for co in embedded]
        if not runtime and not any(RUNTIME_LIB.match(n) for n in info.needed):
            info.loads = sorted({n.decode() for n in RUNTIME_NAMES if mm.find(n) != -1})
