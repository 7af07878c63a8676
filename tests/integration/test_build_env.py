"""Build requirements provisioned: wheel steps run in a venv layered on the target python, holding the
recipe's requires.python and the project's build-system.requires, installed for real from PyPI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.network, pytest.mark.slow]

# An in-tree build backend that needs one module only the target python has (as torch extensions
# need the target's torch) and one the build environment must bring (tomli_w, from requires.python),
# then hands over to flit_core (from the project's build-system.requires).
BACKEND = '''
import targetonly, tomli_w
from flit_core.buildapi import build_wheel as _build_wheel, get_requires_for_build_wheel

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    assert targetonly.MARK == "from the target python"
    tomli_w.dumps({"ok": True})
    return _build_wheel(wheel_directory, config_settings, metadata_directory)
'''


def make_project(root: Path) -> Path:
    project = root / "layered"
    (project / "layered").mkdir(parents=True)
    (project / "layered" / "__init__.py").write_text('"""A package built through the build environment."""\n'
                                                     '__version__ = "1.0"\n')
    (project / "backend").mkdir()
    (project / "backend" / "layered_backend.py").write_text(BACKEND)
    (project / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["flit_core>=3.2,<4", "torch>=2.0"]
        build-backend = "layered_backend"
        backend-path = ["backend"]

        [project]
        name = "layered"
        version = "1.0"
        description = "test"
    '''))
    recipe = root / "layered.yaml"
    recipe.write_text(textwrap.dedent(f'''
        schema: 1
        name: layered
        version: "1.0"
        source:
          path: {project}
        requires:
          python: [tomli_w, targetonly]
        steps:
          - wheel: {{}}
        verify:
          - code-objects: false
    '''))
    return recipe


def target_python(root: Path) -> Path:
    """A real venv with pip and a module of its own."""
    subprocess.run([sys.executable, "-m", "venv", str(root / "target")], check=True)
    python = root / "target" / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "targetonly.py").write_text('MARK = "from the target python"\n')
    return python


def imports(python: Path, module: str) -> bool:
    return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True).returncode == 0


def test_build_requirements_installed_layered_on_the_target(cli, tmp_path):
    recipe = make_project(tmp_path)
    python = target_python(tmp_path)
    args = ("build", recipe, "--python", python, "--arch", "gfx90a", "--work", tmp_path / "w", "--out", tmp_path / "wh")

    code, out, err = cli(*args, "--no-build-env")
    assert code == 3, err
    assert f"install them: {python.absolute()} -m pip install tomli_w" in err
    assert "targetonly" not in err.split("lacks build module(s):")[1].split("\n")[0]

    code, out, err = cli(*args)
    assert code == 0, err
    assert "build-env" in err and "tomli_w flit_core>=3.2,<4" in err and "torch" not in err.split("build-env")[1].split("\n")[0]
    assert [p.name for p in (tmp_path / "wh").glob("*.whl")] == ["layered-1.0+rocm5.2-py2.py3-none-any.whl"]
    # What the build needed went into the build environment, never into the target python.
    assert not imports(python, "tomli_w") and not imports(python, "flit_core")
    env_python = tmp_path / "w" / "buildenv" / "bin" / "python"
    assert imports(env_python, "tomli_w") and imports(env_python, "targetonly")

    # A changed source builds again; the list is unchanged, so the environment is reused.
    (tmp_path / "layered" / "layered" / "__init__.py").write_text('__version__ = "1.0"\n')
    code, out, err = cli(*args, "--no-cache")
    assert code == 0, err
    assert "build-env: up to date" in err and "[1/1] wheel: ok" in err


def test_a_target_without_pip_is_named(cli, tmp_path):
    recipe = make_project(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    code, _, err = cli("build", recipe, "--python", tmp_path / "bare" / "bin" / "python", "--arch", "gfx90a",
                       "--work", tmp_path / "w", "--out", tmp_path / "wh")
    assert code == 1
    assert "has no pip to install with" in err and "--no-build-env" in err
    assert not (tmp_path / "wh").exists()
