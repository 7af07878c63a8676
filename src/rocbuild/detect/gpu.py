"""Can code run on a GPU here? Decides whether verify's `import:` checks run or are skipped."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GpuAccess:
    usable: bool
    reason: str


def gpu_access(root: Path = Path("/")) -> GpuAccess:
    """The HIP runtime needs /dev/kfd (the amdgpu compute interface) readable and writable."""
    kfd = root / "dev" / "kfd"
    if not kfd.exists():
        return GpuAccess(False, f"no GPU: {kfd} does not exist (no amdgpu driver loaded, or a container "
                                "started without --device=/dev/kfd)")
    if not os.access(kfd, os.R_OK | os.W_OK):
        return GpuAccess(False, f"{kfd} exists but this user cannot open it (join the render and video groups)")
    return GpuAccess(True, f"{kfd} is usable")
