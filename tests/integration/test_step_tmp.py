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
    # Shown in plan like every other variable. A confined step sees the folder as its /tmp.
    assert plan["env"]["TMPDIR"] == ("/tmp" if plan["confinement"]["confined"] else plan["step_tmp"])
    return Path(plan["step_tmp"])


def _confined(cli, tmp_path: Path, recipe: Path) -> tuple[bool, set[str]]:
    """Whether the step is confined, and what its sandbox makes in its /tmp: its throwaway HOME (/tmp/home) and
    the mount points of the folders under the machine's /tmp it is given (this test's, a clone's .venv)."""
    _, out, _ = cli("plan", "--json", recipe, "--arch", "gfx1030", "--work", tmp_path / "work")
    plan = json.loads(out)
    box = plan["steps"][0]["sandbox"]
    made = {Path(box[i + 2]).relative_to("/tmp").parts[0] for i, arg in enumerate(box[:-2])
            if arg in ("--bind", "--ro-bind", "--bind-try", "--ro-bind-try") and box[i + 2].startswith("/tmp/")} | \
        {Path(box[i + 1]).relative_to("/tmp").parts[0] for i, arg in enumerate(box[:-1])
         if arg == "--dir" and box[i + 1].startswith("/tmp/")}
    return bool(plan["confinement"]["confined"]), made


def _build(cli, tmp_path: Path, recipe: Path, *extra: str) -> tuple[int, str]:
    code, _, err = cli("build", recipe, "--arch", "gfx1030", "--work", tmp_path / "work", "--out",
                       tmp_path / "wheelhouse", *extra)
    return code, err


def test_compilers_leave_nothing_in_tmp(cli, tmp_path, probe):
    recipe, stem = probe
    step_tmp = _step_tmp(cli, tmp_path, recipe)
    assert _build(cli, tmp_path, recipe, "--until", "prepare")[0] == 0  # the work folder (a confined TMPDIR's home)
    step_tmp.mkdir(parents=True)
    (step_tmp / "left-by-a-killed-build").write_text("")  # a build killed with -9 removes nothing

    code, err = _build(cli, tmp_path, recipe)
    assert code == 0, err
    tree = tmp_path / "work" / "src"
    confined, made = _confined(cli, tmp_path, recipe)
    assert (tree / "tmpdir.txt").read_text().strip() == ("/tmp" if confined else str(step_tmp))
    # Emptied before the first step, but for what the sandbox makes there.
    assert confined or not made
    assert set((tree / "before.txt").read_text().split()) == made
    # hipcc did leave its folders, in the build's own TMPDIR, which is gone with them
    leaked = [name for name in (tree / "after.txt").read_text().split() if name not in made]
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
    assert _build(cli, tmp_path, recipe, "--until", "prepare")[0] == 0  # the work folder (a confined TMPDIR's home)
    step_tmp.parent.mkdir(parents=True, exist_ok=True)
    step_tmp.symlink_to(tmp_path)  # not removed through, not built in
    try:
        code, err = _build(cli, tmp_path, recipe)
        assert code == 1 and f"cannot make the build's TMPDIR {step_tmp}" in err, err
        assert "Traceback" not in err and (tmp_path / "recipes").is_dir()
    finally:
        step_tmp.unlink()
