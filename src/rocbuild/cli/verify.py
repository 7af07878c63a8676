"""`rocbuild verify`: wheels, libraries or folders judged for device code per arch and CUDA links."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocbuild.cli.common import Invocation, Subparsers, dump

if TYPE_CHECKING:
    from rocbuild.detect.python import Interpreter
    from rocbuild.verify.verdict import Verdict


def register(sub: Subparsers) -> None:
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
    p.set_defaults(handler=cmd_verify)
    p = sub.add_parser("diagnose", help="the failure report of a build log: its first errors, the known trap, the fix")
    p.add_argument("log", metavar="LOG", help="a step's log (the work folder's logs/NN-STEP.log), or any build log")
    p.add_argument("--tree", metavar="DIR", help="the source tree, for the trap detectors on its build files "
                                                  "(where a fix would go)")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.set_defaults(handler=cmd_diagnose)


def cmd_verify(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.detect.arch import detect_archs
    from rocbuild.detect.python import default_interpreter
    from rocbuild.verify.text import format_verdict
    from rocbuild.verify.verdict import verify_paths

    if args.arch is not None:
        archs, source = parse_verify_archs(args.arch), "--arch"
    else:
        detection = detect_archs(None, environ=inv.environ)
        archs = detection.archs
        source = f"this machine's GPUs, by {detection.source}" if archs else "no --arch and no GPU found"
    verdict = verify_paths([Path(p) for p in args.paths], archs, source, only=tuple(args.files),
                           allow_cuda=args.allow_cuda, require_device_code=False, deep=args.deep)
    here = default_interpreter(inv.environ.get("PATH", ""), inv.environ)
    if args.json:
        dump(_with_installs(verdict.to_json(), verdict, here))
    else:
        print(format_verdict(verdict, quiet_files=not args.all_files, verbose=args.verbose, here=here))
    return 0 if verdict.ok else 1


def cmd_diagnose(args: argparse.Namespace, inv: Invocation) -> int:
    """Exit 0 when the log shows no error, 1 when it does (the report names it), 2 for a log that cannot be read."""
    from rocbuild.draft.report import Context, diagnose
    from rocbuild.errors import UsageError

    log = Path(args.log)
    try:
        text = log.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {log}: {exc.strerror or exc}", hint="give the path of a build log") from None
    tree = Path(args.tree) if args.tree else None
    if tree is not None and not tree.is_dir():
        raise UsageError(f"--tree {tree}: not a folder", hint="give the source tree the log was built from")
    report = diagnose(text, Context(tree=tree))
    if args.json:
        dump(report.to_json())
    else:
        print("\n".join(report.lines(log)))
    return 1 if any(e.cause for e in report.errors) else 0


def _with_installs(data: dict[str, Any], verdict: Verdict, here: Interpreter | None) -> dict[str, Any]:
    """Each wheel's entry says whether this machine's python3 can install it."""
    from rocbuild.verify.floors import installs_on, what_it_takes

    for entry, found in zip(data["inputs"], verdict.inputs, strict=True):
        floors = found.floors
        if floors is None or here is None:
            continue
        why = installs_on(floors, here)
        entry["installs_here"] = {"python": here.executable, "ok": why is None, "why": why,
                                  "what_it_takes": None if why is None else what_it_takes(floors, here)}
    return data


def parse_verify_archs(text: str) -> list[str]:
    """--arch for verify: build targets as for build, plus generic ISAs (gfx11-generic), any letter case."""
    from rocbuild.detect.arch import parse_arch_list
    from rocbuild.gfx import GENERIC_MEMBERS

    items = [a.strip().lower() for a in text.split(",") if a.strip()]
    generic = [a for a in items if a.split(":")[0] in GENERIC_MEMBERS]
    rest = [a for a in items if a not in generic]
    return generic + (parse_arch_list(",".join(rest)) if rest else [])
