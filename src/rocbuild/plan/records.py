"""What the real-build records say a recipe's build takes (the results file rocbuild ships, as `rocbuild
recipes status` reads it: real builds in real ROCm roots, on 2-core machines, recorded by
scripts/real-builds.py): shown by `plan` before a long build starts, and beside a running step.
`ROCBUILD_RECORDS=FILE` reads another file, `ROCBUILD_RECORDS=` (empty) none."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rocbuild.recipe.status import shipped_results


@dataclass(frozen=True)
class Record:
    recipe: str
    archs: tuple[str, ...]
    rocm: str
    seconds: float
    peak_mib: int | None  # the largest process's resident memory
    disk_mib: int | None  # the work folder when the build ended
    date: str
    sets: tuple[str, ...]

    def describe(self) -> str:
        said = [f"{_duration(self.seconds)} for {','.join(self.archs) or 'no GPU target'} with ROCm {self.rocm}"]
        if self.peak_mib:
            said.append(f"peak {self.peak_mib / 1024:.1f} GiB in one process")
        if self.disk_mib:
            said.append(f"{self.disk_mib / 1024:.1f} GiB on disk")
        options = f" [{', '.join(self.sets)}]" if self.sets else ""
        return f"{', '.join(said)}{options} ({self.date[:10]}, 2 cores)"


def records_file(environ: Mapping[str, str]) -> Path | None:
    """`environ`: the environment rocbuild was started with, read once at the edge (Host.environ)."""
    named = environ.get("ROCBUILD_RECORDS")
    if named is not None:
        return Path(named) if named else None
    shipped = shipped_results()
    return shipped if shipped.is_file() else None


def passed(recipe: str, path: Path | None) -> list[Record]:
    """The records of `recipe`'s builds that verified, newest first."""
    try:
        rows = json.loads(path.read_text()) if path is not None else []
    except (OSError, ValueError):
        return []
    out = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("recipe") != recipe or row.get("verdict") != "pass":
            continue
        try:
            out.append(Record(recipe, tuple(row.get("archs") or ()), str(row.get("rocm", "")),
                              float(row["build_seconds"]), _int(row.get("peak_process_mib")),
                              _int(row.get("disk_mib")), str(row.get("date", "")), tuple(row.get("sets") or ())))
        except (KeyError, TypeError, ValueError):
            continue
    return sorted(out, key=lambda r: r.date, reverse=True)


def nearest(recipe: str, archs: tuple[str, ...], options: Mapping[str, object], path: Path | None) -> Record | None:
    """Of the records whose options (`--set`) the build has too, the one of the same archs if there is one,
    else of the fewest archs; the newest of those."""
    said = {f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in options.items()}
    found = [r for r in passed(recipe, path) if set(r.sets) <= said]
    most = max((len(r.sets) for r in found), default=0)  # the records of the most options the build shares
    found = [r for r in found if len(r.sets) == most]
    same = [r for r in found if set(r.archs) == set(archs)]
    ranked = same or sorted(found, key=lambda r: len(r.archs))
    return ranked[0] if ranked else None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{seconds:.0f} s" if minutes < 2 else f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
