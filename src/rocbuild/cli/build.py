"""`rocbuild build | plan | prepare | lock`: a recipe on this host, from request to Plan to the engine."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import rocbuild.engine.noop as noop
from rocbuild.cli.common import ROOT_HELP, Invocation, Subparsers, dump
from rocbuild.cli.trying import add_try_options
from rocbuild.plan.request import BuildRequest

if TYPE_CHECKING:  # the planner and what it loads are imported when a command runs, not for --help
    from collections.abc import Callable, Mapping

    from rocbuild.detect.python import Interpreter
    from rocbuild.engine.engine import BuildResult
    from rocbuild.plan.model import Plan


def register(sub: Subparsers) -> None:
    p = sub.add_parser("build", help="build a recipe into a verified wheel")
    _common(p)
    _in_root(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing (same as `plan`)")
    p.add_argument("--no-cache", action="store_true",
                   help="build even when the build cache holds a wheel for these inputs (and do not store one)")
    p.add_argument("--locked", action="store_true",
                   help="refuse to build unless recipe, patches, options and source commit match RECIPE.lock")
    p.add_argument("--json", action="store_true", help="with --dry-run: the plan as JSON; with --try: each try")
    add_try_options(p)
    p.set_defaults(handler=cmd_build)

    p = sub.add_parser("plan", help="print every step after rendering; runs nothing")
    _common(p)
    _in_root(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_plan)

    p = sub.add_parser("prepare", help="fetch and patch only; prints the tree's path last")
    _common(p)
    _in_root(p)
    p.set_defaults(handler=cmd_prepare)

    p = sub.add_parser("lock", help="write RECIPE.lock beside the recipe: source commit, sha256 of recipe "
                                    "and patches (`build --locked` holds a build to it)")
    _common(p)
    p.set_defaults(handler=cmd_lock)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", help="recipe name (see `rocbuild recipes`) or path to a .yaml file")
    p.add_argument("--arch", help="gfx target(s), comma-separated (default: the GPUs of this machine)")
    p.add_argument("--rocm", metavar="PATH", help="ROCm prefix (default: ROCM_PATH, hipcc's prefix, /opt/rocm, /usr)")
    p.add_argument("--python", metavar="PY",
                   help="target python for the wheel (default: this one): a path, a name, 3.13; build and plan take "
                        "several, 3.13,3.14, or all (every python3.X on PATH): one wheel each")
    p.add_argument("--out", metavar="DIR", default="wheelhouse", help="wheelhouse (default: ./wheelhouse)")
    p.add_argument("--work", metavar="DIR", help="work folder (default: under the XDG cache)")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="parallel jobs (default: from cores, available memory and the recipe's memory per job)")
    p.add_argument("--memory", metavar="SIZE", type=_size,
                   help="memory the build may use at most, e.g. 8GiB: fewer compile jobs when they would need more")
    p.add_argument("--ref", help="git branch, tag or commit to build instead of the recipe's")
    p.add_argument("--source-dir", metavar="DIR", help="build from this tree (copied, never modified)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="set a recipe option")
    p.add_argument("--until", metavar="STEP", help="stop after this step (or 'prepare')")
    p.add_argument("--clean", action="store_true", help="throw away earlier work and start over")
    p.add_argument("--recipes", action="append", default=[], metavar="DIR", help="extra recipe folder")
    p.add_argument("--local-version", metavar="LABEL",
                   help="PEP 440 local label for the wheels (default: the recipe's, else rocmX.Y; 'none' drops it)")
    p.add_argument("-v", "--verbose", action="store_true", help="stream every command's output")


def _size(text: str) -> int:
    from rocbuild.detect.jobs import SIZE_ACCEPTED, parse_size

    size = parse_size(text)
    if size is None or size <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not {SIZE_ACCEPTED}")
    return size


def _in_root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", metavar="NAME|DIR", help=ROOT_HELP)
    p.add_argument("--install-missing", action="store_true",
                   help="install what the recipe requires and lacks: a ROCm torch into the target python (pip, "
                        "from --torch-index or PyTorch's index for this ROCm); with --root, Debian packages too")
    p.add_argument("--torch-index", metavar="URL",
                   help="the package index (http, https or file URL) --install-missing takes a ROCm torch from "
                        "(default: PyTorch's for this ROCm release): a mirror, AMD's, one for a newer ROCm")
    p.add_argument("--no-build-env", action="store_true",
                   help="build wheels with the target python as it is, instead of a build environment layered on "
                        "it holding the recipe's requires.python and the project's build-system.requires")
    p.add_argument("--no-confine", action="store_true",
                   help="run build steps with this machine's network, files, GPU and environment, instead of "
                        "each in a sandbox (bubblewrap) that sees none of them and writes only the work folder")


def build_request(args: argparse.Namespace, inv: Invocation, *, need_archs: bool = True) -> BuildRequest:
    return BuildRequest(
        recipe=args.recipe, arch=args.arch, rocm=args.rocm, python=args.python, out=args.out, work=args.work,
        jobs=args.jobs, memory=args.memory, ref=args.ref, source_dir=args.source_dir, settings=tuple(args.set),
        recipe_dirs=tuple(args.recipes), local_version=args.local_version, need_archs=need_archs,
        build_env=not getattr(args, "no_build_env", False), environ=dict(inv.environ), root=inv.root,
        torch_index=getattr(args, "torch_index", None), confine=not getattr(args, "no_confine", False),
    )


def make_build_plan(args: argparse.Namespace, inv: Invocation, *, need_archs: bool = True) -> Plan:
    from rocbuild.errors import UsageError
    from rocbuild.plan.assemble import plan_for

    if args.python and ("," in args.python or args.python.strip() == "all"):
        raise UsageError(f"--python {args.python}: `{args.command}` takes one python",
                         hint="build and plan take several (one wheel per python); name one here")

    request = build_request(args, inv, need_archs=need_archs)
    if getattr(args, "install_missing", False) and inv.root is None:
        _check_install_missing(request)
    return plan_for(request)


def _check_install_missing(request: BuildRequest) -> None:
    """On this machine --install-missing installs only a ROCm torch; Debian packages go into a build root.
    Said before the host is looked at, for a recipe that requires no torch."""
    from rocbuild.errors import UsageError
    from rocbuild.plan.assemble import choose

    recipe = choose(request).recipe
    if recipe.requires.torch is None:
        raise UsageError(f"--install-missing: {recipe.name} requires no torch, and on this machine only a ROCm torch "
                         "is installed (into the target python); Debian packages go into a build root: give "
                         "--root NAME too",
                         hint="on this machine itself, install what `rocbuild plan` lists with its package manager")


def cmd_plan(args: argparse.Namespace, inv: Invocation) -> int:
    """One plan per python of --python (as JSON, a list when it names several or `all`)."""
    import rocbuild.cli.show as show
    from rocbuild.engine.until import check_until

    plans = [_with_arch_lists(make_build_plan(each, inv)) for each in per_python(args, inv)]
    for plan in plans:
        check_until(plan, args.until)
    if args.json:
        asked = args.python or ""
        several = len(plans) > 1 or "," in asked or asked.strip() == "all"
        dump([plan.to_json() for plan in plans] if several else plans[0].to_json())
    else:
        for plan in plans:
            show.plan_text(plan)
    return 0


def _with_arch_lists(plan: Plan) -> Plan:
    """An sdist not in the cache yet is downloaded (its archive only: nothing is unpacked or run), so the
    plan can hold the archs asked for against the arch list the package keeps itself (`archs-not-in:`)."""
    from rocbuild.source.spec import SdistSource

    if not isinstance(plan.source, SdistSource) or all(c.listed is not None for c in plan.arch_lists):
        return plan
    import tempfile

    from rocbuild.errors import StepFailed
    from rocbuild.plan.archlists import read_arch_lists
    from rocbuild.source.sdist import resolve_sdist

    def say(line: str) -> None:
        print(f"plan: {line}", file=sys.stderr)

    lists = ", ".join(f"{c.variable} in {c.file}" for c in plan.arch_lists)
    say(f"reading {lists} from the sdist {plan.source.requirement}")
    with tempfile.TemporaryDirectory(prefix="rocbuild-plan-") as tmp:
        try:
            resolve_sdist(plan.source, say, Path(tmp) / "fetch.log")
        except StepFailed as exc:  # offline: the build reads it once the sdist is fetched
            say(f"not read ({exc.message}); the build checks the archs once it has the sdist, before any step")
            return plan
    return read_arch_lists(plan)


def per_python(args: argparse.Namespace, inv: Invocation) -> list[argparse.Namespace]:
    """The command's arguments once per python of --python (`3.13,3.14`, `all`, or one)."""
    from rocbuild.detect.python import python_choices

    return [argparse.Namespace(**{**vars(args), "python": py})
            for py in python_choices(args.python, inv.environ.get("PATH", ""))]


