"""Build roots for real: a Debian root holding ROCm 7.2 from Debian's archive (made once per test
session, or the one ROCBUILD_TEST_ROOT names), and rocbuild's commands run inside it; device code
checked by rocbuild and by LLVM's own tools from the root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.root, pytest.mark.network, pytest.mark.slow]

ROOT_NAME = os.environ.get("ROCBUILD_TEST_ROOT", "test-rocm7.2")
ARCHS = "gfx1100,gfx942,gfx1201"
# The root's own LLVM: llvm-objcopy pulls out the offload bundle, clang-offload-bundler lists it.
LLVM_LIST = ('for b in /usr/lib/llvm-*/bin; do P=$b; done; "$P/llvm-objcopy" --dump-section .hip_fatbin="$2" "$1" '
             '&& "$P/clang-offload-bundler" --list --type=o --input="$2"')


def rocbuild(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocbuild", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, check=False)


@pytest.fixture(scope="session")
def root() -> str:
    if rocbuild("root", "path", ROOT_NAME).returncode != 0:
        made = rocbuild("root", "create", ROOT_NAME, "--rocm", "7.2")
        assert made.returncode == 0, made.stderr[-3000:]
    return ROOT_NAME


@pytest.fixture
def private_cache(tmp_path) -> dict[str, str]:
    return dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))


def hip_entries(root: str, wheel: Path, scratch: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(scratch)
    (lib,) = [p for p in scratch.rglob("_core*.so")]
    listed = rocbuild("root", "run", root, "--", "sh", "-c", LLVM_LIST, "sh", lib, scratch / "fat.bin", cwd=scratch)
    assert listed.returncode == 0, listed.stderr
    return sorted(line.strip() for line in listed.stdout.splitlines() if line.strip())


def test_root_is_listed_with_what_it_holds(root):
    rows = json.loads(rocbuild("root", "list", "--json").stdout)
    (row,) = [r for r in rows if r["name"] == root]
    assert row["rocm"].startswith("7.2.") and row["versions"]["hipcc"].startswith("7.2")
    tree = Path(rocbuild("root", "path", root).stdout.strip())
    assert tree == Path(row["path"]) and (tree / "usr" / "bin" / "hipcc").exists()


def test_detect_in_the_root_sees_its_rocm_and_python(root, private_cache):
    found = json.loads(rocbuild("detect", "--root", root, "--arch", "gfx1100", "--json", env=private_cache).stdout)
    assert found["rocm"]["version"].startswith("7.2") and found["rocm"]["path"] == "/usr"
    assert found["python"]["executable"] == "/usr/bin/python3"


def test_rocbuild_bytecode_from_the_root_is_kept_in_the_cache(root, private_cache):
    # This machine is read-only inside the root: the bytecode of what rocbuild imports there is
    # saved in the cache, so the next command does not compile those modules again.
    assert rocbuild("detect", "--root", root, "--arch", "gfx1100", env=private_cache).returncode == 0
    kept = Path(private_cache["XDG_CACHE_HOME"]) / "rocbuild" / "pycache"
    names = {p.name.split(".")[0] for p in kept.rglob("rocbuild/detect/*.pyc")} if kept.is_dir() else set()
    assert {"host", "rocm", "arch"} <= names, sorted(kept.rglob("*.pyc"))[:10] if kept.is_dir() else "no pycache"


def test_hello_hip_in_the_root_checked_by_llvm(root, tmp_path, private_cache):
    plan = json.loads(rocbuild("plan", "hello-hip", "--root", root, "--arch", ARCHS, "--json", "--out", tmp_path / "wh",
                               env=private_cache).stdout)
    assert plan["root"]["name"] == root and plan["root"]["enter"][0] == "bwrap"
    assert plan["python"]["executable"] == "/usr/bin/python3"
    built = rocbuild("hello-hip", "--root", root, "--arch", ARCHS, "--out", tmp_path / "wh", env=private_cache)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = [Path(line) for line in built.stdout.splitlines() if line.endswith(".whl")]
    assert wheel.parent == tmp_path / "wh" and wheel.is_file() and "+rocm7.2-" in wheel.name
    checked = json.loads(rocbuild("verify", "--json", "--arch", ARCHS, wheel).stdout)
    assert checked["ok"], checked
    entries = hip_entries(root, wheel, tmp_path / "unzipped")
    assert entries == sorted(["host-x86_64-unknown-linux-gnu-"] + [f"hipv4-amdgcn-amd-amdhsa--{a}" for a in ARCHS.split(",")])
    # scikit-build-core came into the build environment, not into the root's python
    imported = rocbuild("root", "run", root, "--", "python3", "-c", "import scikit_build_core", cwd=tmp_path)
    assert imported.returncode != 0


def test_same_recipe_with_and_without_root(root, tmp_path, private_cache):
    if shutil.which("hipcc") is None:
        pytest.skip("no HIP toolchain on this machine itself")
    wheels = {}
    for where, extra in (("host", ()), ("root", ("--root", root))):
        built = rocbuild("hello-hip", "--arch", "gfx90a", "--out", tmp_path / where, *extra, env=private_cache)
        assert built.returncode == 0, built.stderr[-3000:]
        (wheels[where],) = (tmp_path / where).glob("*.whl")
    assert wheels["host"].name != wheels["root"].name
    links = {}
    for where, wheel in wheels.items():
        report = json.loads(rocbuild("verify", "--json", "--arch", "gfx90a", wheel).stdout)
        assert report["ok"]
        links[where] = json.dumps(report)
    assert "libamdhip64.so.7" in links["root"] and "libamdhip64.so.7" not in links["host"]
    entries = os.listdir(tmp_path / "cache" / "rocbuild" / "builds")
    assert len(entries) == 2  # two build identities: the root is part of the toolchain


def test_horovod_kernel_library_in_the_root(root, tmp_path, private_cache):
    """Horovod 0.28.1 (its PyPI sdist) as far as it goes without a ROCm torch: prepared with the
    modern-toolchain patches, configured by CMake 4, and its HIP kernel library compiled by ROCm 7.2."""
    got = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                          "--no-build-isolation", "--disable-pip-version-check", "horovod==0.28.1", "-d",
                          str(tmp_path)], capture_output=True, text=True, check=False)
    assert got.returncode == 0, got.stderr[-2000:]
    with tarfile.open(tmp_path / "horovod-0.28.1.tar.gz") as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    work = tmp_path / "work"
    common = ("horovod", "--root", root, "--arch", "gfx90a,gfx942", "--source-dir", tmp_path / "horovod-0.28.1",
              "--set", "frameworks=none", "--set", "mpi=without", "--work", work, "--out", tmp_path / "wh")
    refused = rocbuild("build", *common, env=private_cache)
    assert refused.returncode == 2 and "holds no library" in refused.stderr and not work.exists()
    built = rocbuild("build", *common, "--install-missing", "--until", "kernels", env=private_cache)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "stopped after 'kernels'" in built.stderr and not (tmp_path / "wh").exists()
    (archive,) = work.glob("build/horovod/**/libhorovod_cuda_kernels.a")
    checked = json.loads(rocbuild("verify", "--json", "--arch", "gfx90a,gfx942", archive).stdout)
    assert checked["ok"], checked


def test_missing_tool_named_as_a_debian_package_then_installed(root, tmp_path, private_cache):
    shutil.copytree(REPO / "examples" / "hello-hip", tmp_path / "hello-hip")
    recipe = tmp_path / "needs-ninja.yaml"
    recipe.write_text(textwrap.dedent("""
        schema: 1
        name: needs-ninja
        version: "0.1.0"
        source:
          path: hello-hip
        requires:
          tools: [cmake, hipcc, ninja]
        steps:
          - wheel:
              config-settings:
                cmake.define.CMAKE_CXX_COMPILER: "${{ rocm.hipcc }}"
                cmake.define.HIP_ARCHITECTURES: "${{ archs | join(';') }}"
    """))
    removed = rocbuild("root", "run", root, "--", "apt-get", "remove", "-y", "-qq", "ninja-build", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    args = ("build", recipe, "--root", root, "--arch", "gfx1100", "--out", tmp_path / "wh")
    refused = rocbuild(*args, env=private_cache)
    assert refused.returncode == 3
    assert "tool 'ninja' not found on PATH (Debian package ninja-build)" in refused.stderr
    assert f"rocbuild root install {root} ninja-build" in refused.stderr
    built = rocbuild(*args, "--install-missing", env=private_cache)
    assert built.returncode == 0, built.stderr[-3000:]
    assert rocbuild("root", "run", root, "--", "ninja", "--version", cwd=tmp_path).returncode == 0


def test_no_build_env_in_the_root_names_the_pip_command(root, tmp_path, private_cache):
    refused = rocbuild("hello-hip", "--root", root, "--arch", "gfx1100", "--no-build-env", "--out", tmp_path / "wh",
                       env=private_cache)
    assert refused.returncode == 3
    assert "install them: /usr/bin/python3 -m pip install scikit_build_core" in refused.stderr
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_an_interrupt_reaches_the_step_inside_the_root(root, tmp_path, private_cache, sig, code):
    import signal

    from tests.integration.test_interrupts import STEP, start, wait_dead

    src, pids = tmp_path / "project", tmp_path / "pids"
    src.mkdir()
    pids.mkdir()
    (src / "step.py").write_text(STEP)
    recipe = tmp_path / "sleeper.yaml"
    recipe.write_text(textwrap.dedent(f"""
        schema: 1
        name: sleeper
        version: "1.0"
        output: tree
        source:
          path: {src}
        steps:
          - name: first
            run: [python, -c, "open('first.txt', 'w').write('1')"]
          - name: long
            run: [python, step.py, "{pids}"]
    """))
    argv = [sys.executable, "-m", "rocbuild", "build", str(recipe), "--root", root, "--arch", "gfx1100",
            "--work", str(tmp_path / "w"), "--no-confine"]  # pids from a sandbox's namespace mean nothing here
    proc, child, grandchild = start(argv, private_cache, pids)
    proc.send_signal(getattr(signal, sig))  # to rocbuild outside the root only
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    assert wait_dead(child, grandchild), "a process of the interrupted step inside the root is still running"
    (pids / "go").write_text("")
    done = subprocess.run(argv, env=private_cache, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[1/2] first  (skipped: done in an earlier run" in done.stderr


def test_widened_warp_masks_compile_with_the_roots_hipcc(root, tmp_path):
    """ROCm 7.2's own hipcc refuses a 32-bit mask (warp-mask-32bit), and takes the source once the trap's fix,
    applied by the engine's replace, has widened it: for wave32 and wave64 targets."""
    from rocbuild.draft.traps import BuildFiles, in_build_files
    from rocbuild.engine.patch import apply_replace
    from rocbuild.plan.model import ReplacePatch

    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text("#include <hip/hip_runtime.h>\n#define FULL_MASK (0xffffffff)\n"
                              "__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n"
                              "  v += __shfl_xor_sync(FULL_MASK, v, 1);\n  v += __shfl_up_sync(0xffffffff, v, 1);\n"
                              "  x[threadIdx.x] = v;\n}\n")
    compile_ = ["root", "run", root, "--", "hipcc", "-fsyntax-only", "-x", "hip", "--offload-arch=gfx1100",
                "--offload-arch=gfx942", src / "k.cu"]
    before = rocbuild(*compile_)
    assert before.returncode != 0 and "The mask must be a 64-bit integer" in before.stderr
    (hit,) = [h for h in in_build_files(BuildFiles.read(src, torch=False)) if h.trap.id == "warp-mask-32bit"]
    for edit in hit.fix.edits:
        apply_replace(ReplacePatch(file=edit.file, find=edit.find, replacement=edit.with_, regex=edit.regex,
                                   count=None, where="test"), src)
    after = rocbuild(*compile_)
    assert after.returncode == 0, after.stderr[-2000:]


