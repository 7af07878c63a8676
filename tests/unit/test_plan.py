"""Plans of the shipped recipes against faithful fake ROCm trees (pure: nothing runs).

Most tests call the planner's API (`plan_for`) and read the typed Plan; a few go through `rocbuild
plan` (and `build --dry-run`) for what only the command line does: the text and JSON forms, exit
codes and messages without a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rocbuild.engine.engine import check_until
from rocbuild.errors import HostNotReady, RecipeError
from rocbuild.plan.assemble import plan_for
from rocbuild.plan.model import (
    CodeObjectsCheck,
    CommandCheck,
    DiffPatch,
    ImportCheck,
    LinkPatch,
    Plan,
    ReplacePatch,
)
from rocbuild.plan.request import BuildRequest
from rocbuild.source.spec import DirSource, GitSource
from tests.conftest import make_rocm_tree


@pytest.fixture
def environ(tmp_path, monkeypatch) -> dict[str, str]:
    """The environment the `cli` fixture gives the command line, as the dict a BuildRequest carries.

    The caches and registered recipe sources are private to the test; no ROCBUILD_RECIPES and no
    HSA_OVERRIDE_GFX_VERSION. The XDG folders go into os.environ as well: rocbuild.paths reads
    them from there (the work folder under the cache, the registered sources under the config).
    """
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("ROCBUILD_RECIPES", raising=False)
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
    return dict(os.environ)


def plan_of(recipe: str | Path, environ: dict[str, str], *, rocm: Path | None, arch: str = "gfx90a",
            **fields) -> Plan:
    """What `rocbuild plan RECIPE --arch ARCH --rocm ROCM ...` plans, asked of the planner directly."""
    return plan_for(BuildRequest(recipe=str(recipe), arch=arch, rocm=str(rocm) if rocm is not None else None,
                                 environ=environ, **fields))


def plan_json(cli, *args):
    code, out, err = cli("plan", *args, "--json")
    assert code == 0, err
    return json.loads(out)


# -- the shipped recipes' plans ----------------------------------------------


@pytest.mark.parametrize("archs", ["gfx1100", "gfx90a,gfx1100"])
def test_bitsandbytes_plan(environ, rocm61, tmp_path, archs):
    """bitsandbytes: configure with CMake for the HIP backend and the requested targets (`;`-separated),
    build with the requested jobs, then `pip wheel` without rerunning CMake; ROCm's path and the AMD
    platform in every step's environment, the recipe's CMake packages required, the source pinned."""
    plan = plan_of("bitsandbytes", environ, arch=archs, rocm=rocm61, work=str(tmp_path / "w"), jobs=3)
    src, build = str(tmp_path / "w" / "src"), str(tmp_path / "w" / "build")
    cmake, cmake_build, wheel = plan.steps
    assert cmake.argv is not None and cmake_build.argv is not None and wheel.argv is not None
    assert cmake.argv[:5] == ("cmake", "-S", src, "-B", build)
    assert f"-DBNB_ROCM_ARCH={archs.replace(',', ';')}" in cmake.argv
    assert "-DCOMPUTE_BACKEND=hip" in cmake.argv and "-DCMAKE_BUILD_TYPE=MinSizeRel" in cmake.argv
    assert f"-DCMAKE_HIP_COMPILER={rocm61}/lib/llvm/bin/clang++" in cmake.argv
    assert cmake_build.argv == ("cmake", "--build", build, "--parallel", "3")
    assert wheel.argv[1:7] == ("-m", "pip", "wheel", src, "--no-deps", "--no-build-isolation")
    # The build environment's commands come first on the wheel step's PATH, before ccache's and ROCm's.
    tools = str(tmp_path / "w" / "buildenv" / "bin")
    assert wheel.env == {"BNB_SKIP_CMAKE": "1", "PATH": f"{tools}:{plan.base_env['PATH']}"}
    assert plan.base_env["ROCM_PATH"] == str(rocm61) and plan.base_env["HIP_PLATFORM"] == "amd"
    assert plan.requirements.cmake_packages == ("hipblas", "hiprand", "hipblaslt", "rocblas", "hipcub")
    assert isinstance(plan.source, GitSource)
    assert plan.source.commit == "37d2a9387f7146ccb85517ff45c665d345bfda79"
    assert plan.host.archs == tuple(archs.split(","))


def test_bitsandbytes_plan_json(cli, rocm61, tmp_path):
    """`rocbuild plan --json` prints the same plan as JSON: steps' argv and env, the base environment,
    requirements, the pinned source and the targets, under their documented keys."""
    archs = "gfx90a,gfx1100"
    plan = plan_json(cli, "bitsandbytes", "--arch", archs, "--rocm", rocm61, "--work", tmp_path / "w", "-j", "3")
    src, build = str(tmp_path / "w" / "src"), str(tmp_path / "w" / "build")
    cmake, cmake_build, wheel = plan["steps"]
    assert cmake["argv"][:5] == ["cmake", "-S", src, "-B", build]
    assert f"-DBNB_ROCM_ARCH={archs.replace(',', ';')}" in cmake["argv"]
    assert "-DCOMPUTE_BACKEND=hip" in cmake["argv"] and "-DCMAKE_BUILD_TYPE=MinSizeRel" in cmake["argv"]
    assert f"-DCMAKE_HIP_COMPILER={rocm61}/lib/llvm/bin/clang++" in cmake["argv"]
    assert cmake_build["argv"] == ["cmake", "--build", build, "--parallel", "3"]
    assert wheel["argv"][1:7] == ["-m", "pip", "wheel", src, "--no-deps", "--no-build-isolation"]
    assert wheel["env"] == {"BNB_SKIP_CMAKE": "1", "PATH": f"{tmp_path / 'w' / 'buildenv' / 'bin'}:{plan['env']['PATH']}"}
    assert plan["env"]["ROCM_PATH"] == str(rocm61) and plan["env"]["HIP_PLATFORM"] == "amd"
    assert plan["requirements"]["cmake_packages"] == ["hipblas", "hiprand", "hipblaslt", "rocblas", "hipcub"]
    assert plan["source"]["kind"] == "git"
    assert plan["source"]["commit"] == "37d2a9387f7146ccb85517ff45c665d345bfda79"
    assert plan["archs"] == archs.split(",")


def test_bitsandbytes_other_ref_drops_the_pin(environ, rocm61):
    """A --ref other than the recipe's builds that ref, and the recipe's commit pin no longer applies."""
    plan = plan_of("bitsandbytes", environ, arch="gfx1100", rocm=rocm61, ref="main")
    assert isinstance(plan.source, GitSource)
    assert plan.source.ref == "main" and plan.source.commit is None


def test_bitsandbytes_compact_option(environ, rocm61):
    """Upstream's release builds (MinSizeRel, compressed device code) by default; Release on request."""
    default = plan_of("bitsandbytes", environ, arch="gfx1100", rocm=rocm61).steps[0].argv
    assert default is not None
    assert "-DCMAKE_BUILD_TYPE=MinSizeRel" in default and "-DCMAKE_HIP_FLAGS=--offload-compress" in default
    argv = plan_of("bitsandbytes", environ, arch="gfx1100", rocm=rocm61, settings=("compact=off",)).steps[0].argv
    assert argv is not None
    assert "-DCMAKE_BUILD_TYPE=Release" in argv and "-DCMAKE_HIP_FLAGS=" in argv


