"""Finding recipes by name: --recipes dirs, ROCBUILD_RECIPES, registered sources, then the built-in ones."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.recipe import Recipe, load_recipe
from rocbuild.recipe.files import RECIPE_SUFFIXES, data_dir
from rocbuild.registry import load_sources


@dataclass(frozen=True)
class Found:
    name: str
    path: Path
    origin: str  # "--recipes", "ROCBUILD_RECIPES", "source NAME" (`recipes add`), "built-in", "path"


def search_dirs(extra: list[str] | None = None) -> list[tuple[Path, str]]:
    dirs: list[tuple[Path, str]] = [(Path(d), "--recipes") for d in extra or []]
    env = os.environ.get("ROCBUILD_RECIPES", "")
    dirs += [(Path(d), "ROCBUILD_RECIPES") for d in env.split(os.pathsep) if d]
    dirs += [(s.recipe_dir, f"source {s.name}") for s in load_sources()]
    dirs.append((data_dir("recipes"), "built-in"))
    return dirs


def all_recipes(extra: list[str] | None = None) -> list[Found]:
    """Every recipe visible, first occurrence of a name wins (later ones are shadowed)."""
    found: dict[str, Found] = {}
    for d, origin in search_dirs(extra):
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.suffix in RECIPE_SUFFIXES and f.is_file() and f.stem not in found:
                found[f.stem] = Found(f.stem, f, origin)
    return sorted(found.values(), key=lambda r: r.name)


def resolve(name_or_path: str, extra: list[str] | None = None) -> Found:
    candidate = Path(name_or_path)
    if candidate.suffix in RECIPE_SUFFIXES or os.sep in name_or_path:
        if candidate.is_file():
            return Found(candidate.stem, candidate, "path")
        raise UsageError(f"recipe file not found: {name_or_path}")
    for d, origin in search_dirs(extra):
        for suffix in RECIPE_SUFFIXES:
            f = d / (name_or_path + suffix)
            if f.is_file():
                return Found(name_or_path, f, origin)
    known = [r.name for r in all_recipes(extra)]
    close = difflib.get_close_matches(name_or_path, known, n=3, cutoff=0.5)
    hint = f"did you mean: {', '.join(close)}?" if close else None
    listing = ", ".join(known) or "(none)"
    raise UsageError(
        f"no recipe named {name_or_path!r}",
        hint=(hint + "\n" if hint else "") + f"known recipes: {listing}\n"
        "a path to a .yaml file works too; add folders with --recipes DIR, ROCBUILD_RECIPES or "
        "`rocbuild recipes add URL|PATH`",
    )


def load(path: str | Path, extra: list[str] | None = None) -> Recipe:
    """Load a recipe whose `extends: NAME` is found beside it first, then as `resolve` finds names."""
    def find(name: str, beside: Path) -> Path:
        return resolve(name, [str(beside), *(extra or [])]).path
    return load_recipe(path, find)
