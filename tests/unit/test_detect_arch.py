"""GPU detection against real rocminfo outputs and KFD sysfs trees built here."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocbuild.detect.arch import (
    decode_gfx_target_version,
    decode_override,
    detect_archs,
    parse_arch_list,
    parse_rocminfo,
    read_sysfs,
)
from rocbuild.errors import UsageError

SAMPLES = Path(__file__).parent.parent / "data" / "rocminfo"

# From the samples' README: generic ISAs and CPU agents are never archs.
EXPECTED = {
    "gfx1030_override_rx6700xt.txt": ["gfx1030"],
    "gfx1030_rx6800xt_wsl2.txt": ["gfx1030"],
    "gfx1100_plus_gfx1036_igpu_cpu_2gpus.txt": ["gfx1100", "gfx1036"],
    "gfx1100_rx7900xtx.txt": ["gfx1100"],
    "gfx1150_apu_radeon890m.txt": ["gfx1150"],
    "gfx900_mi25_x7.txt": ["gfx900"],
    "gfx906_vega20_8gpu_4cpu_oldformat.txt": ["gfx906"],
    "gfx90a_mi210_multi.txt": ["gfx90a"],
    "gfx90a_mi250x_lumi_empty_marketing_name.txt": ["gfx90a"],
    "gfx942_mi300a_apu.txt": ["gfx942"],
    "gfx942_mi300x_x4.txt": ["gfx942"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rocminfo_samples(name):
    gpus = parse_rocminfo((SAMPLES / name).read_text())
    archs = list(dict.fromkeys(g.gfx for g in gpus))
    assert archs == EXPECTED[name]


def test_samples_all_covered():
    assert sorted(p.name for p in SAMPLES.glob("*.txt")) == sorted(EXPECTED)


def test_rocminfo_counts_and_features():
    gpus = parse_rocminfo((SAMPLES / "gfx906_vega20_8gpu_4cpu_oldformat.txt").read_text())
    assert len(gpus) == 8  # the 4 CPU agents are skipped
    mi300a = parse_rocminfo((SAMPLES / "gfx942_mi300a_apu.txt").read_text())
    # The CPU agent is *named* like the accelerator: only Device Type tells.
    assert [g.target_id for g in mi300a] == ["gfx942:sramecc+:xnack-"]
    assert mi300a[0].marketing_name == "AMD Instinct MI300A"
    lumi = parse_rocminfo((SAMPLES / "gfx90a_mi250x_lumi_empty_marketing_name.txt").read_text())
    assert lumi[0].marketing_name == ""


def test_rocminfo_without_gpu_agents():
    text = "\x1b[31mROCk module is NOT loaded, possibly no GPU devices\x1b[0m\n"
    assert parse_rocminfo(text) == []


def write_node(nodes: Path, n: int, props: dict[str, int], name: str = "") -> None:
    d = nodes / str(n)
    d.mkdir(parents=True)
    (d / "properties").write_text("".join(f"{k} {v}\n" for k, v in props.items()))
    (d / "name").write_text(name + "\n")


@pytest.fixture
def sysfs(tmp_path) -> Path:
    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes"
    write_node(nodes, 0, {"cpu_cores_count": 16, "simd_count": 0, "gfx_target_version": 0, "vendor_id": 0})
    write_node(nodes, 1, {"simd_count": 256, "gfx_target_version": 110000, "vendor_id": 4098}, "gfx1100")
    write_node(nodes, 2, {"simd_count": 4, "gfx_target_version": 100306, "vendor_id": 4098}, "ip discovery")
    write_node(nodes, 10, {"simd_count": 440, "gfx_target_version": 90010, "vendor_id": 4098})
    write_node(nodes, 11, {"simd_count": 440, "gfx_target_version": 90010, "vendor_id": 4098})
    return tmp_path


def test_sysfs_nodes(sysfs):
    gpus = read_sysfs(sysfs)
    assert [g.gfx for g in gpus] == ["gfx1100", "gfx1036", "gfx90a", "gfx90a"]  # numeric node order
    det = detect_archs(sysfs_root=sysfs, environ={})
    assert det.source == "sysfs"
    assert det.archs == ["gfx1100", "gfx1036", "gfx90a"]  # duplicates collapse


def test_sysfs_unreadable_node_is_skipped(sysfs):
    bad = sysfs / "sys/class/kfd/kfd/topology/nodes/3"
    (bad / "properties").mkdir(parents=True)  # reading it raises an OSError
    assert [g.gfx for g in read_sysfs(sysfs)][0] == "gfx1100"


def test_override_reported_with_real_hardware(tmp_path):
    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes"
    write_node(nodes, 1, {"gfx_target_version": 100301, "vendor_id": 4098})  # RX 6700 XT is gfx1031
    det = detect_archs(sysfs_root=tmp_path, environ={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    assert det.archs == ["gfx1030"]
    assert det.override.gfx == "gfx1030" and det.override.hardware == ["gfx1031"]
    assert det.to_json()["override"]["value"] == "10.3.0"


def test_malformed_override_is_noted(sysfs):
    det = detect_archs(sysfs_root=sysfs, environ={"HSA_OVERRIDE_GFX_VERSION": "eleven"})
    assert det.override is None and "malformed" in det.notes[0]


@pytest.mark.parametrize("value,name", [
    (90010, "gfx90a"), (90012, "gfx90c"), (90402, "gfx942"), (100300, "gfx1030"),
    (110000, "gfx1100"), (110501, "gfx1151"), (120001, "gfx1201"), (90000, "gfx900"), (0, None),
])
def test_decode_gfx_target_version(value, name):
    assert decode_gfx_target_version(value) == name


@pytest.mark.parametrize("value,name", [("10.3.0", "gfx1030"), ("11.0.0", "gfx1100"), ("9.0.10", "gfx90a"),
                                        ("11", None), ("x.y.z", None)])
def test_decode_override(value, name):
    assert decode_override(value) == name


def test_arch_list_accepts_targets_with_features():
    assert parse_arch_list("gfx90a, gfx942:sramecc+:xnack-,gfx90a") == ["gfx90a", "gfx942:sramecc+:xnack-"]


@pytest.mark.parametrize("bad", [
    "", "gfx1100;gfx90a", "gfx1100;rm -rf /", "GFX1100", "gfx11-generic", "sm_80", "gfx", "gfx1100,",
    "gfx942:xnack+:xnack-", "gfx942:turbo+", "../../etc/passwd", "gfx1100 gfx90a", "gfx1100\ngfx90a", "gfx" + "1" * 500,
    "$(id)", "gfx90a\x00",
])
def test_arch_list_refuses(bad):
    with pytest.raises(UsageError) as info:
        parse_arch_list(bad)
    assert "gfx1100" in info.value.render()  # shows the accepted form
    assert info.value.exit_code == 2


def test_detect_unreadable_rocminfo_file(cli, tmp_path):
    code, _, err = cli("detect", "--rocminfo", tmp_path / "missing.txt")
    assert code == 2 and "cannot read --rocminfo file" in err