@pytest.mark.parametrize("archs", ["gfx1100", "gfx90a,gfx1100"])
def test_horovod_plan_rocm61(environ, rocm61, archs):
    """Horovod on AMD's ROCm 6.1 tree: its ROCm build variables (targets comma-separated, generic
    tuning, PyTorch only), FindHIP linked from lib/cmake/hip, rccl.h replaced by rccl/rccl.h, header
    fixes, FindPytorch's library search kept to torch's folders, and the two diffs; the built-in
    device-code check first, for the build's targets, then the PyTorch plugin's (device code, RCCL,
    HIP); the wheels labelled rocm6.1; RCCL among the CMake packages."""
    plan = plan_of("horovod", environ, arch=archs, rocm=rocm61)
    env = plan.base_env
    assert env["HOROVOD_GPU"] == "ROCM" and env["HOROVOD_GPU_OPERATIONS"] == "NCCL"
    assert env["HOROVOD_ROCM_HOME"] == str(rocm61)
    assert env["HCC_AMDGPU_TARGET"] == archs
    assert env["HOROVOD_BUILD_ARCH_FLAGS"] == "-mtune=generic"
    assert env["HOROVOD_WITH_PYTORCH"] == "1" and env["HOROVOD_WITHOUT_TENSORFLOW"] == "1"
    assert "HIP_PATH" not in env  # only for distro layouts
    assert env["ROCM_HOME"] == str(rocm61) and env["PYTORCH_ROCM_ARCH"] == archs.replace(",", ";")
    # link FindHIP, rccl.h, five header fixes for newer compilers, FindPytorch's search, then the two diffs
    kinds = [type(p) for p in plan.patches]
    assert kinds == [LinkPatch, *[ReplacePatch] * 7, DiffPatch, DiffPatch]
    assert env["CMAKE_POLICY_VERSION_MINIMUM"] == "3.5"
    link, rccl = plan.patches[0], plan.patches[1]
    assert isinstance(link, LinkPatch) and link.source_glob == f"{rocm61}/lib/cmake/hip/FindHIP*"
    assert isinstance(rccl, ReplacePatch) and rccl.replacement == "#include <rccl/rccl.h>"
    verify = {v.name: v for v in plan.verify}
    check_build = verify["check-build"]
    assert isinstance(check_build, CommandCheck) and check_build.argv == ("horovodrun", "--check-build")
    # every wheel build gets the built-in device-code check, for the build's archs
    first = plan.verify[0]
    assert isinstance(first, CodeObjectsCheck) and first.archs == tuple(archs.split(","))
    plugin = verify["torch-plugin-is-rocm"]
    assert isinstance(plugin, CodeObjectsCheck) and plugin.files == ("horovod/torch/mpi_lib_v2*.so",)
    assert plugin.links == ("librccl", "libamdhip64", "libc10_hip")
    assert plan.local_label == "rocm6.1"
    assert "rccl" in plan.requirements.cmake_packages


