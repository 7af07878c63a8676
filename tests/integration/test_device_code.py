"""verify sees every form device code takes, with real compilers: bare code objects (clang for an amdgcn
target), the same embedded into a host library's .rodata (objcopy + gcc), raw bundle files (hipcc
--genco), RUNPATHs, multi-backend wheels, and libraries that use the runtime but ship no kernels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rocbuild.detect.rocm import find_rocm

pytestmark = pytest.mark.hipcc
KERNEL_C = "void __attribute__((amdgpu_kernel)) scale(float *x) { x[0] *= 2.0f; }\n"
HIP = "#include <hip/hip_runtime.h>\n__global__ void k(float *x) { x[threadIdx.x] *= 2; }\n"


def clang() -> str:
    rocm = find_rocm(None, dict(os.environ))
    assert rocm is not None and rocm.hip_compiler is not None
    return str(rocm.hip_compiler)


def run(*argv: str, cwd: Path) -> None:
    subprocess.run(list(argv), cwd=cwd, check=True, capture_output=True, env=dict(os.environ, HIP_PLATFORM="amd"))


@pytest.fixture(scope="module")
def objects(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("codeobj")
    (d / "k.c").write_text(KERNEL_C)
    (d / "k.hip").write_text(HIP)
    out = {}
    for name, mcpu in (("gfx90a", "gfx90a"), ("gfx90a-xnack", "gfx90a:xnack+"), ("gfx1030", "gfx1030")):
        run(clang(), "-x", "c", "--target=amdgcn-amd-amdhsa", f"-mcpu={mcpu}", "-nogpulib", "k.c", "-o",
            f"k-{name}.hsaco", cwd=d)
        out[name] = d / f"k-{name}.hsaco"
    # Both code objects as data of a host library, the way a JIT cache or hipModuleLoadData user ships them.
    for name in ("gfx90a", "gfx1030"):
        run("objcopy", "-I", "binary", "-O", "elf64-x86-64", "-B", "i386:x86-64", "--rename-section",
            ".data=.rodata,alloc,load,readonly,data,contents", f"k-{name}.hsaco", f"blob-{name}.o", cwd=d)
    run("gcc", "-shared", "-o", "libembedded.so", "blob-gfx90a.o", "blob-gfx1030.o", cwd=d)
    out["embedded"] = d / "libembedded.so"
    # The same data in a library named like the HSA runtime: its own helper kernels, never counted.
    run("gcc", "-shared", "-Wl,-soname,libhsa-runtime64.so.1", "-o", "libhsa-runtime64.so.1", "blob-gfx90a.o",
        cwd=d)
    out["runtime"] = d / "libhsa-runtime64.so.1"
    run("hipcc", "--genco", "--offload-arch=gfx90a", "--offload-arch=gfx1030", "k.hip", "-o", "k.co", cwd=d)
    out["bundle"] = d / "k.co"
    # A static archive of HIP objects (a long member name exercises GNU's name table).
    run("hipcc", "-c", "-fPIC", "--offload-arch=gfx90a", "k.hip", "-o", "a_rather_long_kernel_object.o", cwd=d)
    (d / "plain.c").write_text("int plain(void) { return 1; }\n")
    run("gcc", "-c", "plain.c", "-o", "plain.o", cwd=d)
    run("ar", "rcs", "libkernels.a", "a_rather_long_kernel_object.o", "plain.o", cwd=d)
    out["archive"] = d / "libkernels.a"
    # A library with a RUNPATH pinning a ROCm release and leaking a build-machine path.
    run("gcc", "-shared", "-o", "libpinned.so", "plain.c", "-L/usr/lib/x86_64-linux-gnu", "-Wl,--no-as-needed",
        "-lamdhip64", "-Wl,--enable-new-dtags,-rpath,/opt/rocm-6.2.0/lib:/root/build/lib", cwd=d)
    out["pinned"] = d / "libpinned.so"
    run("gcc", "-shared", "-o", "libcpu.so", "plain.c", cwd=d)
    out["cpu"] = d / "libcpu.so"
    # A stand-in CUDA runtime to link against (no CUDA here), and a CUDA-side library of a multi-backend wheel.
    run("gcc", "-shared", "-Wl,-soname,libcudart.so.12", "-o", "libcudart.so.12", "plain.c", cwd=d)
    run("gcc", "-shared", "-o", "libfoo_cuda.so", "plain.c", "-L.", "-Wl,--no-as-needed", "-l:libcudart.so.12", cwd=d)
    out["cuda"] = d / "libfoo_cuda.so"
    return out


def verify(cli, *args):
    code, out, err = cli("verify", "--json", *args)
    return code, json.loads(out) if out.strip() else None, err


def test_bare_code_objects_are_device_code_with_their_target_from_e_flags(cli, objects):
    code, data, _ = verify(cli, objects["gfx90a"], objects["gfx90a-xnack"], objects["gfx1030"], "--arch", "gfx90a")
    files = [f for i in data["inputs"] for f in i["files"]]
    assert [f["targets"] for f in files] == [["gfx90a"], ["gfx90a:xnack+"], ["gfx1030"]]
    assert all(f["code_objects"][0]["code_object_version"] >= 4 for f in files)
    # the gfx1030 file alone does not cover gfx90a; the xnack+ one serves only xnack-on GPUs
    code, data, _ = verify(cli, objects["gfx1030"], "--arch", "gfx90a")
    assert code == 1 and "no code object for gfx90a" in " ".join(data["problems"])
    code, data, _ = verify(cli, objects["gfx90a-xnack"], "--arch", "gfx90a:xnack-")
    assert code == 1 and "xnack-" in " ".join(data["problems"])


def test_code_objects_in_rodata_count_and_the_runtimes_own_do_not(cli, objects):
    code, data, _ = verify(cli, objects["embedded"], "--arch", "gfx90a,gfx1030")
    assert code == 0, data["problems"]
    (f,) = data["inputs"][0]["files"]
    assert sorted(f["targets"]) == ["gfx1030", "gfx90a"]
    assert {c["section"] for c in f["code_objects"]} == {".rodata"}
    code, data, _ = verify(cli, objects["runtime"], "--arch", "gfx90a")
    (f,) = data["inputs"][0]["files"]
    assert f["runtime_kernels"] == 1 and f["code_objects"] == [] and f["targets"] == []


def test_a_raw_bundle_file_in_a_folder_and_a_wheel_is_read(cli, objects, tmp_path):
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "kernels.co").write_bytes(objects["bundle"].read_bytes())
    code, data, _ = verify(cli, folder, "--arch", "gfx90a,gfx1030")
    assert code == 0, data["problems"]
    assert data["inputs"][0]["files"][0]["path"] == "kernels.co"
    wheel = tmp_path / "k-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(objects["bundle"], "k/kernels.co")
        zf.write(objects["gfx1030"], "k/kernels/k-gfx1030.hsaco")
    code, data, _ = verify(cli, wheel, "--arch", "gfx90a,gfx1030")
    assert code == 0, data["problems"]
    assert [f["path"] for f in data["inputs"][0]["files"]] == ["k/kernels.co", "k/kernels/k-gfx1030.hsaco"]


def test_runpath_is_shown_judged_and_leaked_build_paths_are_noted(cli, objects):
    code, data, _ = verify(cli, objects["pinned"], "--arch", "gfx90a")
    (f,) = data["inputs"][0]["files"]
    assert f["runpath"] == ["/opt/rocm-6.2.0/lib", "/root/build/lib"]
    assert "a pinned ROCm 6.2.0" in f["finds_rocm"]
    assert any("/root/build/lib" in n for n in f["notes"])
    # it links the runtime but ships no kernels: said so, not called a CPU-only build
    assert code == 0 and any("ships no GPU kernels of its own, but links the ROCm runtime" in n
                             for n in data["inputs"][0]["notes"])
    code, out, _ = cli("verify", objects["pinned"], "--arch", "gfx90a")
    assert "finds ROCm: a pinned ROCm 6.2.0" in out and "CPU-only" not in out


def test_a_cpu_only_library_is_still_called_that(cli, objects):
    code, data, _ = verify(cli, objects["cpu"], "--arch", "gfx90a")
    assert code == 1 and len(data["problems"]) == 1 and "a CPU-only build" in data["problems"][0]


def test_a_multi_backend_wheel_can_be_scoped(cli, objects, tmp_path):
    wheel = tmp_path / "foo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(objects["cuda"], "foo/libfoo_cuda.so")
        zf.write(objects["embedded"], "foo/libfoo_rocm.so")
    code, data, _ = verify(cli, wheel, "--arch", "gfx90a")
    assert code == 1 and "libcudart.so.12" in " ".join(data["problems"])
    code, data, _ = verify(cli, wheel, "--arch", "gfx90a", "--files", "*rocm*")
    assert code == 0, data["problems"]
    code, data, _ = verify(cli, wheel, "--arch", "gfx90a", "--allow-cuda")
    assert code == 0, data["problems"]


def test_an_unreadable_bundle_is_one_problem(cli, tmp_path):
    lib = tmp_path / "bad.co"
    lib.write_bytes(b"__CLANG_OFFLOAD_BUNDLE__" + (5000).to_bytes(8, "little") + b"\0" * 40)
    code, data, _ = verify(cli, lib, "--arch", "gfx90a")
    assert code == 1 and len(data["problems"]) == 1 and "unreadable offload bundle" in data["problems"][0]


@pytest.mark.parametrize("arch", ["gfx11-generic", "GFX90A", "Gfx1030"])
def test_verify_accepts_generic_isas_and_any_case(cli, objects, arch):
    code, _, err = cli("verify", objects["gfx1030"], "--arch", arch)
    assert code in (0, 1) and "not a gfx target" not in err, err


def test_one_line_per_file_unless_verbose(cli, objects):
    code, out, _ = cli("verify", objects["embedded"], "--arch", "gfx90a")
    assert "device code gfx1030, gfx90a (in .rodata)" in out and "code objects in" not in out
    code, out, _ = cli("verify", "-v", objects["embedded"], "--arch", "gfx90a")
    assert "code objects in .rodata: gfx1030, gfx90a" in out


def test_running_out_of_temp_space_is_exit_3_naming_the_room_needed(tmp_path):
    wheel = tmp_path / "big-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big/libbig.so", b"\x7fELF" + b"\0" * (4 << 20))
    small = tmp_path / "tmp"
    small.mkdir()
    script = 'mount -t tmpfs -o size=1m tmpfs "$TMPDIR" || exit 99; exec "$@"'
    env = dict(os.environ, TMPDIR=str(small), PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    ns = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-Urm"]
    done = subprocess.run([*ns, "sh", "-c", script, "sh", sys.executable, "-m", "rocbuild", "verify", str(wheel),
                           "--arch", "gfx90a"], env=env, capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert "needs 4 MiB of temporary space" in done.stderr and "TMPDIR" in done.stderr


def test_a_static_archives_objects_are_read(cli, objects):
    code, data, _ = verify(cli, objects["archive"], "--arch", "gfx90a")
    assert code == 0, data["problems"]
    files = data["inputs"][0]["files"]
    assert data["inputs"][0]["kind"] == "archive"
    assert [f["path"].rsplit("/", 1)[-1] for f in files] == ["libkernels.a(a_rather_long_kernel_object.o)",
                                                             "libkernels.a(plain.o)"]
    assert files[0]["targets"] == ["gfx90a"] and files[1]["targets"] == []
    code, data, _ = verify(cli, objects["archive"], "--arch", "gfx1030")
    assert code == 1 and "no code object for gfx1030" in " ".join(data["problems"])
