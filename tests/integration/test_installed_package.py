"""A plain (non-editable) install finds its shipped recipes and patches from any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, make_rocm_tree

pytestmark = pytest.mark.network  # the isolated build fetches hatchling from PyPI


def test_wheel_install_finds_recipes_and_patches(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                    "-w", str(dist), str(REPO)], check=True, capture_output=True)
    (wheel,) = dist.glob("rocbuild-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "rocbuild/data/recipes/horovod.yaml" in names
    assert "rocbuild/data/patches/horovod/0001-torch-cxx-standard-from-the-build.patch" in names
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "-q",
                    "--target", str(site), str(wheel)], check=True, capture_output=True)
    # A config folder of its own: recipes that `build NAME==VERSION --try` verified on this machine are not shipped ones.
    env = dict(os.environ, PYTHONPATH=str(site), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("ROCBUILD_RECIPES", None)
    run = lambda *a: subprocess.run([sys.executable, "-m", "rocbuild", *a], cwd="/", env=env,  # noqa: E731
                                    capture_output=True, text=True)
    listing = json.loads(run("recipes", "--json").stdout)
    assert {r["name"] for r in listing} >= {"bitsandbytes", "horovod", "hello-hip"}
    assert all(r["path"].startswith(str(site)) for r in listing)
    rocm = make_rocm_tree(tmp_path, "6.1.0")
    plan = run("plan", "horovod", "--arch", "gfx90a", "--rocm", str(rocm), "--json")
    assert plan.returncode == 0, plan.stderr
    diffs = [p["path"] for p in json.loads(plan.stdout)["patches"] if p["kind"] == "diff"]
    assert diffs and all(d.startswith(str(site)) and os.path.isfile(d) for d in diffs)
    # The bundled example's source ships too, beside the recipe that builds it.
    plan = run("plan", "hello-hip", "--arch", "gfx90a", "--rocm", str(rocm), "--json")
    assert plan.returncode == 0, plan.stderr
    source = json.loads(plan.stdout)["source"]["directory"]
    assert source.startswith(str(site)) and os.path.isfile(os.path.join(source, "pyproject.toml"))
    assert os.path.isfile(os.path.join(source, "src", "hello_hip", "_core.hip"))
    # The real-builds results ship too: `recipes status` reads them from the installed package.
    shipped = json.loads((REPO / "real-builds" / "results.json").read_text())
    status = json.loads(run("recipes", "status", "--json").stdout)
    assert {r["recipe"] for r in status if r["built_for_real"]} == {r["recipe"] for r in shipped}
    # So does the recipe schema, which the starter recipe names for editors.
    shipped_schema = run("recipes", "schema", "--path").stdout.strip()
    assert shipped_schema.startswith(str(site)) and os.path.isfile(shipped_schema)
    assert json.loads(Path(shipped_schema).read_text()) == json.loads(run("recipes", "schema").stdout)
