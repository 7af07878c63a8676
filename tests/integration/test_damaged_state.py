"""rocbuild's own files damaged by hand, by a crash or by a stranger: never a traceback.

A damaged build-cache entry is ignored and replaced (and never points rocbuild at a file outside it), a lock
file of the wrong shape is a clear error, and a prepare stamp of the wrong shape starts a fresh tree.

On the real tiny CMake project, in a local git repository.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.integration.test_build_cache import cache_dir
from tests.integration.test_engine_build import build, repo, write_recipe  # noqa: F401 (fixture)


def only_entry(tmp_path: Path) -> Path:
    (folder,) = [f for f in (cache_dir(tmp_path) / "builds").iterdir() if not f.name.startswith(".")]
    return folder


def outside_wheel(tmp_path: Path) -> tuple[str, str]:
    """A file outside the entry, and its sha256: what a crafted entry would point at."""
    secret = tmp_path / "secret-1.0-py3-none-any.whl"
    secret.write_bytes(b"not yours")
    return str(secret), hashlib.sha256(b"not yours").hexdigest()


DAMAGE = {
    "not json": lambda data, tmp: "{",
    "a list": lambda data, tmp: [],
    "wheels is a string": lambda data, tmp: {**data, "wheels": "tiny.whl"},
    "wheel without sha": lambda data, tmp: {**data, "wheels": [{"name": data["wheels"][0]["name"]}]},
    "archs is a number": lambda data, tmp: {**data, "archs": 5},
    "name points outside": lambda data, tmp: {**data, "wheels": [
        {"name": "../../../../" + outside_wheel(tmp)[0].lstrip("/"), "sha256": outside_wheel(tmp)[1],
         "provenance": {}}]},
    "absolute name": lambda data, tmp: {**data, "wheels": [
        {"name": outside_wheel(tmp)[0], "sha256": outside_wheel(tmp)[1], "provenance": {}}]},
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_cache_entry_is_ignored_and_replaced(cli, tmp_path, repo, rocm61, damage):
    recipe = write_recipe(tmp_path, repo, expect="5")
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    entry = only_entry(tmp_path) / "entry.json"
    data = json.loads(entry.read_text())
    damaged = DAMAGE[damage](data, tmp_path)
    entry.write_text(damaged if isinstance(damaged, str) else json.dumps(damaged))
    for command in (("cache", "list"), ("cache", "list", "--json")):
        code, _, err = cli(*command)
        assert code == 0 and "Traceback" not in err, err
    shutil.rmtree(tmp_path / "wheelhouse")
    code, out, err = build(cli, recipe, tmp_path, rocm61, work="elsewhere")
    assert code == 0, err
    assert "build cache  hit" not in err and "[1/5] cmake" in err  # built, not served
    (wheel,) = (tmp_path / "wheelhouse").glob("*.whl")
    assert wheel.name.startswith("tiny-") and wheel.read_bytes() != b"not yours"
    assert json.loads(entry.read_text())["wheels"][0]["name"] == wheel.name  # the entry is whole again


def test_prune_removes_damaged_entries(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, expect="5")
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    folder = only_entry(tmp_path)
    (folder / "entry.json").write_text('{"wheels": 1}')
    code, _, err = cli("cache", "prune")
    assert code == 0, err
    assert not folder.exists()


@pytest.mark.parametrize("lock", [
    {"lock": 1, "recipe": "abc", "patches": [], "options": {}, "source": {"kind": "git"}},
    {"lock": 1, "recipe": {"sha256": "x"}, "patches": [1], "options": {}, "source": {"kind": "git"}},
    {"lock": 1, "recipe": {"sha256": "x"}, "patches": {}, "options": {}, "source": {"kind": "git"}},
    {"lock": 1, "recipe": {"sha256": "x"}, "patches": [], "options": [], "source": {"kind": "git"}},
    {"lock": 1, "recipe": {"sha256": "x"}, "patches": [], "options": {}, "source": "git"},
])
def test_a_lock_file_of_the_wrong_shape_is_a_clear_error(cli, tmp_path, repo, rocm61, lock):
    recipe = write_recipe(tmp_path, repo, expect="5")
    recipe.with_suffix(".lock").write_text(json.dumps(lock))
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--locked")
    assert code == 2, err
    assert f"--locked: {recipe.with_suffix('.lock')}:" in err and "rocbuild lock" in err and "Traceback" not in err


@pytest.mark.parametrize("stamp", ['{"fingerprint": 5, "identity": {"toolchain": "x"}}', "[1, 2]", "nul\0l", ""])
def test_a_prepare_stamp_of_the_wrong_shape_starts_a_fresh_tree(cli, tmp_path, repo, rocm61, stamp):
    recipe = write_recipe(tmp_path, repo, expect="5")
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    (tmp_path / "w" / "stamps" / "prepare.json").write_text(stamp)
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--no-cache")
    assert code == 0, err
    assert "[1/5] cmake  (skipped" not in err  # nothing trusted from a tree it cannot vouch for


def test_a_step_whose_output_is_gone_runs_again(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, expect="5")
    assert build(cli, recipe, tmp_path, rocm61)[0] == 0
    shutil.rmtree(tmp_path / "w" / "build")  # the CMake build folder, deleted by hand
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--no-cache")
    assert code == 0, err
    assert "[1/5] cmake  (skipped" not in err and "[2/5] cmake-build  (skipped" not in err