def test_horovod_plan_old_rocm_layout(environ, tmp_path):
    """On ROCm 5.1's layout FindHIP is linked from hip/cmake and rccl.h needs no replacing (there is no
    rccl/ folder); frameworks=none builds without PyTorch, does not require torch, and may run up to
    the kernels step (the wheel step is refused)."""
    old = make_rocm_tree(tmp_path, "5.1.3")
    plan = plan_of("horovod", environ, rocm=old, settings=("frameworks=none",))
    check_until(plan, "kernels")
    link = plan.patches[0]
    assert isinstance(link, LinkPatch) and link.source_glob == f"{old}/hip/cmake/FindHIP*"
    # rccl.h stays: no rccl/ there
    # nor FindPytorch's search (no PyTorch plugin)
    assert [type(p) for p in plan.patches] == [LinkPatch, *[ReplacePatch] * 5, DiffPatch, DiffPatch]
    assert plan.base_env["HOROVOD_WITHOUT_PYTORCH"] == "1"
    assert "ROCM_HOME" not in plan.base_env and "torch-plugin-is-rocm" not in {v.name for v in plan.verify}
    assert "torch" not in plan.requirements.python_modules


def test_hello_hip_plan(environ, rocm61, tmp_path):
    """hello-hip: one wheel step compiling with ROCm's hipcc for the requested targets (`;`-separated),
    from the bundled example folder; the built-in device-code check covers the targets, the recipe's
    pins the extension module, and its `import:` entry imports hello_hip."""
    plan = plan_of("hello-hip", environ, arch="gfx90a,gfx1030", rocm=rocm61, work=str(tmp_path / "w"))
    (wheel,) = plan.steps
    assert wheel.argv is not None
    assert f"--config-settings=cmake.define.CMAKE_CXX_COMPILER={rocm61}/bin/hipcc" in wheel.argv
    assert "--config-settings=cmake.define.HIP_ARCHITECTURES=gfx90a;gfx1030" in wheel.argv
    assert isinstance(plan.source, DirSource) and plan.source.directory.endswith("examples/hello-hip")
    assert plan.local_label == "rocm6.1"
    checks = {v.name: v for v in plan.verify}
    device_code, kernel_module, imports = checks["device-code"], checks["kernel-module"], checks["import"]
    assert isinstance(device_code, CodeObjectsCheck) and device_code.archs == ("gfx90a", "gfx1030")
    assert isinstance(kernel_module, CodeObjectsCheck) and kernel_module.files == ("hello_hip/_core*.so",)
    assert isinstance(imports, ImportCheck) and imports.argv[-1] == "hello_hip"


