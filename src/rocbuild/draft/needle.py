"""The text every match of a regular expression holds: a substring test that rules a log line out before the
regex runs. A trap's pattern that opens with `(?P<file>[^\\s:]+):\\d+:` tries every position of a 36,000-line
log; `": note: " in line` costs almost nothing."""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Needled:
    regex: re.Pattern[str]
    needle: str  # "" (in every line) when no literal is certain: a top-level alternation, a pattern ignoring case

    def search(self, line: str) -> re.Match[str] | None:
        return self.regex.search(line) if self.needle in line else None

    def anywhere(self, text: str) -> bool:
        """Whether any line of `text` (lines joined by newlines) can match: with re.M, ^ and $ still meet each
        line's ends, so a pattern that matches a line matches the whole text too."""
        return self.needle in text if self.needle else re.search(self.regex.pattern, text, re.M) is not None


@functools.cache
def needled(pattern: str) -> Needled:
    regex = re.compile(pattern)
    return Needled(regex, "" if regex.flags & re.IGNORECASE else needle(pattern))


def needle(pattern: str) -> str:
    """The longest run of literal characters at the pattern's top level (outside groups, classes, repeats
    and alternations): every match holds it. "" where the parser cannot say."""
    try:  # the standard library's own regex parser; a Python that moves it costs speed, not correctness
        parser, constants = _parser()
        items = list(parser.parse(pattern))
    except (ImportError, AttributeError, re.error):
        return ""
    best = run = ""
    for op, arg in items:
        if op is constants.LITERAL:
            run += chr(arg)
            continue
        best, run = max(best, run, key=len), ""  # an alternation's shared prefix stays: the parser factors it out
    return max(best, run, key=len)


def _parser() -> tuple[Any, Any]:
    """re._parser and re._constants (Python 3.11 and newer), or sre_parse and sre_constants (3.10), which 3.11
    deprecates: the newer names first."""
    try:
        return importlib.import_module("re._parser"), importlib.import_module("re._constants")
    except ImportError:
        return importlib.import_module("sre_parse"), importlib.import_module("sre_constants")
