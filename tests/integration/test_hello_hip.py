"""The bundled example, built for real: hipcc compiles device code for two archs into one wheel."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile

import pytest

from rocbuild.detect.rocm import find_rocm
from rocbuild.engine.publish import MANIFEST
from rocbuild.verify.provenance import PROVENANCE
from tests.conftest import REPO

pytestmark = [pytest.mark.hipcc, pytest.mark.slow]
ARCHS = "gfx90a,gfx1030"


@pytest.fixture(scope="module")
def label() -> str:
    rocm = find_rocm(None, dict(os.environ))
    assert rocm is not None and rocm.version is not None
    return f"rocm{rocm.version.major}.{rocm.version.minor}"


def build(cli, tmp_path, *extra, recipe="hello-hip"):
    return cli("build", recipe, "--arch", ARCHS, "--work", tmp_path / "work", "--out", tmp_path / "wheelhouse",
               *extra)


def test_hello_hip_end_to_end(cli, tmp_path, label):
    code, out, err = build(cli, tmp_path)
    assert code == 0, err
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    name = f"hello_hip-0.1.0+{label}-{tag}-{tag}-linux_x86_64.whl"
    wheel = tmp_path / "wheelhouse" / name
    assert out.strip().splitlines() == [str(wheel)]
    assert sorted(p.name for p in wheel.parent.glob("*.whl")) == [name]

    # Provenance inside the wheel and in the wheelhouse manifest.
    with zipfile.ZipFile(wheel) as zf:
        prov = json.loads(zf.read(f"hello_hip-0.1.0+{label}.dist-info/{PROVENANCE}"))
    recipe_text = (REPO / "recipes" / "hello-hip.yaml").read_bytes()
    identity = prov["identity"]
    assert identity["recipe"] == {"name": "hello-hip", "version": "0.1.0", "extends": [],
                                  "sha256": hashlib.sha256(recipe_text).hexdigest()}
    assert prov["recipe_path"] == str(REPO / "recipes" / "hello-hip.yaml")
    assert identity["archs"] == ARCHS.split(",")
    assert identity["source"]["kind"] == "dir" and identity["source"]["identity"].startswith("tree:")
    toolchain = identity["toolchain"]
    assert toolchain["hipcc"] and toolchain["rocm_version"] and "clang" in toolchain["hip_compiler_version"]
    assert toolchain["hip_runtime"] and "libamdhip64.so" in toolchain["hip_runtime"]
    assert len(prov["build_key"]) == 64
    assert prov["wheel"] == {"built_as": f"hello_hip-0.1.0-{tag}-{tag}-linux_x86_64.whl", "local_version": label}
    manifest = json.loads((tmp_path / "wheelhouse" / MANIFEST).read_text())
    entry = manifest["wheels"][name]
    assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert entry["provenance"] == prov
    (kernel,) = [f for f in entry["verify"]["files"] if f["targets"]]
    assert kernel["path"].startswith("hello_hip/_core") and sorted(kernel["targets"]) == ["gfx1030", "gfx90a"]

    # Installed like any wheel, it imports without a GPU and says what it was built for.
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                    "--target", str(site), str(wheel)], check=True, capture_output=True)
    result = subprocess.run([sys.executable, "-m", "hello_hip"], capture_output=True, text=True,
                            env={"PYTHONPATH": str(site), "HIP_PLATFORM": "amd", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("hello-hip 0.1.0: code objects for gfx90a, gfx1030\n")
    if not os.path.exists("/dev/kfd"):
        assert "no HIP device here" in result.stdout

    # `rocbuild verify` on the result agrees, and reads the provenance back.
    code, out, _ = cli("verify", "-v", wheel, "--arch", ARCHS)
    assert code == 0 and "built by rocbuild" in out and "hipv4-amdgcn-amd-amdhsa--gfx1030" in out

    # A second run resumes: nothing is compiled again; --local-version none drops the label.
    code, out, err = build(cli, tmp_path, "--local-version", "none")
    assert code == 0, err
    assert "done in an earlier run" in err
    assert out.strip() == str(tmp_path / "wheelhouse" / f"hello_hip-0.1.0-{tag}-{tag}-linux_x86_64.whl")


def test_a_failed_check_keeps_the_wheelhouse_clean(cli, tmp_path):
    recipe = tmp_path / "hello-gfx942.yaml"
    text = (REPO / "recipes" / "hello-hip.yaml").read_text()
    text = text.replace("path: ../examples/hello-hip", f"path: {REPO / 'examples' / 'hello-hip'}")
    text = text.replace('      files: "hello_hip/_core*.so"', '      files: "hello_hip/_core*.so"\n      archs: [gfx942]')
    recipe.write_text(text)
    code, out, err = build(cli, tmp_path, recipe=str(recipe))
    assert code == 1
    assert "no code object for gfx942" in err and "hello_hip/_core" in err
    assert "the wheel was not put in the wheelhouse" in err
    assert not (tmp_path / "wheelhouse").exists() or not list((tmp_path / "wheelhouse").glob("*.whl"))
