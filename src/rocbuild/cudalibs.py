"""The libraries only a CUDA build links, and what an ELF file needs: a leaf, for the device-code check (verify/elf)
and the trap catalogue, which finds CUDA binaries an sdist packs (draft/traps)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# Libraries only a CUDA build links. Finding one means the extension was built
# against CUDA (for torch extensions: a CUDA torch in pip's build isolation).
CUDA_LIB = re.compile(
    r"^lib(?:cuda|cudart|c10_cuda|torch_cuda(?:_cpp|_cu|_linalg)?|cublas(?:Lt)?|cufft\w*|curand|cusparse(?:Lt)?"
    r"|cusolver\w*|cudnn\w*|nccl|nvrtc\w*|nvToolsExt|nvJitLink|cupti|nvidia-ml|cufile\w*)(?:-[0-9a-f]{8})?\.so"
    # and their Windows DLLs (cudart64_12.dll, cublas64_12.dll, nvrtc64_120_0.dll)
    r"|^(?:cudart|cublas(?:Lt)?|cufft\w*|curand|cusparse|cusolver\w*|cudnn\w*|nvrtc\w*|nvToolsExt|nvJitLink)64_\w+\.dll$",
    re.IGNORECASE,
)


def needed(path: Path) -> list[str]:
    """The DT_NEEDED entries of an ELF file; none for a file that is not one."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        with path.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                return []
            f.seek(0)
            dynamic = next((s for s in ELFFile(f).iter_sections() if isinstance(s, DynamicSection)), None)
            tags: list[Any] = list(dynamic.iter_tags()) if dynamic is not None else []  # pyelftools: untyped
            return [t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"]
    except (ELFError, OSError):
        return []
