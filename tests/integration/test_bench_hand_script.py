"""The bench's hand build (bench/real.py) replays a plan's steps by hand: it must run where the plan's own
folders are gone, as they are once rocbuild has built (its steps' TMPDIR is removed when they end)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_hand_script_makes_the_plans_tmpdir_again_and_moves_the_work_folder(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # the bench's modules import each other by name
    sys.modules.pop("real", None)
    from real import hand_script

    work, hand, tree, buildenv = tmp_path / "w1", tmp_path / "hand", tmp_path / "tree", tmp_path / "buildenv"
    tree.mkdir()
    buildenv.mkdir()
    gone = tmp_path / "rocbuild-tmp-removed"  # the plan's TMPDIR, outside the work folder, removed
    plan = {"env": {"TMPDIR": str(gone), "OUT": str(work / "dist")},
            "steps": [{"argv": ["sh", "-c", 'mktemp -p "$TMPDIR" && echo "$OUT" > "$1/out"', "sh", str(work)],
                       "env": {}, "cwd": str(work / "src")}]}
    script = tmp_path / "hand.sh"
    script.write_text(hand_script(plan, work, hand, tree, buildenv))
    ran = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert (hand / "out").read_text().strip() == str(hand / "dist")
