"""Command line: rocbuild [build] RECIPE | plan | prepare | lock | verify | doctor | detect | recipes | cache
| index | ci | root.

Exit codes: 0 ok; 1 a step or a verify check failed; 2 bad usage, recipe or value; 3 host not
ready (no ROCm, no GPU and no --arch, missing tool or package); 130 interrupted (Ctrl-C), 143
SIGTERM, 129 SIGHUP: a running step's whole process group is stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from rocbuild import __version__
from rocbuild.errors import RocbuildError, UsageError
from rocbuild.process.interrupts import Interrupted, raise_interrupted

COMMANDS = ("build", "plan", "prepare", "lock", "verify", "doctor", "detect", "recipes", "cache", "index", "repair", "ci",
            "root")
ROOT_HELP = "run inside this build root (see `rocbuild root list`): a root's name, or a folder holding a Debian tree"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own errors: same shape and exit code as ours
        raise UsageError(message, hint=f"see `{self.prog} --help`")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", help="recipe name (see `rocbuild recipes`) or path to a .yaml file")
    p.add_argument("--arch", help="gfx target(s), comma-separated (default: the GPUs of this machine)")
    p.add_argument("--rocm", metavar="PATH", help="ROCm prefix (default: ROCM_PATH, hipcc's prefix, /opt/rocm, /usr)")
    p.add_argument("--python", metavar="PY", help="target python for the wheel (default: this one)")
    p.add_argument("--out", metavar="DIR", default="wheelhouse", help="wheelhouse (default: ./wheelhouse)")
    p.add_argument("--work", metavar="DIR", help="work folder (default: under the XDG cache)")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="parallel jobs (default: from cores and memory)")
    p.add_argument("--ref", help="git branch, tag or commit to build instead of the recipe's")
    p.add_argument("--source-dir", metavar="DIR", help="build from this tree (copied, never modified)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="set a recipe option")
    p.add_argument("--until", metavar="STEP", help="stop after this step (or 'prepare')")
    p.add_argument("--clean", action="store_true", help="throw away earlier work and start over")
    p.add_argument("--recipes", action="append", default=[], metavar="DIR", help="extra recipe folder")
    p.add_argument("--local-version", metavar="LABEL",
                   help="PEP 440 local label for the wheels (default: the recipe's, else rocmX.Y; 'none' drops it)")
    p.add_argument("-v", "--verbose", action="store_true", help="stream every command's output")


def _in_root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", metavar="NAME|DIR", help=ROOT_HELP)
    p.add_argument("--install-missing", action="store_true",
                   help="with --root: install the Debian packages the recipe requires into the root")
    p.add_argument("--no-build-env", action="store_true",
                   help="build wheels with the target python as it is, instead of a build environment layered on "
                        "it holding the recipe's requires.python and the project's build-system.requires")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rocbuild", description="Build ROCm-native Python extensions from recipes.",
                     epilog="`rocbuild RECIPE ...` is short for `rocbuild build RECIPE ...`")
    parser.add_argument("--version", action="version", version=f"rocbuild {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("build", help="build a recipe into a verified wheel")
    _common(p)
    _in_root(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing (same as `plan`)")
    p.add_argument("--no-cache", action="store_true",
                   help="build even when the build cache holds a wheel for these inputs (and do not store one)")
    p.add_argument("--locked", action="store_true",
                   help="refuse to build unless recipe, patches, options and source commit match RECIPE.lock")
    p.add_argument("--json", action="store_true", help="with --dry-run: the plan as JSON")

    p = sub.add_parser("plan", help="print every step after rendering; runs nothing")
    _common(p)
    _in_root(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("prepare", help="fetch and patch only; prints the tree's path last")
    _common(p)
    _in_root(p)

    p = sub.add_parser("lock", help="write RECIPE.lock beside the recipe: source commit, sha256 of recipe "
                                    "and patches (`build --locked` holds a build to it)")
    _common(p)

    p = sub.add_parser("verify", help="check wheels or libraries: device code per arch, no CUDA libraries")
    p.add_argument("paths", nargs="+", metavar="WHEEL", help="wheels, shared libraries or folders")
    p.add_argument("--arch", help="gfx target(s) that must be covered (default: this machine's GPUs)")
    p.add_argument("--all-files", action="store_true", help="list every ELF file, not only the relevant ones")
    p.add_argument("--files", action="append", default=[], metavar="GLOB",
                   help="judge only files matching GLOB (repeatable; e.g. the ROCm part of a multi-backend wheel)")
    p.add_argument("--allow-cuda", action="store_true", help="CUDA libraries are noted, not failures")
    p.add_argument("--deep", action="store_true",
                   help="decompress every compressed bundle in full to check its size (slower)")
    p.add_argument("-v", "--verbose", action="store_true", help="every bundle entry and code object, not one line per file")
    p.add_argument("--json", action="store_true", help="per-file findings as JSON")

    p = sub.add_parser("doctor", help="preflight checks of ROCm, GPUs, device access, torch and installed "
                                      "extensions; exit 1 when one fails")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--python", metavar="PY", help="the Python whose torch and extensions are checked (default: this one)")
    p.add_argument("--rocm", metavar="PATH", help="ROCm prefix (default: as for build)")
    p.add_argument("--sysfs", metavar="ROOT",
                   help="look at a file tree standing in for / (its sys/, dev/, proc/, etc/group) instead")
    p.add_argument("--rocminfo", metavar="FILE", help="read this rocminfo output instead of running rocminfo")
    p.add_argument("--root", metavar="NAME|DIR", help=ROOT_HELP)

    p = sub.add_parser("detect", help="show the GPUs, ROCm and python rocbuild finds")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--arch", help="as for build: skips GPU detection")
    p.add_argument("--rocminfo", metavar="FILE", help="read this rocminfo output instead of running rocminfo")
    p.add_argument("--sysfs", metavar="ROOT", help="read KFD topology under ROOT instead of /sys")
    p.add_argument("--rocm", metavar="PATH")
    p.add_argument("--python", metavar="PY")
    p.add_argument("--root", metavar="NAME|DIR", help=ROOT_HELP)

    p = sub.add_parser("root", help="build roots: Debian userlands holding a real ROCm release, made from "
                                    "Debian's packages (create, list, path, remove, install, run, suites)")
    p.add_argument("action", choices=("create", "list", "path", "remove", "install", "run", "suites"))
    p.add_argument("names", nargs="*", help="create/path/remove: the root's name; install: NAME PACKAGE...; "
                                            "run: NAME -- COMMAND... (in the current folder, shared)")
    p.add_argument("--rocm", metavar="X.Y", help="create: the ROCm release the root holds")
    p.add_argument("--suite", help="create: the Debian suite (default: the one that carries --rocm now)")
    p.add_argument("--mirror", metavar="URL", help="Debian mirror (default: this machine's apt configuration)")
    p.add_argument("--with", dest="with_packages", action="append", default=[], metavar="PACKAGE",
                   help="create: another Debian package to install (repeatable)")
    p.add_argument("--json", action="store_true", help="machine-readable output (list, create, suites)")

    p = sub.add_parser("recipes", help="list, show, lint or create recipes; add, update or remove recipe sources; "
                                       "status: what each was last built and verified with for real")
    p.add_argument("action", nargs="?", default="list",
                   choices=("list", "show", "lint", "new", "add", "update", "remove", "sources", "status"))
    p.add_argument("names", nargs="*", help="show/new: a recipe name; lint: recipe files; add: a git URL or "
                                            "folder; update/remove: source names")
    p.add_argument("--recipes", action="append", default=[], metavar="DIR", help="extra recipe folder")
    p.add_argument("--json", action="store_true", help="machine-readable output (list, sources)")
    p.add_argument("--ref", help="add: the branch, tag or commit of the recipe repository (default: its HEAD)")
    p.add_argument("--name", help="add: the source's name (default: from the URL or folder)")
    p.add_argument("-o", "--output", metavar="FILE", help="new: where to write (default: ./NAME.yaml)")
    p.add_argument("--results", metavar="FILE",
                   help="status: a real-builds results file (default: the one shipped with rocbuild)")

    p = sub.add_parser("cache", help="the build cache: list entries, prune them, or print the cache folder")
    p.add_argument("action", nargs="?", default="list", choices=("list", "prune", "path"))
    p.add_argument("--older-than", type=float, metavar="DAYS", help="prune: only entries unused for DAYS days")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("index", help="write a PEP 503 simple index (WHEELHOUSE/simple) over a folder of wheels")
    p.add_argument("wheelhouse", metavar="WHEELHOUSE")
    p.add_argument("-o", "--output", metavar="DIR", help="where the index goes (default: WHEELHOUSE/simple)")
    p.add_argument("--by-rocm", action="store_true",
                   help="one index per ROCm release, WHEELHOUSE/rocmX.Y/simple, from each wheel's +rocmX.Y label "
                        "(pip then gets the build for its ROCm, never the highest label of all)")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("repair", help="make wheels publishable: auditwheel with ROCm's and torch's libraries left "
                                      "out (the user's ROCm and torch provide them), retagged manylinux")
    p.add_argument("wheels", nargs="+", metavar="WHEEL")
    p.add_argument("-w", "--out", metavar="DIR", help="where the repaired wheels go (default: WHEEL's folder/repaired)")
    p.add_argument("--exclude", action="append", default=[], metavar="SONAME",
                   help="another library to leave out (wildcards: libfoo.so.*), besides ROCm's and torch's")
    p.add_argument("--plat", metavar="TAG", help="the platform tag to ask for (default: the best the wheel satisfies)")
    p.add_argument("--json", action="store_true", help="machine-readable output")

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
    p.add_argument("-o", "--output", metavar="FILE", help="github: write the workflow here (default: stdout)")
    p.add_argument("--json", action="store_true", help="matrix: JSON (the default and only form)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in COMMANDS and not args_list[0].startswith("-"):
        args_list.insert(0, "build")
    handlers = {sig: signal.signal(sig, raise_interrupted) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        args = build_parser().parse_args(args_list)
        if args.command is None:
            build_parser().print_help()
            return 0
        from rocbuild.roots.enter import inside

        if getattr(args, "install_missing", False) and not getattr(args, "root", None) and inside() is None:
            raise UsageError("--install-missing installs Debian packages into a build root: give --root NAME too",
                             hint="on this machine itself, install what `rocbuild plan` lists with its package manager")
        if getattr(args, "root", None):
            if inside() is None:
                from rocbuild.cli.root import run_in_root

                return run_in_root(args, args_list)
        from rocbuild.cli.commands import HANDLERS  # the handlers import everything; --help needs none of it

        return HANDLERS[args.command](args)
    except RocbuildError as exc:
        _say(exc.render())
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or Interrupted by SIGTERM/SIGHUP; a running step's group is stopped
        code = exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT
        _say(f"\ninterrupted ({exc if isinstance(exc, Interrupted) else 'SIGINT'}): run the same command again "
             "to resume (finished steps are kept)")
        return code
    except BrokenPipeError:  # the reader of our output went away (`| head`): nothing more to say
        _quiet_stdout()
        return 0
    except OSError as exc:  # the machine, not the input: a full disk, a folder that vanished, no permission
        where = f" ({exc.filename})" if exc.filename else ""
        _say(f"error: {exc.strerror or exc}{where}\n  free space or fix the folder, then run the same command "
             "again: finished steps are kept")
        return 1
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)


def _say(text: str) -> None:
    try:
        print(text, file=sys.stderr)
    except (BrokenPipeError, ValueError):
        pass


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not raise a second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
