"""A container image laid out as AMD's rocm/dev-ubuntu images are, small enough for a test: this machine's
own python3 (with its standard library and the shared libraries it and /bin/sh load), dpkg's status file,
and a ROCm tree under /opt/rocm-X.Y.Z with the /opt/rocm link (tests/conftest.make_rocm_tree: no binaries
run from it but the version scripts). Imported into podman by podman itself.

What differs from AMD's images: no apt sources or packages (dpkg knows none), no real HIP compiler or
libraries, one python, and the OS is this machine's (its os-release is rewritten to say so)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import make_rocm_tree

PYTHON = f"python{sys.version_info[0]}.{sys.version_info[1]}"


def _libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return [part for line in out.splitlines() for part in line.split() if part.startswith("/")]


def _copy(path: str, tree: Path) -> None:
    real = os.path.realpath(path)
    dest = tree / path.lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not dest.exists():
        shutil.copy2(real, dest)


def amd_like_tree(tree: Path, rocm: str = "7.2.0") -> Path:
    python = shutil.which(PYTHON, path="/usr/bin") or f"/usr/bin/{PYTHON}"
    for folder in ("usr/bin", "usr/lib/x86_64-linux-gnu", "usr/lib64", "etc", "var/lib/dpkg", "opt", "tmp", "root"):
        (tree / folder).mkdir(parents=True, exist_ok=True)
    for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"), ("sbin", "usr/bin")):
        os.symlink(target, tree / link)
    for binary in (python, "/bin/sh", "/usr/bin/dpkg"):
        real = os.path.realpath(binary)
        _copy(real, tree)
        for lib in _libraries(real):
            _copy(lib, tree)
        if real != binary:
            os.symlink(real, tree / binary.lstrip("/").replace("bin/", "usr/bin/", 1) if binary.startswith("/bin/")
                       else tree / binary.lstrip("/"))
    os.symlink(PYTHON, tree / "usr" / "bin" / "python3")
    stdlib = sysconfig.get_paths(vars={"base": "/usr", "installed_base": "/usr"})["stdlib"]
    shutil.copytree(stdlib, tree / stdlib.lstrip("/"), symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "test", "idlelib", "tkinter", "ensurepip"))
    (tree / "var" / "lib" / "dpkg" / "status").write_text("")
    (tree / "etc" / "os-release").write_text('PRETTY_NAME="Ubuntu 24.04 LTS (a test image: Debian files)"\n')
    make_rocm_tree(tree / "opt", rocm)
    os.symlink(f"rocm-{rocm}", tree / "opt" / "rocm")
    return tree


def import_image(tree: Path, name: str, env: dict[str, str] | None = None) -> str:
    """`env`: the image's ENV (as a Dockerfile's ENV lines set it)."""
    tar = tree.parent / f"{tree.name}.tar"
    subprocess.run(["tar", "-cf", str(tar), "-C", str(tree), "."], check=True)
    changes = [arg for key, value in (env or {}).items() for arg in ("--change", f"ENV={key}={value}")]
    subprocess.run(["podman", "import", *changes, str(tar), name], check=True, capture_output=True)
    tar.unlink()
    return name
