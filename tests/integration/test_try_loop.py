"""`rocbuild build FILE --try` on a small project with planted traps (tests/data/projects/planted), with the
host's own hipcc for gfx1030: each try costs seconds. The project gives hipcc nvcc's
--expt-relaxed-constexpr (clang refuses it) and, with no GPU visible, builds CPU-only unless FORCE_HIP=1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from rocbuild.verify.verdict import verify_paths

pytestmark = pytest.mark.hipcc

PLANTED = Path(__file__).resolve().parents[1] / "data" / "projects" / "planted"
RECIPE = """\
schema: 1
name: planted
version: "0.1.0"
source:
  path: {src}
requires:
  tools: [hipcc]
  python: [setuptools, wheel]
steps:
  - wheel: {{}}
    env:
      PLANTED_ARCHS: "${{{{ archs | join(';') }}}}"
"""


@pytest.fixture
def planted(tmp_path) -> tuple[Path, Path]:
    src = tmp_path / "src"
    shutil.copytree(PLANTED, src)
    recipe = tmp_path / "planted.yaml"
    recipe.write_text(RECIPE.format(src=src))
    return recipe, src


def _try(cli, tmp_path: Path, recipe: Path, *extra: str) -> tuple[int, str, str]:
    return cli("build", recipe, "--try", "--arch", "gfx1030", "--work", tmp_path / "work", "--out", tmp_path / "out",
               "--no-cache", *extra)


def test_try_fixes_both_planted_traps_and_the_recipe_it_leaves_verifies(cli, tmp_path, planted):
    recipe, _ = planted
    code, out, err = _try(cli, tmp_path, recipe, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "verified"
    assert [(t["outcome"], t["trap"]) for t in result["tries"]] == [
        ("failed", "force-variable-unset"), ("failed", "cuda-flag-for-hipcc"), ("verified", None)]
    text = recipe.read_text()
    assert text.startswith("# Verified by rocbuild --try on ") and "archs gfx1030 (try 3)" in text.splitlines()[0]
    assert "# trap force-variable-unset (finding cpu_only): " in text
    assert "# trap cuda-flag-for-hipcc (log:" in text and "unsupported option '--expt-relaxed-constexpr'" in text
    data = yaml.safe_load(text)
    assert data["steps"][0]["env"]["FORCE_HIP"] == "1" and data["patches"][0]["replace"]["regex"] is True
    assert "+      FORCE_HIP: '1'" in err and "--- planted.yaml (as it started)" in err  # the diff
    wheels = [Path(w) for w in result["wheels"]]
    assert len(wheels) == 1 and verify_paths(wheels, ["gfx1030"]).ok
    # The recipe it wrote builds again as it is, in a new work folder, with no --try.
    code, out, err = cli("build", recipe, "--arch", "gfx1030", "--work", tmp_path / "again", "--out",
                         tmp_path / "out2", "--no-cache")
    assert code == 0, err


def test_a_failure_no_trap_explains_exits_4_with_the_report_and_the_best_draft_kept(cli, tmp_path, planted):
    recipe, src = planted
    (src / "kern.hip").write_text((src / "kern.hip").read_text() + "static int broken = undeclared_size;\n")
    code, _, err = _try(cli, tmp_path, recipe)
    assert code == 4, err
    assert "not verified: nothing in the trap catalogue matches the failure" in err
    report = err[err.index("the last failure:"):].splitlines()
    assert any("use of undeclared identifier 'undeclared_size'" in line for line in report[1:16]), "\n".join(report)
    kept = yaml.safe_load(recipe.read_text())  # the fixes found before it stay
    assert kept["steps"][0]["env"]["FORCE_HIP"] == "1" and kept["patches"][0]["replace"]["regex"] is True


def test_tries_run_out_with_exit_5_and_the_fix_so_far_written(cli, tmp_path, planted):
    recipe, _ = planted
    code, _, err = _try(cli, tmp_path, recipe, "--max-tries", "1")
    assert code == 5, err
    assert "not verified: 1 tries used" in err
    assert yaml.safe_load(recipe.read_text())["steps"][0]["env"]["FORCE_HIP"] == "1"
    assert not recipe.read_text().startswith("# Verified")


def test_try_wants_a_file_it_may_edit(cli, tmp_path):
    code, _, err = cli("build", "hello-hip", "--try", "--arch", "gfx1030")
    assert code == 2 and "--try edits the recipe file it builds" in err and "Traceback" not in err


def test_a_name_no_recipe_has_fetches_nothing_and_says_how_to_draft_it(cli, tmp_path):
    """The index is asked for the package's summary; no sdist is downloaded, no draft written."""
    code, _, err = cli("build", "torch-cluster", "--arch", "gfx1100")
    assert code == 2 and "no recipe named 'torch-cluster'" in err
    assert "on the package index: torch-cluster " in err and "Graph Cluster" in err
    assert "rocbuild build torch-cluster==" in err and "--try --arch gfx1100" in err
    assert not (tmp_path / "xdg-cache" / "rocbuild" / "sdists").exists()
    assert not (tmp_path / "xdg-cache" / "rocbuild" / "drafts").exists()


def test_a_package_with_a_recipe_is_not_drafted_afresh(cli):
    code, _, err = cli("build", "torch_scatter==2.1.2", "--try", "--arch", "gfx1100")
    assert code == 2 and "torch_scatter has a recipe (built-in: " in err and "Traceback" not in err
