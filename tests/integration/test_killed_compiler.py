"""A compiler killed by signal 9 in a real step: the failure report names it first, with the jobs and the
memory per job the build ran with, and what to set. The step's own shell kills its g++'s cc1plus (its
grandchild, found by parent id, so nothing else on the machine is touched): the machine's memory is never
exhausted to get there."""

from __future__ import annotations

import json
from pathlib import Path

RECIPE = """\
schema: 1
name: killed
version: "1.0"
source:
  path: {src}
requires:
  memory-per-job: 3GiB
steps:
  - name: compile
    shell: |
      g++ -O2 -c heavy.cpp -o heavy.o &
      gxx=$!
      for i in $(seq 200); do cc1=$(pgrep -P "$gxx" cc1plus) && break; sleep 0.05; done
      kill -9 $cc1
      wait $gxx
"""
# Enough templates that cc1plus runs for a while before it is killed.
HEAVY = "#include <regex>\n#include <map>\n#include <string>\n" + "".join(
    f"std::map<std::string, std::regex> m{i}{{{{\"k\", std::regex(\"a{i}+b\")}}}};\n" for i in range(40))


def test_a_killed_compiler_is_named_with_the_jobs_and_memory_in_force(cli, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "heavy.cpp").write_text(HEAVY)
    recipe = tmp_path / "killed.yaml"
    recipe.write_text(RECIPE.format(src=src))
    code, _, err = cli("build", recipe, "--arch", "gfx1030", "--jobs", "2", "--work", tmp_path / "work",
                       "--out", tmp_path / "out")
    assert code == 1, err
    lines = err[err.index("error: step 'compile' failed"):].splitlines()
    shown = "\n".join(lines[:15])
    assert "cause (killed, log line" in shown and "Killed signal terminated program cc1plus" in shown, shown
    assert "killed by signal 9: most often out of memory. In force: 2 parallel job(s)" in shown
    assert "3.0GiB per job" in shown and "memory-per-job: 6GiB" in shown
    report = json.loads(next(Path(tmp_path / "work" / "logs").glob("*compile.report.json")).read_text())
    assert report["killed"] is True and report["traps"][0]["trap"] == "compiler-killed"
