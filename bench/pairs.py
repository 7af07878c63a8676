"""Figures from interleaved pairs of runs (rocbuild, and the same commands without it).

Runs of the same compile differ by ~5% on a small VM, and the machine drifts over minutes (page cache,
other load, clock). Each pair runs back to back, the order alternating from pair to pair, so a pair's
ratio cancels the drift; the figure is the median of those ratios. The ratio of the two medians is
kept beside it: the medians come from different pairs and carry the drift."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any


def interleaved(pairs: int, ours: Callable[[int], float], theirs: Callable[[int], float]) -> tuple[list[float], list[float]]:
    """`pairs` runs of each, pair i running `theirs` first when i is even and `ours` first when odd."""
    ours_runs, theirs_runs = [], []
    for i in range(pairs):
        if i % 2 == 0:
            theirs_runs.append(theirs(i))
            ours_runs.append(ours(i))
        else:
            ours_runs.append(ours(i))
            theirs_runs.append(theirs(i))
    return ours_runs, theirs_runs


def pair_figures(ours: list[float], theirs: list[float], digits: int = 3) -> dict[str, Any]:
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
    return {"ratio": round(statistics.median(ratios), digits + 1), "pair_ratios": [round(r, 4) for r in ratios],
            "ratio_of_medians": round(ours_s / theirs_s, digits + 1), "median_s": round(ours_s, digits),
            "other_median_s": round(theirs_s, digits), "runs_s": [round(x, digits) for x in ours],
            "other_runs_s": [round(x, digits) for x in theirs]}
