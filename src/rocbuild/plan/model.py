"""The Plan: every action of a build with its concrete values (plan/planner.py makes it).

`rocbuild plan` prints this; the engine executes exactly this. Patches and
checks are closed unions of one dataclass per kind, steps carry a Literal
kind: `match` with `assert_never` makes the type checker prove that every
consumer handles every kind.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rocbuild.compat import assert_never
from rocbuild.detect.host import Host
from rocbuild.detect.rocm import OpenMp
from rocbuild.errors import RecipeError
from rocbuild.paths import WorkDirs
from rocbuild.plan.buildenv import BuildEnv
from rocbuild.recipe.model import Position, Recipe, StepKind
from rocbuild.source.spec import DirSource, GitSource, SdistSource, SourceSpec

PYTHON_ALIASES = ("python", "python3")
# The last part of the local version of every wheel built against a build-only torch (`rocbuild root torch`).
BUILD_ONLY_LABEL = "buildonly"
# A verify `import:` entry: import one module by name, from the scratch install.
IMPORT_ONE = "import importlib, sys; importlib.import_module(sys.argv[1]); print('imported', sys.argv[1])"
# Where the location-free rendering behind a build identity pretends to work: no real folder, the
# same everywhere, so one recipe on two machines of the same kind has one identity.
CANONICAL_ROOT = Path("/rocbuild-canonical")
# Base environment variables that say where tools and caches are, not what is built: the toolchain
# and the target python are their own identity fields.
LOCATION_ENV = frozenset({"PATH", "CCACHE_DIR", "CCACHE_BASEDIR", "CMAKE_C_COMPILER_LAUNCHER",
                          "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_HIP_COMPILER_LAUNCHER", "TMPDIR", "PYTORCH_NVCC"})
# Set to the job count for every step; how fast, not what: left out of the build identity.
PARALLEL_ENV = ("CMAKE_BUILD_PARALLEL_LEVEL", "MAX_JOBS")
# How many compilers a torch extension's build shim (engine/extshim) runs at once across its extensions;
# also left out of the build identity: the objects are those of a serial build.
EXTENSION_JOBS = "ROCBUILD_EXTENSION_JOBS"
EXTENSION_SHIM = Path(__file__).resolve().parent.parent / "engine" / "extshim" / "sitecustomize.py"


def extension_shim_dir(work: WorkDirs) -> Path:
    """Where the engine copies the shim, named by its digest so that a changed shim changes the identity."""
    return work.root / "extshim" / _shim_digest()


@functools.cache
def _shim_digest() -> str:
    return hashlib.sha256(EXTENSION_SHIM.read_bytes()).hexdigest()[:12]


# -- patches ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DiffPatch:
    name: str  # as the recipe gives it, e.g. horovod/0001-fix.patch
    path: str  # the file found for it
    sha256: str
    where: str  # recipe position, for messages

    @property
    def check_argv(self) -> tuple[str, ...]:
        return ("git", "apply", "--check", "-p1", self.path)

    @property
    def argv(self) -> tuple[str, ...]:
        return ("git", "apply", "-p1", self.path)

    @property
    def reverse_check_argv(self) -> tuple[str, ...]:
        return ("git", "apply", "--reverse", "--check", "-p1", self.path)

    def describe(self) -> str:
        return f"diff {self.name} (sha256 {self.sha256[:12]}): {shlex.join(self.argv)}"

    def identity(self) -> dict[str, Any]:
        return {"kind": "diff", "name": self.name, "sha256": self.sha256}


@dataclass(frozen=True, kw_only=True)
class ReplacePatch:
    file: str
    find: str
    replacement: str
    regex: bool
    count: int | None
    where: str

    def describe(self) -> str:
        mode = "regex" if self.regex else "text"
        count = f", expecting {self.count}" if self.count else ""
        return f"replace in {self.file} ({mode}{count}): {self.find!r} -> {self.replacement!r}"

    def identity(self) -> dict[str, Any]:
        return {"kind": "replace", "file": self.file, "find": self.find, "with": self.replacement,
                "regex": self.regex, "count": self.count}


@dataclass(frozen=True, kw_only=True)
class LinkPatch:
    source_glob: str  # `from:`, absolute: a ROCm CMake module, say, or a file in the tree or the recipe's folders
    into: str  # a folder in the tree
    where: str
    readable: tuple[str, ...] = ()  # the folders `from:` may lead into (links followed)

    def describe(self) -> str:
        return f"link {self.source_glob} into {self.into}/ (replacing existing links)"

    def identity(self) -> dict[str, Any]:
        return {"kind": "link", "from": self.source_glob, "into": self.into}


@dataclass(frozen=True, kw_only=True)
class CopyPatch:
    source: str  # `from:`, absolute, only read: a ROCm header, say, or a file in the tree or the recipe's folders
    to: str  # its place in the tree
    where: str
    readable: tuple[str, ...] = ()  # the folders `from:` may lead into (links followed)

    def describe(self) -> str:
        return f"copy {self.source} to {self.to} (in the tree; the original is only read)"

    def identity(self) -> dict[str, Any]:
        return {"kind": "copy", "from": self.source, "to": self.to}


@dataclass(frozen=True)
class RemovePatch:
    file: str  # relative to the tree
    where: str

    def describe(self) -> str:
        return f"remove {self.file} from the tree"

    def identity(self) -> dict[str, Any]:
        return {"kind": "remove", "file": self.file}


PatchAction = DiffPatch | ReplacePatch | LinkPatch | CopyPatch | RemovePatch


def patch_record(patch: PatchAction) -> dict[str, Any]:
    """What pins a patch in provenance and lock files: a diff by its file's sha256, others by their
    rendered parameters' sha256 and recipe position."""
    if isinstance(patch, DiffPatch):
        return patch.identity()
    digest = hashlib.sha256(json.dumps(patch.identity(), sort_keys=True).encode()).hexdigest()
    return {"kind": patch.identity()["kind"], "sha256": digest, "where": patch.where}


