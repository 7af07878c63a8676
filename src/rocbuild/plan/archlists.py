"""`unsupported: - archs-not-in: {file, set}`: an arch allow-list the source keeps itself (vLLM's
HIP_SUPPORTED_ARCHS in its CMakeLists.txt), read from the source and held against the archs asked for
before any step runs: by `plan` wherever the source already is on this machine (source/peek.py), and by
the build once the source is fetched. Such a package drops an arch it does not list without a word, and
fails only when none is left; a copy of the list in the recipe falls behind the next release."""

from __future__ import annotations

import re
from dataclasses import replace

from rocbuild.errors import RecipeError
from rocbuild.plan.model import ArchListCheck, Plan
from rocbuild.source.peek import Peeked, peek


def set_values(text: str, variable: str) -> tuple[int, tuple[str, ...]] | None:
    """What `set(VARIABLE "a;b;c")` lists: the line of the first such set(), and the values of all of them
    (a list set in several branches: any branch's values are taken), or None when the file sets none."""
    pattern = re.compile(r'^[ \t]*set\s*\(\s*' + re.escape(variable) + r'\s+"([^"]*)"', re.M | re.I)
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    values = dict.fromkeys(v for m in matches for v in re.split(r"[;\s]+", m.group(1)) if v)
    return text.count("\n", 0, matches[0].start()) + 1, tuple(values)


def read_arch_lists(plan: Plan, *, rev: str | None = None, refuse: bool = True) -> Plan:
    """The plan with each list its source has on this machine now filled in (source/peek.py; `rev`: the commit
    a git source resolved to); an arch asked for that a list lacks is refused (RecipeError, unless not
    `refuse`), and so is a list the file no longer sets."""
    checks = []
    for check in plan.arch_lists:
        peeked = peek(plan.source, check.file, rev)
        if peeked is None:  # the source is not on this machine yet: read once it is fetched
            checks.append(check)
            continue
        found = set_values(peeked.text, check.variable) if peeked.text is not None else None
        if found is None:
            raise _stale(plan, check, peeked)
        checked = replace(check, line=found[0], listed=found[1], read_from=peeked.where)
        if refuse and (rejected := rejected_archs(plan.host.archs, checked)):
            raise _refusal(plan, checked, rejected)
        checks.append(checked)
    return replace(plan, arch_lists=tuple(checks))


def rejected_archs(archs: tuple[str, ...], check: ArchListCheck) -> list[str]:
    """The archs asked for (a feature suffix such as :xnack- aside) that the list lacks."""
    return [a for a in archs if check.listed is not None and a.split(":")[0] not in check.listed]


def _refusal(plan: Plan, check: ArchListCheck, rejected: list[str]) -> RecipeError:
    r = plan.recipe
    listed = ", ".join(check.listed or ())
    return RecipeError(f"{r.name} {r.version} cannot be built for {', '.join(rejected)}: {check.file}:{check.line} "
                       f"sets {check.variable} to {listed} ({check.read_from}); {check.why}",
                       file=check.pos.file, line=check.pos.line, column=check.pos.column,
                       key=f"{check.pos.key}.archs-not-in", value=",".join(plan.host.archs),
                       accepted=f"--arch with archs it lists: {listed}")


def _stale(plan: Plan, check: ArchListCheck, peeked: Peeked) -> RecipeError:
    what = (f"sets no {check.variable} (set({check.variable} \"gfx...\"))" if peeked.text is not None
            else "has no such file")
    return RecipeError(f"{check.file} of {plan.recipe.name} {plan.recipe.version} ({peeked.where}) {what}: the "
                       "recipe's arch list no longer matches its source",
                       file=check.pos.file, line=check.pos.line, column=check.pos.column,
                       key=f"{check.pos.key}.archs-not-in", value=f"{check.file}: {check.variable}",
                       accepted="the file and CMake variable that hold the source's arch list now, or a `when:` "
                                "entry in its place")
