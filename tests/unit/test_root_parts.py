"""Build roots without making one: names, stores, shares, requirement-to-package mapping, the
build environment's requirement lists."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rocbuild.cli.root import shares_of, without_root_flag
from rocbuild.engine.buildenv import build_system_requires, is_current, project_requires, record, to_install
from rocbuild.errors import StepFailed, UsageError
from rocbuild.plan.buildenv import distribution_of, make_build_env
from rocbuild.roots.enter import Share, bwrap_prefix, check_share
from rocbuild.roots.packages import Wanted, listed_packages, map_requirements
from rocbuild.roots.store import Root, all_roots, check_name, find_root, installed_packages, rocm_packages

STATUS = ("Package: hipcc\nStatus: install ok installed\nVersion: 7.2.4+dfsg-1~exp1\n\n"
          "Package: libamdhip64-dev\nStatus: install ok installed\nVersion: 7.2.4-1~exp2\n\n"
          "Package: librccl-dev\nStatus: deinstall ok config-files\nVersion: 7.2.4-1~exp3\n")


def debian_tree(path: Path, status: str = STATUS) -> Path:
    """What a Debian userland has where rocbuild looks: dpkg and its status file."""
    (path / "usr" / "bin").mkdir(parents=True)
    (path / "usr" / "bin" / "dpkg").write_text("")
    (path / "var" / "lib" / "dpkg").mkdir(parents=True)
    (path / "var" / "lib" / "dpkg" / "status").write_text(status)
    return path


def test_installed_packages_are_dpkgs_installed_ones(tmp_path):
    tree = debian_tree(tmp_path / "t")
    assert installed_packages(tree) == {"hipcc": "7.2.4+dfsg-1~exp1", "libamdhip64-dev": "7.2.4-1~exp2"}


def stanza(package: str, version: str, maintainer: str = "Someone <x@example.invalid>") -> str:
    return f"Package: {package}\nStatus: install ok installed\nMaintainer: {maintainer}\nVersion: {version}\n\n"


def test_the_rocm_family_of_a_root_holds_every_rocm_library(tmp_path):
    """rocprim (header-only, no CMake package of the recipe's, not librocm*/libhip*) counts too: a downgrade of
    it must change the root's identity; packages that only look alike do not count."""
    team = "Debian ROCm Team <debian-ai@lists.debian.org>"
    status = (stanza("librocprim-dev", "7.2.4-1~exp1") + stanza("libhipcub-dev", "7.2.4-1~exp1")
              + stanza("rocminfo", "7.2.4-1", team) + stanza("libamd-comgr3", "7.2.4+dfsg-1~exp1", team)
              + stanza("librocksdb-dev", "9.10.0-1") + stanza("libc6", "2.42-2"))
    tree = debian_tree(tmp_path / "t", status)
    assert rocm_packages(tree) == {"librocprim-dev": "7.2.4-1~exp1", "libhipcub-dev": "7.2.4-1~exp1",
                                   "rocminfo": "7.2.4-1", "libamd-comgr3": "7.2.4+dfsg-1~exp1"}
    before = Root("r", tree).identity()
    (tree / "var" / "lib" / "dpkg" / "status").write_text(status.replace("librocprim-dev\nStatus: install ok installed"
                                                                         "\nMaintainer: Someone <x@example.invalid>"
                                                                         "\nVersion: 7.2.4-1~exp1",
                                                                         "librocprim-dev\nStatus: install ok installed"
                                                                         "\nMaintainer: Someone <x@example.invalid>"
                                                                         "\nVersion: 6.4.3-2"))
    after = Root("r", tree).identity()
    assert after["components"]["librocprim-dev"] == "6.4.3-2" and after["id"] != before["id"]


def test_root_by_name_or_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with pytest.raises(UsageError, match="no such root") as exc:
        find_root("r72")
    assert "rocbuild root create r72 --rocm 7.2" in exc.value.render()
    with pytest.raises(UsageError, match="not accepted"):
        check_name("../x")
    with pytest.raises(UsageError, match="not a build root"):
        find_root(str(tmp_path))
    bare = find_root(str(debian_tree(tmp_path / "bare")))
    assert bare.tree == tmp_path / "bare" and bare.info == {}
    folder = tmp_path / "data" / "rocbuild" / "roots" / "r72"
    debian_tree(folder / "tree")
    (folder / "root.json").write_text('{"name": "r72", "suite": "experimental", "apt_target": "experimental"}')
    made = find_root("r72")
    assert made.apt_target == "experimental" and made.tree == folder / "tree"
    assert [r.name for r in all_roots()] == ["r72"]


def test_root_identity_follows_its_package_versions(tmp_path):
    tree = debian_tree(tmp_path / "t")
    before = Root("r", tree).identity()["id"]
    (tree / "var/lib/dpkg/status").write_text(STATUS.replace("7.2.4+dfsg-1~exp1", "7.2.5+dfsg-1"))
    assert Root("r", tree).identity()["id"] != before


def test_root_flag_removed_from_the_command_run_inside():
    assert without_root_flag(["build", "x", "--root", "r72", "--arch", "gfx1100"]) == ["build", "x", "--arch", "gfx1100"]
    assert without_root_flag(["plan", "--root=r72", "x"]) == ["plan", "x"]


def test_system_folders_cannot_be_shared():
    with pytest.raises(UsageError, match="--out /usr/local/wh: cannot be shared"):
        check_share(Share(Path("/usr/local/wh"), True, "--out"))
    check_share(Share(Path("/srv/wheels"), True, "--out"))
    check_share(Share(Path("/usrx"), True, "--out"))


def test_shares_are_the_named_folders_at_their_own_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    recipe = tmp_path / "recipes" / "x.yaml"
    recipe.parent.mkdir()
    recipe.write_text("")
    args = argparse.Namespace(out=str(tmp_path / "wh"), work=None, source_dir=str(tmp_path / "src"),
                              recipes=[], recipe=str(recipe))
    shares = {(str(s.path), s.writable) for s in shares_of(args)}
    assert {(str(tmp_path / "wh"), True), (str(tmp_path / "src"), False), (str(recipe.parent), False),
            (str(tmp_path / "cache" / "rocbuild"), True)} <= shares
    tree = debian_tree(tmp_path / "tree")
    (tree / "home").mkdir()
    (tree / "bin").symlink_to("usr/bin")
    prefix = bwrap_prefix(Root("r", tree), [Share(Path("/srv/wh"), True, "--out")], Path("/srv"), {"A": "b c"})
    # the tree's folders and links on bubblewrap's own /, never its /home (mount points go there)
    assert prefix[:10] == ["bwrap", "--symlink", "usr/bin", "/bin", "--bind", str(tree / "usr"), "/usr",
                           "--bind", str(tree / "var"), "/var"]
    assert ["--bind", "/srv/wh", "/srv/wh"] == prefix[prefix.index("/srv/wh") - 1:prefix.index("/srv/wh") + 2]
    assert ["--setenv", "A", "b c"] == prefix[prefix.index("A") - 1:prefix.index("A") + 2]


def test_requirements_map_to_the_suites_packages(tmp_path):
    available = {"libhipblas-dev", "libamdhip64-dev", "librccl-dev", "ninja-build", "hipcc", "cmake"}
    m = map_requirements(Wanted.of(["cmake", "ninja", "hipconfig", "frobnicate"], ["hipblas", "hip", "rccl", "nosuch"]),
                         available)
    assert m.packages == {"tool 'cmake'": "cmake", "tool 'ninja'": "ninja-build", "tool 'hipconfig'": "hipcc",
                          "CMake package 'hipblas'": "libhipblas-dev", "CMake package 'hip'": "libamdhip64-dev",
                          "CMake package 'rccl'": "librccl-dev"}
    assert m.unknown == ("tool 'frobnicate'", "CMake package 'nosuch'")
    # Components without a CMake package, and OpenMP for the HIP compiler's clang
    m = map_requirements(Wanted.of(headers=["roctracer/roctx.h", "rocprim/rocprim.hpp"],
                                   libraries=["roctx64", "hipsolver_fortran"], openmp="libomp-22-dev"),
                         {"libroctx-dev", "librocprim-dev", "libomp-22-dev", "libhipsolver-fortran1"})
    assert m.packages == {"header 'roctracer/roctx.h'": "libroctx-dev", "header 'rocprim/rocprim.hpp'": "librocprim-dev",
                          "library 'roctx64'": "libroctx-dev", "library 'hipsolver_fortran'": "libhipsolver-fortran1",
                          "OpenMP for the HIP compiler": "libomp-22-dev"}
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "deb.debian.org_debian_dists_sid_main_binary-amd64_Packages").write_text(
        "Package: libhipblas-dev\nVersion: 6.4.4-2\n\nPackage: cmake\nVersion: 4\n")
    assert listed_packages(lists) == {"libhipblas-dev", "cmake"}


