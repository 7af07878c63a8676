"""Doctor checks of the machine: ROCm, GPUs and their support, device access, WSL, RCCL."""

from __future__ import annotations

from pathlib import Path

import rocbuild.doctor.facts as facts
from rocbuild.detect.arch import ArchDetection
from rocbuild.detect.rocm import Rocm
from rocbuild.doctor.model import DoctorCheck, Groups, Identity, can_open

ROCM_INSTALL = ("install ROCm (https://rocm.docs.amd.com, `amdgpu-install --usecase=rocm`) or the distro "
                "toolchain: apt-get install hipcc libamdhip64-dev rocm-device-libs rocminfo")
JOIN_GROUPS = "sudo usermod -aG render,video $USER   # then log out and in again"
CONTAINER_FLAGS = "--device=/dev/kfd --device=/dev/dri --group-add video --security-opt seccomp=unconfined"


def rocm_checks(rocm: Rocm | None, problem: str | None, amd_gpu: bool,
                release: dict[str, str] | None = None) -> list[DoctorCheck]:
    """`release`: the distribution's os-release fields (the RCCL hint depends on them)."""
    if rocm is None:
        why = problem or "no ROCm found (ROCM_PATH, ROCM_HOME, hipcc on PATH, /opt/rocm, /usr)"
        status = "fail" if amd_gpu or problem else "warn"
        skipped = [DoctorCheck(i, "skip", "no ROCm") for i in ("hip-compiler", "findhip", "hip-lang", "rccl-headers")]
        return [DoctorCheck("rocm", status, why, ROCM_INSTALL + "\nor point rocbuild at it: --rocm PATH / ROCM_PATH")] + skipped
    version = str(rocm.version) if rocm.version else "unknown version"
    out = [DoctorCheck("rocm", "ok" if rocm.version else "warn",
                 f"ROCm {version} at {rocm.path} ({rocm.layout} layout, found by {rocm.found_by}; "
                 f"version from {rocm.version_source})",
                 "" if rocm.version else f"add {rocm.path}/.info/version or check `hipconfig --version`",
                 {"path": str(rocm.path), "version": str(rocm.version) if rocm.version else None,
                  "layout": rocm.layout})]

    if rocm.hipcc is None:
        out.append(DoctorCheck("hip-compiler", "fail", f"no hipcc in {rocm.path}/bin",
                         "install the HIP compiler: apt-get install hipcc (distro) or the rocm-hip-sdk package"))
    elif rocm.hip_compiler is None:
        out.append(DoctorCheck("hip-compiler", "warn", f"hipcc at {rocm.hipcc}, but the clang++ it drives was not found",
                         "set HIP_CLANG_PATH to the folder holding HIP's clang++ (CMake's HIP language needs it)"))
    else:
        out.append(DoctorCheck("hip-compiler", "ok", f"hipcc {rocm.hipcc}, HIP clang++ {rocm.hip_compiler}"))

    if rocm.cmake_hip_dir:
        out.append(DoctorCheck("findhip", "ok", f"FindHIP.cmake in {rocm.cmake_hip_dir} (the legacy module hip_add_library "
                                          "comes from; rocbuild links it where a recipe needs it)"))
    else:
        out.append(DoctorCheck("findhip", "warn", f"no FindHIP.cmake under {rocm.path}: projects calling "
                         "hip_add_library (Horovod) fail with 'Unknown CMake command \"hip_add_library\"'",
                         "install the HIP CMake files (package hip-dev / libamdhip64-dev)"))

    if rocm.hip_lang_dir:
        out.append(DoctorCheck("hip-lang", "ok", f"hip-lang CMake package in {rocm.hip_lang_dir} "
                                           "(enable_language(HIP) works)"))
    elif rocm.layout == "distro":
        out.append(DoctorCheck("hip-lang", "warn", f"no hip-lang CMake package under {rocm.path} (distro layout): "
                         "enable_language(HIP) needs -DCMAKE_HIP_COMPILER and -DCMAKE_HIP_COMPILER_ROCM_ROOT",
                         f"rocbuild's cmake steps pass both; by hand: cmake -DCMAKE_HIP_COMPILER="
                         f"{rocm.hip_compiler or '<HIP clang++>'} -DCMAKE_HIP_COMPILER_ROCM_ROOT={rocm.path} ..."))
    else:
        out.append(DoctorCheck("hip-lang", "warn", f"no hip-lang CMake package under {rocm.path}: "
                         "enable_language(HIP) will not configure", "reinstall the hip-devel / hip-dev package"))

    top, sub = rocm.has_header("rccl.h"), rocm.has_header("rccl/rccl.h")
    if sub and top:
        out.append(DoctorCheck("rccl-headers", "ok", "RCCL: both rccl/rccl.h and rccl.h"))
    elif sub:
        out.append(DoctorCheck("rccl-headers", "ok", "RCCL: rccl/rccl.h only (ROCm >= 6.0 layout): code including "
                         "<rccl.h> (Horovod 0.28) needs rewriting, which the horovod recipe does"))
    elif top:
        out.append(DoctorCheck("rccl-headers", "ok", "RCCL: rccl.h at the top of the include folder (pre-6.0 layout)"))
    else:
        out.append(DoctorCheck("rccl-headers", "warn", f"no RCCL headers under {rocm.include_dir or rocm.path}: "
                         "NCCL-style builds (Horovod with NCCL ops) cannot find rccl",
                         "install RCCL: " + facts.rccl_install_hint(release or {})))
    return out


