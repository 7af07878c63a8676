"""A build request + this machine -> the complete Plan, in one call (host detection included)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rocbuild.detect.arch import detect_archs, require_archs
from rocbuild.detect.gpu import gpu_access
from rocbuild.detect.python import default_jobs, find_python
from rocbuild.detect.rocm import find_rocm, require_rocm
from rocbuild.engine.identity import root_label
from rocbuild.errors import UsageError
from rocbuild.labels import LOCAL_LABEL_RE
from rocbuild.paths import WorkDirs, cache_root, short_hash
from rocbuild.plan.model import Host, Plan, make_plan
from rocbuild.plan.options import resolve_options
from rocbuild.recipe import catalog
from rocbuild.source.spec import DirSource, check_ref


@dataclass(frozen=True)
class BuildRequest:
    """What `build`, `plan`, `prepare` and `lock` were asked for, as typed values."""

    recipe: str  # a name or a path
    arch: str | None = None
    rocm: str | None = None
    python: str | None = None
    out: str = "wheelhouse"
    work: str | None = None
    jobs: int | None = None
    ref: str | None = None
    source_dir: str | None = None
    settings: tuple[str, ...] = ()  # --set NAME=VALUE
    recipe_dirs: tuple[str, ...] = ()  # --recipes
    local_version: str | None = None
    need_archs: bool = True  # `lock` pins no targets
    build_env: bool = True  # wheel steps in a build environment over the target python (--no-build-env: False)
    environ: dict[str, str] = field(default_factory=dict)


def assemble(request: BuildRequest) -> Plan:
    """Recipe file -> Recipe -> (with the detected host) -> Plan."""
    found = catalog.resolve(request.recipe, list(request.recipe_dirs))
    recipe = catalog.load(found.path, list(request.recipe_dirs))
    options = resolve_options(recipe, list(request.settings))
    if request.ref is not None:
        check_ref(request.ref)
    if request.jobs is not None and request.jobs < 1:
        raise UsageError(f"--jobs {request.jobs}: must be 1 or more")
    detection = detect_archs(request.arch)
    # A tree recipe compiles nothing for a GPU, so it needs no target.
    archs = detection.archs if recipe.output == "tree" or not request.need_archs else require_archs(detection)
    python = find_python(request.python)
    rocm = require_rocm(find_rocm(request.rocm, python=python.executable))
    env = request.environ
    host = Host(
        archs=tuple(archs), rocm=rocm, python=python, jobs=request.jobs or default_jobs(),
        override=detection.override.value if detection.override else None, gpu=gpu_access(),
        ccache=shutil.which("ccache") if env.get("ROCBUILD_CCACHE", "1") != "0" else None,
    )
    source_dir = Path(request.source_dir) if request.source_dir else None
    if source_dir is not None and not source_dir.is_dir():
        raise UsageError(f"--source-dir {request.source_dir}: no such folder")
    if request.work:
        work = WorkDirs(Path(request.work).resolve())
    else:
        # Separate folders for what is likely to alternate (two ROCm releases side by side); the
        # build identity decides, inside a folder, what can be reused.
        root = root_label()
        key = short_hash([str(found.path.resolve()), archs, str(rocm.path), str(rocm.version), python.executable,
                          request.ref, str(source_dir.resolve()) if source_dir else None, options,
                          *([root] if root else [])])
        work = WorkDirs(cache_root() / "work" / f"{recipe.name}-{recipe.version}-{key}")
    plan = make_plan(recipe, host, options, work, Path(request.out).resolve(), ref=request.ref,
                     source_dir=source_dir, local_version=local_version(request.local_version),
                     build_env=request.build_env)
    check_separate(plan, "--source-dir" if source_dir is not None else "the recipe's source.path")
    return plan


def check_separate(plan: Plan, source_flag: str) -> None:
    """The work folder (emptied and rewritten), the source folder (only read) and the wheelhouse
    (written) must not contain one another: otherwise a build deletes or copies into user data."""
    folders = [("--work", plan.work.root.resolve()), ("--out", plan.out.resolve())]
    if isinstance(plan.source, DirSource):
        folders.append((source_flag, Path(plan.source.directory).resolve()))
    for i, (name_a, a) in enumerate(folders):
        for name_b, b in folders[i + 1:]:
            if a == b:
                how = "are the same folder"
            elif b in a.parents:
                how = f"overlap: {a} is inside {b}"
            elif a in b.parents:
                how = f"overlap: {b} is inside {a}"
            else:
                continue
            raise UsageError(
                f"{name_a} {a} and {name_b} {b} {how}",
                hint="rocbuild empties and rewrites its work folder, copies the source folder (never changing it) "
                     "and writes wheels into --out: give each its own folder, none inside another")


def local_version(label: str | None) -> str | None:
    if label is None:
        return None
    if label in ("", "none"):
        return ""
    if not LOCAL_LABEL_RE.match(label):
        raise UsageError(f"--local-version {label!r}: not a PEP 440 local version label",
                         hint="accepted: letters and digits separated by '.', '_' or '-' (e.g. rocm6.1), or 'none'")
    return label