def test_an_amd_rocm_is_given_amds_packages_before_debians():
    # Ubuntu images carry both: universe's Debian names, and AMD's repository under /opt/rocm. A second
    # HIP under /usr beside AMD's is what must not happen.
    available = {"libamdhip64-dev", "hip-dev", "librocblas-dev", "rocblas-dev", "libroctx-dev", "roctracer-dev",
                 "hsa-rocr-dev", "libhipcub-dev"}
    wanted = Wanted.of(cmake_packages=["hip", "rocblas", "hsa-runtime64", "hipcub"], headers=["roctx.h"])
    amd = map_requirements(Wanted.of(cmake_packages=["hip", "rocblas", "hsa-runtime64", "hipcub"], headers=["roctx.h"],
                                     amd=True), available)
    assert amd.packages == {"CMake package 'hip'": "hip-dev", "CMake package 'rocblas'": "rocblas-dev",
                            "CMake package 'hsa-runtime64'": "hsa-rocr-dev", "header 'roctx.h'": "roctracer-dev"}
    assert amd.unknown == ("CMake package 'hipcub'",)  # only Debian's libhipcub-dev is offered
    debian = map_requirements(wanted, available)
    assert debian.packages["CMake package 'hip'"] == "libamdhip64-dev"
    assert debian.packages["CMake package 'rocblas'"] == "librocblas-dev"
    assert "CMake package 'hsa-runtime64'" in debian.unknown  # Debian's name is libhsa-runtime-dev


