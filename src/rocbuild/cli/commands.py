"""The subcommands: each turns parsed arguments into a pipeline of the other modules."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocbuild.cli import show
from rocbuild.cli.root import cmd_root
from rocbuild.detect.arch import detect_archs, parse_arch_list
from rocbuild.detect.python import default_jobs, find_python
from rocbuild.detect.rocm import find_rocm
from rocbuild.engine.cache import BuildCache
from rocbuild.engine.engine import Engine, check_until
from rocbuild.engine.lock import check_locked_recipe, lock_path, make_lock, read_lock, write_lock
from rocbuild.engine.workspace import claim
from rocbuild.errors import RecipeError, UsageError
from rocbuild.paths import cache_root
from rocbuild.plan.assemble import BuildRequest, assemble
from rocbuild.plan.model import Plan
from rocbuild.process.runner import Runner
from rocbuild.progress import Progress
from rocbuild.recipe import catalog
from rocbuild.roots.enter import inside as in_root


def _dump(data: object) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def build_request(args: argparse.Namespace, *, need_archs: bool = True) -> BuildRequest:
    return BuildRequest(
        recipe=args.recipe, arch=args.arch, rocm=args.rocm, python=args.python, out=args.out, work=args.work,
        jobs=args.jobs, ref=args.ref, source_dir=args.source_dir, settings=tuple(args.set),
        recipe_dirs=tuple(args.recipes), local_version=args.local_version, need_archs=need_archs,
        build_env=not getattr(args, "no_build_env", False),
        environ=dict(os.environ),
    )


def make_build_plan(args: argparse.Namespace, *, need_archs: bool = True) -> Plan:
    return assemble(build_request(args, need_archs=need_archs))


def cmd_plan(args: argparse.Namespace) -> int:
    plan = make_build_plan(args)
    check_until(plan, args.until)
    if args.json:
        _dump(plan.to_json())
    else:
        show.plan_text(plan)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    if args.dry_run:
        return cmd_plan(args)
    plan = make_build_plan(args)
    locked = None
    if args.locked:
        locked = read_lock(plan.recipe.path)
        check_locked_recipe(locked, plan)
    cache = None if args.no_cache else BuildCache(cache_root() / "builds")
    engine = Engine(plan, Runner(verbose=args.verbose), Progress(), cache=cache, locked=locked, environ=os.environ,
                    install_missing=args.install_missing)
    result = engine.build(clean=args.clean, until=args.until)
    wheels = result.wheels
    for wheel in wheels:
        print(wheel)
    if wheels and result.from_cache:
        print(f"reused {len(wheels)} wheel(s) for {', '.join(plan.host.archs)} from the build cache "
              f"({(result.cache_key or '')[:16]}; no build step ran, verify passed again) into {plan.out}",
              file=sys.stderr)
    elif wheels:
        print(f"built {len(wheels)} wheel(s) for {', '.join(plan.host.archs)} into {plan.out}", file=sys.stderr)
    elif plan.output == "tree" and args.until is None:
        print(plan.work.src)
        print(f"done: {plan.recipe.name}'s prepared tree is {plan.work.src}", file=sys.stderr)
    elif not plan.has_wheel_steps and args.until is None:
        print(f"done: the built tree is {plan.work.src}", file=sys.stderr)
    root = in_root()
    if wheels and root is not None:
        print(f"built in root {root.get('name')} (Debian {root.get('suite')}): the wheels need its glibc and "
              "libstdc++ or newer to load; no manylinux tag is claimed", file=sys.stderr)
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    plan = make_build_plan(args)
    engine = Engine(plan, Runner(verbose=args.verbose), Progress(), environ=os.environ)
    print(engine.prepare(clean=args.clean))
    return 0


def cmd_lock(args: argparse.Namespace) -> int:
    plan = make_build_plan(args, need_archs=False)  # the lock does not depend on the targets
    engine = Engine(plan, Runner(verbose=args.verbose), Progress(), environ=os.environ)
    claim(plan.work.root)
    plan.work.logs.mkdir(parents=True, exist_ok=True)
    resolved = engine.resolve_source(plan.work.logs / "00-lock.log")
    lock = make_lock(plan, resolved.identity)
    path = write_lock(lock_path(plan.recipe.path), lock)
    print(path)
    src = lock["source"]
    what = f"{src['url']} @ {src['ref'] or 'HEAD'} = {src['commit']}" if src["kind"] == "git" else "source folder"
    print(f"locked {plan.recipe.name}: {what}; recipe sha256 {lock['recipe']['sha256'][:16]}; "
          f"{len(lock['patches'])} patch file(s)", file=sys.stderr)
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    root = cache_root()
    cache = BuildCache(root / "builds")
    if args.action == "path":
        print(root)
        return 0
    if args.older_than is not None and args.older_than < 0:
        raise UsageError(f"--older-than {args.older_than:g}: must be 0 or more days")
    if args.action == "prune":
        removed = cache.prune(args.older_than)
        freed = sum(size for _, size in removed)
        if args.json:
            _dump({"removed": [e.key for e, _ in removed], "freed": freed})
        else:
            age = f" unused for {args.older_than:g} days" if args.older_than is not None else ""
            print(f"removed {len(removed)} build cache entr{'y' if len(removed) == 1 else 'ies'}{age}"
                  + (f", {show.human_size(freed)} freed" if removed else ""))
        return 0
    entries = [e.to_json() for e in cache.entries()]
    others = {name: _folder_size(root / name) for name in ("mirrors", "ccache", "work", "recipe-sources")}
    if args.json:
        _dump({"root": str(root), "builds": entries, "sizes": others})
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


def cmd_index(args: argparse.Namespace) -> int:
    from rocbuild.wheelhouse.index import build_index, build_rocm_indexes

    if args.by_rocm:
        if args.output:
            raise UsageError("--by-rocm writes WHEELHOUSE/rocmX.Y/simple: leave out -o")
        indexes = build_rocm_indexes(Path(args.wheelhouse))
        if args.json:
            _dump({release: {"index": str(folder), "url": folder.as_uri() + "/", "projects": projects}
                   for release, (folder, projects) in indexes.items()})
            return 0
        for release, (folder, projects) in sorted(indexes.items()):
            count = sum(len(w) for w in projects.values())
            print(f"ROCm {release}: {count} wheel(s) of {', '.join(sorted(projects))}: {folder}")
        return 0
    folder, projects = build_index(Path(args.wheelhouse), Path(args.output) if args.output else None)
    if args.json:
        _dump({"index": str(folder), "url": folder.as_uri() + "/", "projects": projects})
        return 0
    for name, wheels in sorted(projects.items()):
        print(f"{name}: {len(wheels)} wheel(s)")
    print(f"index: {folder}\ninstall with: pip install --index-url {folder.as_uri()}/ PROJECT")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    from rocbuild.wheelhouse.repair import repair

    done = []
    for name in args.wheels:
        wheel = Path(name)
        out = Path(args.out) if args.out else wheel.parent / "repaired"
        print(f"repairing {wheel.name} (auditwheel, ROCm and torch libraries left out)", file=sys.stderr)
        done.append(repair(wheel, out, extra_exclude=tuple(args.exclude), plat=args.plat))
    if args.json:
        _dump([r.to_json() for r in done])
        return 0
    for r in done:
        print(r.wheel)
        print(f"  platform: {', '.join(r.platforms)}", file=sys.stderr)
        print(f"  from the user's ROCm/torch: {', '.join(r.external) or 'nothing'}", file=sys.stderr)
        print(f"  copied in: {', '.join(Path(g).name for g in r.grafted) or 'nothing'}", file=sys.stderr)
    return 0


def cmd_ci(args: argparse.Namespace) -> int:
    from rocbuild.ci import workflow as ci

    recipes = ci.split_list(args.recipes, "--recipes", None, (), "recipe names, comma-separated")
    rocms = ci.split_list(args.rocm, "--rocm", ci.ROCM_RE, ci.DEFAULT_ROCM, "ROCm releases such as 6.4,7.2")
    pythons = ci.split_list(args.python, "--python", ci.PYTHON_RE, ci.DEFAULT_PYTHON, "3.X versions such as 3.10,3.11")
    runs_on = ci.check_runs_on(args.runs_on)
    matrix = ci.build_matrix(recipes, rocms, pythons, args.arch, args.split_arch, container=args.container)
    for e in matrix.excluded:
        print(f"left out: {e['recipe']} on ROCm {e['rocm']} ({e['reason']})", file=sys.stderr)
    if args.target == "matrix":
        if args.output or args.pages or args.install or args.runs_on:
            raise UsageError("`ci matrix` prints the matrix only; -o, --pages, --install and --runs-on go with "
                             "`ci github`")
        _dump(matrix.to_json())
        return 0
    if args.container == ci.NO_CONTAINER and runs_on == ("ubuntu-latest",):
        print("note: --container none builds on the runner's own system, and GitHub's ubuntu-latest has no ROCm: "
              "name your runners with --runs-on (e.g. self-hosted,linux,rocm); each job checks its ROCm first",
              file=sys.stderr)
    install = args.install or ci.default_install(Path.cwd())
    text = ci.github_workflow(matrix, install=install, runs_on=runs_on, pages=args.pages)
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}: {len(matrix.entries)} build job(s) + index", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from rocbuild.verify.check import verify_paths
    from rocbuild.verify.text import format_verdict

    if args.arch is not None:
        archs, source = parse_verify_archs(args.arch), "--arch"
    else:
        detection = detect_archs(None)
        archs = detection.archs
        source = f"this machine's GPUs, by {detection.source}" if archs else "no --arch and no GPU found"
    verdict = verify_paths([Path(p) for p in args.paths], archs, source, only=tuple(args.files),
                           allow_cuda=args.allow_cuda, require_device_code=False, deep=args.deep)
    if args.json:
        _dump(verdict.to_json())
    else:
        print(format_verdict(verdict, quiet_files=not args.all_files, verbose=args.verbose))
    return 0 if verdict.ok else 1


def parse_verify_archs(text: str) -> list[str]:
    """--arch for verify: build targets as for build, plus generic ISAs (gfx11-generic), any letter case."""
    from rocbuild.gfx import GENERIC_MEMBERS

    items = [a.strip().lower() for a in text.split(",") if a.strip()]
    generic = [a for a in items if a.split(":")[0] in GENERIC_MEMBERS]
    rest = [a for a in items if a not in generic]
    return generic + (parse_arch_list(",".join(rest)) if rest else [])


def cmd_doctor(args: argparse.Namespace) -> int:
    from rocbuild import doctor

    if args.sysfs is not None and not Path(args.sysfs).is_dir():
        raise UsageError(f"--sysfs {args.sysfs}: no such folder")
    if args.rocminfo is not None and not Path(args.rocminfo).is_file():
        raise UsageError(f"--rocminfo {args.rocminfo}: no such file")
    if args.python is not None:
        find_python(args.python)  # a missing or broken interpreter is a usage error (exit 2)
    inputs = doctor.Inputs(root=Path(args.sysfs) if args.sysfs else None,
                           rocminfo=Path(args.rocminfo) if args.rocminfo else None, rocm=args.rocm,
                           python=args.python)
    checks = doctor.run_doctor(inputs)
    if args.json:
        _dump(doctor.report_json(checks))
    else:
        print(doctor.report_text(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


def cmd_detect(args: argparse.Namespace) -> int:
    detection = detect_archs(
        args.arch,
        rocminfo_file=Path(args.rocminfo) if args.rocminfo else None,
        sysfs_root=Path(args.sysfs) if args.sysfs else None,
    )
    python = find_python(args.python)
    rocm = find_rocm(args.rocm, python=python.executable)
    if args.json:
        data = detection.to_json()
        data["rocm"] = rocm.to_json() if rocm else None
        data["python"] = python.to_json()
        data["jobs"] = default_jobs()
        _dump(data)
        return 0
    show.detect_text(detection, rocm, python, default_jobs())
    return 0


def cmd_recipes(args: argparse.Namespace) -> int:
    if args.action in ("add", "update", "remove", "sources", "new"):
        return _recipe_sources(args)
    if args.results and args.action != "status":
        raise UsageError(f"`recipes {args.action}` takes no --results", hint="--results goes with `recipes status`")
    if args.ref or args.name or args.output:
        raise UsageError(f"`recipes {args.action}` takes no --ref, --name or -o",
                         hint="--ref and --name go with `recipes add`, -o with `recipes new`")
    if args.action == "list":
        if args.names:
            raise UsageError("`recipes list` takes no names")
        rows: list[dict[str, Any]] = []
        for found in catalog.all_recipes(args.recipes):
            try:
                recipe = catalog.load(found.path, args.recipes)
                rows.append({"name": found.name, "version": recipe.version, "origin": found.origin,
                             "path": str(found.path), "summary": recipe.summary})
            except RecipeError as exc:
                rows.append({"name": found.name, "version": None, "origin": found.origin,
                             "path": str(found.path), "summary": "", "error": exc.render().splitlines()[0]})
        if args.json:
            _dump(rows)
        else:
            for r in rows:
                print(f"{r['name']:<16} {r['version'] or 'INVALID':<12} {r['origin']:<16} {r['path']}")
        return 0
    if args.action == "status":
        return _recipe_status(args)
    if args.action == "show":
        if len(args.names) != 1:
            raise UsageError("usage: rocbuild recipes show NAME")
        from rocbuild.recipe.load import read_recipe_text

        found = catalog.resolve(args.names[0], args.recipes)
        sys.stdout.write(read_recipe_text(found.path))  # a recipe file, never any other file named
        return 0
    if not args.names:
        raise UsageError("usage: rocbuild recipes lint FILE...")
    failed = 0
    for name in args.names:
        try:
            recipe = catalog.load(name, args.recipes)
        except RecipeError as exc:
            print(exc.render(), file=sys.stderr)
            failed += 1
        else:
            print(f"{name}: ok ({recipe.name} {recipe.version}, {len(recipe.steps)} steps)")
    return 2 if failed else 0


def _recipe_sources(args: argparse.Namespace) -> int:
    from rocbuild.recipe import sources

    say = Progress().say
    if args.action == "new":
        return _new_recipe(args)
    if args.action == "add":
        if len(args.names) != 1:
            raise UsageError("usage: rocbuild recipes add URL|PATH [--ref REF] [--name NAME]")
        source = sources.add_source(args.names[0], ref=args.ref, name=args.name, log=say)
        names = sorted(f.stem for f in source.recipe_dir.glob("*.y*ml"))
        print(f"added recipe source {source.name}: {source.describe()}")
        print(f"  recipes: {', '.join(names) or '(none yet)'}  (from {source.recipe_dir})")
        builtin = {f.name: f for f in catalog.all_recipes(args.recipes) if not f.origin.startswith("source ")}
        for name in names:
            if name in builtin:
                print(f"  note: {name} is also a {builtin[name].origin} recipe, which `rocbuild {name}` (and "
                      f"`extends: {name}`) keeps using; this source's is `rocbuild {source.name}:{name}`")
        return 0
    if args.ref or args.name:
        raise UsageError(f"`recipes {args.action}` takes no --ref or --name", hint="they go with `recipes add`")
    if args.action == "update":
        for before, after in sources.update_sources(args.names, say):
            if before.kind == "dir":
                print(f"{after.name}: a folder, read in place ({after.location})")
            elif before.commit == after.commit:
                print(f"{after.name}: unchanged at {(after.commit or '?')[:12]}")
            else:
                print(f"{after.name}: {before.commit[:12] if before.commit else 'new'} -> {(after.commit or '?')[:12]}")
        return 0
    if args.action == "remove":
        if len(args.names) != 1:
            raise UsageError("usage: rocbuild recipes remove NAME")
        gone = sources.remove_source(args.names[0])
        print(f"removed recipe source {gone.name} ({gone.describe()})")
        return 0
    rows = sources.load_sources()
    if args.json:
        _dump([{**dataclasses.asdict(s), "recipe_dir": str(s.recipe_dir)} for s in rows])
    else:
        for s in rows:
            print(f"{s.name:<16} {s.kind:<4} {s.describe()}")
        if not rows:
            print("no recipe sources; add one with `rocbuild recipes add URL|PATH`")
    return 0


def _recipe_status(args: argparse.Namespace) -> int:
    from rocbuild.recipe import status

    records = status.read_results(Path(args.results) if args.results else status.shipped_results())
    names = list(args.names) or [found.name for found in catalog.all_recipes(args.recipes)]
    rows = [status.recipe_status(name, records) for name in names]
    if args.json:
        _dump(rows)
    else:
        for row in rows:
            for line in status.status_lines(row):
                print(line)
    return 0


def _new_recipe(args: argparse.Namespace) -> int:
    from rocbuild.recipe.load import NAME_RE
    from rocbuild.recipe.starter import starter_recipe

    if len(args.names) != 1:
        raise UsageError("usage: rocbuild recipes new NAME [-o FILE]")
    name = args.names[0]
    if not NAME_RE.match(name):
        raise UsageError(f"{name!r} is not a valid recipe name",
                         hint="lower-case letters, digits, '.', '_' and '-', starting with a letter or digit")
    out = Path(args.output or f"{name}.yaml")
    try:
        with open(out, "x", encoding="utf-8") as fh:  # never overwrite someone's recipe
            fh.write(starter_recipe(name))
    except FileExistsError:
        raise UsageError(f"{out} already exists", hint="give another -o FILE, or remove it first") from None
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}") from None
    print(out)
    print(f"next: edit it, then `rocbuild recipes lint {out}` and `rocbuild plan {out} --arch gfx90a`",
          file=sys.stderr)
    return 0


# Each subcommand's handler: parsed arguments in, exit code out.
HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "build": cmd_build, "plan": cmd_plan, "prepare": cmd_prepare, "lock": cmd_lock, "verify": cmd_verify,
    "doctor": cmd_doctor, "detect": cmd_detect, "recipes": cmd_recipes, "cache": cmd_cache, "index": cmd_index,
    "ci": cmd_ci, "root": cmd_root, "repair": cmd_repair,
}
