"""Finding recipes by name: --recipes dirs, ROCBUILD_RECIPES, the built-in ones, then registered sources.

A registered source (someone else's recipe repository) never shadows a
built-in recipe or base: `rocbuild SOURCE:NAME` names its recipe explicitly.
A recipe file that is a link must stay inside the folder it was found in.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.paths import config_root
from rocbuild.recipe.files import RECIPE_SUFFIXES, data_dir
from rocbuild.recipe.load import load_recipe
from rocbuild.recipe.model import Recipe
from rocbuild.recipe.read import confined_recipe
from rocbuild.recipe.sources import load_sources


@dataclass(frozen=True)
class Found:
    name: str
    path: Path
    origin: str  # "--recipes", "ROCBUILD_RECIPES", "source NAME" (`recipes add`), "built-in", "path"


@dataclass(frozen=True)
class RecipeDirs:
    """Where recipes are looked for before the built-in ones and the registered sources."""

    flags: tuple[str, ...] = ()  # --recipes DIR, in order
    environ: tuple[str, ...] = ()  # ROCBUILD_RECIPES

    @classmethod
    def of(cls, flags: Sequence[str], environ: Mapping[str, str]) -> RecipeDirs:
        return cls(tuple(flags), tuple(d for d in environ.get("ROCBUILD_RECIPES", "").split(os.pathsep) if d))

    def first(self, folder: str) -> RecipeDirs:
        return replace(self, flags=(folder, *self.flags))


NO_DIRS = RecipeDirs()


def search_dirs(extra: RecipeDirs = NO_DIRS) -> list[tuple[Path, str]]:
    dirs: list[tuple[Path, str]] = [(Path(d), "--recipes") for d in extra.flags]
    dirs += [(Path(d), "ROCBUILD_RECIPES") for d in extra.environ]
    dirs.append((data_dir("recipes"), "built-in"))
    dirs.append((config_root() / "recipes", "drafted"))  # drafts `build NAME==VERSION --try` verified
    dirs += [(s.recipe_dir, f"source {s.name}") for s in load_sources()]
    return dirs


def recipe_roots(extra: RecipeDirs = NO_DIRS) -> list[Path]:
    """The folders recipe files (and the bases they extend) may lie in: the search folders, and the
    whole checkout of each registered source."""
    return [d for d, _ in search_dirs(extra)] + [s.root for s in load_sources()]


def _found(name: str, path: Path, origin: str, folder: Path) -> Found:
    """A recipe found in `folder`; a link out of that folder is refused."""
    return Found(name, confined_recipe(path, [folder]), origin)


def all_recipes(extra: RecipeDirs = NO_DIRS) -> list[Found]:
    """Every recipe visible, first occurrence of a name wins (later ones are shadowed)."""
    found: dict[str, Found] = {}
    for d, origin in search_dirs(extra):
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.suffix in RECIPE_SUFFIXES and f.is_file() and f.stem not in found:
                try:
                    found[f.stem] = _found(f.stem, f, origin, d)
                except UsageError:  # a link out of its folder: not a recipe of this folder
                    continue
    return sorted(found.values(), key=lambda r: r.name)


def resolve(name_or_path: str, extra: RecipeDirs = NO_DIRS) -> Found:
    candidate = Path(name_or_path)
    if candidate.suffix in RECIPE_SUFFIXES or os.sep in name_or_path:
        if candidate.is_file():
            return Found(candidate.stem, candidate, "path")
        raise UsageError(f"recipe file not found: {name_or_path}")
    if ":" in name_or_path:
        return _from_source(*name_or_path.split(":", 1))
    for d, origin in search_dirs(extra):
        for suffix in RECIPE_SUFFIXES:
            f = d / (name_or_path + suffix)
            if f.is_file():
                return _found(name_or_path, f, origin, d)
    known = [r.name for r in all_recipes(extra)]
    close = difflib.get_close_matches(name_or_path, known, n=3, cutoff=0.5)
    hint = f"did you mean: {', '.join(close)}?" if close else None
    listing = ", ".join(known) or "(none)"
    raise UnknownRecipe(
        f"no recipe named {name_or_path!r}",
        hint=(hint + "\n" if hint else "") + f"known recipes: {listing}\n"
        "a path to a .yaml file works too; add folders with --recipes DIR, ROCBUILD_RECIPES or "
        "`rocbuild recipes add URL|PATH`", name=name_or_path,
    )


class UnknownRecipe(UsageError):
    """No recipe of that name anywhere rocbuild looks: `build` then says how to draft one from the sdist."""

    def __init__(self, message: str, *, hint: str, name: str):
        super().__init__(message, hint=hint)
        self.name = name


def _from_source(source_name: str, name: str) -> Found:
    """`SOURCE:NAME`: the recipe NAME of that registered source, whatever else has the name."""
    sources = {s.name: s for s in load_sources()}
    if source_name not in sources:
        raise UsageError(f"no recipe source named {source_name!r}",
                         hint="recipe sources: " + (", ".join(sorted(sources)) or "(none; `rocbuild recipes add`)"))
    folder = sources[source_name].recipe_dir
    for suffix in RECIPE_SUFFIXES:
        if (folder / (name + suffix)).is_file():
            return _found(name, folder / (name + suffix), f"source {source_name}", folder)
    raise UsageError(f"recipe source {source_name} has no recipe named {name!r}",
                     hint="its recipes: " + ", ".join(sorted(f.stem for f in folder.glob("*.y*ml"))))


def load(path: str | Path, extra: RecipeDirs = NO_DIRS) -> Recipe:
    """Load a recipe whose `extends:` is found beside it first, then as `resolve` finds names; a path
    must lead to a recipe file in a recipe folder (never, say, /proc/self/environ)."""
    def find(name: str, beside: Path) -> Path:
        if Path(name).suffix in RECIPE_SUFFIXES or "/" in name:
            return confined_recipe(beside / name, [beside, *recipe_roots(extra)])
        return resolve(name, extra.first(str(beside))).path  # its own folder first, confined to it
    return load_recipe(path, find)
