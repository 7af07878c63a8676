"""Recipe + host + options -> Plan: every action with its concrete values. Pure: runs nothing.

`rocbuild plan` prints this; the engine executes exactly this. Patches and
checks are closed unions of one dataclass per kind, steps carry a Literal
kind: `match` with `assert_never` makes the type checker prove that every
consumer handles every kind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, assert_never

from rocbuild.detect.arch import parse_arch_list
from rocbuild.detect.gpu import GpuAccess
from rocbuild.detect.python import PythonInfo
from rocbuild.detect.rocm import Rocm
from rocbuild.detect.torch import probe_argv
from rocbuild.errors import RecipeError, UsageError
from rocbuild.fsutil import within
from rocbuild.labels import LOCAL_LABEL_RE
from rocbuild.paths import WorkDirs, cache_root, mirror_path
from rocbuild.plan.buildenv import FROM_TARGET_ONLY, IMPORT_CHECK, BuildEnv, make_build_env
from rocbuild.plan.render import PythonView, Renderer, RocmView, TorchView
from rocbuild.recipe.files import SOURCE_FILE_ACCEPTED, TREE_PATH_ACCEPTED, find_patch_file, patch_dirs_for, tree_path_problem
from rocbuild.recipe.model import Conditional, Entry, PatchKind, Recipe, Refusal, StepKind, VerifyKind
from rocbuild.roots.enter import inside as in_root
from rocbuild.source.spec import FULL_SHA_RE, DirSource, GitSource, SdistSource, SourceSpec, check_ref

PYTHON_ALIASES = ("python", "python3")
# A verify `import:` entry: import one module by name, from the scratch install.
IMPORT_ONE = "import importlib, sys; importlib.import_module(sys.argv[1]); print('imported', sys.argv[1])"
# Where the location-free rendering behind a build identity pretends to work: no real folder, the
# same everywhere, so one recipe on two machines of the same kind has one identity.
CANONICAL_ROOT = Path("/rocbuild-canonical")
# Base environment variables that say where tools and caches are, not what is built: the toolchain
# and the target python are their own identity fields.
LOCATION_ENV = frozenset({"PATH", "CCACHE_DIR", "CCACHE_BASEDIR", "CMAKE_C_COMPILER_LAUNCHER",
                          "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_HIP_COMPILER_LAUNCHER"})


GPU_NOT_CHECKED = GpuAccess(False, "not checked")


@dataclass(frozen=True)
class Host:
    """Everything about the build target that rendering needs."""

    archs: tuple[str, ...]
    rocm: Rocm
    python: PythonInfo
    jobs: int
    override: str | None = None  # HSA_OVERRIDE_GFX_VERSION in effect, recorded with the build
    gpu: GpuAccess = GPU_NOT_CHECKED  # decides whether verify `import:` entries run
    ccache: str | None = None  # ccache's path when it is installed: compilers are launched through it


# -- patches ----------------------------------------------------------------


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class LinkPatch:
    source_glob: str  # `from:`, absolute: a ROCm CMake module, say, or a file in the tree or the recipe's folders
    into: str  # a folder in the tree
    where: str
    readable: tuple[str, ...] = ()  # the folders `from:` may lead into (links followed)

    def describe(self) -> str:
        return f"link {self.source_glob} into {self.into}/ (replacing existing links)"

    def identity(self) -> dict[str, Any]:
        return {"kind": "link", "from": self.source_glob, "into": self.into}


@dataclass(frozen=True)
class CopyPatch:
    source: str  # `from:`, absolute, only read: a ROCm header, say, or a file in the tree or the recipe's folders
    to: str  # its place in the tree
    where: str
    readable: tuple[str, ...] = ()  # the folders `from:` may lead into (links followed)

    def describe(self) -> str:
        return f"copy {self.source} to {self.to} (in the tree; the original is only read)"

    def identity(self) -> dict[str, Any]:
        return {"kind": "copy", "from": self.source, "to": self.to}


PatchAction = DiffPatch | ReplacePatch | LinkPatch | CopyPatch


def patch_record(patch: PatchAction) -> dict[str, Any]:
    """What pins a patch in provenance and lock files: a diff by its file's sha256, others by their
    rendered parameters' sha256 and recipe position."""
    if isinstance(patch, DiffPatch):
        return patch.identity()
    digest = hashlib.sha256(json.dumps(patch.identity(), sort_keys=True).encode()).hexdigest()
    return {"kind": patch.identity()["kind"], "sha256": digest, "where": patch.where}


