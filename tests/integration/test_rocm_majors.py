"""verify knows ROCm majors: real ELF files (cc) linking stand-in ROCm runtimes by soname."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest


def cc(*argv: object) -> None:
    subprocess.run(["cc", *map(str, argv)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def exts(tmp_path_factory) -> dict[str, Path]:
    """ext6 links libamdhip64.so.6 (ROCm 6), ext7 links libamdhip64.so.7 and libhipblas.so.3 (ROCm 7)."""
    d = tmp_path_factory.mktemp("majors")
    (d / "stub.c").write_text("void hipInit(void) {}\nvoid hipblasCreate(void) {}\n")
    (d / "ext.c").write_text("void hipInit(void); void ext(void) { hipInit(); }\n")
    out = {}
    for major, blas in ((6, "2"), (7, "3")):
        lib = d / f"rocm{major}"
        lib.mkdir()
        cc("-shared", "-fPIC", d / "stub.c", f"-Wl,-soname,libamdhip64.so.{major}", "-o", lib / f"libamdhip64.so.{major}")
        cc("-shared", "-fPIC", d / "stub.c", f"-Wl,-soname,libhipblas.so.{blas}", "-o", lib / f"libhipblas.so.{blas}")
        ext = d / f"ext{major}.so"
        cc("-shared", "-fPIC", d / "ext.c", "-Wl,--no-as-needed", f"-l:libamdhip64.so.{major}",
           f"-l:libhipblas.so.{blas}", f"-L{lib}", "-o", ext)
        out[f"ext{major}"] = ext
    return out


def wheel_of(tmp_path: Path, name: str, files: dict[str, Path]) -> Path:
    wheel = tmp_path / name
    with zipfile.ZipFile(wheel, "w") as zf:
        for member, path in files.items():
            zf.write(path, member)
    return wheel


def verify(cli, *paths: Path):
    code, out, _ = cli("verify", "--json", "--arch", "gfx90a", *paths)
    return code, [p for p in json.loads(out)["problems"] if "mixes ROCm majors" in p or "links ROCm" in p]


def test_a_wheel_mixing_rocm_majors_fails(cli, exts, tmp_path):
    wheel = wheel_of(tmp_path, "demo-1.0-py3-none-any.whl", {"demo/_a.so": exts["ext6"], "demo/_b.so": exts["ext7"]})
    code, problems = verify(cli, wheel)
    assert code == 1
    assert problems and "mixes ROCm majors: ROCm 6: demo/_a.so links libamdhip64.so.6" in problems[0]
    assert "ROCm 7: demo/_b.so links libamdhip64.so.7" in problems[0]


def test_a_label_that_disagrees_with_what_the_files_link_fails(cli, exts, tmp_path):
    stale = wheel_of(tmp_path, "demo-1.0+rocm7.2-py3-none-any.whl", {"demo/_a.so": exts["ext6"]})
    _, problems = verify(cli, stale)
    assert problems == [f"{stale}: links ROCm 6 libraries (demo/_a.so links libamdhip64.so.6), but its label "
                        "+rocm7.2 says ROCm 7: built from a stale build folder or against another ROCm; "
                        "rebuild with --clean"]
    right = wheel_of(tmp_path, "demo-1.0+rocm7.2-cp311-cp311-linux_x86_64.whl", {"demo/_a.so": exts["ext7"]})
    assert verify(cli, right)[1] == []


def test_the_build_checks_the_major_of_its_toolchain():
    from rocbuild.verify.elf import ElfInfo
    from rocbuild.verify.findings import FileFindings, InputFindings
    from rocbuild.verify.rules import judge_rocm_majors

    found = InputFindings("x.so", "elf", files=[FileFindings("x.so", ElfInfo(needed=["libamdhip64.so.6"]))])
    judge_rocm_majors(found, built_with=7)
    assert found.problems == ["links ROCm 6 libraries (x.so links libamdhip64.so.6), but it was built with ROCm 7: "
                              "built from a stale build folder or against another ROCm; rebuild with --clean"]
    found = InputFindings("x.so", "elf", files=[FileFindings("x.so", ElfInfo(needed=["libamdhip64.so.7"]))])
    judge_rocm_majors(found, built_with=7)
    assert found.problems == []
