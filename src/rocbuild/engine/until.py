"""What `--until` may name, and the steps a recipe refuses for the chosen options: checked alike by `plan`
and `build`, so `plan` needs this much of the engine and no more."""

from __future__ import annotations

from rocbuild.errors import UsageError
from rocbuild.plan.model import Plan


def check_until(plan: Plan, until: str | None) -> None:
    """--until names `prepare` or one of the plan's steps (as `plan` and `build` both check), and
    stops before any step the recipe refuses for these options (`unsupported: ... step:`)."""
    names = ["prepare"] + [s.name for s in plan.steps]
    if until is not None and until not in names:
        raise UsageError(f"--until {until!r}: no such step in {plan.recipe.name}", hint="steps: " + ", ".join(names))
    # A combination the recipe refuses from one step on: allowed only when the build stops before it.
    last = len(names) if until is None else names.index(until)
    for step, refusal in plan.refusals:
        if step == "" or (step in names and names.index(step) <= last):
            raise refusal
