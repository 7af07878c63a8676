"""File trees that stand in for what cannot exist here: a machine's /sys, /dev and /proc, and a
torch install (a real venv whose `torch` package is a stand-in tree). Extension modules put
into them are real ELF files compiled by the test."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

TORCHES = {
    # flavour: torch/version.py as the real wheels write it
    "rocm5.6": ("2.0.1+rocm5.6", "None", "'5.6.31061-8c743ae5d'"),
    "rocm6.1": ("2.4.0+rocm6.1", "None", "'6.1.40091-a8dbc0c19'"),
    "rocm6.2": ("2.5.1+rocm6.2", "None", "'6.2.41133-dd7f95766'"),
    "rocm7.2": ("2.14.0+rocm7.2", "None", "'7.2.26015-fc0010cf6'"),
    "cuda": ("2.4.0+cu121", "'12.1'", "None"),
    "cpu": ("2.4.0+cpu", "None", "None"),
}
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def make_venv(path: Path, torch: str | None) -> tuple[Path, Path]:
    """A real venv (no pip) with a stand-in torch; returns (python, site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    if torch is not None:
        version, cuda, hip = TORCHES[torch]
        pkg = site / "torch"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise ImportError('stand-in torch: doctor must not import it')\n")
        (pkg / "version.py").write_text(
            "from typing import Optional\n\n"
            "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
            f"__version__ = '{version}'\n"
            "debug = False\n"
            f"cuda: Optional[str] = {cuda}\n"
            "git_version = 'e4ee3be4063b7c430974252fdf7db42273388d86'\n"
            f"hip: Optional[str] = {hip}\n")
    return python, site


def compile_cuda_linked(site: Path, rel: str, work: Path) -> Path:
    """An extension module that needs libc10_cuda.so and libcudart.so.12, as a CUDA build does."""
    work.mkdir(parents=True, exist_ok=True)
    for lib in ("libc10_cuda.so", "libcudart.so.12"):
        (work / "stub.c").write_text("int stub_symbol(void) { return 0; }\n")
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{lib}", "-o", str(work / lib),
                        str(work / "stub.c")], check=True)
    (work / "ext.c").write_text("extern int stub_symbol(void);\nint ext_entry(void) { return stub_symbol(); }\n")
    out = site / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(work / "ext.c"), "-Wl,--no-as-needed",
                    str(work / "libc10_cuda.so"), str(work / "libcudart.so.12")], check=True)
    return out


def compile_hip(site: Path, rel: str, archs: list[str], work: Path) -> Path:
    """An extension-shaped shared library with real device code for `archs` (needs hipcc)."""
    work.mkdir(parents=True, exist_ok=True)
    src = work / "kern.hip"
    src.write_text("#include <hip/hip_runtime.h>\n"
                   "__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n"
                   "extern \"C\" int launch(float* x) { hipLaunchKernelGGL(scale, 1, 32, 0, 0, x, 2.0f);"
                   " return 0; }\n")
    out = site / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["hipcc", "-fPIC", "-shared", *[f"--offload-arch={a}" for a in archs], "-o", str(out), str(src)],
                   check=True, env={**os.environ, "HIP_PLATFORM": "amd"})
    return out


def compile_host(site: Path, rel: str, work: Path) -> Path:
    """An extension-shaped shared library of host code only, as a CPU-only build leaves one (needs gcc)."""
    work.mkdir(parents=True, exist_ok=True)
    src = work / "cpu.c"
    src.write_text("int cpu_op(void) { return 0; }\n")
    out = site / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def add_record(site: Path, dist: str, version: str, files: list[str]) -> None:
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    rows = files + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(f if "," in f else f"{f},," for f in rows) + "\n")


def make_machine(root: Path, gfx_target_versions: list[int], *, devices: bool = True, wsl: bool = False,
                 device_mode: int = 0o660) -> Path:
    """A file tree shaped like / of a Linux box with AMD GPUs: KFD topology, device nodes, /proc."""
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "0").mkdir(parents=True)
    (nodes / "0" / "properties").write_text("cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n")
    for i, v in enumerate(gfx_target_versions, start=1):
        (nodes / str(i)).mkdir()
        (nodes / str(i) / "properties").write_text(
            f"cpu_cores_count 0\nsimd_count 192\ngfx_target_version {v}\nvendor_id 4098\ndevice_id 29772\n")
        (nodes / str(i) / "name").write_text("\n")
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "group").write_text("root:x:0:\nvideo:x:44:alice\nrender:x:105:\nusers:x:100:\n")
    (root / "proc").mkdir(parents=True, exist_ok=True)
    kernel = "5.15.153.1-microsoft-standard-WSL2" if wsl else "6.8.0-45-generic"
    (root / "proc" / "version").write_text(f"Linux version {kernel} (gcc version 12.2.0) #1 SMP\n")
    if devices:
        (root / "dev" / "dri").mkdir(parents=True)
        for node, gid in (("kfd", 105), ("dri/renderD128", 105), ("dri/card0", 44)):
            p = root / "dev" / node
            p.write_text("")
            p.chmod(device_mode)
            os.chown(p, 0, gid)  # the tests run as root, as CI does
    if wsl:
        (root / "dev").mkdir(exist_ok=True)
        (root / "dev" / "dxg").write_text("")
    return root
