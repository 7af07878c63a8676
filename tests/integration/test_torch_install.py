"""`--install-missing` gives a target python that has a CPU torch a ROCm one, with a real pip from a
PEP 503 index on loopback, before the build's steps run; without it the build stops naming the command.

The torch served is a wheel the test builds with pip from a small package tree laid out as a ROCm torch
wheel's (torch/version.py with hip, rocm, cuda and __version__): no real ROCm torch can be downloaded here.
`rocbuild root torch` makes a real build-only ROCm torch, but only inside a build root.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import make_rocm_tree
from tests.integration.test_sdist_source import Index
from tests.pyenv_trees import add_record, make_venv

VERSION = "2.14.1+rocm7.2"
VERSION_PY = f"__version__ = '{VERSION}'\ndebug = False\ncuda = None\nhip = '7.2.53211'\nrocm = '7.2.4'\n"
RECIPE = """\
schema: 1
name: with-torch
version: "1.0"
source:
  path: {src}
requires:
  torch: rocm
steps:
  - name: read-torch
    run: [python, -c, "import torch.version as v; open('hip.txt', 'w').write(str(v.hip))"]
"""


def torch_wheel(tmp_path: Path, out: Path) -> Path:
    """torch 2.14.1+rocm7.2 as a wheel, built by pip from a pyproject and a torch package tree."""
    project = tmp_path / "torch-project"
    (project / "torch").mkdir(parents=True)
    (project / "torch" / "__init__.py").write_text("from torch.version import __version__\n")
    (project / "torch" / "version.py").write_text(VERSION_PY)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "torch"\nversion = "{VERSION}"\n[tool.setuptools]\npackages = ["torch"]\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(project)], check=True, capture_output=True)
    [wheel] = out.glob("torch-*.whl")
    return wheel


@pytest.fixture
def torch_index(tmp_path, monkeypatch):
    """http://127.0.0.1:PORT/simple/ serving that wheel; pip sees this index and no other."""
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONSTRAINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # not this machine's pip.conf (extra indexes, find-links)
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    served = tmp_path / "served"
    with serve_torch(torch_wheel(tmp_path, served / "files"), served) as url:
        yield url


@contextmanager
def serve_torch(wheel: Path, served: Path) -> Iterator[str]:
    """A PEP 503 index on loopback whose one project, torch, is `wheel` (which lies in served/files)."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (served / "simple" / "torch").mkdir(parents=True)
    (served / "simple" / "torch" / "index.html").write_text(
        f'<a href="../../files/{quote(wheel.name)}#sha256={digest}">{wheel.name}</a>\n')
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Index(*a, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def cpu_torch_venv(path: Path) -> Path:
    """A venv with pip, whose torch is a CPU build that pip knows as installed (a dist-info with a RECORD)."""
    python, site = make_venv(path, "cpu")
    subprocess.run([str(python), "-m", "ensurepip"], check=True, capture_output=True)
    add_record(site, "torch", "2.4.0+cpu", ["torch/__init__.py", "torch/version.py"])
    return python


def test_install_missing_puts_a_rocm_torch_into_the_target(cli, tmp_path, torch_index):
    python = cpu_torch_venv(tmp_path / "venv")
    (tmp_path / "project").mkdir()
    recipe = tmp_path / "with-torch.yaml"
    recipe.write_text(RECIPE.format(src=tmp_path / "project"))
    rocm = make_rocm_tree(tmp_path / "opt", "7.2.4")
    common = [recipe, "--python", python, "--torch-index", torch_index, "--rocm", rocm, "--arch", "gfx1100",
              "--work", tmp_path / "w", "--out", tmp_path / "wh"]

    code, out, err = cli("plan", *common, "--install-missing", "--json")
    assert code == 0, err
    target = json.loads(out)["python"]["executable"]
    argv = [target, "-m", "pip", "install", "--force-reinstall", "torch", "--index-url", torch_index]
    assert json.loads(out)["requirements"]["torch_install_argv"] == argv
    code, out, err = cli("plan", *common)
    assert code == 0 and f"argv: {json.dumps(argv)}" in out, err

    code, _, err = cli("build", *common)  # without --install-missing: stopped, the command named
    assert code == 3
    assert shlex.join(argv) in err and "--install-missing" in err
    assert not (tmp_path / "w" / "src" / "hip.txt").exists()

    code, _, err = cli("build", *common, "--install-missing")
    assert code == 0, err
    assert "==> install-torch" in err and "install-torch: installed in" in err
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    assert "hip = '7.2.53211'" in (site / "torch" / "version.py").read_text()
    assert (tmp_path / "w" / "src" / "hip.txt").read_text() == "7.2.53211"  # the step saw the new torch

    code, _, err = cli("build", *common, "--install-missing")  # a ROCm torch there now: nothing installed
    assert code == 0, err
    assert "install-torch" not in err
