"""A whole rocbuild build run by a user without root, confined on the host: rocbuild installed into a venv
of the system python (which that user can run), the issue's probes in a step, then the bundled hello-hip
built for real with Debian's hipcc. Needs root only to make the user; the builds run as that user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.test_confined_steps import PROBES

pytestmark = [pytest.mark.network, pytest.mark.hipcc, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("bwrap") is None,
                                 reason="needs root (to make a user), useradd and bubblewrap")]
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def user() -> Iterator[tuple[str, Path, Path]]:
    """(name, its home, rocbuild's venv): a fresh user, and rocbuild from this checkout in a venv it can run."""
    name = f"rbtest{uuid.uuid4().hex[:6]}"
    base = Path(tempfile.mkdtemp(prefix="rocbuild-rootless-"))
    base.chmod(0o755)  # mkdtemp makes it 0700; the user must reach the venv
    home = base / "home"
    subprocess.run(["useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/sh", name], check=True)
    try:
        home.mkdir()
        venv = base / "venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", venv], check=True)
        subprocess.run([venv / "bin" / "pip", "install", "-q", "--disable-pip-version-check", REPO], check=True,
                       capture_output=True)
        shutil.copytree(REPO / "examples" / "hello-hip", home / "hello-hip")
        (home / ".ssh").mkdir()
        (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
        shutil.chown(home, name)
        for path in home.rglob("*"):
            shutil.chown(path, name)
        yield name, home, venv
    finally:
        subprocess.run(["userdel", name], check=False)
        shutil.rmtree(base, ignore_errors=True)


def as_user(user: tuple[str, Path, Path], *args: object, path: str = "/usr/local/bin:/usr/bin:/bin"
            ) -> subprocess.CompletedProcess[str]:
    name, home, venv = user
    env = {"PATH": f"{venv / 'bin'}:{path}", "HOME": str(home), "LANG": "C.UTF-8", "CI_SECRET_TOKEN": "hunter2"}
    # setpriv by its path: the PATH given is the command's, and may lack it
    return subprocess.run([shutil.which("setpriv") or "setpriv", f"--reuid={name}", f"--regid={name}", "--init-groups", "--",
                           venv / "bin" / "rocbuild", *map(str, args)], env=env, cwd=home, capture_output=True,
                          text=True, check=False, timeout=600)


def probed(user: tuple[str, Path, Path], name: str, *args: object) -> str:
    """The issue's probes in a step, from a recipe at the top of the home folder, built with `args`: each is
    refused, nothing escapes. The tag the escape markers carry."""
    owner, home, _ = user
    tag = uuid.uuid4().hex[:8]
    (home / f"{name}.yaml").write_text(
        f"schema: 1\nname: probe\nversion: '1.0'\noutput: tree\nsource:\n  path: {home / 'hello-hip'}\n"
        f"env:\n  MARK_SYSTEM: /usr/local/rocbuild-escape-{tag}\n  MARK_TMP: /tmp/rocbuild-escape-{tag}\n"
        f"  SECRET_FILE: {home}/.ssh/id_ed25519\n  SLEEPER: '1'\n"
        f"steps:\n  - name: probe\n    shell: |\n{textwrap.indent(PROBES.strip(), '      ')}\n")
    shutil.chown(home / f"{name}.yaml", owner)
    done = as_user(user, "build", home / f"{name}.yaml", *args, "--work", home / f"w-{name}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not confined" not in done.stderr
    lines = (home / f"w-{name}" / "logs" / "01-probe.log").read_text().splitlines()
    for line in ("no network", "system read-only", "tmp written", "home hidden", "no devices", "no secret variable",
                 "interfaces: lo"):
        assert line in lines, "\n".join(lines)
    assert not Path(f"/usr/local/rocbuild-escape-{tag}").exists() and not Path(f"/tmp/rocbuild-escape-{tag}").exists()
    return tag


def test_a_user_without_root_builds_confined(user):
    name, home, _ = user
    probed(user, "probe", "--arch", "gfx1030")
    # The bundled example, for real: its wheel verified, everything it wrote owned by the user.
    built = as_user(user, "build", "hello-hip", "--arch", "gfx1030", "--work", home / "w", "--out", home / "wh")
    assert built.returncode == 0, built.stderr[-3000:]
    assert "not confined" not in built.stderr, built.stderr
    plan = as_user(user, "plan", "hello-hip", "--arch", "gfx1030").stdout
    assert "confinement: each step runs in a sandbox" in plan and "--unshare-user" in plan, plan
    (wheel,) = (home / "wh").glob("hello_hip-*.whl")
    owners = {p.owner() for p in (home / "w", home / "wh", home / ".cache", wheel)}
    assert owners == {name}, owners


@pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="needs mmdebstrap")
def test_a_root_made_without_root_needs_uidmap_and_says_so(user):
    """mmdebstrap's unshare mode without shadow's newuidmap stops with only "E: cannot find newuidmap": rocbuild
    says first what to install (a PATH that has mmdebstrap, and python3 for the venv, but not newuidmap)."""
    _, home, _ = user
    tools = home / "tools"
    tools.mkdir(exist_ok=True)
    for tool in ("mmdebstrap", "python3", "unshare"):
        if not (tools / tool).exists():
            (tools / tool).symlink_to(shutil.which(tool) or tool)
    made = as_user(user, "root", "create", "never", "--rocm", "7.2", path=str(tools))
    assert made.returncode == 3, made.stderr[-3000:]
    assert "needs newuidmap and newgidmap, which are not installed" in made.stderr
    assert "apt-get install uidmap" in made.stderr and "Traceback" not in made.stderr
    assert not (home / ".local" / "share" / "rocbuild" / "roots" / "never.part").exists()


@pytest.mark.root
@pytest.mark.skipif(shutil.which("mmdebstrap") is None or shutil.which("newuidmap") is None,
                    reason="needs mmdebstrap and uidmap (a root made without root)")
def test_a_user_without_root_makes_a_root_and_builds_in_it_confined(user):
    """The same user makes a ROCm 7.2 root (mmdebstrap's unshare mode), then builds in it: the probes in a step
    whose recipe sits at the top of the home folder (the recipe's folder is shared into the root, and so the
    home would be), then the bundled hello-hip for gfx1100 with the root's ROCm 7.2."""
    name, home, _ = user
    made = as_user(user, "root", "create", "rl72", "--rocm", "7.2")
    assert made.returncode == 0, made.stderr[-3000:]
    assert "unshare mode" in made.stderr
    tag = probed(user, "probe-root", "--root", "rl72")
    tree = Path(as_user(user, "root", "path", "rl72").stdout.strip())
    assert not (tree / "usr" / "local" / f"rocbuild-escape-{tag}").exists()
    built = as_user(user, "build", "hello-hip", "--root", "rl72", "--arch", "gfx1100", "--work", home / "w-root",
                    "--out", home / "wh-root")
    assert built.returncode == 0, built.stderr[-3000:]
    assert "not confined" not in built.stderr
    (wheel,) = (home / "wh-root").glob("hello_hip-*+rocm7.2-*.whl")
    verdict = subprocess.run([sys.executable, "-m", "rocbuild", "verify", "--json", "--arch", "gfx1100", str(wheel)],
                             capture_output=True, text=True, check=False)
    assert json.loads(verdict.stdout)["ok"], verdict.stdout[-3000:]