# -- recipes of the test's own -----------------------------------------------


def test_user_recipes_dir_shadows_builtin(cli, environ, tmp_path, rocm61):
    """A recipe in a --recipes folder shadows the built-in one of the same name: `rocbuild recipes`
    lists it with its origin, and the plan is made from it."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "horovod.yaml").write_text("schema: 1\nname: horovod\nversion: 9.9\nsource: {path: .}\n"
                                    "steps:\n  - run: [python, -V]\n")
    code, out, _ = cli("recipes", "--recipes", d)
    assert code == 0
    line = next(row for row in out.splitlines() if row.startswith("horovod"))
    assert "9.9" in line and "--recipes" in line
    plan = plan_of("horovod", environ, rocm=rocm61, recipe_dirs=(str(d),))
    assert plan.recipe.version == "9.9"


@pytest.mark.parametrize("recipe_line, local_version, expected", [
    ("", None, "rocm6.1"),                                            # default: the ROCm release
    ('local-version: "rocm${{ rocm.version.major }}"', None, "rocm6"),  # the recipe's template
    ('local-version: ""', None, ""),                                  # the recipe drops it
    ("", "mybuild.3", "mybuild.3"),                                   # the command line wins
    ('local-version: "rocm6"', "none", ""),
])
def test_local_version(environ, rocm61, tmp_path, recipe_line, local_version, expected):
    """The wheels' local version label: the ROCm release by default, else the recipe's (templated, or
    "" for none); --local-version overrides both, and 'none' drops it."""
    (tmp_path / "recipes").mkdir()
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.write_text("schema: 1\nname: demo\nversion: '1.0'\nsource: {path: .}\nsteps:\n  - wheel: {}\n"
                      f"{recipe_line}\nverify:\n  - code-objects: false\n")
    plan = plan_of(recipe, environ, rocm=rocm61, local_version=local_version)
    assert plan.local_label == expected
    # code-objects: false keeps the CUDA check but asks for no device code
    (check,) = plan.verify
    assert isinstance(check, CodeObjectsCheck) and check.archs == ()


@pytest.mark.parametrize("section, key, line", [
    ("env:\n  X:\n    value: a\n    when: \"${{ jobs }}\"\n", "env.X.when", 8),
    ("requires:\n  tools:\n    - name: cmake\n      when: \"${{ jobs }}\"\n", "requires.tools[0].when", 8),
    ("patches:\n  - replace: {file: a, find: b, with: c}\n    when: \"${{ jobs }}\"\n", "patches[0].when", 7),
])
def test_a_when_error_points_at_the_when(environ, rocm61, tmp_path, section, key, line):
    """A `when:` that renders to neither true nor false is a recipe error (exit 2) located at the
    `when:` key: the message names the `when:` key and its line, not the value's."""
    (tmp_path / "recipes").mkdir()
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.write_text("schema: 1\nname: demo\nversion: '1.0'\nsource: {path: .}\n" + section
                      + "steps:\n  - run: [echo]\n")
    with pytest.raises(RecipeError) as caught:
        plan_of(recipe, environ, rocm=rocm61)
    error = caught.value
    assert error.exit_code == 2
    assert (error.file, error.line, error.key) == (str(recipe), line, key)
    text = error.render()
    assert text.startswith(f"{recipe}:{line}:") and f"error: {key}: `when` must render to true or false" in text, text


