"""Confined build steps on this machine, with the real bubblewrap: what a step can reach (network, the
machine's files, the home folder, the GPU, rocbuild's environment, processes that outlive it), what
`network: true` lifts, and what plan, doctor and a machine without bubblewrap say. The same in a build
root: tests/integration/test_build_roots.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

# Each probe says what it found on a line of its own, in capitals when the step got out.
PROBES = r"""
python3 -c 'import urllib.request as u; u.urlopen("https://pypi.org/simple/", timeout=5)' 2>/dev/null \
  && echo "REACHED the network" || echo "no network"
touch "$MARK_SYSTEM" 2>/dev/null && echo "WROTE the system" || echo "system read-only"
touch "$MARK_TMP" 2>/dev/null && [ -e "$MARK_TMP" ] && echo "tmp written"
cat "$SECRET_FILE" 2>/dev/null && echo "READ the home folder" || echo "home hidden"
ls /dev/kfd /dev/dri /dev/vda /dev/sda /dev/nvme0n1 2>/dev/null | grep -q . && echo "SAW devices" || echo "no devices"
[ -n "${CI_SECRET_TOKEN:-}" ] && echo "SAW the secret variable" || echo "no secret variable"
python3 -c 'import socket; print("interfaces:", ",".join(sorted(n for _, n in socket.if_nameindex())))'
setsid sleep "$SLEEPER" </dev/null >/dev/null 2>&1 &
echo "pid $$"
"""


def rocbuild(*args: object, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocbuild", *map(str, args)], capture_output=True, text=True,
                          env=env, check=False, timeout=300)


def sleepers(seconds: str) -> list[int]:
    """Processes anywhere on this machine running `sleep SECONDS`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", seconds.encode()]:
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture
def probe(tmp_path, rocm61):
    src, home = tmp_path / "src", tmp_path / "home"
    src.mkdir()
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    tag = uuid.uuid4().hex[:12]
    sleeper = f"{int(tag[:6], 16) % 900 + 1000}.{tag[6:]}"
    script = textwrap.indent(PROBES.strip(), "      ")
    recipe = tmp_path / "probe.yaml"
    recipe.write_text(f"schema: 1\nname: probe\nversion: '1.0'\noutput: tree\nsource:\n  path: {src}\n"
                      "env:\n"
                      f"  MARK_SYSTEM: /var/tmp/rocbuild-escape-{tag}\n  MARK_TMP: /tmp/rocbuild-escape-{tag}\n"
                      f"  SECRET_FILE: {home}/.ssh/id_ed25519\n  SLEEPER: '{sleeper}'\n"
                      f"steps:\n  - name: probe\n    shell: |\n{script}\n"
                      f"  - name: online\n    network: true\n    shell: |\n{script}\n")
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"), CI_SECRET_TOKEN="hunter2")
    marks = [Path(f"/var/tmp/rocbuild-escape-{tag}"), Path(f"/tmp/rocbuild-escape-{tag}")]
    yield recipe, env, ["--rocm", rocm61, "--arch", "gfx90a", "--work", tmp_path / "w"], sleeper
    for mark in marks:
        mark.unlink(missing_ok=True)
    for pid in sleepers(sleeper):
        os.kill(pid, 9)


def said(work: Path, step: str) -> list[str]:
    return (work / "logs" / f"{step}.log").read_text().splitlines()


