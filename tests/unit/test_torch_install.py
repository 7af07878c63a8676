"""Where `--install-missing` gets a ROCm torch: PyTorch's index for the toolchain's ROCm release, or
--torch-index; what it refuses (an unpublished release, a system Python, an index that is not a URL)
before anything runs. The runner here records each argv and answers the torch probe itself."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from rocbuild.detect.rocm import RocmVersion
from rocbuild.detect.torch import PythonEnv, TorchInfo, torch_index_for, torch_install_argv
from rocbuild.engine.requirements import probe_torch
from rocbuild.errors import HostNotReady, UsageError
from rocbuild.plan.assemble import plan_for
from rocbuild.plan.model import Plan
from rocbuild.plan.request import BuildRequest
from rocbuild.process.runner import RunResult
from tests.conftest import make_rocm_tree

RECIPE = """\
schema: 1
name: needs-torch
version: "1.0"
source:
  path: project
requires:
  torch: rocm
steps:
  - name: hello
    run: [python, -c, "print('hello')"]
"""
MIRROR = "http://127.0.0.1:9/simple/"
CPU = {"__version__": "2.14.1+cpu", "hip": None, "cuda": None}
ROCM = {"__version__": "2.14.1+rocm7.2", "hip": "7.2.53211", "cuda": None}


@pytest.mark.parametrize("rocm, index", [("7.2.4", "rocm7.2"), ("7.1.1", "rocm7.1"), ("6.2.4", "rocm6.2.4"),
                                         ("6.4.3", "rocm6.4"), ("5.7.1", "rocm5.7")])
def test_pytorchs_index_for_a_published_release(rocm, index):
    assert torch_index_for(RocmVersion(rocm)).url == "https://download.pytorch.org/whl/" + index


@pytest.mark.parametrize("rocm, says", [("5.5.0", "PyTorch publishes no ROCm 5.5 wheels"),
                                        ("8.0.0", "PyTorch publishes no ROCm 8.0 wheels"),
                                        (None, "the ROCm release is unknown")])
def test_an_unpublished_release_has_no_index_unless_one_is_given(rocm, says):
    version = RocmVersion(rocm) if rocm else None
    chosen = torch_index_for(version)
    assert chosen.url is None and chosen.problem is not None and says in chosen.problem
    assert "--torch-index" in chosen.problem
    assert torch_index_for(version, MIRROR).url == MIRROR


@pytest.mark.parametrize("url", ["rocm7.2", "/srv/simple", "ftp://mirror/simple", "http://", "file://",
                                 "https://mirror/simple --extra-index-url=x"])
def test_a_torch_index_that_is_not_a_url_is_refused(url):
    with pytest.raises(UsageError, match="not a package index URL"):
        torch_index_for(RocmVersion("7.2.4"), url)


def test_file_urls_are_indexes_too():
    assert torch_index_for(RocmVersion("7.2.4"), "file:///srv/simple").url == "file:///srv/simple"


def test_only_a_torch_that_is_there_is_forced_out():
    assert torch_install_argv("/v/bin/python", MIRROR, replace=False) == (
        "/v/bin/python", "-m", "pip", "install", "torch", "--index-url", MIRROR)
    assert torch_install_argv("/v/bin/python", MIRROR, replace=True) == (
        "/v/bin/python", "-m", "pip", "install", "--force-reinstall", "torch", "--index-url", MIRROR)


class ProbeRunner:
    """Records argvs; the torch probe gets `torches` in turn (the last one from then on)."""

    def __init__(self, *torches: dict[str, object] | None, externally_managed: bool = False):
        self.torches = list(torches)
        self.externally_managed = externally_managed
        self.calls: list[list[str]] = []

    def keep_open(self, fd: int) -> None:
        pass

    def run(self, argv: Sequence[str] | None, *, cwd: object, env: Mapping[str, str] | None = None, log: Path,
            shell: str | None = None, sandbox: Sequence[str] = (), watch: object = None) -> RunResult:
        words = list(argv or [])
        self.calls.append(words)
        if words[1:2] != ["-c"]:
            return RunResult(0, "Successfully installed torch\n")
        fields = self.torches.pop(0) if len(self.torches) > 1 else self.torches[0]
        torch = None if fields is None else {"path": "/v/site/torch", "fields": fields}
        return RunResult(0, json.dumps({"python": "3.11", "executable": words[0], "site_packages": ["/v/site"],
                                        "torch": torch, "externally_managed": self.externally_managed}) + "\n")

    def pip_calls(self) -> list[list[str]]:
        return [c for c in self.calls if c[1:4] == ["-m", "pip", "install"]]


@pytest.fixture(autouse=True)
def cpu_torch_when_planned(monkeypatch):
    """The target python (this one) as planned: a CPU torch, whatever this interpreter has."""
    env = PythonEnv(sys.executable, "3.11", [], TorchInfo("/v/site/torch", "2.14.1+cpu", None, None))
    monkeypatch.setattr("rocbuild.detect.host.probe_python", lambda python: env)


def plan(tmp_path: Path, rocm: str, torch_index: str | None = None) -> Plan:
    (tmp_path / "project").mkdir(parents=True, exist_ok=True)
    (tmp_path / "needs-torch.yaml").write_text(RECIPE)
    tree = make_rocm_tree(tmp_path / "opt", rocm)
    return plan_for(BuildRequest(str(tmp_path / "needs-torch.yaml"), arch="gfx1100", rocm=str(tree),
                                 work=str(tmp_path / "w"), environ={"ROCBUILD_CCACHE": "0"}, build_env=False, confine=False,
                                 torch_index=torch_index))


def test_the_plan_names_the_index_and_the_argv(tmp_path):
    req = plan(tmp_path, "7.2.4").requirements
    assert req.torch_index == "https://download.pytorch.org/whl/rocm7.2" and req.torch_index_problem is None
    assert req.torch_install_argv == (sys.executable, "-m", "pip", "install", "--force-reinstall", "torch",
                                      "--index-url", "https://download.pytorch.org/whl/rocm7.2")
    over = plan(tmp_path / "o", "5.5.0", MIRROR).requirements
    assert over.torch_index == MIRROR and over.torch_install_argv is not None
    assert over.torch_install_argv[-1] == MIRROR
    with pytest.raises(UsageError, match="--torch-index 'rocm7.2'"):
        plan(tmp_path / "bad", "7.2.4", "rocm7.2")


def test_an_unpublished_release_is_refused_before_pip_runs(tmp_path):
    runner = ProbeRunner(CPU)
    with pytest.raises(HostNotReady) as caught:
        probe_torch(plan(tmp_path, "5.5.0"), runner, tmp_path / "log", install=True)
    assert "PyTorch publishes no ROCm 5.5 wheels" in (caught.value.hint or "")
    assert runner.pip_calls() == []


def test_torch_index_overrides_and_a_cpu_torch_is_forced_out(tmp_path):
    runner = ProbeRunner(CPU, ROCM)
    env = probe_torch(plan(tmp_path, "5.5.0", MIRROR), runner, tmp_path / "log", install=True)
    assert env is not None and env.torch is not None and env.torch.hip == "7.2.53211"
    assert runner.pip_calls() == [[sys.executable, "-m", "pip", "install", "--force-reinstall", "torch",
                                   "--index-url", MIRROR]]


def test_no_torch_is_installed_without_force_and_a_rocm_torch_not_at_all(tmp_path):
    runner = ProbeRunner(None, ROCM)
    probe_torch(plan(tmp_path, "7.2.4"), runner, tmp_path / "log", install=True)
    assert runner.pip_calls() == [[sys.executable, "-m", "pip", "install", "torch", "--index-url",
                                   "https://download.pytorch.org/whl/rocm7.2"]]
    runner = ProbeRunner(ROCM)
    probe_torch(plan(tmp_path / "again", "7.2.4"), runner, tmp_path / "log", install=True)
    assert runner.pip_calls() == []
    runner = ProbeRunner(CPU)
    probe_torch(plan(tmp_path / "asked-not", "7.2.4"), runner, tmp_path / "log")  # no --install-missing
    assert runner.pip_calls() == []


def test_a_system_python_is_refused_with_the_venv_advice(tmp_path):
    runner = ProbeRunner(CPU, externally_managed=True)
    with pytest.raises(HostNotReady, match="PEP 668") as caught:
        probe_torch(plan(tmp_path, "7.2.4"), runner, tmp_path / "log", install=True)
    assert "-m venv ~/rocm-venv" in (caught.value.hint or "") and "--break-system-packages" not in str(caught.value)
    assert runner.pip_calls() == []


def test_a_torch_that_is_still_not_rocm_after_pip_is_named(tmp_path):
    """pip picks the highest version of every index it knows: an extra index can win with a CPU torch."""
    runner = ProbeRunner(CPU)
    with pytest.raises(HostNotReady, match="is a CPU-only build") as caught:
        probe_torch(plan(tmp_path, "7.2.4"), runner, tmp_path / "log", install=True)
    assert "extra-index-url" in (caught.value.hint or "") and len(runner.pip_calls()) == 1