def test_an_invalid_ref_is_refused_at_load_with_its_line(environ, tmp_path):
    """A recipe whose source.ref is not a valid git ref is refused when it is loaded (exit 2), at the
    ref's line and column."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text("schema: 1\nname: r\nversion: '1'\nsource:\n  git: https://example.invalid/r.git\n"
                      "  ref: ../x\nsteps:\n  - run: [echo]\n")
    with pytest.raises(RecipeError) as caught:
        plan_of(recipe, environ, rocm=None)
    error = caught.value
    assert error.exit_code == 2
    assert (error.file, error.line, error.column, error.key) == (str(recipe), 6, 8, "source.ref")
    assert error.render().startswith(f"{recipe}:6:8: error: source.ref:"), error.render()


def test_an_unsupported_combination_is_refused_before_anything_runs(environ, tmp_path):
    """An `unsupported:` entry without a step refuses the plan itself (exit 2), naming the recipe,
    the ROCm release and the option, the recipe's advice and where the recipe says so; the same
    recipe plans with the other option, or with the option on an older ROCm."""
    rocm70 = make_rocm_tree(tmp_path / "r7", "7.0.0")
    with pytest.raises(RecipeError) as caught:
        plan_of("mamba-ssm", environ, arch="gfx942", rocm=rocm70, settings=("pins=torch2.4",))
    assert caught.value.exit_code == 2
    err = caught.value.render()
    assert "mamba-ssm cannot be built with ROCm 7.0.0 and pins=torch2.4" in err and "use pins=current" in err
    assert "mamba-ssm.yaml:" in err  # where the recipe says so
    assert caught.value.file is not None and caught.value.file.endswith("mamba-ssm.yaml")
    check_until(plan_of("mamba-ssm", environ, arch="gfx942", rocm=rocm70), None)
    rocm61 = make_rocm_tree(tmp_path / "r6", "6.1.0")
    check_until(plan_of("mamba-ssm", environ, arch="gfx942", rocm=rocm61, settings=("pins=torch2.4",)), None)


def test_unsupported_entries_need_a_reason(environ, tmp_path):
    """An `unsupported:` entry without `why:` is a recipe error (exit 2) naming the entry and the key."""
    recipe = tmp_path / "x.yaml"
    recipe.write_text("schema: 1\nname: x\nversion: '1'\noutput: tree\nsource: {path: .}\n"
                      "unsupported:\n  - when: \"${{ true }}\"\n")
    with pytest.raises(RecipeError) as caught:
        plan_of(recipe, environ, rocm=None)
    assert caught.value.exit_code == 2
    err = caught.value.render()
    assert "unsupported[0]" in err and "why" in err


# -- the command line itself -------------------------------------------------


def test_plan_text_shows_argv(cli, rocm61):
    """`rocbuild plan` without --json prints each step's argv as a JSON-quoted list."""
    code, out, _ = cli("plan", "bitsandbytes", "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 0
    assert '"-DBNB_ROCM_ARCH=gfx90a"' in out and "argv: [" in out


def test_dry_run_is_plan(cli, rocm61, tmp_path):
    """`build --dry-run` prints the plan and writes nothing, not even the wheelhouse."""
    code, out, _ = cli("build", "horovod", "--arch", "gfx90a", "--rocm", rocm61, "--dry-run", "--out", tmp_path / "wh")
    assert code == 0 and "plan: horovod" in out
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("args,code,fragment", [
    (["--set", "framework=pytorch"], 2, "did you mean 'frameworks'"),
    (["--set", "frameworks=jax"], 2, "'jax' is not allowed"),
    (["--set", "frameworks"], 2, "expected NAME=VALUE"),
    (["--ref", "--upload-pack=touch /tmp/x"], 2, "not a valid git ref"),
    (["--jobs", "0"], 2, "must be 1 or more"),
    (["--arch", "gfx1100;gfx90a"], 2, "separate several targets with commas"),
])
def test_bad_values(cli, rocm61, args, code, fragment):
    """A bad option, option value, ref, job count or target list exits 2 with a message, not a traceback."""
    got, _, err = cli("plan", "horovod", "--rocm", rocm61, *(["--arch", "gfx90a"] if "--arch" not in args else []), *args)
    assert got == code
    assert fragment in err
    assert "Traceback" not in err


def test_unknown_recipe_suggests(cli):
    """An unknown recipe name exits 2 and suggests the nearest known one."""
    code, _, err = cli("plan", "horovd", "--arch", "gfx90a")
    assert code == 2 and "did you mean: horovod" in err


def test_no_rocm_exits_3(cli, monkeypatch, tmp_path):
    """A ROCM_PATH that is not a ROCm install is a host problem: exit 3, saying so."""
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "missing"))
    code, _, err = cli("plan", "horovod", "--arch", "gfx90a")
    assert code == 3 and "not a ROCm install" in err


