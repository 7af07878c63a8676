"""Where the built-in recipes and patches are, and where a recipe's `diff:` files are looked up."""

from __future__ import annotations

import os
from pathlib import Path

from rocbuild.fsutil import within

RECIPE_SUFFIXES = (".yaml", ".yml")


def data_dir(kind: str) -> Path:
    """The built-in recipes/ or patches/ folder.

    In an installed wheel they sit inside the package (rocbuild/data/...); in
    a source checkout they are the top-level folders of the repository.
    """
    packaged = Path(__file__).resolve().parent.parent / "data" / kind
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / kind


def patch_dirs_for(recipe_path: Path) -> list[Path]:
    """Where `diff:` names are looked up: beside the recipe, its parent's patches/, built-ins."""
    here = recipe_path.resolve().parent
    dirs = [here / "patches", here.parent / "patches", data_dir("patches")]
    seen: list[Path] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


TREE_PATH_ACCEPTED = "a path relative to the source tree, inside it (no leading / and no ../ out of it)"
SOURCE_FILE_ACCEPTED = ("a path relative to the source tree (inside it), or an absolute path in the ROCm prefix "
                        "or the recipe's own folders, e.g. ${{ rocm.cmake_hip_dir }}/FindHIP.cmake")


def tree_path_problem(path: str) -> str | None:
    """Why `path` is not a place inside the source tree, judged by its text alone (links are checked
    again where patches are applied)."""
    if not path:
        return "is empty"
    if os.path.isabs(path):
        return "is an absolute path; patches change files of the source tree only"
    norm = os.path.normpath(path)
    if norm == ".." or norm.startswith("../"):
        return "leaves the source tree"
    return None


def find_patch_file(name: str, dirs: list[Path] | tuple[Path, ...]) -> Path | None:
    """The patch file `name` names in the first folder that has it; links followed, it must stay in that folder."""
    if Path(name).is_absolute() or ".." in Path(name).parts:
        return None
    for d in dirs:
        candidate = d / name
        if candidate.is_file():
            return candidate if within(candidate, d, follow_links=True) else None
    return None
