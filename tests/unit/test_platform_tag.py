"""A platform tag a build backend claimed by itself is not kept: no auditwheel has checked it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from rocbuild.engine.relabel import plain_platform, rewrite_wheel


@pytest.mark.parametrize("tags, expected", [
    ("manylinux2014_x86_64", "linux_x86_64"),
    ("manylinux_2_17_x86_64.manylinux2014_x86_64", "linux_x86_64"),
    ("musllinux_1_2_aarch64", "linux_aarch64"),
    ("linux_x86_64", "linux_x86_64"),
    ("any", "any"),
])
def test_a_claimed_policy_becomes_the_plain_linux_tag(tags, expected):
    assert plain_platform(tags) == expected


def test_rotary_emb_s_manylinux2014_claim_is_retagged_in_the_name_and_in_wheel(tmp_path: Path):
    # rotary-emb 0.5.2's setup.py sets bdist_wheel's plat_name to manylinux2014_x86_64
    info = "rotary_emb-0.5.2.dist-info"
    src = tmp_path / "rotary_emb-0.5.2-cp314-cp314-manylinux2014_x86_64.whl"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr("rotary_emb.so", b"\x7fELF")
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: rotary_emb\nVersion: 0.5.2\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp314-cp314-manylinux2014_x86_64\n")
        zf.writestr(f"{info}/RECORD", "")
    out = rewrite_wheel(src, tmp_path / "out", "rocm7.2", {})
    assert out.name == "rotary_emb-0.5.2+rocm7.2-cp314-cp314-linux_x86_64.whl"
    with zipfile.ZipFile(out) as zf:
        wheel = zf.read("rotary_emb-0.5.2+rocm7.2.dist-info/WHEEL").decode()
    assert "Tag: cp314-cp314-linux_x86_64\n" in wheel and "manylinux" not in wheel
