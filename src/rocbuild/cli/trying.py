"""`--try` on the command line: `rocbuild build FILE --try`, `rocbuild build NAME==VERSION --try` (a fresh
draft of that sdist) and `rocbuild recipes new NAME --sdist SPEC --try`. The loop itself is attempt/loop.py;
this reads the arguments, plans and builds each try as `build` does, and says how it ended.

Exit codes: 0 the recipe verified; 4 no trap in the catalogue matched the failure; 5 the tries or the time
ran out; in both of those the best draft is kept and the last failure report printed."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rocbuild.cli.common import Invocation, dump

if TYPE_CHECKING:
    from rocbuild.attempt.loop import Outcome
    from rocbuild.engine.engine import BuildResult
    from rocbuild.plan.model import Plan

DRAFTED = "recipes"  # under the XDG config folder: verified drafts, found by `rocbuild recipes`
UNVERIFIED = "drafts"  # under the XDG cache folder: drafts that did not verify, drafted again next time


def add_try_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--try", dest="try_", action="store_true",
                   help="on a failed step or check, apply the fix of the known trap it shows to the recipe file "
                        "and build again, until it verifies (exit 0), no trap matches (4) or the tries run out (5)")
    p.add_argument("--max-tries", type=int, default=6, metavar="N", help="with --try: builds at most (default 6)")
    p.add_argument("--time-limit", type=float, metavar="MINUTES", help="with --try: start no new try after this long")
    p.add_argument("--print-plans", action="store_true", help="with --try: print each try's plan before it runs")


def cmd_try(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.attempt.loop import Limits, try_recipe
    from rocbuild.errors import UsageError
    from rocbuild.progress import Progress

    if args.python and ("," in args.python or args.python.strip() == "all"):
        raise UsageError(f"--python {args.python}: --try builds for one python", hint="name one")
    if args.max_tries < 1:
        raise UsageError(f"--max-tries {args.max_tries}: give 1 or more")
    path, fresh = _recipe_file(args, inv)
    say = Progress().say
    if inv.root is not None and not args.install_missing:
        # a fix that names a requirement (a ROCm library, a system library's header) is only half a fix while the
        # root lacks it: the root is rocbuild's own, and its packages come from its distribution's archive
        say(f"--try in root {inv.root.name}: the Debian packages the recipe requires are installed into the root")
        args.try_packages = True
    outcome = try_recipe(path, lambda n: _one_try(args, inv, path), Limits(args.max_tries, (
        args.time_limit * 60 if args.time_limit else None)), say)
    if fresh is not None:
        path = _keep(path, outcome.status == "verified")
    _tell(args, outcome, path)
    return outcome.exit_code


def how_to_draft(name: str, arch: str | None) -> str:
    """For a name no recipe has: what the index says of the package, and the exact command that drafts and
    builds it. Nothing is downloaded on a guess (a typo could name someone else's package)."""
    from rocbuild.source.index import index_settings, project_summary
    from rocbuild.source.spec import sdist_problem

    project, _, version = name.partition("==")
    if sdist_problem(f"{project}==1") is not None:
        return "it is no package name either"
    found = project_summary(project, index_settings(sys.executable, lambda _: None))
    if found is None:
        return f"the package index knows no project {project!r} either"
    newest, summary = found
    spec = f"{project}=={version or newest}"
    targets = f" --arch {arch}" if arch else ""
    return (f"on the package index: {project} {newest}" + (f": {summary}" if summary else "") + "\n"
            f"to draft a recipe from that sdist and build it, fixing the known traps: "
            f"rocbuild build {spec} --try{targets}\n"
            f"(or write the draft only: rocbuild recipes new {project} --sdist {spec}{targets})")


def _one_try(args: argparse.Namespace, inv: Invocation, path: Path) -> tuple[Plan, BuildResult]:
    from rocbuild.cli.build import build_one

    one = argparse.Namespace(**{**vars(args), "recipe": str(path)})
    return build_one(one, inv, stamp=False)


def _recipe_file(args: argparse.Namespace, inv: Invocation) -> tuple[Path, str | None]:
    """The recipe file --try edits, and the NAME==VERSION it was freshly drafted from (None: the user's file)."""
    from rocbuild.errors import UsageError
    from rocbuild.source.spec import sdist_problem

    if os.path.isfile(args.recipe):
        return Path(args.recipe), None
    if "==" in args.recipe and sdist_problem(args.recipe) is None:
        _no_recipe_for(args.recipe.partition("==")[0].strip(), args, inv)
        return draft_fresh(args.recipe, args.arch), args.recipe
    raise UsageError(f"--try edits the recipe file it builds, and {args.recipe!r} is no file",
                     hint="give a recipe file (a shipped one: `rocbuild recipes show NAME > NAME.yaml`), or "
                          "NAME==VERSION to build that sdist from a fresh draft")


def _no_recipe_for(project: str, args: argparse.Namespace, inv: Invocation) -> None:
    """A package that has a recipe is built from it: a fresh draft would throw its knowledge away."""
    from rocbuild.errors import UsageError
    from rocbuild.recipe.catalog import RecipeDirs, UnknownRecipe, resolve

    name = project.lower().replace("_", "-")
    try:
        found = resolve(name, RecipeDirs.of(args.recipes, inv.environ))
    except UnknownRecipe:
        return
    raise UsageError(f"{project} has a recipe ({found.origin}: {found.path}): it is built from that, not a fresh draft",
                     hint=f"rocbuild build {name} --arch ...; to try a draft of it anyway, `rocbuild recipes new "
                          f"{name}-draft --sdist {args.recipe} --try`")


def draft_fresh(requirement: str, arch: str | None) -> Path:
    """A draft of the sdist, in the unverified drafts folder: the build runs from it."""
    from rocbuild.cli.recipes import draft_text
    from rocbuild.detect.arch import parse_arch_list
    from rocbuild.fsutil import write_text_atomically
    from rocbuild.paths import cache_root

    name = requirement.partition("==")[0].strip().lower().replace("_", "-")
    print(f"building {requirement} from a fresh draft: no recipe for {name} anywhere rocbuild looks", file=sys.stderr)
    path = cache_root() / UNVERIFIED / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, draft_text(name, requirement, parse_arch_list(arch) if arch else []))
    return path