# -- steps ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Step:
    name: str
    kind: StepKind
    argv: tuple[str, ...] | None  # None for a shell step
    cwd: str
    env: dict[str, str]
    shell: str | None = None
    where: str = ""
    wheel_dir: str | None = None  # a wheel step's own output folder, emptied before it runs
    project: str | None = None  # a wheel step's project folder (its pyproject.toml names what it builds with)
    build_dir: str | None = None  # a cmake or cmake-build step's build folder
    network: bool = False  # the recipe lets it reach the network (`network: true`); confined steps have none

    def command_line(self) -> str:
        return self.shell if self.shell is not None else shlex.join(self.argv or ())

    def outputs_present(self) -> bool:
        """Whether what this step is known to leave behind is still there (a finished step whose
        output was deleted must run again): a wheel step's wheel, a configure step's CMake cache,
        a build step's build folder. Other steps' outputs are not known."""
        if self.wheel_dir is not None:
            return any(Path(self.wheel_dir).glob("*.whl"))
        if self.kind == "cmake" and self.build_dir is not None:
            return (Path(self.build_dir) / "CMakeCache.txt").is_file()
        if self.kind == "cmake-build" and self.build_dir is not None:
            return Path(self.build_dir).is_dir()
        return True

    def identity(self) -> dict[str, Any]:
        """What decides whether a finished step must run again (chained after the prepared tree)."""
        return {"name": self.name, "kind": self.kind, "argv": self.argv, "shell": self.shell,
                "cwd": self.cwd, "env": {k: v for k, v in self.env.items() if k not in LOCATION_ENV},
                "wheel_dir": self.wheel_dir, "network": self.network}


# -- checks -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CodeObjectsCheck:
    """Every ELF: no CUDA library, one ROCm major; device code covers `archs`; `files` carry it."""

    name: str
    where: str
    archs: tuple[str, ...]
    files: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    built_in: bool = False  # the check every wheel gets; its findings go into the manifest


@dataclass(frozen=True, kw_only=True)
class WheelContainsCheck:
    name: str
    where: str
    glob: str


