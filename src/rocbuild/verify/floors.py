"""Where a wheel installs: its tags (PEP 427's python, ABI and platform), and the oldest C library and C++
runtime its binaries can load with, read from the symbol versions they need (GLIBC_2.x, GLIBCXX_3.4.x);
and whether a given Python (this machine's python3, say) can install it, and if not, what it would take."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rocbuild.detect.python import Interpreter

VERSIONED = re.compile(r"^(GLIBC|GLIBCXX)_(\d+(?:\.\d+)*)$")
# libstdc++'s symbol version -> the GCC release that first shipped it (libstdc++'s ABI policy table).
GLIBCXX_GCC = {26: "GCC 9", 28: "GCC 10", 29: "GCC 11", 30: "GCC 12", 31: "GCC 13", 32: "GCC 14", 33: "GCC 15"}
WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


@dataclass(frozen=True)
class Floors:
    python: str  # the wheel's python tag, e.g. cp314 (py3: any)
    abi: str
    platform: str  # linux_x86_64, manylinux_2_28_x86_64, any
    glibc: tuple[int, ...] | None  # the highest GLIBC_ version its binaries need; None: they need none
    glibcxx: tuple[int, ...] | None  # the highest GLIBCXX_ version; None: no libstdc++ needed

    def describe(self) -> str:
        parts = [f"python {self.python}, {self.platform}"]
        if self.glibc:
            parts.append(f"glibc >= {_dotted(self.glibc)}")
        if self.glibcxx:
            gcc = GLIBCXX_GCC.get(self.glibcxx[-1]) if len(self.glibcxx) == 3 else None
            parts.append(f"libstdc++ >= GLIBCXX_{_dotted(self.glibcxx)}" + (f" ({gcc})" if gcc else ""))
        return ", ".join(parts)

    def to_json(self) -> dict[str, str | None]:
        return {"python": self.python, "abi": self.abi, "platform": self.platform,
                "glibc": _dotted(self.glibc) if self.glibc else None,
                "glibcxx": _dotted(self.glibcxx) if self.glibcxx else None}


def floors_of(wheel_name: str, versions: Iterable[str]) -> Floors | None:
    """`versions`: the symbol versions every binary of the wheel needs. None: not a wheel's file name."""
    m = WHEEL_NAME.match(wheel_name)
    if m is None:
        return None
    highest: dict[str, tuple[int, ...]] = {}
    for v in versions:
        found = VERSIONED.match(v)
        if found:
            number = tuple(int(x) for x in found.group(2).split("."))
            highest[found.group(1)] = max(highest.get(found.group(1), ()), number)
    return Floors(m["python"], m["abi"], m["plat"], highest.get("GLIBC"), highest.get("GLIBCXX"))


def installs_on(floors: Floors, py: Interpreter) -> str | None:
    """None when `py` can install and load the wheel (as far as tags and glibc say); else why not."""
    tag = f"cp{py.version[0]}{py.version[1]}"
    wanted = floors.python.split(".")  # a compressed tag set, e.g. py2.py3
    if not any(t in (tag, "py3", f"py{py.version[0]}{py.version[1]}") or _abi3_fits(t, floors.abi, py) for t in wanted):
        return f"it is for {floors.python}, and {py.executable} is CPython {py.version[0]}.{py.version[1]}"
    if floors.platform != "any" and not floors.platform.endswith(py.machine):
        return f"it is for {floors.platform}, and {py.executable} runs on {py.machine}"
    needs = floors.glibc or _manylinux_glibc(floors.platform)
    if needs and py.glibc is not None and py.glibc < needs:
        return f"it needs glibc {_dotted(needs)}, and this machine has {_dotted(py.glibc)}"
    if needs and py.glibc is None:
        return "it needs glibc, and this machine has another C library"
    return None


def what_it_takes(floors: Floors, py: Interpreter) -> str:
    """The way to a wheel `py` installs, after installs_on said no."""
    if installs_on(Floors(floors.python, floors.abi, floors.platform, None, floors.glibcxx), py) is not None:
        # Built on this machine for that python, it also gets this machine's glibc.
        return f"build it for that Python on this machine (without --root): --python {py.executable}"
    glibc = _dotted(py.glibc) if py.glibc else "this machine's"
    return f"build it where glibc is {glibc} or older: on this machine (without --root), or in a root of an older suite"


def _abi3_fits(tag: str, abi: str, py: Interpreter) -> bool:
    m = re.fullmatch(r"cp(\d)(\d+)", tag)
    return abi == "abi3" and m is not None and (int(m[1]), int(m[2])) <= py.version


def _manylinux_glibc(platform: str) -> tuple[int, ...] | None:
    m = re.match(r"manylinux_(\d+)_(\d+)_", platform)
    return (int(m[1]), int(m[2])) if m else None


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))
