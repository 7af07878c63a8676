"""rocbuild never deletes, rewrites or copies into a folder that is not its own.

Refused, with nothing touched: a --work folder it did not make (only an empty one is taken over), work,
source and wheelhouse folders that overlap, --clean of a work folder another build holds, an --out or a
--work that cannot be a folder. FIFOs and sockets in a source folder are skipped, not read.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import tree_digest

RECIPE = """\
schema: 1
name: tree
version: "1.0"
source:
  path: {src}
steps:
  - run: [python, -c, "open('built.txt', 'w').write('ok')"]
verify:
  - code-objects: false
"""


@pytest.fixture
def user_tree(tmp_path) -> Path:
    """A user's project folder with the names rocbuild uses inside its work folders."""
    tree = tmp_path / "project"
    for name in ("src/main.c", "build/keep.o", "dist/old.whl", "notes.txt"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(name)
    return tree


def recipe_for(tmp_path: Path, src: Path) -> Path:
    (tmp_path / "recipes").mkdir(exist_ok=True)
    recipe = tmp_path / "recipes" / "tree.yaml"
    recipe.write_text(RECIPE.format(src=src))
    return recipe


def run(cli, tmp_path, rocm61, recipe, *args):
    return cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--out", tmp_path / "wheelhouse", *args)


@pytest.mark.parametrize("extra", [[], ["--clean"]])
def test_a_work_folder_rocbuild_did_not_make_is_refused_and_untouched(cli, tmp_path, rocm61, user_tree, extra):
    other = tmp_path / "other-source"
    other.mkdir()
    (other / "x.c").write_text("int x;")
    before = tree_digest(user_tree)
    code, _, err = run(cli, tmp_path, rocm61, recipe_for(tmp_path, other), "--work", user_tree, *extra)
    assert code == 2, err
    assert f"--work {user_tree} is a folder rocbuild did not create" in err and "Traceback" not in err
    assert tree_digest(user_tree) == before


@pytest.mark.parametrize("work, source, out, relation", [
    ("project", "project", "wheelhouse", "are the same folder"),         # --source-dir X --work X
    ("project/w", "project", "wheelhouse", "inside"),                    # work inside the source
    ("w", "w/project", "wheelhouse", "inside"),                          # source inside the work folder
    ("w", "project", "project/wheelhouse", "inside"),                    # the wheelhouse inside the source
    ("w", "project", "w/wheels", "inside"),                              # the wheelhouse inside the work folder
])
def test_overlapping_work_source_and_out_are_refused(cli, tmp_path, rocm61, user_tree, work, source, out, relation):
    src = tmp_path / source
    if not src.exists():
        src.mkdir(parents=True)
        (src / "a.c").write_text("int a;")
    before = tree_digest(tmp_path)
    recipe = recipe_for(tmp_path, tmp_path / "unused")
    before = tree_digest(tmp_path)
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--source-dir", src,
                       "--work", tmp_path / work, "--out", tmp_path / out)
    assert code == 2 and relation in err and "give each its own folder" in err, err
    assert tree_digest(tmp_path) == before  # nothing created, copied or deleted
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61, "--source-dir", src,
                       "--work", tmp_path / work, "--out", tmp_path / out)
    assert code == 2 and relation in err


def test_an_empty_folder_is_taken_over_and_clean_keeps_the_marker(cli, tmp_path, rocm61, user_tree):
    work = tmp_path / "w"
    work.mkdir()
    recipe = recipe_for(tmp_path, user_tree)
    code, _, err = run(cli, tmp_path, rocm61, recipe, "--work", work)
    assert code == 0, err
    assert (work / ".rocbuild-work").is_file() and (work / "src" / "built.txt").read_text() == "ok"
    (work / "stray").write_text("x")
    code, _, err = run(cli, tmp_path, rocm61, recipe, "--work", work, "--clean")
    assert code == 0, err
    assert not (work / "stray").exists() and (work / ".rocbuild-work").is_file()
    assert (user_tree / "notes.txt").read_text() == "notes.txt" and not (user_tree / "built.txt").exists()


