"""`rocbuild root ...`, and `--root` on build, plan, prepare, detect and doctor."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.paths import cache_root, config_root
from rocbuild.progress import Progress
from rocbuild.roots import enter
from rocbuild.roots.apt import install_packages, run_in
from rocbuild.roots.store import all_roots, check_name, find_root, remove_root

ROOT_FLAGS = ("--root",)


def cmd_root(args: argparse.Namespace) -> int:
    action = args.action
    names: list[str] = list(args.names)
    if action == "list":
        roots = all_roots()
        if args.json:
            print(json.dumps([r.to_json() for r in roots], indent=2))
        elif not roots:
            print("no build roots; make one with `rocbuild root create NAME --rocm 7.2`")
        for root in roots if not args.json else []:
            row = root.to_json()
            versions = row["versions"]
            print(f"{root.name:<14} ROCm {row['rocm'] or '?':<8} Debian {row['suite'] or '?':<13} "
                  f"hipcc {versions.get('hipcc', '?'):<20} python3 {versions.get('python3', '?'):<12} {root.tree}")
        return 0
    if action == "suites":
        return _suites(args)
    if not names:
        raise UsageError(f"usage: rocbuild root {action} NAME" + (" --rocm X.Y" if action == "create" else "")
                         + (" PACKAGE..." if action == "install" else ""))
    if action == "create":
        return _create(args, names)
    if action == "path":
        print(find_root(names[0]).tree)
        return 0
    if action == "remove":
        print(f"removed {remove_root(names[0])}")
        return 0
    if action == "run":
        if len(names) < 2:
            raise UsageError("usage: rocbuild root run NAME -- COMMAND [ARG...]")
        return run_in(find_root(names[0]), names[1:])
    if action == "install":
        root = find_root(names[0])
        if len(names) < 2:
            raise UsageError(f"usage: rocbuild root install {names[0]} PACKAGE...")
        return install_packages(root, names[1:], Progress())
    raise UsageError(f"root {action}: unknown action")


def _suites(args: argparse.Namespace) -> int:
    from rocbuild.roots.archive import Archive, resolve_mirror

    archive = Archive(resolve_mirror(args.mirror))
    suites = archive.suites()
    if args.json:
        print(json.dumps([{"suite": s.name, "base": s.base, "rocm": s.rocm, "hipcc": s.packages.get("hipcc"),
                           "packages": len(s.packages)} for s in suites], indent=2))
    else:
        for s in suites:
            over = f" (over {s.base})" if s.apt_target else ""
            print(f"{s.name + over:<26} ROCm {s.rocm or 'none':<8} hipcc {s.packages.get('hipcc', '-')}")
    return 0


def _create(args: argparse.Namespace, names: list[str]) -> int:
    from rocbuild.roots.archive import Archive, resolve_mirror
    from rocbuild.roots.create import create_root, describe_installed

    if len(names) != 1:
        raise UsageError("usage: rocbuild root create NAME --rocm X.Y")
    if not args.rocm:
        raise UsageError("root create: which ROCm? give --rocm X.Y (see `rocbuild root suites`)")
    check_name(names[0])
    mirror = resolve_mirror(args.mirror)
    suite = Archive(mirror).choose(args.rocm, args.suite)
    root = create_root(names[0], suite, mirror, args.rocm, Progress(), tuple(args.with_packages))
    if args.json:
        print(json.dumps(root.to_json(), indent=2))
    else:
        print(f"root {root.name}: Debian {suite.name}, ROCm {suite.rocm}; installed:\n{describe_installed(root)}")
        print(f"wheels built in it need Debian {suite.base}'s glibc and libstdc++ (no manylinux tag is claimed)")
        print(f"use it: rocbuild RECIPE --root {root.name} --arch gfx1100")
    return 0


def without_root_flag(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        if item in ROOT_FLAGS:
            skip = True
            continue
        if any(item.startswith(flag + "=") for flag in ROOT_FLAGS):
            continue
        out.append(item)
    return out


def shares_of(args: argparse.Namespace) -> list[enter.Share]:
    """The folders of this machine the command names, shared at the same paths inside the root."""
    shares = [enter.Share(cache_root().resolve(), True, "the cache folder")]
    if config_root().is_dir():
        shares.append(enter.Share(config_root().resolve(), False, "the config folder"))

    def add(value: str | None, writable: bool, flag: str, *, parent: bool = False) -> None:
        if not value:
            return
        path = Path(value).expanduser().resolve()
        if parent:
            path = path.parent
        shares.append(enter.Share(path, writable, flag))

    add(getattr(args, "out", None), True, "--out")
    add(getattr(args, "work", None), True, "--work")
    add(getattr(args, "source_dir", None), False, "--source-dir")
    add(getattr(args, "rocminfo", None), False, "--rocminfo", parent=True)
    add(getattr(args, "sysfs", None), False, "--sysfs")
    for folder in getattr(args, "recipes", []) or []:
        add(folder, False, "--recipes")
    recipe = getattr(args, "recipe", None)
    if recipe and os.path.isfile(recipe):
        add(recipe, False, "recipe", parent=True)
    return shares


def with_root_python(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """`argv` with the target python made the root's own unless one was named."""
    if getattr(args, "python", None) is None and "python" in vars(args):
        argv = [*argv, "--python", "python3"]
    return argv


def run_in_root(args: argparse.Namespace, argv: Sequence[str]) -> int:
    root = find_root(args.root)
    return enter.run_inside(root, with_root_python(args, without_root_flag(argv)), shares_of(args))
