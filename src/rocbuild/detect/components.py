"""The versions of the ROCm components a build can see (hipblas, rocprim, rocblas, rccl, ...), for the
build identity: a component that changes (an upgrade, a downgrade) makes the build run again.

On a machine's own ROCm they come from the CMake package configs under its prefix (PACKAGE_VERSION in
each `<name>-config-version.cmake`); in a build root from dpkg's list (roots/store.py), which also knows
the header-only libraries and those without a CMake package."""

from __future__ import annotations

import re
from pathlib import Path

from rocbuild.detect.rocm import Rocm

# CMake packages that are ROCm components: a distro's cmake folder also holds everyone else's.
ROCM_COMPONENT = re.compile(
    r"^(?:hip\w*|roc\w+|rccl|miopen|migraphx|hsa-runtime64|hsakmt|amd_comgr|amd_smi|composable_kernel|"
    r"ck_tile|rocm[\w-]*|hipcub|hipblas\w*|hipfft|hiprand|hipsparse\w*|hipsolver|hiptensor|roctracer|rocprofiler\w*)$",
    re.IGNORECASE)
PACKAGE_VERSION = re.compile(r'set\s*\(\s*PACKAGE_VERSION\s+"?([0-9][^")\s]*)"?\s*\)', re.IGNORECASE)


def cmake_component_versions(rocm: Rocm) -> dict[str, str]:
    """{package: version} of every ROCm component with a CMake package under the prefix's cmake folders."""
    out: dict[str, str] = {}
    for root in rocm.cmake_roots:
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and ROCM_COMPONENT.match(p.name)):
            version = _config_version(folder)
            if version is not None and folder.name.lower() not in out:
                out[folder.name.lower()] = version
    return out


def _config_version(folder: Path) -> str | None:
    for name in (f"{folder.name}-config-version.cmake", f"{folder.name}ConfigVersion.cmake"):
        for candidate in (folder / name, folder / name.lower()):
            try:
                m = PACKAGE_VERSION.search(candidate.read_text(errors="replace")[:20000])
            except OSError:
                continue
            if m:
                return m.group(1)
    return None
