"""Interrupts stop a step's whole process group, and the build resumes; a killed rocbuild's step keeps others out.

rocbuild runs as a real process here, its step as a real python that starts a grandchild, as
make and ninja do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# The folder for its process ids: the argument (no environment variable reaches a build root), else PIDS_DIR.
STEP = """\
import os, subprocess, sys, time
pids = sys.argv[1] if len(sys.argv) > 1 else os.environ["PIDS_DIR"]
if os.path.exists(os.path.join(pids, "go")):
    open("built.txt", "w").write("ok")
    sys.exit(0)
grandchild = subprocess.Popen(["sleep", "300"])
open(os.path.join(pids, "child.tmp"), "w").write(f"{os.getpid()} {grandchild.pid}")
os.replace(os.path.join(pids, "child.tmp"), os.path.join(pids, "child"))
time.sleep(300)
"""

RECIPE = """\
schema: 1
name: sleeper
version: "1.0"
source:
  path: {src}
steps:
  - name: first
    run: [python, -c, "open('first.txt', 'w').write('1')"]
  - name: long
    run: [python, step.py]
"""


@pytest.fixture
def setup(tmp_path, rocm61):
    src = tmp_path / "project"
    src.mkdir()
    (src / "step.py").write_text(STEP)
    (tmp_path / "recipes").mkdir()
    recipe = tmp_path / "recipes" / "sleeper.yaml"
    recipe.write_text(RECIPE.format(src=src))
    pids = tmp_path / "pids"
    pids.mkdir()
    # PYTHONFAULTHANDLER: a rocbuild that outlives its signal is made to show where each thread stands.
    env = dict(os.environ, PIDS_DIR=str(pids), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONFAULTHANDLER="1",
               PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    # Unconfined: the step tells the test its pids, which in a sandbox's pid namespace mean nothing outside
    # (test_a_confined_step_leaves_no_process covers the sandbox).
    argv = [sys.executable, "-m", "rocbuild", "build", str(recipe), "--arch", "gfx90a", "--rocm", str(rocm61),
            "--work", str(tmp_path / "w"), "--out", str(tmp_path / "wheelhouse"), "--no-confine"]
    return argv, env, pids


def start(argv, env, pids) -> tuple[subprocess.Popen[str], int, int]:
    proc = spawn(argv, env)
    deadline = time.monotonic() + 60
    while not (pids / "child").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.05)
    child, grandchild = (int(x) for x in (pids / "child").read_text().split())
    return proc, child, grandchild


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """Its output once it ends; one still running after `timeout` fails the test with its signal state
    (from /proc) and every thread's stack (faulthandler, on the SIGABRT sent to it)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        signals = [line for line in status.splitlines() if line.startswith(("State", "Sig", "Shd", "Threads"))]
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"rocbuild still runs {timeout:g}s after the signal; its state: {signals}\nstderr:\n{err}")


def spawn(argv, env) -> subprocess.Popen[str]:
    """rocbuild as a terminal starts it: SIGINT at its default. Tests run in the background by a
    non-interactive shell (`make test &` in a script) have SIGINT ignored, which a child inherits across
    exec and Python then keeps ignoring: Ctrl-C must not reach a background job. Caught (here, by
    Python's handler), it is reset to the default in the child."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie waits only for its parent to read its status


def wait_dead(*pids: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_an_interrupt_stops_the_whole_step_and_the_build_resumes(setup, sig, code):
    argv, env, pids = setup
    proc, child, grandchild = start(argv, env, pids)
    proc.send_signal(sig)
    out, err = finish(proc, 60)
    assert proc.returncode == code, err
    assert "interrupted" in err and "run the same command again to resume" in err and "Traceback" not in err
    assert wait_dead(child, grandchild), "a process of the interrupted step is still running"
    (pids / "go").write_text("")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[1/2] first  (skipped: done in an earlier run" in done.stderr  # resumed, not started over


def test_a_step_left_running_by_a_killed_rocbuild_keeps_the_folder_locked(setup, cli, tmp_path):
    argv, env, pids = setup
    proc, child, grandchild = start(argv, env, pids)
    proc.kill()  # SIGKILL: rocbuild cannot stop anything
    proc.communicate(timeout=30)
    try:
        assert alive(child)
        again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 2, again.stderr
        assert "another rocbuild is building in" in again.stderr and "killed" in again.stderr
    finally:
        os.killpg(child, signal.SIGKILL)  # the step leads its own process group
    assert wait_dead(child, grandchild)
    (pids / "go").write_text("")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
