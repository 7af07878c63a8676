"""rocbuild on the oldest Python it claims (requires-python >= 3.10): installed from this checkout into a
fresh Python 3.10 venv, as a user would, then plan, a real build of hello-hip with this machine's HIP
toolchain and verify, each through the installed `rocbuild` command."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import REPO, oldest_python

pytestmark = [pytest.mark.hipcc, pytest.mark.py310, pytest.mark.network, pytest.mark.slow]
ARCH = "gfx90a"


def test_fresh_python310_venv_plans_builds_and_verifies(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([oldest_python(), "-m", "venv", str(venv)], check=True)
    # Not editable: the wheel's own dependency markers (tomli, typing_extensions) must bring what 3.10 lacks.
    subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q", str(REPO)],
                   check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROCBUILD_", "XDG_"))}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")

    def rocbuild(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "rocbuild"), *argv], capture_output=True, text=True, env=env,
                              cwd=tmp_path)

    plan = rocbuild("plan", "hello-hip", "--arch", ARCH, "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["python"]["version"].startswith("3.10")
    built = rocbuild("build", "hello-hip", "--arch", ARCH, "--work", str(tmp_path / "work"),
                     "--out", str(tmp_path / "wheelhouse"))
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheelhouse").glob("*.whl")
    assert wheel.name.endswith("-cp310-cp310-linux_x86_64.whl") and built.stdout.strip() == str(wheel)
    verdict = rocbuild("verify", "--json", "--arch", ARCH, str(wheel))
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    assert json.loads(verdict.stdout)["ok"]
