"""verify on Windows libraries: real PE/COFF DLLs and .pyd files made here with MinGW's binutils, holding
a real offload bundle that hipcc compiled (uncompressed, and CCOB-compressed), and importing HIP's or
CUDA's DLLs through import libraries dlltool makes."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.bundlefmt import ccob

pytestmark = [pytest.mark.hipcc, pytest.mark.mingw]

ASM = """\
    .text
    .globl _DllMainCRTStartup
_DllMainCRTStartup:
    mov $1, %eax
    ret
    .globl quantize
quantize:
    call {imported}
    ret
{fatbin}
"""


def run(*argv: object, cwd: Path) -> None:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, check=False,
                          env=dict(os.environ, HIP_PLATFORM="amd"))
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def fatbin(tmp_path_factory) -> Path:
    """A real offload bundle for gfx90a and gfx1030, from hipcc's object file."""
    d = tmp_path_factory.mktemp("kernel")
    (d / "k.hip").write_text("#include <hip/hip_runtime.h>\n__global__ void scale(float* x, float a) "
                             "{ x[threadIdx.x] *= a; }\n")
    run("hipcc", "--offload-arch=gfx90a", "--offload-arch=gfx1030", "-c", "k.hip", "-o", "k.o", cwd=d)
    run("objcopy", "-O", "binary", "--only-section=.hip_fatbin", "k.o", "fat.bin", cwd=d)
    assert (d / "fat.bin").read_bytes().startswith(b"__CLANG_OFFLOAD_BUNDLE__")
    return d / "fat.bin"


def dll(folder: Path, name: str, *, imports: str, symbol: str, bundle: bytes | None) -> Path:
    """A DLL whose code calls `symbol` from the DLL `imports`, with `bundle` in a .hip_fat section."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "imports.def").write_text(f"LIBRARY {imports}\nEXPORTS\n{symbol}\n")
    fat = ""
    if bundle is not None:
        (folder / "bundle.bin").write_bytes(bundle)
        fat = '    .section .hip_fat,"dr"\n    .incbin "bundle.bin"\n'
    (folder / "lib.s").write_text(ASM.format(imported=symbol, fatbin=fat))
    run("x86_64-w64-mingw32-dlltool", "-d", "imports.def", "-l", "libimports.a", cwd=folder)
    run("x86_64-w64-mingw32-as", "lib.s", "-o", "lib.o", cwd=folder)
    run("x86_64-w64-mingw32-ld", "--dll", "-e", "_DllMainCRTStartup", "-o", name, "lib.o", "libimports.a", cwd=folder)
    return folder / name


def verify(cli, *args: object) -> tuple[int, dict, str]:
    code, out, _ = cli("verify", "--json", *args)
    text = cli("verify", *args)[1]
    return code, json.loads(out), text


def test_device_code_in_a_windows_dll_is_found_per_arch(cli, fatbin, tmp_path):
    lib = dll(tmp_path / "a", "hip_quantize.dll", imports="amdhip64_6.dll", symbol="hipLaunchKernel",
              bundle=fatbin.read_bytes())
    code, report, text = verify(cli, "--arch", "gfx90a,gfx1030", lib)
    assert code == 0, report["problems"]
    (found,) = report["inputs"][0]["files"]
    assert found["machine"] == "PE32+ x86-64 (Windows)" and found["rocm"] == {"amdhip64_6.dll": None}
    assert sorted(found["targets"]) == ["gfx1030", "gfx90a"] and found["bundles"][0]["section"] == ".hip_fat"
    assert "(Windows code: " in text and "[windows library]" in text
    code, report, _ = verify(cli, "--arch", "gfx942", lib)
    assert code == 1 and any("gfx942" in p for p in report["problems"])


def test_a_wheel_whose_only_device_code_is_a_compressed_pyd_is_not_cpu_only(cli, fatbin, tmp_path):
    pyd = dll(tmp_path / "b", "_quant.cp311-win_amd64.pyd", imports="amdhip64_6.dll", symbol="hipLaunchKernel",
              bundle=ccob(fatbin.read_bytes()))
    wheel = tmp_path / "hip_quant-1.0-cp311-cp311-win_amd64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(pyd, "hip_quant/_quant.cp311-win_amd64.pyd")
        zf.writestr("hip_quant/__init__.py", "")
    code, report, text = verify(cli, "--arch", "gfx90a", wheel)
    assert code == 0, report["problems"]
    assert "CPU-only" not in text and "Windows code: hip_quant/_quant.cp311-win_amd64.pyd" in text
    assert report["inputs"][0]["files"][0]["bundles"][0]["compression"] == "zstd"


def test_a_dll_linking_cuda_fails_and_one_without_device_code_is_cpu_only(cli, tmp_path):
    cuda = dll(tmp_path / "c", "ext.dll", imports="cudart64_12.dll", symbol="cudaLaunchKernel", bundle=None)
    code, report, _ = verify(cli, "--arch", "gfx90a", cuda)
    assert code == 1 and any("links the CUDA library cudart64_12.dll" in p for p in report["problems"])
    plain = dll(tmp_path / "d", "plain.dll", imports="kernel32.dll", symbol="Sleep", bundle=None)
    code, report, _ = verify(cli, "--arch", "gfx90a", plain)
    assert code == 1 and any("a CPU-only build" in p for p in report["problems"])
