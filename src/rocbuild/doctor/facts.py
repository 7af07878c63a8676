"""What doctor's judgements rest on: support tables, iGPU targets, rebuild commands."""

from __future__ import annotations

import fnmatch
from pathlib import Path

# Official Linux GPU support per ROCm release, from AMD's "System requirements
# (Linux)" pages (rocm.docs.amd.com, compatibility matrix) for each release:
# 6.0-6.3 and 6.4.0: gfx908 gfx90a gfx942 gfx1030 gfx1100; 6.4.1 adds gfx1101,
# gfx1200 and gfx1201; 7.0 adds gfx950. Earlier releases are not tabled here.
_BASE = ("gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100")
SUPPORT = (
    ((6, 0, 0), _BASE),
    ((6, 4, 1), _BASE + ("gfx1101", "gfx1200", "gfx1201")),
    ((7, 0, 0), _BASE + ("gfx1101", "gfx1200", "gfx1201", "gfx950")),
)


def supported_archs(version: tuple[int, int, int]) -> tuple[str, ...] | None:
    """The officially supported gfx targets of a ROCm release; None when not tabled (before 6.0)."""
    found = None
    for since, archs in SUPPORT:
        if version >= since:
            found = archs
    return found


# Integrated GPUs (APUs): a visible iGPU next to a discrete card confuses
# device numbering and RCCL.
IGPU_ARCHS = frozenset({
    "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035", "gfx1036", "gfx1037",
    "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
})
# Consumer (Radeon) discrete families: RDNA 1-4. Instinct parts are gfx9.
CONSUMER_PREFIXES = ("gfx10", "gfx11", "gfx12")

# The override people use for an unsupported card of a supported family, and
# the target wheels must then be built for.
OVERRIDES = (
    (("gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"), "10.3.0", "gfx1030"),
    (("gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151"), "11.0.0", "gfx1100"),
)


def override_for(gfx: str) -> tuple[str, str] | None:
    for members, value, target in OVERRIDES:
        if gfx in members:
            return value, target
    return None


def is_consumer_dgpu(gfx: str) -> bool:
    return gfx.startswith(CONSUMER_PREFIXES) and gfx not in IGPU_ARCHS


# Extension files whose project has a rocbuild recipe: (glob on the path inside
# site-packages, recipe). Globs are matched case-sensitively.
RECIPE_FOR_FILE = (
    ("selective_scan_cuda*.so", "mamba-ssm"),
    ("causal_conv1d_cuda*.so", "causal-conv1d"),
    ("bitsandbytes/*.so", "bitsandbytes"),
    ("horovod/*", "horovod"),
    ("hello_hip/*", "hello-hip"),
)
# Binary parts of the torch family: replaced from the same ROCm index as torch.
TORCH_FAMILY = ("torchvision", "torchaudio", "torchtext", "torchdata")


def recipe_for(path: str) -> str | None:
    for pattern, recipe in RECIPE_FOR_FILE:
        if fnmatch.fnmatchcase(path, pattern):
            return recipe
    return None


def read_os_release(root: Path) -> dict[str, str]:
    """The distribution's /etc/os-release (or /usr/lib/os-release) under `root`, and Debian's
    /etc/debian_version as DEBIAN_VERSION (it tells sid from testing)."""
    out: dict[str, str] = {}
    for name in ("etc/os-release", "usr/lib/os-release"):
        try:
            text = (root / name).read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                out[key.strip()] = value.strip().strip('"')
        break
    try:
        out["DEBIAN_VERSION"] = (root / "etc/debian_version").read_text(errors="replace").strip()
    except OSError:
        pass
    return out


def rccl_install_hint(release: dict[str, str]) -> str:
    """How to get RCCL's headers on this distribution release (Debian's archive as of Nov 2026)."""
    distro, version = release.get("ID", ""), release.get("VERSION_ID", "")
    amd = "rccl-dev from AMD's ROCm apt repository (repo.radeon.com), matching the installed ROCm"
    if distro == "debian":
        if version == "12":
            return f"Debian 12 packages no RCCL: install {amd}"
        if version == "13":
            return "apt-get install librccl-dev (RCCL 5.4, built for Debian 13's ROCm)"
        if not version:  # testing or sid
            return ("sid's librccl-dev (RCCL 5.4) does not install next to sid's ROCm 6.4; RCCL 7.2.4 is in "
                    "experimental, with ROCm 7.2: apt-get install -t experimental librccl-dev (and the rest of "
                    "ROCm from experimental)")
    if distro == "ubuntu" and version[:2].isdigit() and int(version[:2]) >= 24:
        return f"apt-get install librccl-dev (Ubuntu {version}'s), or {amd}"
    name = release.get("PRETTY_NAME") or distro or "this system"
    return f"on {name}: {amd}"
