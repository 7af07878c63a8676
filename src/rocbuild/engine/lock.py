"""Lock files: RECIPE.lock beside RECIPE.yaml pins what a build used, and `build --locked` holds it to that.

A lock holds the pinned part of the build identity (identity.pinned): the
sha256 of the recipe (and of the recipes it extends), the sha256 of each
patch file, the options, and the commit the source ref resolved to. A locked
build refuses to start when any of them differs, and lists every difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rocbuild.engine.identity import diff_records, pinned, recipe_record
from rocbuild.errors import UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.plan.model import Plan
from rocbuild.source.spec import GitSource, SdistSource

LOCK_SCHEMA = 1


def lock_path(recipe_path: Path) -> Path:
    return recipe_path.with_suffix(".lock")


def make_lock(plan: Plan, source_identity: str) -> dict[str, Any]:
    return {"lock": LOCK_SCHEMA, **pinned(plan, source_identity)}


def write_lock(path: Path, lock: dict[str, Any]) -> Path:
    try:
        write_text_atomically(path, json.dumps(lock, indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}",
                         hint="a lock goes beside its recipe: copy the recipe somewhere writable "
                              "(`rocbuild recipes show NAME > NAME.yaml`) and lock that") from None
    return path


def read_lock(recipe_path: Path) -> dict[str, Any]:
    path = lock_path(recipe_path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"--locked: no lock file {path}",
                         hint=f"write one with `rocbuild lock {recipe_path}`") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"--locked: cannot read {path}: {exc}",
                         hint=f"write it again with `rocbuild lock {recipe_path}`") from None
    if not isinstance(data, dict) or data.get("lock") != LOCK_SCHEMA:
        raise UsageError(f"--locked: {path} is not a rocbuild lock file (schema {LOCK_SCHEMA})",
                         hint=f"write it again with `rocbuild lock {recipe_path}`")
    problem = _shape_problem(data)
    if problem is not None:
        raise UsageError(f"--locked: {path}: {problem}",
                         hint=f"a lock file is written by rocbuild: write it again with `rocbuild lock {recipe_path}`")
    data["_path"] = str(path)
    return data


def _shape_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a lock file's shape (a hand edit, a merge gone wrong), or None."""
    recipe, patches, source = data.get("recipe"), data.get("patches"), data.get("source")
    if not isinstance(recipe, dict) or not isinstance(recipe.get("sha256"), str):
        return "key 'recipe' must be a mapping with a 'sha256' string"
    if not isinstance(patches, list):
        return "key 'patches' must be a list"
    for i, patch in enumerate(patches):
        if not (isinstance(patch, dict) and isinstance(patch.get("name"), str) and isinstance(patch.get("sha256"), str)):
            return f"patches[{i}] must be a mapping with 'name' and 'sha256' strings"
    if not isinstance(data.get("options"), dict):
        return "key 'options' must be a mapping"
    if not isinstance(source, dict) or source.get("kind") not in ("git", "dir", "sdist"):
        return "key 'source' must be a mapping whose 'kind' is git, dir or sdist"
    return None


def check_locked_recipe(lock: dict[str, Any], plan: Plan) -> None:
    """Before anything runs: the recipe, its patch files and options are the locked ones."""
    problems = []
    recipe = plan.recipe
    digest = recipe_record(plan).sha256
    locked_recipe = lock.get("recipe", {})
    if locked_recipe.get("sha256") != digest:
        problems.append(f"recipe {recipe.path} changed: sha256 {digest[:16]}, "
                        f"the lock has {str(locked_recipe.get('sha256'))[:16]}")
    locked_patches = {p["name"]: p["sha256"] for p in lock.get("patches", [])}
    current = {p["name"]: p["sha256"] for p in diff_records(plan)}
    for name, sha in current.items():
        if name not in locked_patches:
            problems.append(f"patch {name} is not in the lock")
        elif locked_patches[name] != sha:
            problems.append(f"patch {name} changed: sha256 {sha[:16]}, the lock has {locked_patches[name][:16]}")
    for name in locked_patches.keys() - current.keys():
        problems.append(f"patch {name} is in the lock but no longer applied")
    if lock.get("options") != plan.options:
        problems.append(f"options differ: {json.dumps(plan.options, sort_keys=True)}, "
                        f"the lock has {json.dumps(lock.get('options'), sort_keys=True)}")
    _refuse(lock, problems)


def check_locked_source(lock: dict[str, Any], plan: Plan, identity: str) -> None:
    """After the ref is resolved, before any tree is checked out: the same commit (or folder contents)."""
    locked = lock.get("source", {})
    problems = []
    source = plan.source
    if isinstance(source, GitSource):
        if locked.get("kind") != "git" or locked.get("url") != source.url:
            problems.append(f"source is {source.url}, the lock has {locked.get('url') or locked.get('kind')}")
        elif locked.get("commit") != identity:
            problems.append(f"source {source.url} @ {source.ref or 'HEAD'} resolves to {identity}, "
                            f"the lock has {locked.get('commit')}")
    elif isinstance(source, SdistSource):
        digest = identity.rsplit("sha256:", 1)[-1]
        if locked.get("kind") != "sdist" or locked.get("requirement") != source.requirement:
            problems.append(f"source is the sdist {source.requirement}, the lock has "
                            f"{locked.get('requirement') or locked.get('url') or locked.get('kind')}")
        elif locked.get("sha256") != digest:
            problems.append(f"the sdist {source.requirement} has sha256 {digest}, the lock has {locked.get('sha256')}")
    elif locked.get("fingerprint") != identity:
        problems.append(f"source folder {source.directory} changed since it was locked")
    _refuse(lock, problems)


def _refuse(lock: dict[str, Any], problems: list[str]) -> None:
    if problems:
        raise UsageError(f"--locked: the build differs from {lock.get('_path', 'the lock')}:",
                         hint="\n".join("- " + p for p in problems)
                         + "\nif the change is intended, run `rocbuild lock` again and commit the new lock")
