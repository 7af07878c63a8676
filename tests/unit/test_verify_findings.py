"""verify's findings are codes with data: verdicts decide on the codes, the words are rendered in one
place (verify/finding.py), and rules return what they found instead of editing what they are given."""

from __future__ import annotations

import copy
import dataclasses
import struct
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from rocbuild.verify.bundles import TargetId
from rocbuild.verify.elf import ElfInfo
from rocbuild.verify.finding import CODES, MESSAGES, UNREADABLE, Finding
from rocbuild.verify.findings import FileFindings, InputFindings, rocm_search, runpath_kind
from rocbuild.verify.provenance import parse_provenance
from rocbuild.verify.rules import (
    built_against,
    device_code_present,
    judge,
    judge_file,
    judge_rocm_majors,
    leaked_build_paths,
    release_series,
    torch_pinned,
)
from rocbuild.verify.verdict import verify_paths


def elf_without_sections() -> bytes:
    """The ELF header of an x86-64 shared library and nothing else: readable, and no device code in it."""
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)


@pytest.fixture
def inputs(tmp_path) -> dict[str, Path]:
    out = {"bad bundle": tmp_path / "bad.co", "bad elf": tmp_path / "bad.so", "cpu": tmp_path / "libcpu.so"}
    out["bad bundle"].write_bytes(b"__CLANG_OFFLOAD_BUNDLE__" + (5000).to_bytes(8, "little") + b"\0" * 40)
    out["bad elf"].write_bytes(b"\x7fELF" + b"\0" * 12)
    out["cpu"].write_bytes(elf_without_sections())
    return out


def judged(inputs: dict[str, Path]) -> dict[str, tuple[bool, list[str], list[str]]]:
    out = {}
    for name, path in inputs.items():
        verdict = verify_paths([path], ["gfx90a"])
        out[name] = (verdict.ok, verdict.problem_codes, verdict.problems)
    return out


def test_rewording_every_message_changes_no_verdict(inputs, monkeypatch):
    before = judged(inputs)
    # An unreadable file is its own cause: it is not also called a CPU-only build.
    assert {name: (ok, codes) for name, (ok, codes, _) in before.items()} == {
        "bad bundle": (False, ["unreadable_bundle"]), "bad elf": (False, ["unreadable_elf"]),
        "cpu": (False, ["cpu_only"])}
    assert "unreadable offload bundle" in before["bad bundle"][2][0]
    assert "not a readable ELF file" in before["bad elf"][2][0]
    for code in CODES:
        monkeypatch.setitem(MESSAGES, code, lambda f: f"reworded: {f.code} ({len(f.data)} data)")
    after = judged(inputs)
    assert {n: (ok, codes) for n, (ok, codes, _) in after.items()} == {n: (ok, codes) for n, (ok, codes, _) in before.items()}
    assert all("reworded: " in p and "unreadable offload bundle" not in p and "not a readable ELF" not in p
               for _, _, problems in after.values() for p in problems)


def test_every_code_has_words_and_they_read_as_before():
    assert set(MESSAGES) == set(CODES) and len(CODES) == len(set(CODES))
    bundle = Finding("unreadable_bundle", {"section": ".hip_fatbin", "offset": 0x40, "reason": "truncated header"})
    assert bundle.message == ".hip_fatbin: unreadable offload bundle at offset 0x40: truncated header"
    assert Finding("unreadable_bundle", {"offset": 0, "reason": "no"}).message == "unreadable offload bundle at offset 0x0: no"
    assert Finding("cpu_only", {"kind": "wheel", "files": 0, "targets": ("gfx90a", "gfx1030")}).message == (
        "holds no ELF file at all, so no HIP device code, and nothing in it links the ROCm runtime, but gfx90a, "
        "gfx1030 requested: a CPU-only build (was the HIP/ROCm backend of the project enabled?)")
    assert not Finding("build_paths", {"which": "RPATH", "paths": ("/root/x",)}).problem
    with pytest.raises(dataclasses.FrozenInstanceError):
        bundle.code = "cpu_only"  # type: ignore[misc]
    assert UNREADABLE <= set(CODES)


