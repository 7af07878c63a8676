"""`--python 3.10,3.X` and `--python all`: one command builds one wheel per python (real builds of
hello-hip with this machine's HIP toolchain), each tagged for its python and verified; plan shows one
plan per python; prepare, which takes one, says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, oldest_python

pytestmark = [pytest.mark.hipcc, pytest.mark.py310, pytest.mark.network, pytest.mark.slow]


@pytest.fixture
def two_pythons(tmp_path, monkeypatch) -> list[str]:
    """A PATH folder holding python3.10 and this interpreter's python3.X (links), and nothing else."""
    ends = subprocess.run([sys.executable, str(REPO / "scripts" / "pythons.py"), "--ends"], capture_output=True,
                          text=True, check=True).stdout.split()
    newest = ends[-1] if len(ends) == 4 and ends[2] != "3.10" else sys.executable
    versions = []
    folder = tmp_path / "bin"
    folder.mkdir()
    for python in (oldest_python(), newest):
        version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        os.symlink(python, folder / f"python{version}")
        versions.append(version)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return versions


def test_one_command_builds_a_wheel_per_python(cli, tmp_path, two_pythons):
    args = ["hello-hip", "--arch", "gfx90a", "--work", tmp_path / "w", "--out", tmp_path / "wh"]
    code, out, err = cli("plan", *args, "--python", ",".join(two_pythons), "--json")
    assert code == 0, err
    assert [p["python"]["version"] for p in json.loads(out)] == two_pythons
    code, out, err = cli("build", *args[:3], "--out", tmp_path / "wh", "--python", ",".join(two_pythons))
    assert code == 0, err
    tags = sorted(line.rsplit("-", 3)[1] for line in out.split())
    assert tags == sorted(f"cp{v.replace('.', '')}" for v in two_pythons)
    assert f"built for 2 pythons: python{two_pythons[0]}, python{two_pythons[1]}" in err


def test_all_is_every_python_on_path(cli, tmp_path, two_pythons):
    code, out, err = cli("plan", "hello-hip", "--arch", "gfx90a", "--python", "all", "--json")
    assert code == 0, err
    assert set(two_pythons) <= {p["python"]["version"] for p in json.loads(out)}


def test_prepare_takes_one_python(cli, two_pythons):
    code, _, err = cli("prepare", "hello-hip", "--arch", "gfx90a", "--python", ",".join(two_pythons))
    assert code == 2 and "`prepare` takes one python" in err
