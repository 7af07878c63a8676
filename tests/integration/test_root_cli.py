"""`rocbuild root ...` and `--root` on bad input: exit codes and messages, nothing made. The archive
is a Debian mirror laid out in a folder and read through file:// URLs."""

from __future__ import annotations

import json

import pytest

from tests.unit.test_debian_archive import make_mirror
from tests.unit.test_root_parts import debian_tree


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "data" / "rocbuild" / "roots"


def test_suites_read_from_the_mirror(cli, tmp_path, data_home):
    mirror = make_mirror(tmp_path / "mirror")
    code, out, err = cli("root", "suites", "--mirror", mirror, "--json")
    assert code == 0, err
    assert [(s["suite"], s["rocm"]) for s in json.loads(out)][:2] == [("experimental", "7.2.4"), ("sid", "6.4.3")]


def test_create_refuses_what_no_suite_carries_and_makes_nothing(cli, tmp_path, data_home):
    mirror = make_mirror(tmp_path / "mirror")
    code, _, err = cli("root", "create", "r63", "--rocm", "6.3", "--mirror", mirror)
    assert code == 2
    assert "--rocm 6.3: no Debian suite" in err and "experimental 7.2.4, sid 6.4.3" in err
    code, _, err = cli("root", "create", "r72", "--mirror", mirror)
    assert code == 2 and "give --rocm X.Y" in err
    code, _, err = cli("root", "create", "../evil", "--rocm", "7.2", "--mirror", mirror)
    assert code == 2 and "not accepted" in err
    code, _, err = cli("root", "create", "r72", "--rocm", "7.2", "--mirror", "ftp//x")
    assert code == 2 and "not a mirror URL" in err
    assert not data_home.exists()


def test_unknown_roots_and_bad_arguments(cli, tmp_path, data_home):
    code, _, err = cli("build", "hello-hip", "--root", "nosuch", "--arch", "gfx1100")
    assert code == 2 and "--root nosuch: no such root" in err
    code, _, err = cli("root", "remove", "nosuch")
    assert code == 2 and "no such root" in err
    code, _, err = cli("build", "hello-hip", "--install-missing", "--arch", "gfx1100")
    assert code == 2 and "give --root NAME too" in err
    tree = debian_tree(tmp_path / "tree")
    code, _, err = cli("root", "install", str(tree), "bad;name")
    assert code == 2 and "not a Debian package name" in err
    code, _, err = cli("root", "run", str(tree))
    assert code == 2 and "usage: rocbuild root run NAME -- COMMAND" in err


def test_system_folders_are_not_shared_with_a_root(cli, tmp_path, data_home):
    tree = debian_tree(tmp_path / "tree")
    code, _, err = cli("build", "hello-hip", "--root", str(tree), "--arch", "gfx1100", "--out", "/usr/share/wheels")
    assert code == 2
    assert "--out /usr/share/wheels: cannot be shared with a build root (/usr is the root's own)" in err
    code, _, err = cli("detect", "--root", str(tree), "--rocminfo", "/etc/hostname")
    assert code == 2 and "--rocminfo /etc: cannot be shared" in err


def test_a_tool_older_than_the_recipe_needs_is_named(cli, tmp_path, rocm61):
    import shutil
    import subprocess

    from tests.conftest import REPO

    shutil.copytree(REPO / "examples" / "hello-hip", tmp_path / "hello-hip")
    version = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.split()[2]
    recipe = tmp_path / "newcmake.yaml"
    recipe.write_text("schema: 1\nname: newcmake\nversion: '1'\noutput: tree\nsource:\n  path: hello-hip\n"
                      "requires:\n  tools:\n    - name: cmake\n      version: '>=99.1'\n")
    code, out, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 0 and "tools: cmake >=99.1" in out and '["cmake", "--version"]' in out
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 3
    assert f"tool 'cmake' is {version}; the recipe needs >=99.1" in err
    recipe.write_text(recipe.read_text().replace(">=99.1", f"=={version}"))
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 0, err
    recipe.write_text(recipe.read_text().replace(f"=={version}", "newest"))
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 2 and "requires.tools[0].version" in err and "not a version specifier" in err


def test_with_packages_must_be_debian_names(cli, tmp_path, data_home):
    mirror = make_mirror(tmp_path / "mirror")
    code, _, err = cli("root", "create", "r72", "--rocm", "7.2", "--mirror", mirror, "--with", "x; touch /tmp/pwned")
    assert code == 2 and "not a Debian package name" in err
    code, _, err = cli("root", "create", "r72", "--rocm", "7.2", "--mirror", mirror, "--with", "libnosuch-dev")
    assert code == 2 and "Debian experimental has no such package" in err
    assert not data_home.exists()
