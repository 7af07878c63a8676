"""What the terminal shows while a build runs: one line per step with its time, and while a step runs, how
far it is, read from its own output as it arrives (ninja's `[n/m]`, CMake's `[ nn%]`, setuptools'
`building 'NAME' extension`): on a terminal one live line (rich's progress display, redrawn in place and
cleared when the step ends), in CI or a pipe a plain line at fixed intervals. That is written to the
terminal only: never into a log, and never with -v (which streams every line) or --json."""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

NINJA = re.compile(r"^\s*\[(\d+)/(\d+)\]")  # also torch's cpp_extension, which drives ninja
CMAKE = re.compile(r"^\s*\[\s*(\d{1,3})%\]")
EXTENSION = re.compile(r"^\s*building '([\w.]+)' extension")


class Progress:
    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, watch: bool = False):
        """`watch`: a running step shows how far it is (StepWatch below); off with -v and --json."""
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.watching = watch

    def watch(self, label: str, estimate: Callable[[], str] = lambda: "") -> StepWatch | None:
        """How far the step `label` is, while it runs: a live line on a terminal, else a line a minute.
        `estimate` (what the records say) is asked only then."""
        if self.quiet or not self.watching:
            return None
        live = hasattr(self.stream, "isatty") and self.stream.isatty()
        return StepWatch(label, self.stream, live=live, estimate=estimate())

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


INTERVAL = 60.0  # seconds between plain lines where nothing is redrawn in place


@dataclass
class Reading:
    """What the output said last: units done of total (ninja), a percentage (CMake), extensions begun."""

    done: int = 0
    total: int = 0
    percent: int | None = None
    extensions: int = 0
    extension: str = ""

    def feed(self, line: str) -> bool:
        """Take one line of output; whether it said anything new."""
        if m := NINJA.match(line):
            self.done, self.total = int(m.group(1)), int(m.group(2))
        elif m := CMAKE.match(line):
            self.percent = min(100, int(m.group(1)))
        elif m := EXTENSION.match(line):
            self.extensions += 1
            self.extension = m.group(1)
        else:
            return False
        return True

    def text(self) -> str:
        parts = []
        if self.extensions:
            parts.append(f"extension {self.extensions} ({self.extension})")
        if self.total:
            parts.append(f"{self.done}/{self.total} compile units")
        elif self.percent is not None:
            parts.append(f"{self.percent}%")
        return ", ".join(parts) or "running"


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class StepWatch:
    """A stream the step's output is also written to (beside its log); `close()` when the step ends."""

    def __init__(self, label: str, terminal: TextIO, *, live: bool, estimate: str = "",
                 interval: float = INTERVAL, now: Callable[[], float] = time.monotonic):
        self.label, self.terminal, self.estimate, self.now = label, terminal, estimate, now
        self.reading, self.started, self._partial = Reading(), now(), ""
        self._stop = threading.Event()
        self._live = _Live(label, terminal) if live else None
        self._timer = None if live else threading.Thread(target=self._every, args=(interval,), daemon=True)
        if self._timer is not None:
            self._timer.start()

    def write(self, data: str) -> int:
        lines = (self._partial + data).split("\n")
        self._partial = lines.pop()[-4096:]  # a line still arriving (a long compiler command is cut short)
        changed = False
        for line in lines:
            changed |= self.reading.feed(line.rsplit("\r", 1)[-1])  # ninja redraws its status with \r
        if changed and self._live is not None:
            self._live.update(self.reading, self.estimate)
        return len(data)

    def flush(self) -> None:
        pass

    def line(self) -> str:
        """The plain line: how far, for how long, and what the records say such a build takes."""
        said = f"    {self.label}: {self.reading.text()}, {clock(self.now() - self.started)}"
        return said + (f" ({self.estimate})" if self.estimate else "")

    def _every(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                print(self.line(), file=self.terminal, flush=True)
            except (BrokenPipeError, ValueError):
                return

    def close(self) -> None:
        self._stop.set()
        if self._live is not None:
            self._live.stop()


class _Live:
    """The live line on a terminal: rich redraws it about four times a second (the elapsed time goes on
    while a long compile prints nothing) and removes it when the step ends (transient)."""

    def __init__(self, label: str, terminal: TextIO):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("    {task.description}"), BarColumn(bar_width=24),
                                 TextColumn("{task.fields[said]}"), TimeElapsedColumn(),
                                 console=Console(file=terminal), transient=True, refresh_per_second=4)
        self.task = self.progress.add_task(label, total=None, said="running")
        self.progress.start()

    def update(self, reading: Reading, estimate: str) -> None:
        total = reading.total or (100 if reading.percent is not None else None)
        done = reading.done if reading.total else (reading.percent or 0)
        said = reading.text() + (f" ({estimate})" if estimate else "")
        self.progress.update(self.task, total=total, completed=done, said=said)

    def stop(self) -> None:
        self.progress.stop()
