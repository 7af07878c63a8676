"""`archs-not-in:` on a git source: before the first fetch `plan` cannot read the list and says when it
will be read; the build reads it from the commit it fetched and refuses before any step; once the mirror
holds the commit, `plan` itself refuses (a real repository, real git)."""

from __future__ import annotations

from tests.conftest import make_git_repo

RECIPE = """\
schema: 1
name: listed
version: "1.0"
output: tree
source:
  git: {repo}
  commit: {commit}
unsupported:
  - archs-not-in: {{file: CMakeLists.txt, set: HIP_SUPPORTED_ARCHS}}
    why: it drops any other arch without a word
steps:
  - name: mark
    run: [python, -c, "open('marker', 'w').write('ran')"]
"""


def test_the_list_is_read_from_the_fetched_commit_before_any_step(cli, tmp_path, rocm61):
    repo = tmp_path / "repo"
    commit = make_git_repo(repo, {"CMakeLists.txt": 'project(listed)\nset(HIP_SUPPORTED_ARCHS "gfx90a;gfx1100")\n'})
    recipe = tmp_path / "listed.yaml"
    recipe.write_text(RECIPE.format(repo=f"file://{repo}", commit=commit))
    common = ("--rocm", rocm61, "--work", tmp_path / "w", "--no-confine")

    code, out, err = cli("plan", recipe, "--arch", "gfx1036", *common)
    assert code == 0, err
    assert "checked against HIP_SUPPORTED_ARCHS in CMakeLists.txt once the source is fetched, before any step" in out

    code, _, err = cli("build", recipe, "--arch", "gfx1036", *common)
    assert code == 2, err
    assert "cannot be built for gfx1036: CMakeLists.txt:2 sets HIP_SUPPORTED_ARCHS to gfx90a, gfx1100" in err
    assert f"the git mirror of file://{repo} at {commit[:12]}" in err and "Traceback" not in err
    assert not (tmp_path / "w" / "src" / "marker").exists()

    code, _, err = cli("plan", recipe, "--arch", "gfx1036", *common)  # the mirror has the commit now
    assert code == 2 and "cannot be built for gfx1036" in err

    code, _, err = cli("build", recipe, "--arch", "gfx1100", *common)
    assert code == 0, err
    assert "archs gfx1100: listed in HIP_SUPPORTED_ARCHS (CMakeLists.txt:2)" in err
    assert (tmp_path / "w" / "src" / "marker").read_text() == "ran"
