"""A step that would run the machine out of memory is slowed down, not killed.

While a step runs, its process group is looked at about once a second. When the memory left (the
system's MemAvailable, or what a --memory budget leaves beside the group's resident memory, whichever
is less) falls under FLOOR, the group's newest process that has none of its own (a compiler, not the
make, ninja or pip driving it) is stopped with SIGSTOP. When there is room for a job again, the earliest
stopped one goes on (SIGCONT). One process of the group always runs, so at worst the build goes on one
compile at a time; a stopped compiler keeps its memory but grows no more, and the running ones finish
and free theirs. Nothing is killed, and every stopped process is continued before the step ends."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MIB = 1 << 20
FLOOR = 512 * MIB
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Member:
    pid: int
    parent: int
    started: int  # clock ticks after boot
    rss: int  # bytes
    stopped: bool


def members(group: int) -> list[Member]:
    """The live processes of process group `group`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/statm", encoding="ascii") as fh:
                rss = int(fh.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(Member(int(entry), int(fields[1]), int(fields[19]), rss, fields[0] == "T"))
    return found


def system_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@dataclass
class Governor:
    """Keeps one step's process group within memory (see the module's docstring)."""

    budget: int | None  # --memory, bytes
    room: int  # what one more job needs: a stopped process goes on when this much is left above FLOOR
    say: Callable[[str], None]
    available: Callable[[], int | None] = system_available
    stopped: list[int] = field(default_factory=list)
    last: float = 0.0

    def tick(self, group: int) -> None:
        """Looked at about once a second; watching memory never stops a step (an error here is ignored)."""
        now = time.monotonic()
        if now - self.last < 1.0:
            return
        self.last = now
        try:
            self._tick(group)
        except Exception:  # noqa: BLE001 (a process that vanished mid-read, an odd /proc entry)
            pass

    def _tick(self, group: int) -> None:
        system = self.available()
        if self.budget is None and not self.stopped and system is not None and system > 2 * FLOOR + self.room:
            return  # plenty left and nothing paused: the group's processes need not be read
        procs = members(group)
        self.stopped = [pid for pid in self.stopped if any(m.pid == pid for m in procs)]
        left = self._left(procs)
        if left is None:
            return
        running = [m for m in procs if not m.stopped]
        leaves = [m for m in running if not any(c.parent == m.pid for c in procs) and m.pid != group]
        if left < FLOOR and len(leaves) > 1:
            newest = max(leaves, key=lambda m: (m.started, m.pid))
            self._signal(newest.pid, signal.SIGSTOP)
            self.stopped.append(newest.pid)
            self.say(f"memory: {left // MIB} MiB left: paused pid {newest.pid} until a job's memory is free")
        elif self.stopped and (left > FLOOR + self.room or not leaves):
            pid = self.stopped.pop(0)
            self._signal(pid, signal.SIGCONT)
            self.say(f"memory: {left // MIB} MiB left: pid {pid} goes on")

    def release(self) -> None:
        """Every process this stopped goes on (the step ended, or was interrupted)."""
        for pid in self.stopped:
            self._signal(pid, signal.SIGCONT)
        self.stopped.clear()

    def _left(self, procs: list[Member]) -> int | None:
        system = self.available()
        budget = self.budget - sum(m.rss for m in procs) if self.budget is not None else None
        known = [x for x in (system, budget) if x is not None]
        return min(known) if known else None

    @staticmethod
    def _signal(pid: int, sig: int) -> None:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