# -- steps ------------------------------------------------------------------


@dataclass(frozen=True)
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

    def command_line(self) -> str:
        return self.shell if self.shell is not None else shlex.join(self.argv or ())

    def outputs_present(self) -> bool:
        """Whether what this step is known to leave behind is still there (a finished step whose
        output was deleted must run again): a wheel step's wheel, a configure step's CMake cache,
        a build step's build folder. Other steps' outputs are not known."""
        argv = self.argv or ()
        if self.wheel_dir is not None:
            return any(Path(self.wheel_dir).glob("*.whl"))
        if self.kind == "cmake" and "-B" in argv[:-1]:
            return (Path(argv[argv.index("-B") + 1]) / "CMakeCache.txt").is_file()
        if self.kind == "cmake-build" and len(argv) > 2:
            return Path(argv[2]).is_dir()
        return True

    def identity(self) -> dict[str, Any]:
        """What decides whether a finished step must run again (chained after the prepared tree)."""
        return {"name": self.name, "kind": self.kind, "argv": self.argv, "shell": self.shell,
                "cwd": self.cwd, "env": self.env, "wheel_dir": self.wheel_dir}


# -- checks -----------------------------------------------------------------


@dataclass(frozen=True)
class CodeObjectsCheck:
    """Every ELF: no CUDA library, one ROCm major; device code covers `archs`; `files` carry it."""

    name: str
    where: str
    archs: tuple[str, ...]
    files: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    built_in: bool = False  # the check every wheel gets; its findings go into the manifest


@dataclass(frozen=True)
class WheelContainsCheck:
    name: str
    where: str
    glob: str


@dataclass(frozen=True)
class CommandCheck:
    name: str
    where: str
    argv: tuple[str, ...]
    env: dict[str, str]
    expect: tuple[str, ...] = ()


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Requirements:
    rocm: str | None
    tools: tuple[str, ...]
    python_modules: tuple[str, ...]
    cmake_packages: tuple[str, ...]
    python_check_argv: tuple[str, ...] | None
    torch: str | None = None  # "rocm": the target python's torch must be a ROCm build
    torch_check_argv: tuple[str, ...] | None = None  # reads torch/version.py without importing torch
    tool_versions: dict[str, str] = field(default_factory=dict)  # tool -> specifier its `--version` must satisfy


@dataclass(frozen=True)
class Rendered:
    """What the recipe does to a build, rendered at CANONICAL_ROOT with one job and no ccache: the
    same on every machine of a kind. The build identity takes its fields from here."""

    env: dict[str, str]
    patches: tuple[dict[str, Any], ...]
    steps: tuple[dict[str, Any], ...]
    checks: tuple[dict[str, Any], ...]
    local_label: str


