"""Each shipped recipe's memory estimate per compile job (`requires.memory-per-job`, else the default)
covers the largest peak its real builds measured (real-builds/results.json, the peak resident memory of
the largest process): the job count is chosen from it, so an estimate below a measured peak lets a
many-core machine run out of memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocbuild.detect.jobs import DEFAULT_MEMORY_PER_JOB
from rocbuild.recipe.load import load_recipe

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20


def measured_peaks() -> dict[str, int]:
    """Recipe -> the largest peak (MiB) of its passing real builds."""
    peaks: dict[str, int] = {}
    for record in json.loads((REPO / "real-builds" / "results.json").read_text()):
        if record.get("verdict") == "pass" and record.get("peak_process_mib"):
            peaks[record["recipe"]] = max(peaks.get(record["recipe"], 0), int(record["peak_process_mib"]))
    return peaks


PEAKS = measured_peaks()


def test_the_records_measure_most_recipes() -> None:
    assert len(PEAKS) >= 10 and {"cupy", "causal-conv1d", "horovod", "torch-sparse"} <= PEAKS.keys()


@pytest.mark.parametrize("recipe", sorted(PEAKS))
def test_the_estimate_covers_the_measured_peak(recipe: str) -> None:
    path = REPO / "recipes" / f"{recipe}.yaml"
    estimate = load_recipe(path).requires.memory_per_job or DEFAULT_MEMORY_PER_JOB
    peak = PEAKS[recipe]
    assert estimate >= peak * MIB, (f"{path}: requires.memory-per-job is {estimate // MIB} MiB, but a real build "
                                    f"peaked at {peak} MiB: set it to at least {-(-peak // 512) / 2}GiB")
