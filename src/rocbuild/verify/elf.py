"""One ELF file: the libraries it needs (DT_NEEDED) and the offload bundles it carries."""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from rocbuild.verify.bundles import Bundle, find_bundles

ELF_MAGIC = b"\x7fELF"
FATBIN_SECTION = re.compile(r"^\.hip_fatbin")

# Libraries only a CUDA build links. Finding one means the extension was built
# against CUDA (for torch extensions: a CUDA torch in pip's build isolation).
CUDA_LIB = re.compile(
    r"^lib(?:cuda|cudart|c10_cuda|torch_cuda(?:_cpp|_cu|_linalg)?|cublas(?:Lt)?|cufft\w*|curand|cusparse(?:Lt)?"
    r"|cusolver\w*|cudnn\w*|nccl|nvrtc\w*|nvToolsExt|nvJitLink|cupti|nvidia-ml|cufile\w*)\.so"
)
ROCM_LIB = re.compile(
    r"^lib(?:amdhip64|hiprtc\w*|hsa-runtime64|amd_comgr|hsakmt|rocblas|hipblas|hipblaslt|rocrand|hiprand|rccl"
    r"|MIOpen|rocsparse|hipsparse(?:lt)?|rocsolver|hipsolver|rocfft|hipfft|roctx64|roctracer64|rocm_smi64"
    r"|amd_smi|c10_hip|torch_hip|rocprofiler\w*|migraphx\w*|hipsparselt|rocm-core)\.so"
)


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
    problems: list[str] = field(default_factory=list)

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
            lib = name.partition(".so")[0]
            major = ROCM_MAJOR_BY_SONAME.get(lib, {}).get((version or "").split(".")[0])
            if major is not None:
                out[name] = major
        return out


def inspect_elf(path: Path) -> ElfInfo:
    info = ElfInfo()
    fatbins: list[tuple[str, int, int]] = []
    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            info.machine = str(elf["e_machine"])
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        # pyelftools sets `needed` and `soname` on the tags of those kinds only (untyped)
                        named: Any = tag
                        if tag.entry.d_tag == "DT_NEEDED":
                            info.needed.append(str(named.needed))
                        elif tag.entry.d_tag == "DT_SONAME":
                            info.soname = str(named.soname)
                if FATBIN_SECTION.match(section.name) and section["sh_type"] != "SHT_NOBITS":
                    fatbins.append((section.name, section["sh_offset"], section["sh_size"]))
    except (ELFError, ValueError, KeyError, OSError) as exc:
        info.problems.append(f"not a readable ELF file: {exc}")
        return info
    _scan(path, fatbins, info)
    return info


def _scan(path: Path, fatbins: list[tuple[str, int, int]], info: ElfInfo) -> None:
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for name, offset, length in fatbins:
            bundles, problems = find_bundles(mm, offset, min(offset + length, size), strict=True)
            info.bundles += [(name, b) for b in bundles]
            info.problems += [f"{name}: {p}" for p in problems]
            if not bundles and not problems and length > 0:
                info.problems.append(f"{name} holds {length} bytes but no offload bundle")
        # Outside .hip_fatbin a magic may be an ordinary string (the HIP runtime
        # itself contains one): there only headers that parse completely count.
        start = 0
        for lo, hi in sorted((o, min(o + n, size)) for _, o, n in fatbins) + [(size, size)]:
            if lo > start:
                others, _ = find_bundles(mm, start, lo, strict=False)
                info.bundles += [("(outside .hip_fatbin)", b) for b in others]
            start = max(start, hi)
