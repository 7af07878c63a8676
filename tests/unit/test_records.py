"""What the real-build records say a build takes (rocbuild/plan/records.py): the nearest verified record
of the recipe whose options the build has too, shown by plan and by a running step."""

from __future__ import annotations

import json

from rocbuild.plan.records import nearest, records_file


def record(archs, seconds, sets=(), verdict="pass", date="2026-11-25T10:00:00+00:00", **more):
    return {"recipe": "pkg", "rocm": "7.2", "archs": list(archs), "build_seconds": seconds, "sets": list(sets),
            "verdict": verdict, "date": date, "peak_process_mib": 1942, **more}


def test_the_same_archs_and_options_win_and_failures_never_count(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps([
        record(["gfx1100"], 589), record(["gfx1100", "gfx942", "gfx1201"], 2306),
        record(["gfx1100"], 9, sets=["backend=triton"], disk_mib=3276),
        record(["gfx942"], 1.0, verdict="fail"), {"recipe": "pkg", "verdict": "pass"}, "not a record"]))
    assert nearest("pkg", ("gfx1100", "gfx942", "gfx1201"), {}, path).seconds == 2306
    assert nearest("pkg", ("gfx942",), {}, path).seconds == 589  # no record for it: the fewest archs
    triton = nearest("pkg", (), {"backend": "triton"}, path)
    assert triton.seconds == 9 and triton.describe() == (
        "9 s for gfx1100 with ROCm 7.2, peak 1.9 GiB in one process, 3.2 GiB on disk [backend=triton] "
        "(2026-11-25, 2 cores)")
    assert nearest("other", ("gfx1100",), {}, path) is None


def test_records_can_be_named_or_turned_off(tmp_path):
    assert records_file({"ROCBUILD_RECORDS": str(tmp_path / "r.json")}) == tmp_path / "r.json"
    assert records_file({"ROCBUILD_RECORDS": ""}) is None
    assert nearest("pkg", ("gfx1100",), {}, tmp_path / "missing.json") is None