def gpu_checks(detection: ArchDetection, rocm: Rocm | None) -> list[DoctorCheck]:
    out = []
    gpus = detection.gpus
    if gpus:
        listing = "; ".join(f"{g.target_id}{' ' + g.marketing_name if g.marketing_name else ''}" for g in gpus)
        out.append(DoctorCheck("gpus", "ok", f"{len(gpus)} GPU(s) from {detection.source}: {listing}",
                         details={"archs": detection.archs}))
    else:
        out.append(DoctorCheck("gpus", "warn", "no AMD GPU found (rocminfo, KFD sysfs, rocm_agent_enumerator)",
                         "building still works with --arch gfx... (e.g. --arch gfx1100); `rocbuild detect` "
                         "shows what was looked at"))
    out.append(_support(detection, rocm))
    out.append(_override(detection))
    return out


def _support(detection: ArchDetection, rocm: Rocm | None) -> DoctorCheck:
    if not detection.gpus:
        return DoctorCheck("gpu-support", "skip", "no GPU to judge")
    if rocm is None or rocm.version is None:
        return DoctorCheck("gpu-support", "skip", "ROCm release unknown")
    v = rocm.version
    table = facts.supported_archs((v.major, v.minor, v.micro))
    if table is None:
        return DoctorCheck("gpu-support", "skip", f"no support table for ROCm {v} (tabled from 6.0)")
    hardware = detection.override.hardware if detection.override and detection.override.hardware else detection.archs
    unsupported = [a for a in hardware if a not in table]
    if not unsupported:
        return DoctorCheck("gpu-support", "ok", f"{', '.join(hardware)}: officially supported by ROCm {v}")
    fixes = []
    for gfx in unsupported:
        suggestion = facts.override_for(gfx)
        if suggestion:
            value, target = suggestion
            fixes.append(f"{gfx}: export HSA_OVERRIDE_GFX_VERSION={value} (runs as {target}; build with --arch {target})")
        else:
            fixes.append(f"{gfx}: no official support; kernels may still build, but ROCm libraries "
                         "(rocBLAS, MIOpen) may lack code for it")
    return DoctorCheck("gpu-support", "warn", f"{', '.join(unsupported)} not in ROCm {v}'s official support list "
                 f"({', '.join(table)})", "\n".join(fixes), {"unsupported": unsupported})


def _override(detection: ArchDetection) -> DoctorCheck:
    o = detection.override
    bad = [n for n in detection.notes if "HSA_OVERRIDE_GFX_VERSION" in n]
    if bad:
        return DoctorCheck("hsa-override", "fail", bad[0], "export HSA_OVERRIDE_GFX_VERSION=10.3.0 (form: major.minor.step), "
                     "or unset it")
    if o is None:
        return DoctorCheck("hsa-override", "ok", "HSA_OVERRIDE_GFX_VERSION is not set")
    hw = ", ".join(o.hardware) if o.hardware else "not readable from sysfs"
    return DoctorCheck(
        "hsa-override", "warn",
        f"HSA_OVERRIDE_GFX_VERSION={o.value}: the runtime (and torch) report {o.gfx}; the hardware (KFD sysfs) "
        f"is {hw}. Wheels built here target {o.gfx} and run on this card only while the override is set",
        f"keep HSA_OVERRIDE_GFX_VERSION={o.value} in every environment that runs these wheels; "
        f"rocbuild records it in each wheel's provenance",
        {"value": o.value, "runtime": o.gfx, "hardware": o.hardware})


def is_wsl(root: Path, environ: dict[str, str]) -> str | None:
    """Why this looks like WSL, or None."""
    for rel in ("proc/sys/kernel/osrelease", "proc/version"):
        try:
            text = (root / rel).read_text(errors="replace")
        except OSError:
            continue
        if "microsoft" in text.lower() or "wsl" in text.lower():
            return f"{rel} says {text.strip()[:80]!r}"
    if (root / "dev" / "dxg").exists():
        return "/dev/dxg (the WSL GPU bridge) exists"
    if environ.get("WSL_DISTRO_NAME"):
        return f"WSL_DISTRO_NAME={environ['WSL_DISTRO_NAME']}"
    return None


