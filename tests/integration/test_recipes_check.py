"""`rocbuild recipes check` on recipe folders the test makes: a real local git repository with an old and
a new release, and a loopback package index with two sdists; patches that apply, that upstream already
took, and that fail; `--bump` writing the new release."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git, make_git_repo
from tests.integration.test_sdist_source import Index, index, publish  # noqa: F401 (fixtures)

RECIPE = """\
schema: 1
name: upstreamy
version: "1.0"
source:
  git: {url}
  ref: v1.0
  commit: {commit}
patches:
  - diff: upstreamy/0001-c.patch
  - replace: {{file: b.c, find: "int b = 1;", with: "int b = 10;", count: 1}}
  - replace: {{file: a.c, find: "int a = 1;", with: "int a = 3;", count: 1}}
steps:
  - run: [python, -c, "print('built')"]
"""
DIFF = """\
--- a/c.c
+++ b/c.c
@@ -2,3 +2,3 @@
 int c1;
-int c2;
+int c2 = 2;
 int c3;
"""


def releases(tmp_path: Path) -> tuple[Path, str, str]:
    upstream = tmp_path / "upstream"
    c_file = "int c0;\nint c1;\nint c2;\nint c3;\nint c4;\n"
    first = make_git_repo(upstream, {"a.c": "int a = 1;\n", "b.c": "int b = 1;\n", "c.c": c_file})
    (upstream / "a.c").write_text("int a = 2;\n")  # the replace of a.c no longer finds its text
    (upstream / "b.c").write_text("int b = 10;\n")  # upstream took the replace of b.c
    (upstream / "c.c").write_text("// news\nint c0;\nint c1;\nint c2;\nint c3;\nint c4;\n")  # the diff applies, lower
    git(upstream, "commit", "-qam", "1.1")
    git(upstream, "tag", "v1.1")
    second = git(upstream, "rev-parse", "HEAD")
    (upstream / "a.c").write_text("int a = 5;\n")
    git(upstream, "commit", "-qam", "1.2rc1")
    git(upstream, "tag", "v1.2rc1")  # a pre-release: not counted unless --pre
    return upstream, first, second


def recipe_folder(tmp_path: Path, url: Path, commit: str) -> Path:
    folder = tmp_path / "recipes"
    (folder / "patches" / "upstreamy").mkdir(parents=True)
    (folder / "patches" / "upstreamy" / "0001-c.patch").write_text(DIFF)
    (folder / "upstreamy.yaml").write_text(RECIPE.format(url=url, commit=commit))
    return folder


def check(cli, folder: Path, *extra: str) -> tuple[int, list, str]:
    code, out, err = cli("recipes", "check", "upstreamy", "--recipes", folder, "--json", *extra)
    return code, json.loads(out) if out.strip().startswith("[") else [], err


def test_a_git_recipe_behind_upstream_and_its_patches(cli, tmp_path, rocm61, monkeypatch):
    monkeypatch.setenv("ROCM_PATH", str(rocm61))
    upstream, first, second = releases(tmp_path)
    folder = recipe_folder(tmp_path, upstream, first)
    code, report, err = check(cli, folder)
    assert code == 1, err
    (row,) = report
    assert (row["current"], row["newest"], row["tag"], row["kind"]) == ("1.0", "1.1", "v1.1", "git")
    assert [t["verdict"] for t in row["patches"]] == ["applies with an offset", "already applied", "fails"]
    assert "a.c has no match for 'int a = 1;'" in row["patches"][2]["detail"]
    assert f"$ git ls-remote --tags {upstream}" in err  # shown before it runs, as every command is
    assert check(cli, folder, "--pre")[1][0]["newest"] == "1.2rc1"

    # --bump refuses while a patch fails, and writes the release once every patch applies.
    before = (folder / "upstreamy.yaml").read_text()
    check(cli, folder, "--bump")
    assert (folder / "upstreamy.yaml").read_text() == before
    (folder / "upstreamy.yaml").write_text(before.replace('  - replace: {file: a.c, find: "int a = 1;", '
                                                          'with: "int a = 3;", count: 1}\n', ""))
    code, out, _ = cli("recipes", "check", "upstreamy", "--recipes", folder, "--bump")
    assert "+version: \"1.1\"" in out and "+  ref: v1.1" in out and f"+  commit: {second}" in out
    text = (folder / "upstreamy.yaml").read_text()
    assert 'version: "1.1"' in text and "ref: v1.1" in text and f"commit: {second}" in text
    code, report, _ = check(cli, folder)
    assert code == 0 and report[0]["newest"] is None and cli("recipes", "lint", folder / "upstreamy.yaml")[0] == 0


def test_an_sdist_recipe_behind_the_index_is_bumped_with_its_digest(cli, tmp_path, index, rocm61, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ROCM_PATH", str(rocm61))
    old = publish(index, "1.0")
    new = publish(index, "2.0")
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "demo.yaml").write_text(f'schema: 1\nname: demo\nversion: "1.0"\noutput: tree\nsource:\n'
                                      f"  sdist: demo==1.0\n  sha256: {old}\npatches:\n"
                                      '  - replace: {file: pyproject.toml, find: "#", with: "# patched", count: 1}\n'
                                      "unsupported:\n  - when: \"${{ rocm.version < '7.0' }}\"\n    why: ROCm 7 only\n")
    # This host's ROCm (6.1) is one the recipe refuses: a build says so, a check looks at the source anyway.
    code, _, err = cli("plan", "demo", "--recipes", folder, "--arch", "gfx90a")
    assert code == 2 and "ROCm 7 only" in err
    code, out, err = cli("recipes", "check", "demo", "--recipes", folder, "--bump")
    assert code == 1, err
    assert "demo 1.0 -> 2.0 (sdist): every patch applies" in out and "applies: replace in pyproject.toml" in out
    text = (folder / "demo.yaml").read_text()
    assert "sdist: demo==2.0" in text and f"sha256: {new}" in text and 'version: "2.0"' in text


def test_an_unreachable_remote_is_a_warning_naming_it(cli, tmp_path, rocm61, monkeypatch):
    monkeypatch.setenv("ROCM_PATH", str(rocm61))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nor does the index answer
    folder = recipe_folder(tmp_path, tmp_path / "gone", "0" * 40)
    code, out, err = cli("recipes", "check", "upstreamy", "--recipes", folder)
    assert code == 0 and f"warning: git ls-remote {tmp_path / 'gone'} failed" in out and "Traceback" not in err
    assert "upstreamy 1.0: not checked (its upstream did not answer)" in out and "current" not in out


def test_a_silent_remote_still_says_what_the_index_lists(cli, tmp_path, index, rocm61, monkeypatch):  # noqa: F811
    """bitsandbytes and CTranslate2 publish wheels only, and CI reaches the index but no git host."""
    monkeypatch.setenv("ROCM_PATH", str(rocm61))
    server, _ = index
    publish(index, "0.9")
    server.files.append(("demo-1.5-py3-none-any.whl", "0" * 64, False))
    server.files.append(("demo-2.0rc1-py3-none-any.whl", "0" * 64, False))
    folder = recipe_folder(tmp_path, tmp_path / "gone", "0" * 40)
    (folder / "demo.yaml").write_text((folder / "upstreamy.yaml").read_text().replace("name: upstreamy", "name: demo"))
    code, out, err = cli("recipes", "check", "demo", "--recipes", folder)
    assert code == 1, err
    assert ("demo 1.0: not checked (its upstream did not answer); the package index lists 1.5 for the project demo"
            in out)
    code, out, _ = cli("recipes", "check", "demo", "--recipes", folder, "--json", "--pre")
    assert json.loads(out)[0]["index_newest"] == "2.0rc1" and json.loads(out)[0]["newest"] is None
