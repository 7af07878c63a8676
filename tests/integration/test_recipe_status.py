"""`rocbuild recipes status`: each recipe's last real builds, read from a real-builds results file."""

from __future__ import annotations

import json

from tests.conftest import REPO


def record(recipe, rocm, verdict, date, archs=("gfx1100",), why=None):
    out = {"recipe": recipe, "rocm": rocm, "archs": list(archs), "verdict": verdict, "date": date,
           "rocbuild_version": "0.1.0", "suite": "sid", "build_seconds": 10.0}
    if why:
        out["why"] = why
    return out


def test_the_shipped_results_are_what_status_says(cli):
    shipped = json.loads((REPO / "real-builds" / "results.json").read_text())
    code, out, err = cli("recipes", "status", "--json")
    assert code == 0, err
    rows = {r["recipe"]: r for r in json.loads(out)}
    for rec in shipped:
        (build,) = [b for b in rows[rec["recipe"]]["builds"] if (b["rocm"], b["archs"]) == (rec["rocm"], rec["archs"])]
        assert (build["verdict"], build["archs"], build["date"]) == (rec["verdict"], rec["archs"], rec["date"])
    never = {name for name, row in rows.items() if not row["built_for_real"]}
    assert never == set(rows) - {r["recipe"] for r in shipped}


def test_latest_result_per_rocm_and_arch_set_and_failures_with_their_reason(cli, tmp_path):
    results = tmp_path / "results.json"
    stopped = record("hello-hip", "7.2", "pass", "2026-11-22T00:00:00+00:00", archs=("gfx90a",))
    stopped.update(until="kernels", sets=["frameworks=none"])
    results.write_text(json.dumps([
        record("hello-hip", "7.2", "fail", "2026-11-01T00:00:00+00:00", archs=("gfx1100", "gfx942"), why="error: old"),
        record("hello-hip", "7.2", "pass", "2026-11-20T00:00:00+00:00", archs=("gfx1100", "gfx942")),
        record("hello-hip", "7.2", "pass", "2026-11-19T00:00:00+00:00"),
        record("hello-hip", "6.4", "fail", "2026-11-21T00:00:00+00:00", why="error: step 'wheel' failed"),
        stopped,
        {**record("hello-hip", "7.2.0", "pass", "2026-11-23T00:00:00+00:00"), "image": "localhost/amd-like:7.2",
         "pythons": "3.13,3.14"},
    ]))
    code, out, _ = cli("recipes", "status", "hello-hip", "horovod", "--results", results, "--json")
    assert code == 0
    hello, horovod = json.loads(out)
    # One line per ROCm release and arch set (one arch and three archs are both kept), the latest each.
    assert [(b["rocm"], b["verdict"], b["archs"]) for b in hello["builds"]] == [
        ("6.4", "fail", ["gfx1100"]), ("7.2", "pass", ["gfx1100"]), ("7.2", "pass", ["gfx90a"]),
        ("7.2", "pass", ["gfx1100", "gfx942"]), ("7.2.0", "pass", ["gfx1100"])]
    assert hello["builds"][0]["why"] == "error: step 'wheel' failed" and hello["builds"][1]["why"] is None
    assert hello["builds"][2]["until"] == "kernels" and hello["builds"][2]["options"] == ["frameworks=none"]
    assert horovod == {"recipe": "horovod", "built_for_real": False, "builds": []}
    code, out, _ = cli("recipes", "status", "hello-hip", "horovod", "--results", results)
    assert "ROCm 6.4" in out and "FAILED (error: step 'wheel' failed)" in out
    assert "built up to step 'kernels', device code verified [frameworks=none]" in out
    assert "horovod              never built for real" in out
    assert "verified in a root from image localhost/amd-like:7.2 for python 3.13,3.14" in out


def test_a_bad_results_file_is_named(cli, tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text("{not json")
    code, _, err = cli("recipes", "status", "--results", bad)
    assert code == 2 and f"--results {bad}: not a results file" in err
    code, _, err = cli("recipes", "status", "--results", tmp_path / "missing.json")
    assert code == 2 and "no such file" in err
    code, _, err = cli("recipes", "list", "--results", bad)
    assert code == 2 and "--results goes with `recipes status`" in err