def test_no_rocm_is_a_host_error(environ, tmp_path):
    """The planner raises HostNotReady (exit 3) for a ROCM_PATH in the request's environment that is not
    a ROCm install: it reads the request's environment, not the process's."""
    environ["ROCM_PATH"] = str(tmp_path / "missing")
    with pytest.raises(HostNotReady) as caught:
        plan_of("horovod", environ, rocm=None)
    assert caught.value.exit_code == 3 and "not a ROCm install" in caught.value.message
    assert str(tmp_path / "missing") in caught.value.message


NO_DEVICE_CODE = """\
schema: 1
name: nokern
version: "1"
source: {path: .}
options:
  backend: {default: compiled, choices: [compiled, jit]}
run-env:
  NOKERN_BACKEND:
    value: "${{ options.backend }}"
    when: "${{ options.backend == 'jit' }}"
steps:
  - run: ["true"]
verify:
  - code-objects: false
    when: "${{ options.backend == 'jit' }}"
  - import: nokern
"""


def test_a_build_its_options_say_has_no_device_code_needs_no_arch_and_says_its_run_env(environ, rocm61, tmp_path):
    (tmp_path / "recipe" / "src").mkdir(parents=True)
    recipe = tmp_path / "recipe" / "nokern.yaml"
    recipe.write_text(NO_DEVICE_CODE.replace("{path: .}", "{path: src}"))
    jit = plan_of(recipe, environ, rocm=rocm61, arch=None, settings=("backend=jit",))
    assert jit.host.archs == () and jit.run_env == {"NOKERN_BACKEND": "jit"}
    (check,) = [c for c in jit.verify if c.name == "verify-2"]
    assert check.env["NOKERN_BACKEND"] == "jit"  # what imports the package runs with its run-env
    assert jit.to_json()["run_env"] == {"NOKERN_BACKEND": "jit"}
    # the other backend compiles for a GPU: it is planned for the archs asked (without --arch, the GPU tools
    # would be asked, which a unit test may not start), and needs nothing at run time
    compiled = plan_of(recipe, environ, rocm=rocm61, arch="gfx1100")
    assert compiled.host.archs == ("gfx1100",) and compiled.run_env == {}