# Every way a step could change a root: files in /usr/local, /etc and /opt (the kit is there), the
# machine's /tmp, and the root's own python. Each must be refused; the step goes on to say what happened.
HOSTILE = r"""
for f in /usr/local/marker /etc/marker /opt/marker /usr/lib/python3/dist-packages/marker.py; do
  touch "$f" 2>/dev/null && echo "WROTE $f" || echo "refused $f"
done
python3 -c 'import urllib.request as u; u.urlopen("https://pypi.org/simple/", timeout=5)' 2>/dev/null \
  && echo "REACHED the network" || echo "no network"
ls /dev/kfd /dev/dri >/dev/null 2>&1 && echo "SAW the GPU" || echo "no GPU"
"""


def root_state(root: str) -> dict[str, object]:
    """What a build must leave as it was: the package list, and every file's size, mode and mtime under
    /usr/local, /opt (the build-only torch included), /etc and each python's site-packages."""
    tree = Path(rocbuild("root", "path", root).stdout.strip())
    state: dict[str, object] = {"dpkg": (tree / "var/lib/dpkg/status").read_bytes()}
    places = ["usr/local", "opt", "etc", *(str(p.relative_to(tree)) for p in tree.glob("usr/lib/python3*/*-packages"))]
    for place in places:
        for dirpath, _dirs, files in os.walk(tree / place):
            for name in files:
                p = Path(dirpath) / name
                st = p.lstat()
                state[str(p.relative_to(tree))] = (st.st_size, st.st_mode, st.st_mtime_ns)
    return state


