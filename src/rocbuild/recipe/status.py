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
    """The last real result of `name` for each ROCm release and arch set: verdict, date, rocbuild
    version, build time and peak memory, the options set, and the step it stopped at (if any)."""
    latest: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for record in records:
        if record.get("recipe") != name:
            continue
        archs = record.get("archs")
        # A build in a root made from an image is its own row (its ROCm reads X.Y.Z, from the image).
        key = (_text(record, "rocm"), tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else ())
        if key not in latest or _text(record, "date") >= _text(latest[key], "date"):
            latest[key] = record
    builds = []
    for (rocm, archs_key), r in sorted(latest.items(), key=lambda item: (item[0][0], len(item[0][1]), item[0][1])):
        sets = r.get("sets")
        builds.append({"rocm": rocm, "verdict": _text(r, "verdict"), "archs": list(archs_key),
                       "date": _text(r, "date"), "rocbuild": _text(r, "rocbuild_version"),
                       "suite": r.get("suite"), "build_seconds": r.get("build_seconds"),
                       "peak_process_mib": r.get("peak_process_mib"),
                       "options": [x for x in sets if isinstance(x, str)] if isinstance(sets, list) else [],
                       "until": r.get("until") if isinstance(r.get("until"), str) else None,
                       "torch": r.get("torch") if isinstance(r.get("torch"), str) else None,
                       "image": r.get("image") if isinstance(r.get("image"), str) else None,
                       "pythons": r.get("pythons") if isinstance(r.get("pythons"), str) else None,
                       "why": r.get("why") if r.get("verdict") != "pass" else None})
    return {"recipe": name, "built_for_real": bool(builds), "builds": builds}


def status_lines(row: dict[str, Any]) -> list[str]:
    if not row["built_for_real"]:
        return [f"{row['recipe']:<20} never built for real (make real-builds)"]
    lines = []
    for b in row["builds"]:
        if b["verdict"] != "pass":
            what = f"FAILED ({b['why']})"
        elif b["until"]:
            what = f"built up to step {b['until']!r}, device code verified"
        else:
            what = "verified"
        if b["torch"]:  # against a build-only torch: compiled and checked, never imported
            what += " against a build-only torch, not imported"
        if b["image"]:
            what += f" in a root from image {b['image']}" + (f" for python {b['pythons']}" if b["pythons"] else "")
        extra = f" [{', '.join(b['options'])}]" if b["options"] else ""
        took = f", {b['build_seconds']:.0f} s" if isinstance(b["build_seconds"], (int, float)) else ""
        lines.append(f"{row['recipe']:<20} ROCm {b['rocm']:<5} {','.join(b['archs']):<26} {what}{extra}, "
                     f"{b['date'][:10]}{took}, rocbuild {b['rocbuild']}")
    return lines
