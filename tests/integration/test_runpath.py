"""`runpath: relative`: a wheel whose extension was linked with RUNPATH into the build folder (as
CMake's build RPATH does) loads from the wheel alone once rebuilt with the recipe asking for it."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.hipcc

RECIPE = """\
schema: 1
name: rp-demo
version: "1.0"
source: {{path: src}}
{runpath}
steps:
  # libinner in the build folder, the extension linked against it with that folder as RUNPATH, a
  # copy of libinner bundled into the package: what many CMake projects make.
  - run: [mkdir, -p, "${{{{ build }}}}/lib"]
  - run: [gcc, -shared, -fPIC, "-Wl,-soname,libinner.so.1", -o, "${{{{ build }}}}/lib/libinner.so.1", inner.c]
  - run: [hipcc, -shared, -fPIC, --offload-arch=gfx90a, -o, rpdemo/_ext.so, ext.hip, "-L${{{{ build }}}}/lib",
          -l:libinner.so.1,
          "-Wl,-rpath,${{{{ build }}}}/lib:/opt/rocm/lib"]
  - run: [cp, "${{{{ build }}}}/lib/libinner.so.1", rpdemo/libs/]
  - wheel: {{}}
"""


def project(tmp_path: Path, runpath: str) -> Path:
    folder = tmp_path / "recipe"
    src = folder / "src"
    (src / "rpdemo" / "libs").mkdir(parents=True)
    (src / "rpdemo" / "__init__.py").write_text("")
    (src / "inner.c").write_text("int inner(void) { return 41; }\n")
    (src / "ext.hip").write_text('#include <hip/hip_runtime.h>\n__global__ void k(int* x) { x[0] = 1; }\n'
                                 'extern "C" int inner(void);\nextern "C" int answer(void) { return inner() + 1; }\n')
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "rpdemo"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["rpdemo"]\ninclude-package-data = false\n'
        '[tool.setuptools.package-data]\nrpdemo = ["*.so", "libs/*.so.1"]\n')
    recipe = folder / "rp-demo.yaml"
    recipe.write_text(RECIPE.format(runpath=runpath))
    return recipe


def build(cli, tmp_path: Path, runpath: str) -> tuple[Path, Path]:
    recipe = project(tmp_path, runpath)
    work = tmp_path / "work"
    code, out, err = cli("build", str(recipe), "--arch", "gfx90a", "--out", str(tmp_path / "wh"), "--work",
                         str(work), "--no-cache", "--no-build-env")
    assert code == 0, err
    (wheel,) = (tmp_path / "wh").glob("*.whl")
    return wheel, work


def runpath_of(path: Path) -> str:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return next(line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "RUNPATH" in line)


def test_relative_runpath_loads_from_the_wheel_alone(cli, tmp_path):
    wheel, work = build(cli, tmp_path, "runpath: relative")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    assert runpath_of(site / "rpdemo" / "_ext.so") == "$ORIGIN/libs:/opt/rocm/lib"
    shutil.rmtree(work)  # the build folder is gone, as on a user's machine
    assert ctypes.CDLL(str(site / "rpdemo" / "_ext.so")).answer() == 42
    # The rewritten file is what RECORD says it is.
    check = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                            str(tmp_path / "installed"), str(wheel)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_as_built_keeps_the_build_folder_and_plan_says_which(cli, tmp_path):
    wheel, work = build(cli, tmp_path, "")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path / "site")
    assert runpath_of(tmp_path / "site" / "rpdemo" / "_ext.so").startswith(str(work))
    recipe = tmp_path / "recipe" / "rp-demo.yaml"
    recipe.write_text(recipe.read_text().replace("\n\nsteps:", "\nrunpath: relative\nsteps:"))
    code, out, _ = cli("plan", str(recipe), "--arch", "gfx90a", "--json", "--work", str(work))
    assert code == 0 and json.loads(out)["runpath"] == "relative"
    code, out, _ = cli("plan", str(recipe), "--arch", "gfx90a", "--work", str(work))
    assert "become $ORIGIN-relative" in out


def test_bad_runpath_value(cli, tmp_path):
    recipe = project(tmp_path, "runpath: relatve")
    code, _, err = cli("plan", str(recipe), "--arch", "gfx90a")
    assert code == 2 and "runpath: unknown runpath choice" in err and "did you mean 'relative'" in err