def cmd_build(args: argparse.Namespace, inv: Invocation) -> int:
    """One wheel per python of --python, built one after another: each its own plan and work folder;
    the compile work they share is shared through ccache (the same sources, flags and compiler)."""
    if args.dry_run:
        return cmd_plan(args, inv)
    if args.try_:
        from rocbuild.cli.trying import cmd_try

        return cmd_try(args, inv)
    from rocbuild.recipe.catalog import UnknownRecipe

    each = per_python(args, inv)
    try:
        for one in each:
            build_one(one, inv, stamp=len(each) == 1)
    except UnknownRecipe as exc:
        from rocbuild.cli.trying import how_to_draft

        raise UnknownRecipe(exc.message, hint=f"{exc.hint}\n{how_to_draft(exc.name, args.arch)}", name=exc.name) from None
    if len(each) > 1:
        print(f"built for {len(each)} pythons: {', '.join(str(one.python) for one in each)}", file=sys.stderr)
    return 0


def build_one(args: argparse.Namespace, inv: Invocation, *, stamp: bool) -> tuple[Plan, BuildResult]:
    """Against a build-only torch (`rocbuild root torch`), with the kit's lock held shared throughout:
    planning reads the kit, the compile reads its headers, and a remake meanwhile would break both."""
    from rocbuild.progress import Progress
    from rocbuild.torchkit.lock import holding, kit_lock_path

    kit = kit_lock_path(Path(args.python)) if args.python else None
    waiting = (f"waiting: `rocbuild root torch` is making the build-only torch of {args.python}; "
               "this build starts once it is made")
    with holding(kit, exclusive=False, waiting=waiting, say=Progress().say) as kit_fd:
        return _build_planned(args, inv, kit_fd, stamp=stamp)


