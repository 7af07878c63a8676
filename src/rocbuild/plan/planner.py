"""Recipe + host + options -> Plan (plan/model.py): every template rendered against the host value the
command line found. Pure: reads no environment and starts no process."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from rocbuild.compat import assert_never
from rocbuild.detect.arch import parse_arch_list
from rocbuild.detect.gpu import GpuAccess
from rocbuild.detect.host import Host
from rocbuild.detect.torch import probe_argv, torch_index_for, torch_install_argv
from rocbuild.errors import RecipeError, UsageError
from rocbuild.fsutil import within
from rocbuild.labels import LOCAL_LABEL_ACCEPTED, local_label_problem
from rocbuild.paths import WorkDirs, cache_root, mirror_path, short_hash
from rocbuild.plan.buildenv import FROM_TARGET_ONLY, IMPORT_CHECK, make_build_env
from rocbuild.plan.confine import CONFINED_HOME, CONFINED_PASSED
from rocbuild.plan.model import (
    BUILD_ONLY_LABEL,
    CANONICAL_ROOT,
    EXTENSION_JOBS,
    IMPORT_ONE,
    LOCATION_ENV,
    PARALLEL_ENV,
    PYTHON_ALIASES,
    ArchListCheck,
    Check,
    CodeObjectsCheck,
    CommandCheck,
    CopyPatch,
    DiffPatch,
    ExtraTree,
    ImportCheck,
    LinkPatch,
    PatchAction,
    Plan,
    RemovePatch,
    Rendered,
    ReplacePatch,
    Requirements,
    Step,
    WheelContainsCheck,
    check_identity,
    extension_shim_dir,
)
from rocbuild.plan.render import PythonView, Renderer, RocmView, TorchView
from rocbuild.recipe.files import SOURCE_FILE_ACCEPTED, TREE_PATH_ACCEPTED, find_patch_file, patch_dirs_for, tree_path_problem
from rocbuild.recipe.model import (
    CheckSpec,
    CMake,
    CMakeBuild,
    CodeObjects,
    Command,
    Conditional,
    Copy,
    Diff,
    ExtraSource,
    Import,
    Link,
    Make,
    PatchSpec,
    Position,
    Recipe,
    Refusal,
    Remove,
    Replace,
    Run,
    Shell,
    StepSpec,
    Wheel,
    WheelContains,
)
from rocbuild.source.spec import FULL_SHA_RE, DirSource, GitSource, SdistSource, SourceSpec, check_ref


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
    refuse: bool = True,
    torch_index: str | None = None,
) -> Plan:
    """The plan for this host, with its location-free rendering (`Plan.rendered`) beside it.
    `build_env`: wheel steps run in a build environment layered on the target python.
    `refuse`: False keeps every applying `unsupported:` entry in `Plan.refusals` instead of raising.
    `torch_index`: --torch-index, where --install-missing gets a ROCm torch instead of PyTorch's index."""
    plan = _render(recipe, host, options, work, out, ref=ref, source_dir=source_dir, cache=cache,
                   local_version=local_version, build_env=build_env, refuse=refuse, torch_index=torch_index)
    canonical = _render(recipe, replace(host, jobs=1, ccache=None, gpu=GpuAccess(False, "")), options,
                        WorkDirs(CANONICAL_ROOT / "work"), CANONICAL_ROOT / "out", ref=ref,
                        source_dir=source_dir, cache=CANONICAL_ROOT / "cache", local_version=local_version,
                        build_env=build_env, refuse=refuse, torch_index=torch_index)
    rendered = Rendered(
        env={k: v for k, v in canonical.base_env.items()
             if k not in LOCATION_ENV and k not in PARALLEL_ENV and k != EXTENSION_JOBS},
        patches=tuple(p.identity() for p in canonical.patches),
        steps=tuple(s.identity() for s in canonical.steps),
        checks=tuple(check_identity(c) for c in canonical.verify),
        local_label=canonical.local_label,
    )
    return replace(plan, rendered=rendered)


