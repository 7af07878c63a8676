"""Each build's steps get a TMPDIR of their own, removed when the steps end.

Debian's hipcc leaves an empty `<source name>-XXXXXX` folder in TMPDIR for every compile (two for each
source here); a day of builds left hundreds in /tmp. Real hipcc compiles a uniquely named source, so the
folders it leaves can be told from anything else in /tmp.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.hipcc

RECIPE = """\
schema: 1
name: tmp-probe
version: "1.0"
source:
  path: {src}
requires:
  tools: [hipcc]
steps:
  - name: compile
    shell: |
      ls -A "$TMPDIR" > before.txt
      hipcc --offload-arch=gfx1030 -c {stem}.hip -o {stem}.o
      printf '%s\\n' "$TMPDIR" > tmpdir.txt
      ls -A "$TMPDIR" > after.txt
      test ${{{{ options.fail }}}} = no
options:
  fail: {{default: "no"}}
"""


@pytest.fixture
def probe(tmp_path) -> tuple[Path, str]:
    stem = f"tmpprobe_{uuid.uuid4().hex[:12]}"
    src = tmp_path / "src"
    src.mkdir()
    (src / f"{stem}.hip").write_text("#include <hip/hip_runtime.h>\n__global__ void k(int* p) { *p = 1; }\n")
    recipe = tmp_path / "recipes" / "tmp-probe.yaml"
    recipe.parent.mkdir()
    recipe.write_text(RECIPE.format(src=src, stem=stem))
    return recipe, stem


def _step_tmp(cli, tmp_path: Path, recipe: Path) -> Path:
    code, out, err = cli("plan", "--json", recipe, "--arch", "gfx1030", "--work", tmp_path / "work")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["env"]["TMPDIR"] == plan["step_tmp"]  # shown in plan like every other variable
    return Path(plan["step_tmp"])


def _build(cli, tmp_path: Path, recipe: Path, *extra: str) -> tuple[int, str]:
    code, _, err = cli("build", recipe, "--arch", "gfx1030", "--work", tmp_path / "work", "--out",
                       tmp_path / "wheelhouse", *extra)
    return code, err


def test_compilers_leave_nothing_in_tmp(cli, tmp_path, probe):
    recipe, stem = probe
    step_tmp = _step_tmp(cli, tmp_path, recipe)
    step_tmp.mkdir(parents=True)
    (step_tmp / "left-by-a-killed-build").write_text("")  # a build killed with -9 removes nothing

    code, err = _build(cli, tmp_path, recipe)
    assert code == 0, err
    tree = tmp_path / "work" / "src"
    assert (tree / "tmpdir.txt").read_text().strip() == str(step_tmp)
    assert (tree / "before.txt").read_text() == ""  # emptied before the first step
    # hipcc did leave its folders, in the build's own TMPDIR, which is gone with them
    leaked = (tree / "after.txt").read_text().split()
    assert leaked and all(name.startswith(f"{stem}-") for name in leaked), leaked
    assert not step_tmp.exists()
    assert not list(Path("/tmp").glob(f"{stem}-*"))


def test_a_failed_step_removes_it_too(cli, tmp_path, probe):
    recipe, stem = probe
    step_tmp = _step_tmp(cli, tmp_path, recipe)
    code, err = _build(cli, tmp_path, recipe, "--set", "fail=yes")
    assert code == 1 and "step 'compile' failed" in err, err
    assert (tmp_path / "work" / "src" / "after.txt").read_text().split()  # it compiled, then failed
    assert not step_tmp.exists()
    assert not list(Path("/tmp").glob(f"{stem}-*"))


def test_a_tmpdir_that_is_not_a_folder_is_named(cli, tmp_path, probe):
    recipe, _ = probe
    step_tmp = _step_tmp(cli, tmp_path, recipe)
    step_tmp.parent.mkdir(parents=True, exist_ok=True)
    step_tmp.symlink_to(tmp_path)  # not removed through, not built in
    try:
        code, err = _build(cli, tmp_path, recipe)
        assert code == 1 and f"cannot make the build's TMPDIR {step_tmp}" in err, err
        assert "Traceback" not in err and (tmp_path / "recipes").is_dir()
    finally:
        step_tmp.unlink()