def _keep(path: Path, verified: bool) -> Path:
    """A verified draft goes where `rocbuild recipes` finds it; one that did not stays with the drafts."""
    import shutil

    from rocbuild.paths import config_root

    if not verified:
        return path
    kept = config_root() / DRAFTED / path.name
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(path, kept)
    return kept


def _tell(args: argparse.Namespace, outcome: Outcome, path: Path) -> None:
    err = sys.stderr
    if outcome.diff:
        err.write("the recipe, against what it started from:\n" + "".join(outcome.diff))
    for attempt in outcome.attempts:
        fixed = f"; then {attempt.trap}: {attempt.fix}" if attempt.trap else ""
        err.write(f"try {attempt.number}: {attempt.outcome} in {attempt.seconds:.0f} s"
                  f"{f' ({attempt.failure})' if attempt.failure else ''}{fixed}\n")
    if outcome.status == "verified":
        err.write(f"verified after {len(outcome.attempts)} tr{'y' if len(outcome.attempts) == 1 else 'ies'}: "
                  f"the recipe is {path}\n")
    else:
        by_hand = ", ".join(outcome.by_hand)
        why = {"no-trap": f"the known trap {by_hand} needs a fix by hand (see its why)" if by_hand else
               "nothing in the trap catalogue matches the failure",
               "exhausted": f"{args.max_tries} tries used", "time-limit": "the time limit is reached"}[outcome.status]
        err.write(f"not verified: {why}. The best draft so far is {path}; the last failure:\n")
        err.write("\n".join(outcome.report) + "\n")
    if args.json:
        dump({**outcome.to_json(), "recipe": str(path)})
    else:
        sys.stdout.write("".join(f"{w}\n" for w in outcome.wheels))


def try_new(args: argparse.Namespace, inv: Invocation, out: Path) -> int:
    """`recipes new NAME --sdist SPEC --try`: the draft just written, built with --try as `build` would."""
    import rocbuild.cli.build as build
    from rocbuild.cli.app import build_parser, parse

    argv = ["build", str(out), "--try", "--max-tries", str(args.max_tries)]
    for flag, value in (("--arch", args.arch), ("--python", args.python), ("--time-limit", args.time_limit),
                        ("--out", args.out), ("--work", args.work)):
        argv += [flag, str(value)] if value is not None else []
    argv += ["--print-plans"] if args.print_plans else []
    argv += ["--json"] if args.json else []
    return cmd_try(parse(build_parser(build), argv), inv)
