"""The planner's API: a build request -> the recipe it names (`choose`), then, on the host found for it,
the complete Plan (`assemble`); `plan_for` does both, finding the host in between."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

import rocbuild.recipe.catalog as catalog
import rocbuild.recipe.templating as templating
from rocbuild.detect.host import Host
from rocbuild.errors import UsageError
from rocbuild.labels import LOCAL_LABEL_ACCEPTED, local_label_problem
from rocbuild.paths import WorkDirs, cache_root, short_hash
from rocbuild.plan.model import Plan
from rocbuild.plan.options import resolve_options
from rocbuild.plan.planner import make_plan
from rocbuild.plan.request import BuildRequest
from rocbuild.recipe.catalog import Found, RecipeDirs
from rocbuild.recipe.model import CodeObjects, Recipe
from rocbuild.source.spec import DirSource, check_ref

# A template that reads the target's torch (`${{ torch.version >= '2.1' }}`); a comment naming torch does not.
TORCH_IN_TEMPLATE = re.compile(r"\$\{\{[^}]*\btorch\b")


@dataclass(frozen=True)
class Chosen:
    """The recipe a request names, loaded, with its options resolved: what the host is found for."""

    found: Found
    recipe: Recipe
    options: dict[str, Any]
    need_archs: bool  # whether it compiles for GPU targets (a tree recipe and a lock name none)

    @property
    def need_torch(self) -> bool:
        """Whether the target python's torch matters: required, or named in a template."""
        recipe = self.recipe
        texts = [recipe.text, *(text for _, text in recipe.bases)]
        return recipe.requires.torch is not None or any(TORCH_IN_TEMPLATE.search(text) for text in texts)


def choose(request: BuildRequest) -> Chosen:
    """Recipe file -> Recipe, options checked; the request's own values checked too. Reads files only."""
    dirs = RecipeDirs.of(request.recipe_dirs, request.environ)
    found = catalog.resolve(request.recipe, dirs)
    recipe = catalog.load(found.path, dirs)
    options = resolve_options(recipe, list(request.settings))
    if request.ref is not None:
        check_ref(request.ref)
    if request.jobs is not None and request.jobs < 1:
        raise UsageError(f"--jobs {request.jobs}: must be 1 or more")
    return Chosen(found, recipe, options, request.need_archs and recipe.output != "tree"
                  and compiles_device_code(recipe, options))


def compiles_device_code(recipe: Recipe, options: dict[str, Any]) -> bool:
    """False where the recipe says its wheels hold no device code of their own (`code-objects: false`) with
    no `when:`, or one its options alone decide (flash-attn's Triton backend): such a build compiles for no
    GPU, so it needs no --arch and no GPU. Any other `when:` waits for the host, and archs are needed."""
    return not any(isinstance(e, CodeObjects) and not e.required and _by_options(e.when, options)
                   for e in recipe.verify)


def _by_options(when: str | None, options: dict[str, Any]) -> bool:
    if when is None:
        return True
    try:  # only `options` is defined here: a condition naming anything else is undefined, so not decided
        said = templating.compile_template(when).render({"options": options})
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, LookupError):
        return False
    return said.strip().lower() in ("true", "1", "yes")


def plan_for(request: BuildRequest) -> Plan:
    """The recipe chosen, the host found for it (the one place a build looks at the machine), the plan."""
    from rocbuild.detect.host import find_host

    chosen = choose(request)
    host = find_host(arch=request.arch, rocm=request.rocm, python=request.python, jobs=request.jobs,
                     environ=request.environ, root=request.root, need_archs=chosen.need_archs,
                     need_torch=chosen.need_torch, memory_per_job=chosen.recipe.requires.memory_per_job,
                     memory=request.memory, confine=request.confine)
    plan = assemble(request, chosen, host)
    if plan.arch_lists:  # the source's own arch lists, where the source already is on this machine
        from rocbuild.plan.archlists import read_arch_lists

        plan = read_arch_lists(plan, refuse=request.refuse)
    return plan


def assemble(request: BuildRequest, chosen: Chosen, host: Host) -> Plan:
    """The chosen recipe on the found host -> Plan. Runs nothing and reads no environment."""
    recipe, options = chosen.recipe, chosen.options
    source_dir = Path(request.source_dir) if request.source_dir else None
    if source_dir is not None and not source_dir.is_dir():
        raise UsageError(f"--source-dir {request.source_dir}: no such folder")
    if request.work:
        work = WorkDirs(Path(request.work).resolve())
    else:
        # Separate folders for what is likely to alternate (two ROCm releases side by side); the
        # build identity decides, inside a folder, what can be reused.
        rocm, python = host.rocm, host.python
        key = short_hash([str(chosen.found.path.resolve()), list(host.archs), str(rocm.path), str(rocm.version),
                          python.executable, request.ref, str(source_dir.resolve()) if source_dir else None, options,
                          *([host.root.label] if host.root else [])])
        work = WorkDirs(cache_root() / "work" / f"{recipe.name}-{recipe.version}-{key}")
    plan = make_plan(recipe, host, options, work, Path(request.out).resolve(), ref=request.ref,
                     source_dir=source_dir, local_version=local_version(request.local_version),
                     build_env=request.build_env, refuse=request.refuse, torch_index=request.torch_index)
    check_separate(plan, "--source-dir" if source_dir is not None else "the recipe's source.path")
    return plan


def check_separate(plan: Plan, source_flag: str) -> None:
    """The work folder (emptied and rewritten), the source folder (only read) and the wheelhouse
    (written) must not contain one another: otherwise a build deletes or copies into user data."""
    folders = [("--work", plan.work.root.resolve()), ("--out", plan.out.resolve())]
    if isinstance(plan.source, DirSource):
        folders.append((source_flag, Path(plan.source.directory).resolve()))
    for i, (name_a, a) in enumerate(folders):
        for name_b, b in folders[i + 1:]:
            if a == b:
                how = "are the same folder"
            elif b in a.parents:
                how = f"overlap: {a} is inside {b}"
            elif a in b.parents:
                how = f"overlap: {b} is inside {a}"
            else:
                continue
            raise UsageError(
                f"{name_a} {a} and {name_b} {b} {how}",
                hint="rocbuild empties and rewrites its work folder, copies the source folder (never changing it) "
                     "and writes wheels into --out: give each its own folder, none inside another")


def local_version(label: str | None) -> str | None:
    if label is None:
        return None
    if label in ("", "none"):
        return ""
    problem = local_label_problem(label)
    if problem is not None:
        shown = label if len(label) <= 80 else label[:77] + "..."
        raise UsageError(f"--local-version {shown!r}: {problem}", hint=f"accepted: {LOCAL_LABEL_ACCEPTED}, or 'none'")
    return label

