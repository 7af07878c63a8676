"""A stranger's recipe runs nothing beyond the argv `plan` shows and reads nothing outside its places.

Each test feeds a hostile recipe, value or recipe repository (shell values meant to become code, environment
that runs hidden code, paths out of the tree, extends of files that are not recipes, a registered source
shadowing a built-in, odd git transports, YAML bombs) to the real CLI, and real bash where a step runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import make_git_repo

HEAD = """\
schema: 1
name: {name}
version: "1.0"
source:
  path: {src}
"""


@pytest.fixture
def src(tmp_path) -> Path:
    tree = tmp_path / "project"
    tree.mkdir()
    (tree / "a.txt").write_text("a")
    return tree


def recipe(tmp_path: Path, body: str, src: Path | None = None, name: str = "hostile", folder: str = "recipes") -> Path:
    path = tmp_path / folder / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD.format(name=name, src=src or tmp_path / "project") + body)
    return path


def build(cli, tmp_path, recipe_path, rocm, *extra):
    return cli("build", recipe_path, "--arch", "gfx90a", "--rocm", rocm, "--work", tmp_path / "w",
               "--out", tmp_path / "wheelhouse", *extra)


# -- shell values never become code ----------------------------------------------

PAYLOADS = ["$(touch PWNED)", "`touch PWNED`", "'; touch PWNED; '", '"; touch PWNED; "', "x\ntouch PWNED",
            "$(touch${IFS}PWNED)", "*", "-n"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_shell_step_values_reach_commands_as_data(cli, tmp_path, rocm61, src, payload):
    r = recipe(tmp_path, """\
options:
  msg: {default: hi}
steps:
  - shell: |
      printf '%s\\n' ${{ options.msg }} > one.txt
      cat <<EOF > two.txt
      literal $HOME
      EOF
  - shell: |
      for v in ${{ options.msg }} x; do printf '%s|' "$v"; done > three.txt
      printf '%s\\n' "$(printf '%s' ${{ options.msg }})" > four.txt