def test_a_confined_build_leaves_the_root_as_it_was(root, tmp_path, private_cache):
    """hello-hip with a step that tries to write into the root, and a build whose step pip-installs into the
    root's python: the first builds (its writes refused), the second fails; the root is unchanged."""
    before = root_state(root)
    text = (REPO / "recipes" / "hello-hip.yaml").read_text().replace("path: ../examples/hello-hip",
                                                                     f"path: {REPO / 'examples' / 'hello-hip'}")
    recipe = tmp_path / "hello-hostile.yaml"
    recipe.write_text(text.replace("steps:\n", "steps:\n  - name: hostile\n    shell: |\n"
                                   + textwrap.indent(HOSTILE.strip(), "      ") + "\n", 1))
    built = rocbuild("build", recipe, "--root", root, "--arch", "gfx1100", "--out", tmp_path / "wh",
                     "--work", tmp_path / "w", env=private_cache)
    assert built.returncode == 0, built.stderr[-3000:]
    said = (tmp_path / "w" / "logs" / "01-hostile.log").read_text()
    lines = said.splitlines()
    assert len([line for line in lines if line.startswith("refused /")]) == 4, said
    assert "no network" in lines and "no GPU" in lines and not any(line.startswith("WROTE") for line in lines)
    (wheel,) = (tmp_path / "wh").glob("*.whl")
    pip = tmp_path / "pip.yaml"
    pip.write_text(textwrap.dedent(f"""
        schema: 1
        name: pip-into-root
        version: "1.0"
        output: tree
        source:
          path: {tmp_path / "wh"}
        steps:
          - run: [python3, -m, pip, install, --no-index, --no-deps, --break-system-packages, {wheel.name}]
    """))
    failed = rocbuild("build", pip, "--root", root, "--work", tmp_path / "w2", env=private_cache)
    assert failed.returncode != 0 and "Read-only file system" in failed.stderr, failed.stderr[-3000:]
    assert root_state(root) == before


def test_a_real_sdist_that_downloads_at_build_fails_confined_naming_the_host(root, tmp_path, private_cache):
    """sgemm-bi 0.1.2 from PyPI, as a new user builds it: a maturin package whose build backend (puccinialin)
    downloads a Rust toolchain when there is none. Confined, that fails, and the report names the trap and the
    host the log named 28 lines earlier; --try stops there, for no recipe data can give a Rust toolchain."""
    tried = rocbuild("build", "sgemm-bi==0.1.2", "--try", "--root", root, "--arch", "gfx1100", "--work", tmp_path / "w",
                     "--out", tmp_path / "wh", env=private_cache)
    assert tried.returncode == 4, tried.stderr[-3000:]
    report = [line.strip() for line in tried.stderr[tried.stderr.index("the last failure:"):].splitlines()]
    assert "known trap downloads-at-build: the build reaches the network" in report[:15], "\n".join(report)
    assert "blocked host: static.rust-lang.org" in report[:15], "\n".join(report)
    assert "trap build-module-missing" in tried.stderr  # try 1 had puccinialin required, as a fix written for it
    assert not list((tmp_path / "wh").glob("*.whl"))
