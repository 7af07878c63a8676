"""Reading recipe files, and keeping lookups inside the recipe folders: a recipe is a regular .yaml/.yml
file of bounded size in UTF-8, and a name or path never leads to any other file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rocbuild.errors import RecipeError, UsageError
from rocbuild.fsutil import within
from rocbuild.recipe.files import RECIPE_SUFFIXES
from rocbuild.recipe.yamlpos import key_path_at

MAX_RECIPE_BYTES = 1 << 20


def read_recipe_text(path: Path) -> str:
    """A recipe file's text: a regular .yaml/.yml file of at most MAX_RECIPE_BYTES, in UTF-8."""
    if path.suffix not in RECIPE_SUFFIXES or Path(os.path.realpath(path)).suffix not in RECIPE_SUFFIXES:
        raise RecipeError("not a recipe file", file=str(path), accepted="a .yaml or .yml file")
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise RecipeError("not a regular file", file=str(path), accepted="a .yaml or .yml file")
        if info.st_size > MAX_RECIPE_BYTES:
            raise RecipeError(f"{info.st_size} bytes: larger than any recipe", file=str(path),
                              accepted=f"at most {MAX_RECIPE_BYTES} bytes")
        with open(path, "rb") as fh:
            data = fh.read(MAX_RECIPE_BYTES + 1)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise RecipeError("recipe file not found", file=str(path)) from None
    except OSError as exc:
        raise RecipeError(f"cannot read recipe: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        before = data[:exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1:].decode("utf-8", errors="replace")) + 1
        shown = data.decode("utf-8", errors="replace")
        raise RecipeError(f"not UTF-8 text (byte {exc.start}: {data[exc.start:exc.end]!r})", file=str(path),
                          line=line, column=column, key=key_path_at(shown, line),
                          source_line=shown.splitlines()[line - 1] if line <= len(shown.splitlines()) else None,
                          accepted="a UTF-8 YAML file (save it as UTF-8)") from None
    if len(data) > MAX_RECIPE_BYTES:
        raise RecipeError("larger than any recipe", file=str(path), accepted=f"at most {MAX_RECIPE_BYTES} bytes")
    return text


def same_folder(name: str, beside: Path) -> Path:
    """Without a catalog, `extends:` finds only recipes in the extending recipe's own folder."""
    if is_path(name):
        return confined_recipe(beside / name, [beside])
    for suffix in RECIPE_SUFFIXES:
        if (beside / (name + suffix)).is_file():
            return confined_recipe(beside / (name + suffix), [beside])
    raise UsageError(f"no recipe named {name!r} in {beside}")


def is_path(name: str) -> bool:
    return Path(name).suffix in RECIPE_SUFFIXES or "/" in name


def confined_recipe(path: Path, roots: list[Path]) -> Path:
    """`path` when it is a recipe file (.yaml/.yml) that, links followed, lies inside one of `roots`;
    a UsageError otherwise, which never shows the file's contents."""
    real = Path(os.path.realpath(path))
    if not real.is_file():
        raise UsageError(f"no recipe file {path}")
    if real.suffix not in RECIPE_SUFFIXES:
        raise UsageError(f"{path} is not a .yaml or .yml recipe file")
    if any(within(real, root, follow_links=True) for root in roots):
        return path
    raise UsageError(f"{path} is outside the recipe folders", hint="recipes extend recipes of their own folder "
                     "or of a recipe folder (--recipes, ROCBUILD_RECIPES, recipe sources, built-in)")