@dataclass(frozen=True, kw_only=True)
class CommandCheck:
    name: str
    where: str
    argv: tuple[str, ...]
    env: dict[str, str]
    expect: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ImportCheck:
    """Imports a module from the scratch install; skipped without a usable GPU."""

    name: str
    where: str
    argv: tuple[str, ...]
    env: dict[str, str]
    module: str


Check = CodeObjectsCheck | WheelContainsCheck | CommandCheck | ImportCheck


def check_identity(check: Check) -> dict[str, Any]:
    match check:
        case CodeObjectsCheck():
            return {"kind": "code-objects", "name": check.name, "archs": check.archs, "files": check.files,
                    "links": check.links, "built_in": check.built_in}
        case WheelContainsCheck():
            return {"kind": "wheel-contains", "name": check.name, "glob": check.glob}
        case CommandCheck():
            return {"kind": "command", "name": check.name, "argv": check.argv, "env": check.env,
                    "expect": check.expect}
        case ImportCheck():
            return {"kind": "import", "name": check.name, "argv": check.argv, "env": check.env,
                    "module": check.module}
        case _:
            assert_never(check)


# -- the plan ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Requirements:
    rocm: str | None
    tools: tuple[str, ...]
    python_modules: tuple[str, ...]
    cmake_packages: tuple[str, ...]
    python_check_argv: tuple[str, ...] | None
    torch: str | None = None  # "rocm": the target python's torch must be a ROCm build
    torch_check_argv: tuple[str, ...] | None = None  # reads torch/version.py without importing torch
    # Where --install-missing gets a ROCm torch (--torch-index, else PyTorch's index for this ROCm), or why
    # there is none; and the pip argv it runs, for the torch the target had when planned (None: nothing to do).
    torch_index: str | None = None
    torch_index_problem: str | None = None
    torch_install_argv: tuple[str, ...] | None = None
    tool_versions: dict[str, str] = field(default_factory=dict)  # tool -> specifier its `--version` must satisfy
    headers: tuple[str, ...] = ()  # under the ROCm include folder
    libraries: tuple[str, ...] = ()  # lib<name>.so in the ROCm library folders
    openmp: OpenMp | None = None  # OpenMP for the HIP compiler's clang


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """What the recipe does to a build, rendered at CANONICAL_ROOT with one job and no ccache: the
    same on every machine of a kind. The build identity takes its fields from here."""

    env: dict[str, str]
    patches: tuple[dict[str, Any], ...]
    steps: tuple[dict[str, Any], ...]
    checks: tuple[dict[str, Any], ...]
    local_label: str


@dataclass(frozen=True)
class ExtraTree:
    """An `extra-sources:` entry as planned: fetched by rocbuild into `dest` (under the work folder) at prepare."""

    name: str
    source: SourceSpec
    dest: str
    where: str  # the recipe position of its entry


@dataclass(frozen=True)
class ArchListCheck:
    """An `unsupported:` entry's `archs-not-in:` as planned: the arch list the source keeps itself, read
    from the source where it is on this machine (plan/archlists.py)."""

    file: str
    variable: str
    why: str
    pos: Position  # the recipe's entry
    listed: tuple[str, ...] | None = None  # None: not read yet (the source is not here before it is fetched)
    line: int = 0  # where in `file` it is set (the first set(); 0 until read)
    read_from: str = ""  # the sdist archive, the source folder or the git mirror it was read from

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "variable": self.variable, "line": self.line or None,
                "listed": list(self.listed) if self.listed is not None else None, "read_from": self.read_from or None,
                "where": f"{self.pos.file}:{self.pos.line}"}


