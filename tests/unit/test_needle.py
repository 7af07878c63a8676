"""The literal prefilter that rules log lines out before a trap's regex runs: it must never rule out a line
the regex matches (checked on every trap's patterns against the real failure logs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rocbuild.draft.needle import needle, needled
from rocbuild.draft.traps import TRAPS

LOGS = Path(__file__).resolve().parents[1] / "data" / "failure-logs"


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"(?P<file>[^\s:]+):\d+:\d+: note: .{1,80} is defined", " is defined"),
    (r"foo\.bar(?:x|y)", "foo.bar"),
    (r"abc|abd", "ab"),  # the parser factors an alternation's shared prefix out: it is in every match
    (r"(?:ab)?cd", "cd"),  # what a repeat holds is not certain
    (r"x|y", ""),
])
def test_needle_is_the_longest_certain_literal(pattern: str, expected: str) -> None:
    assert needle(pattern) == expected


def test_a_pattern_that_ignores_case_gets_no_needle() -> None:
    assert needle(r"(?i)undefined reference") == "undefined reference"
    assert needled(r"(?i)undefined reference").needle == ""  # "Undefined Reference" holds no such substring
    assert needled(r"(?i)undefined reference").search("Undefined Reference to x")


def test_prefilter_keeps_every_line_a_trap_matches() -> None:
    matched = 0
    for log in sorted(LOGS.glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()
        whole = "\n".join(lines)
        for pattern in {p for trap in TRAPS for p in trap.log}:
            hits = [line for line in lines if re.search(pattern, line)]
            prefiltered = needled(pattern)
            assert [line for line in lines if prefiltered.search(line)] == hits, (log.name, pattern)
            assert prefiltered.anywhere(whole) or not hits, (log.name, pattern)
            matched += bool(hits)
    assert matched > len(list(LOGS.glob("*.log")))  # the logs do exercise the patterns
