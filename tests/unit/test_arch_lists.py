"""`unsupported: - archs-not-in: {file, set}`: the arch list a source keeps itself (vLLM's HIP_SUPPORTED_ARCHS),
read from the source folder or the sdist's archive in the cache when the build is planned, and again by
the build before any step; the drafter writes such an entry for a CMake list instead of copying it.
(The git mirror's side starts git: tests/integration/test_arch_lists_git.py.)"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from rocbuild.draft.tree import draft_recipe, read_tree
from rocbuild.errors import RecipeError
from rocbuild.plan.archlists import set_values
from rocbuild.recipe.load import load_recipe_text
from rocbuild.source.peek import peek
from rocbuild.source.spec import SdistSource
from tests.unit.test_engine import FakeRunner, engine
from tests.unit.test_plan import environ, plan_of  # noqa: F401 (a fixture)

LISTS = 'project(pkg)\nset(HIP_SUPPORTED_ARCHS "gfx90a;gfx942;gfx1100")\nset(OTHER "x")\n'
ENTRY = """unsupported:
  - archs-not-in: {file: CMakeLists.txt, set: HIP_SUPPORTED_ARCHS}
    why: pkg drops any other arch without a word
"""


def recipe(tmp_path: Path, source: str = "path: project", entry: str = ENTRY) -> Path:
    path = tmp_path / "pkg.yaml"
    path.write_text(f'schema: 1\nname: pkg\nversion: "1.0"\nsource:\n  {source}\n{entry}'
                    "steps:\n  - name: compile\n    run: [python, compile.py]\n  - wheel: {}\n"
                    "verify:\n  - code-objects: false\n")
    return path


def project(tmp_path: Path, lists: str = LISTS) -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    (folder / "CMakeLists.txt").write_text(lists)
    (folder / "setup.py").write_text("# the project\n")
    return folder


def test_set_values_reads_every_set_of_the_variable_and_the_first_line():
    text = ('# set(HIP_SUPPORTED_ARCHS "gfx1")\nif(A)\n  SET( HIP_SUPPORTED_ARCHS "gfx90a;gfx942")\nelse()\n'
            '  set(HIP_SUPPORTED_ARCHS "gfx942 gfx1100" CACHE STRING "")\nendif()\n')
    assert set_values(text, "HIP_SUPPORTED_ARCHS") == (3, ("gfx90a", "gfx942", "gfx1100"))
    assert set_values(text, "HIP_SUPPORTED") is None  # a name is matched whole
    assert set_values("set(CUDA_SUPPORTED_ARCHS \"8.0\")\n", "HIP_SUPPORTED_ARCHS") is None


def test_an_arch_the_source_does_not_list_is_refused_when_planned_naming_its_line(tmp_path, environ, rocm61):
    project(tmp_path)
    with pytest.raises(RecipeError) as caught:
        plan_of(recipe(tmp_path), environ, rocm=rocm61, arch="gfx1100,gfx1036")
    err = caught.value
    assert "cannot be built for gfx1036: CMakeLists.txt:2 sets HIP_SUPPORTED_ARCHS to gfx90a, gfx942, gfx1100" in err.message
    assert f"the source folder {tmp_path / 'project'}" in err.message and "without a word" in err.message
    assert (err.line, err.key) == (7, "unsupported[0].archs-not-in")  # the entry in the recipe
    assert err.accepted == "--arch with archs it lists: gfx90a, gfx942, gfx1100"


def test_listed_archs_plan_and_the_plan_says_what_it_read(tmp_path, environ, cli, rocm61):
    project(tmp_path)
    plan = plan_of(recipe(tmp_path), environ, rocm=rocm61, arch="gfx942:xnack-,gfx1100")  # a feature suffix aside
    (check,) = plan.arch_lists
    assert (check.line, check.listed) == (2, ("gfx90a", "gfx942", "gfx1100"))
    code, out, err = cli("plan", recipe(tmp_path), "--arch", "gfx1100", "--rocm", rocm61)
    assert code == 0, err
    assert "listed in HIP_SUPPORTED_ARCHS (CMakeLists.txt:2, read from the source folder" in out
    code, out, err = cli("plan", recipe(tmp_path), "--arch", "gfx1100", "--rocm", rocm61, "--json")
    assert json.loads(out)["arch_lists"][0]["listed"] == ["gfx90a", "gfx942", "gfx1100"]
    code, out, err = cli("plan", recipe(tmp_path), "--arch", "gfx1201", "--rocm", rocm61)
    assert code == 2 and "cannot be built for gfx1201" in err and "Traceback" not in err


@pytest.mark.parametrize("lists", ['set(HIP_ARCHS "gfx90a")\n', None])
def test_a_list_the_source_no_longer_keeps_is_said_stale(tmp_path, environ, rocm61, lists):
    folder = project(tmp_path, lists or "")
    if lists is None:
        (folder / "CMakeLists.txt").unlink()
    with pytest.raises(RecipeError) as caught:
        plan_of(recipe(tmp_path), environ, rocm=rocm61, arch="gfx1100")
    assert ("sets no HIP_SUPPORTED_ARCHS" if lists else "has no such file") in caught.value.message
    assert "no longer matches its source" in caught.value.message


def test_the_build_reads_it_again_before_any_step(tmp_path, rocm61):
    """A source changed between plan and build (a folder edited, a mirror fetched): the build holds the archs
    against what it fetched, and refuses before any step runs."""
    from tests.unit.test_engine import plan_for

    folder = project(tmp_path)
    plan = plan_for(tmp_path, recipe(tmp_path), rocm61)  # gfx90a: listed
    (folder / "CMakeLists.txt").write_text('set(HIP_SUPPORTED_ARCHS "gfx942")\n')
    runner = FakeRunner()
    with pytest.raises(RecipeError) as caught:
        engine(plan, runner).build()
    assert "cannot be built for gfx90a: CMakeLists.txt:1 sets HIP_SUPPORTED_ARCHS to gfx942" in caught.value.message
    assert runner.calls == []


def test_the_sdist_archive_in_the_cache_is_read_without_unpacking(tmp_path, environ, rocm61):
    path = recipe(tmp_path, "sdist: pkg==1.0")
    pending = plan_of(path, environ, rocm=rocm61, arch="gfx1036")  # no archive yet: read once fetched
    assert pending.arch_lists[0].listed is None
    assert isinstance(pending.source, SdistSource)
    folder = Path(pending.source.download_dir)
    folder.mkdir(parents=True)
    with tarfile.open(folder / "pkg-1.0.tar.gz", "w:gz") as tar:
        for name, text in (("pkg-1.0/CMakeLists.txt", LISTS), ("pkg-1.0/sub/CMakeLists.txt", "x")):
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    with pytest.raises(RecipeError, match="gfx1036: CMakeLists.txt:2 .* [(]the sdist pkg-1.0.tar.gz[)]"):
        plan_of(path, environ, rocm=rocm61, arch="gfx1036")
    assert not (folder / "pkg-1.0").exists()  # read from the archive, nothing extracted
    assert peek(pending.source, "setup.py") is not None and peek(pending.source, "setup.py").text is None  # type: ignore[union-attr]
    (folder / "pkg-1.0.tar.gz").unlink()
    with zipfile.ZipFile(folder / "pkg-1.0.zip", "w") as zf:
        zf.writestr("pkg-1.0/CMakeLists.txt", LISTS)
    assert plan_of(path, environ, rocm=rocm61, arch="gfx942").arch_lists[0].listed == ("gfx90a", "gfx942", "gfx1100")


@pytest.mark.parametrize(("entry", "problem"), [
    ("unsupported:\n  - why: x\n", "needs exactly one of `when:` and `archs-not-in:`"),
    ("unsupported:\n  - when: 'true'\n    archs-not-in: {file: a, set: B}\n    why: x\n", "needs exactly one of"),
    ("unsupported:\n  - archs-not-in: {file: a, set: B}\n    step: compile\n    why: x\n", "`step:` does not go with it"),
    ("unsupported:\n  - archs-not-in: {file: a, set: 'B C'}\n    why: x\n", "not a CMake variable name"),
    ("unsupported:\n  - archs-not-in: {file: ../a, set: B}\n    why: x\n", "leaves the source tree"),
    ("unsupported:\n  - archs-not-in: {file: a}\n    why: x\n", "missing required key 'set'"),
])
def test_a_malformed_entry_is_named(tmp_path, entry, problem):
    path = recipe(tmp_path, entry=entry)
    with pytest.raises(RecipeError, match=problem) as caught:
        load_recipe_text(path.read_text(), path)
    assert caught.value.line is not None and caught.value.key is not None


def test_the_drafter_writes_an_entry_that_reads_a_cmake_list(tmp_path):
    t = tmp_path / "t"
    t.mkdir()
    (t / "CMakeLists.txt").write_text(LISTS)
    (t / "setup.py").write_text("from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
                                "import setuptools\nsetuptools.setup(name='pkg', ext_modules=[CUDAExtension('pkg._C', "
                                "['k.cu'])], cmdclass={'build_ext': BuildExtension})\n")
    (t / "k.cu").write_text("__global__ void k() {}\n")
    text = draft_recipe("pkg", "pkg==1.0", "0" * 64, read_tree(t), ["gfx1201"])
    assert "CMakeLists.txt:2 (HIP_SUPPORTED_ARCHS) accepts only gfx90a, gfx942, gfx1100" in text
    (entry,) = yaml.safe_load(text)["unsupported"]
    assert entry["archs-not-in"] == {"file": "CMakeLists.txt", "set": "HIP_SUPPORTED_ARCHS"} and "when" not in entry
    load_recipe_text(text, tmp_path / "pkg.yaml")
