"""The engine's phases with a fake runner: resume, skip, cache hit, fresh tree, a failed check.

The runner records each argv instead of running it; a `pip wheel -w DIR` leaves a real (tiny)
wheel in DIR, as pip would. Everything else (work folder, stamps, wheel rewriting, verify, the
wheelhouse and the build cache) is the real code on real files.
"""

from __future__ import annotations

import dataclasses
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from rocbuild.engine.cache import BuildCache
from rocbuild.engine.engine import BuildResult, Engine
from rocbuild.engine.identity import Toolchain
from rocbuild.errors import StepFailed
from rocbuild.plan.assemble import plan_for as plan_of_request
from rocbuild.plan.model import Plan
from rocbuild.plan.request import BuildRequest
from rocbuild.process.runner import RunResult
from rocbuild.progress import Progress

RECIPE = """\
schema: 1
name: fake
version: "1.0"
source:
  path: project
env:
  FLAVOUR: plain
steps:
  - name: configure
    run: [python, configure.py]
  - name: compile
    run: [python, compile.py]
  - wheel: {}
verify:
  - code-objects: false
  - name: smoke
    command: [python, -c, "import fake"]
"""


class FakeRunner:
    def __init__(self, fail: Mapping[str, int] | None = None, *, wheels: bool = True):
        self.calls: list[str] = []
        self.fail = dict(fail or {})  # a word of the command -> the exit code it gets
        self.wheels = wheels  # False: `pip wheel` succeeds but writes nothing (a broken build backend)
        self.kept_open: list[int] = []

    def keep_open(self, fd: int) -> None:
        self.kept_open.append(fd)

    def run(self, argv: Sequence[str] | None, *, cwd: object, env: Mapping[str, str] | None = None, log: Path,
            shell: str | None = None, sandbox: Sequence[str] = (), watch: object = None) -> RunResult:
        words = list(argv or [shell or ""])
        self.calls.append(" ".join(words))
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as fh:
            fh.write(f"$ {' '.join(words)}\n")
        for word, code in self.fail.items():
            if word in words:
                return RunResult(code, f"{word} failed\n")
        if self.wheels and "wheel" in words and "-w" in words:
            write_wheel(Path(words[words.index("-w") + 1]))
        return RunResult(0, "")


