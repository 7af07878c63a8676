"""Builds that share a cache (CI cells on one runner) and start at once: one makes the git mirror, the
others wait for it and reuse it; none fails on another's half-made mirror."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import git, make_git_repo

RECIPE = """\
schema: 1
name: busy
version: "1.0"
source:
  git: {url}
  ref: v1.0
steps:
  - run: [python, -c, "print('built')"]
"""


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    # communicate(): both pipes read together (a full one would stall the process) and closed after
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def test_first_builds_started_at_once_share_one_mirror(tmp_path, rocm61):
    upstream = tmp_path / "upstream"
    # Enough history that a clone takes a while: every process starts its own before any finishes.
    make_git_repo(upstream, {f"src/f{i}.c": f"int f{i}(void) {{ return {i}; }}\n" * 200 for i in range(300)}, tag=None)
    for n in range(30):
        (upstream / "src" / "f0.c").write_text(f"int f0(void) {{ return {n}; }}\n")
        git(upstream, "commit", "-qam", f"change {n}")
    git(upstream, "tag", "v1.0")
    recipe = tmp_path / "busy.yaml"
    recipe.write_text(RECIPE.format(url=upstream))
    for round_ in range(2):
        cache = tmp_path / f"cache{round_}"
        env = dict(os.environ, XDG_CACHE_HOME=str(cache))
        argv = [sys.executable, "-m", "rocbuild", "prepare", str(recipe), "--rocm", str(rocm61), "--arch", "gfx90a"]
        runs = [subprocess.Popen([*argv, "--work", str(tmp_path / f"w{round_}-{i}")], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for i in range(4)]
        results = [finished(p) for p in runs]
        assert [code for code, _, _ in results] == [0] * 4, [err[-500:] for _, _, err in results]
        mirrors = sorted(p.name for p in (cache / "rocbuild" / "mirrors").iterdir())
        assert [m for m in mirrors if not m.endswith(".lock")] == [m for m in mirrors if m.endswith(".git")]
        assert len([m for m in mirrors if m.endswith(".git")]) == 1  # no .tmp-PID left behind
        trees = {Path(out.strip().splitlines()[-1]) for _, out, _ in results}
        assert len(trees) == 4 and all((t / "src" / "f299.c").is_file() for t in trees)
