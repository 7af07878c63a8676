"""From built wheels to the wheelhouse: relabel with provenance, then place verified wheels atomically."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocbuild import __version__
from rocbuild.fsutil import copy_atomically, file_sha256
from rocbuild.identity import BuildIdentity
from rocbuild.plan import Plan
from rocbuild.wheels import rewrite_wheel, update_manifest

if TYPE_CHECKING:
    from rocbuild.verify.check import Verdict

PROVENANCE_SCHEMA = 2


def provenance(plan: Plan, identity: BuildIdentity, wheel: Path) -> dict[str, Any]:
    """What a wheel says about how it was made: its build identity, and when and from which file."""
    return {
        "schema": PROVENANCE_SCHEMA,
        "rocbuild": __version__,
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "build_key": identity.key(),
        "recipe_path": str(plan.recipe.path),
        "identity": identity.to_json(),
        "wheel": {"built_as": wheel.name, "local_version": plan.local_label or None},
    }


def finalize(plan: Plan, identity: BuildIdentity, wheels: list[Path]) -> dict[Path, dict[str, Any]]:
    """Each wheel relabelled (+rocmX.Y) with its provenance, in work/final; the originals stay."""
    final = plan.work.final
    shutil.rmtree(final, ignore_errors=True)
    out = {}
    for wheel in wheels:
        record = provenance(plan, identity, wheel)
        out[rewrite_wheel(wheel, final, plan.local_label, record)] = record
    return out


def publish(out_dir: Path, wheels: dict[Path, dict[str, Any]], verdict: Verdict | None, key: str | None,
            from_cache: bool) -> list[Path]:
    """Copy verified wheels into the wheelhouse (never visible half-written) and record them in its manifest."""
    if not wheels:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    placed, entries = [], {}
    for wheel, record in wheels.items():
        placed.append(copy_atomically(wheel, out_dir / wheel.name))
        entries[wheel.name] = {"sha256": file_sha256(wheel), "size": wheel.stat().st_size,
                               "provenance": record, "verify": _summary(verdict, wheel),
                               "build_cache": {"key": key, "hit": from_cache} if key else None}
    update_manifest(out_dir, entries)
    return placed


def _summary(verdict: Verdict | None, wheel: Path) -> dict[str, Any] | None:
    if verdict is None:
        return None
    for found in verdict.inputs:
        if Path(found.path) == wheel:
            files = [{"path": f.path, "targets": f.targets, "rocm": f.info.rocm}
                     for f in found.files if f.info.bundles or f.info.rocm]
            return {"archs": verdict.archs, "files": files}
    return None
