"""Doctor checks of the target Python: its torch, and the extension modules installed in it."""

from __future__ import annotations

import csv
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rocbuild.doctor.facts as facts
from rocbuild.detect.rocm import Rocm
from rocbuild.detect.torch import PythonEnv, TorchInfo, rocm_torch_install
from rocbuild.doctor.model import DoctorCheck
from rocbuild.verify.bundles import TargetId
from rocbuild.verify.elf import ELF_MAGIC
from rocbuild.verify.inputs import inspect_file
from rocbuild.verify.rules import judged_file

# Judged by the torch check, not file by file: torch's own libraries and the
# CUDA runtime wheels a CUDA torch pulls in.
SKIP_TOP = ("torch", "nvidia", "torch.libs")


def torch_checks(env: PythonEnv, rocm: Rocm | None, amd_host: bool) -> list[DoctorCheck]:
    py = env.executable
    install = rocm_torch_install(py, rocm.version if rocm else None, externally_managed=env.externally_managed)
    torch = env.torch
    if torch is None:
        status = "warn" if amd_host else "skip"
        return [DoctorCheck("torch", status, f"no torch in {py} ({env.version}): torch extensions (mamba-ssm, "
                      "causal-conv1d, bitsandbytes) need a ROCm torch there", install if amd_host else ""),
                DoctorCheck("torch-rocm-version", "skip", "no torch")]
    details = torch.to_json()
    if torch.flavour == "rocm":
        first = DoctorCheck("torch", "ok", torch.describe(), details=details)
    elif torch.flavour == "unknown":
        first = DoctorCheck("torch", "warn", torch.describe(), f"reinstall torch: {install}", details)
    elif amd_host and torch.flavour == "cpu":
        first = DoctorCheck("torch", "fail", f"{torch.describe()}: it cannot use any GPU (torch.cuda.is_available() "
                      "== False), and extensions built against it get no GPU code", install, details)
    elif amd_host:
        symptoms = ("ImportError: libcudart.so / libc10_cuda.so, 'no kernel image is available', or "
                    "torch.cuda.is_available() == False on an AMD GPU")
        first = DoctorCheck("torch", "fail", f"{torch.describe()}: it cannot use an AMD GPU ({symptoms}), and "
                      "extensions built against it link CUDA", install, details)
    else:
        first = DoctorCheck("torch", "warn", f"{torch.describe()}: ROCm extensions cannot be built against it",
                      install, details)
    return [first, _torch_rocm(torch, rocm, install)]


def _torch_rocm(torch: TorchInfo, rocm: Rocm | None, install: str) -> DoctorCheck:
    built = torch.rocm_version
    if torch.flavour != "rocm" or built is None:
        return DoctorCheck("torch-rocm-version", "skip", "torch is not a ROCm build")
    if rocm is None or rocm.version is None:
        return DoctorCheck("torch-rocm-version", "skip", f"torch was built with ROCm {built}; the system's is unknown")
    system = rocm.version.short
    message = f"torch was built with ROCm {built}, the system has ROCm {system}"
    if built == system:
        return DoctorCheck("torch-rocm-version", "ok", message)
    detail = {"torch": built, "system": system}
    if built.split(".")[0] != system.split(".")[0]:
        return DoctorCheck("torch-rocm-version", "fail", message + ": extensions compiled with this ROCm's headers "
                     "will not load against torch's ROCm libraries", install, detail)
    return DoctorCheck("torch-rocm-version", "warn", message + ": usually fine for running; extensions are "
                 "compiled with the system's headers", install, detail)


@dataclass
class Owner:
    name: str
    version: str


def _owners(site: Path) -> dict[str, Owner]:
    """Installed file (relative to site-packages) -> its distribution, from each RECORD."""
    out: dict[str, Owner] = {}
    for record in site.glob("*.dist-info/RECORD"):
        stem = record.parent.name[: -len(".dist-info")]
        name, _, version = stem.partition("-")
        try:
            with open(record, newline="", encoding="utf-8", errors="replace") as fh:
                for row in csv.reader(fh):
                    if row:
                        out[os.path.normpath(row[0])] = Owner(name, version)
        except OSError:
            continue
    return out


def _shared_objects(site: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(site):
        if Path(dirpath) == site:
            dirnames[:] = [d for d in dirnames if d not in SKIP_TOP and not d.startswith("nvidia_")
                           and not d.endswith((".dist-info", ".egg-info"))]
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".so") or ".so." in name:
                path = Path(dirpath) / name
                if path.is_file() and not path.is_symlink():
                    yield path


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ELF_MAGIC
    except OSError:
        return False


def extension_check(env: PythonEnv, archs: list[str], rocm: Rocm | None) -> DoctorCheck:
    targets = [t for t in (TargetId.parse(a) for a in archs) if t is not None]
    py = env.executable
    arch_arg = f" --arch {','.join(archs)}" if archs else ""
    scanned = 0
    bad: list[dict[str, Any]] = []
    for site_dir in env.site_packages:
        site = Path(site_dir)
        owners = _owners(site)
        for path in _shared_objects(site):
            if not _is_elf(path):
                continue
            rel = str(path.relative_to(site))
            found = judged_file(inspect_file(rel, path), targets)
            scanned += 1
            if found.info.cuda or any(v == "missing" for v in found.coverage.values()):
                owner = owners.get(os.path.normpath(rel))
                bad.append({"file": str(path), "path": rel, "problems": found.problems,
                            "distribution": owner.name if owner else None,
                            "version": owner.version if owner else None,
                            "fix": _rebuild(rel, owner, py, arch_arg, rocm)})
    where = ", ".join(env.site_packages) or "(no site-packages)"
    if not bad:
        judged = f"device code covers {', '.join(archs)}" if archs else "no GPU here, so device code not judged"
        return DoctorCheck("extensions", "ok", f"{scanned} extension file(s) in {where}: none links CUDA; {judged}",
                     details={"scanned": scanned})
    lines = []
    for b in bad:
        who = f" (from {b['distribution']} {b['version']})" if b["distribution"] else ""
        lines.append(f"{b['file']}{who}: {b['problems'][0]}")
    fixes = []
    for b in bad:
        if b["fix"] not in fixes:
            fixes.append(b["fix"])
    return DoctorCheck("extensions", "fail", f"{len(bad)} of {scanned} extension file(s) cannot run on this ROCm "
                 "host:\n" + "\n".join(lines), "\n".join(fixes), {"scanned": scanned, "files": bad})


def _rebuild(rel: str, owner: Owner | None, py: str, arch_arg: str, rocm: Rocm | None) -> str:
    recipe = facts.recipe_for(rel)
    if recipe is not None:
        dist = (owner.name if owner else recipe.replace("-", "_"))
        return (f"rocbuild {recipe} --python {shlex.quote(py)}{arch_arg} && {shlex.quote(py)} -m pip install "
                f"--force-reinstall --no-deps wheelhouse/{dist}-*.whl")
    top = rel.split("/", 1)[0]
    if owner and owner.name.lower() in facts.TORCH_FAMILY or top in facts.TORCH_FAMILY:
        return rocm_torch_install(py, rocm.version if rocm else None)
    if owner:
        return (f"rebuild {owner.name} against the ROCm torch: {shlex.quote(py)} -m pip install --force-reinstall "
                f"--no-deps --no-build-isolation --no-binary {owner.name} {owner.name}=={owner.version} "
                "(or write a rocbuild recipe for it: rocbuild recipes show hello-hip is a small example)")
    return f"rebuild the project that installed {rel} from source, against a ROCm torch, with --no-build-isolation"
