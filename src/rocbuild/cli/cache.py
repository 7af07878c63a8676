"""`rocbuild cache ACTION`: the build cache's entries, pruning them, and the cache folder."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rocbuild.cli.common import Invocation, Subparsers, action, actions, dump
from rocbuild.errors import UsageError

COMMAND = "cache"


def register(sub: Subparsers) -> None:
    acts = actions(sub, COMMAND, "the build cache: list entries, prune them, or print the cache folder")
    p = action(acts, COMMAND, "list", cmd_list, "the build cache's entries and the other folders' sizes")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = action(acts, COMMAND, "prune", cmd_prune, "remove build cache entries")
    p.add_argument("--older-than", type=float, metavar="DAYS", help="only entries unused for DAYS days")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    action(acts, COMMAND, "path", cmd_path, "print the cache folder")


def cmd_path(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.paths import cache_root

    print(cache_root())
    return 0


def cmd_prune(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.cli.show as show
    from rocbuild.engine.cache import BuildCache
    from rocbuild.paths import cache_root

    if args.older_than is not None and args.older_than < 0:
        raise UsageError(f"--older-than {args.older_than:g}: must be 0 or more days")
    removed = BuildCache(cache_root() / "builds").prune(args.older_than)
    freed = sum(size for _, size in removed)
    if args.json:
        dump({"removed": [e.key for e, _ in removed], "freed": freed})
    else:
        age = f" unused for {args.older_than:g} days" if args.older_than is not None else ""
        print(f"removed {len(removed)} build cache entr{'y' if len(removed) == 1 else 'ies'}{age}"
              + (f", {show.human_size(freed)} freed" if removed else ""))
    return 0


def cmd_list(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.cli.show as show
    from rocbuild.engine.cache import BuildCache
    from rocbuild.paths import cache_root

    root = cache_root()
    entries = [e.to_json() for e in BuildCache(root / "builds").entries()]
    others = {name: _folder_size(root / name) for name in ("mirrors", "ccache", "work", "buildenvs", "recipe-sources")}
    if args.json:
        dump({"root": str(root), "builds": entries, "sizes": others})
        return 0
    show.cache_text(str(root), entries, others)
    return 0


def _folder_size(folder: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total
