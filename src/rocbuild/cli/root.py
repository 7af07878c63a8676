"""`rocbuild root ...`, and `--root` on build, plan, prepare, detect and doctor."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rocbuild.cli.common import Invocation, Subparsers, action, actions
from rocbuild.errors import UsageError

if TYPE_CHECKING:  # the roots' modules are imported when a command runs, not for --help
    from rocbuild.progress import Progress
    from rocbuild.roots.enter import Share
    from rocbuild.torchkit.make import KitPlan

COMMAND = "root"
ROOT_FLAGS = ("--root",)


def register(sub: Subparsers) -> None:
    acts = actions(sub, COMMAND, "build roots: Debian userlands holding a real ROCm release, made from "
                                 "Debian's packages (create, list, path, remove, install, run, suites)")
    p = action(acts, COMMAND, "create", cmd_create, "make a root holding a ROCm release from Debian's archive")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--rocm", metavar="X.Y", help="the ROCm release the root holds")
    p.add_argument("--image", metavar="IMAGE",
                   help="make it from a container image instead (rocm/dev-ubuntu-24.04:7.2-complete, rocm/pytorch:..., "
                        "any image holding ROCm), exported through podman or docker")
    p.add_argument("--engine", choices=["podman", "docker"], help="with --image: which (default: podman, else docker)")
    p.add_argument("--suite", help="the Debian suite (default: the one that carries --rocm now)")
    _mirror(p)
    p.add_argument("--with", dest="with_packages", action="append", default=[], metavar="PACKAGE",
                   help="another Debian package to install (repeatable)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = action(acts, COMMAND, "list", cmd_list, "the roots made, with their ROCm, suite and tools")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = action(acts, COMMAND, "path", cmd_path, "print a root's folder")
    p.add_argument("name", metavar="NAME")
    p = action(acts, COMMAND, "remove", cmd_remove, "delete a root")
    p.add_argument("name", metavar="NAME")
    p = action(acts, COMMAND, "install", cmd_install, "apt-get install Debian packages into a root")
    p.add_argument("name", metavar="NAME")
    p.add_argument("packages", nargs="*", metavar="PACKAGE")
    p = action(acts, COMMAND, "run", cmd_run, "NAME -- COMMAND...: run a command in a root, in the current folder "
                                               "(shared)")
    p.add_argument("name", metavar="NAME")
    p.add_argument("command", nargs="*", metavar="COMMAND")
    p = action(acts, COMMAND, "torch", cmd_torch, "make a build-only ROCm torch in a root (from Debian's torch and its "
                                                   "own hipify): for compiling torch extensions, never for running them")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--dry-run", action="store_true", help="print what it would install and run; change nothing")
    p.add_argument("--remake", action="store_true",
                   help="make it again even when it is current (same Debian packages, same rocbuild)")
    p.add_argument("--wheel", metavar="DIR",
                   help="also write it as a wheel into DIR, for a package index (--install-missing --torch-index "
                        "then installs it into a venv of the same root)")
    p = action(acts, COMMAND, "suites", cmd_suites, "which Debian suite carries which ROCm release now")
    _mirror(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _mirror(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mirror", metavar="URL", help="Debian mirror (default: this machine's apt configuration)")


def cmd_list(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.roots.store import all_roots

    roots = all_roots()
    if args.json:
        print(json.dumps([r.to_json() for r in roots], indent=2))
        return 0
    if not roots:
        print("no build roots; make one with `rocbuild root create NAME --rocm 7.2`")
    for root in roots:
        row = root.to_json()
        versions = row["versions"]
        if row.get("image"):
            print(f"{root.name:<14} ROCm {row['rocm'] or '?':<8} image {row['image']} ({row.get('os') or '?'}), "
                  f"python {', '.join(row.get('pythons') or []) or '?'}, glibc {row.get('glibc') or '?'}  {root.tree}")
            continue
        print(f"{root.name:<14} ROCm {row['rocm'] or '?':<8} Debian {row['suite'] or '?':<13} "
              f"hipcc {versions.get('hipcc', '?'):<20} python3 {versions.get('python3', '?'):<12} {root.tree}")
    return 0


def cmd_path(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.roots.store import find_root

    print(find_root(args.name).tree)
    return 0


def cmd_remove(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.roots.store import remove_root

    print(f"removed {remove_root(args.name)}")
    return 0


def cmd_run(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.roots.apt import run_in
    from rocbuild.roots.store import find_root

    if not args.command:
        raise UsageError("usage: rocbuild root run NAME -- COMMAND [ARG...]")
    return run_in(find_root(args.name), args.command, inv.environ)


def cmd_install(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.progress import Progress
    from rocbuild.roots.apt import install_packages
    from rocbuild.roots.store import find_root

    root = find_root(args.name)
    if not args.packages:
        raise UsageError(f"usage: rocbuild root install {args.name} PACKAGE...")
    return install_packages(root, args.packages, Progress(), inv.environ)


def cmd_torch(args: argparse.Namespace, inv: Invocation) -> int:
    """On this machine: Debian's torch and the headers it needs go into the root, then the same command
    runs inside it and makes the kit there (torchkit/make.py)."""
    import rocbuild.roots.enter as enter
    from rocbuild.paths import cache_root
    from rocbuild.progress import Progress
    from rocbuild.roots.apt import apt_commands, install_packages
    from rocbuild.roots.store import find_root
    from rocbuild.torchkit.kit import KIT_PACKAGES

    if inv.root is not None:
        return _make_kit(args, inv)
    root = find_root(args.name)
    if args.dry_run:
        for argv in apt_commands(KIT_PACKAGES, root.apt_target):
            print(json.dumps(argv))
    else:
        install_packages(root, KIT_PACKAGES, Progress(), inv.environ)
    shares = [enter.Share(cache_root().resolve(), True, "the cache folder")]
    if args.wheel:
        wheels = Path(args.wheel).expanduser().resolve()
        wheels.mkdir(parents=True, exist_ok=True)
        shares.append(enter.Share(wheels, True, "--wheel"))
    return enter.run_inside(root, list(inv.argv), shares, inv.environ)


def _make_kit(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.progress import Progress
    from rocbuild.torchkit.kit import kit_python
    from rocbuild.torchkit.lock import holding, kit_lock_path
    from rocbuild.torchkit.make import is_current, plan_here

    plan = plan_here(dict(inv.environ))
    if args.dry_run:
        kept = " (current: nothing would run; --remake makes it again)" if is_current(plan) and not args.remake else ""
        print(f"# in root {args.name}: a build-only ROCm torch {plan.info.version} at {plan.folder}{kept}")
        for label, argv in plan.commands:
            print(f"{label}: {json.dumps(list(argv))}")
        return 0
    progress = Progress()
    plan.folder.parent.mkdir(parents=True, exist_ok=True)
    lock = kit_lock_path(plan.folder / "bin")
    making = f"waiting: another `rocbuild root torch` is making the build-only torch at {plan.folder}"
    with holding(lock, exclusive=False, waiting=making, say=progress.say):
        current = is_current(plan) and not args.remake
    if current:
        _say_current(plan, progress)
    else:
        in_use = (f"waiting: a build is compiling against the build-only torch at {plan.folder}; "
                  "it is made again once no build uses it")
        with holding(lock, exclusive=True, waiting=in_use, say=progress.say):
            _remake(plan, args.remake, progress)
    with holding(lock, exclusive=False, waiting=making, say=progress.say):
        if args.wheel:
            _kit_wheel(plan, Path(args.wheel), progress)
    python = kit_python(plan.folder)
    print(python)
    print(f"use it: rocbuild RECIPE --root {args.name} --python {python} --arch gfx1100 "
          "(wheels built against it link like a ROCm torch's but cannot be imported anywhere)", file=sys.stderr)
    return 0


def _remake(plan: KitPlan, remake: bool, progress: Progress) -> None:
    """Under the kit's exclusive lock: made, unless another `root torch` made it current while this waited."""
    from rocbuild.process.runner import Runner
    from rocbuild.torchkit.make import is_current, make_kit

    if remake or not is_current(plan):
        make_kit(plan, Runner(), progress)
    else:
        _say_current(plan, progress)


