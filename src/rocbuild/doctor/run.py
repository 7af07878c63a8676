"""`rocbuild doctor`: every check in order, and its report as text or JSON."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rocbuild.doctor.facts as facts
from rocbuild.detect.arch import base_gfx, detect_archs
from rocbuild.detect.rocm import find_rocm
from rocbuild.detect.torch import probe_python
from rocbuild.doctor.facts import IGPU_ARCHS
from rocbuild.doctor.host import access_checks, distributed_check, gpu_checks, is_wsl, rocm_checks, wsl_check
from rocbuild.doctor.model import STATUSES, DoctorCheck, Identity
from rocbuild.doctor.pyenv import extension_check, torch_checks
from rocbuild.errors import HostNotReady


@dataclass
class Inputs:
    root: Path | None = None  # a tree standing in for / (its sys/, dev/, proc/, etc/group); None: this machine
    rocminfo: Path | None = None
    rocm: str | None = None
    python: str | None = None
    environ: dict[str, str] = field(default_factory=dict)  # the environment rocbuild was started with
    identity: Identity = field(default_factory=Identity.current)


def run_doctor(inputs: Inputs) -> list[DoctorCheck]:
    machine = inputs.root or Path("/")
    detection = detect_archs(None, rocminfo_file=inputs.rocminfo, sysfs_root=inputs.root, environ=inputs.environ)
    try:
        rocm, problem = find_rocm(inputs.rocm, inputs.environ, python=inputs.python or sys.executable), None
    except HostNotReady as exc:  # ROCM_PATH set to something that is not ROCm: a finding, not a crash
        rocm, problem = None, exc.message
    amd_host = bool(detection.gpus) or rocm is not None
    wsl = is_wsl(machine, {} if inputs.root else inputs.environ)

    checks = rocm_checks(rocm, problem, bool(detection.gpus), facts.read_os_release(machine))
    checks += gpu_checks(detection, rocm)
    checks += access_checks(machine, inputs.identity, wsl, expect_gpu=bool(detection.gpus))
    checks.append(wsl_check(wsl))

    python = inputs.python or sys.executable
    env = probe_python(python)
    if isinstance(env, str):
        checks.append(DoctorCheck("torch", "fail", env, "give a working interpreter with --python PY"))
        checks += [DoctorCheck(i, "skip", "the target python could not be probed") for i in ("torch-rocm-version", "extensions")]
    else:
        checks += torch_checks(env, rocm, amd_host)
        checks.append(extension_check(env, _extension_targets(detection.archs), rocm))
    checks.append(distributed_check(detection, wsl))
    checks.append(confine_check(inputs))
    return checks


def confine_check(inputs: Inputs) -> DoctorCheck:
    """Whether build steps can run confined here (bubblewrap), and what to change where they cannot."""
    from rocbuild.detect.confine import find_confinement
    from rocbuild.roots.info import root_from_environ

    if inputs.root is not None:
        return DoctorCheck("confinement", "skip", "not looked at for a tree standing in for the machine")
    found = find_confinement(asked=True, root=root_from_environ(inputs.environ), environ=inputs.environ)
    if found.on:
        return DoctorCheck("confinement", "ok", f"build steps run confined: {found.why} (no network, no GPU, the "
                           "machine read-only but the work folder, no home, only the plan's environment)",
                           details=found.to_json())
    return DoctorCheck("confinement", "warn", f"build steps cannot be confined here: {found.why}",
                       "a build still runs, unconfined, and says so; install bubblewrap and allow user namespaces "
                       "for confined builds (--no-confine silences this)", details=found.to_json())


def _extension_targets(archs: list[str]) -> list[str]:
    """The GPUs extensions must run on: an iGPU next to a discrete card is hidden, not targeted."""
    discrete = [a for a in archs if base_gfx(a) not in IGPU_ARCHS]
    return discrete or archs


def _counts(checks: list[DoctorCheck]) -> dict[str, int]:
    return {s: sum(1 for c in checks if c.status == s) for s in STATUSES}


def report_json(checks: list[DoctorCheck]) -> dict[str, Any]:
    counts = _counts(checks)
    return {"ok": counts["fail"] == 0, "counts": counts, "checks": [c.to_json() for c in checks]}


def report_text(checks: list[DoctorCheck]) -> str:
    width = max(len(c.id) for c in checks)
    lines = []
    for c in checks:
        head = f"{c.status.upper() if c.status in ('warn', 'fail') else c.status:<5} {c.id:<{width}}  "
        msg = c.message.splitlines() or [""]
        lines.append(head + msg[0])
        lines += [" " * len(head) + m for m in msg[1:]]
        if c.fix and c.status in ("warn", "fail"):
            fix = c.fix.splitlines()
            lines.append(" " * len(head) + "fix: " + fix[0])
            lines += [" " * (len(head) + 5) + f for f in fix[1:]]
    counts = _counts(checks)
    lines.append(f"{counts['fail']} failed, {counts['warn']} warning(s), {counts['ok']} ok, {counts['skip']} skipped")
    return "\n".join(lines)
