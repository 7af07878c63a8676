"""`--try`: build a recipe, and on a failed step or check, apply the fix of the known trap the failure
report names, write it into the recipe, and build again; until it verifies, nothing in the catalogue
matches, or the tries or the time run out.

Each try plans the recipe file afresh (its commands are that plan's), and the engine resumes what is still
valid: finished steps whose inputs the fix did not change, the build cache, ccache. An expectation is never
changed here: only the drafter does that, from the build files, so a CPU-only build is never relabelled.
The recipe file always holds the latest draft, so Ctrl-C keeps it."""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Literal

from rocbuild.draft.edit import apply_fix
from rocbuild.draft.fixes import Expect
from rocbuild.draft.report import Report
from rocbuild.draft.traps import Hit
from rocbuild.engine.engine import BuildResult
from rocbuild.errors import RecipeError, StepFailed
from rocbuild.fsutil import write_text_atomically
from rocbuild.plan.model import Plan
from rocbuild.recipe.load import load_recipe_text

Status = Literal["verified", "no-trap", "exhausted", "time-limit"]
VERIFIED_MARK = "# Verified by rocbuild --try"
EXIT = {"verified": 0, "no-trap": 4, "exhausted": 5, "time-limit": 5}


@dataclass(frozen=True)
class Attempt:
    number: int
    outcome: Literal["verified", "failed"]
    seconds: float
    failure: str | None = None  # what failed (the error's first line)
    trap: str | None = None  # the trap whose fix was applied after it
    fix: str | None = None
    evidence: str | None = None
    commands: int = 0  # how many commands its plan holds (steps and checks)

    def to_json(self) -> dict[str, object]:
        return {"try": self.number, "outcome": self.outcome, "seconds": round(self.seconds, 1),
                "failure": self.failure, "trap": self.trap, "fix": self.fix, "evidence": self.evidence}


@dataclass
class Outcome:
    status: Status
    attempts: list[Attempt] = field(default_factory=list)
    report: list[str] = field(default_factory=list)  # the last failure's report, as the user reads it
    wheels: tuple[Path, ...] = ()
    diff: list[str] = field(default_factory=list)  # the recipe against what it started from
    by_hand: list[str] = field(default_factory=list)  # traps the last failure shows that have no fix to write

    @property
    def exit_code(self) -> int:
        return EXIT[self.status]

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "exit_code": self.exit_code, "tries": [a.to_json() for a in self.attempts],
                "by_hand": self.by_hand,
                "wheels": [str(w) for w in self.wheels], "report": self.report, "diff": "".join(self.diff)}


@dataclass(frozen=True)
class Limits:
    max_tries: int = 6
    seconds: float | None = None  # stop starting new tries after this long


Build = Callable[[int], tuple[Plan, BuildResult]]  # one try: plan the recipe file as it is now, build it


def try_recipe(path: Path, build: Build, limits: Limits, say: Callable[[str], None]) -> Outcome:
    """Build `path` until it verifies, applying the catalogue's fixes to it between tries."""
    started_text = path.read_text()
    text, outcome, began = started_text, Outcome("exhausted"), time.monotonic()
    for number in range(1, limits.max_tries + 1):
        if limits.seconds is not None and time.monotonic() - began > limits.seconds and number > 1:
            outcome.status = "time-limit"
            break
        say(f"try {number} of at most {limits.max_tries}: {path}")
        t0 = time.monotonic()
        try:
            plan, result = build(number)
        except StepFailed as exc:
            text, attempt, stop = _after_failure(path, text, exc, number, time.monotonic() - t0, say)
            outcome.attempts.append(attempt)
            outcome.report = exc.render().splitlines()
            outcome.by_hand = [h.trap.id for h in hits_of(exc) if h.fix is None]
            if stop:
                outcome.status = "no-trap"
                break
            continue
        outcome.attempts.append(Attempt(number, "verified", time.monotonic() - t0, commands=len(plan.steps)))
        text = verified_header(text, plan, number)
        write_text_atomically(path, text)
        outcome.status, outcome.wheels, outcome.report = "verified", result.wheels, []
        break
    outcome.diff = list(difflib.unified_diff(started_text.splitlines(keepends=True), text.splitlines(keepends=True),
                                             f"{path.name} (as it started)", f"{path.name} (now)"))
    return outcome


def _after_failure(path: Path, text: str, exc: StepFailed, number: int, seconds: float,
                   say: Callable[[str], None]) -> tuple[str, Attempt, bool]:
    """The next text and this try's record; True when nothing in the catalogue gives a new fix."""
    failure = exc.message.splitlines()[0]
    for hit in hits_of(exc):
        new = _applied(path, text, hit)
        if new is not None:
            assert hit.fix is not None
            write_text_atomically(path, new)
            say(f"try {number} failed: {failure}")
            say(f"  trap {hit.trap.id} ({hit.evidence.where}): {hit.fix.describe()}; written into {path.name}")
            return new, Attempt(number, "failed", seconds, failure, hit.trap.id, hit.fix.describe(),
                                f"{hit.evidence.where}: {hit.evidence.text}"), False
    return text, Attempt(number, "failed", seconds, failure), True


def _applied(path: Path, text: str, hit: Hit) -> str | None:
    """The recipe with the hit's fix written in; None when it has none, gives nothing new, is an
    expectation (never changed to silence a failure), or would make the recipe invalid."""
    if hit.fix is None or isinstance(hit.fix, Expect):
        return None
    new = apply_fix(text, hit.fix, f"trap {hit.trap.id} ({hit.evidence.where}): {hit.evidence.text[:150]}")
    if new == text:
        return None
    try:
        load_recipe_text(new, path)
    except RecipeError:
        return None
    return new


def hits_of(exc: StepFailed) -> list[Hit]:
    """The traps a failure's report names: a failed step's (or command check's) Report, or the hits a failed
    device-code check found."""
    report = exc.report
    if isinstance(report, Report):
        return report.hits
    if isinstance(report, list):
        return [h for h in report if isinstance(h, Hit)]
    return []


def verified_header(text: str, plan: Plan, tries: int) -> str:
    """The recipe with a line saying what it verified on, after its modeline (an older such line goes)."""
    torch = plan.host.torch
    line = (f"{VERIFIED_MARK} on {date.today().isoformat()}: ROCm {plan.host.rocm.version or '?'}"
            f"{f', torch {torch.version}' if torch is not None else ''}, archs {', '.join(plan.host.archs)}"
            f" (try {tries})")
    lines = [entry for entry in text.splitlines() if not entry.startswith(VERIFIED_MARK)]
    at = 1 if lines and lines[0].startswith("# yaml-language-server") else 0
    return "\n".join([*lines[:at], line, *lines[at:]]) + "\n"
