"""rocbuild doctor against machines rebuilt as file trees: the field reports and a healthy box.

The machine (sys/, dev/, proc/, etc/group), the ROCm install and the torch
are stand-in trees; the venv and the extension modules in it are real.
"""

from __future__ import annotations

import glob
import json
import os

import pytest

from rocbuild.doctor.host import rocm_checks
from rocbuild.doctor.model import Identity
from rocbuild.doctor.run import Inputs, run_doctor
from tests.conftest import DATA, make_rocm_tree
from tests.pyenv_trees import EXT_SUFFIX, add_record, compile_cuda_linked, make_machine, make_venv

ROCMINFO = DATA / "rocminfo"
GFX1030, GFX1031, GFX1032, GFX1100 = 100300, 100301, 100302, 110000


def doctor(cli, *args):
    code, out, err = cli("doctor", "--json", *args)
    assert not err.startswith("Traceback"), err
    data = json.loads(out)
    return code, {c["id"]: c for c in data["checks"]}, data


@pytest.fixture
def rocm_venv(tmp_path):
    return make_venv(tmp_path / "venv", "rocm6.1")


def test_healthy_rocm_box_passes(cli, tmp_path, rocm61, rocm_venv):
    root = make_machine(tmp_path / "root", [GFX1030])
    python, _ = rocm_venv
    code, checks, data = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", python)
    assert code == 0, {k: (c["status"], c["message"]) for k, c in checks.items() if c["status"] == "fail"}
    assert data["ok"] is True and data["counts"]["fail"] == 0
    for check in data["checks"]:
        assert set(check) >= {"id", "status", "message", "fix"} and check["status"] in ("ok", "warn", "fail", "skip")
    assert checks["rocm"]["status"] == "ok" and "6.1.0" in checks["rocm"]["message"]
    assert checks["gpus"]["details"]["archs"] == ["gfx1030"]
    assert checks["gpu-support"]["status"] == "ok"
    assert checks["rccl-headers"]["status"] == "ok" and "rccl/rccl.h only" in checks["rccl-headers"]["message"]
    assert checks["torch"]["status"] == "ok" and "torch.version.hip=6.1.40091" in checks["torch"]["message"]
    assert checks["torch-rocm-version"]["status"] == "ok"
    assert checks["dev-kfd"]["status"] == checks["dev-dri"]["status"] == "ok"
    assert checks["extensions"]["status"] == "ok"
    assert checks["wsl"]["status"] == "ok"


def test_cuda_built_selective_scan_names_the_file_and_the_rebuild(cli, tmp_path, rocm61, rocm_venv):
    """Field report 1: ROCm torch, but mamba_ssm came from a build against a CUDA torch."""
    root = make_machine(tmp_path / "root", [GFX1100])
    python, site = rocm_venv
    scan = compile_cuda_linked(site, f"selective_scan_cuda{EXT_SUFFIX}", tmp_path / "b1")
    add_record(site, "mamba_ssm", "2.2.4", [scan.name, "mamba_ssm/__init__.py"])
    other = compile_cuda_linked(site, f"flash_attn_2_cuda{EXT_SUFFIX}", tmp_path / "b2")
    code, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", python)
    assert code == 1
    ext = checks["extensions"]
    assert ext["status"] == "fail"
    assert f"{scan} (from mamba_ssm 2.2.4): links the CUDA library libc10_cuda.so" in ext["message"]
    assert str(other) in ext["message"]
    fixes = ext["fix"].splitlines()
    assert (f"rocbuild mamba-ssm --python {python} --arch gfx1100 && {python} -m pip install "
            "--force-reinstall --no-deps wheelhouse/mamba_ssm-*.whl") in fixes
    assert any("flash_attn_2_cuda" in f and "--no-build-isolation" in f for f in fixes)
    assert checks["torch"]["status"] == "ok"  # the torch itself is fine: the extension is the culprit


@pytest.mark.parametrize("flavour, what", [("cuda", "a CUDA build"), ("cpu", "a CPU-only build")])
def test_non_rocm_torch_on_amd_host_fails_with_install_command(cli, tmp_path, rocm61, flavour, what):
    """Field report 2: a CUDA (or CPU) PyTorch on an AMD GPU."""
    root = make_machine(tmp_path / "root", [GFX1100])
    python, _ = make_venv(tmp_path / "venv", flavour)
    code, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", python)
    assert code == 1
    torch = checks["torch"]
    assert torch["status"] == "fail" and what in torch["message"]
    assert torch["fix"] == (f"{python} -m pip install --force-reinstall torch torchvision torchaudio "
                            "--index-url https://download.pytorch.org/whl/rocm6.1")
    assert checks["torch-rocm-version"]["status"] == "skip"


