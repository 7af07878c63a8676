"""A build can never be stale: every scenario here once published a wheel made from other inputs.

The recorder project's build step writes the HIP version its ROCm prefix reports and the variables
it ran with into the package, so a wheel says what it was really built from. The ROCm is a faithful
fake tree that the tests upgrade in place (6.1 -> 7.2), as a distro upgrade does.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from tests.conftest import DATA, make_rocm_tree

PROJECT = DATA / "projects" / "recorder"

RECIPE = """\
schema: 1
name: recorder
version: "1.0"
source:
  path: {src}
options:
  extra:
    default: "no"
    choices: ["yes", "no"]
env:
  RECIPE_FLAG: "{flag}"
steps:
  - name: record
    run: [python, record.py, "${{{{ rocm.path }}}}"]
  - wheel: {{}}
  - name: extra
    wheel: {{dir: extra}}
    when: "${{{{ options.extra == 'yes' }}}}"
verify:
  - code-objects: false
"""


@pytest.fixture
def project(tmp_path) -> Path:
    src = tmp_path / "project"
    shutil.copytree(PROJECT, src)
    return src


def write_recipe(tmp_path: Path, src: Path, flag: str = "a") -> Path:
    recipe = tmp_path / "recorder.yaml"
    recipe.write_text(RECIPE.format(src=src, flag=flag))
    return recipe


def build(cli, recipe: Path, tmp_path: Path, rocm: Path, *extra: str):
    code, out, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm, "--work", tmp_path / "w",
                         "--out", tmp_path / "wheelhouse", *extra)
    assert code == 0, err
    return [Path(line) for line in out.split()], err


def recorded(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read("recorder/built.txt").decode()


def upgrade_in_place(prefix: Path, version: str) -> None:
    """What `apt-get install -t experimental` does to a ROCm prefix: same folder, new release."""
    major, minor, patch = version.split(".")
    (prefix / ".info" / "version").write_text(f"{version}-1\n")
    (prefix / "include" / "rocm-core" / "rocm_version.h").write_text(
        f"#define ROCM_VERSION_MAJOR {major}\n#define ROCM_VERSION_MINOR {minor}\n#define ROCM_VERSION_PATCH {patch}\n")
    for tool in ("hipcc", "hipconfig"):
        (prefix / "bin" / tool).write_text(f"#!/bin/sh\necho '{major}.{minor}.53211-fake'\n")


def test_a_toolchain_upgraded_in_place_rebuilds_and_clean_never_returns_the_old_wheel(cli, tmp_path, project):
    rocm = make_rocm_tree(tmp_path / "opt", "6.1.0")
    recipe = write_recipe(tmp_path, project)
    (wheel,), _ = build(cli, recipe, tmp_path, rocm)
    assert wheel.name == "recorder-1.0+rocm6.1-py3-none-any.whl" and "hip 6.1.40091" in recorded(wheel)

    upgrade_in_place(rocm, "7.2.0")
    (wheel,), err = build(cli, recipe, tmp_path, rocm)
    assert wheel.name == "recorder-1.0+rocm7.2-py3-none-any.whl"
    assert "hip 7.2.53211" in recorded(wheel), "a wheel built by ROCm 6.1 was labelled +rocm7.2"
    assert "toolchain changed since it was prepared (ROCm 6.1.0 -> 7.2.0)" in err
    assert "skipped" not in err

    # The build cache holds the right wheel under the new identity: --clean gets it back, not the old one.
    wheel.unlink()
    (wheel,), err = build(cli, recipe, tmp_path, rocm, "--clean")
    assert "build cache" in err and "hip 7.2.53211" in recorded(wheel)


def test_a_host_variable_that_reaches_the_compiler_rebuilds(cli, tmp_path, project, rocm61, monkeypatch):
    """Unconfined, the caller's variables reach the steps: one that changes the compiler's output rebuilds.
    A confined step gets none of them, so nothing changes."""
    recipe = write_recipe(tmp_path, project)
    (wheel,), _ = build(cli, recipe, tmp_path, rocm61, "--no-confine")
    assert "HIPCC_COMPILE_FLAGS_APPEND=\n" in recorded(wheel)
    monkeypatch.setenv("HIPCC_COMPILE_FLAGS_APPEND", "--offload-compress")
    (wheel,), err = build(cli, recipe, tmp_path, rocm61, "--no-confine")
    assert "HIPCC_COMPILE_FLAGS_APPEND=--offload-compress" in recorded(wheel)
    assert "host_env changed since it was prepared" in err
    (wheel,), err = build(cli, recipe, tmp_path, rocm61)
    assert "HIPCC_COMPILE_FLAGS_APPEND=\n" in recorded(wheel)


def test_a_changed_recipe_env_rebuilds(cli, tmp_path, project, rocm61):
    (wheel,), _ = build(cli, write_recipe(tmp_path, project, flag="a"), tmp_path, rocm61)
    assert "RECIPE_FLAG=a" in recorded(wheel)
    (wheel,), err = build(cli, write_recipe(tmp_path, project, flag="b"), tmp_path, rocm61)
    assert "RECIPE_FLAG=b" in recorded(wheel)
    assert "env changed since it was prepared" in err


def test_a_wheel_left_by_an_earlier_plan_is_never_published(cli, tmp_path, project, rocm61):
    recipe = write_recipe(tmp_path, project)
    wheels, _ = build(cli, recipe, tmp_path, rocm61, "--set", "extra=yes", "--no-cache")
    assert sorted(w.name for w in wheels) == ["recorder-1.0+rocm6.1-py3-none-any.whl",
                                              "recorder_extra-1.0+rocm6.1-py3-none-any.whl"]
    shutil.rmtree(tmp_path / "wheelhouse")
    # Same work folder; the extra wheel step is off now, its old output still in dist/extra.
    wheels, _ = build(cli, recipe, tmp_path, rocm61, "--set", "extra=no")
    assert [w.name for w in wheels] == ["recorder-1.0+rocm6.1-py3-none-any.whl"]
    assert sorted(p.name for p in (tmp_path / "wheelhouse").glob("*.whl")) == [wheels[0].name]


def test_a_renamed_wheel_step_does_not_publish_its_old_output(cli, tmp_path, project, rocm61):
    recipe = write_recipe(tmp_path, project)
    build(cli, recipe, tmp_path, rocm61, "--no-cache")
    stale = next((tmp_path / "w" / "dist" / "wheel").glob("*.whl"))
    recipe.write_text(recipe.read_text().replace("  - wheel: {}\n", "  - name: package\n    wheel: {}\n"))
    wheels, _ = build(cli, recipe, tmp_path, rocm61, "--no-cache")
    assert [w.name for w in wheels] == ["recorder-1.0+rocm6.1-py3-none-any.whl"]
    assert not stale.exists()
    assert sorted(p.name for p in (tmp_path / "w" / "dist").iterdir()) == ["package"]