""", src)
    code, _, err = build(cli, tmp_path, r, rocm61, "--set", f"msg={payload}")
    assert code == 0, err
    tree = tmp_path / "w" / "src"
    assert not list(tmp_path.rglob("PWNED")) and not (Path.cwd() / "PWNED").exists()
    assert (tree / "one.txt").read_text() == payload + "\n"
    assert (tree / "three.txt").read_text() == payload + "|x|" and (tree / "four.txt").read_text() == payload + "\n"
    assert (tree / "two.txt").read_text().startswith("literal /")


@pytest.mark.parametrize("step", [
    "echo \"${{ options.msg }}\"",
    "bash -c 'echo ${{ options.msg }}'",
    "bash -c \"echo ${{ options.msg }}\"",
    "eval ${{ options.msg }}",
    "bash <<EOF\n      echo ${{ options.msg }}\n      EOF",
])
def test_shell_values_where_they_could_become_code_are_refused_at_lint(cli, tmp_path, rocm61, src, step):
    r = recipe(tmp_path, f"options:\n  msg: {{default: hi}}\nsteps:\n  - shell: |\n      {step}\n", src)
    code, _, err = cli("recipes", "lint", r)
    assert code == 2 and "could become code" in err and f"{r}:" in err, err
    code, _, err = build(cli, tmp_path, r, rocm61, "--set", "msg=$(touch PWNED)")
    assert code == 2 and not list(tmp_path.rglob("PWNED"))


# -- environment that runs hidden code is refused ----------------------------------

@pytest.mark.parametrize("name", ["BASH_ENV", "ENV", "BASH_FUNC_echo%%", "SHELLOPTS", "PS4", "LD_PRELOAD", "LD_AUDIT",
                                  "PYTHONSTARTUP", "GIT_CONFIG_COUNT", "GIT_SSH_COMMAND", "GIT_DIR", "HOME",
                                  "XDG_CONFIG_HOME", "PERL5OPT", "NODE_OPTIONS"])
def test_environment_that_runs_hidden_code_is_refused(cli, tmp_path, src, name):
    r = recipe(tmp_path, f"env:\n  {name}: /tmp/evil\nsteps:\n  - run: [echo]\n", src)
    code, _, err = cli("recipes", "lint", r)
    assert code == 2 and f"env.{name}" in err, err


def test_bash_env_of_the_caller_never_runs_before_a_step(cli, tmp_path, rocm61, src, monkeypatch):
    hidden = tmp_path / "hidden.sh"
    hidden.write_text(f"touch {tmp_path / 'PWNED'}\n")
    monkeypatch.setenv("BASH_ENV", str(hidden))
    monkeypatch.setenv("ENV", str(hidden))
    r = recipe(tmp_path, "steps:\n  - run: [bash, -c, 'echo run']\n  - shell: echo shell\n", src)
    code, _, err = build(cli, tmp_path, r, rocm61)
    assert code == 0, err
    assert not (tmp_path / "PWNED").exists()


def test_bash_env_never_runs_when_a_build_asks_this_machines_python3(cli, tmp_path, rocm61, monkeypatch):
    """Every wheel build says whether this machine's python3 installs it, asking that python3; a pyenv shim in
    its place is a bash script, which would source BASH_ENV."""
    import sys

    hidden = tmp_path / "hidden.sh"
    hidden.write_text(f"touch {tmp_path / 'PWNED'}\n")
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").write_text(f'#!/bin/bash\nexec {sys.executable} "$@"\n')
    (shims / "python3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BASH_ENV", str(hidden))
    tree = tmp_path / "pure"
    tree.mkdir()
    (tree / "setup.py").write_text("from setuptools import setup\nsetup(name='pure', version='1.0', py_modules=['pure'])\n")
    (tree / "pure.py").write_text("")
    r = recipe(tmp_path, "requires:\n  python: [setuptools, wheel]\nsteps:\n  - wheel: {}\nverify:\n"
                         "  - code-objects: false\n", tree, name="pure")
    code, _, err = build(cli, tmp_path, r, rocm61)
    assert code == 0, err
    assert "pure-1.0" in err and "installs on:" in err
    assert not (tmp_path / "PWNED").exists()


# -- copy/link read only from the tree, ROCm and the recipe's folders ------------

def test_a_relative_copy_source_is_in_the_tree_not_the_callers_folder(cli, tmp_path, rocm61, src, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    monkeypatch.chdir(home)
    r = recipe(tmp_path, "patches:\n  - copy: {from: .ssh/id_ed25519, to: key.txt}\nsteps:\n  - run: [echo]\n", src)
    code, out, err = cli("plan", r, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w", "--json")
    assert code == 0, err
    assert json.loads(out)["patches"][0]["from"] == str(tmp_path / "w" / "src" / ".ssh" / "id_ed25519")
    code, _, err = build(cli, tmp_path, r, rocm61)
    assert code == 1 and "does not exist" in err
    assert not (tmp_path / "w" / "src" / "key.txt").exists()


@pytest.mark.parametrize("source", ["/etc/passwd", "../../../../etc/passwd", "${{ src }}/../../etc/hostname"])
def test_copy_from_outside_the_allowed_folders_is_refused(cli, tmp_path, rocm61, src, source):
    r = recipe(tmp_path, f"patches:\n  - copy: {{from: '{source}', to: x.txt}}\nsteps:\n  - run: [echo]\n", src)
    code, _, err = cli("plan", r, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w")
    assert code == 2 and "patches[0].copy.from" in err, err


def test_a_link_in_rocm_that_leads_elsewhere_is_refused_when_applied(cli, tmp_path, rocm61, src):
    secret = tmp_path / "secret.h"
    secret.write_text("secret")
    (rocm61 / "include" / "evil.h").symlink_to(secret)
    r = recipe(tmp_path, "patches:\n  - copy: {from: '${{ rocm.include_dir }}/evil.h', to: x.h}\n"
                         "steps:\n  - run: [echo]\n", src)
    code, _, err = build(cli, tmp_path, r, rocm61)
    assert code == 1 and "outside the source tree, the ROCm prefix and the recipe's folders" in err, err
    assert not (tmp_path / "w" / "src" / "x.h").exists()


# -- paths in patches and has_header stay inside their folder ---------------------

@pytest.mark.parametrize("patch", [
    "replace: {file: ../../etc/passwd, find: root, with: x}",
    "replace: {file: /etc/passwd, find: root, with: x}",
    "copy: {from: a.txt, to: ../../x.txt}",
    "link: {from: a.txt, into: /tmp}",
])
def test_patch_paths_out_of_the_tree_are_refused_by_lint_and_plan(cli, tmp_path, rocm61, src, patch):
    r = recipe(tmp_path, f"patches:\n  - {patch}\nsteps:\n  - run: [echo]\n", src)
    code, _, err = cli("recipes", "lint", r)
    assert code == 2 and "patches[0]" in err, err
    code, _, err = cli("plan", r, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 2 and "patches[0]" in err, err


def test_a_templated_patch_path_out_of_the_tree_is_refused_by_plan(cli, tmp_path, rocm61, src):
    r = recipe(tmp_path, "options:\n  f: {default: x}\npatches:\n  - replace: {file: '${{ options.f }}', find: a, with: b}\n"
                         "steps:\n  - run: [echo]\n", src)
    code, _, err = cli("plan", r, "--arch", "gfx90a", "--rocm", rocm61, "--set", "f=../../../etc/passwd")
    assert code == 2 and "patches[0].replace.file" in err and "leaves the source tree" in err, err


def test_a_diff_that_is_a_link_out_of_the_patches_folder_is_refused(cli, tmp_path, src):
    outside = tmp_path / "elsewhere.patch"
    outside.write_text("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n")
    (tmp_path / "recipes" / "patches").mkdir(parents=True)
    (tmp_path / "recipes" / "patches" / "0001.patch").symlink_to(outside)
    r = recipe(tmp_path, "patches:\n  - diff: 0001.patch\nsteps:\n  - run: [echo]\n", src)
    code, _, err = cli("recipes", "lint", r)
    assert code == 2 and "patch file not found" in err, err


@pytest.mark.parametrize("header", ["../../../etc/passwd", "/etc/passwd"])
def test_has_header_stays_in_the_include_folder(cli, tmp_path, rocm61, src, header):
    r = recipe(tmp_path, f"steps:\n  - run: [echo]\n    when: \"${{{{ rocm.has_header('{header}') }}}}\"\n", src)
    code, _, err = cli("plan", r, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 2 and "has_header" in err and "inside the include folder" in err, err


# -- extends and recipe links read only recipes ---------------------------------------

@pytest.mark.parametrize("base", ["/proc/self/environ", "/etc/passwd", "../../../../../../proc/self/environ",
                                  "../outside.yaml"])
def test_extends_reads_only_recipes_in_recipe_folders(cli, tmp_path, src, base, monkeypatch):
    monkeypatch.setenv("CI_SECRET_TOKEN", "s3cr3t-value")
    (tmp_path / "outside.yaml").write_text("schema: 1\nname: outside\nsecret: s3cr3t-value\n")
    r = recipe(tmp_path, f"extends: {base}\nsteps:\n  - run: [echo]\n", src)
    code, out, err = cli("recipes", "lint", r)
    assert code == 2 and "extends" in err, err
    assert "s3cr3t-value" not in out + err and "root:" not in err


def test_a_recipe_link_to_a_file_that_is_not_a_recipe_is_not_read(cli, tmp_path, src, monkeypatch):
    monkeypatch.setenv("CI_SECRET_TOKEN", "s3cr3t-value")
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "environ.yaml").symlink_to("/proc/self/environ")
    for args in (("recipes", "list", "--recipes", folder), ("build", "environ", "--recipes", folder),
                 ("plan", folder / "environ.yaml")):
        code, out, err = cli(*args)
        assert "s3cr3t-value" not in out + err and "Traceback" not in err, args


# -- a registered source never shadows built-ins -------------------------------------

def test_a_registered_source_does_not_shadow_a_builtin_recipe(cli, tmp_path):
    stranger = tmp_path / "stranger"
    evil = (Path(__file__).parents[2] / "recipes" / "hello-hip.yaml").read_text().replace(
        "steps:", "steps:\n  - run: [touch, PWNED]", 1)
    make_git_repo(stranger, {"recipes/hello-hip.yaml": evil})
    code, out, err = cli("recipes", "add", stranger, "--ref", "main", "--name", "stranger")
    assert code == 0, err
    assert "hello-hip is also a built-in recipe" in out and "rocbuild stranger:hello-hip" in out
    code, out, err = cli("plan", "hello-hip", "--arch", "gfx90a", "--json")
    assert code == 0, err
    assert "PWNED" not in out and json.loads(out)["recipe"]["path"].endswith("recipes/hello-hip.yaml")
    assert "stranger" not in json.loads(out)["recipe"]["path"]
    code, out, err = cli("plan", "stranger:hello-hip", "--arch", "gfx90a", "--json")
    assert code == 0 and "PWNED" in out, err


# -- sources: only real git transports, only whole commit ids -----------------------

@pytest.mark.parametrize("url", ["ext::sh -c touch% /tmp/PWNED", "fd::17", "-uhttps://x", "ssh://-oProxyCommand=x/y",
                                 "relative/path"])
def test_only_real_git_transports_are_accepted(cli, tmp_path, url):
    path = tmp_path / "recipes" / "r.yaml"
    path.parent.mkdir()
    path.write_text(f"schema: 1\nname: r\nversion: '1'\nsource:\n  git: '{url}'\nsteps:\n  - run: [echo]\n")
    code, _, err = cli("recipes", "lint", path)
    assert code == 2 and "source.git" in err and "Traceback" not in err, err
    code, _, err = cli("recipes", "add", url, "--ref", "main")
    assert code == 2 and "Traceback" not in err, err


def test_an_abbreviated_commit_pin_is_refused(cli, tmp_path):
    path = tmp_path / "recipes" / "r.yaml"
    path.parent.mkdir()
    path.write_text("schema: 1\nname: r\nversion: '1'\nsource:\n  git: https://example.invalid/r.git\n"
                    "  commit: 1d217b5\nsteps:\n  - run: [echo]\n")
    code, _, err = cli("recipes", "lint", path)
    assert code == 2 and "source.commit: not a whole commit id" in err, err


# -- YAML bombs, huge files and FIFOs are refused without being read ------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9))


@pytest.mark.parametrize("text, message", [
    (BOMB, "more than"),
    ("a: &a [*a]\n", "refers to the value that contains it"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("a: " + "{b: " * 200 + "1" + "}" * 200 + "\n", "nested too deeply"),
])
def test_yaml_bombs_are_refused_quickly(cli, tmp_path, text, message):
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "bomb.yaml").write_text(text)
    code, _, err = cli("recipes", "lint", folder / "bomb.yaml")
    assert code == 2 and message in err and "Traceback" not in err, err
    code, out, err = cli("recipes", "list", "--recipes", folder)
    assert code == 0 and "bomb" in out and "INVALID" in out, err


def test_a_huge_recipe_file_is_refused_without_reading_it_whole(cli, tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as fh:
        fh.truncate(1 << 31)
    code, _, err = cli("recipes", "lint", path)
    assert code == 2 and "larger than any recipe" in err, err


def test_a_fifo_named_like_a_recipe_is_not_read(cli, tmp_path):
    os.mkfifo(tmp_path / "fifo.yaml")
    code, _, err = cli("recipes", "lint", tmp_path / "fifo.yaml")
    assert code == 2 and "not a regular file" in err, err


@pytest.mark.parametrize("argv", ['[bash, -c, "echo ${{ options.msg }}"]', "[sh, -c, 'ls ${{ options.msg }}']",
                                  "[python, -c, 'print(\"${{ options.msg }}\")']", '[perl, -e, "${{ options.msg }}"]'])
def test_a_value_spliced_into_an_argv_script_is_refused(cli, tmp_path, src, argv):
    r = recipe(tmp_path, f"options:\n  msg: {{default: hi}}\nsteps:\n  - run: {argv}\n", src)
    code, _, err = cli("recipes", "lint", r)
    assert code == 2 and "would become code" in err and "steps[0].run[2]" in err, err


def test_a_value_as_an_argument_of_its_own_reaches_the_script_as_data(cli, tmp_path, rocm61, src):
    r = recipe(tmp_path, "options:\n  msg: {default: hi}\nsteps:\n"
                         "  - run: [bash, -c, 'printf %s \"$1\" > out.txt', bash, '${{ options.msg }}']\n", src)
    code, _, err = build(cli, tmp_path, r, rocm61, "--set", "msg=$(touch PWNED)")
    assert code == 0, err
    assert (tmp_path / "w" / "src" / "out.txt").read_text() == "$(touch PWNED)" and not list(tmp_path.rglob("PWNED"))


def test_recipes_show_prints_only_recipe_files(cli, tmp_path):
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY")
    for target in (secret, "/proc/self/environ"):
        code, out, err = cli("recipes", "show", target)
        assert code == 2 and "not a recipe file" in err and out == "", err


@pytest.mark.parametrize("requires, key", [("tools: [../../bin/sh]", "requires.tools[0]"),
                                           ("cmake-packages: [../../../etc]", "requires.cmake-packages[0]"),
                                           ("python: ['os; import x']", "requires.python[0]")])
def test_requirement_names_are_names_not_paths(cli, tmp_path, src, requires, key):
    r = recipe(tmp_path, f"requires:\n  {requires}\nsteps:\n  - run: [echo]\n", src)
    code, _, err = cli("recipes", "lint", r)
    assert code == 2 and f"{key}: not a valid name here" in err, err