def _render(recipe: Recipe, host: Host, options: dict[str, Any], work: WorkDirs, out: Path, *,
            ref: str | None, source_dir: Path | None, cache: Path | None, local_version: str | None,
            build_env: bool = True, refuse: bool = True, torch_index: str | None = None) -> Plan:
    ctx = _context(recipe, host, options, work)
    r = Renderer(ctx)
    refusals = _refusals(r, recipe, host, options, refuse)
    # The recipe's ref may be a template (an option picks it); `ref` in templates is the one built.
    recipe_ref = r.text(recipe.source.ref, recipe.position("source.ref"), "source.ref") if recipe.source.ref else None
    effective_ref = ref or recipe_ref
    ctx["ref"] = effective_ref or ""
    step_tmp = _step_tmp(host, work)
    base_env = _base_env(r, recipe, host, work, cache, step_tmp)
    modules = _names(r, recipe.requires.python)
    env_plan = (make_build_env(work.root / "buildenv", host.python.executable, host.python.version, modules)
                if build_env and any(isinstance(e, Wheel) for e in recipe.steps) else None)
    requirements = _requirements(r, recipe, host, modules, with_build_env=env_plan is not None,
                                 torch_index=torch_index)
    source = _source(recipe, effective_ref, ref is not None, source_dir, cache, r, host.python.executable)
    extras = tuple(_extra(recipe, e, r, work, cache, host.python.executable)
                   for e in recipe.extra_sources if _applies(r, e))
    ctx["sources"] = {e.name: e.dest for e in extras}
    readable = _readable(recipe, host, work)
    patches = tuple(_patch(recipe, e, r, work, readable) for e in recipe.patches if _applies(r, e))
    wheel_python = env_plan.python if env_plan is not None else host.python.executable
    steps = tuple(_step(entry, r, host, work, wheel_python) for entry in recipe.steps if _applies(r, entry))
    if env_plan is not None:
        steps = _tools_first(steps, Path(env_plan.python).parent, base_env.get("PATH") or host.path)
    has_wheels = any(s.kind == "wheel" for s in steps)
    run_env = {name: r.text(c.value, c.pos, c.pos.key) for name, c in recipe.run_env if _applies(r, c)}
    return Plan(recipe=recipe, host=host, options=dict(options), work=work, out=out, source=source,
                requirements=requirements, base_env=base_env, patches=patches, steps=steps,
                verify=_checks(r, recipe, host, has_wheels, run_env), local_label=_local_label(recipe, host, r, local_version),
                build_env=env_plan if has_wheels else None, refusals=refusals, step_tmp=step_tmp, run_env=run_env,
                extra_sources=extras, arch_lists=_arch_lists(recipe))


def _context(recipe: Recipe, host: Host, options: dict[str, Any], work: WorkDirs) -> dict[str, Any]:
    """What templates see (recipe/templating.CONTEXT_NAMES)."""
    return {
        "archs": list(host.archs),
        "arch": host.archs[0] if host.archs else "",
        "rocm": RocmView(host.rocm),
        "python": PythonView(host.python.executable, host.python.version),
        "torch": TorchView(host.torch),
        "jobs": host.jobs,
        "options": dict(options),
        "src": str(work.src),
        "build": str(work.build),
        "dist": str(work.dist),
        "ref": "",
        "recipe": {"name": recipe.name, "version": recipe.version},
        "sources": {},
    }


def _refusals(r: Renderer, recipe: Recipe, host: Host, options: dict[str, Any],
              refuse: bool) -> tuple[tuple[str, RecipeError], ...]:
    """`unsupported:` entries that apply: raised now, or (with `step:`, or not `refuse`) kept for the steps
    they refuse ("" for the whole build)."""
    refusals = []
    for entry in recipe.unsupported:
        if entry.archs_not_in is None and _applies(r, entry):
            refusal = _refusal(recipe, host, options, entry)
            if entry.step is None and refuse:
                raise refusal
            refusals.append((entry.step or "", refusal))
    return tuple(refusals)


def _arch_lists(recipe: Recipe) -> tuple[ArchListCheck, ...]:
    """`archs-not-in:` entries, read from the source later (plan/archlists.py): the planner reads no source."""
    return tuple(ArchListCheck(e.archs_not_in.file, e.archs_not_in.set_, e.why, e.pos)
                 for e in recipe.unsupported if e.archs_not_in is not None)


