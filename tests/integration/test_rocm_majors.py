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

    found = InputFindings("x.so", "elf", files=(FileFindings("x.so", ElfInfo(needed=["libamdhip64.so.6"])),))
    problems = [f.message for f in judge_rocm_majors(found, built_with=7) if f.problem]
    assert problems == ["links ROCm 6 libraries (x.so links libamdhip64.so.6), but it was built with ROCm 7: "
                        "built from a stale build folder or against another ROCm; rebuild with --clean"]
    found = InputFindings("x.so", "elf", files=(FileFindings("x.so", ElfInfo(needed=["libamdhip64.so.7"])),))
    problems = [f.message for f in judge_rocm_majors(found, built_with=7) if f.problem]
    assert problems == []


@pytest.fixture(scope="module")
def alternatives(tmp_path_factory) -> dict[str, Path]:
    """Shaped like bitsandbytes' own wheel: one library per ROCm release, each linking that release's
    hipblas (libhipblas.so.2 is ROCm 6, .so.3 ROCm 7); plus a library that links both."""
    d = tmp_path_factory.mktemp("alternatives")
    (d / "stub.c").write_text("void hipblasCreate(void) {}\n")
    (d / "lib.c").write_text("void hipblasCreate(void); void entry(void) { hipblasCreate(); }\n")
    for soname in ("libhipblas.so.2", "libhipblas.so.3", "libamdhip64.so.6"):
        cc("-shared", "-fPIC", d / "stub.c", f"-Wl,-soname,{soname}", "-o", d / soname)
    out = {}
    for name, needed in (("libbitsandbytes_rocm64.so", ["libhipblas.so.2"]),
                         ("libbitsandbytes_rocm70.so", ["libhipblas.so.3"]),
                         ("libbitsandbytes_rocm714.so", ["libhipblas.so.3"]),
                         ("libmixed.so", ["libamdhip64.so.6", "libhipblas.so.3"])):
        cc("-shared", "-fPIC", d / "lib.c", "-Wl,--no-as-needed", *[f"-l:{n}" for n in needed], f"-L{d}",
           "-o", d / name)
        out[name] = d / name
    return out


def majors_report(cli, wheel: Path) -> tuple[list[str], list[str]]:
    code, out, _ = cli("verify", "--json", "--arch", "gfx90a", wheel)
    found = json.loads(out)["inputs"][0]
    return [p for p in found["problems"] if "ROCm" in p and "CPU-only" not in p], found["notes"]


def test_libraries_for_different_rocm_releases_are_alternatives_not_a_mixture(cli, alternatives, tmp_path):
    libs = {f"bitsandbytes/{n}": alternatives[n] for n in ("libbitsandbytes_rocm64.so", "libbitsandbytes_rocm70.so",
                                                           "libbitsandbytes_rocm714.so")}
    problems, notes = majors_report(cli, wheel_of(tmp_path, "bitsandbytes-0.50.1-py3-none-any.whl", libs))
    assert problems == []
    assert [n.split(" (")[0] for n in notes] == ["bitsandbytes/libbitsandbytes_rocm64.so serves ROCm 6.4",
                                                 "bitsandbytes/libbitsandbytes_rocm70.so serves ROCm 7.0",
                                                 "bitsandbytes/libbitsandbytes_rocm714.so serves ROCm 7.14"]
    code, out, _ = cli("verify", "--arch", "gfx90a", wheel_of(tmp_path, "b-1-py3-none-any.whl", libs))
    assert "serves ROCm 6.4 (links libhipblas.so.2)" in out


def test_an_alternative_linking_another_major_than_its_name_fails(cli, alternatives, tmp_path):
    wheel = wheel_of(tmp_path, "b-1-py3-none-any.whl", {"b/libbitsandbytes_rocm70.so": alternatives["libbitsandbytes_rocm64.so"]})
    problems, _ = majors_report(cli, wheel)
    assert problems == [f"{wheel}: b/libbitsandbytes_rocm70.so is named for ROCm 7.0 but links ROCm 6 libraries "
                        "(libhipblas.so.2): it cannot load there"]


def test_one_library_mixing_majors_fails(cli, alternatives, tmp_path):
    for name in ("b/libmixed.so", "b/libmixed_rocm70.so"):
        wheel = wheel_of(tmp_path, "b-1-py3-none-any.whl", {name: alternatives["libmixed.so"]})
        problems, _ = majors_report(cli, wheel)
        assert problems == [f"{wheel}: {name} mixes ROCm majors inside one library: libamdhip64.so.6 (ROCm 6), "
                            "libhipblas.so.3 (ROCm 7)"]


def test_a_rocbuild_wheel_carrying_another_releases_library_is_stale(cli, alternatives, tmp_path):
    """bitsandbytes writes its library into the source folder: after a ROCm upgrade the old one is still there."""
    wheel = wheel_of(tmp_path, "b-1+rocm7.2-py3-none-any.whl",
                     {"b/libbitsandbytes_rocm64.so": alternatives["libbitsandbytes_rocm64.so"],
                      "b/libbitsandbytes_rocm72.so": alternatives["libbitsandbytes_rocm70.so"]})
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("b-1+rocm7.2.dist-info/rocbuild-provenance.json",
                    json.dumps({"identity": {"toolchain": {"rocm_version": "7.2.4"}}}))
    problems, notes = majors_report(cli, wheel)
    assert problems == [f"{wheel}: carries b/libbitsandbytes_rocm64.so, a library for ROCm 6.4, but its provenance "
                        "says it was built with ROCm 7.2.4: a stale library from an earlier build; rebuild with --clean"]
