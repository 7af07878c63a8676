"""A build root from a container image (`rocbuild root create NAME --image IMAGE`): an image laid out as
AMD's rocm/dev-ubuntu images are (tests/image_tree.py says how it differs), imported into podman by podman,
exported into a root by the real `rocbuild`, which records what it holds and plans a recipe inside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.image_tree import amd_like_tree, import_image

pytestmark = [pytest.mark.podman, pytest.mark.root]


def rocbuild(*args: object, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocbuild", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, check=False)


@pytest.fixture
def image_root(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    image = import_image(amd_like_tree(tree, "7.2.0"), f"localhost/rocbuild-test/amd-like-{os.getpid()}:7.2.0",
                         {"ROCM_PATH": "/opt/rocm"})
    name = f"img-{os.getpid()}-{tmp_path.name[-12:]}".lower().replace("_", "-")
    made = rocbuild("root", "create", name, "--image", image, "--json")
    try:
        yield name, image, made
    finally:
        rocbuild("root", "remove", name)
        subprocess.run(["podman", "rmi", "--force", image], capture_output=True, check=False)


def test_a_root_from_an_image_records_what_it_holds(image_root):
    name, image, made = image_root
    assert made.returncode == 0, made.stderr
    assert "$ " in made.stderr and " export " in made.stderr  # the commands it ran are shown
    (row,) = [r for r in json.loads(rocbuild("root", "list", "--json").stdout) if r["name"] == name]
    assert row["image"] == image and row["image_id"] and row["rocm"] == "7.2.0"
    assert row["pythons"] == [f"{sys.version_info[0]}.{sys.version_info[1]}"] and row["mode"] == "image"
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]  # the image holds this machine's libc
    assert row["glibc"] == glibc and row["os"].startswith("Ubuntu 24.04")
    # The image's ENV is set inside, as in a container of it
    assert "ROCM_PATH=/opt/rocm" in row["env"]
    inside = rocbuild("root", "run", name, "--", "/bin/sh", "-c", 'echo "rocm=$ROCM_PATH"')
    assert inside.returncode == 0 and "rocm=/opt/rocm\n" in inside.stdout, inside.stderr


def test_a_recipe_is_planned_inside_it_against_its_rocm_and_python(image_root, tmp_path):
    name, image, made = image_root
    assert made.returncode == 0, made.stderr
    planned = rocbuild("plan", "hello-hip", "--root", name, "--arch", "gfx942", "--python", "all", "--json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    (plan,) = json.loads(planned.stdout)
    assert plan["rocm"] == {"path": "/opt/rocm", "version": "7.2.0", "layout": "rocm"}
    assert plan["python"]["executable"].startswith("/usr/bin/python3")
    shown = rocbuild("plan", "hello-hip", "--root", name, "--arch", "gfx942", cwd=tmp_path).stdout
    assert f"(image {image} (" in shown and "rocm:   7.2.0 at /opt/rocm" in shown


def test_an_image_root_takes_no_debian_options(tmp_path):
    refused = rocbuild("root", "create", "x-img", "--image", "localhost/none:1", "--rocm", "7.2")
    assert refused.returncode == 2 and "the image decides ROCm" in refused.stderr
    missing = rocbuild("root", "create", "x-img", "--image", "localhost/rocbuild-no-such-image:1")
    assert missing.returncode == 1 and "no image localhost/rocbuild-no-such-image:1" in missing.stderr
    assert rocbuild("root", "path", "x-img").returncode != 0  # nothing half-made is left


def test_install_missing_uses_the_images_apt_and_says_so_when_it_has_none(image_root, tmp_path):
    name, image, made = image_root
    assert made.returncode == 0, made.stderr
    shown = rocbuild("plan", "hello-hip", "--root", name, "--arch", "gfx942", cwd=tmp_path).stdout
    assert 'argv: ["apt-get", "update", "-qq"]' in shown and "read after the update below" in shown
    built = rocbuild("build", "hello-hip", "--root", name, "--arch", "gfx942", "--install-missing", cwd=tmp_path)
    assert built.returncode == 3, built.stderr  # the host (here, the image) is not ready
    assert "this image root has no apt-get" in built.stderr and "Traceback" not in built.stderr


@pytest.fixture(scope="module")
def debian_image():
    """An image laid out as AMD's, made by scripts/amd-like-image.py from a small Debian ROCm 7.2 root with two
    pythons (its ROCm, build tools, and python3.13 beside sid's default); the root is removed once imported."""
    source, image = f"imgsrc-{os.getpid()}", f"localhost/rocbuild-test/amd-like-debian-{os.getpid()}:7.2"
    made = rocbuild("root", "create", source, "--rocm", "7.2", "--with", "python3.13-dev", "--with", "python3.13-venv")
    try:
        assert made.returncode == 0, made.stderr[-3000:]
        laid = subprocess.run([sys.executable, str(REPO / "scripts" / "amd-like-image.py"), "--root", source,
                               "--image", image], capture_output=True, text=True, check=False)
        assert laid.returncode == 0, laid.stderr[-3000:]
    finally:
        rocbuild("root", "remove", source)
    try:
        yield image, json.loads(laid.stdout)
    finally:
        subprocess.run(["podman", "rmi", "--force", image], capture_output=True, check=False)


@pytest.mark.slow
def test_a_recipe_is_built_in_an_image_made_from_a_debian_root_for_two_pythons(debian_image, tmp_path):
    image, laid = debian_image
    name = f"imgdeb-{os.getpid()}"
    made = rocbuild("root", "create", name, "--image", image, "--json")
    try:
        assert made.returncode == 0, made.stderr
        (row,) = [r for r in json.loads(rocbuild("root", "list", "--json").stdout) if r["name"] == name]
        assert row["rocm"] == laid["rocm"] and len(row["pythons"]) >= 2 and "ROCM_PATH=/opt/rocm" in row["env"]
        planned = rocbuild("plan", "hello-hip", "--root", name, "--arch", "gfx1100", "--json", cwd=tmp_path)
        assert json.loads(planned.stdout)["rocm"]["path"] == "/opt/rocm", planned.stderr  # AMD's place, not /usr
        built = rocbuild("build", "hello-hip", "--root", name, "--arch", "gfx1100,gfx942", "--python", "all",
                         "--out", tmp_path / "wh", cwd=tmp_path)
        assert built.returncode == 0, built.stderr[-4000:]
        wheels = sorted(line for line in built.stdout.splitlines() if line.endswith(".whl"))
        tags = {f"cp{v.replace('.', '')}" for v in row["pythons"]}
        assert {w.rsplit("-", 3)[1] for w in wheels} == tags and len(wheels) == len(tags)  # one per python
        assert built.stderr.count("installs on: python cp") == len(tags)
        checked = rocbuild("verify", "--json", "--arch", "gfx1100,gfx942", *wheels)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    finally:
        rocbuild("root", "remove", name)
