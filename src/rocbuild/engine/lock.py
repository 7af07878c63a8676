"""Lock files: RECIPE.lock beside RECIPE.yaml pins what a build used, and `build --locked` holds it to that.

A lock holds the pinned part of the build identity (identity.pinned): the
sha256 of the recipe (and of the recipes it extends), the sha256 of each
patch file, the options, and the commit the source ref resolved to. A locked
build refuses to start when any of them differs, and lists every difference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocbuild.engine.identity import diff_records, pinned, recipe_record
from rocbuild.errors import UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.plan.model import Plan
from rocbuild.source.spec import DirSource, GitSource, SdistSource

LOCK_SCHEMA = 1


def lock_path(recipe_path: Path) -> Path:
    return recipe_path.with_suffix(".lock")


@dataclass(frozen=True)
class Lock:
    """A lock file's contents, its shape checked when read."""

    path: Path
    data: dict[str, Any]  # as written: {"lock", "recipe", "options", "source", "patches"}

    @property
    def recipe_sha256(self) -> str:
        return str(self.data["recipe"]["sha256"])

    @property
    def patches(self) -> dict[str, str]:
        """Patch file name -> sha256."""
        return {p["name"]: p["sha256"] for p in self.data["patches"]}

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.data["options"])

    @property
    def source(self) -> dict[str, Any]:
        return dict(self.data["source"])

    def describe_source(self) -> str:
        src = self.source
        return f"{src['url']} @ {src['ref'] or 'HEAD'} = {src['commit']}" if src["kind"] == "git" else "source folder"

    def recipe_problems(self, plan: Plan) -> list[str]:
        """Before anything runs: the recipe, its patch files and options are the locked ones."""
        problems = []
        digest = recipe_record(plan).sha256
        if self.recipe_sha256 != digest:
            problems.append(f"recipe {plan.recipe.path} changed: sha256 {digest[:16]}, "
                            f"the lock has {self.recipe_sha256[:16]}")
        locked_patches = self.patches
        current = {p["name"]: p["sha256"] for p in diff_records(plan)}
        for name, sha in current.items():
            if name not in locked_patches:
                problems.append(f"patch {name} is not in the lock")
            elif locked_patches[name] != sha:
                problems.append(f"patch {name} changed: sha256 {sha[:16]}, the lock has {locked_patches[name][:16]}")
        for name in locked_patches.keys() - current.keys():
            problems.append(f"patch {name} is in the lock but no longer applied")
        if self.options != plan.options:
            problems.append(f"options differ: {json.dumps(plan.options, sort_keys=True)}, "
                            f"the lock has {json.dumps(self.options, sort_keys=True)}")
        return problems

    def source_problems(self, plan: Plan, identity: str) -> list[str]:
        """After the ref is resolved, before any tree is checked out: the same commit (or folder contents)."""
        locked, source = self.source, plan.source
        if isinstance(source, GitSource):
            if locked.get("kind") != "git" or locked.get("url") != source.url:
                return [f"source is {source.url}, the lock has {locked.get('url') or locked.get('kind')}"]
            if locked.get("commit") != identity:
                return [f"source {source.url} @ {source.ref or 'HEAD'} resolves to {identity}, "
                        f"the lock has {locked.get('commit')}"]
        elif isinstance(source, SdistSource):
            digest = identity.rsplit("sha256:", 1)[-1]
            if locked.get("kind") != "sdist" or locked.get("requirement") != source.requirement:
                return [f"source is the sdist {source.requirement}, the lock has "
                        f"{locked.get('requirement') or locked.get('url') or locked.get('kind')}"]
            if locked.get("sha256") != digest:
                return [f"the sdist {source.requirement} has sha256 {digest}, the lock has {locked.get('sha256')}"]
        elif isinstance(source, DirSource) and locked.get("fingerprint") != identity:
            return [f"source folder {source.directory} changed since it was locked"]
        return []

    def check(self, plan: Plan, source_identity: str | None = None) -> None:
        """The one check of a build against its lock: the recipe part, and the source once resolved."""
        problems = self.recipe_problems(plan)
        if source_identity is not None:
            problems += self.source_problems(plan, source_identity)
        if problems:
            raise UsageError(f"--locked: the build differs from {self.path}:",
                             hint="\n".join("- " + p for p in problems)
                             + "\nif the change is intended, run `rocbuild lock` again and commit the new lock")


def make_lock(plan: Plan, source_identity: str) -> Lock:
    return Lock(lock_path(plan.recipe.path), {"lock": LOCK_SCHEMA, **pinned(plan, source_identity)})


def write_lock(lock: Lock) -> Path:
    try:
        write_text_atomically(lock.path, json.dumps(lock.data, indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {lock.path}: {exc.strerror}",
                         hint="a lock goes beside its recipe: copy the recipe somewhere writable "
                              "(`rocbuild recipes show NAME > NAME.yaml`) and lock that") from None
    return lock.path


def read_lock(recipe_path: Path) -> Lock:
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
    return Lock(path, data)


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
