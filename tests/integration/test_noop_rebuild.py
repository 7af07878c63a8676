"""A build run again with nothing changed is answered from its stamp by the real `rocbuild` command:
the same wheels, nothing planned, run or verified; and any change to what the build read (the recipe,
the wheel in the wheelhouse, the environment), or --clean, makes the command run in full again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocbuild.engine.noop import serve, signature, stamp_path, write

pytestmark = pytest.mark.hipcc
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
ENTRY = "from rocbuild.cli.entry import run; run()"  # what the installed `rocbuild` script runs


def rocbuild(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, XDG_CACHE_HOME=str(tmp / "xdg"), **env)
    environ.pop("PYTEST_CURRENT_TEST", None)  # names the test's phase: setup and call would differ
    return subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=tmp, env=environ, capture_output=True,
                          text=True, check=False)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, list[str]]:
    recipe = tmp_path / "recipes" / "hello-hip.yaml"  # a copy to edit; its source is ../examples/hello-hip
    recipe.parent.mkdir()
    shutil.copy(RECIPES / "hello-hip.yaml", recipe)
    shutil.copytree(RECIPES.parent / "examples" / "hello-hip", tmp_path / "examples" / "hello-hip")
    args = ["build", str(recipe), "--arch", "gfx90a", "--out", "wheelhouse", "--work", str(tmp_path / "work")]
    first = rocbuild(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    assert "built 1 wheel(s)" in first.stderr
    return recipe, args


def test_the_same_command_is_answered_from_the_stamp(tmp_path, built):
    _, args = built
    wheel = next((tmp_path / "wheelhouse").glob("hello_hip-*.whl"))
    again = rocbuild(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [str(wheel.absolute())]
    assert "==> up to date" in again.stderr
    assert "verify" not in again.stderr.replace("verified", "")  # no check ran
    shorthand = rocbuild(tmp_path, *args[1:])  # `rocbuild RECIPE ...` is the same command
    assert "==> up to date" in shorthand.stderr, shorthand.stderr


@pytest.mark.parametrize("change", ["recipe", "wheel", "environment", "clean"])
def test_any_change_runs_the_command_in_full(tmp_path, built, change):
    recipe, args = built
    wheel = next((tmp_path / "wheelhouse").glob("hello_hip-*.whl"))
    env: dict[str, str] = {}
    if change == "recipe":
        recipe.write_text(recipe.read_text() + "\n# edited\n")
    elif change == "wheel":
        wheel.unlink()
    elif change == "environment":
        env["CFLAGS"] = "-O1"
    else:
        args = [*args, "--clean"]
    again = rocbuild(tmp_path, *args, **env)
    assert again.returncode == 0, again.stderr
    assert "==> up to date" not in again.stderr
    assert "==> verify device-code" in again.stderr
    assert wheel.is_file()


def test_a_stamp_serves_only_while_every_file_is_unchanged(tmp_path, capsys):
    watched = tmp_path / "input.txt"
    watched.write_text("a")
    gone = tmp_path / "absent"
    path = stamp_path(str(tmp_path / "noop"), ("build", "x", "--arch", "gfx90a"), str(tmp_path), {"A": "1"}, "0")
    assert serve(path) is None  # no stamp yet
    write(path, [str(watched), str(gone)], "wheel.whl\n")
    assert json.loads(Path(path).read_text())["files"][str(gone)] is None
    assert serve(path) == 0
    assert capsys.readouterr().out == "wheel.whl\n"
    gone.write_text("now here")
    assert serve(path) is None
    gone.unlink()
    os.utime(watched, ns=(1, 1))
    assert signature(str(watched)) != json.loads(Path(path).read_text())["files"][str(watched)]
    assert serve(path) is None
    Path(path).write_text("{not json")
    assert serve(path) is None


def test_the_key_covers_the_command_the_folder_and_the_environment(tmp_path):
    base = (str(tmp_path), ("build", "x", "--arch", "gfx90a"), "/here", {"A": "1", "PWD": "/here"}, "0")
    path = stamp_path(*base)
    assert stamp_path(str(tmp_path), ("x", "--arch", "gfx90a"), "/here", {"A": "1"}, "0") == path
    assert stamp_path(str(tmp_path), ("build", "x", "--arch", "gfx942"), "/here", {"A": "1"}, "0") != path
    assert stamp_path(str(tmp_path), base[1], "/elsewhere", {"A": "1"}, "0") != path
    assert stamp_path(str(tmp_path), base[1], "/here", {"A": "2"}, "0") != path
    assert stamp_path(str(tmp_path), base[1], "/here", {"A": "1"}, "0.2") != path
