"""Sharing recipes: sources added from a real local git repo or folder, `extends`, lock files, starters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import git, make_git_repo
from tests.integration.test_build_cache import with_diff_patch
from tests.integration.test_engine_build import build, repo, wheels, write_recipe  # noqa: F401 (fixture)

CHILD = """\
schema: 1
name: {name}
version: "{version}"
source:
  path: ../examples/hello-hip
steps:
  - wheel: {{}}
"""


def recipe_repo(path: Path) -> str:
    files = {
        "recipes/team-hip.yaml": "extends: hello-hip\nname: team-hip\nversion: '0.1.0'\n"
                                 "patches+:\n  - diff: team-hip/0001-note.patch\n",
        "patches/team-hip/0001-note.patch": "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n-x\n+x\n+y\n",
    }
    return make_git_repo(path, files, tag="r1")


def test_add_a_git_recipe_repository_and_update_it(cli, tmp_path):
    upstream = tmp_path / "team-recipes"
    first = recipe_repo(upstream)
    code, out, err = cli("recipes", "add", upstream.as_uri(), "--ref", "main", "--name", "team")
    assert code == 0, err
    assert f"added recipe source team: {upstream.as_uri()} @ main ({first[:12]})" in out
    assert "recipes: team-hip" in out
    code, out, _ = cli("recipes", "list", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["team-hip"]["origin"] == "source team" and rows["hello-hip"]["origin"] == "built-in"
    code, out, err = cli("plan", "team-hip", "--arch", "gfx90a", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["recipe"]["version"] == "0.1.0"
    # the patch comes from the repository's patches/ folder, beside its recipes/
    assert plan["patches"][-1]["path"].endswith("patches/team-hip/0001-note.patch")
    assert "/recipe-sources/team-" in plan["patches"][-1]["path"]

    # Upstream moves: nothing changes until `recipes update`.
    (upstream / "recipes" / "team-hip.yaml").write_text(
        (upstream / "recipes" / "team-hip.yaml").read_text().replace("0.1.0", "0.2.0"))
    git(upstream, "commit", "-qam", "bump")
    second = git(upstream, "rev-parse", "HEAD")
    assert json.loads(cli("plan", "team-hip", "--arch", "gfx90a", "--json")[1])["recipe"]["version"] == "0.1.0"
    code, out, err = cli("recipes", "update")
    assert code == 0, err
    assert out.strip() == f"team: {first[:12]} -> {second[:12]}"
    assert json.loads(cli("plan", "team-hip", "--arch", "gfx90a", "--json")[1])["recipe"]["version"] == "0.2.0"
    assert cli("recipes", "update", "team")[1].strip() == f"team: unchanged at {second[:12]}"
    assert cli("recipes", "sources")[1].startswith("team ")

    code, _, err = cli("recipes", "add", upstream.as_uri(), "--name", "team")
    assert code == 2 and "already registered" in err
    code, out, _ = cli("recipes", "remove", "team")
    assert code == 0 and "removed recipe source team" in out
    assert cli("plan", "team-hip", "--arch", "gfx90a")[0] == 2


def test_add_a_folder_in_place(cli, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "mine.yaml").write_text(CHILD.format(name="mine", version="1.0").replace(
        "../examples/hello-hip", str(Path(__file__).resolve().parents[2] / "examples" / "hello-hip")))
    code, out, err = cli("recipes", "add", folder)
    assert code == 0, err
    assert "added recipe source mine" in out
    (folder / "mine.yaml").write_text((folder / "mine.yaml").read_text().replace("1.0", "1.5"))
    rows = {r["name"]: r for r in json.loads(cli("recipes", "list", "--json")[1])}
    assert rows["mine"]["version"] == "1.5" and rows["mine"]["origin"] == "source mine"


@pytest.mark.parametrize("args,code,message", [
    (["recipes", "add", "/no/such/folder"], 2, "no such folder and not a URL"),
    (["recipes", "add", "file:///no/such/repo.git"], 1, "cannot clone"),
    (["recipes", "add", ".", "--name", "Bad Name"], 2, "not a valid source name"),
    (["recipes", "update", "nope"], 2, "no recipe source named 'nope'"),
    (["recipes", "list", "--ref", "x"], 2, "takes no --ref"),
])
def test_bad_source_input(cli, tmp_path, args, code, message):
    got, _, err = cli(*args)
    assert got == code and message in err and "Traceback" not in err
    assert cli("recipes", "sources")[1].startswith("no recipe sources")  # nothing half-registered


def test_extends_merges_and_reports_the_right_file(cli, tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("schema: 1\nname: base\nversion: '1'\nsource:\n  git: https://example.invalid/x.git\n"
                    "  ref: v1\nrequires:\n  tools: [cmake]\nenv:\n  A: '1'\n  B: '2'\n"
                    "patches:\n  - replace: {file: a.c, find: x, with: y}\n"
                    "steps:\n  - cmake: {}\n  - wheel: {}\n")
    child = tmp_path / "child.yaml"
    child.write_text("extends: base\nname: child\nsource:\n  ref: v2\nrequires:\n  tools+: [make]\nenv:\n  B: '3'\n"
                     "patches+:\n  - replace: {file: b.c, find: x, with: z}\nsteps:\n  - wheel: {}\n")
    code, out, err = cli("plan", child, "--arch", "gfx90a", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["recipe"]["name"] == "child" and plan["recipe"]["version"] == "1"
    assert plan["source"]["url"] == "https://example.invalid/x.git" and plan["source"]["ref"] == "v2"
    assert plan["requirements"]["tools"] == ["cmake", "make"]  # tools+ appends
    assert plan["env"]["A"] == "1" and plan["env"]["B"] == "3"  # mappings merge
    assert [p["file"] for p in plan["patches"]] == ["a.c", "b.c"]  # patches+ appends
    assert [s["kind"] for s in plan["steps"]] == ["wheel"]  # lists replace

    child.write_text("extends: base\nname: child\nsteps:\n  - wheel: {dri: x}\n")
    code, _, err = cli("recipes", "lint", child)
    assert code == 2 and f"{child}:4:" in err and "did you mean 'dir'" in err
    base.write_text(base.read_text().replace("  ref: v1\n", "  ref: v1\n  submodules: maybe\n"))
    child.write_text("extends: base\nname: child\n")
    code, _, err = cli("recipes", "lint", child)
    assert code == 2 and f"{base}:7:15" in err and "source.submodules" in err  # the base's line, not the child's
    base.write_text("extends: child.yaml\n" + base.read_text())
    code, _, err = cli("recipes", "lint", child)
    assert code == 2 and "extend each other in a circle" in err and "child.yaml -> base.yaml -> child.yaml" in err
    child.write_text("extends: nope-recipe\nname: child\n")
    code, _, err = cli("recipes", "lint", child)
    assert code == 2 and "no recipe named 'nope-recipe' to extend" in err
    child.write_text("extends: base\nname: child\nsteps: [{wheel: {}}]\nsteps+: [{cmake: {}}]\n")
    base.write_text(base.read_text().replace("extends: child.yaml\n", ""))
    code, _, err = cli("recipes", "lint", child)
    assert code == 2 and "both 'steps' and 'steps+' given" in err


def test_extended_source_path_stays_relative_to_its_own_file(cli, tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "child.yaml").write_text("extends: hello-hip\nname: child\n")
    code, out, err = cli("plan", team / "child.yaml", "--arch", "gfx90a", "--json")
    assert code == 0, err
    assert json.loads(out)["source"]["directory"].endswith("examples/hello-hip")


def test_lock_then_build_locked(cli, tmp_path, repo, rocm61):
    recipe = with_diff_patch(write_recipe(tmp_path, repo, expect="5"), "one")
    code, out, err = build(cli, recipe, tmp_path, rocm61, "--locked")
    assert code == 2 and "no lock file" in err and f"rocbuild lock {recipe}" in err
    code, out, err = cli("lock", recipe, "--rocm", rocm61)
    assert code == 0, err
    lock = json.loads(recipe.with_suffix(".lock").read_text())
    assert lock["source"]["commit"] == repo[1]
    assert [p["name"] for p in lock["patches"]] == ["tiny/0001-comment.patch"]
    assert build(cli, recipe, tmp_path, rocm61, "--locked")[0] == 0

    # A changed patch file: refused before anything runs, and the message says which.
    with_diff_patch(recipe, "two")
    shutil.rmtree(tmp_path / "wheelhouse")
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--locked", work="w2")
    assert code == 2
    assert "--locked: the build differs from" in err and "patch tiny/0001-comment.patch changed" in err
    assert wheels(tmp_path) == [] and not (tmp_path / "w2").exists()
    with_diff_patch(recipe, "one")

    # The ref now resolves to another commit: refused, naming both.
    recipe.write_text(recipe.read_text().replace("ref: v1.0", "ref: main"))
    assert cli("lock", recipe, "--rocm", rocm61)[0] == 0
    (tmp_path / "upstream" / "NEWS").write_text("moved\n")
    git(tmp_path / "upstream", "add", "NEWS")
    git(tmp_path / "upstream", "commit", "-qm", "moved")
    moved = git(tmp_path / "upstream", "rev-parse", "HEAD")
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--locked", work="w3")
    assert code == 2 and f"resolves to {moved}, the lock has {repo[1]}" in err
    assert not (tmp_path / "w3" / "src").exists()
    recipe.write_text(recipe.read_text() + "# a comment\n")
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--locked", work="w3")
    assert code == 2 and "recipe " in err and "changed: sha256" in err


def test_recipes_new_writes_a_starter_that_lints(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("recipes", "new", "my-ext")
    assert code == 0, err
    path = tmp_path / "my-ext.yaml"
    first, second = path.read_text().splitlines()[:2]
    assert out.strip() == "my-ext.yaml" and second.startswith("# my-ext: a rocbuild recipe.")
    assert first == "# yaml-language-server: $schema=rocbuild-recipe.schema.json"  # beside it, wherever it is shared
    assert "rocbuild recipes schema -o" in err
    code, _, err = cli("recipes", "schema", "-o", tmp_path / "rocbuild-recipe.schema.json")  # what the line names
    assert code == 0, err
    assert json.loads((tmp_path / "rocbuild-recipe.schema.json").read_text())["title"].startswith("rocbuild recipe")
    code, out, err = cli("recipes", "lint", path)
    assert code == 0, err
    assert out.strip() == f"{path}: ok (my-ext 0.1.0, 1 steps)"
    before = path.read_text()
    code, _, err = cli("recipes", "new", "my-ext")
    assert code == 2 and "already exists" in err and path.read_text() == before
    code, _, err = cli("recipes", "new", "My Ext")
    assert code == 2 and "not a valid recipe name" in err
