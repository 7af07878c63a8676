"""`source: sdist: NAME==VERSION`: a release's sdist from the package index, fetched with pip, pinned
by sha256 (in the recipe or a lock file), unpacked without letting anything out."""

from __future__ import annotations

import io
import json
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from rocbuild.errors import StepFailed
from rocbuild.source.sdist import unpack_sdist
from rocbuild.source.spec import SdistSource

REQUIREMENT = "tomli_w==1.2.0"


def write_recipe(folder: Path, source: str) -> Path:
    recipe = folder / "fromsdist.yaml"
    recipe.write_text('schema: 1\nname: fromsdist\nversion: "1.2.0"\noutput: tree\nsource:\n'
                      + textwrap.indent(source.strip(), "  ") + "\n")
    return recipe


@pytest.mark.network
def test_sdist_fetched_once_pinned_and_locked(cli, tmp_path):
    recipe = write_recipe(tmp_path, f"sdist: {REQUIREMENT}")
    code, out, err = cli("plan", recipe, "--arch", "gfx90a", "--json")
    assert code == 0, err
    source = json.loads(out)["source"]
    assert source["kind"] == "sdist" and source["commands"][0][1:5] == ["-m", "pip", "download", "--no-deps"]
    code, out, err = cli("build", recipe, "--arch", "gfx90a", "--work", tmp_path / "w")
    assert code == 0, err
    tree = tmp_path / "w" / "src"
    assert (tree / "pyproject.toml").is_file() and (tree / "src" / "tomli_w" / "__init__.py").is_file()
    assert "(downloaded)" in err
    digest = err.split("sha256:")[1].split()[0]
    assert len(digest) == 64

    # `lock` pins the archive; the same bytes pass `--locked`, and the cached archive is reused.
    code, _, err = cli("lock", recipe, "--arch", "gfx90a", "--work", tmp_path / "w")
    assert code == 0, err
    lock = json.loads(recipe.with_suffix(".lock").read_text())
    assert lock["source"] == {"kind": "sdist", "requirement": REQUIREMENT, "sha256": digest}
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--work", tmp_path / "w", "--locked", "--clean")
    assert code == 0, err
    assert "(from the cache)" in err

    # A pin the archive does not match stops the build before anything is unpacked.
    recipe.with_suffix(".lock").unlink()
    pinned = write_recipe(tmp_path, f"sdist: {REQUIREMENT}\nsha256: {'0' * 64}")
    code, _, err = cli("build", pinned, "--arch", "gfx90a", "--work", tmp_path / "w2")
    assert code == 1
    assert f"has sha256 {digest}, the recipe pins {'0' * 64}" in err
    assert not (tmp_path / "w2" / "src").exists()
    right = write_recipe(tmp_path, f"sdist: {REQUIREMENT}\nsha256: {digest}")
    code, _, err = cli("build", right, "--arch", "gfx90a", "--work", tmp_path / "w2")
    assert code == 0, err


@pytest.mark.parametrize("source, message", [
    ("sdist: tomli_w>=1.0", "not NAME==VERSION"),
    ("sdist: tomli_w==one", "not NAME==VERSION"),
    ("sdist: tomli_w==1.2.0\nsha256: abc", "not a sha256 digest"),
    ("sdist: tomli_w==1.2.0\nref: v1", "ref applies to git sources only"),
    ("sdist: tomli_w==1.2.0\npath: x", "give exactly one of git, path or sdist"),
    ("path: x\nsha256: " + "0" * 64, "sha256 applies to sdist sources only"),
])
def test_bad_sdist_sources_are_refused_at_their_line(cli, tmp_path, source, message):
    recipe = write_recipe(tmp_path, source)
    code, _, err = cli("plan", recipe, "--arch", "gfx90a")
    assert code == 2
    assert message in err and f"{recipe}:" in err


def test_ref_cannot_override_an_sdist(cli, tmp_path):
    recipe = write_recipe(tmp_path, f"sdist: {REQUIREMENT}")
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--ref", "v2")
    assert code == 2 and "comes from the sdist tomli_w==1.2.0, not from git" in err


def sdist_spec(folder: Path) -> SdistSource:
    return SdistSource("evil==1.0", str(folder), "python3")


def test_archive_members_that_leave_the_tree_are_refused(tmp_path):
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with tarfile.open(downloads / "evil-1.0.tar.gz", "w:gz") as tar:
        for name, data in (("evil-1.0/setup.py", b"# x\n"), ("evil-1.0/../../outside.txt", b"gotcha\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(StepFailed, match="refused member"):
        unpack_sdist(sdist_spec(downloads), tmp_path / "w" / "src")
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "w" / "src").exists()

    (downloads / "evil-1.0.tar.gz").unlink()
    with zipfile.ZipFile(downloads / "evil-1.0.zip", "w") as zf:
        zf.writestr("evil-1.0/setup.py", "# x\n")
        zf.writestr("../outside.txt", "gotcha\n")
    with pytest.raises(StepFailed, match="leaves the archive's folder"):
        unpack_sdist(sdist_spec(downloads), tmp_path / "w" / "src")
    assert not (tmp_path / "outside.txt").exists()


def test_a_well_formed_archive_becomes_the_tree(tmp_path):
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with tarfile.open(downloads / "good-1.0.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("good-1.0/pkg/__init__.py")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"x=1"))
    (tmp_path / "w").mkdir()
    unpack_sdist(SdistSource("good==1.0", str(downloads), "python3"), tmp_path / "w" / "src")
    assert (tmp_path / "w" / "src" / "pkg" / "__init__.py").read_text() == "x=1"
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["src"]
