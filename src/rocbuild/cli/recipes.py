"""`rocbuild recipes ACTION`: list, show, lint and start recipes; add, update and remove recipe sources;
status, what each was last built with for real."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocbuild.cli.common import Invocation, Subparsers, action, actions, dump
from rocbuild.cli.trying import add_try_options
from rocbuild.errors import RecipeError, UsageError

if TYPE_CHECKING:  # the recipe loader is imported when a command runs, not for --help
    from rocbuild.engine.upstream import UpstreamCheck
    from rocbuild.recipe.catalog import RecipeDirs

COMMAND = "recipes"


def register(sub: Subparsers) -> None:
    acts = actions(sub, COMMAND, "list, show, lint or create recipes; add, update or remove recipe sources; "
                                 "status: what each was last built and verified with for real")
    p = action(acts, COMMAND, "list", cmd_list, "every recipe visible, and where it comes from")
    _dirs(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = action(acts, COMMAND, "show", cmd_show, "print a recipe file")
    p.add_argument("name", metavar="NAME")
    _dirs(p)
    p = action(acts, COMMAND, "lint", cmd_lint, "check recipe files; exit 2 when one is wrong")
    p.add_argument("files", nargs="+", metavar="FILE")
    _dirs(p)
    p = action(acts, COMMAND, "new", cmd_new, "write a starter recipe, or a draft read from a release's sdist")
    p.add_argument("name", metavar="NAME")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write (default: ./NAME.yaml)")
    p.add_argument("--sdist", metavar="NAME==VERSION",
                   help="draft the recipe from this release's sdist: its build backend, CMake files and setup.py "
                        "(and a torch extension's op_builder/) are read for the HIP switches, target variables and "
                        "traps (nothing is built)")
    p.add_argument("--arch", metavar="LIST",
                   help="with --sdist: the targets the draft is for, checked against the arch allow-lists found "
                        "(comma-separated, e.g. gfx1100,gfx942)")
    add_try_options(p)
    p.add_argument("--root", metavar="NAME|DIR", help="with --try: build in this build root")
    p.add_argument("--python", metavar="PY", help="with --try: the target python (default: as build chooses it)")
    p.add_argument("--out", metavar="DIR", help="with --try: the wheelhouse (default: ./wheelhouse)")
    p.add_argument("--work", metavar="DIR", help="with --try: the work folder (default: under the XDG cache)")
    p.add_argument("--json", action="store_true", help="with --try: each try as JSON")
    p = action(acts, COMMAND, "add", cmd_add, "add a recipe source: a git repository or a folder")
    p.add_argument("location", metavar="URL|PATH")
    p.add_argument("--ref", help="the branch, tag or commit of the recipe repository (default: its HEAD)")
    p.add_argument("--name", help="the source's name (default: from the URL or folder)")
    _dirs(p)
    p = action(acts, COMMAND, "update", cmd_update, "fetch recipe sources again (default: all)")
    p.add_argument("names", nargs="*", metavar="SOURCE")
    p = action(acts, COMMAND, "remove", cmd_remove, "forget a recipe source")
    p.add_argument("name", metavar="SOURCE")
    p = action(acts, COMMAND, "sources", cmd_sources, "the recipe sources added")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = action(acts, COMMAND, "check", cmd_check, "newer upstream releases, and whether the patches still apply to them")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--pre", action="store_true", help="count pre-releases too")
    p.add_argument("--bump", action="store_true",
                   help="write the newest release into each recipe that is behind and whose patches all apply")
    _dirs(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = action(acts, COMMAND, "schema", cmd_schema, "the JSON Schema of recipe files (for editors and CI)")
    p.add_argument("-o", "--output", metavar="FILE", help="write it here (default: stdout)")
    p.add_argument("--path", action="store_true", help="print where the shipped copy is instead")
    p.add_argument("--reference", action="store_true",
                   help="print the recipe reference's field lists (Markdown) instead, as docs/recipes.md holds them")
    p = action(acts, COMMAND, "traps", cmd_traps, "the catalogue of known build traps: what shows each, and its fix")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--reference", action="store_true",
                   help="print the catalogue as docs/recipes.md lists it (Markdown)")
    p = action(acts, COMMAND, "status", cmd_status, "each recipe's last real build per ROCm release and arch set")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--results", metavar="FILE",
                   help="a real-builds results file (default: the one shipped with rocbuild)")
    _dirs(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _dirs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--recipes", action="append", default=[], metavar="DIR", help="extra recipe folder")


def _recipe_dirs(args: argparse.Namespace, inv: Invocation) -> RecipeDirs:
    from rocbuild.recipe.catalog import RecipeDirs

    return RecipeDirs.of(args.recipes, inv.environ)


def cmd_list(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.catalog as catalog

    dirs = _recipe_dirs(args, inv)
    rows: list[dict[str, Any]] = []
    for found in catalog.all_recipes(dirs):
        try:
            recipe = catalog.load(found.path, dirs)
            rows.append({"name": found.name, "version": recipe.version, "origin": found.origin,
                         "path": str(found.path), "summary": recipe.summary})
        except RecipeError as exc:
            rows.append({"name": found.name, "version": None, "origin": found.origin,
                         "path": str(found.path), "summary": "", "error": exc.render().splitlines()[0]})
    if args.json:
        dump(rows)
    else:
        for r in rows:
            print(f"{r['name']:<16} {r['version'] or 'INVALID':<12} {r['origin']:<16} {r['path']}")
    return 0


def cmd_show(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.catalog as catalog
    from rocbuild.recipe.read import read_recipe_text

    found = catalog.resolve(args.name, _recipe_dirs(args, inv))
    sys.stdout.write(read_recipe_text(found.path))  # a recipe file, never any other file named
    return 0


def cmd_lint(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.catalog as catalog

    failed = 0
    for name in args.files:
        try:
            recipe = catalog.load(name, _recipe_dirs(args, inv))
        except RecipeError as exc:
            print(exc.render(), file=sys.stderr)
            failed += 1
        else:
            print(f"{name}: ok ({recipe.name} {recipe.version}, {len(recipe.steps)} steps)")
    return 2 if failed else 0


def cmd_new(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.detect.arch import parse_arch_list
    from rocbuild.draft.starter import starter_recipe
    from rocbuild.recipe.schema import SCHEMA_BESIDE
    from rocbuild.recipe.shapes import NAME_RE

    name = args.name
    if not NAME_RE.match(name):
        raise UsageError(f"{name!r} is not a valid recipe name",
                         hint="lower-case letters, digits, '.', '_' and '-', starting with a letter or digit")
    if args.arch is not None and not args.sdist:
        raise UsageError("--arch is for drafts: give it with --sdist NAME==VERSION")
    if args.try_ and not args.sdist:
        raise UsageError("--try builds a draft: give it with --sdist NAME==VERSION")
    archs = parse_arch_list(args.arch) if args.arch is not None else []
    out = Path(args.output or f"{name}.yaml")
    if out.exists():  # never overwrite someone's recipe (checked again when writing)
        raise UsageError(f"{out} already exists", hint="give another -o FILE, or remove it first")
    text = draft_text(name, args.sdist, archs) if args.sdist else starter_recipe(name)
    try:
        with open(out, "x", encoding="utf-8") as fh:
            fh.write(text)
    except FileExistsError:
        raise UsageError(f"{out} already exists", hint="give another -o FILE, or remove it first") from None
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}") from None
    print(out)
    if args.try_:
        from rocbuild.cli.trying import try_new

        return try_new(args, inv, out)
    print(f"next: edit it, then `rocbuild recipes lint {out}` and `rocbuild plan {out} --arch {(archs or ['gfx90a'])[0]}`"
          f"; for your editor, `rocbuild recipes schema -o {out.parent / SCHEMA_BESIDE}`", file=sys.stderr)
    return 0


def draft_text(name: str, requirement: str, archs: list[str]) -> str:
    """Fetch the sdist (from the index, building nothing), unpack it aside and read its build files."""
    import tempfile

    from rocbuild.draft.torch_text import draft_notes
    from rocbuild.draft.tree import compiles_nothing, draft_recipe, read_tree
    from rocbuild.paths import cache_root
    from rocbuild.progress import Progress
    from rocbuild.source.sdist import fetch_sdist
    from rocbuild.source.spec import SDIST_ACCEPTED, SdistSource, sdist_problem

    problem = sdist_problem(requirement)
    if problem is not None:
        raise UsageError(f"--sdist {requirement!r}: {problem}", hint=f"accepted: {SDIST_ACCEPTED}")
    spec = SdistSource.in_cache(requirement, cache_root(), sys.executable)
    say = Progress().say
    with tempfile.TemporaryDirectory(prefix="rocbuild-draft-") as tmp:
        sha256 = fetch_sdist(spec, Path(tmp) / "src", lambda line: say(f"    {line}"))
        reading = read_tree(Path(tmp) / "src")
        if compiles_nothing(Path(tmp) / "src"):
            raise UsageError(f"{requirement} compiles nothing: its sdist holds no C, C++, CUDA or HIP source, no "
                             "extension module and no CMake project (a pure-Python package, one wheel for every "
                             "machine), so there is nothing to build for an AMD GPU",
                             hint=f"install it as it is: pip install {requirement}")
    for note in reading.notes + (draft_notes(reading.torch, archs, reading.requires) if reading.torch else []):
        say(f"note: {note}")
    return draft_recipe(name, requirement, sha256, reading, archs)


def cmd_traps(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.draft.traps import TRAPS, catalogue_json, reference_text

    if args.json:
        dump(catalogue_json())
    elif args.reference:
        sys.stdout.write(reference_text())
    else:
        for trap in TRAPS:
            print(f"{trap.id:<22} {trap.title}\n{'':<22} why: {trap.why}\n{'':<22} fix: {trap.fixes}")
    return 0


def cmd_add(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.catalog as catalog
    import rocbuild.recipe.sources as sources
    from rocbuild.progress import Progress

    source = sources.add_source(args.location, ref=args.ref, name=args.name, log=Progress().say)
    names = sorted(f.stem for f in source.recipe_dir.glob("*.y*ml"))
    print(f"added recipe source {source.name}: {source.describe()}")
    print(f"  recipes: {', '.join(names) or '(none yet)'}  (from {source.recipe_dir})")
    builtin = {f.name: f for f in catalog.all_recipes(_recipe_dirs(args, inv)) if not f.origin.startswith("source ")}
    for name in names:
        if name in builtin:
            print(f"  note: {name} is also a {builtin[name].origin} recipe, which `rocbuild {name}` (and "
                  f"`extends: {name}`) keeps using; this source's is `rocbuild {source.name}:{name}`")
    return 0


def cmd_update(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.sources as sources
    from rocbuild.progress import Progress

    for before, after in sources.update_sources(args.names, Progress().say):
        if before.kind == "dir":
            print(f"{after.name}: a folder, read in place ({after.location})")
        elif before.commit == after.commit:
            print(f"{after.name}: unchanged at {(after.commit or '?')[:12]}")
        else:
            print(f"{after.name}: {before.commit[:12] if before.commit else 'new'} -> {(after.commit or '?')[:12]}")
    return 0


def cmd_remove(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.sources as sources

    gone = sources.remove_source(args.name)
    print(f"removed recipe source {gone.name} ({gone.describe()})")
    return 0


def cmd_sources(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.sources as sources

    rows = sources.load_sources()
    if args.json:
        dump([{**dataclasses.asdict(s), "recipe_dir": str(s.recipe_dir)} for s in rows])
    else:
        for s in rows:
            print(f"{s.name:<16} {s.kind:<4} {s.describe()}")
        if not rows:
            print("no recipe sources; add one with `rocbuild recipes add URL|PATH`")
    return 0


def cmd_check(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.catalog as catalog

    dirs = _recipe_dirs(args, inv)
    names = list(args.names) or [found.name for found in catalog.all_recipes(dirs)]
    checks = [_check(name, args, inv) for name in names]
    if args.json:
        dump([c.to_json() for c in checks])
    else:
        for c in checks:
            _say_check(c)
    return 1 if any(c.behind or c.index_newest or not c.patches_apply for c in checks) else 0


def _check(name: str, args: argparse.Namespace, inv: Invocation) -> UpstreamCheck:
    """One recipe: its newest release, its patches tried on that release's tree, and --bump."""
    from rocbuild.engine.upstream import (
        UpstreamCheck,
        bump,
        fetch_tree,
        newest_on_index,
        newest_sdist,
        newest_tag,
        scratch_tree,
        try_patches,
    )
    from rocbuild.errors import HostNotReady
    from rocbuild.paths import cache_root
    from rocbuild.plan.assemble import plan_for
    from rocbuild.plan.request import BuildRequest
    from rocbuild.process.runner import Runner
    from rocbuild.progress import Progress
    from rocbuild.source.spec import GitSource, SdistSource

    say = Progress().say
    # The targets and this host's ROCm change nothing a check looks at: one arch stands in, so no GPU
    # is looked for, and a release or arch the recipe refuses (`unsupported:`) is a build's concern.
    request = BuildRequest(recipe=name, arch="gfx90a", recipe_dirs=tuple(args.recipes), build_env=False,
                           environ=dict(inv.environ), root=inv.root, refuse=False)
    try:
        plan = plan_for(request)
    except HostNotReady as exc:
        raise UsageError(f"recipes check {name}: {exc.message}", hint=exc.hint) from None
    source, recipe = plan.source, plan.recipe
    check = UpstreamCheck(recipe.name, str(recipe.path), recipe.version, "folder")
    if isinstance(source, SdistSource):
        check.kind = "sdist"
        check.newest, check.warning = newest_sdist(source.requirement, recipe.version, source.python, args.pre,
                                                   lambda line: say(f"    {line}"))
    elif isinstance(source, GitSource):
        check.kind = "git"
        found, check.warning = newest_tag(source.url, recipe.version, args.pre, lambda line: say(f"    {line}"),
                                          inv.environ)
        check.newest, check.tag = found if found else (None, None)
        if check.warning:
            check.index_newest = newest_on_index(recipe.name, recipe.version, plan.host.python.executable,
                                                 args.pre, lambda line: say(f"    {line}"))
    if not check.behind or not isinstance(source, SdistSource | GitSource):
        return check
    tree = scratch_tree(cache_root() / "check" / recipe.name)
    fetch_tree(source, check, tree, lambda line: say(f"    {line}"))
    check.patches = try_patches(plan.patches, tree, Runner(), tree.parent / "patches.log")
    if args.bump and check.patches_apply:
        print(bump(recipe.path, check))
    return check


