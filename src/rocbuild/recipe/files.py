"""Where the built-in recipes and patches are, and where a recipe's `diff:` files are looked up."""

from __future__ import annotations

from pathlib import Path

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
