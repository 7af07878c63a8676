"""`rocbuild verify` on libraries this test compiles with the real HIP toolchain.

Marked hipcc: they need hipcc and device libraries (Debian 12: hipcc
libamdhip64-dev rocm-device-libs rocminfo), and in CI they must run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from rocbuild.verify.elf import inspect_elf
from tests.bundlefmt import ccob

pytestmark = pytest.mark.hipcc

KERNEL = """\
#include <hip/hip_runtime.h>
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
extern "C" int launch(float* x, float a, int n) {
  hipLaunchKernelGGL(scale, dim3((n + 255) / 256), dim3(256), 0, 0, x, a, n);
  return hipGetLastError() == hipSuccess ? 0 : 1;
}
"""


def run(argv, **kw):
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hiplibs")
    (d / "kernel.hip").write_text(KERNEL)
    env = {"HIP_PLATFORM": "amd", "PATH": "/usr/bin:/bin:" + str(Path(shutil.which("hipcc")).parent)}
    out = {}
    for name, archs in {"fat": ["gfx90a", "gfx1030"], "one": ["gfx90a"]}.items():
        lib = d / f"lib{name}.so"
        run(["hipcc", "-shared", "-fPIC", *[f"--offload-arch={a}" for a in archs], d / "kernel.hip", "-o", lib],
            env=env)
        out[name] = lib
    (d / "plain.c").write_text("int add(int a, int b) { return a + b; }\n")
    run(["cc", "-shared", "-fPIC", d / "plain.c", "-o", d / "libplain.so"])
    out["plain"] = d / "libplain.so"
    # A stand-in for torch's CUDA runtime library, and a library linked against it.
    (d / "c10.c").write_text("void c10_cuda_stub(void) {}\n")
    run(["cc", "-shared", "-fPIC", d / "c10.c", "-Wl,-soname,libc10_cuda.so", "-o", d / "libc10_cuda.so"])
    (d / "ext.c").write_text("void c10_cuda_stub(void); void ext(void) { c10_cuda_stub(); }\n")
    run(["cc", "-shared", "-fPIC", d / "ext.c", f"-L{d}", "-lc10_cuda", "-o", d / "libcudaext.so"])
    out["cuda"] = d / "libcudaext.so"
    return out


def verify(cli, *args):
    code, out, err = cli("verify", "--json", *args)
    return code, json.loads(out) if out.strip() else None, err


def test_fat_library_passes(cli, libs):
    code, report, _ = verify(cli, libs["fat"], "--arch", "gfx90a,gfx1030")
    assert code == 0, report["problems"]
    f = report["inputs"][0]["files"][0]
    assert sorted(f["targets"]) == ["gfx1030", "gfx90a"]
    assert "libamdhip64.so" in " ".join(f["rocm"])
    assert f["bundles"][0]["section"] == ".hip_fatbin"


def test_missing_arch_fails_naming_it(cli, libs):
    code, report, _ = verify(cli, libs["one"], "--arch", "gfx90a,gfx1030")
    assert code == 1
    assert len(report["problems"]) == 1
    assert "libone.so" in report["problems"][0] and "gfx1030" in report["problems"][0]
    assert report["inputs"][0]["files"][0]["coverage"] == {"gfx90a": "gfx90a", "gfx1030": "missing"}
    # and the text form says the same to a person
    code, out, _ = cli("verify", "-v", libs["one"], "--arch", "gfx90a,gfx1030")
    assert code == 1 and "gfx1030: MISSING" in out and "FAILED" in out


def test_plain_library_is_a_cpu_only_build(cli, libs):
    code, report, _ = verify(cli, libs["plain"], "--arch", "gfx90a")
    assert code == 1
    assert "CPU-only build" in report["problems"][0] and "libplain.so" in report["problems"][0]


def test_cuda_linked_library_fails(cli, libs):
    code, report, _ = verify(cli, libs["cuda"])
    assert code == 1
    assert report["inputs"][0]["files"][0]["cuda"] == ["libc10_cuda.so"]
    assert "links the CUDA library libc10_cuda.so" in report["problems"][0]


def test_missing_arch_inside_a_wheel(cli, libs, tmp_path):
    wheel = tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(libs["one"], "demo/_kernels.so")
        zf.write(libs["plain"], "demo/_helpers.so")  # no device code: fine, another ELF has it
        zf.writestr("demo/__init__.py", "")
    code, report, _ = verify(cli, wheel, "--arch", "gfx90a,gfx1030")
    assert code == 1
    assert report["problems"] == [f"{wheel}: demo/_kernels.so: no code object for gfx1030; "
                                  "rebuild with --arch including gfx1030"]
    code, report, _ = verify(cli, wheel, "--arch", "gfx90a")
    assert code == 0, report["problems"]


def llvm_bundler() -> str | None:
    """clang-offload-bundler, as the toolchain's LLVM installs it (versioned on Debian)."""
    for name in ("clang-offload-bundler", *(f"clang-offload-bundler-{v}" for v in range(30, 13, -1))):
        if shutil.which(name):
            return shutil.which(name)
    found = sorted(Path("/usr/lib").glob("llvm-*/bin/clang-offload-bundler"))
    return str(found[-1]) if found else None