@dataclass(frozen=True, kw_only=True)
class Plan:
    recipe: Recipe
    host: Host
    options: dict[str, Any]
    work: WorkDirs
    out: Path
    source: SourceSpec
    requirements: Requirements
    base_env: dict[str, str]
    patches: tuple[PatchAction, ...]
    steps: tuple[Step, ...]
    verify: tuple[Check, ...]
    local_label: str = ""  # PEP 440 local version label added to every wheel ("" = none)
    rendered: Rendered = field(default_factory=lambda: Rendered(env={}, patches=(), steps=(), checks=(), local_label=""))
    build_env: BuildEnv | None = None  # wheel steps run in it; None: with the target python as it is
    refusals: tuple[tuple[str, RecipeError], ...] = ()  # (step, why): refused when the build would run it; "": the whole build
    step_tmp: Path | None = None  # the steps' TMPDIR: made empty before the first step, removed after the last
    run_env: dict[str, str] = field(default_factory=dict)  # what the built package needs set at run time
    extra_sources: tuple[ExtraTree, ...] = ()
    arch_lists: tuple[ArchListCheck, ...] = ()  # the source's own arch lists an arch must be in

    @property
    def ccache_bin(self) -> Path | None:
        """The folder put first on PATH where `hipcc` is a link to ccache (ccache's masquerade mode)."""
        if not self.host.ccache or "CCACHE_DIR" not in self.base_env:
            return None
        return Path(self.base_env["CCACHE_DIR"]) / "bin"

    @property
    def output(self) -> str:
        return self.recipe.output

    @property
    def wheel_steps(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.kind == "wheel")

    @property
    def has_wheel_steps(self) -> bool:
        return bool(self.wheel_steps)

    def to_json(self) -> dict[str, Any]:
        from rocbuild.plan.confine import sandbox

        r = self.host.rocm
        return {
            "recipe": {"name": self.recipe.name, "version": self.recipe.version, "path": str(self.recipe.path)},
            "archs": list(self.host.archs),
            "rocm": {"path": str(r.path), "version": str(r.version) if r.version else None, "layout": r.layout},
            "python": self.host.python.to_json(),
            "jobs": self.host.jobs,
            "jobs_why": self.host.jobs_why,
            "hsa_override": self.host.override,
            "components": self.host.components,
            "gpu": {"usable": self.host.gpu.usable, "reason": self.host.gpu.reason},
            "options": self.options,
            "work": str(self.work.root),
            "out": str(self.out),
            "requirements": asdict(self.requirements),
            "env": self.base_env,
            "source": _source_json(self.source, self.work.src),
            "extra_sources": {e.name: {**_source_json(e.source, Path(e.dest)), "where": e.where}
                              for e in self.extra_sources},
            "patches": [_patch_json(p) for p in self.patches],
            "confinement": self.host.confine.to_json(),
            "steps": [{**_step_json(s), "sandbox": list(sandbox(self, s))} for s in self.steps],
            "verify": [{**check_identity(c), "where": c.where} for c in self.verify],
            "local_version": self.local_label or None,
            "runpath": self.recipe.runpath,
            "build_env": self.build_env.to_json() if self.build_env else None,
            "root": self.host.root.to_json() if self.host.root else None,
            "step_tmp": str(self.step_tmp) if self.step_tmp else None,
            "run_env": self.run_env,
            "arch_lists": [a.to_json() for a in self.arch_lists],
        }


def _source_json(source: SourceSpec, dest: Path) -> dict[str, Any]:
    match source:
        case GitSource():
            return {"kind": "git", **asdict(source), "dest": str(dest), "commands": source.commands(str(dest))}
        case DirSource():
            return {"kind": "dir", "directory": source.directory, "dest": str(dest), "commands": []}
        case SdistSource():
            return {"kind": "sdist", **asdict(source), "dest": str(dest), "commands": source.commands(str(dest))}
        case _:
            assert_never(source)


def _patch_json(patch: PatchAction) -> dict[str, Any]:
    out = {**patch.identity(), "where": patch.where}
    if isinstance(patch, DiffPatch):
        out.update(path=patch.path, check_argv=list(patch.check_argv), argv=list(patch.argv))
    return out


def _step_json(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"name": step.name, "kind": step.kind, "argv": list(step.argv) if step.argv else None,
                           "cwd": step.cwd, "env": step.env, "where": step.where, "network": step.network}
    if step.shell is not None:
        out["shell"] = step.shell
    if step.wheel_dir is not None:
        out["wheel_dir"] = step.wheel_dir
    if step.project is not None:
        out["project"] = step.project
    return out


