"""A build-only ROCm torch's parts that run here, with real tools: the symbols of its HIP libraries read
from a real clang AST of a header shaped like hipified torch's, link-only libraries written by LLVM's real
llvm-ifs and linked by the real linker with --as-needed, and wheels built against such a torch refused by
index and repair and named by verify."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rocbuild.torchkit.kit import HIP_LIBRARIES, KitInfo, version_py
from rocbuild.torchkit.symbols import by_library, declared_symbols, ifs_names, ifs_text, renamed_ifs
from tests.integration.test_repair import make_wheel

pytestmark = pytest.mark.hipcc  # the HIP toolchain's clang and LLVM tools (Debian's hipcc brings them)

HEADER = """\
#pragma once
#define C10_CUDA_API __attribute__((__visibility__("default")))
namespace c10::cuda {
C10_API_MARK C10_CUDA_API int device_count();
inline int inline_count() { return 1; }
struct C10_CUDA_API Stream {
  int query() const;
  int id() const { return 0; }
};
C10_CUDA_API extern int default_priority;
template <typename T> T pick(T a);
} // namespace c10::cuda
""".replace("C10_API_MARK ", "")


def llvm_tool(name: str) -> str:
    """The tool of the LLVM that hipcc drives (Debian: /usr/lib/llvm-N/bin)."""
    for folder in sorted(Path("/usr/lib").glob("llvm-*/bin"), reverse=True):
        if (folder / name).exists():
            return str(folder / name)
    pytest.fail(f"no {name} in the HIP toolchain's LLVM")


def ast_dump(tmp_path: Path) -> str:
    (tmp_path / "include" / "c10" / "hip").mkdir(parents=True)
    (tmp_path / "include" / "c10" / "hip" / "Functions.h").write_text(HEADER)
    # Declared first in a CPU header, again in ATen/hip (as torch 2.14's at::cuda::warp_size): libtorch_hip's.
    for header in ("torch/headeronly/Macros.h", "ATen/hip/HIPContextLight.h"):
        (tmp_path / "include" / header).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "include" / header).write_text("#pragma once\nnamespace at::cuda { int warp_size(); }\n")
    (tmp_path / "probe.cpp").write_text("#include <torch/headeronly/Macros.h>\n#include <c10/hip/Functions.h>\n"
                                        "#include <ATen/hip/HIPContextLight.h>\n")
    out = subprocess.run([llvm_tool("clang++"), "-std=c++17", "-fsyntax-only", f"-I{tmp_path / 'include'}",
                          "-Xclang", "-ast-dump=json", "-Xclang", "-ast-dump-filter=cuda", str(tmp_path / "probe.cpp")],
                         capture_output=True, text=True, check=True)
    return out.stdout


def test_declared_functions_are_read_from_the_real_ast(tmp_path):
    declared = declared_symbols([ast_dump(tmp_path)])
    mine = {name for name, headers in declared.items() if any("c10/hip/" in h for h in headers)}
    # Declared, not defined: a library must define them. Inline, defined in the class, templates: never.
    assert mine == {"_ZN3c104cuda12device_countEv", "_ZNK3c104cuda6Stream5queryEv", "_ZN3c104cuda16default_priorityE"}
    libs = by_library(declared, HIP_LIBRARIES, defined_elsewhere={"_ZN3c104cuda16default_priorityE"})
    assert libs["c10_hip"] == ["_ZN3c104cuda12device_countEv", "_ZNK3c104cuda6Stream5queryEv"]
    assert libs["torch_hip"] == ["_ZN2at4cuda9warp_sizeEv"]


def test_a_link_only_library_keeps_its_place_in_needed_under_as_needed(tmp_path):
    """The stub's soname is a ROCm wheel's, and an extension calling what it declares needs it even when
    linked --as-needed (an empty stub would be dropped)."""
    declared = declared_symbols([ast_dump(tmp_path)])
    symbols = by_library(declared, HIP_LIBRARIES, set())["c10_hip"]
    (tmp_path / "c10_hip.ifs").write_text(ifs_text("libc10_hip.so", symbols, ["libc10.so"]))
    lib = tmp_path / "lib"
    lib.mkdir()
    # Another file name than its soname: what the extension records can only come from the soname.
    subprocess.run([llvm_tool("llvm-ifs"), "--input-format=IFS", f"--output-elf={lib / 'stub-c10_hip.so'}",
                    str(tmp_path / "c10_hip.ifs")], check=True)
    (lib / "empty.c").write_text("")
    subprocess.run(["gcc", "-shared", "-o", str(lib / "libtorch_hip.so"), "-Wl,-soname,libtorch_hip.so",
                    str(lib / "empty.c")], check=True)
    (tmp_path / "ext.cpp").write_text(f"{HEADER}\nint entry() {{ return c10::cuda::device_count(); }}\n")
    ext = tmp_path / "ext.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(ext), str(tmp_path / "ext.cpp"), "-Wl,--as-needed",
                    f"-L{lib}", "-l:stub-c10_hip.so", "-ltorch_hip"], check=True)
    needed = subprocess.run(["readelf", "-d", str(ext)], capture_output=True, text=True, check=True).stdout
    assert "[libc10_hip.so]" in needed
    assert "[libtorch_hip.so]" not in needed  # what --as-needed does to a library of no use: the reason for symbols
    # llvm-ifs writes no program headers, so GNU readelf finds no dynamic section there; LLVM's reads it.
    stub = subprocess.run([llvm_tool("llvm-readelf"), "-d", str(lib / "stub-c10_hip.so")], capture_output=True,
                          text=True).stdout
    assert "Library soname: [libc10_hip.so]" in stub and "Shared library: [libc10.so]" in stub


def test_debian_sonames_become_a_rocm_wheels(tmp_path):
    """llvm-ifs's reading of a real library, renamed: the soname and the kit's own needed libraries."""
    (tmp_path / "c10.c").write_text("int c10_fn(void) { return 1; }\n")
    (tmp_path / "cpu.c").write_text("#include <math.h>\nint c10_fn(void);\n"
                                    "double cpu_fn(double x) { return c10_fn() + cos(x); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libc10.so.2.14", "-o", str(tmp_path / "libc10.so.2.14"),
                    str(tmp_path / "c10.c")], check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libtorch_cpu.so.2.14", "-o",
                    str(tmp_path / "libtorch_cpu.so.2.14"), str(tmp_path / "cpu.c"), str(tmp_path / "libc10.so.2.14"),
                    "-lm"], check=True)
    ifs = tmp_path / "cpu.ifs"
    subprocess.run([llvm_tool("llvm-ifs"), "--input-format=ELF", "--strip-undefined", f"--output-ifs={ifs}",
                    str(tmp_path / "libtorch_cpu.so.2.14")], check=True)
    text = renamed_ifs(ifs.read_text(), {"libc10.so.2.14": "libc10.so", "libtorch_cpu.so.2.14": "libtorch_cpu.so"})
    assert "SoName:          libtorch_cpu.so\n" in text or "SoName: libtorch_cpu.so\n" in text
    assert "libc10.so\n" in text and "libc10.so.2.14" not in text  # the kit's own libraries, renamed
    assert "libm.so.6" in text  # the system's stay
    assert ifs_names(text) == ["cpu_fn"]


def wheel_with_provenance(tmp_path: Path, build_only: bool) -> Path:
    wheel = make_wheel(tmp_path)
    prov = {"identity": {"python": {"torch": {"version": "2.14.1+rocm7.2.buildonly", "hip": "7.2.53211",
                                               **({"build_only": "true"} if build_only else {})}}}}
    import zipfile

    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("demo-1.0.dist-info/rocbuild-provenance.json", json.dumps(prov))
    return wheel


def test_index_and_repair_refuse_a_wheel_built_against_a_build_only_torch(cli, tmp_path):
    wheel = wheel_with_provenance(tmp_path, build_only=True)
    for argv in (["index", str(wheel.parent)], ["repair", str(wheel)]):
        code, _, err = cli(*argv)
        assert code == 2 and "built against a build-only torch" in err and "--allow-build-only" in err, err
    code, _, err = cli("index", str(wheel.parent), "--allow-build-only")
    assert code == 0, err


def test_verify_says_it_was_not_imported(cli, tmp_path):
    for build_only in (True, False):
        folder = tmp_path / str(build_only)
        folder.mkdir()
        wheel = wheel_with_provenance(folder, build_only)
        code, out, _ = cli("verify", "--json", str(wheel))
        report = json.loads(out)
        notes = [n for i in report["inputs"] for n in i["notes"]]
        said = any("built against a build-only torch (torch 2.14.1+rocm7.2.buildonly" in n for n in notes)
        assert said == build_only, notes


def test_the_kits_version_file_is_what_the_probe_reads(tmp_path):
    from rocbuild.detect.torch import parse_probe

    info = KitInfo(torch="2.14.1", rocm="7.2", hip="7.2.53211", made_from={"python3-torch": "2.14.1+dfsg-1"})
    text = version_py(info, Path("/opt/kit/rocm"))
    fields: dict[str, object] = {}
    exec(compile(text, "version.py", "exec"), fields)
    probe = json.dumps({"python": "3.14", "executable": "/x/python", "torch": {
        "path": "/x/torch", "fields": {k: v for k, v in fields.items() if not k.startswith("_") or k == "__version__"
                                       if isinstance(v, (str, bool)) or v is None}}})
    torch = parse_probe(probe).torch
    assert torch is not None and torch.flavour == "rocm" and torch.build_only and torch.rocm_home == "/opt/kit/rocm"
    assert torch.version == "2.14.1+rocm7.2.buildonly" and torch.rocm_version == "7.2"