def _step_tmp(host: Host, work: WorkDirs) -> Path:
    """The build's own TMPDIR. Debian's hipcc leaves an empty <source>-XXXXXX folder there for every
    compile (hundreds a build); the engine removes this folder when the steps end. Beside the user's
    TMPDIR rather than in the work folder: a path this short keeps room for the UNIX sockets tools make
    there (108 bytes). A root binds the machine's /tmp only. A confined step sees it as its /tmp, so it
    lies in the work area, on disk."""
    if host.confine.on:
        return work.root / "tmp"
    base = Path("/tmp") if host.root is not None else Path(host.environ.get("TMPDIR") or "/tmp")
    return base / f"rocbuild-{short_hash(str(work.root))}"


def _base_env(r: Renderer, recipe: Recipe, host: Host, work: WorkDirs, cache: Path | None,
              step_tmp: Path) -> dict[str, str]:
    """The environment every step gets: HIP's platform, ROCm's bin/, ccache, TMPDIR, the recipe's `env:`."""
    # hipcc picks NVIDIA when it also sees nvcc; a confined step sees its TMPDIR as its /tmp
    base_env = {"HIP_PLATFORM": "amd", "TMPDIR": "/tmp" if host.confine.on else str(step_tmp)}
    if host.confine.on:  # a confined step gets these variables and nothing else from this environment
        base_env.update(confined_env(host))
    # The job count (detect/jobs.py: cores, memory, the recipe's memory per job) for what runs its own
    # parallel build: cmake --build and build backends calling it, torch's cpp_extension (ninja -j).
    base_env.update({name: str(host.jobs) for name in PARALLEL_ENV})
    if host.rocm.layout in ("rocm", "pip"):  # AMD's trees put hipcc in bin/
        rocm_bin = str(host.rocm.path / "bin")
        path = host.path
        if rocm_bin not in path.split(os.pathsep):
            base_env["PATH"] = rocm_bin + os.pathsep + path
    if host.ccache:
        ccache_dir = (cache or cache_root()) / "ccache"
        base_env.update(_ccache_env(host.ccache, ccache_dir, work, base_env.get("PATH", host.path)))
        if recipe.requires.torch is not None:  # a torch extension: the torch required is a ROCm build
            # torch's cpp_extension calls hipcc by its full path under ROCM_HOME, and (for ROCm) adds no
            # compiler cache of its own; on its ninja path it takes this instead: the masquerade link, so a
            # --try that starts a fresh tree compiles again only the files whose inputs changed.
            base_env["PYTORCH_NVCC"] = str(ccache_dir / "bin" / "hipcc")
    if recipe.requires.torch is not None:
        base_env.update(_extension_shim_env(host, work))
    for name, cond in recipe.env:
        if _applies(r, cond):
            base_env[name] = r.text(cond.value, cond.pos, cond.pos.key)
    return base_env


def _extension_shim_env(host: Host, work: WorkDirs) -> dict[str, str]:
    """torch's BuildExtension builds a package's extensions one after another; the shim (engine/extshim)
    builds them at the same time within the job count. A recipe's `env:` may set EXTENSION_JOBS to 1."""
    user = [] if host.confine.on else [host.environ.get("PYTHONPATH", "")]
    return {EXTENSION_JOBS: str(host.jobs),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(extension_shim_dir(work)), *user]))}


def confined_env(host: Host) -> dict[str, str]:
    """What a confined step starts from instead of rocbuild's own environment: PATH, a throwaway HOME in
    its own /tmp (TMPDIR), the locale, and the ROCm locations and reproducibility settings given to rocbuild."""
    # PYTHONNOUSERSITE: the home folder is thrown away, and pip would quietly install there (into ~/.local)
    # instead of failing on a read-only site-packages.
    env = {"PATH": host.path or os.defpath, "HOME": CONFINED_HOME, "LANG": "C.UTF-8", "PYTHONNOUSERSITE": "1"}
    return env | {k: host.environ[k] for k in CONFINED_PASSED if host.environ.get(k)}


def _names(r: Renderer, items: tuple[Conditional, ...]) -> tuple[str, ...]:
    return tuple(r.text(c.value, c.pos, c.pos.key) for c in items if _applies(r, c))


