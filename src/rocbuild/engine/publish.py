"""From built wheels to the wheelhouse: relabel with provenance, then place verified wheels atomically."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocbuild import __version__
from rocbuild.engine.identity import BuildIdentity
from rocbuild.errors import StepFailed
from rocbuild.fsutil import PART_SUFFIX, copier, exclusive, file_sha256, stage
from rocbuild.plan.model import Plan

if TYPE_CHECKING:
    from rocbuild.verify.verdict import Verdict

PROVENANCE_SCHEMA = 2
MANIFEST = "rocbuild-manifest.json"


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
        **({"run_env": plan.run_env} if plan.run_env else {}),
    }


def finalize(plan: Plan, identity: BuildIdentity, wheels: list[Path]) -> dict[Path, dict[str, Any]]:
    """Each wheel relabelled (+rocmX.Y) with its provenance, in work/final; the originals stay."""
    from rocbuild.engine.relabel import rewrite_wheel  # packaging's wheel tags: a cached build never relabels

    final = plan.work.final
    shutil.rmtree(final, ignore_errors=True)
    out = {}
    for wheel in wheels:
        record = provenance(plan, identity, wheel)
        relative = str(plan.work.root) if plan.recipe.runpath == "relative" else None
        torch = identity.python.torch  # recorded for recipes built against torch: their wheels pin its series
        out[rewrite_wheel(wheel, final, plan.local_label, record, relative,
                          torch=torch.get("version") if torch else None)] = record
    return out


@contextmanager
def wheelhouse_lock(folder: Path) -> Iterator[None]:
    """Every rocbuild writing into a wheelhouse holds this while it does."""
    with exclusive(folder / f".{MANIFEST}.lock"):
        yield


def publish(out_dir: Path, wheels: dict[Path, dict[str, Any]], verdict: Verdict | None, key: str | None,
            from_cache: bool) -> list[Path]:
    """Place verified wheels in the wheelhouse together with their manifest entries, or nothing at all.

    Every wheel and the new manifest are written in full as `.part` files first; only when all of
    them are written are they renamed into place (renaming needs no space). A full disk therefore
    places nothing, and a `.part` left by a writer that was killed is swept by the next one."""
    if not wheels:
        return []
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with wheelhouse_lock(out_dir):
            for stale in out_dir.glob(f".*{PART_SUFFIX}"):  # writers hold the lock: these writers are gone
                stale.unlink(missing_ok=True)
            staged: list[tuple[Path, Path]] = []
            try:
                entries = {}
                for wheel, record in wheels.items():
                    staged.append((stage(out_dir / wheel.name, copier(wheel)), out_dir / wheel.name))
                    entries[wheel.name] = {"sha256": file_sha256(wheel), "size": wheel.stat().st_size,
                                           "provenance": record, "verify": _summary(verdict, wheel),
                                           "build_cache": {"key": key, "hit": from_cache} if key else None}
                text = manifest_text(out_dir, entries)
                staged.append((stage(out_dir / MANIFEST, lambda fh: fh.write(text.encode())), out_dir / MANIFEST))
            except BaseException:
                for part, _ in staged:
                    part.unlink(missing_ok=True)
                raise
            for part, dest in staged:
                os.replace(part, dest)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise StepFailed(f"cannot write the wheels into --out {out_dir}: {exc.strerror or exc}{where}",
                         hint="nothing was placed there. Free space (or fix the folder), then run the same "
                              "command again: the build is not repeated, only verified and placed") from None
    return [out_dir / wheel.name for wheel in wheels]


def manifest_text(wheelhouse: Path, entries: dict[str, dict[str, Any]]) -> str:
    """The wheelhouse manifest with `entries` (about to be placed) merged in by wheel file name; entries
    of wheels no longer there are dropped."""
    try:
        data = json.loads((wheelhouse / MANIFEST).read_text())
        if not isinstance(data, dict) or not isinstance(data.get("wheels"), dict):
            raise ValueError
    except (OSError, ValueError):
        data = {"schema": 1, "wheels": {}}
    merged = {**data["wheels"], **entries}
    data["wheels"] = {k: merged[k] for k in sorted(merged) if k in entries or (wheelhouse / k).is_file()}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _summary(verdict: Verdict | None, wheel: Path) -> dict[str, Any] | None:
    if verdict is None:
        return None
    for found in verdict.inputs:
        if Path(found.path) == wheel:
            files = [{"path": f.path, "targets": f.targets, "rocm": f.info.rocm}
                     for f in found.files if f.info.bundles or f.info.rocm]
            return {"archs": verdict.archs, "files": files}
    return None