def _build_planned(args: argparse.Namespace, inv: Invocation, kit_fd: int | None, *,
                   stamp: bool) -> tuple[Plan, BuildResult]:
    from rocbuild.engine.cache import BuildCache
    from rocbuild.engine.engine import Engine
    from rocbuild.paths import cache_root
    from rocbuild.process.runner import Runner
    from rocbuild.progress import Progress

    plan = make_build_plan(args, inv)
    here = _interpreter_meanwhile(None if inv.root or not plan.has_wheel_steps else inv.environ)
    if getattr(args, "print_plans", False):
        import rocbuild.cli.show as show

        show.plan_text(plan, lambda line: print(line, file=sys.stderr))
    runner = Runner(verbose=args.verbose, memory=args.memory, memory_per_job=_per_job(plan))
    # How far a long step is, on the terminal only: -v streams every line, --json keeps stderr to the steps.
    progress = Progress(watch=not args.verbose and not getattr(args, "json", False))
    confine = plan.host.confine
    if not confine.on and confine.asked and plan.steps and confine.why not in _SAID:
        _SAID.add(confine.why)  # once per command, not once per --try
        print(f"note: build steps are not confined: {confine.why}", file=sys.stderr)
    if kit_fd is not None:
        runner.keep_open(kit_fd)  # a compile that outlives a killed rocbuild still holds the kit
    if args.install_missing and plan.requirements.torch is not None and Engine(plan, runner, progress).install_torch():
        # Planned again against the torch now there: its templates (torch.version, torch.rocm_home), the
        # local label (a build-only torch's wheels say so) and the checks it decides were read from the old.
        plan = make_build_plan(args, inv)
    cache = None if args.no_cache else BuildCache(cache_root() / "builds")
    # --try in a root installs the Debian packages a fix requires, never a torch (a download the user did not ask for)
    packages = args.install_missing or getattr(args, "try_packages", False)
    engine = Engine(plan, runner, progress, cache=cache, install_missing=packages)
    result = engine.build(clean=args.clean, until=args.until, locked=args.locked)
    stdout, stderr = _outcome(args, plan, result)
    stderr += _installs(result.wheels, here)
    if getattr(args, "try_", False):  # the wheels are said once, when the tries end
        stdout = ""
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    if stamp and result.wheels and inv.root is None and args.arch and not noop.wants_full_run(inv.argv):
        _stamp(inv, plan, result.wheels, stdout)
    return plan, result


_SAID: set[str] = set()