def _requirements(r: Renderer, recipe: Recipe, host: Host, modules: tuple[str, ...], *,
                  with_build_env: bool, torch_index: str | None = None) -> Requirements:
    # With a build environment, the build modules are installed, not looked for; only what must come
    # from the target python itself is.
    checked = tuple(m for m in modules if not with_build_env or m.split(".")[0] in FROM_TARGET_ONLY)
    tools = _names(r, recipe.requires.tools)
    wanted = recipe.requires.torch
    torch = r.text(wanted.value, wanted.pos, wanted.pos.key) if wanted is not None and _applies(r, wanted) else None
    index = torch_index_for(host.rocm.version, torch_index)  # a bad --torch-index is refused whatever the recipe
    return Requirements(
        rocm=recipe.requires.rocm,
        tools=tools,
        python_modules=modules,
        cmake_packages=_names(r, recipe.requires.cmake_packages),
        python_check_argv=(host.python.executable, "-c", IMPORT_CHECK, *checked) if checked else None,
        torch=torch,
        torch_check_argv=probe_argv(host.python.executable) if torch else None,
        torch_index=index.url if torch else None,
        torch_index_problem=index.problem if torch else None,
        torch_install_argv=_torch_install(host, index.url) if torch else None,
        tool_versions={tool: spec for tool, spec in recipe.requires.tool_versions if tool in tools},
        headers=_names(r, recipe.requires.headers),
        libraries=_names(r, recipe.requires.libraries),
        openmp=host.rocm.openmp() if recipe.requires.openmp else None,
    )


def _torch_install(host: Host, index: str | None) -> tuple[str, ...] | None:
    """What --install-missing runs for the torch the target python has now: nothing for a ROCm build."""
    if index is None or (host.torch is not None and host.torch.flavour == "rocm"):
        return None
    return torch_install_argv(host.python.executable, index, replace=host.torch is not None)


def _checks(r: Renderer, recipe: Recipe, host: Host, has_wheels: bool, run_env: dict[str, str]) -> tuple[Check, ...]:
    entries = [e for e in recipe.verify if _applies(r, e)]
    opted_out = [e for e in entries if isinstance(e, CodeObjects) and not e.required]
    verify: list[Check] = []
    if has_wheels:
        # Every wheel: nothing links CUDA, and device code covers every arch unless the recipe says
        # it has none of its own (`code-objects: false`).
        archs = () if opted_out else tuple(host.archs)
        where = f"built in; device code not required ({opted_out[0].pos.describe()})" if opted_out else "built in"
        verify.append(CodeObjectsCheck(name="device-code", where=where, archs=archs, built_in=True))
    verify += [_verify_step(e, r, host, run_env) for e in entries if e not in opted_out]
    return tuple(verify)


class Conditioned(Protocol):
    """Anything a recipe writes a `when:` on: an entry, an env value, a name in a list, a refusal."""

    @property
    def when(self) -> str | None: ...
    @property
    def pos(self) -> Position: ...
    @property
    def when_pos(self) -> Position | None: ...


def _applies(r: Renderer, item: Conditioned) -> bool:
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
    """`+rocm6.1` by default; the recipe's `local-version` or --local-version change or drop it. Against a
    build-only torch it always ends in `buildonly`, whatever was asked: such a wheel loads nowhere."""
    label = _asked_label(recipe, host, r, override)
    if host.torch is None or not host.torch.build_only or label.split(".")[-1:] == [BUILD_ONLY_LABEL]:
        return label
    return f"{label}.{BUILD_ONLY_LABEL}" if label else BUILD_ONLY_LABEL


def _asked_label(recipe: Recipe, host: Host, r: Renderer, override: str | None) -> str:
    if override is not None:
        return override
    if recipe.local_version is None:
        v = host.rocm.version
        return f"rocm{v.major}.{v.minor}" if v is not None else ""
    pos = recipe.position("local-version")
    label = r.text(recipe.local_version, pos, "local-version")
    problem = local_label_problem(label) if label else None
    if problem is not None:
        what = "something that is not a PEP 440 local label" if problem.startswith("not ") else problem
        raise RecipeError(f"local-version renders to {what}", **_at(recipe, "local-version"), value=label,
                          accepted=LOCAL_LABEL_ACCEPTED)
    return label


def _at(recipe: Recipe, key: str) -> dict[str, Any]:
    """file, line and column of a key the loader kept the position of (else the file alone), and the key."""
    pos = recipe.position(key)
    if pos is None:
        return {"file": str(recipe.path), "key": key}
    return {"file": pos.file, "line": pos.line, "column": pos.column, "key": key}