def test_same_entries_as_the_toolchains_own_lister(libs, tmp_path):
    """roc-obj-ls where hipcc ships it (HIP 5.x, 6.x); hipcc 7.x ships none: then LLVM's own bundler
    lists the .hip_fatbin section objcopy takes out."""
    ours = sorted(e.id for _, b in inspect_elf(libs["fat"]).bundles for e in b.entries)
    tool = shutil.which("roc-obj-ls")
    if tool:
        out = run([tool, libs["fat"]]).stdout
        assert ours == sorted(line.split()[1] for line in out.splitlines() if line.strip())
    bundler = llvm_bundler()
    assert tool or bundler, "neither roc-obj-ls (hipcc's) nor clang-offload-bundler (LLVM's) found"
    if bundler:
        run(["objcopy", "--dump-section", f".hip_fatbin={tmp_path / 'fat.bin'}", libs["fat"]])
        out = run([bundler, "--list", "--type=o", f"--input={tmp_path / 'fat.bin'}"]).stdout
        theirs = sorted(line.strip() for line in out.splitlines() if line.strip())
        assert ours == theirs


@pytest.mark.parametrize("version, method", [(1, "zlib"), (2, "zstd"), (3, "zlib"), (3, "zstd")])
def test_compressed_bundle_in_a_library(cli, libs, tmp_path, version, method):
    # Take the real bundle out of the fat library, compress it as --offload-compress
    # would, and put it in the .hip_fatbin section of a library with no device code.
    info = inspect_elf(libs["fat"])
    (_, bundle), = info.bundles
    data = libs["fat"].read_bytes()[bundle.offset:bundle.offset + bundle.size]
    blob = tmp_path / "fatbin.ccob"
    blob.write_bytes(ccob(data, version=version, method=method))
    lib = tmp_path / "libccob.so"
    run(["objcopy", "--add-section", f".hip_fatbin={blob}", "--set-section-flags", ".hip_fatbin=alloc,readonly",
         libs["plain"], lib])
    code, report, _ = verify(cli, lib, "--arch", "gfx90a,gfx1030")
    assert code == 0, report["problems"]
    (b,) = report["inputs"][0]["files"][0]["bundles"]
    assert (b["compression"], b["ccob_version"]) == (method, version)
    assert sorted(e["target"] for e in b["entries"] if e["target"]) == ["gfx1030", "gfx90a"]
    # A damaged payload is reported, never taken for "no device code".
    broken = tmp_path / "libbroken.so"
    blob.write_bytes(ccob(data, version=version, method=method)[:-40])
    run(["objcopy", "--add-section", f".hip_fatbin={blob}", libs["plain"], broken])
    code, report, _ = verify(cli, broken, "--arch", "gfx90a")
    assert code == 1
    assert any("unreadable offload bundle" in p for p in report["problems"])


def test_two_judgements_of_one_wheel_read_it_once(libs, tmp_path):
    # A build's own check and its recipe's check judge the same wheel: the second reads nothing, and
    # the first one's failure is not carried into it.
    from rocbuild.errors import UsageError
    from rocbuild.verify.verdict import verify_paths

    wheel = tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(libs["one"], "demo/_kernels.so")
        zf.write(libs["plain"], "demo/_helpers.so")
    inspected: dict = {}
    first = verify_paths([wheel], ["gfx90a", "gfx1030"], inspected=inspected)
    assert not first.ok and "no code object for gfx1030" in first.problems[0]
    wheel.unlink()  # anything that still read the wheel would fail now
    second = verify_paths([wheel], ["gfx90a"], device_code_in=("demo/_kernels.so",), inspected=inspected)
    assert second.ok, second.problems
    (found,) = second.inputs
    assert [f.coverage for f in found.files if f.path == "demo/_kernels.so"] == [{"gfx90a": "gfx90a"}]
    with pytest.raises(UsageError, match="no such file"):
        verify_paths([wheel], ["gfx90a"])