def _per_job(plan: Plan) -> int:
    from rocbuild.detect.jobs import DEFAULT_MEMORY_PER_JOB

    return plan.recipe.requires.memory_per_job or DEFAULT_MEMORY_PER_JOB


def _outcome(args: argparse.Namespace, plan: Plan, result: BuildResult) -> tuple[str, str]:
    """What a build prints: its wheels (stdout), and a line saying where they came from (stderr)."""
    wheels, archs = result.wheels, ", ".join(plan.host.archs) or "no GPU target (no device code of their own)"
    stdout, stderr = "".join(f"{w}\n" for w in wheels), ""
    if wheels and result.from_cache:
        stderr = (f"reused {len(wheels)} wheel(s) for {archs} from the build cache ({(result.cache_key or '')[:16]}; "
                  f"no build step ran, verify passed again) into {plan.out}\n")
    elif wheels:
        stderr = f"built {len(wheels)} wheel(s) for {archs} into {plan.out}\n"
    elif plan.output == "tree" and args.until is None:
        stdout = f"{plan.work.src}\n"
        stderr = f"done: {plan.recipe.name}'s prepared tree is {plan.work.src}\n"
    elif not plan.has_wheel_steps and args.until is None:
        stderr = f"done: the built tree is {plan.work.src}\n"
    root = plan.host.root
    if wheels and root is not None:
        stderr += (f"built in root {root.name} ({root.origin}): the wheels need its glibc and "
                   "libstdc++ or newer to load; no manylinux tag is claimed\n")
    return stdout, stderr


def _interpreter_meanwhile(environ: Mapping[str, str] | None) -> Callable[[], Interpreter | None]:
    """This machine's python3 (on environ's PATH; None in a build root), asked on a thread while the build runs: a
    pyenv shim takes about 0.1 s to answer, a sixth of a build served from the build cache. Its answer and the
    host probes may both write probes.json: each write is whole (atomic), and one lost costs a probe next time."""
    if environ is None:
        return lambda: None
    from concurrent.futures import ThreadPoolExecutor

    from rocbuild.detect.python import default_interpreter

    pool = ThreadPoolExecutor(max_workers=1)
    asked = pool.submit(default_interpreter, environ.get("PATH", ""), environ)
    pool.shutdown(wait=False)  # the one task runs on; `result` waits for it, and raises what it raised
    return asked.result


def _installs(wheels: tuple[Path, ...], interpreter: Callable[[], Interpreter | None]) -> str:
    """Where each wheel installs, and whether this machine's python3 can install it (not in a build root)."""
    from rocbuild.verify.inputs import inspect_input
    from rocbuild.verify.text import install_lines

    here = interpreter() if wheels else None
    lines = [f"{wheel.name}:\n" + "\n".join(install_lines(inspect_input(wheel).floors, here, "  "))
             for wheel in wheels]
    return "".join(f"{line}\n" for line in lines)


def _stamp(inv: Invocation, plan: Plan, wheels: tuple[Path, ...], stdout: str) -> None:
    """The no-op stamp of this build (engine/noop.py): the same command finds it and answers at once."""
    from rocbuild import __version__
    from rocbuild.engine.noop_inputs import build_inputs
    from rocbuild.paths import cache_root

    files = build_inputs(plan, wheels)
    if files is None:
        return
    path = noop.stamp_path(str(cache_root() / "noop"), inv.argv, os.getcwd(), inv.environ, __version__)
    try:
        noop.write(path, files, stdout)
    except OSError:  # the wheels are in place; only the quick answer next time is lost
        pass


def cmd_prepare(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.engine.engine import Engine
    from rocbuild.process.runner import Runner
    from rocbuild.progress import Progress

    plan = make_build_plan(args, inv)
    print(Engine(plan, Runner(verbose=args.verbose), Progress()).prepare(clean=args.clean))
    return 0


def cmd_lock(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.engine.engine import Engine
    from rocbuild.process.runner import Runner
    from rocbuild.progress import Progress

    plan = make_build_plan(args, inv, need_archs=False)  # the lock does not depend on the targets
    path, lock = Engine(plan, Runner(verbose=args.verbose), Progress()).lock()
    print(path)
    print(f"locked {plan.recipe.name}: {lock.describe_source()}; recipe sha256 {lock.recipe_sha256[:16]}; "
          f"{len(lock.patches)} patch file(s)", file=sys.stderr)
    return 0