def _verify_step(entry: CheckSpec, r: Renderer, host: Host, run_env: dict[str, str]) -> Check:
    """A check of the recipe's; what runs the built package (import, command) runs with its run-env."""
    name, where, env = entry.name, entry.pos.describe(), run_env | _entry_env(entry, r)
    key = f"{entry.pos.key}.{entry.KIND}"
    match entry:
        case Command():
            argv = _python_alias([r.text(a, entry.pos, key) for a in entry.argv], host)
            expect = tuple(r.text(p, entry.pos, f"{entry.pos.key}.expect") for p in entry.expect)
            return CommandCheck(name=name, where=where, argv=tuple(argv), env=env, expect=expect)
        case Import():
            module = r.text(entry.module, entry.pos, key)
            return ImportCheck(name=name, where=where, argv=(host.python.executable, "-c", IMPORT_ONE, module),
                               env=env, module=module)
        case WheelContains():
            return WheelContainsCheck(name=name, where=where, glob=r.text(entry.glob, entry.pos, key))
        case CodeObjects():
            wanted = ([r.text(a, entry.pos, key) for a in entry.archs] if entry.archs is not None
                      else list(host.archs))
            try:
                archs = parse_arch_list(",".join(wanted))
            except UsageError as exc:
                raise RecipeError(exc.message, file=entry.pos.file, line=entry.pos.line, column=entry.pos.column,
                                  key=f"{key}.archs", value=wanted, accepted="gfx targets such as gfx90a") from None
            return CodeObjectsCheck(name=name, where=where, archs=tuple(archs),
                                    files=tuple(r.text(f, entry.pos, key) for f in entry.files), links=entry.links)
        case _:
            assert_never(entry)


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
        return SdistSource.in_cache(src.sdist, cache or cache_root(), python, src.sha256)
    assert src.git is not None  # the loader requires exactly one of git, path and sdist
    commit = (None if overridden or not src.commit
              else r.text(src.commit, recipe.position("source.commit"), "source.commit").lower())
    _check_pin(None if overridden else ref, commit, "source", lambda key: _at(recipe, key))
    return GitSource(url=src.git, mirror=str(mirror_path(src.git, cache)), ref=ref, commit=commit,
                     submodules=src.submodules, ref_overridden=overridden)


def _check_pin(ref: str | None, commit: str | None, key: str, at: Callable[[str], dict[str, Any]]) -> None:
    """A git source's ref and commit as rendered: a ref git takes, a whole commit id. `at(KEY)`: where the
    recipe says KEY, for the error."""
    if ref is not None:
        try:
            check_ref(ref, f"{key}.ref")
        except UsageError as exc:
            raise RecipeError(exc.message, **at(f"{key}.ref"), value=ref,
                              accepted="a branch, tag or commit id") from None
    if commit is not None and not FULL_SHA_RE.match(commit):
        raise RecipeError(f"{key}.commit renders to something that is not a whole commit id", **at(f"{key}.commit"),
                          value=commit, accepted="the commit's full 40 hexadecimal digits")


def _extra(recipe: Recipe, entry: ExtraSource, r: Renderer, work: WorkDirs, cache: Path | None,
           python: str) -> ExtraTree:
    """An `extra-sources:` entry: a git repository (its commit rendered and checked as the source's is), an
    sdist or a folder, fetched into the work folder's sources/NAME."""
    key = f"extra-sources.{entry.name}"
    where = entry.pos.describe()
    dest = str(work.sources / entry.name)
    if entry.path is not None:
        return ExtraTree(entry.name, DirSource(str((recipe.directory / entry.path).resolve())), dest, where)
    if entry.sdist is not None:
        return ExtraTree(entry.name, SdistSource.in_cache(entry.sdist, cache or cache_root(), python, entry.sha256),
                         dest, where)
    assert entry.git is not None  # the loader requires one of git, path and sdist
    ref = r.text(entry.ref, entry.pos, f"{key}.ref") if entry.ref else None
    commit = r.text(entry.commit, entry.pos, f"{key}.commit").lower() if entry.commit else None
    pos = entry.pos
    _check_pin(ref, commit, key, lambda k: {"file": pos.file, "line": pos.line, "column": pos.column, "key": k})
    return ExtraTree(entry.name, GitSource(url=entry.git, mirror=str(mirror_path(entry.git, cache)), ref=ref,
                                           commit=commit, submodules=entry.submodules), dest, where)