# -- extra sources ------------------------------------------------------------

EXTRA_RECIPE = """\
schema: 1
name: r
version: '1'
source: {git: https://example.invalid/r.git, ref: v1}
options:
  kernels: {default: source, choices: [source, none]}
extra-sources:
  kernels:
    git: https://example.invalid/kernels.git
    commit: 669b31acc1dd1b3fd93286afd5db67f65d9f7557
    when: "${{ options.kernels == 'source' }}"
  data:
    path: data
steps:
  - run: [echo, "${{ sources.kernels ~ '/python' if options.kernels == 'source' else 'none' }}", "${{ sources.data }}"]
"""


def test_an_extra_source_is_planned_beside_the_tree_and_named_in_templates(environ, rocm61, tmp_path):
    """Each `extra-sources:` entry becomes a tree rocbuild fetches into the work folder's sources/NAME at
    prepare (a pinned git checkout, or a copy of a folder), which templates name as sources.NAME; one whose
    `when:` is false is neither fetched nor seen."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text(EXTRA_RECIPE)
    (tmp_path / "data").mkdir()
    plan = plan_of(recipe, environ, rocm=rocm61)
    kernels, data = plan.extra_sources
    assert kernels.name == "kernels" and kernels.dest == str(plan.work.sources / "kernels")
    assert isinstance(kernels.source, GitSource) and kernels.source.commit == "669b31acc1dd1b3fd93286afd5db67f65d9f7557"
    assert isinstance(data.source, DirSource) and data.source.directory == str(tmp_path / "data")
    assert plan.steps[0].argv == ("echo", f"{kernels.dest}/python", data.dest)
    assert kernels.where == f"{recipe}:9:5"
    shown = plan.to_json()["extra_sources"]
    assert shown["kernels"]["commands"][-1] == ["git", "-C", kernels.dest, "checkout", "--detach",
                                                "669b31acc1dd1b3fd93286afd5db67f65d9f7557"]
    without = plan_of(recipe, environ, rocm=rocm61, settings=("kernels=none",))
    assert [e.name for e in without.extra_sources] == ["data"]
    assert without.steps[0].argv == ("echo", "none", data.dest.replace(str(plan.work.root), str(without.work.root)))


def test_plan_text_lists_an_extra_sources_commands(cli, rocm61, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(EXTRA_RECIPE)
    (tmp_path / "data").mkdir()
    code, out, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 0, err
    assert "extra source kernels (sources.kernels in templates)" in out
    assert '"git", "clone", "--mirror", "https://example.invalid/kernels.git"' in out


@pytest.mark.parametrize(("body", "fragments"), [
    ("  bad-name: {path: data}\n", ["extra-sources.bad-name: invalid source name", "sources.NAME"]),
    ("  k: {git: https://example.invalid/k.git, sdist: k==1}\n", ["extra-sources.k: give exactly one of"]),
    ("  k: {git: https://example.invalid/k.git, commit: abc}\n", ["extra-sources.k.commit: not a whole commit id"]),
    ("  k: {path: data, sha256: abc}\n", ["extra-sources.k.sha256: sha256 applies to sdist sources only"]),
    ("  k: {git: 'ext::sh -c x'}\n", ["extra-sources.k.git: git transport helpers"]),
    ("  k: {path: data, whenn: x}\n", ["extra-sources.k.whenn: unknown key", "did you mean 'when'"]),
])
def test_a_bad_extra_source_names_its_key(environ, tmp_path, body, fragments):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("schema: 1\nname: r\nversion: '1'\nsource: {path: data}\nextra-sources:\n" + body
                      + "steps:\n  - run: [echo]\n")
    with pytest.raises(RecipeError) as caught:
        plan_of(recipe, environ, rocm=None)
    text = caught.value.render()
    assert text.startswith(f"{recipe}:6:"), text
    for fragment in fragments:
        assert fragment in text, text
