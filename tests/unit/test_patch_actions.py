"""replace, link and remove on real files: idempotent, loud on mismatch, never escaping the tree."""

from __future__ import annotations

import os

import pytest

from rocbuild.engine.patch import apply_link, apply_remove, apply_replace
from rocbuild.errors import StepFailed
from rocbuild.plan.model import LinkPatch, RemovePatch, ReplacePatch

HEADER = "#if HAVE_CUDA\n#include <nccl.h>\n#elif HAVE_ROCM\n#include <rccl.h>\n#endif\n"


def replace(**kw) -> ReplacePatch:
    fields = {"file": "ops.h", "find": "#include <rccl.h>", "with": "#include <rccl/rccl.h>",
              "regex": False, "count": None, **kw}
    return ReplacePatch(file=fields["file"], find=fields["find"], replacement=fields["with"], regex=fields["regex"],
                        count=fields["count"], where="t")


@pytest.mark.parametrize("params", [
    replace(),
    replace(find="rccl.h", **{"with": "rccl/rccl.h"}),  # the blog's sed, which is not idempotent
    replace(find=r"^#include <rccl\.h>$", regex=True, count=1),
])
def test_replace_twice_changes_once(tmp_path, params):
    (tmp_path / "ops.h").write_text(HEADER)
    assert "replaced 1" in apply_replace(params, tmp_path)
    assert "already applied" in apply_replace(params, tmp_path)
    text = (tmp_path / "ops.h").read_text()
    assert text.count("#include <rccl/rccl.h>") == 1 and "rccl/rccl/" not in text
    assert "#include <rccl.h>" not in text


def test_replace_without_match_names_file_and_pattern(tmp_path):
    (tmp_path / "ops.h").write_text("#include <nccl.h>\n")
    with pytest.raises(StepFailed) as info:
        apply_replace(replace(), tmp_path)
    assert "ops.h" in info.value.message and "#include <rccl.h>" in info.value.message


def test_replace_count_mismatch(tmp_path):
    (tmp_path / "ops.h").write_text(HEADER + HEADER)
    with pytest.raises(StepFailed, match="has 2 matches .* expects 1"):
        apply_replace(replace(count=1), tmp_path)
    assert (tmp_path / "ops.h").read_text() == HEADER + HEADER  # untouched


def test_replace_refuses_paths_outside(tmp_path):
    with pytest.raises(StepFailed, match="outside the source tree"):
        apply_replace(replace(file="../etc/passwd"), tmp_path / "src")


def make_findhip(tmp_path):
    hip = tmp_path / "rocm" / "lib" / "cmake" / "hip"
    (hip / "FindHIP").mkdir(parents=True)
    (hip / "FindHIP.cmake").write_text("# find hip\n")
    (hip / "FindHIP" / "run_hipcc.cmake").write_text("#\n")
    (hip / "hip-config.cmake").write_text("#\n")
    return hip


def test_link_links_every_match_and_replaces_links(tmp_path):
    hip = make_findhip(tmp_path)
    tree = tmp_path / "tree"
    (tree / "cmake" / "Modules").mkdir(parents=True)
    params = {"from": f"{hip}/FindHIP*", "into": "cmake/Modules"}
    link = LinkPatch(source_glob=params["from"], into=params["into"], where="t")
    apply_link(link, tree)
    apply_link(link, tree)  # a re-run replaces the links themselves
    mods = tree / "cmake" / "Modules"
    assert sorted(os.listdir(mods)) == ["FindHIP", "FindHIP.cmake"]
    assert os.readlink(mods / "FindHIP") == str(hip / "FindHIP")
    assert not (hip / "FindHIP" / "FindHIP").exists()  # the `ln -sf` trap
    assert (mods / "FindHIP" / "run_hipcc.cmake").is_file()


def test_link_refuses_to_replace_real_files(tmp_path):
    hip = make_findhip(tmp_path)
    tree = tmp_path / "tree"
    (tree / "m").mkdir(parents=True)
    (tree / "m" / "FindHIP.cmake").write_text("mine\n")
    with pytest.raises(StepFailed, match="not a link"):
        apply_link(LinkPatch(source_glob=f"{hip}/FindHIP.cmake", into="m", where="t"), tree)
    assert (tree / "m" / "FindHIP.cmake").read_text() == "mine\n"


def test_link_without_match(tmp_path):
    with pytest.raises(StepFailed, match="nothing matches"):
        apply_link(LinkPatch(source_glob=f"{tmp_path}/none/FindHIP*", into="m", where="t"), tmp_path)


def test_remove_takes_a_file_or_a_link_out_of_the_tree_and_nothing_else(tmp_path):
    tree = tmp_path / "src"
    (tree / "k").mkdir(parents=True)
    (tree / "k" / "x_cuda.cu").write_text("// kernels\n")
    outside = tmp_path / "keep.txt"
    outside.write_text("not the tree's\n")
    (tree / "link.txt").symlink_to(outside)
    assert apply_remove(RemovePatch("k/x_cuda.cu", "t"), tree) == "removed k/x_cuda.cu"
    assert not (tree / "k" / "x_cuda.cu").exists()
    with pytest.raises(StepFailed, match="outside the source tree"):
        apply_remove(RemovePatch("link.txt", "t"), tree)  # a link out of the tree is refused like any path out
    assert outside.read_text() == "not the tree's\n"
    with pytest.raises(StepFailed, match="not a file of the source tree"):
        apply_remove(RemovePatch("k/x_cuda.cu", "t"), tree)
    with pytest.raises(StepFailed, match="not a file of the source tree"):
        apply_remove(RemovePatch("k", "t"), tree)  # a folder is not removed
    with pytest.raises(StepFailed, match="outside the source tree"):
        apply_remove(RemovePatch("../keep.txt", "t"), tree)
