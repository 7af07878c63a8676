"""Offload bundle parsing and the per-arch coverage rules, on bundles the test writes."""

from __future__ import annotations

import pytest

from rocbuild.verify.bundles import (
    BundleError,
    TargetId,
    covers,
    deep_check,
    find_bundles,
    parse_compressed,
    parse_uncompressed,
)
from tests.bundlefmt import bundle, ccob, fake_code_object

HOST = "host-x86_64-unknown-linux-gnu"


def fat(*targets: str) -> bytes:
    entries = {HOST: b""}
    entries.update({f"hipv4-amdgcn-amd-amdhsa--{t}": fake_code_object(t) for t in targets})
    return bundle(entries)


def T(text: str) -> TargetId:
    t = TargetId.parse(text)
    assert t is not None, text
    return t


def test_plain_bundle_entries_and_targets():
    raw = fat("gfx90a", "gfx942:sramecc+:xnack-")
    b = parse_uncompressed(raw)
    assert [e.id for e in b.entries] == [HOST, "hipv4-amdgcn-amd-amdhsa--gfx90a",
                                         "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"]
    assert [str(t) for t in b.targets] == ["gfx90a", "gfx942:sramecc+:xnack-"]
    assert b.entries[1].size == len(fake_code_object("gfx90a"))
    assert b.size == len(raw) and b.compression is None


def test_old_hip_ids_and_generic_targets():
    raw = bundle({"hip-amdgcn-amd-amdhsa-gfx906": b"x" * 10, "hipv4-amdgcn-amd-amdhsa--gfx11-generic": b"y" * 10})
    assert [str(t) for t in parse_uncompressed(raw).targets] == ["gfx906", "gfx11-generic"]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("method", ["zlib", "zstd"])
def test_compressed_bundles(version, method):
    raw = fat("gfx90a", "gfx1030")
    data = b"\0" * 64 + ccob(raw, version=version, method=method) + b"\0" * 100  # section padding
    found, problems = find_bundles(data, strict=True)
    assert problems == []
    assert len(found) == 1
    b = found[0]
    assert (b.offset, b.compression, b.compressed_version) == (64, method, version)
    assert [str(t) for t in b.targets] == ["gfx90a", "gfx1030"]


def test_compressed_size_mismatch_and_truncation_are_errors():
    raw = fat("gfx90a")
    good = ccob(raw, version=2, method="zlib")
    lying = good[:12] + (len(raw) + 1).to_bytes(4, "little") + good[16:]
    # By default only the bundle header is decompressed: the entries are what the verdict needs ...
    assert [str(t) for t in parse_compressed(lying).targets] == ["gfx90a"]
    # ... and `verify --deep` decompresses all of it and checks the size the CCOB header gives.
    token = deep_check.set(True)
    try:
        with pytest.raises(BundleError, match="header says"):
            parse_compressed(lying)
    finally:
        deep_check.reset(token)
    with pytest.raises(BundleError, match="only .* are there"):
        parse_compressed(good[:-10])
    v1 = ccob(raw, version=1, method="zstd")
    with pytest.raises(BundleError, match="truncated|does not decompress"):
        parse_compressed(v1[:-10])
    with pytest.raises(BundleError, match="unknown compression method 7"):
        parse_compressed(good[:6] + b"\x07\x00" + good[8:])


def test_several_bundles_in_one_section():
    one, two = fat("gfx90a"), fat("gfx1030")
    data = one + b"\0" * (4096 - len(one) % 4096) + ccob(two, method="zstd")
    found, problems = find_bundles(data)
    assert problems == []
    assert [[str(t) for t in b.targets] for b in found] == [["gfx90a"], ["gfx1030"]]


def test_magic_as_an_ordinary_string():
    # The HIP runtime itself holds the magic as a string constant.
    data = b"\0junk\0__CLANG_OFFLOAD_BUNDLE__\0CCOB\0hipv4-amdgcn-amd-amdhsa--\0more strings here\0"
    assert find_bundles(data, strict=False) == ([], [])
    found, problems = find_bundles(data, strict=True)
    assert found == [] and len(problems) == 2
    assert "implausible entry count" in problems[0].message and "CCOB" not in problems[0].message
    assert [p.code for p in problems] == ["unreadable_bundle", "unreadable_bundle"]


def test_entry_past_the_end_is_an_error():
    raw = fat("gfx90a")
    with pytest.raises(BundleError, match="runs past the end"):
        parse_uncompressed(raw[:-20])


@pytest.mark.parametrize("have, wanted, ok", [
    (["gfx90a"], "gfx90a", True),
    (["gfx90a"], "gfx90a:xnack+", True),                  # no features: any mode
    (["gfx90a:xnack-"], "gfx90a", False),                 # xnack+ mode has nothing
    (["gfx90a:xnack-"], "gfx90a:xnack-", True),
    (["gfx90a:xnack-", "gfx90a:xnack+"], "gfx90a", True),  # both modes covered
    (["gfx942:sramecc+:xnack-"], "gfx942:sramecc+:xnack-", True),
    (["gfx942:sramecc+:xnack-"], "gfx942:xnack-", False),  # sramecc- mode missing
    (["gfx942:sramecc+:xnack-"], "gfx942", False),
    (["gfx1030"], "gfx1031", False),                      # no cross-GPU fallback
    (["gfx11-generic"], "gfx1101", True),                 # a generic ISA serves its family
    (["gfx11-generic"], "gfx90a", False),
    ([], "gfx1100", False),
])
def test_coverage_rules(have, wanted, ok):
    result, why = covers([T(h) for h in have], T(wanted))
    assert result is ok, why
    if not ok:
        assert wanted.split(":")[0] in why


def test_coverage_message_names_the_missing_mode():
    ok, why = covers([T("gfx90a:xnack-")], T("gfx90a"))
    assert not ok and "xnack+" in why and "gfx90a:xnack-" in why
    ok, why = covers([T("gfx11-generic")], T("gfx1100"))
    assert ok and "generic" in why


def test_large_compressed_bundle_is_streamed():
    # Bigger than what is kept in memory: the header is read from the front,
    # the rest only counted (sizes must still agree).
    raw = bundle({HOST: b"", "hipv4-amdgcn-amd-amdhsa--gfx942": b"\0" * (9 << 20)})
    b = parse_compressed(ccob(raw, version=3, method="zstd"))
    assert [str(t) for t in b.targets] == ["gfx942"] and b.entries[1].size == 9 << 20
