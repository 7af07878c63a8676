"""Memory: a step whose processes would use more than the memory it may have is slowed down, not
killed (real processes, paused and continued by rocbuild's runner); a build with a small --memory
budget plans fewer jobs and finishes; plan says what decided the job count."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rocbuild.process.runner import Runner

MIB = 1 << 20
# Each worker takes ~200 MB, then works (touching it) for a while, and says when it ended.
WORKER = """\
import sys, time
block = bytearray(200 * 1024 * 1024)
for _ in range(int(sys.argv[2])):
    for i in range(0, len(block), 4096):
        block[i] = (block[i] + 1) % 256
open(sys.argv[1], "w").write(str(time.monotonic()))
"""


def test_a_group_over_its_budget_is_slowed_not_killed(tmp_path):
    """Two ~200 MB workers under a 300 MiB budget: one is paused until the other ends, and both finish."""
    (tmp_path / "worker.py").write_text(WORKER)
    py = sys.executable
    log = tmp_path / "step.log"
    result = Runner(memory=300 * MIB, memory_per_job=200 * MIB).run(
        None, shell=f"{py} worker.py a.end 30 & {py} worker.py b.end 30 & wait", cwd=tmp_path, log=log)
    assert result.exit_code == 0
    text = log.read_text()
    assert "[rocbuild] memory:" in text and "paused pid" in text and "goes on" in text
    assert (tmp_path / "a.end").is_file() and (tmp_path / "b.end").is_file()


@pytest.mark.hipcc
def test_a_small_budget_plans_one_job_and_the_build_finishes(cli, tmp_path):
    args = ["hello-hip", "--arch", "gfx90a", "--work", tmp_path / "w", "--out", tmp_path / "wh", "--memory", "1GiB"]
    code, out, err = cli("plan", *args, "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["jobs"] == 1 and "--memory 1.0 GiB" in plan["jobs_why"]
    steps = plan["steps"]
    assert all(s["env"].get("CMAKE_BUILD_PARALLEL_LEVEL", "1") == "1" for s in steps)
    code, out, err = cli("build", *args)
    assert code == 0, err
    assert [Path(line).name for line in out.splitlines()][0].startswith("hello_hip-")


def test_a_bad_budget_is_a_usage_error(cli, tmp_path):
    code, _, err = cli("plan", "hello-hip", "--arch", "gfx90a", "--memory", "lots")
    assert code == 2 and "--memory" in err and "9GiB" in err
