"""How many compile jobs a build runs: the cores, the memory available now (or a budget given), and what
one compile job of the recipe takes (its `requires.memory-per-job`, measured from real builds, else a
default). A machine that runs out of memory kills a compiler and loses the build; one job too few only
makes it slower."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

GIB = 1 << 30
MIB = 1 << 20
# HIP device compilation of real extensions peaks around 2 GiB per compiler process (the real-build
# records: causal-conv1d 1.9 GB, mamba-ssm 1.6 GB for one target).
DEFAULT_MEMORY_PER_JOB = 2 * GIB
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(GiB|G|GB|MiB|M|MB)\s*$", re.IGNORECASE)
SIZE_ACCEPTED = "a size such as 9GiB, 2.5 GiB or 900MiB"


def parse_size(text: str) -> int | None:
    """Bytes of '9GiB', '2.5 GiB', '900MiB' (G and M are binary too); None when it is no size."""
    m = SIZE_RE.match(text)
    if m is None:
        return None
    unit = GIB if m.group(2).upper().startswith("G") else MIB
    return int(float(m.group(1)) * unit)


def show_size(size: int) -> str:
    return f"{size / GIB:.1f} GiB"


@dataclass(frozen=True)
class Jobs:
    count: int
    why: str  # what decided it, for plan


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def available_memory(meminfo: str | None = None) -> int | None:
    """MemAvailable of /proc/meminfo (what can be used without swapping), in bytes; None where unknown."""
    if meminfo is None:
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                meminfo = fh.read()
        except OSError:
            return None
    m = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.MULTILINE)
    return int(m.group(1)) * 1024 if m else None


def choose_jobs(*, asked: int | None, per_job: int | None, available: int | None, budget: int | None,
                cpus: int) -> Jobs:
    """--jobs wins; otherwise one job per core, fewer where memory (available now, or the budget when
    smaller) holds fewer jobs of `per_job` (the recipe's estimate, else DEFAULT_MEMORY_PER_JOB)."""
    if asked is not None:
        return Jobs(asked, f"--jobs {asked}")
    each = per_job or DEFAULT_MEMORY_PER_JOB
    estimate = f"{show_size(each)} per job {'by the recipe' if per_job else 'by default'}"
    memory = min(m for m in (available, budget) if m is not None) if (available or budget) else None
    if memory is None:
        return Jobs(cpus, f"{cpus} cores; memory unknown")
    fits = max(1, memory // each)
    where = f"--memory {show_size(budget)}" if budget is not None and memory == budget else \
        f"{show_size(memory)} available"
    if fits >= cpus:
        return Jobs(cpus, f"{cpus} cores; {where}, {estimate}")
    return Jobs(int(fits), f"{where} holds {fits} of {cpus} cores' jobs; {estimate}")