def write_wheel(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "fake-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("fake/__init__.py", "")
        zf.writestr("fake-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                "Tag: py3-none-any\n")
        zf.writestr("fake-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fake\nVersion: 1.0\n")
        zf.writestr("fake-1.0.dist-info/RECORD", "")
    return wheel


TOOLCHAIN = Toolchain("/opt/rocm-6.1.0", "6.1.0", "rocm", "/opt/rocm-6.1.0/bin/hipcc", "HIP version: 6.1.40091",
                      "/opt/rocm-6.1.0/lib/llvm/bin/clang++", "clang version 17.0.0", None)


@pytest.fixture
def recipe(tmp_path) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "setup.py").write_text("# the project\n")
    path = tmp_path / "fake.yaml"
    path.write_text(RECIPE)
    return path


def plan_for(tmp_path: Path, recipe: Path, rocm: Path, work: str = "w") -> Plan:
    # The recorded runner runs nothing, so there is no build environment to make (tests of it run it for real).
    return plan_of_request(BuildRequest(str(recipe), arch="gfx90a", rocm=str(rocm), out=str(tmp_path / "wheelhouse"),
                                 work=str(tmp_path / work), jobs=1, environ={"ROCBUILD_CCACHE": "0"},
                                 build_env=False, confine=False))


def engine(plan: Plan, runner: FakeRunner, *, cache: BuildCache | None = None, toolchain: Toolchain = TOOLCHAIN,
           environ: Mapping[str, str] | None = None) -> Engine:
    return Engine(plan, runner, Progress(quiet=True), cache=cache, environ=environ or {},
                  toolchain=lambda rocm: toolchain)


def run_names(runner: FakeRunner) -> list[str]:
    names = []
    for call in runner.calls:
        for name in ("configure.py", "compile.py", "pip wheel", "import fake"):
            if name in call:
                names.append(name)
    return names


def test_a_fresh_build_runs_every_step_then_resumes_none(tmp_path, recipe, rocm61):
    plan = plan_for(tmp_path, recipe, rocm61)
    runner = FakeRunner()
    result = engine(plan, runner).build()
    assert run_names(runner) == ["configure.py", "compile.py", "pip wheel", "import fake"]
    assert [w.name for w in result.wheels] == ["fake-1.0+rocm6.1-py3-none-any.whl"]
    assert result == BuildResult(result.wheels, plan.work.src)

    again = FakeRunner()
    assert engine(plan, again).build().wheels == result.wheels
    assert run_names(again) == ["import fake"]  # every step skipped; the checks always run


def test_a_failed_step_resumes_from_itself(tmp_path, recipe, rocm61):
    plan = plan_for(tmp_path, recipe, rocm61)
    with pytest.raises(StepFailed, match="step 'compile' failed with exit code 2"):
        engine(plan, FakeRunner(fail={"compile.py": 2})).build()
    assert not (tmp_path / "wheelhouse").exists()
    runner = FakeRunner()
    engine(plan, runner).build()
    assert run_names(runner) == ["compile.py", "pip wheel", "import fake"]


def test_a_failed_check_keeps_the_wheelhouse_clean(tmp_path, recipe, rocm61):
    plan = plan_for(tmp_path, recipe, rocm61)
    with pytest.raises(StepFailed, match="verify smoke: command exited with 1") as failed:
        engine(plan, FakeRunner(fail={"import fake": 1})).build()
    assert "the wheel was not put in the wheelhouse" in (failed.value.hint or "")
    assert not (tmp_path / "wheelhouse").exists()


def test_a_cache_hit_runs_no_step(tmp_path, recipe, rocm61):
    cache = BuildCache(tmp_path / "cache")
    first = engine(plan_for(tmp_path, recipe, rocm61), FakeRunner(), cache=cache).build()
    assert first.cache_key is not None and not first.from_cache
    runner = FakeRunner()
    hit = engine(plan_for(tmp_path, recipe, rocm61, work="other"), runner, cache=cache).build()
    assert hit.from_cache and hit.cache_key == first.cache_key
    assert run_names(runner) == ["import fake"]  # verified again, nothing built
    # Another compiler: another identity, so no hit, and the steps run.
    runner = FakeRunner()
    newer = dataclasses.replace(TOOLCHAIN, hip_compiler_version="clang version 22.1.0")
    miss = engine(plan_for(tmp_path, recipe, rocm61, work="other"), runner, cache=cache, toolchain=newer).build()
    assert not miss.from_cache and miss.cache_key != first.cache_key
    assert run_names(runner) == ["configure.py", "compile.py", "pip wheel", "import fake"]


@pytest.mark.parametrize("change", ["toolchain", "host variable"])
def test_a_changed_toolchain_or_environment_starts_from_a_fresh_tree(tmp_path, recipe, rocm61, change):
    plan = plan_for(tmp_path, recipe, rocm61)
    engine(plan, FakeRunner()).build()
    cmake_cache = plan.work.build / "CMakeCache.txt"
    cmake_cache.parent.mkdir(parents=True, exist_ok=True)
    cmake_cache.write_text("CMAKE_HIP_COMPILER:FILEPATH=/usr/lib/llvm-21/bin/clang++\n")
    runner = FakeRunner()
    if change == "toolchain":
        engine(plan, runner, toolchain=dataclasses.replace(TOOLCHAIN, rocm_version="7.2.0")).build()
    else:
        engine(plan, runner, environ={"HIPCC_COMPILE_FLAGS_APPEND": "--offload-compress"}).build()
    assert run_names(runner) == ["configure.py", "compile.py", "pip wheel", "import fake"]
    assert not cmake_cache.exists(), "a CMake cache made by another toolchain survived"


def test_until_stops_after_the_step_and_collects_nothing(tmp_path, recipe, rocm61):
    plan = plan_for(tmp_path, recipe, rocm61)
    runner = FakeRunner()
    result = engine(plan, runner).build(until="configure")
    assert result.stopped_after == "configure" and result.wheels == ()
    assert run_names(runner) == ["configure.py"]


def test_a_wheel_step_that_writes_no_wheel_fails_naming_it(tmp_path, recipe, rocm61):
    plan = plan_for(tmp_path, recipe, rocm61)
    with pytest.raises(StepFailed, match="wheel step 'wheel' finished but left no wheel in .*/dist/wheel") as failed:
        engine(plan, FakeRunner(wheels=False)).build()
    assert failed.value.exit_code == 1
    assert not (tmp_path / "wheelhouse").exists()


def test_a_wheel_of_version_0_0_0_from_a_recipe_of_another_is_refused(tmp_path):
    """pyronn-torch 0.2.3 came out as pyronn_torch-0.0.0 (its setup.py takes the version from pyscaffold,
    which the build lacked) and had been verified and placed, and was served so from the build cache again."""
    from rocbuild.verify.plan_checks import versioned

    with pytest.raises(StepFailed, match="the wheel's version is 0.0.0, where the recipe builds 0.2.3"):
        versioned(tmp_path / "pyronn_torch-0.0.0+rocm7.2.buildonly-cp314-cp314-linux_x86_64.whl", "0.2.3")
    versioned(tmp_path / "pyronn_torch-0.2.3+rocm7.2-cp314-cp314-linux_x86_64.whl", "0.2.3")
    versioned(tmp_path / "placeholder-0.0.0-py3-none-any.whl", "0.0")  # the recipe says 0.0.0 itself


def test_a_wheel_from_an_sdist_must_be_the_sdists_version(tmp_path):
    """torch-encoding 1.2.1's setup.py adds today's date to its version unless RELEASE is set: its wheel said
    1.2.1b20261203."""
    from rocbuild.verify.plan_checks import versioned

    dated = tmp_path / "torch_encoding-1.2.1b20261203+rocm7.2-py2.py3-none-any.whl"
    with pytest.raises(StepFailed, match="the wheel's version is 1.2.1b20261203, where the recipe builds 1.2.1 from its sdist"):
        versioned(dated, "1.2.1", exact=True)
    versioned(dated, "1.2.1")  # a git checkout's version is setup.py's to say
    versioned(tmp_path / "torch_encoding-1.2.1+rocm7.2-py2.py3-none-any.whl", "1.2.1.0", exact=True)