@dataclass(frozen=True)
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
    rendered: Rendered = field(default_factory=lambda: Rendered({}, (), (), (), ""))
    build_env: BuildEnv | None = None  # wheel steps run in it; None: with the target python as it is
    refusals: tuple[tuple[str, RecipeError], ...] = ()  # (step, why): refused when the build would run it

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
        r = self.host.rocm
        return {
            "recipe": {"name": self.recipe.name, "version": self.recipe.version, "path": str(self.recipe.path)},
            "archs": list(self.host.archs),
            "rocm": {"path": str(r.path), "version": str(r.version) if r.version else None, "layout": r.layout},
            "python": self.host.python.to_json(),
            "jobs": self.host.jobs,
            "hsa_override": self.host.override,
            "gpu": {"usable": self.host.gpu.usable, "reason": self.host.gpu.reason},
            "options": self.options,
            "work": str(self.work.root),
            "out": str(self.out),
            "requirements": asdict(self.requirements),
            "env": self.base_env,
            "source": _source_json(self.source, self.work.src),
            "patches": [_patch_json(p) for p in self.patches],
            "steps": [_step_json(s) for s in self.steps],
            "verify": [{**check_identity(c), "where": c.where} for c in self.verify],
            "local_version": self.local_label or None,
            "runpath": self.recipe.runpath,
            "build_env": self.build_env.to_json() if self.build_env else None,
            "root": in_root(),
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
                           "cwd": step.cwd, "env": step.env, "where": step.where}
    if step.shell is not None:
        out["shell"] = step.shell
    if step.wheel_dir is not None:
        out["wheel_dir"] = step.wheel_dir
    if step.project is not None:
        out["project"] = step.project
    return out


def make_plan(
    recipe: Recipe,
    host: Host,
    options: dict[str, Any],
    work: WorkDirs,
    out: Path,
    *,
    ref: str | None = None,
    source_dir: Path | None = None,
    cache: Path | None = None,
    local_version: str | None = None,
    build_env: bool = True,
) -> Plan:
    """The plan for this host, with its location-free rendering (`Plan.rendered`) beside it.
    `build_env`: wheel steps run in a build environment layered on the target python."""
    plan = _render(recipe, host, options, work, out, ref=ref, source_dir=source_dir, cache=cache,
                   local_version=local_version, build_env=build_env)
    canonical = _render(recipe, replace(host, jobs=1, ccache=None, gpu=GpuAccess(False, "")), options,
                        WorkDirs(CANONICAL_ROOT / "work"), CANONICAL_ROOT / "out", ref=ref,
                        source_dir=source_dir, cache=CANONICAL_ROOT / "cache", local_version=local_version,
                        build_env=build_env)
    rendered = Rendered(
        env={k: v for k, v in canonical.base_env.items() if k not in LOCATION_ENV},
        patches=tuple(p.identity() for p in canonical.patches),
        steps=tuple(s.identity() for s in canonical.steps),
        checks=tuple(check_identity(c) for c in canonical.verify),
        local_label=canonical.local_label,
    )
    return replace(plan, rendered=rendered)