def test_torch_rocm_release_against_the_system(cli, tmp_path, rocm_venv):
    root = make_machine(tmp_path / "root", [GFX1030])
    python, _ = make_venv(tmp_path / "venv62", "rocm6.2")
    rocm61 = make_rocm_tree(tmp_path / "opt", "6.1.0")
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", python)
    assert checks["torch-rocm-version"]["status"] == "warn"
    assert checks["torch-rocm-version"]["details"] == {"torch": "6.2", "system": "6.1"}
    rocm57 = make_rocm_tree(tmp_path / "opt57", "5.7.1")
    code, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm57, "--python", rocm_venv[0])
    assert code == 1 and checks["torch-rocm-version"]["status"] == "fail"
    assert checks["gpu-support"]["status"] == "skip"  # no official table before 6.0


def test_no_torch_is_a_warning(cli, tmp_path, rocm61):
    root = make_machine(tmp_path / "root", [GFX1030])
    python, _ = make_venv(tmp_path / "venv", None)
    code, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", python)
    assert code == 0 and checks["torch"]["status"] == "warn" and "--index-url" in checks["torch"]["fix"]


def test_hsa_override_reports_runtime_and_hardware(cli, tmp_path, rocm61, rocm_venv, monkeypatch):
    root = make_machine(tmp_path / "root", [GFX1031])
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", rocm_venv[0])
    o = checks["hsa-override"]
    assert o["status"] == "warn"
    assert o["details"] == {"value": "10.3.0", "runtime": "gfx1030", "hardware": ["gfx1031"]}
    assert "Wheels built here target gfx1030" in o["message"]
    assert checks["gpus"]["details"]["archs"] == ["gfx1030"]
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "10.3")
    code, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", rocm_venv[0])
    assert code == 1 and checks["hsa-override"]["status"] == "fail" and "malformed" in checks["hsa-override"]["message"]


def test_unsupported_card_gets_the_override_that_fits(cli, tmp_path, rocm61, rocm_venv):
    root = make_machine(tmp_path / "root", [GFX1032])
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", rocm_venv[0])
    s = checks["gpu-support"]
    assert s["status"] == "warn" and s["details"]["unsupported"] == ["gfx1032"]
    assert "export HSA_OVERRIDE_GFX_VERSION=10.3.0" in s["fix"] and "--arch gfx1030" in s["fix"]


def test_wsl_warns_and_does_not_expect_kfd(cli, tmp_path, rocm61, rocm_venv):
    root = make_machine(tmp_path / "root", [], devices=False, wsl=True)
    code, checks, _ = doctor(cli, "--sysfs", root, "--rocminfo", ROCMINFO / "gfx1030_rx6800xt_wsl2.txt",
                             "--rocm", rocm61, "--python", rocm_venv[0])
    assert checks["wsl"]["status"] == "warn" and "microsoft" in checks["wsl"]["message"]
    assert checks["dev-kfd"]["status"] == "warn" and "expected on WSL" in checks["dev-kfd"]["message"]
    assert checks["distributed"]["status"] == "warn" and "WSL" in checks["distributed"]["message"]
    assert "gloo" in checks["distributed"]["fix"]
    assert code == 0


def test_igpu_next_to_dgpu_gets_hidden(cli, tmp_path, rocm61, rocm_venv):
    root = make_machine(tmp_path / "root", [])
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocminfo", ROCMINFO / "gfx1100_plus_gfx1036_igpu_cpu_2gpus.txt",
                          "--rocm", rocm61, "--python", rocm_venv[0])
    d = checks["distributed"]
    assert d["status"] == "warn" and "gfx1036" in d["message"]
    assert "export HIP_VISIBLE_DEVICES=0" in d["fix"] and "NCCL_P2P_DISABLE=1" in d["fix"]
    assert d["details"]["igpus"] == [1]


def test_gpu_without_device_nodes_fails_with_container_flags(cli, tmp_path, rocm61, rocm_venv):
    root = make_machine(tmp_path / "root", [GFX1030], devices=False)
    code, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", rocm_venv[0])
    assert code == 1
    assert checks["dev-kfd"]["status"] == "fail" and "--device=/dev/kfd" in checks["dev-kfd"]["fix"]
    assert checks["dev-dri"]["status"] == "fail"


@pytest.mark.parametrize("who, kfd, groups", [
    (Identity(1000, frozenset({100}), "bob"), "fail", "warn"),  # in neither group
    (Identity(1001, frozenset({100}), "alice"), "fail", "warn"),  # in video (by /etc/group) but not render
    (Identity(1002, frozenset({44, 105}), "carol"), "ok", "ok"),
])
def test_device_access_is_judged_for_the_user(tmp_path, rocm61, rocm_venv, who, kfd, groups):
    root = make_machine(tmp_path / "root", [GFX1030])
    checks = {c.id: c for c in run_doctor(Inputs(root=root, rocm=str(rocm61),
                                                  python=str(rocm_venv[0]), environ={}, identity=who))}
    assert checks["dev-kfd"].status == kfd
    assert checks["groups"].status == groups
    if kfd == "fail":
        assert "usermod -aG render,video" in checks["dev-kfd"].fix and "group render" in checks["dev-kfd"].message
    if who.user == "alice":
        assert checks["groups"].message == "alice is not in render"


