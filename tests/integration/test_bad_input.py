"""Bad values and odd files end in an exit code with the place named, never a traceback or a hang.

A built wheel damaged by a later step, a --python that is no Python, an unknown gfx target, an --until
that names no step, verify given a device or a FIFO, arguments that are not UTF-8 or too long, and
recipe text with control characters or bytes that are not UTF-8.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

RECIPE = """\
schema: 1
name: broken
version: "1.0"
source:
  path: {src}
steps:
  - name: wheel
    run: [python, -c, "print('a step')"]
  - name: pack
    wheel: {{}}
verify:
  - code-objects: false
"""


@pytest.fixture
def recipe(tmp_path) -> Path:
    src = tmp_path / "project"
    src.mkdir()
    (src / "pyproject.toml").write_text("")
    path = tmp_path / "recipes" / "r.yaml"
    path.parent.mkdir()
    path.write_text(RECIPE.format(src=src))
    return path


def test_a_damaged_built_wheel_is_a_step_failure_naming_it(cli, tmp_path, rocm61):
    """A step after the wheel step (a post-processing tool, say) truncates the wheel."""
    src = tmp_path / "project"
    shutil.copytree(Path(__file__).parents[1] / "data" / "projects" / "recorder", src)
    (src / "recorder" / "built.txt").write_text("x")
    r = tmp_path / "recipes" / "b.yaml"
    r.parent.mkdir()
    r.write_text(f"schema: 1\nname: recorder\nversion: '1.0'\nsource: {{path: {src}}}\nsteps:\n"
                 "  - wheel: {}\n"
                 "  - name: damage\n"
                 "    run: [python, -c, \"import glob, sys; [open(w, 'r+b').truncate(100) for w in glob.glob(sys.argv[1])]\",\n"
                 "          \"${{ dist }}/wheel/*.whl\"]\n"
                 "verify:\n  - code-objects: false\n")
    code, _, err = cli("build", r, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w",
                       "--out", tmp_path / "wheelhouse")
    assert code == 1, err
    assert "damaged wheel" in err and "recorder-1.0-py3-none-any.whl" in err and "Traceback" not in err
    assert not (tmp_path / "wheelhouse").exists()


@pytest.mark.parametrize("program", ["/bin/echo", "/bin/true", "/bin/false"])
def test_a_python_that_is_no_python_is_exit_2(cli, recipe, rocm61, program):
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--python", program)
    assert code == 2 and f"--python {program}: not a working Python 3 interpreter" in err, err


def test_a_script_that_prints_nonsense_is_no_python(cli, tmp_path, recipe, rocm61):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho 'Python, sort of'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--python", fake)
    assert code == 2 and "answered 'Python, sort of'" in err, err


@pytest.mark.parametrize("arch, fragment", [("gfx9999", "not a GPU target LLVM knows"),
                                            ("gfx1101,gfx1109", "'gfx1109' is not a GPU target"),
                                            ("gfx90b", "did you mean")])
def test_unknown_gfx_targets_are_refused(cli, recipe, rocm61, arch, fragment):
    code, _, err = cli("plan", recipe, "--arch", arch, "--rocm", rocm61)
    assert code == 2 and fragment in err, err
    code, _, err = cli("verify", recipe, "--arch", arch)
    assert code == 2 and fragment in err, err


def test_plan_refuses_an_until_of_no_step_like_build(cli, recipe, rocm61):
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--until", "nosuch")
    assert code == 2 and "--until 'nosuch': no such step" in err and "steps: prepare, wheel, pack" in err


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null", "fifo"])
def test_verify_never_reads_devices_or_fifos(cli, tmp_path, target):
    if target == "fifo":
        target = str(tmp_path / "lib.so")
        os.mkfifo(target)
    code, _, err = cli("verify", target, "--arch", "gfx90a")
    assert code == 2 and "not a regular file" in err, err


def test_verify_skips_a_fifo_inside_a_folder(cli, tmp_path):
    folder = tmp_path / "tree"
    folder.mkdir()
    os.mkfifo(folder / "lib.so")
    code, out, err = cli("verify", folder, "--arch", "gfx90a")
    assert code == 1 and "Traceback" not in err  # no device code found: a verdict, not a hang


def test_an_argument_that_is_not_utf8_is_refused_before_anything_runs(tmp_path, rocm61):
    """Real argv bytes, as a shell passes them: Python keeps them as surrogates, which no log or JSON takes."""
    import subprocess
    import sys

    work = os.fsencode(tmp_path) + b"/w\xff"
    for form in ([b"--work", work], [b"--work=" + work]):
        done = subprocess.run([os.fsencode(sys.executable), b"-m", b"rocbuild", b"build", b"hello-hip", b"--arch",
                               b"gfx90a", b"--rocm", os.fsencode(rocm61), *form], capture_output=True, check=False,
                              env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache")))
        err = done.stderr.decode()
        assert done.returncode == 2, err
        assert "--work" in err and "\\xff" in err and "not UTF-8" in err and "Traceback" not in err
    assert not os.path.exists(work) and not (tmp_path / "cache").exists()


def test_a_local_label_too_long_for_a_file_name_is_exit_2_before_anything_runs(cli, recipe, tmp_path, rocm61):
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--work", tmp_path / "w",
                       "--local-version", "a" * 300)
    assert code == 2 and "--local-version" in err and "300 characters" in err and "at most 64" in err
    assert not (tmp_path / "w").exists()
    recipe.write_text(recipe.read_text() + "local-version: " + "b" * 100 + "\n")
    code, _, err = cli("recipes", "lint", recipe)
    assert code == 2 and f"{recipe}:13:16: error: local-version: 100 characters" in err


@pytest.mark.parametrize("line", [3, 9])
def test_a_control_character_is_reported_at_its_line_with_its_key(cli, recipe, line):
    lines = recipe.read_text().splitlines()
    lines[line - 1] = lines[line - 1] + " # x\x01y"
    recipe.write_text("\n".join(lines) + "\n")
    code, _, err = cli("recipes", "lint", recipe)
    column = len(lines[line - 1]) - 1
    key = {3: "version", 9: "steps[1].name"}[line]
    assert code == 2 and f"{recipe}:{line}:{column}: error: {key}: invalid YAML: character U+0001" in err, err


def test_a_file_that_is_not_utf8_is_reported_at_its_line(cli, recipe):
    recipe.write_bytes(recipe.read_bytes().replace(b"version: \"1.0\"", b"version: \"1.0\" # caf\xe9"))
    code, _, err = cli("recipes", "lint", recipe)
    assert code == 2 and f"{recipe}:3:21: error: version: not UTF-8 text" in err and "Traceback" not in err


def test_a_commit_that_renders_to_no_hash_is_reported_at_its_line(cli, tmp_path, rocm61):
    recipe = tmp_path / "c.yaml"
    recipe.write_text("schema: 1\nname: c\nversion: '1.0'\noptions:\n  pin: {default: abc}\nsource:\n"
                      "  git: https://example.org/c.git\n  commit: \"${{ options.pin }}\"\nsteps:\n  - run: [echo]\n")
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 2 and f"{recipe}:8:11: error: source.commit:" in err and "'abc'" in err