def _say_current(plan: KitPlan, progress: Progress) -> None:
    progress.say(f"    build-only ROCm torch {plan.info.version} at {plan.folder} is current (made from the same "
                 "Debian packages by the same rocbuild): kept; --remake makes it again")


def _kit_wheel(plan: KitPlan, out: Path, progress: Progress) -> None:
    from rocbuild.torchkit.wheel import pack_kit

    started = progress.start("torch kit: wheel", str(out))
    # site-packages sits in lib/pythonX.Y: the wheel is for that CPython, as the kit's torch._C is.
    tag = "cp" + plan.torch.parent.parent.name.removeprefix("python").replace(".", "")
    wheel = pack_kit(plan.torch, plan.info, tag, out.expanduser().resolve())
    progress.done("torch kit: wheel", started, wheel.name)


def cmd_suites(args: argparse.Namespace, inv: Invocation) -> int:
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


def cmd_create(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.progress import Progress
    from rocbuild.roots.archive import Archive, resolve_mirror
    from rocbuild.roots.create import create_root, describe_installed
    from rocbuild.roots.store import check_name

    if args.image:
        return _create_from_image(args)
    if not args.rocm:
        raise UsageError("root create: which ROCm? give --rocm X.Y (see `rocbuild root suites`), or --image IMAGE")
    check_name(args.name)
    mirror = resolve_mirror(args.mirror)
    suite = Archive(mirror).choose(args.rocm, args.suite)
    root = create_root(args.name, suite, mirror, args.rocm, Progress(), tuple(args.with_packages))
    if args.json:
        print(json.dumps(root.to_json(), indent=2))
    else:
        print(f"root {root.name}: Debian {suite.name}, ROCm {suite.rocm}; installed:\n{describe_installed(root)}")
        print(f"wheels built in it need Debian {suite.base}'s glibc and libstdc++ (no manylinux tag is claimed)")
        print(f"use it: rocbuild RECIPE --root {root.name} --arch gfx1100")
    return 0


def _create_from_image(args: argparse.Namespace) -> int:
    from rocbuild.progress import Progress
    from rocbuild.roots.image import create_from_image, find_engine

    if args.rocm or args.suite or args.with_packages or args.mirror:
        raise UsageError("root create --image: the image decides ROCm and its packages",
                         hint="drop --rocm, --suite, --with and --mirror (add packages later: rocbuild root install)")
    root = create_from_image(args.name, args.image, find_engine(args.engine), Progress())
    if args.json:
        print(json.dumps(root.to_json(), indent=2))
        return 0
    i = root.info
    print(f"root {root.name}: image {args.image} ({i.get('os') or 'an unknown OS'}), ROCm {i.get('rocm') or 'none found'}, "
          f"python {', '.join(i.get('pythons') or []) or 'none'}, glibc {i.get('glibc') or '?'}")
    print(f"use it: rocbuild RECIPE --root {root.name} --arch gfx1100 (--python all: a wheel for each of its pythons)")
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


def shares_of(args: argparse.Namespace) -> list[Share]:
    """The folders of this machine the command names, shared at the same paths inside the root."""
    import rocbuild.roots.enter as enter
    from rocbuild.paths import cache_root, config_root

    shares = [enter.Share(cache_root().resolve(), True, "the cache folder")]
    trying = bool(getattr(args, "try_", False))  # --try edits the recipe, and keeps a verified draft in config
    if trying:
        config_root().mkdir(parents=True, exist_ok=True)
    if config_root().is_dir():
        shares.append(enter.Share(config_root().resolve(), trying, "the config folder"))

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
        add(recipe, trying, "recipe", parent=True)
    return shares


def with_root_python(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """`argv` with the target python made the root's own unless one was named."""
    if getattr(args, "python", None) is None and "python" in vars(args):
        argv = [*argv, "--python", "python3"]
    return argv


def run_in_root(args: argparse.Namespace, inv: Invocation) -> int:
    """`--root NAME`: the same command, run again inside the root."""
    import rocbuild.roots.enter as enter
    from rocbuild.roots.store import find_root

    root = find_root(args.root)
    return enter.run_inside(root, with_root_python(args, without_root_flag(inv.argv)), shares_of(args), inv.environ)