def _say_check(c: UpstreamCheck) -> None:
    if c.warning:
        print(f"{c.recipe}: warning: {c.warning}")
    if not c.behind:
        state = "current" if not c.warning else "not checked (its upstream did not answer)"
        if c.index_newest:
            state += (f"; the package index lists {c.index_newest} for the project {c.recipe} (its tree, and so "
                      "the patches, cannot be tried from here)")
        print(f"{c.recipe} {c.current}: " + ("a local folder, nothing to check" if c.kind == "folder" else state))
        return
    print(f"{c.recipe} {c.current} -> {c.newest} ({c.kind}{', tag ' + c.tag if c.tag else ''}): "
          + ("every patch applies" if c.patches_apply else "a patch no longer applies"))
    for trial in c.patches:
        print(f"  {trial.verdict}: {trial.patch}")
        if trial.verdict == "fails":
            print("    " + trial.detail.replace("\n", "\n    "))


def cmd_schema(args: argparse.Namespace, inv: Invocation) -> int:
    from rocbuild.recipe.schema import reference_text, schema_file, schema_text

    if args.path:
        print(schema_file())
        return 0
    if args.reference:
        sys.stdout.write(reference_text())
        return 0
    if args.output is None:
        sys.stdout.write(schema_text())
        return 0
    try:
        Path(args.output).write_text(schema_text())
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
    print(args.output)
    return 0


def cmd_status(args: argparse.Namespace, inv: Invocation) -> int:
    import rocbuild.recipe.catalog as catalog
    import rocbuild.recipe.status as status

    records = status.read_results(Path(args.results) if args.results else status.shipped_results())
    names = list(args.names) or [found.name for found in catalog.all_recipes(_recipe_dirs(args, inv))]
    rows = [status.recipe_status(name, records) for name in names]
    if args.json:
        dump(rows)
    else:
        for row in rows:
            for line in status.status_lines(row):
                print(line)
    return 0
