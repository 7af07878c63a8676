"""Lock files: RECIPE.lock beside RECIPE.yaml pins what a build used, and `build --locked` holds it to that.

A lock records the sha256 of the recipe (and of the recipes it extends), the
sha256 of each patch file, the options, and the commit the source ref
resolved to. A locked build refuses to start when any of them differs, and
lists every difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rocbuild.errors import UsageError
from rocbuild.plan import Plan
from rocbuild.wheels import write_text_atomically

LOCK_SCHEMA = 1


def lock_path(recipe_path: Path) -> Path:
    return recipe_path.with_suffix(".lock")


def make_lock(plan: Plan, source_identity: str) -> dict[str, Any]:
    recipe, src = plan.recipe, plan.source
    if src.kind == "git":
        source = {"kind": "git", "url": src.url, "ref": src.ref, "commit": source_identity}
    else:
        source = {"kind": "dir", "fingerprint": source_identity}
    return {
        "lock": LOCK_SCHEMA,
        "recipe": {"name": recipe.name, "version": recipe.version, "sha256": recipe.digest,
                   "extends": [str(p.name) for p, _ in recipe.bases]},
        "options": plan.options,
        "source": source,
        "patches": [p.record() for p in plan.patches if p.kind == "diff"],
    }


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
    data["_path"] = str(path)
    return data


def check_locked_recipe(lock: dict[str, Any], plan: Plan) -> None:
    """Before anything runs: the recipe, its patch files and options are the locked ones."""
    problems = []
    recipe = plan.recipe
    locked_recipe = lock.get("recipe", {})
    if locked_recipe.get("sha256") != recipe.digest:
        problems.append(f"recipe {recipe.path} changed: sha256 {recipe.digest[:16]}, "
                        f"the lock has {str(locked_recipe.get('sha256'))[:16]}")
    locked_patches = {p["name"]: p["sha256"] for p in lock.get("patches", [])}
    current = {p["name"]: p["sha256"] for p in (a.record() for a in plan.patches if a.kind == "diff")}
    for name, digest in current.items():
        if name not in locked_patches:
            problems.append(f"patch {name} is not in the lock")
        elif locked_patches[name] != digest:
            problems.append(f"patch {name} changed: sha256 {digest[:16]}, the lock has {locked_patches[name][:16]}")
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
    if plan.source.kind == "git":
        if locked.get("kind") != "git" or locked.get("url") != plan.source.url:
            problems.append(f"source is {plan.source.url}, the lock has {locked.get('url') or locked.get('kind')}")
        elif locked.get("commit") != identity:
            problems.append(f"source {plan.source.url} @ {plan.source.ref or 'HEAD'} resolves to {identity}, "
                            f"the lock has {locked.get('commit')}")
    elif locked.get("fingerprint") != identity:
        problems.append(f"source folder {plan.source.directory} changed since it was locked")
    _refuse(lock, problems)


def _refuse(lock: dict[str, Any], problems: list[str]) -> None:
    if problems:
        raise UsageError(f"--locked: the build differs from {lock.get('_path', 'the lock')}:",
                         hint="\n".join("- " + p for p in problems)
                         + "\nif the change is intended, run `rocbuild lock` again and commit the new lock")