def wsl_check(wsl: str | None) -> DoctorCheck:
    if wsl is None:
        return DoctorCheck("wsl", "ok", "not WSL")
    return DoctorCheck("wsl", "warn",
                 f"WSL2 detected ({wsl}): ROCm runs through /dev/dxg; there is no /dev/kfd and no KFD sysfs, "
                 "RCCL has no multi-GPU support, and only GPUs AMD lists for WSL work",
                 "build with an explicit --arch (or keep rocminfo working); train with the gloo backend; "
                 "see https://rocm.docs.amd.com/projects/radeon/ (WSL support matrix)")


def access_checks(root: Path, who: Identity, wsl: str | None, expect_gpu: bool) -> list[DoctorCheck]:
    groups = Groups.read(root)
    dev = root / "dev"
    out = []
    missing_status = "warn" if wsl or not expect_gpu else "fail"
    kfd = dev / "kfd"
    if not kfd.exists():
        why = ("expected on WSL" if wsl else "the amdgpu driver is not loaded, or this container was started "
               "without the devices")
        out.append(DoctorCheck("dev-kfd", missing_status, f"{kfd} does not exist ({why}): nothing can run on a GPU here",
                         "" if wsl else f"containers: docker run {CONTAINER_FLAGS} ...; hosts: load amdgpu "
                         "(modprobe amdgpu) with a ROCm-supported kernel driver"))
    elif can_open(kfd, who, groups):
        out.append(DoctorCheck("dev-kfd", "ok", f"{kfd} is usable by {who.user}"))
    else:
        out.append(DoctorCheck("dev-kfd", "fail", f"{kfd} exists but {who.user} cannot open it "
                         f"(group {groups.name(kfd.stat().st_gid)})", JOIN_GROUPS))

    dri = dev / "dri"
    nodes = sorted(dri.glob("renderD*")) if dri.is_dir() else []
    if not nodes:
        out.append(DoctorCheck("dev-dri", missing_status, f"no render nodes in {dri} (renderD*)",
                         "" if wsl else f"containers: docker run {CONTAINER_FLAGS} ..."))
    else:
        blocked = [n for n in nodes if not can_open(n, who, groups)]
        if blocked:
            out.append(DoctorCheck("dev-dri", "fail", f"{who.user} cannot open {', '.join(map(str, blocked))} "
                             f"(group {groups.name(blocked[0].stat().st_gid)})", JOIN_GROUPS))
        else:
            out.append(DoctorCheck("dev-dri", "ok", f"{len(nodes)} render node(s) usable: {', '.join(n.name for n in nodes)}"))

    if who.uid == 0:
        out.append(DoctorCheck("groups", "ok", "running as root: device access does not depend on groups "
                         "(other users need the video and render groups)"))
    else:
        present = {g: gid for g in ("video", "render") if (gid := groups.gid(g)) is not None}
        wanted = list(present)
        lacking = [g for g, gid in present.items() if not groups.member(who, gid)]
        if not wanted:
            out.append(DoctorCheck("groups", "skip", "no video or render group on this machine"))
        elif lacking:
            out.append(DoctorCheck("groups", "warn", f"{who.user} is not in {' and '.join(lacking)}", JOIN_GROUPS))
        else:
            out.append(DoctorCheck("groups", "ok", f"{who.user} is in {' and '.join(wanted)}"))
    return out


def distributed_check(detection: ArchDetection, wsl: str | None) -> DoctorCheck:
    gpus = detection.gpus
    knobs = ("export NCCL_DEBUG=INFO            # shows whether RCCL is used and where it stops\n"
             "export NCCL_P2P_DISABLE=1         # consumer cards, chipset slots, VMs without P2P\n"
             "or use the gloo backend (torch.distributed.init_process_group('gloo'); "
             "the gpt-sovits recipe makes it selectable)")
    reasons = []
    fix = []
    if wsl:
        reasons.append("WSL: RCCL does not support several GPUs there")
    igpus = [i for i, g in enumerate(gpus) if g.gfx in facts.IGPU_ARCHS]
    dgpus = [i for i, g in enumerate(gpus) if g.gfx not in facts.IGPU_ARCHS]
    if igpus and dgpus:
        names = ", ".join(gpus[i].target_id for i in igpus)
        reasons.append(f"an integrated GPU ({names}) is visible next to discrete ones")
        keep = ",".join(str(i) for i in dgpus)
        fix.append(f"export HIP_VISIBLE_DEVICES={keep}   # hide the iGPU (ROCR_VISIBLE_DEVICES works too)")
    consumer = [g for g in gpus if facts.is_consumer_dgpu(g.gfx)]
    if len(consumer) > 1:
        reasons.append(f"{len(consumer)} consumer GPUs: RCCL peer-to-peer often fails across PCIe slots")
    if not reasons:
        if len(gpus) < 2:
            return DoctorCheck("distributed", "ok", f"{len(gpus)} GPU(s): nothing to say about multi-GPU training")
        return DoctorCheck("distributed", "ok", f"{len(gpus)} data-center GPUs: RCCL is the expected backend")
    return DoctorCheck("distributed", "warn", "RCCL ('nccl' backend) trouble is likely: " + "; ".join(reasons),
                 "\n".join(fix + [knobs]), {"igpus": igpus})
