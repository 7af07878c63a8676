"""verify's findings are codes with data: verdicts decide on the codes, the words are rendered in one
place (verify/finding.py), and rules return what they found instead of editing what they are given."""

from __future__ import annotations

import copy
import dataclasses
import struct
from pathlib import Path

import pytest

from rocbuild.verify.bundles import TargetId
from rocbuild.verify.elf import ElfInfo
from rocbuild.verify.finding import CODES, MESSAGES, UNREADABLE, Finding
from rocbuild.verify.findings import FileFindings, InputFindings
from rocbuild.verify.provenance import parse_provenance
from rocbuild.verify.rules import device_code_present, judge, judge_file, judge_rocm_majors
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
