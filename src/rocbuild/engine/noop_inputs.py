"""What a finished build read, as files whose signatures the no-op stamp (engine/noop.py) keeps; None
when the build cannot be answered from a stamp (its source may move under the same command)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rocbuild.engine.lock import lock_path
from rocbuild.engine.noop import tree_files
from rocbuild.plan.model import CopyPatch, DiffPatch, Plan
from rocbuild.process.runner import query_process
from rocbuild.source.spec import DirSource, GitSource, SdistSource

# Change with any package installed or removed, with or without ROCm's own packages in it; and a GPU
# that appears or goes decides whether verify's import checks run.
SYSTEM_FILES = ("/var/lib/dpkg/status", "/dev/kfd")
PATH_QUERY = "import json, sys; print(json.dumps([p for p in sys.path if p]))"


def build_inputs(plan: Plan, wheels: tuple[Path, ...]) -> list[str] | None:
    source = _source_files(plan)
    python = _python_files(plan.host.python.executable)
    if source is None or python is None:
        return None
    rocm = plan.host.rocm
    toolchain = [str(rocm.path / ".info" / "version")] + [str(p) for p in (rocm.hipcc, rocm.hip_compiler) if p]
    recipe = [str(plan.recipe.path), str(lock_path(plan.recipe.path))] + [str(p) for p, _ in plan.recipe.bases]
    patches = [p.path if isinstance(p, DiffPatch) else p.source for p in plan.patches
               if isinstance(p, DiffPatch | CopyPatch)]
    return [*recipe, *patches, *source, *python, *toolchain, *SYSTEM_FILES, *_own_modules(), *map(str, wheels)]


def _source_files(plan: Plan) -> list[str] | None:
    source = plan.source
    if isinstance(source, GitSource):  # a branch or tag may move on the remote; a pinned commit cannot
        return [] if source.commit and not source.ref_overridden else None
    if isinstance(source, SdistSource):
        return [] if source.sha256 else None
    assert isinstance(source, DirSource)
    return tree_files(source.directory)


def _python_files(executable: str) -> list[str] | None:
    """The interpreter and the folders of its import path: a package installed or removed there
    (torch, say) changes a folder's signature."""
    proc = query_process([executable, "-c", PATH_QUERY], timeout=30)
    if isinstance(proc, str) or proc.exit_code != 0:
        return None
    try:
        paths = [str(p) for p in json.loads(proc.stdout)]
    except ValueError:
        return None
    return [executable, os.path.realpath(executable), *paths]


def _own_modules() -> list[str]:
    """rocbuild itself: an upgrade, or an edit of a checkout, may build differently."""
    package = Path(__file__).resolve().parents[1]
    return sorted(str(p) for p in package.rglob("*.py"))