def test_rules_return_findings_and_leave_their_input_as_it_was():
    lib = FileFindings("pkg/_ext.so", ElfInfo(machine="EM_X86_64", needed=["libcudart.so.12", "libamdhip64.so.6"],
                                              runpath=["/root/build/lib"]))
    damaged = FileFindings("pkg/_k.so", ElfInfo(machine="EM_X86_64", problems=[
        Finding("unreadable_bundle", {"section": ".hip_fatbin", "offset": 0x1000, "reason": "truncated header"})]))
    read = InputFindings("pkg-1.0+rocm7.2-py3-none-any.whl", "wheel", files=(lib, damaged))
    kept = copy.deepcopy(read)
    targets = [TargetId("gfx90a")]

    assert [f.code for f in judge_file(lib, targets)] == ["build_paths", "links_cuda"]
    assert [f.code for f in judge_rocm_majors(read, built_with=7)] == ["major_disagrees", "major_disagrees"]
    assert device_code_present(read, list(read.files), targets, require=True) == ()  # the damaged bundle says why
    assert [f.code for f in device_code_present(read, [lib], targets, require=True)] == ["runtime_only_unwanted"]
    verdict = judge(read, targets, only=("pkg/_ext.so",), built_with=7)
    assert [f.code for f in verdict.files[0].found] == ["build_paths", "links_cuda"]
    assert [f.code for f in verdict.found] == ["runtime_only_unwanted", "major_disagrees", "major_disagrees"]
    assert verdict.problem_codes() == ["links_cuda", "unreadable_bundle", "runtime_only_unwanted", "major_disagrees",
                                       "major_disagrees"]
    assert [f.judged for f in verdict.files] == [True, False]
    assert read == kept and read.found == () and all(f.found == () and f.coverage == {} and f.judged for f in read.files)
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.found = ()  # type: ignore[misc]


def test_provenance_is_read_into_a_value_that_tolerates_odd_files():
    p = parse_provenance({"rocbuild": "0.9", "build_key": "abc", "identity": {
        "toolchain": {"rocm_version": "7.2.4", "rocm_path": "/opt/rocm-7.2.4"}, "archs": ["gfx90a"],
        "recipe": {"name": "demo", "version": "1.0"}, "source": {"kind": "git", "identity": "f" * 40}}})
    assert (p.rocm_version, p.rocm_major, p.recipe, p.archs, p.source_kind) == ("7.2.4", 7, "demo", ("gfx90a",), "git")
    for odd in ({}, {"identity": ["not", "a", "mapping"]}, {"identity": {"toolchain": {"rocm_version": True}}},
                {"identity": {"toolchain": {"rocm_version": "next"}, "archs": "gfx90a"}}):
        p = parse_provenance(odd)
        assert p.rocm_major is None and p.archs == () and p.raw == odd


def test_what_a_wheel_needs_at_run_time_is_said_from_its_provenance_as_a_note():
    prov = parse_provenance({"run_env": {"FLASH_ATTENTION_TRITON_AMD_ENABLE": "TRUE"}})
    (said,) = built_against(InputFindings("fa-1.0+rocm7.2-py3-none-any.whl", "wheel", provenance=prov))
    assert said.code == "run_env" and not said.problem
    assert said.message.startswith("at run time it needs FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE")
    assert built_against(InputFindings("x-1.0-py3-none-any.whl", "wheel", provenance=parse_provenance({}))) == ()


