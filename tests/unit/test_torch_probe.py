"""Reading torch's flavour from torch/version.py, and the matching ROCm wheel index."""

from __future__ import annotations

import json

import pytest

from rocbuild.detect.rocm import RocmVersion
from rocbuild.detect.torch import TorchInfo, parse_probe, rocm_torch_index, rocm_torch_install


@pytest.mark.parametrize("version, hip, cuda, flavour, rocm", [
    ("2.4.0+rocm6.1", "6.1.40091-a8dbc0c19", None, "rocm", "6.1"),
    ("2.6.0+rocm6.2.4", None, None, "cpu", None),  # a version label alone does not make a ROCm build
    ("2.4.0+cu121", None, "12.1", "cuda", None),
    ("2.4.0", None, None, "cpu", None),
])
def test_flavour_and_rocm_release(version, hip, cuda, flavour, rocm):
    info = TorchInfo("/site/torch", version, hip, cuda)
    assert info.flavour == flavour
    assert info.rocm_version == rocm


def test_probe_output_with_noise_before_it():
    line = json.dumps({"python": "3.11", "executable": "/v/bin/python", "site_packages": ["/v/site"],
                       "torch": {"path": "/v/site/torch", "fields": {"__version__": "2.5.1+rocm6.2",
                                                                      "hip": "6.2.41133-dd7f95766", "cuda": None}}})
    env = parse_probe("sitecustomize says hello\n" + line + "\n")
    assert env.torch.flavour == "rocm" and env.torch.rocm_version == "6.2" and env.site_packages == ["/v/site"]
    with pytest.raises(ValueError):
        parse_probe("Traceback (most recent call last):\n")


@pytest.mark.parametrize("rocm, index", [
    ("6.1.2", "rocm6.1"), ("6.2.0", "rocm6.2"), ("6.2.4", "rocm6.2.4"), ("6.4.1", "rocm6.4"),
    ("7.1.0", "rocm7.1"), ("7.1.1", "rocm7.1"), ("7.2.4", "rocm7.2"), ("5.7.1", "rocm5.7"),
])
def test_index_is_the_newest_not_above_the_system_release(rocm, index):
    assert (rocm_torch_index(RocmVersion(rocm)) or "").endswith("/" + index)


def test_no_index_for_a_rocm_pytorch_does_not_serve():
    """A ROCm 5.2 host (Debian 12) has no PyTorch index: the fix says so instead of pointing at rocm7.0."""
    assert rocm_torch_index(RocmVersion("5.2")) is None
    fix = rocm_torch_install("/usr/bin/python3", RocmVersion("5.2"))
    assert "PyTorch publishes no ROCm 5.2 wheels" in fix and "index-url" not in fix


def test_a_system_python_gets_a_venv_command():
    fix = rocm_torch_install("/usr/bin/python3", RocmVersion("6.4.3"), externally_managed=True)
    assert fix.startswith("/usr/bin/python3 -m venv ~/rocm-venv && ~/rocm-venv/bin/pip install torch")
    assert "--index-url https://download.pytorch.org/whl/rocm6.4" in fix and "PEP 668" in fix


def test_probe_of_this_python_ignores_a_torch_in_the_working_folder(tmp_path, monkeypatch):
    """In-process, as from a subprocess started in "/": a ./torch must not stand in for the real one."""
    import sys

    from rocbuild.detect.torch import probe_python

    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("")
    (tmp_path / "torch" / "version.py").write_text("__version__ = '9.9.9+cu999'\ncuda = '99.9'\nhip = None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path)] + sys.path)
    env = probe_python(sys.executable)
    assert not isinstance(env, str)
    assert env.torch is None or env.torch.version != "9.9.9+cu999"
    assert sys.path[:2] == ["", str(tmp_path)]  # put back as it was
