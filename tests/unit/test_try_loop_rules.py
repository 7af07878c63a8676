"""The --try loop's rules, with a build that fails as told (no process): an expectation is never changed to
silence a failure, a fix already in the recipe is not a new one, and the recipe always holds the latest draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocbuild.attempt.loop import Limits, try_recipe
from rocbuild.draft.fixes import Expect, SetEnv
from rocbuild.draft.traps import BY_ID, Evidence, Hit
from rocbuild.errors import StepFailed

RECIPE = 'schema: 1\nname: x\nversion: "1"\nsource:\n  path: .\nsteps:\n  - wheel: {}\n'


def failing(*hits: Hit):
    def build(number: int):
        raise StepFailed(f"verify device-code: try {number} found host code only", report=list(hits))
    return build


def hit(trap: str, fix) -> Hit:
    evidence = Evidence("finding cpu_only", "x.whl: has no HIP device code")
    return Hit(BY_ID[trap], evidence, evidence, fix)


def test_an_expectation_is_never_applied_to_silence_a_failed_check(tmp_path):
    recipe = tmp_path / "x.yaml"
    recipe.write_text(RECIPE)
    outcome = try_recipe(recipe, failing(hit("kernels-at-run-time", Expect("jit"))), Limits(3), lambda _: None)
    assert outcome.status == "no-trap" and outcome.exit_code == 4
    assert recipe.read_text() == RECIPE and len(outcome.attempts) == 1


def test_a_fix_already_written_is_not_tried_twice(tmp_path):
    recipe = tmp_path / "x.yaml"
    recipe.write_text(RECIPE)
    outcome = try_recipe(recipe, failing(hit("force-variable-unset", SetEnv("FORCE_CUDA", "1"))), Limits(5),
                         lambda _: None)
    assert [a.trap for a in outcome.attempts] == ["force-variable-unset", None]
    assert outcome.status == "no-trap" and "FORCE_CUDA: '1'" in recipe.read_text()
    assert any(line.startswith("+      FORCE_CUDA: '1'") for line in outcome.diff)


def test_ctrl_c_keeps_the_latest_draft(tmp_path):
    recipe = tmp_path / "x.yaml"
    recipe.write_text(RECIPE)
    calls = []

    def build(number: int):
        calls.append(number)
        if number == 2:
            raise KeyboardInterrupt
        return failing(hit("force-variable-unset", SetEnv("FORCE_CUDA", "1")))(number)

    with pytest.raises(KeyboardInterrupt):
        try_recipe(recipe, build, Limits(5), lambda _: None)
    assert calls == [1, 2] and "FORCE_CUDA: '1'" in Path(recipe).read_text()
