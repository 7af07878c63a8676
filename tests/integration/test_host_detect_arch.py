"""Moved from tests/unit/test_detect_arch.py: these run real host probes (hipconfig, rocminfo, a python)."""

from __future__ import annotations

import json

from tests.unit.test_detect_arch import SAMPLES, sysfs  # noqa: F401 (sysfs is a fixture)


def test_detect_json_from_rocminfo_file(cli):
    code, out, err = cli("detect", "--json", "--rocminfo", SAMPLES / "gfx942_mi300x_x4.txt")
    assert code == 0, err
    data = json.loads(out)
    assert data["archs"] == ["gfx942"]
    assert data["gpus"][0] == {"gfx": "gfx942", "target_id": "gfx942:sramecc+:xnack-",
                               "marketing_name": data["gpus"][0]["marketing_name"], "source": "rocminfo",
                               "node": data["gpus"][0]["node"]}
    assert data["gpus"][0]["marketing_name"]
    assert data["override"] is None
    assert "rocm" in data


def test_detect_sysfs_text(cli, sysfs):
    code, out, _ = cli("detect", "--sysfs", sysfs)
    assert code == 0
    assert "archs:  gfx1100, gfx1036, gfx90a  (from sysfs)" in out