def _render(recipe: Recipe, host: Host, options: dict[str, Any], work: WorkDirs, out: Path, *,
            ref: str | None, source_dir: Path | None, cache: Path | None, local_version: str | None,
            build_env: bool = True) -> Plan:
    ctx: dict[str, Any] = {
        "archs": list(host.archs),
        "arch": host.archs[0] if host.archs else "",
        "rocm": RocmView(host.rocm),
        "python": PythonView(host.python.executable, host.python.version),
        "torch": TorchView(host.python.executable),
        "jobs": host.jobs,
        "options": dict(options),
        "src": str(work.src),
        "build": str(work.build),
        "dist": str(work.dist),
        "ref": "",
        "recipe": {"name": recipe.name, "version": recipe.version},
    }
    r = Renderer(ctx)
    # The recipe's ref may be a template (an option picks it); `ref` in templates is the one built.
    refusals = []
    for entry in recipe.unsupported:
        if _applies(r, entry):
            refusal = _refusal(recipe, host, options, entry)
            if entry.value.step is None:
                raise refusal
            refusals.append((entry.value.step, refusal))
    recipe_ref = r.text(recipe.source.ref, None, "source.ref") if recipe.source.ref else None
    effective_ref = ref or recipe_ref
    ctx["ref"] = effective_ref or ""

    base_env = {"HIP_PLATFORM": "amd"}  # hipcc picks NVIDIA when it also sees nvcc
    if host.rocm.layout in ("rocm", "pip"):  # AMD's trees put hipcc in bin/
        rocm_bin = str(host.rocm.path / "bin")
        path = os.environ.get("PATH", "")
        if rocm_bin not in path.split(os.pathsep):
            base_env["PATH"] = rocm_bin + os.pathsep + path
    if host.ccache:
        base_env.update(_ccache_env(host.ccache, (cache or cache_root()) / "ccache", work,
                                    base_env.get("PATH", os.environ.get("PATH", ""))))
    for name, cond in recipe.env:
        if _applies(r, cond):
            base_env[name] = r.text(cond.value, cond.pos, cond.pos.key)

    def names(items: tuple[Any, ...]) -> tuple[str, ...]:
        return tuple(r.text(c.value, c.pos, c.pos.key) for c in items
                     if _applies(r, c))

    modules = names(recipe.requires.python)
    env_plan = (make_build_env(work.root / "buildenv", host.python.executable, host.python.version, modules)
                if build_env and any(e.kind == "wheel" for e in recipe.steps) else None)
    # With a build environment, the build modules are installed, not looked for; only what must come
    # from the target python itself is.
    checked = tuple(m for m in modules if env_plan is None or m.split(".")[0] in FROM_TARGET_ONLY)
    tools = names(recipe.requires.tools)
    wanted = recipe.requires.torch
    torch = r.text(wanted.value, wanted.pos, wanted.pos.key) if wanted is not None and _applies(r, wanted) else None
    requirements = Requirements(
        rocm=recipe.requires.rocm,
        tools=tools,
        python_modules=modules,
        cmake_packages=names(recipe.requires.cmake_packages),
        python_check_argv=(host.python.executable, "-c", IMPORT_CHECK, *checked) if checked else None,
        torch=torch,
        torch_check_argv=probe_argv(host.python.executable) if torch else None,
        tool_versions={tool: spec for tool, spec in recipe.requires.tool_versions if tool in tools},
    )

    source = _source(recipe, effective_ref, ref is not None, source_dir, cache, r, host.python.executable)
    readable = _readable(recipe, host, work)
    patches = tuple(_patch(recipe, e, r, work, readable) for e in recipe.patches
                    if _applies(r, e))

    wheel_python = env_plan.python if env_plan is not None else host.python.executable
    steps = tuple(_step(entry, r, host, work, wheel_python) for entry in recipe.steps
                  if _applies(r, entry))
    entries = [e for e in recipe.verify if _applies(r, e)]
    opted_out = [e for e in entries if e.kind == "code-objects" and not e.body["required"]]
    verify: list[Check] = []
    if any(s.kind == "wheel" for s in steps):
        # Every wheel: nothing links CUDA, and device code covers every arch unless the recipe says
        # it has none of its own (`code-objects: false`).
        archs = () if opted_out else tuple(host.archs)
        where = f"built in; device code not required ({opted_out[0].pos.describe()})" if opted_out else "built in"
        verify.append(CodeObjectsCheck("device-code", where, archs, built_in=True))
    verify += [_verify_step(e, r, host) for e in entries if e not in opted_out]
    return Plan(recipe, host, dict(options), work, out, source, requirements, base_env, patches,
                steps, tuple(verify), _local_label(recipe, host, r, local_version),
                build_env=env_plan if any(s.kind == "wheel" for s in steps) else None,
                refusals=tuple(refusals))


def _applies(r: Renderer, item: Conditional | Entry[Any]) -> bool:
    """Whether an entry's `when:` renders to true; its errors point at the `when:` itself."""
    pos = item.when_pos or item.pos
    return r.condition(item.when, pos, pos.key if item.when_pos else f"{pos.key}.when")


