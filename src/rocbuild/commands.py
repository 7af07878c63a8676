"""The subcommands: each turns parsed arguments into a pipeline of the other modules."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path

from rocbuild import plan as planning
from rocbuild.detect.arch import detect_archs, require_archs
from rocbuild.detect.gpu import gpu_access
from rocbuild.detect.python import default_jobs, find_python
from rocbuild.detect.rocm import find_rocm, require_rocm
from rocbuild.buildcache import BuildCache
from rocbuild.engine import Engine
from rocbuild.lock import check_locked_recipe, lock_path, make_lock, read_lock, write_lock
from rocbuild.errors import RecipeError, UsageError
from rocbuild.options import resolve_options
from rocbuild.paths import WorkDirs, cache_root, short_hash
from rocbuild.progress import Progress
from rocbuild.recipe import load_recipe
from rocbuild.recipe.lookup import all_recipes, resolve
from rocbuild.runner import Runner
from rocbuild.steps.fetch import check_ref
from rocbuild.wheels import LOCAL_LABEL_RE


def _dump(data: object) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def make_build_plan(args, *, need_archs: bool = True) -> planning.Plan:
    """Recipe file -> Recipe -> (with the detected host) -> Plan."""
    found = resolve(args.recipe, args.recipes)
    recipe = load_recipe(found.path)
    options = resolve_options(recipe, args.set)
    if args.ref is not None:
        check_ref(args.ref)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: must be 1 or more")
    detection = detect_archs(args.arch)
    # A tree recipe compiles nothing for a GPU, so it needs no target.
    archs = detection.archs if recipe.output == "tree" or not need_archs else require_archs(detection)
    rocm = require_rocm(find_rocm(args.rocm))
    python = find_python(args.python)
    host = planning.Host(
        archs=tuple(archs), rocm=rocm, python=python, jobs=args.jobs or default_jobs(),
        override=detection.override.value if detection.override else None, gpu=gpu_access(),
        ccache=shutil.which("ccache") if os.environ.get("ROCBUILD_CCACHE", "1") != "0" else None,
    )
    source_dir = Path(args.source_dir) if args.source_dir else None
    if source_dir is not None and not source_dir.is_dir():
        raise UsageError(f"--source-dir {args.source_dir}: no such folder")
    if args.work:
        work = WorkDirs(Path(args.work).absolute())
    else:
        key = short_hash([str(found.path.resolve()), archs, str(rocm.path), python.executable, args.ref,
                          str(source_dir.resolve()) if source_dir else None, options])
        work = WorkDirs(cache_root() / "work" / f"{recipe.name}-{recipe.version}-{key}")
    local_version = _local_version(args)
    plan = planning.make_plan(recipe, host, options, work, Path(args.out).absolute(),
                              ref=args.ref, source_dir=source_dir, local_version=local_version)
    basis = planning.cache_basis(recipe, host, options, ref=args.ref, source_dir=source_dir,
                                 local_version=local_version)
    return dataclasses.replace(plan, cache_basis=basis)


def _local_version(args) -> str | None:
    label = args.local_version
    if label is None:
        return None
    if label in ("", "none"):
        return ""
    if not LOCAL_LABEL_RE.match(label):
        raise UsageError(f"--local-version {label!r}: not a PEP 440 local version label",
                         hint="accepted: letters and digits separated by '.', '_' or '-' (e.g. rocm6.1), or 'none'")
    return label


def cmd_plan(args) -> int:
    plan = make_build_plan(args)
    if args.json:
        _dump(plan.to_json())
    else:
        print_plan(plan)
    return 0


def cmd_build(args) -> int:
    if args.dry_run:
        return cmd_plan(args)
    plan = make_build_plan(args)
    locked = None
    if args.locked:
        locked = read_lock(plan.recipe.path)
        check_locked_recipe(locked, plan)
    cache = None if args.no_cache else BuildCache(cache_root() / "builds")
    engine = Engine(plan, Runner(verbose=args.verbose), Progress(), cache=cache, locked=locked)
    wheels = engine.build(clean=args.clean, until=args.until)
    for wheel in wheels:
        print(wheel)
    if wheels and engine.cache_hit:
        print(f"reused {len(wheels)} wheel(s) for {', '.join(plan.host.archs)} from the build cache "
              f"({engine.cache_hit[:16]}; no build step ran, verify passed again) into {plan.out}", file=sys.stderr)
    elif wheels:
        print(f"built {len(wheels)} wheel(s) for {', '.join(plan.host.archs)} into {plan.out}", file=sys.stderr)
    elif plan.output == "tree" and args.until is None:
        print(plan.work.src)
        print(f"done: {plan.recipe.name}'s prepared tree is {plan.work.src}", file=sys.stderr)
    elif not plan.has_wheel_steps and args.until is None:
        print(f"done: the built tree is {plan.work.src}", file=sys.stderr)
    return 0


def cmd_prepare(args) -> int:
    plan = make_build_plan(args)
    engine = Engine(plan, Runner(verbose=args.verbose), Progress())
    print(engine.prepare(clean=args.clean))
    return 0


def cmd_lock(args) -> int:
    plan = make_build_plan(args, need_archs=False)  # the lock does not depend on the targets
    identity = Engine(plan, Runner(verbose=args.verbose), Progress()).resolve_source()
    lock = make_lock(plan, identity)
    path = write_lock(lock_path(plan.recipe.path), lock)
    print(path)
    src = lock["source"]
    what = f"{src['url']} @ {src['ref'] or 'HEAD'} = {src['commit']}" if src["kind"] == "git" else "source folder"
    print(f"locked {plan.recipe.name}: {what}; recipe sha256 {lock['recipe']['sha256'][:16]}; "
          f"{len(lock['patches'])} patch file(s)", file=sys.stderr)
    return 0


def cmd_cache(args) -> int:
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
                  + (f", {_human(freed)} freed" if removed else ""))
        return 0
    entries = [e.to_json() for e in cache.entries()]
    others = {name: _folder_size(root / name) for name in ("mirrors", "ccache", "work", "recipe-sources")}
    if args.json:
        _dump({"root": str(root), "builds": entries, "sizes": others})
        return 0
    print(f"cache: {root}")
    for name, size in others.items():
        print(f"  {name + '/':<16} {_human(size)}")
    print(f"build cache: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}")
    for e in entries:
        print(f"  {e['key'][:16]}  {e['recipe']} {e['version']}  {','.join(e['archs'])}  rocm {e['rocm']}  "
              f"py{e['python']}  {_human(e['size'])}  last used {e['last_used']}Z")
        for w in e["wheels"]:
            print(f"      {w}")
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


def _human(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def cmd_index(args) -> int:
    from rocbuild.index import build_index

    folder, projects = build_index(Path(args.wheelhouse), Path(args.output) if args.output else None)
    if args.json:
        _dump({"index": str(folder), "url": folder.as_uri() + "/", "projects": projects})
        return 0
    for name, wheels in sorted(projects.items()):
        print(f"{name}: {len(wheels)} wheel(s)")
    print(f"index: {folder}\ninstall with: pip install --index-url {folder.as_uri()}/ PROJECT")
    return 0


def cmd_ci(args) -> int:
    from rocbuild import __version__, ci

    recipes = ci.split_list(args.recipes, "--recipes", None, (), "recipe names, comma-separated")
    rocms = ci.split_list(args.rocm, "--rocm", ci.ROCM_RE, ci.DEFAULT_ROCM, "ROCm releases such as 6.1,6.2")
    pythons = ci.split_list(args.python, "--python", ci.PYTHON_RE, ci.DEFAULT_PYTHON, "3.X versions such as 3.10,3.11")
    matrix = ci.build_matrix(recipes, rocms, pythons, args.arch, args.split_arch, container=args.container)
    for e in matrix.excluded:
        print(f"left out: {e['recipe']} on ROCm {e['rocm']} ({e['reason']})", file=sys.stderr)
    if args.target == "matrix":
        if args.output or args.pages or args.install:
            raise UsageError("`ci matrix` prints the matrix only; -o, --pages and --install go with `ci github`")
        _dump(matrix.to_json())
        return 0
    text = ci.github_workflow(matrix, install=args.install or f"rocbuild=={__version__}", pages=args.pages)
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}: {len(matrix.entries)} build job(s) + index", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_verify(args) -> int:
    from rocbuild.verify.check import verify_paths
    from rocbuild.verify.text import format_verdict

    detection = detect_archs(args.arch)
    archs = detection.archs
    if args.arch is not None:
        source = "--arch"
    else:
        source = f"this machine's GPUs, by {detection.source}" if archs else "no --arch and no GPU found"
    verdict = verify_paths([Path(p) for p in args.paths], archs, source)
    if args.json:
        _dump(verdict.to_json())
    else:
        print(format_verdict(verdict, quiet_files=not args.all_files))
    return 0 if verdict.ok else 1


def cmd_doctor(args) -> int:
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


def cmd_detect(args) -> int:
    detection = detect_archs(
        args.arch,
        rocminfo_file=Path(args.rocminfo) if args.rocminfo else None,
        sysfs_root=Path(args.sysfs) if args.sysfs else None,
    )
    rocm = find_rocm(args.rocm)
    python = find_python(args.python)
    if args.json:
        data = detection.to_json()
        data["rocm"] = rocm.to_json() if rocm else None
        data["python"] = python.to_json()
        data["jobs"] = default_jobs()
        _dump(data)
        return 0
    archs = ", ".join(detection.archs) or "none"
    print(f"archs:  {archs}  (from {detection.source})")
    for gpu in detection.gpus:
        name = f"  {gpu.marketing_name}" if gpu.marketing_name else ""
        print(f"  gpu: {gpu.target_id}{name}  [{gpu.source}]")
    if detection.override:
        o = detection.override
        hw = f"; the hardware is {', '.join(o.hardware)}" if o.hardware else ""
        print(f"override: HSA_OVERRIDE_GFX_VERSION={o.value} -> runtime reports {o.gfx}{hw}; "
              "wheels built here target the reported arch")
    for note in detection.notes:
        print(f"note: {note}")
    if rocm is None:
        print("rocm:   not found (give --rocm PATH, set ROCM_PATH, or install hipcc)")
    else:
        print(f"rocm:   {rocm.version or 'unknown version'} at {rocm.path}  ({rocm.layout} layout, found by "
              f"{rocm.found_by}; version from {rocm.version_source})")
        print(f"  FindHIP.cmake:  {rocm.cmake_hip_dir or 'not found'}")
        print(f"  hip-lang:       {rocm.hip_lang_dir or 'not found'}")
        print(f"  HIP clang++:    {rocm.hip_compiler or 'not found'}")
    print(f"python: {python.executable} ({python.version})")
    print(f"jobs:   {default_jobs()}")
    return 0


def cmd_recipes(args) -> int:
    from rocbuild.recipe import sources

    if args.action in ("add", "update", "remove", "sources", "new"):
        return _recipe_sources(args, sources)
    if args.ref or args.name or args.output:
        raise UsageError(f"`recipes {args.action}` takes no --ref, --name or -o",
                         hint="--ref and --name go with `recipes add`, -o with `recipes new`")
    if args.action == "list":
        if args.names:
            raise UsageError("`recipes list` takes no names")
        rows = []
        for found in all_recipes(args.recipes):
            try:
                recipe = load_recipe(found.path)
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
    if args.action == "show":
        if len(args.names) != 1:
            raise UsageError("usage: rocbuild recipes show NAME")
        found = resolve(args.names[0], args.recipes)
        sys.stdout.write(found.path.read_text())
        return 0
    if not args.names:
        raise UsageError("usage: rocbuild recipes lint FILE...")
    failed = 0
    for name in args.names:
        try:
            recipe = load_recipe(name)
        except RecipeError as exc:
            print(exc.render(), file=sys.stderr)
            failed += 1
        else:
            print(f"{name}: ok ({recipe.name} {recipe.version}, {len(recipe.steps)} steps)")
    return 2 if failed else 0


def _recipe_sources(args, sources) -> int:
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
        return 0
    if args.ref or args.name:
        raise UsageError(f"`recipes {args.action}` takes no --ref or --name", hint="they go with `recipes add`")
    if args.action == "update":
        for before, after in sources.update_sources(args.names, say):
            if before.kind == "dir":
                print(f"{after.name}: a folder, read in place ({after.location})")
            elif before.commit == after.commit:
                print(f"{after.name}: unchanged at {after.commit[:12]}")
            else:
                print(f"{after.name}: {before.commit[:12] if before.commit else 'new'} -> {after.commit[:12]}")
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


def _new_recipe(args) -> int:
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


def print_plan(plan: planning.Plan) -> None:
    h, r = plan.host, plan.host.rocm
    out = print
    out(f"plan: {plan.recipe.name} {plan.recipe.version}  ({plan.recipe.path})")
    out(f"  archs:  {', '.join(h.archs)}")
    out(f"  rocm:   {r.version or 'unknown'} at {r.path} ({r.layout} layout)")
    out(f"  python: {h.python.executable} ({h.python.version})   jobs: {h.jobs}")
    if h.override:
        out(f"  HSA_OVERRIDE_GFX_VERSION={h.override} is in effect (recorded with the build)")
    if plan.options:
        out("  options: " + ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}"
                                      for k, v in plan.options.items()))
    out(f"  work:   {plan.work.root}")
    if plan.output == "tree":
        out(f"  output: the prepared tree {plan.work.src} (no wheel)")
    else:
        out(f"  wheelhouse: {plan.out}")
    req = plan.requirements
    out("requirements (checked before anything runs):")
    out(f"  rocm {req.rocm or '(any)'}; tools: {', '.join(req.tools) or '-'}; "
        f"cmake packages: {', '.join(req.cmake_packages) or '-'}")
    if req.python_check_argv:
        out(f"  python modules: {', '.join(req.python_modules)}")
        out(f"    argv: {json.dumps(list(req.python_check_argv))}")
    if req.torch_check_argv:
        out("  torch in the target python: a ROCm build (its torch/version.py is read; torch is not imported)")
        out(f"    argv: {json.dumps(list(req.torch_check_argv))}")
    out("environment (changes for every step):")
    for k, v in plan.base_env.items():
        out(f"  {k}={v}")
    if plan.ccache_bin is not None:
        out(f"ccache: {plan.host.ccache} launches CMake's compilers (the *_COMPILER_LAUNCHER variables above); "
            f"a hipcc called by name runs through the link {plan.ccache_bin / 'hipcc'} -> ccache")
    if plan.has_wheel_steps:
        out("build cache: when a wheel was already built from these exact inputs, it is verified again and "
            "reused, and no step runs (--no-cache builds anyway)")
    s = plan.source
    out("prepare:")
    if s.kind == "dir":
        out(f"  copy {s.directory} -> {plan.work.src} (the original is never modified)")
    else:
        pin = f" (pinned to {s.commit})" if s.commit else ""
        over = " (--ref overrides the recipe)" if s.ref_overridden else ""
        out(f"  git {s.url} @ {s.ref or 'HEAD'}{pin}{over}; submodules: {'yes' if s.submodules else 'no'}")
        out("  through GitPython (clone only when the mirror is new, fetch only when the ref is missing or moves):")
        for cmd in s.commands(str(plan.work.src)):
            out(f"    argv: {json.dumps(cmd)}")
    for i, p in enumerate(plan.patches, 1):
        out(f"  patch {i}: {p.describe()}   [{p.where}]")
    out("steps:")
    for i, step in enumerate(plan.steps, 1):
        out(f"  {i}. {step.name} ({step.kind})   [{step.where}]")
        out(f"     cwd:  {step.cwd}")
        for k, v in step.env.items():
            out(f"     env:  {k}={v}")
        if step.shell is not None:
            out(f"     shell (run by /bin/bash as written): {step.shell}")
        else:
            out(f"     argv: {json.dumps(list(step.argv))}")
    if plan.has_wheel_steps:
        label = f"+{plan.local_label}" if plan.local_label else "none (--local-version/recipe dropped it)"
        out(f"wheels: local version label {label}; provenance JSON added to the .dist-info, RECORD rewritten")
    if plan.verify:
        out("verify (every wheel, before it reaches the wheelhouse):")
        if any(s.argv for s in plan.verify) and plan.has_wheel_steps:
            out(f"  the wheels are installed into {plan.work.verify / 'site'} (pip's --target layout, by pypa "
                f"installer inside rocbuild; no command runs), then PYTHONPATH and PATH point there")
        for step in plan.verify:
            out(f"  {step.name} ({step.kind})   [{step.where}]")
            d = step.detail
            if step.kind == "code-objects":
                files = f"; device code required in {', '.join(d['files'])}" if d["files"] else ""
                cover = f"device code covers {', '.join(d['archs'])}" if d["archs"] else "device code not checked"
                links = f"; those files link {', '.join(d['links'])}" if d.get("links") else ""
                out(f"     every ELF file: no CUDA library; {cover}{files}{links}")
            elif step.kind == "wheel-contains":
                out(f"     a wheel member matches {d['glob']}")
            else:
                skip = ""
                if d.get("needs_gpu") and not plan.host.gpu.usable:
                    skip = f"  (will be skipped: {plan.host.gpu.reason})"
                out(f"     argv: {json.dumps(list(step.argv))}{skip}")
                for pattern in d.get("expect", []):
                    out(f"     expect: /{pattern}/")
    if plan.has_wheel_steps:
        out(f"then: wheels move into {plan.out} (only after every check passed)")