def _readable(recipe: Recipe, host: Host, work: WorkDirs) -> tuple[str, ...]:
    """Where copy/link may read from: the tree, the ROCm prefix, the recipe's folders and its patches."""
    folders = [work.src, host.rocm.path, recipe.directory, *(p.parent for p, _ in recipe.bases), *recipe.patch_dirs]
    out: list[str] = []
    for folder in folders:
        for form in (os.path.normpath(folder), os.path.realpath(folder)):
            if form not in out:
                out.append(form)
    return tuple(out)


def _patch(recipe: Recipe, entry: PatchSpec, r: Renderer, work: WorkDirs,
           readable: tuple[str, ...]) -> PatchAction:
    key = f"{entry.pos.key}.{entry.KIND}"
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

    match entry:
        case Diff():
            dirs = recipe.patch_dirs or tuple(patch_dirs_for(recipe.path))
            path = find_patch_file(entry.file, dirs)
            if path is None:  # the loader checked; the file went away since
                raise RecipeError("patch file not found", file=entry.pos.file, line=entry.pos.line,
                                  column=entry.pos.column, key=key, value=entry.file)
            return DiffPatch(name=entry.file, path=str(path), sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                             where=where)
        case Replace():
            return ReplacePatch(file=in_tree(r.text(entry.file, entry.pos, f"{key}.file"), f"{key}.file"),
                                find=r.text(entry.find, entry.pos, f"{key}.find"),
                                replacement=r.text(entry.with_, entry.pos, f"{key}.with"), regex=entry.regex,
                                count=entry.count, where=where)
        case Link():
            return LinkPatch(source_glob=readable_source(r.text(entry.from_, entry.pos, f"{key}.from"), f"{key}.from"),
                             into=in_tree(r.text(entry.into, entry.pos, f"{key}.into"), f"{key}.into"), where=where,
                             readable=readable)
        case Copy():
            return CopyPatch(source=readable_source(r.text(entry.from_, entry.pos, f"{key}.from"), f"{key}.from"),
                             to=in_tree(r.text(entry.to, entry.pos, f"{key}.to"), f"{key}.to"), where=where,
                             readable=readable)
        case Remove():
            return RemovePatch(file=in_tree(r.text(entry.file, entry.pos, key), key), where=where)
        case _:
            assert_never(entry)


def _refusal(recipe: Recipe, host: Host, options: dict[str, Any], refusal: Refusal) -> RecipeError:
    chosen = ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in options.items())
    before = (f" (a build stopped before step {refusal.step!r} with --until is allowed)"
              if refusal.step else "")
    return RecipeError(f"{recipe.name} cannot be built with ROCm {host.rocm.version or '?'}"
                       + (f" and {chosen}" if chosen else "") + f": {refusal.why}{before}",
                       file=str(recipe.path), line=refusal.pos.line, column=refusal.pos.column,
                       key=refusal.pos.key, value=refusal.when,
                       accepted="another ROCm release or option (--set NAME=VALUE), as the reason says")


def _python_alias(argv: list[str], host: Host) -> list[str]:
    """`python` in an argv means the target python, never whatever is first on PATH."""
    if argv and argv[0] in PYTHON_ALIASES:
        argv[0] = host.python.executable
    return argv


def _entry_env(entry: StepSpec | CheckSpec, r: Renderer) -> dict[str, str]:
    env = {}
    for name, cond in entry.env:
        if _applies(r, cond):
            env[name] = r.text(cond.value, cond.pos, cond.pos.key)
    return env