def _ccache_env(ccache: str, ccache_dir: Path, work: WorkDirs, path: str) -> dict[str, str]:
    """CMake (steps and build backends alike) reads the launcher variables from the environment;
    a `hipcc` called by name from make, setup.py or a script finds the masquerade link first."""
    env = {"CCACHE_DIR": str(ccache_dir), "CCACHE_BASEDIR": str(work.root),
           "PATH": str(ccache_dir / "bin") + os.pathsep + path}
    for lang in ("C", "CXX", "HIP"):
        env[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = ccache
    return env


def _local_label(recipe: Recipe, host: Host, r: Renderer, override: str | None) -> str:
    """`+rocm6.1` by default; the recipe's `local-version` or --local-version change or drop it."""
    if override is not None:
        return override
    if recipe.local_version is None:
        v = host.rocm.version
        return f"rocm{v.major}.{v.minor}" if v is not None else ""
    label = r.text(recipe.local_version, None, "local-version")
    if label and not LOCAL_LABEL_RE.match(label):
        raise RecipeError("local-version renders to something that is not a PEP 440 local label",
                          file=str(recipe.path), key="local-version", value=label,
                          accepted="letters and digits separated by '.', '_' or '-', e.g. rocm6.1")
    return label


def _verify_step(entry: Entry[VerifyKind], r: Renderer, host: Host) -> Check:
    name, where, env, body = entry.name or "verify", entry.pos.describe(), _entry_env(entry, r), entry.body
    key = f"{entry.pos.key}.{entry.kind}"
    match entry.kind:
        case "command":
            argv = _python_alias([r.text(a, entry.pos, key) for a in body["argv"]], host)
            expect = tuple(r.text(p, entry.pos, f"{entry.pos.key}.expect") for p in body["expect"])
            return CommandCheck(name, where, tuple(argv), env, expect)
        case "import":
            module = r.text(body["module"], entry.pos, key)
            return ImportCheck(name, where, (host.python.executable, "-c", IMPORT_ONE, module), env, module)
        case "wheel-contains":
            return WheelContainsCheck(name, where, r.text(body["glob"], entry.pos, key))
        case "code-objects":
            wanted = ([r.text(a, entry.pos, key) for a in body["archs"]] if body["archs"] is not None
                      else list(host.archs))
            try:
                archs = parse_arch_list(",".join(wanted))
            except UsageError as exc:
                raise RecipeError(exc.message, file=entry.pos.file, line=entry.pos.line, column=entry.pos.column,
                                  key=f"{key}.archs", value=wanted, accepted="gfx targets such as gfx90a") from None
            return CodeObjectsCheck(name, where, tuple(archs), tuple(r.text(f, entry.pos, key) for f in body["files"]),
                                    tuple(body["links"]))
        case _:
            assert_never(entry.kind)


def _source(recipe: Recipe, ref: str | None, overridden: bool, source_dir: Path | None,
            cache: Path | None, r: Renderer, python: str) -> SourceSpec:
    if source_dir is not None:
        return DirSource(str(Path(source_dir).resolve()))
    src = recipe.source
    if src.path is not None:
        return DirSource(str((recipe.directory / src.path).resolve()))
    if src.sdist is not None:
        if overridden:
            raise UsageError(f"--ref {ref}: {recipe.name} comes from the sdist {src.sdist}, not from git",
                             hint="build another tree with --source-dir DIR")
        name = src.sdist.replace("==", "-").lower()
        return SdistSource(src.sdist, str((cache or cache_root()) / "sdists" / name), python, src.sha256)
    assert src.git is not None  # the loader requires exactly one of git, path and sdist
    if ref is not None and not overridden:
        try:
            check_ref(ref, "source.ref")
        except UsageError as exc:
            raise RecipeError(exc.message, file=str(recipe.path), key="source.ref", value=ref,
                              accepted="a branch, tag or commit id") from None
    commit = None if overridden or not src.commit else r.text(src.commit, None, "source.commit").lower()
    if commit is not None and not FULL_SHA_RE.match(commit):
        raise RecipeError("source.commit renders to something that is not a whole commit id", file=str(recipe.path),
                          key="source.commit", value=commit, accepted="the commit's full 40 hexadecimal digits")
    return GitSource(url=src.git, mirror=str(mirror_path(src.git, cache)), ref=ref, commit=commit,
                     submodules=src.submodules, ref_overridden=overridden)


def _readable(recipe: Recipe, host: Host, work: WorkDirs) -> tuple[str, ...]:
    """Where copy/link may read from: the tree, the ROCm prefix, the recipe's folders and its patches."""
    folders = [work.src, host.rocm.path, recipe.directory, *(p.parent for p, _ in recipe.bases), *recipe.patch_dirs]
    out: list[str] = []
    for folder in folders:
        for form in (os.path.normpath(folder), os.path.realpath(folder)):
            if form not in out:
                out.append(form)
    return tuple(out)


def _patch(recipe: Recipe, entry: Entry[PatchKind], r: Renderer, work: WorkDirs,
           readable: tuple[str, ...]) -> PatchAction:
    key = f"{entry.pos.key}.{entry.kind}"
    where = entry.pos.describe()

    def in_tree(value: str, k: str) -> str:
        problem = tree_path_problem(value)
        if problem is not None:
            raise RecipeError(problem, file=entry.pos.file, line=entry.pos.line, column=entry.pos.column, key=k,
                              value=value, accepted=TREE_PATH_ACCEPTED)
        return value

    def readable_source(value: str, k: str) -> str:
        """Relative: in the tree. Absolute: under one of `readable` (judged by text here; links are
        followed and judged again when the patch is applied)."""
        path = os.path.normpath(value if os.path.isabs(value) else os.path.join(work.src, in_tree(value, k)))
        if not any(within(path, top) for top in readable):
            raise RecipeError("reads from outside the source tree, the ROCm prefix and the recipe's folders",
                              file=entry.pos.file, line=entry.pos.line, column=entry.pos.column, key=k, value=value,
                              accepted=SOURCE_FILE_ACCEPTED)
        return path

    match entry.kind:
        case "diff":
            dirs = recipe.patch_dirs or tuple(patch_dirs_for(recipe.path))
            path = find_patch_file(entry.body, dirs)
            if path is None:  # the loader checked; the file went away since
                raise RecipeError("patch file not found", file=entry.pos.file, line=entry.pos.line,
                                  column=entry.pos.column, key=key, value=entry.body)
            return DiffPatch(entry.body, str(path), hashlib.sha256(path.read_bytes()).hexdigest(), where)
        case "replace":
            b = entry.body
            return ReplacePatch(in_tree(r.text(b["file"], entry.pos, f"{key}.file"), f"{key}.file"),
                                r.text(b["find"], entry.pos, f"{key}.find"),
                                r.text(b["with"], entry.pos, f"{key}.with"), b["regex"], b["count"], where)
        case "link":
            return LinkPatch(readable_source(r.text(entry.body["from"], entry.pos, f"{key}.from"), f"{key}.from"),
                             in_tree(r.text(entry.body["into"], entry.pos, f"{key}.into"), f"{key}.into"), where,
                             readable)
        case "copy":
            return CopyPatch(readable_source(r.text(entry.body["from"], entry.pos, f"{key}.from"), f"{key}.from"),
                             in_tree(r.text(entry.body["to"], entry.pos, f"{key}.to"), f"{key}.to"), where, readable)
        case _:
            assert_never(entry.kind)


def _refusal(recipe: Recipe, host: Host, options: dict[str, Any], entry: Conditional) -> RecipeError:
    chosen = ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in options.items())
    refusal: Refusal = entry.value
    before = (f" (a build stopped before step {refusal.step!r} with --until is allowed)"
              if refusal.step else "")
    return RecipeError(f"{recipe.name} cannot be built with ROCm {host.rocm.version or '?'}"
                       + (f" and {chosen}" if chosen else "") + f": {refusal.why}{before}",
                       file=str(recipe.path), line=entry.pos.line, column=entry.pos.column,
                       key=entry.pos.key, value=entry.when,
                       accepted="another ROCm release or option (--set NAME=VALUE), as the reason says")


