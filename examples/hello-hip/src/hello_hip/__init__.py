"""hello-hip: a HIP saxpy kernel callable from Python.

Importing needs the HIP runtime library, not a GPU. Functions that need a
device raise NoDeviceError with the runtime's reason when there is none.
"""

from __future__ import annotations

from hello_hip._core import TARGETS, NoDeviceError
from hello_hip._core import devices as _devices
from hello_hip._core import runtime_version
from hello_hip._core import saxpy as _saxpy

__version__ = "0.1.0"
__all__ = ["NoDeviceError", "built_for", "devices", "runtime_version", "saxpy", "status"]


def built_for() -> list[str]:
    """The gfx targets this build carries code objects for."""
    return [t for t in TARGETS.split(",") if t]


def devices() -> list[tuple[int, str, str]]:
    """(index, name, gfx arch) of each visible device; raises NoDeviceError when there is none."""
    found = _devices()
    if not found:
        raise NoDeviceError("the HIP runtime reports no devices")
    return found


def saxpy(a: float, x, y) -> list[float]:
    """a*x + y, elementwise, computed on device 0."""
    return _saxpy(a, x, y)


def status() -> str:
    """A few lines saying what this build targets and what it can run on here."""
    lines = [f"hello-hip {__version__}: code objects for {', '.join(built_for()) or 'no recorded target'}"]
    try:
        found = devices()
    except NoDeviceError as exc:
        lines.append(f"no HIP device here ({exc}); the kernels run on a machine with one of those GPUs")
        return "\n".join(lines)
    targets = set(built_for())
    for index, name, arch in found:
        base = arch.split(":")[0]
        verdict = "supported" if base in targets else "NOT in this build (rebuild with --arch " + base + ")"
        lines.append(f"device {index}: {name} ({arch}): {verdict}")
    if any(arch.split(":")[0] in targets for _, _, arch in found):
        lines.append(f"saxpy(2, [1, 2, 3], [10, 20, 30]) = {saxpy(2.0, [1, 2, 3], [10, 20, 30])}")
    return "\n".join(lines)