@pytest.mark.parametrize("entry, kind", [
    ("$ORIGIN/../lib", "origin"), ("${ORIGIN}", "origin"), ("$ORIGIN/../_rocm_sdk_core/lib", "pip rocm"),
    ("/usr/lib/python3.12/site-packages/_rocm_sdk_libraries_gfx94X/lib", "pip rocm"),
    ("/opt/rocm/lib", "rocm"), ("/opt/rocm/", "rocm"), ("/opt/rocm-7.0.0rc1/lib", "rocm"),
    ("/opt/rocm-6.2.0/lib", "pinned rocm"), ("/opt/rocm-6.2.0/lib/../lib64", "pinned rocm"),
    ("/usr/lib", "system"), ("/usr/lib64/", "system"), ("/lib", "system"), ("/lib64", "system"),
    ("/usr/lib/x86_64-linux-gnu", "system"), ("/usr/local/lib", "system"), ("/lib/aarch64-linux-gnu", "system"),
    ("/opt/rh/gcc-toolset-9/root/usr/lib64", "build"), ("/root/build/lib", "build"), ("/tmp/pip-build/lib", "build"),
    ("/opt/rocmish/lib", "build"), ("/usr/lib/../../home/me/lib", "build"), ("/opt/conda/conda-bld/x/lib", "build"),
    ("lib", "relative"),
])
def test_each_runpath_entry_is_the_package_rocm_the_system_or_the_build_machine(entry, kind):
    assert runpath_kind(entry) == kind


def test_build_machine_folders_are_noted_and_never_where_rocm_is_found():
    paths = ["/opt/rh/gcc-toolset-9/root/usr/lib64", "$ORIGIN/../_rocm_sdk_core/lib", "/usr/lib64", "/home/ci/rocm/lib"]
    assert leaked_build_paths(paths) == ["/opt/rh/gcc-toolset-9/root/usr/lib64", "/home/ci/rocm/lib"]
    assert rocm_search(paths) == "AMD's pip ROCm ($ORIGIN/../_rocm_sdk_core/lib); a system folder (/usr/lib64)"
    assert rocm_search(["/root/build/lib"]).startswith("the system's library path")
    assert "only build-machine folders" in rocm_search(["/root/build/lib"])
    assert rocm_search([]).startswith("no RPATH/RUNPATH")


@pytest.mark.parametrize("spec, series", [
    ("==2.14.*", (2, 14)), ("==2.14.1", (2, 14)), ("==2.14", (2, 14)), ("~=2.14.1", (2, 14)), ("===2.14.1", (2, 14)),
    (">=2.14,<2.15", (2, 14)), (">=2.14.1,<=2.14.3", (2, 14)), (">=2.14,<2.15.0", (2, 14)), ("~=2.14,<2.15", (2, 14)),
    ("", None), (">=2.0", None), ("==2.*", None), ("~=2.14", None), (">=2.14,<2.15.1", None), (">=2.14,<3", None),
    ("!=2.14.2", None), ("<2.15", None), (">=2.15,<2.15", None), ("===local-build", None),
])
def test_a_requirement_pins_a_release_series_only_where_it_allows_no_other(spec, series):
    assert release_series(SpecifierSet(spec)) == series


def test_only_a_wheel_whose_metadata_was_read_is_judged_for_its_torch_pin():
    ext = FileFindings("pkg/_ext.so", ElfInfo(machine="EM_X86_64", needed=["libc10.so", "libtorch_cpu.so", "libm.so.6"]))
    read = InputFindings("pkg-1.0-py3-none-any.whl", "wheel", files=(ext,), requires=(Requirement("torch>=2"),))
    (found,) = torch_pinned(read)
    assert found.data == {"libs": ("libc10.so", "libtorch_cpu.so"), "where": "pkg/_ext.so", "requires": ("torch>=2",),
                          "series": ""}
    assert not found.problem and "(torch>=2) allows more than one torch release" in found.message
    assert torch_pinned(dataclasses.replace(read, requires=None)) == ()  # a zip with no METADATA
    with_provenance = dataclasses.replace(read, provenance=parse_provenance(
        {"identity": {"python": {"torch": {"version": "2.14.1+rocm7.2", "hip": "7.2.53211"}}}}))
    (found,) = torch_pinned(with_provenance)
    assert found.text("series") == "2.14" and found.message.endswith("should require torch==2.14.*")