def _python_alias(argv: list[str], host: Host) -> list[str]:
    """`python` in an argv means the target python, never whatever is first on PATH."""
    if argv and argv[0] in PYTHON_ALIASES:
        argv[0] = host.python.executable
    return argv


def _entry_env(entry: Entry[Any], r: Renderer) -> dict[str, str]:
    env = {}
    for name, cond in entry.env:
        if _applies(r, cond):
            env[name] = r.text(cond.value, cond.pos, cond.pos.key)
    return env


def _step(entry: Entry[StepKind], r: Renderer, host: Host, work: WorkDirs, wheel_python: str) -> Step:
    key = f"{entry.pos.key}.{entry.kind}"
    src = str(work.src)

    def path_in_src(value: str | None, default: str) -> str:
        if not value:
            return default
        return value if os.path.isabs(value) else os.path.normpath(os.path.join(src, value))

    cwd = path_in_src(r.text(entry.cwd, entry.pos, f"{entry.pos.key}.cwd") if entry.cwd else None, src)
    env = _entry_env(entry, r)
    where = entry.pos.describe()
    name = entry.name or entry.kind
    match entry.kind:
        case "shell":
            script, values = r.shell(entry.body, entry.pos, key)
            return Step(name, "shell", None, cwd, {**env, **values}, shell=script, where=where)
        case "run":
            argv = _python_alias([r.text(a, entry.pos, f"{key}[{i}]") for i, a in enumerate(entry.body)], host)
            return Step(name, "run", tuple(argv), cwd, env, where=where)
        case "cmake":
            body = r.tree(dict(entry.body), entry.pos, key)
            source = path_in_src(body.get("source"), src)
            build = path_in_src(body.get("build"), str(work.build))
            argv = ["cmake", "-S", source, "-B", build]
            if body.get("generator"):
                argv += ["-G", body["generator"]]
            defines = dict(body.get("defines", {}))
            # CMake's HIP language cannot find clang on distro layouts by itself; say it always.
            if host.rocm.hip_compiler:
                defines.setdefault("CMAKE_HIP_COMPILER", str(host.rocm.hip_compiler))
                defines.setdefault("CMAKE_HIP_COMPILER_ROCM_ROOT", str(host.rocm.path))
            argv += [f"-D{k}={v}" for k, v in defines.items()]
            argv += list(body.get("args", []))
            return Step(name, "cmake", tuple(argv), cwd, env, where=where)
        case "cmake-build":
            body = r.tree(dict(entry.body), entry.pos, key)
            argv = ["cmake", "--build", path_in_src(body.get("dir"), str(work.build))]
            if body.get("target"):
                argv += ["--target", body["target"]]
            if body.get("config"):
                argv += ["--config", body["config"]]
            argv += ["--parallel", str(body.get("jobs") or host.jobs)]
            return Step(name, "cmake-build", tuple(argv), cwd, env, where=where)
        case "make":
            body = r.tree(dict(entry.body), entry.pos, key)
            argv = ["make", "-C", path_in_src(body.get("dir"), src), f"-j{body.get('jobs') or host.jobs}"]
            if body.get("target"):
                argv.append(body["target"])
            argv += list(body.get("args", []))
            return Step(name, "make", tuple(argv), cwd, env, where=where)
        case "wheel":
            body = r.tree(dict(entry.body), entry.pos, key)
            project = path_in_src(body.get("dir"), src)
            outdir = str(work.dist / name)
            argv = [wheel_python, "-m", "pip", "wheel", project, "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", outdir]
            argv += [f"--config-settings={k}={v}" for k, v in body.get("config-settings", {}).items()]
            argv += list(body.get("args", []))
            return Step(name, "wheel", tuple(argv), cwd, env, where=where, wheel_dir=outdir, project=project)
        case _:
            assert_never(entry.kind)
