"""Text presenters: the plan, what detection found, the build cache. Judgement lives elsewhere."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocbuild.compat import assert_never
from rocbuild.detect.arch import ArchDetection
from rocbuild.detect.python import PythonInfo
from rocbuild.detect.rocm import Rocm
from rocbuild.plan.confine import sandbox, writable
from rocbuild.plan.model import CodeObjectsCheck, CommandCheck, ImportCheck, Plan, WheelContainsCheck
from rocbuild.plan.records import nearest, records_file
from rocbuild.process.runner import SHELL
from rocbuild.source.spec import DirSource, GitSource, SdistSource, SourceSpec

Out = Callable[[str], None]


def plan_text(plan: Plan, out: Out = print) -> None:
    _host(plan, out)
    if plan.options:
        out("  options: " + ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}"
                                      for k, v in plan.options.items()))
    out(f"  work:   {plan.work.root}")
    if plan.output == "tree":
        out(f"  output: the prepared tree {plan.work.src} (no wheel)")
    else:
        out(f"  wheelhouse: {plan.out}")
    _requirements(plan, out)
    out("environment (changes for every step; BASH_ENV, ENV, SHELLOPTS, BASH_FUNC_* and the like are removed, "
        "so nothing but each argv runs):")
    for k, v in plan.base_env.items():
        out(f"  {k}={v}")
    if plan.ccache_bin is not None:
        out(f"ccache: {plan.host.ccache} launches CMake's compilers (the *_COMPILER_LAUNCHER variables above); "
            f"a hipcc called by name runs through the link {plan.ccache_bin / 'hipcc'} -> ccache")
    out("reuse: the work folder is reused while the build identity's tree part (source, patches, toolchain "
        "down to its compiler binaries, target python, environment, archs, options) is unchanged; otherwise "
        "it starts from a fresh tree and build folder")
    if plan.has_wheel_steps:
        out("build cache: when a wheel was already built from this exact build identity, it is verified again "
            "and reused, and no step runs (--no-cache builds anyway)")
    _prepare(plan, out)
    _confinement(plan, out)
    out("steps:")
    for i, step in enumerate(plan.steps, 1):
        out(f"  {i}. {step.name} ({step.kind})   [{step.where}]")
        out(f"     cwd:  {step.cwd}")
        for k, v in step.env.items():
            out(f"     env:  {k}={shlex.quote(v)}")
        if step.shell is not None:
            out(f"     argv: {json.dumps([SHELL, '-c', step.shell])}  (template values reach it only as the "
                "variables ROCBUILD_VALUE_N above)")
        else:
            out(f"     argv: {json.dumps(list(step.argv or ()))}")
        if step.wheel_dir is not None:
            out(f"     wheels: only what this step writes to {step.wheel_dir} (emptied first) are collected")
        if step.network:
            out("     network: allowed for this step (the recipe says `network: true`)")
    if plan.has_wheel_steps:
        label = f"+{plan.local_label}" if plan.local_label else "none (--local-version/recipe dropped it)"
        out(f"wheels: local version label {label}; provenance JSON (the build identity) added to the "
            ".dist-info, RECORD rewritten")
        if plan.recipe.runpath == "relative":
            out(f"wheels: RUNPATH/RPATH entries inside {plan.work.root} become $ORIGIN-relative (the folder in the "
                "wheel that holds the libraries they name); others stay (recipe: runpath: relative)")
    _checks(plan, out)
    _closing(plan, out)


def _closing(plan: Plan, out: Out) -> None:
    if plan.has_wheel_steps:
        out(f"then: wheels move into {plan.out} (only after every check passed)")
    if plan.run_env:
        out("at run time the package needs (recipe's run-env; set for the checks above, recorded in the provenance): "
            + " ".join(f"{k}={shlex.quote(v)}" for k, v in plan.run_env.items()))


def _confinement(plan: Plan, out: Out) -> None:
    confine = plan.host.confine
    if not confine.on or not plan.steps:
        out(f"confinement: none: steps run with this machine's network, files, GPU and environment ({confine.why})")
        return
    out(f"confinement: each step runs in a sandbox ({confine.why}): no network, no GPU, the machine read-only "
        f"but for {', '.join(writable(plan))} and its own /tmp ({plan.step_tmp}), no home folder, only the "
        "variables above; step 1 is entered as")
    out(f"    {shlex.join(sandbox(plan, plan.steps[0]))} ARGV")


def _host(plan: Plan, out: Out) -> None:
    h, r = plan.host, plan.host.rocm
    out(f"plan: {plan.recipe.name} {plan.recipe.version}  ({plan.recipe.path})")
    out(f"  archs:  {', '.join(h.archs) or 'none: its wheels hold no device code of their own (code-objects: false)'}")
    for check in plan.arch_lists:
        if check.listed is None:
            out(f"          checked against {check.variable} in {check.file} once the source is fetched, before any step")
        else:
            out(f"          listed in {check.variable} ({check.file}:{check.line}, read from {check.read_from}): "
                + ", ".join(check.listed))
    out(f"  rocm:   {r.version or 'unknown'} at {r.path} ({r.layout} layout)")
    out(f"  python: {h.python.executable} ({h.python.version})   jobs: {h.jobs} ({h.jobs_why})")
    root = h.root
    if root is not None:
        out(f"  root:   {root.name} ({root.origin}, {root.tree}, id {root.id}): "
            "every argv below, every probe and check runs inside it, entered as")
        out(f"    {shlex.join(root.enter)} ARGV")
        out("    (plus --setenv for each variable; wheels built here need this root's glibc and libstdc++: "
            "no manylinux tag is claimed)")
    if h.components:
        shown = ", ".join(f"{name} {version}" for name, version in sorted(h.components.items()))
        out(f"  ROCm components (in the build identity: a change runs the build again): {shown}")
    if h.override:
        out(f"  HSA_OVERRIDE_GFX_VERSION={h.override} is in effect (recorded with the build)")
    record = nearest(plan.recipe.name, h.archs, plan.options, records_file(h.environ))
    if record is not None:
        out(f"  the real-build records: {record.describe()}")


def _requirements(plan: Plan, out: Out) -> None:
    req = plan.requirements
    out("requirements (checked before anything runs):")
    tools = [f"{t} {req.tool_versions[t]}" if t in req.tool_versions else t for t in req.tools]
    out(f"  rocm {req.rocm or '(any)'}; tools: {', '.join(tools) or '-'}; "
        f"cmake packages: {', '.join(req.cmake_packages) or '-'}")
    if req.headers or req.libraries:
        libraries = ", ".join(f"lib{n}.so" for n in req.libraries)
        out(f"  headers: {', '.join(req.headers) or '-'}; libraries: {libraries or '-'}")
    if req.openmp is not None:
        package = f" (Debian package {req.openmp.package})" if req.openmp.package else ""
        out(f"  OpenMP for the HIP compiler {req.openmp.compiler}: {req.openmp.header_glob}{package}")
    for tool in req.tool_versions:
        out(f"    argv: {json.dumps([tool, '--version'])}  (its first X.Y.Z must satisfy {req.tool_versions[tool]})")
    if req.python_check_argv:
        out(f"  python modules: {', '.join(req.python_modules)}")
        out(f"    argv: {json.dumps(list(req.python_check_argv))}")
    _root_packages(plan, out)
    _build_env_and_torch(plan, out)


def _root_packages(plan: Plan, out: Out) -> None:
    """In a root: the Debian packages that provide each requirement, and how --install-missing installs them."""
    req, root = plan.requirements, plan.host.root
    if root is None:  # on the host: none of the Debian side is imported
        return
    from rocbuild.engine.requirements import root_packages
    from rocbuild.roots.apt import apt_commands
    from rocbuild.roots.packages import Wanted, map_requirements

    wanted = Wanted.of(req.tools, req.cmake_packages, req.headers, req.libraries,
                       req.openmp.package if req.openmp else None, plan.host.rocm.amd_tree)
    if not wanted.items:
        return
    mapping = map_requirements(wanted, root_packages(root))
    for label, package in mapping.packages.items():
        out(f"  {label}: {root.packages_of} package {package}")
    for label in mapping.unknown:
        out(f"  {label}: no package of {root.origin} is known to provide it"
            + (" (yet: an image's apt indexes are read after the update below)" if root.image else ""))
    update, install = apt_commands(["<the missing ones>"], root.apt_target)
    out(f"  with --install-missing, the missing ones are installed into the root first: "
        f"argv: {json.dumps(update)}, then {json.dumps(install)}")


def _build_env_and_torch(plan: Plan, out: Out) -> None:
    req, env = plan.requirements, plan.build_env
    if env is not None:
        out(f"  build environment (wheel steps run in it; --no-build-env: the target python as it is): {env.folder}")
        out(f"    argv: {json.dumps(list(env.create_argv))}")
        out(f"    argv: {json.dumps(list(env.site_argv))}  (its answer: the target's site folders, imported "
            f"after the venv's own through {env.site}/rocbuild-target.pth)")
        if env.modules:
            out(f"    argv: {json.dumps(list(env.check_argv))}  (which modules it still lacks)")
        out(f"    argv: {json.dumps(list(env.install_argv(['<what it lacks>', '<build-system.requires>'])))}")
        out("    (<build-system.requires>: read from each wheel step's pyproject.toml after prepare, torch left "
            "out; nothing runs while the list is unchanged)")
    if req.torch_check_argv:
        out("  torch in the target python: a ROCm build (its torch/version.py is read; torch is not imported)")
        out(f"    argv: {json.dumps(list(req.torch_check_argv))}")
        _torch_install(plan, out)


def _torch_install(plan: Plan, out: Out) -> None:
    req, torch = plan.requirements, plan.host.torch
    if req.torch_install_argv:
        had = f"its torch {torch.version or '?'} is {torch.flavour}" if torch else "it has no torch"
        out(f"    with --install-missing ({had}), one is installed from {req.torch_index} first, before anything "
            "is fetched (refused for a Python managed by the system, PEP 668):")
        out(f"    argv: {json.dumps(list(req.torch_install_argv))}")
    elif req.torch_index is None:
        out(f"    --install-missing cannot install one: {req.torch_index_problem}")
    elif torch is not None:
        out(f"    it has one (torch {torch.version or '?'}, hip {torch.hip}): --install-missing installs none")


def _prepare(plan: Plan, out: Out) -> None:
    out("prepare:")
    _fetch(plan.source, plan.work.src, out, "")
    for extra in plan.extra_sources:
        out(f"  extra source {extra.name} (sources.{extra.name} in templates)   [{extra.where}]")
        _fetch(extra.source, Path(extra.dest), out, "  ")
    for i, p in enumerate(plan.patches, 1):
        out(f"  patch {i}: {p.describe()}   [{p.where}]")


def _fetch(s: SourceSpec, dest: Path, out: Out, indent: str) -> None:
    match s:
        case DirSource():
            out(f"{indent}  copy {s.directory} -> {dest} (the original is never modified)")
        case GitSource():
            pin = f" (pinned to {s.commit})" if s.commit else ""
            over = " (--ref overrides the recipe)" if s.ref_overridden else ""
            out(f"{indent}  git {s.url} @ {s.ref or 'HEAD'}{pin}{over}; submodules: {'yes' if s.submodules else 'no'}")
            out(f"{indent}  through GitPython (clone only when the mirror is new, fetch only when the ref is missing or "
                "moves; each command is written to the prepare log):")
            for cmd in s.commands(str(dest)):
                out(f"{indent}    argv: {json.dumps(cmd)}")
        case SdistSource():
            pin = f", checked against sha256 {s.sha256}" if s.sha256 else " (no sha256 pin: `rocbuild lock` records one)"
            out(f"{indent}  the sdist {s.requirement} from the package index{pin}; downloaded only when {s.download_dir} "
                f"holds no archive (the index pip is configured with, its PEP 691 page read and the file it lists "
                f"checked against the index's sha256: nothing is built), then unpacked into {dest}:")
            for cmd in s.commands(str(dest)):
                out(f"{indent}    argv: {json.dumps(cmd)}")
        case _:
            assert_never(s)


def _checks(plan: Plan, out: Out) -> None:
    if not plan.verify:
        return
    out("verify (every wheel, before it reaches the wheelhouse):")
    if plan.has_wheel_steps and any(isinstance(c, (CommandCheck, ImportCheck)) for c in plan.verify):
        out(f"  the wheels are installed into {plan.work.verify / 'site'} (pip's --target layout, by pypa "
            f"installer inside rocbuild; no command runs), then PYTHONPATH and PATH point there")
    for check in plan.verify:
        match check:
            case CodeObjectsCheck():
                out(f"  {check.name} (code-objects)   [{check.where}]")
                files = f"; device code required in {', '.join(check.files)}" if check.files else ""
                cover = f"device code covers {', '.join(check.archs)}" if check.archs else "device code not checked"
                links = f"; those files link {', '.join(check.links)}" if check.links else ""
                major = ""
                if check.built_in and plan.host.rocm.version is not None:
                    major = f"; ROCm libraries of one major, {plan.host.rocm.version.major}"
                out(f"     every ELF file: no CUDA library{major}; {cover}{files}{links}")
            case WheelContainsCheck():
                out(f"  {check.name} (wheel-contains)   [{check.where}]")
                out(f"     a wheel member matches {check.glob}")
            case ImportCheck():
                out(f"  {check.name} (import)   [{check.where}]")
                skip = "" if plan.host.gpu.usable else f"  (will be skipped: {plan.host.gpu.reason})"
                out(f"     argv: {json.dumps(list(check.argv))}{skip}")
            case CommandCheck():
                out(f"  {check.name} (command)   [{check.where}]")
                out(f"     argv: {json.dumps(list(check.argv))}")
                for pattern in check.expect:
                    out(f"     expect: /{pattern}/")
            case _:
                assert_never(check)


def detect_text(detection: ArchDetection, rocm: Rocm | None, python: PythonInfo, jobs: int, out: Out = print) -> None:
    archs = ", ".join(detection.archs) or "none"
    out(f"archs:  {archs}  (from {detection.source})")
    for gpu in detection.gpus:
        name = f"  {gpu.marketing_name}" if gpu.marketing_name else ""
        out(f"  gpu: {gpu.target_id}{name}  [{gpu.source}]")
    if detection.override:
        o = detection.override
        hw = f"; the hardware is {', '.join(o.hardware)}" if o.hardware else ""
        out(f"override: HSA_OVERRIDE_GFX_VERSION={o.value} -> runtime reports {o.gfx}{hw}; "
            "wheels built here target the reported arch")
    for note in detection.notes:
        out(f"note: {note}")
    if rocm is None:
        out("rocm:   not found (give --rocm PATH, set ROCM_PATH, or install hipcc)")
    else:
        out(f"rocm:   {rocm.version or 'unknown version'} at {rocm.path}  ({rocm.layout} layout, found by "
            f"{rocm.found_by}; version from {rocm.version_source})")
        out(f"  FindHIP.cmake:  {rocm.cmake_hip_dir or 'not found'}")
        out(f"  hip-lang:       {rocm.hip_lang_dir or 'not found'}")
        out(f"  HIP clang++:    {rocm.hip_compiler or 'not found'}")
    out(f"python: {python.executable} ({python.version})")
    out(f"jobs:   {jobs}")


def cache_text(root: str, entries: list[dict[str, Any]], sizes: dict[str, int], out: Out = print) -> None:
    out(f"cache: {root}")
    for name, size in sizes.items():
        out(f"  {name + '/':<16} {human_size(size)}")
    out(f"build cache: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}")
    for e in entries:
        out(f"  {e['key'][:16]}  {e['recipe']} {e['version']}  {','.join(e['archs'])}  rocm {e['rocm']}  "
            f"py{e['python']}  {human_size(e['size'])}  last used {e['last_used']}Z")
        for w in e["wheels"]:
            out(f"      {w}")


def human_size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)