def test_clean_waits_for_the_lock_before_deleting_anything(cli, tmp_path, rocm61, user_tree):
    """A second build with --clean must not empty a folder another build holds."""
    work = tmp_path / "w"
    recipe = recipe_for(tmp_path, user_tree)
    assert run(cli, tmp_path, rocm61, recipe, "--work", work)[0] == 0
    before = tree_digest(work)
    with open(work / ".lock", "a+") as held:  # what a running build holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, _, err = run(cli, tmp_path, rocm61, recipe, "--work", work, "--clean")
    assert code == 2 and "another rocbuild is building in" in err, err
    assert tree_digest(work) == before


@pytest.mark.parametrize("bad", ["file", "unwritable-parent"])
def test_an_unusable_out_is_refused_before_anything_builds(cli, tmp_path, rocm61, user_tree, bad):
    if bad == "file":
        out = tmp_path / "wheels"
        out.write_text("not a folder")
    else:
        if os.geteuid() == 0:
            # root writes anywhere; a path under a file is unusable for everyone
            (tmp_path / "blocker").write_text("")
            out = tmp_path / "blocker" / "wheels"
        else:  # pragma: no cover - CI runs as root
            (tmp_path / "ro").mkdir(mode=0o555)
            out = tmp_path / "ro" / "wheels"
    work = tmp_path / "w"
    code, _, err = cli("build", recipe_for(tmp_path, user_tree), "--arch", "gfx90a", "--rocm", rocm61,
                       "--work", work, "--out", out)
    assert code == 2 and "--out" in err and "not a folder" in err and "Traceback" not in err, err
    assert not (work / "logs").exists()  # refused before the build started


def test_a_work_path_that_is_a_file_is_refused(cli, tmp_path, rocm61, user_tree):
    work = tmp_path / "w"
    work.write_text("mine")
    code, _, err = run(cli, tmp_path, rocm61, recipe_for(tmp_path, user_tree), "--work", work)
    assert code == 2 and "is not a folder" in err and work.read_text() == "mine"


def test_fifos_and_sockets_in_a_source_folder_are_skipped_not_read(cli, tmp_path, rocm61, user_tree):
    """Reading a FIFO would hang the build; a socket cannot be copied."""
    os.mkfifo(user_tree / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(user_tree / "sock"))
    try:
        code, _, err = run(cli, tmp_path, rocm61, recipe_for(tmp_path, user_tree), "--work", tmp_path / "w")
    finally:
        sock.close()
    assert code == 0, err
    assert "skipped" in err and "pipe" in err
    assert (tmp_path / "w" / "src" / "notes.txt").is_file() and not (tmp_path / "w" / "src" / "pipe").exists()


def test_a_full_work_folder_is_an_error_not_a_traceback(tmp_path, rocm61, user_tree):
    """The work folder on a real 64 KiB tmpfs (a private mount namespace): the source copy cannot fit."""
    (user_tree / "big.bin").write_bytes(os.urandom(300_000))
    work = tmp_path / "w"
    work.mkdir()
    argv = [sys.executable, "-m", "rocbuild", "build", str(recipe_for(tmp_path, user_tree)), "--arch", "gfx90a",
            "--rocm", str(rocm61), "--work", str(work), "--out", str(tmp_path / "wheelhouse")]
    script = 'mount -t tmpfs -o size=64k tmpfs "$WORK" || exit 99; exec "$@"'
    env = dict(os.environ, WORK=str(work), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    ns = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-Urm"]
    full = subprocess.run([*ns, "sh", "-c", script, "sh", *argv], env=env, capture_output=True, text=True)
    assert full.returncode == 1, full.stderr
    assert "No space left on device" in full.stderr and "Traceback" not in full.stderr
    assert (user_tree / "big.bin").stat().st_size == 300_000  # the source is only read
