"""`rocbuild ci github | matrix`: CI at scale, a GitHub Actions workflow or the build matrix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rocbuild.cli.common import Invocation, Subparsers, dump
from rocbuild.errors import UsageError


def register(sub: Subparsers) -> None:
    p = sub.add_parser("ci", help="CI at scale: a GitHub Actions workflow, or the build matrix as JSON")
    p.add_argument("target", choices=("github", "matrix"))
    p.add_argument("--recipes", metavar="A,B", required=True, help="the recipes to build, comma-separated")
    p.add_argument("--arch", help="gfx targets (default: those each ROCm release supports officially)")
    p.add_argument("--rocm", metavar="X.Y,...", help="ROCm releases (default: 6.4)")
    p.add_argument("--python", metavar="3.X,...", help="python versions (default: 3.11)")
    p.add_argument("--split-arch", action="store_true",
                   help="one job per arch instead of one fat build; each arch's wheels carry it in their "
                        "local version (+rocmX.Y.gfxNNN), so they sit side by side in the index")
    p.add_argument("--container", metavar="IMAGE|none",
                   help="build image, {rocm} is the release (default: rocm/dev-ubuntu-22.04:X.Y.Z-complete, "
                        "24.04 from ROCm 7); none: build on the runner's own system (a self-hosted runner with ROCm)")
    p.add_argument("--runs-on", metavar="LABELS", help="runner labels, comma-separated (default: ubuntu-latest; "
                                                        "e.g. self-hosted,linux,rocm with --container none)")
    p.add_argument("--install", metavar="SPEC", help="pip requirement that installs rocbuild in the jobs "
                                                     "(default: where this rocbuild came from, when a runner can "
                                                     "reach it)")
    p.add_argument("--pages", action="store_true", help="also deploy the index to GitHub Pages (from main)")
    p.add_argument("--recipes-check", action="store_true",
                   help="github: add a weekly job running `rocbuild recipes check` on the recipes, its report "
                        "in the job summary and an artifact (the builds do not run on that schedule)")
    p.add_argument("-o", "--output", metavar="FILE", help="github: write the workflow here (default: stdout)")
    p.add_argument("--json", action="store_true", help="matrix: JSON (the default and only form)")
    p.set_defaults(handler=cmd_ci)


def cmd_ci(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.ci.workflow as ci
    from rocbuild.recipe.catalog import RecipeDirs

    recipes = ci.split_list(args.recipes, "--recipes", None, (), "recipe names, comma-separated")
    rocms = ci.split_list(args.rocm, "--rocm", ci.ROCM_RE, ci.DEFAULT_ROCM, "ROCm releases such as 6.4,7.2")
    pythons = ci.split_list(args.python, "--python", ci.PYTHON_RE, ci.DEFAULT_PYTHON, "3.X versions such as 3.10,3.11")
    runs_on = ci.check_runs_on(args.runs_on)
    matrix = ci.build_matrix(recipes, rocms, pythons, args.arch, args.split_arch, RecipeDirs.of([], inv.environ),
                             container=args.container)
    for e in matrix.excluded:
        print(f"left out: {e['recipe']} on ROCm {e['rocm']} ({e['reason']})", file=sys.stderr)
    if args.target == "matrix":
        if args.output or args.pages or args.install or args.runs_on or args.recipes_check:
            raise UsageError("`ci matrix` prints the matrix only; -o, --pages, --install and --runs-on go with "
                             "`ci github`")
        dump(matrix.to_json())
        return 0
    if args.container == ci.NO_CONTAINER and runs_on == ("ubuntu-latest",):
        print("note: --container none builds on the runner's own system, and GitHub's ubuntu-latest has no ROCm: "
              "name your runners with --runs-on (e.g. self-hosted,linux,rocm); each job checks its ROCm first",
              file=sys.stderr)
    install = args.install or ci.default_install(Path.cwd())
    text = ci.github_workflow(matrix, install=install, runs_on=runs_on, pages=args.pages, check=args.recipes_check)
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}: {len(matrix.entries)} build job(s) + index", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