def test_build_env_requirements(tmp_path):
    assert distribution_of("yaml") == "PyYAML" and distribution_of("scikit_build_core") == "scikit_build_core"
    env = make_build_env(tmp_path / "env", "/usr/bin/python3", "3.13", ["yaml", "torch", "setuptools", "yaml"])
    assert env.modules == ("yaml", "setuptools")
    project = tmp_path / "p"
    project.mkdir()
    assert project_requires([project]) == ["setuptools>=40.8.0", "wheel"]  # no pyproject.toml
    (project / "pyproject.toml").write_text('[build-system]\nrequires = ["scikit-build-core>=0.10", "torch>=2.1", '
                                            '"Torch", "pybind11"]\n')
    assert project_requires([project]) == ["scikit-build-core>=0.10", "pybind11"]
    assert to_install(["yaml"], ["pybind11"]) == ["PyYAML", "pybind11"]
    # pyronn-torch 0.2.3: setup.cfg's setup_requires brings pyscaffold, which gives the version (0.0.0 without)
    (project / "setup.cfg").write_text("[options]\nsetup_requires = pyscaffold>=3.2a0,<3.3a0\n    numpy; python_version>'3'\n"
                                       "    not a requirement!\n[metadata]\nname = p\n")
    (project / "pyproject.toml").write_text('[build-system]\nrequires = ["scikit-build-core"]\n'
                                            'build-backend = "scikit_build_core.build"\n')
    assert project_requires([project]) == ["scikit-build-core"]  # not setuptools' project
    (project / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n')
    assert project_requires([project]) == ["setuptools", "pyscaffold>=3.2a0,<3.3a0", "numpy; python_version>'3'"]
    (project / "setup.cfg").unlink()
    (project / "pyproject.toml").write_text('[build-system]\nrequires = ["a b c"]\n')
    with pytest.raises(StepFailed, match="is not a requirement"):
        build_system_requires(project)
    (project / "pyproject.toml").write_text("[build-system\n")
    with pytest.raises(StepFailed, match="cannot read it"):
        build_system_requires(project)
    assert not is_current(env, ["a"])
    (tmp_path / "env" / "bin").mkdir(parents=True)
    (tmp_path / "env" / "bin" / "python").write_text("")
    record(env, ["a"])
    assert is_current(env, ["a"]) and not is_current(env, ["a", "b"])


def test_a_folder_not_made_yet_is_reached_through_its_parent(tmp_path):
    from rocbuild.roots.enter import mount_point

    wanted = Share(tmp_path / "a" / "wheelhouse", True, "--out")
    assert mount_point(wanted) == Share(tmp_path, True, "--out")
    assert not (tmp_path / "a").exists()  # entering the root creates nothing
    existing = Share(tmp_path, False, "--source-dir")
    assert mount_point(existing) == existing


def test_an_import_check_is_skipped_only_for_a_missing_dependency():
    from rocbuild.plan.model import CommandCheck, ImportCheck
    from rocbuild.verify.plan_checks import missing_dependency

    check = ImportCheck(name="import", where="recipe:1", argv=("python", "-c", "..."), env={}, module="bitsandbytes")
    torch_missing = "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'torch'\n"
    assert missing_dependency(check, torch_missing) == "torch"
    assert missing_dependency(check, "ModuleNotFoundError: No module named 'torch.cuda'") == "torch"
    # the package itself, or a part of it, missing: a broken wheel, not a skip
    assert missing_dependency(check, "ModuleNotFoundError: No module named 'bitsandbytes'") is None
    assert missing_dependency(check, "ModuleNotFoundError: No module named 'bitsandbytes._ops'") is None
    assert missing_dependency(check, "OSError: libamdhip64.so.7: cannot open shared object file") is None
    command = CommandCheck(name="run", where="recipe:2", argv=("python", "-c", "import torch"), env={})
    assert missing_dependency(command, torch_missing) is None


def test_mmdebstrap_hooks_carry_no_unquoted_outside_value(tmp_path):
    import shlex

    from rocbuild.roots.archive import Suite
    from rocbuild.roots.create import PIP_CONF, mmdebstrap_argv

    argv = mmdebstrap_argv(Suite("experimental", "sid", "7.2.4", {}), "http://deb.example/debian",
                           tmp_path / "a tree", "root", ("libhipblas-dev",))
    hooks = [a.split("=", 1)[1] for a in argv if a.startswith("--customize-hook=")]
    assert any(h.endswith("apt-get install -y -t experimental hipcc libamdhip64-dev rocminfo libhipblas-dev")
               for h in hooks)
    assert f"printf '%s' {shlex.quote(PIP_CONF)} > \"$1/etc/pip.conf\"" in hooks
    # the tree and the mirror are argv items of their own, never inside a hook's shell text
    assert argv[-4:] == ["sid", str(tmp_path / "a tree"), "deb http://deb.example/debian sid main",
                         "deb http://deb.example/debian experimental main"]
    assert not any("a tree" in h or "deb.example" in h for h in hooks)
