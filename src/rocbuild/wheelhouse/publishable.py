"""Which wheels may be published: never one built against a build-only ROCm torch (`rocbuild root torch`)
unless asked, since it loads nowhere. Its provenance says so, and so does its local version label."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from rocbuild.errors import UsageError
from rocbuild.plan.model import BUILD_ONLY_LABEL
from rocbuild.verify.provenance import read_provenance

ALLOW_FLAG = "--allow-build-only"


def built_against_build_only_torch(wheel: Path) -> bool:
    prov = read_provenance(wheel)
    if prov is not None and prov.torch_build_only:
        return True
    try:
        local = parse_wheel_filename(wheel.name)[1].local or ""
    except InvalidWheelFilename:
        return False
    return local.split(".")[-1:] == [BUILD_ONLY_LABEL]


def refuse_build_only(wheels: Iterable[Path], what: str, *, allowed: bool) -> None:
    """A UsageError naming every such wheel, unless `allowed` (the command's ALLOW_FLAG)."""
    if allowed:
        return
    found = sorted(w.name for w in wheels if built_against_build_only_torch(w))
    if found:
        raise UsageError(f"{what}: built against a build-only torch, so they load nowhere: " + ", ".join(found),
                         hint=f"rebuild them against a real ROCm torch, or pass {ALLOW_FLAG} to {what} them anyway")