def _step(entry: StepSpec, r: Renderer, host: Host, work: WorkDirs, wheel_python: str) -> Step:
    cwd = _in_src(work, r.text(entry.cwd, entry.pos, f"{entry.pos.key}.cwd") if entry.cwd else None, str(work.src))
    step = Step(name=entry.name, kind=entry.KIND, argv=None, cwd=cwd, env=_entry_env(entry, r),
                where=entry.pos.describe(), network=entry.network)
    key = f"{entry.pos.key}.{entry.KIND}"
    match entry:
        case Shell():
            script, values = r.shell(entry.script, entry.pos, key)
            return replace(step, env={**step.env, **values}, shell=script)
        case Run():
            return replace(step, argv=tuple(_python_alias(list(r.words(entry.argv, entry.pos, key)), host)))
        case CMake():
            return _cmake(step, entry, r, host, work)
        case CMakeBuild() | Make():
            return _build(step, entry, r, host, work)
        case Wheel():
            project = _in_src(work, r.optional(entry.dir, entry.pos, f"{key}.dir"), str(work.src))
            outdir = str(work.dist / entry.name)
            # -v: pip otherwise holds the backend's output back until it fails, so the log (and the
            # progress line read from it) would show no compile line of a build that goes well.
            argv = [wheel_python, "-m", "pip", "wheel", project, "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-v", "-w", outdir]
            settings = r.pairs(entry.config_settings, entry.pos, f"{key}.config-settings")
            argv += [f"--config-settings={k}={v}" for k, v in settings.items()]
            argv += r.words(entry.args, entry.pos, f"{key}.args")
            return replace(step, argv=tuple(argv), wheel_dir=outdir, project=project)
        case _:
            assert_never(entry)


def _tools_first(steps: tuple[Step, ...], tools: Path, path: str) -> tuple[Step, ...]:
    """A wheel step finds its build environment's commands (ninja, cmake, cython from `requires.python`)
    first on PATH, as pip's isolated builds do: torch's cpp_extension takes its ninja path only when
    `ninja` answers there, and compiles one file at a time otherwise."""
    first = f"{tools}{os.pathsep}{path}"
    return tuple(replace(s, env={"PATH": first, **s.env}) if s.kind == "wheel" else s for s in steps)


def _in_src(work: WorkDirs, value: str | None, default: str) -> str:
    """A folder a step names: relative ones are in the source tree."""
    if not value:
        return default
    return value if os.path.isabs(value) else os.path.normpath(os.path.join(work.src, value))


def _cmake(step: Step, entry: CMake, r: Renderer, host: Host, work: WorkDirs) -> Step:
    key = f"{entry.pos.key}.{entry.KIND}"
    build = _in_src(work, r.optional(entry.build, entry.pos, f"{key}.build"), str(work.build))
    argv = ["cmake", "-S", _in_src(work, r.optional(entry.source, entry.pos, f"{key}.source"), str(work.src)),
            "-B", build]
    generator = r.optional(entry.generator, entry.pos, f"{key}.generator")
    if generator:
        argv += ["-G", generator]
    defines = r.pairs(entry.defines, entry.pos, f"{key}.defines")
    # CMake's HIP language cannot find clang on distro layouts by itself; say it always.
    if host.rocm.hip_compiler:
        defines.setdefault("CMAKE_HIP_COMPILER", str(host.rocm.hip_compiler))
        defines.setdefault("CMAKE_HIP_COMPILER_ROCM_ROOT", str(host.rocm.path))
    argv += [f"-D{k}={v}" for k, v in defines.items()]
    argv += r.words(entry.args, entry.pos, f"{key}.args")
    return replace(step, argv=tuple(argv), build_dir=build)


def _build(step: Step, entry: CMakeBuild | Make, r: Renderer, host: Host, work: WorkDirs) -> Step:
    """cmake --build DIR (its build folder kept) or make -C DIR, with the host's jobs unless the recipe says."""
    key = f"{entry.pos.key}.{entry.KIND}"
    target = r.optional(entry.target, entry.pos, f"{key}.target")
    jobs = r.optional(entry.jobs, entry.pos, f"{key}.jobs") or str(host.jobs)
    if isinstance(entry, Make):
        argv = ["make", "-C", _in_src(work, r.optional(entry.dir, entry.pos, f"{key}.dir"), str(work.src)), f"-j{jobs}"]
        argv += [target] if target else []
        return replace(step, argv=(*argv, *r.words(entry.args, entry.pos, f"{key}.args")))
    build = _in_src(work, r.optional(entry.dir, entry.pos, f"{key}.dir"), str(work.build))
    config = r.optional(entry.config, entry.pos, f"{key}.config")
    argv = ["cmake", "--build", build, *(["--target", target] if target else []),
            *(["--config", config] if config else []), "--parallel", jobs]
    return replace(step, argv=tuple(argv), build_dir=build)
