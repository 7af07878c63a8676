"""What the terminal shows while a build runs: one line per step with its time."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.quiet = quiet

    def say(self, text: str) -> None:
        if self.quiet:
            return
        try:
            print(text, file=self.stream, flush=True)
        except (BrokenPipeError, ValueError):  # nobody reads the terminal any more; the build goes on
            self.quiet = True

    def start(self, label: str, detail: str = "") -> float:
        self.say(f"==> {label}" + (f"  {detail}" if detail else ""))
        return time.monotonic()

    def done(self, label: str, started: float, note: str = "ok") -> None:
        self.say(f"    {label}: {note} in {time.monotonic() - started:.1f}s")

    def skipped(self, label: str, why: str) -> None:
        self.say(f"==> {label}  (skipped: {why})")
