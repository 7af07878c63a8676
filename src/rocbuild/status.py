"""`rocbuild recipes status`: what each recipe was last built and verified with for real, from the
real-ROCm lane's results file (scripts/real-builds.py writes it; the package ships this repository's)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rocbuild.errors import UsageError
from rocbuild.recipe.files import data_dir

RESULTS_FILE = "results.json"


def shipped_results() -> Path:
    return data_dir("real-builds") / RESULTS_FILE


def read_results(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"--results {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"--results {path}: not a results file ({exc})",
                         hint="scripts/real-builds.py (make real-builds) writes one") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise UsageError(f"--results {path}: not a list of build records",
                         hint="scripts/real-builds.py (make real-builds) writes one")
    return data


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    return value if isinstance(value, str) else "?"


def recipe_status(name: str, records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The last real result of `name` for each ROCm release: verdict, archs, date, rocbuild version."""
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.get("recipe") != name:
            continue
        rocm = _text(record, "rocm")
        if rocm not in latest or _text(record, "date") >= _text(latest[rocm], "date"):
            latest[rocm] = record
    builds = []
    for rocm in sorted(latest):
        r = latest[rocm]
        archs = r.get("archs")
        builds.append({"rocm": rocm, "verdict": _text(r, "verdict"),
                       "archs": [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else [],
                       "date": _text(r, "date"), "rocbuild": _text(r, "rocbuild_version"),
                       "suite": r.get("suite"), "build_seconds": r.get("build_seconds"),
                       "why": r.get("why") if r.get("verdict") != "pass" else None})
    return {"recipe": name, "built_for_real": bool(builds), "builds": builds}


def status_lines(row: dict[str, Any]) -> list[str]:
    if not row["built_for_real"]:
        return [f"{row['recipe']:<20} never built for real (make real-builds)"]
    lines = []
    for b in row["builds"]:
        what = "verified" if b["verdict"] == "pass" else f"FAILED ({b['why']})"
        lines.append(f"{row['recipe']:<20} ROCm {b['rocm']:<5} {','.join(b['archs']):<26} {what}, "
                     f"{b['date'][:10]}, rocbuild {b['rocbuild']}")
    return lines