def test_a_confined_step_reaches_nothing_but_its_work_folder(probe, tmp_path):
    recipe, env, args, sleeper = probe
    built = rocbuild("build", recipe, *args, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    lines = said(tmp_path / "w", "01-probe")
    for line in ("no network", "system read-only", "tmp written", "home hidden", "no devices", "no secret variable",
                 "interfaces: lo"):
        assert line in lines, "\n".join(lines)
    escaped = {"REACHED the network", "WROTE the system", "READ the home folder", "PRIVATE KEY", "SAW devices",
               "SAW the secret variable"}
    assert not escaped & set(lines)
    (pid,) = [int(line.split()[1]) for line in lines if line.startswith("pid ")]
    assert pid <= 3  # the step's shell is among the first processes of a pid namespace of its own
    assert not any(mark.exists() for mark in (Path("/var/tmp"), Path("/tmp")) for mark in mark.glob("rocbuild-escape-*"))
    assert sleepers(sleeper) == []  # the step's pid namespace ended with it, the setsid child too
    # `network: true` lifts the network and nothing else
    online = said(tmp_path / "w", "02-online")
    assert "interfaces: lo" not in online and any(line.startswith("interfaces: ") for line in online)
    assert "system read-only" in online and "home hidden" in online and "no secret variable" in online


def test_a_recipe_kept_in_the_home_folder_does_not_show_the_home_folder(probe, tmp_path):
    """The recipe's folder is bound back into a step (what it names may lie there), but never when that
    folder is the home folder itself: found by a build run as a user whose recipe sat in ~."""
    recipe, env, args, _ = probe
    in_home = Path(env["HOME"]) / "probe.yaml"
    in_home.write_text(recipe.read_text())
    built = rocbuild("build", in_home, *args, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    lines = said(tmp_path / "w", "01-probe")
    assert "home hidden" in lines and "PRIVATE KEY" not in lines, "\n".join(lines)


def test_plan_shows_the_sandbox_and_no_confine_turns_it_off(probe):
    recipe, env, args, _ = probe
    text = rocbuild("plan", recipe, *args, env=env).stdout
    assert "confinement: each step runs in a sandbox" in text and "--unshare-net" in text
    assert "network: allowed for this step" in text
    plan = json.loads(rocbuild("plan", recipe, *args, "--json", env=env).stdout)
    assert plan["confinement"]["confined"] is True
    first, online = plan["steps"]
    assert first["sandbox"][1:4] == ["--ro-bind", "/", "/"] and "--unshare-net" in first["sandbox"]
    assert "--unshare-net" not in online["sandbox"] and online["network"] is True
    assert plan["env"]["HOME"] == "/tmp/home" and "CI_SECRET_TOKEN" not in plan["env"]
    off = json.loads(rocbuild("plan", recipe, *args, "--json", "--no-confine", env=env).stdout)
    assert off["confinement"]["confined"] is False and off["confinement"]["why"] == "turned off by --no-confine"
    assert all(step["sandbox"] == [] for step in off["steps"])


def test_without_bubblewrap_the_build_says_once_that_it_is_not_confined(probe, tmp_path):
    recipe, env, args, _ = probe
    bare = tmp_path / "bin"  # the tools the probes use, and no bwrap
    bare.mkdir()
    for tool in ("bash", "python3", "touch", "cat", "ls", "grep", "setsid", "sleep"):
        (bare / tool).symlink_to(shutil.which(tool))
    env = dict(env, PATH=str(bare))
    built = rocbuild("build", recipe, *args, "--until", "probe", env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    notes = [line for line in built.stderr.splitlines() if "not confined" in line]
    assert notes == ["note: build steps are not confined: bubblewrap (bwrap) is not installed (apt-get install "
                     "bubblewrap)"]
    doctor = json.loads(rocbuild("doctor", "--json", env=env).stdout)
    (check,) = [c for c in doctor["checks"] if c["id"] == "confinement"]
    assert check["status"] == "warn" and "not installed" in check["message"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to become another user")
def test_rootless_bubblewrap_makes_the_same_sandbox():
    """What detect/confine.py asks bubblewrap for, as a user without root (a user namespace of its own)."""
    import tempfile

    from rocbuild.detect.confine import PROBE

    shared = Path(tempfile.mkdtemp(prefix="rocbuild-rootless-", dir="/tmp"))  # pytest's own folders are root's
    shared.chmod(0o777)
    script = ("touch /usr/x 2>/dev/null || echo read-only; ls /dev/kfd 2>/dev/null || echo no-gpu; id -u; "
              f"touch {shared}/written && echo written")
    try:
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bwrap", *PROBE,
                               "--unshare-user", "--bind", str(shared), str(shared), "--", "sh", "-c", script],
                              capture_output=True, text=True, check=False, cwd="/")
    finally:
        shutil.rmtree(shared)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["read-only", "no-gpu", "65534", "written"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to become another user")
def test_a_step_sandbox_nests_inside_a_root_entered_without_root():
    """A root entered without root: the outer bubblewrap maps this user to root in a user namespace and keeps its
    capabilities there (roots/enter.py), so the step's own sandbox (euid 0 inside: no --unshare-user) can be made."""
    from rocbuild.detect.confine import PROBE

    outer = ["bwrap", "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--ro-bind", "/", "/",
             "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    script = "touch /usr/x 2>/dev/null || echo read-only; python3 -c 'import socket; print(socket.if_nameindex())'"
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *outer, "--", "bwrap", *PROBE, "--", "sh",
            "-c", script]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["read-only", "[(1, 'lo')]"]
    # without the capabilities the nested sandbox cannot be made: what enter.py's --cap-add ALL is for
    without = [a for a in argv if a not in ("--cap-add", "ALL")]
    assert subprocess.run(without, capture_output=True, text=True, check=False, cwd="/").returncode != 0
