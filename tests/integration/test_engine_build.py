"""The real engine on a tiny CMake + Python project in a local git repo: git, cmake, make, pip."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import DATA, git, make_git_repo, make_rocm_tree, tree_digest

PROJECT = DATA / "projects" / "tiny"

RECIPE = """\
schema: 1
name: tiny
version: "1.0"
source:
  git: {repo}
  ref: v1.0
{extra_source}
requires:
  tools: [cmake, make]
  python: [setuptools{extra_python}]
{extra_requires}
options:
  gate:
    default: ""
    help: a file that must exist for the gate step to pass
patches:
  - replace: {{file: tiny.c, find: "return a + b;", with: "return a + b; /* patched */"}}
steps:
  - cmake:
      defines:
        TINY_ARCHS: "${{{{ archs | join(';') }}}}"
  - cmake-build: {{}}
  - make:
      dir: "${{{{ build }}}}"
      target: all
  - name: gate
    run: [python, -c, "import os, sys; g = sys.argv[1]; sys.exit(0 if not g or os.path.exists(g) else 7)",
          "${{{{ options.gate }}}}"]
  - wheel: {{}}
verify:
  - command: [python, -c, "import tiny; print(tiny.archs(), tiny.add(2, 3))"]
    expect: ["{expect}"]
{device_code}"""
# tiny is a plain C library: the recipe says it has no device code of its own.
NO_DEVICE_CODE = "  - code-objects: false\n"


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    files = {str(p.relative_to(PROJECT)): p.read_text() for p in PROJECT.rglob("*") if p.is_file()}
    path = tmp_path / "upstream"
    return path, make_git_repo(path, files)


def write_recipe(tmp_path, repo, *, expect="gfx90a,gfx1100 5", extra_source="", extra_python="",
                 extra_requires="", device_code=NO_DEVICE_CODE) -> Path:
    f = tmp_path / "tiny.yaml"
    f.write_text(RECIPE.format(repo=repo[0], expect=expect, extra_source=extra_source,
                               extra_python=extra_python, extra_requires=extra_requires, device_code=device_code))
    return f


def build(cli, recipe, tmp_path, rocm, *extra, work="w"):
    return cli("build", recipe, "--arch", "gfx90a,gfx1100", "--rocm", rocm, "--work", tmp_path / work,
               "--out", tmp_path / "wheelhouse", "-j", "2", *extra)


def wheels(tmp_path):
    return sorted(p.name for p in (tmp_path / "wheelhouse").glob("*.whl")) if (tmp_path / "wheelhouse").exists() else []


def test_build_verify_and_rebuild(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo)
    code, out, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 0, err
    assert wheels(tmp_path) == ["tiny-1.0+rocm6.1-py3-none-any.whl"]
    assert out.strip().splitlines()[-1] == str(tmp_path / "wheelhouse" / "tiny-1.0+rocm6.1-py3-none-any.whl")
    with zipfile.ZipFile(tmp_path / "wheelhouse" / wheels(tmp_path)[0]) as z:
        assert "tiny/libtiny.so" in z.namelist()
    for label in ("[1/5] cmake", "[2/5] cmake-build", "[3/5] make", "[4/5] gate", "[5/5] wheel", "verify"):
        assert label in err
    assert "replaced 1" in err
    assert (tmp_path / "w" / "logs" / "01-cmake.log").read_text().count("-DTINY_ARCHS=gfx90a;gfx1100") == 1
    # The backend's own output reaches the wheel step's log (and its progress line) while it runs.
    assert "running bdist_wheel" in (tmp_path / "w" / "logs" / "05-wheel.log").read_text()

    # Unchanged inputs, build cache bypassed: the stamps skip every step.
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--no-cache")
    assert code == 0, err
    assert err.count("skipped: done in an earlier run") == 5
    assert "prepare: up to date" in err

    # A new work dir reuses the mirror: nothing is downloaded.
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--no-cache", work="w2")
    assert code == 0, err
    assert "from the mirror cache" in err and "mirroring" not in err

    # A changed input re-runs from the first step it affects.
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w",
                       "--out", tmp_path / "wheelhouse", "-j", "2")
    assert code == 1  # verify expects both archs
    assert "skipped" not in err.split("[1/5] cmake")[1].split("\n")[0]


def test_resume_after_failed_step(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo)
    gate = tmp_path / "gate"
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--set", f"gate={gate}")
    assert code == 1
    assert "step 'gate' failed with exit code 7" in err
    assert "full log:" in err and "04-gate.log" in err
    assert "last " in err and "lines of the log" in err
    assert wheels(tmp_path) == []
    gate.write_text("open")
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--set", f"gate={gate}")
    assert code == 0, err
    assert err.count("skipped: done in an earlier run") == 3  # cmake, cmake-build, make
    assert "[4/5] gate  (skipped" not in err
    assert wheels(tmp_path) == ["tiny-1.0+rocm6.1-py3-none-any.whl"]


def test_until_stops_then_continues(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo)
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--until", "cmake-build")
    assert code == 0, err
    assert "stopped after 'cmake-build'" in err and "[3/5]" not in err
    assert wheels(tmp_path) == []
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 0, err
    assert "[1/5] cmake  (skipped" in err and "[2/5] cmake-build  (skipped" in err
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--until", "nope")
    assert code == 2 and "steps: prepare, cmake, cmake-build, make, gate, wheel" in err


def test_failed_verify_leaves_wheelhouse_empty(cli, tmp_path, repo, rocm61):
    (tmp_path / "wheelhouse").mkdir()
    recipe = write_recipe(tmp_path, repo, expect="gfx942")
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 1
    assert "lacks 'gfx942'" in err and "not put in the wheelhouse" in err
    assert wheels(tmp_path) == []  # no wheel, no partial file


def test_source_dir_is_copied_never_modified(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo)
    before = tree_digest(repo[0])
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--source-dir", repo[0])
    assert code == 0, err
    assert tree_digest(repo[0]) == before
    assert "patched" in (tmp_path / "w" / "src" / "tiny.c").read_text()


def test_commit_pin_mismatch_fails(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, extra_source="  commit: " + "0" * 40)
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 1
    assert f"resolves to {repo[1]}" in err and "pins commit 0000000" in err


def test_missing_requirements_exit_3_before_anything_runs(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo, extra_python=", no_such_module_xyz",
                          extra_requires="  cmake-packages: [hipblas, hipfoo]")
    code, _, err = build(cli, recipe, tmp_path, rocm61, "--no-build-env")
    assert code == 3
    assert "no_such_module_xyz" in err and "CMake package 'hipfoo' not found" in err
    assert f"install them: {sys.executable} -m pip install no_such_module_xyz" in err
    assert "hipblas" not in err.split("hipfoo")[0].split("this host")[1]
    assert not (tmp_path / "w" / "src").exists()


def test_components_without_a_cmake_package_and_openmp_are_required(cli, tmp_path, repo, rocm61):
    """roctx (a header and a library, no CMake package) and OpenMP for the HIP compiler's clang: named in
    plan, missing ones refused before anything runs, found once they are there."""
    recipe = write_recipe(tmp_path, repo, extra_requires="  headers: [roctracer/roctx.h]\n  libraries: [roctx64]\n"
                                                          "  openmp: hip")
    llvm = rocm61 / "lib" / "llvm"
    code, out, _ = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert "headers: roctracer/roctx.h; libraries: libroctx64.so" in out
    assert f"OpenMP for the HIP compiler {llvm}/bin/clang++: {llvm}/lib/clang/*/include/omp.h" in out
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 3
    assert f"header 'roctracer/roctx.h' not found in {rocm61}/include" in err
    assert "library libroctx64.so not found in" in err and f"OpenMP for the HIP compiler {llvm}/bin/clang++" in err
    assert "openmp-extras" in err  # ROCm's own LLVM: no Debian package to name
    assert not (tmp_path / "w" / "src").exists()
    (rocm61 / "include" / "roctracer").mkdir()
    (rocm61 / "include" / "roctracer" / "roctx.h").write_text("#pragma once\n")
    (rocm61 / "lib" / "libroctx64.so.4").write_text("")
    (llvm / "lib" / "clang" / "19" / "include").mkdir(parents=True)
    (llvm / "lib" / "clang" / "19" / "include" / "omp.h").write_text("")
    code, _, err = build(cli, recipe, tmp_path, rocm61)
    assert code == 0, err


def test_openmp_for_debians_llvm_names_its_package(tmp_path):
    from rocbuild.detect.rocm import find_rocm

    rocm = find_rocm(str(make_rocm_tree(tmp_path, "6.4.0")), {})
    assert rocm is not None
    llvm = tmp_path / "usr" / "lib" / "llvm-22"
    (llvm / "bin").mkdir(parents=True)
    from dataclasses import replace

    omp = replace(rocm, hip_compiler=llvm / "bin" / "clang++").openmp()
    assert omp is not None and omp.package == "libomp-22-dev" and not omp.found()
    (llvm / "lib" / "clang" / "22" / "include").mkdir(parents=True)
    (llvm / "lib" / "clang" / "22" / "include" / "omp.h").write_text("")
    assert omp.found()


def test_prepare_prints_tree_last_and_clean_starts_over(cli, tmp_path, repo, rocm61):
    recipe = write_recipe(tmp_path, repo)
    code, out, err = cli("prepare", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 0, err
    tree = Path(out.strip().splitlines()[-1])
    assert tree == tmp_path / "w" / "src" and "patched" in (tree / "tiny.c").read_text()
    (tree / "stray").write_text("x")
    code, out, err = cli("prepare", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w", "--clean")
    assert code == 0 and "--clean: emptying" in err
    assert not (tree / "stray").exists()


def test_no_gpu_and_no_arch_exits_3(cli, tmp_path, repo, rocm61, monkeypatch):
    if Path("/sys/class/kfd").exists():
        pytest.skip("this machine has a GPU driver")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no rocminfo, no enumerators
    # A recipe whose wheels must carry device code needs targets; one that says they carry none does not.
    recipe = write_recipe(tmp_path, repo, device_code="  - code-objects: {files: 'tiny/*.so'}\n")
    code, _, err = cli("plan", recipe, "--rocm", rocm61)
    assert code == 3
    assert "no AMD GPU found and no --arch given" in err and "--arch gfx1100" in err
    code, out, err = cli("plan", write_recipe(tmp_path, repo), "--rocm", rocm61)
    assert code == 0 and "archs:  none: its wheels hold no device code of their own" in out, err


def test_missing_source_path_is_a_clear_error(cli, tmp_path, rocm61):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("schema: 1\nname: r\nversion: '1'\nsource: {path: no-such-dir}\nsteps:\n  - run: [python, -V]\n")
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 2
    assert f"source folder {tmp_path / 'no-such-dir'} does not exist" in err and "Traceback" not in err


def test_a_tag_moved_upstream_is_refused_though_the_mirror_has_it(cli, tmp_path, repo, rocm61):
    """The mirror's v1.0 is not fetched again; one ls-remote shows upstream moved it."""
    recipe = write_recipe(tmp_path, repo)
    code, _, err = cli("prepare", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 0, err
    upstream = repo[0]
    (upstream / "tiny.c").write_text((upstream / "tiny.c").read_text() + "\n/* something else */\n")
    git(upstream, "commit", "-qam", "other code")
    git(upstream, "tag", "-f", "v1.0")
    moved = git(upstream, "rev-parse", "HEAD")
    code, _, err = cli("prepare", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w2")
    assert code == 1, err
    assert f"tag v1.0 of {upstream} moved" in err and repo[1] in err and moved in err
    assert not (tmp_path / "w2" / "src").exists()


def test_an_extra_source_is_fetched_beside_the_tree_and_read_by_a_step(cli, tmp_path, rocm61):
    """A second git repository named under `extra-sources:` is fetched by rocbuild itself at prepare (through
    its mirror, checked out at the pinned commit), before any step; the confined step only reads it. A new
    commit pinned in the recipe starts the work folder afresh, naming the changed source."""
    first = make_git_repo(tmp_path / "kernels", {"k/hello.txt": "first\n"}, tag=None)
    (tmp_path / "kernels" / "k" / "hello.txt").write_text("second\n")
    git(tmp_path / "kernels", "commit", "-qam", "second")
    second = git(tmp_path / "kernels", "rev-parse", "HEAD")
    (tmp_path / "main").mkdir()
    recipe = tmp_path / "r.yaml"
    text = ("schema: 1\nname: r\nversion: '1'\noutput: tree\nsource: {path: main}\n"
            "extra-sources:\n  kernels: {git: %s, commit: %s}\n"
            "steps:\n  - run: [python, -c, 'import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])',"
            " '${{ sources.kernels }}/k/hello.txt', '${{ src }}/copied.txt']\n")
    recipe.write_text(text % (tmp_path / "kernels", first))
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 0, err
    assert (tmp_path / "w" / "src" / "copied.txt").read_text() == "first\n"
    assert f"source kernels: {first[:12]} (downloaded)" in err
    recipe.write_text(text % (tmp_path / "kernels", second))
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 0, err
    assert "extra_sources" in err  # why the tree starts afresh
    assert (tmp_path / "w" / "src" / "copied.txt").read_text() == "second\n"
    assert f"source kernels: {second[:12]} (from the mirror cache)" in err
