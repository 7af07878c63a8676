"""`rocbuild index` and `rocbuild repair`: wheelhouses people install from."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rocbuild.cli.common import Invocation, Subparsers, dump
from rocbuild.errors import UsageError


def register(sub: Subparsers) -> None:
    p = sub.add_parser("index", help="write a PEP 503 simple index (WHEELHOUSE/simple) over a folder of wheels")
    p.add_argument("wheelhouse", metavar="WHEELHOUSE")
    p.add_argument("-o", "--output", metavar="DIR", help="where the index goes (default: WHEELHOUSE/simple)")
    p.add_argument("--by-rocm", action="store_true",
                   help="one index per ROCm release, WHEELHOUSE/rocmX.Y/simple, from each wheel's +rocmX.Y label "
                        "(pip then gets the build for its ROCm, never the highest label of all)")
    _allow_build_only(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("repair", help="make wheels publishable: auditwheel with ROCm's and torch's libraries left "
                                      "out (the user's ROCm and torch provide them), retagged manylinux")
    p.add_argument("wheels", nargs="+", metavar="WHEEL")
    p.add_argument("-w", "--out", metavar="DIR", help="where the repaired wheels go (default: WHEEL's folder/repaired)")
    p.add_argument("--exclude", action="append", default=[], metavar="SONAME",
                   help="another library to leave out (wildcards: libfoo.so.*), besides ROCm's and torch's")
    p.add_argument("--plat", metavar="TAG", help="the platform tag to ask for (default: the best the wheel satisfies)")
    _allow_build_only(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_repair)


def _allow_build_only(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-build-only", action="store_true",
                   help="take wheels built against a build-only torch (`rocbuild root torch`) too: they load nowhere")


def cmd_index(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.wheelhouse.index import build_index, build_rocm_indexes

    if args.by_rocm:
        if args.output:
            raise UsageError("--by-rocm writes WHEELHOUSE/rocmX.Y/simple: leave out -o")
        indexes = build_rocm_indexes(Path(args.wheelhouse), allow_build_only=args.allow_build_only)
        if args.json:
            dump({release: {"index": str(folder), "url": folder.as_uri() + "/", "projects": projects}
                  for release, (folder, projects) in indexes.items()})
            return 0
        for release, (folder, projects) in sorted(indexes.items()):
            count = sum(len(w) for w in projects.values())
            print(f"ROCm {release}: {count} wheel(s) of {', '.join(sorted(projects))}: {folder}")
        return 0
    folder, projects = build_index(Path(args.wheelhouse), Path(args.output) if args.output else None,
                                   allow_build_only=args.allow_build_only)
    if args.json:
        dump({"index": str(folder), "url": folder.as_uri() + "/", "projects": projects})
        return 0
    for name, wheels in sorted(projects.items()):
        print(f"{name}: {len(wheels)} wheel(s)")
    print(f"index: {folder}\ninstall with: pip install --index-url {folder.as_uri()}/ PROJECT")
    return 0


def cmd_repair(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.wheelhouse.repair import repair

    done = []
    for name in args.wheels:
        wheel = Path(name)
        out = Path(args.out) if args.out else wheel.parent / "repaired"
        print(f"repairing {wheel.name} (auditwheel, ROCm and torch libraries left out)", file=sys.stderr)
        done.append(repair(wheel, out, inv.environ, extra_exclude=tuple(args.exclude), plat=args.plat,
                           allow_build_only=args.allow_build_only))
    if args.json:
        dump([r.to_json() for r in done])
        return 0
    for r in done:
        print(r.wheel)
        print(f"  platform: {', '.join(r.platforms)}", file=sys.stderr)
        print(f"  from the user's ROCm/torch: {', '.join(r.external) or 'nothing'}", file=sys.stderr)
        print(f"  copied in: {', '.join(Path(g).name for g in r.grafted) or 'nothing'}", file=sys.stderr)
    return 0