def test_without_rocm_or_gpu_fewer_checks_run():
    checks = rocm_checks(None, None, amd_gpu=False)
    assert checks[0].status == "warn" and "apt-get install hipcc" in checks[0].fix
    assert [c.status for c in checks[1:]] == ["skip"] * 4
    assert rocm_checks(None, None, amd_gpu=True)[0].status == "fail"


def test_text_report_shows_fixes_and_exit_code(cli, tmp_path, rocm61):
    root = make_machine(tmp_path / "root", [GFX1100])
    python, _ = make_venv(tmp_path / "venv", "cuda")
    code, out, _ = cli("doctor", "--sysfs", root, "--rocm", rocm61, "--python", python)
    assert code == 1
    torch_line = next(line for line in out.splitlines() if line.startswith("FAIL  torch "))
    assert "a CUDA build" in torch_line
    assert "fix: " + str(python) + " -m pip install" in out
    assert out.splitlines()[-1].startswith("1 failed")


@pytest.mark.parametrize("args, fragment", [
    (["--sysfs", "/nonexistent/root"], "--sysfs /nonexistent/root: no such folder"),
    (["--rocminfo", "/nonexistent/rocminfo.txt"], "--rocminfo /nonexistent/rocminfo.txt: no such file"),
    (["--python", "/nonexistent/python"], "--python /nonexistent/python: no such executable"),
    (["--rocm", "/tmp"], "--rocm /tmp: not a ROCm install"),
])
def test_bad_arguments_exit_2(cli, args, fragment):
    code, out, err = cli("doctor", *args)
    assert code == 2 and fragment in err and "Traceback" not in err


def test_a_system_python_gets_a_venv_not_pip_into_it(cli, tmp_path, rocm61):
    """PEP 668: Debian's /usr/bin/python3 refuses `pip install`; the fix makes a venv."""
    system = "/usr/bin/python3"
    if not os.path.exists(system) or not glob.glob("/usr/lib/python3*/EXTERNALLY-MANAGED"):
        pytest.skip("no PEP 668 system Python here")  # Debian 12's python3 (as in CI) is one
    root = make_machine(tmp_path / "root", [GFX1030])
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", system)
    fix = checks["torch"]["fix"]
    assert fix.startswith(f"{system} -m venv ~/rocm-venv && ~/rocm-venv/bin/pip install torch"), fix
    assert "--force-reinstall" not in fix and "rocm6.1" in fix


def test_a_rocm_pytorch_does_not_serve_gets_no_index(cli, tmp_path):
    root = make_machine(tmp_path / "root", [GFX1030])
    rocm52 = make_rocm_tree(tmp_path / "opt", "5.2.0")
    python, _ = make_venv(tmp_path / "venv", "cpu")
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm52, "--python", python)
    fix = checks["torch"]["fix"]
    assert "PyTorch publishes no ROCm 5.2 wheels" in fix and "download.pytorch.org" not in fix


def test_a_cpu_torch_is_not_said_to_link_cuda(cli, tmp_path, rocm61):
    root = make_machine(tmp_path / "root", [GFX1100])
    python, _ = make_venv(tmp_path / "venv", "cpu")
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", python)
    message = checks["torch"]["message"]
    assert "no GPU code" in message and "link CUDA" not in message


@pytest.mark.parametrize("os_release, fragment", [
    ('ID=debian\nVERSION_CODENAME=forky\n', "-t experimental librccl-dev"),
    ('ID=debian\nVERSION_ID="13"\nVERSION_CODENAME=trixie\n', "apt-get install librccl-dev (RCCL 5.4"),
    ('ID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\n', "Debian 12 packages no RCCL"),
    ('ID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.5 LTS"\n', "on Ubuntu 22.04.5 LTS: rccl-dev from AMD"),
])
def test_the_rccl_hint_fits_the_distribution_release(cli, tmp_path, rocm_venv, os_release, fragment):
    root = make_machine(tmp_path / "root", [GFX1030])
    (root / "etc" / "os-release").write_text(os_release)
    rocm = make_rocm_tree(tmp_path / "opt", "6.4.0", packages=("hip", "hipblas"))
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm, "--python", rocm_venv[0])
    assert checks["rccl-headers"]["status"] == "warn" and fragment in checks["rccl-headers"]["fix"]


def test_a_kfd_node_called_ip_discovery_is_not_a_gpu_name(cli, tmp_path, rocm61, rocm_venv):
    root = make_machine(tmp_path / "root", [GFX1030])
    (root / "sys/class/kfd/kfd/topology/nodes/1/name").write_text("ip discovery\n")
    _, checks, _ = doctor(cli, "--sysfs", root, "--rocm", rocm61, "--python", rocm_venv[0])
    assert "ip discovery" not in json.dumps(checks["gpus"])
