"""Executes a Plan as phases that take and return values:

    resolve source -> identify (BuildIdentity) -> build cache? -> requirements
    -> prepare (fresh tree unless the identity's tree part is unchanged)
    -> steps (stamps chained from the prepared tree) -> collect -> label
    -> verify -> publish (+ store in the build cache) -> BuildResult

A finished step leaves a stamp holding the fingerprint of its rendered
definition chained with everything before it (and with each earlier run that
really happened); the next run skips it while the fingerprint matches and
its known outputs are there, so a failed or interrupted build resumes where it
stopped, and a changed input re-runs from the first step it affects. What the
tree was prepared from (source, patches, toolchain, target python,
environment, archs, options) is the root of that chain: when it changes, the
work folder starts afresh, CMake caches included.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rocbuild.compat import assert_never
from rocbuild.detect.rocm import Rocm, probe_tool
from rocbuild.engine.buildenv import BuildEnvMaker
from rocbuild.engine.cache import BuildCache, CacheEntry
from rocbuild.engine.identity import BuildIdentity, Toolchain, build_identity, changed_fields, toolchain_of
from rocbuild.engine.lock import Lock, make_lock, read_lock, write_lock
from rocbuild.engine.patch import apply_patch
from rocbuild.engine.publish import finalize, publish
from rocbuild.engine.requirements import check_requirements, install_missing_torch, probe_torch
from rocbuild.engine.until import check_until
from rocbuild.engine.workspace import Workspace, chain_of, claim, fingerprint
from rocbuild.errors import StepFailed, UsageError
from rocbuild.fsutil import copy_atomically
from rocbuild.plan.confine import sandbox, step_environment
from rocbuild.plan.failure import report_context
from rocbuild.plan.model import EXTENSION_JOBS, EXTENSION_SHIM, Plan, Step, extension_shim_dir
from rocbuild.plan.records import nearest, records_file
from rocbuild.process.runner import StepRunner
from rocbuild.progress import Progress
from rocbuild.source.git import checkout_git, copy_tree, resolve_git, tree_fingerprint
from rocbuild.source.spec import DirSource, GitSource, SdistSource, SourceSpec
from rocbuild.verify.plan_checks import Checker, import_readers_meanwhile

PREPARE_STAMP = "prepare"


@dataclass(frozen=True)
class Resolved:
    """The source pinned down: a commit id, or the content fingerprint of a source folder."""

    identity: str
    downloaded: bool = False


@dataclass(frozen=True)
class BuildResult:
    wheels: tuple[Path, ...]  # in the wheelhouse
    tree: Path  # the prepared (and built) source tree
    cache_key: str | None = None  # the build identity's key, when the build cache was used
    from_cache: bool = False  # the wheels came from the build cache: no step ran
    stopped_after: str | None = None  # --until


class Engine:
    """Holds the collaborators of one build; every phase passes its results on as values."""

    def __init__(self, plan: Plan, runner: StepRunner, progress: Progress, *, cache: BuildCache | None = None,
                 environ: Mapping[str, str] | None = None,
                 toolchain: Callable[[Rocm], Toolchain] | None = None, install_missing: bool = False):
        self.plan = plan
        self.runner = runner
        self.progress = progress
        self.workspace = Workspace(plan.work)
        self.cache = cache  # None: neither use nor fill the build cache
        self.environ = dict(plan.host.environ if environ is None else environ)
        self.toolchain = toolchain or self._probe_toolchain
        # A ROCm torch into the target python; inside a build root, also apt-get install what the recipe lacks.
        self.install_missing = install_missing
        self.build_env = BuildEnvMaker(plan, runner, progress, self.workspace)

    @functools.cached_property
    def estimate(self) -> str:
        """What the real-build records say this recipe's build takes, beside a running step's progress."""
        record = nearest(self.plan.recipe.name, self.plan.host.archs, self.plan.options, records_file(self.environ))
        return f"the records: {record.describe()}" if record else ""

    def _probe_toolchain(self, rocm: Rocm) -> Toolchain:
        root = self.plan.host.root
        return toolchain_of(rocm, lambda argv: probe_tool(argv, self.environ), root.label if root else None)

    # -- entry points -------------------------------------------------------

    def check_until(self, until: str | None) -> None:
        check_until(self.plan, until)

    def prepare(self, *, clean: bool = False) -> Path:
        return self.build(clean=clean, until="prepare", use_cache=False, check_host=False).tree

    def install_torch(self) -> bool:
        """--install-missing: a ROCm torch into the target python when the recipe requires one and it has
        none. True when one was installed: the build must then be planned again, against it."""
        with self.workspace.locked(False, self.progress.say) as lock_fd:
            self.runner.keep_open(lock_fd)
            return install_missing_torch(self.plan, self.runner, self.workspace.log_path(0, "requirements"),
                                         self.progress)

    def lock(self) -> tuple[Path, Lock]:
        """`rocbuild lock`: resolve the source (through the mirror) and write RECIPE.lock beside the recipe."""
        plan = self.plan
        claim(plan.work.root)
        plan.work.logs.mkdir(parents=True, exist_ok=True)
        lock = make_lock(plan, self.resolve_source(plan.work.logs / "00-lock.log").identity)
        return write_lock(lock), lock

    def build(self, *, clean: bool = False, until: str | None = None, use_cache: bool = True,
              check_host: bool = True, locked: bool = False) -> BuildResult:
        """`check_host=False` (prepare) skips the build requirements: fetching and patching need none.
        `locked`: hold the build to RECIPE.lock (the recipe part now, the source once resolved)."""
        plan = self.plan
        self.check_until(until)
        held_to = read_lock(plan.recipe.path) if locked else None  # the lock file the build must match
        if held_to is not None:
            held_to.check(plan)
        if until != "prepare":
            check_out_folder(plan.out)
        with self.workspace.locked(clean, self.progress.say) as lock_fd:
            self.runner.keep_open(lock_fd)  # a step that outlives a killed rocbuild still holds the folder
            req_log = self.workspace.log_path(0, "requirements")
            torch_env = probe_torch(plan, self.runner, req_log, install=self.install_missing and check_host,
                                    progress=self.progress)
            # A cache hit needs none of the build requirements, so they are checked after the lookup;
            # but never clone a repository for the first time for a host that cannot build it.
            first_clone = isinstance(plan.source, GitSource) and not Path(plan.source.mirror, "HEAD").is_file()
            if first_clone and check_host:
                check_requirements(plan, self.runner, req_log, torch_env, install_missing=self.install_missing)
            # Appended to, not replaced: a run that finds the tree up to date keeps the record of how it was made.
            prepare_log = self.workspace.log_path(0, "prepare", fresh=False)
            with open(prepare_log, "a", encoding="utf-8") as fh:
                fh.write(f"== {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n")
            resolved = self.resolve_source(prepare_log, held_to)
            self._check_arch_lists(resolved)
            extras = {e.name: self._resolve(e.source, prepare_log) for e in plan.extra_sources}
            identity = build_identity(plan, resolved.identity, self.toolchain(plan.host.rocm),
                                      torch_env.torch if torch_env else None, self.environ,
                                      extra_sources={name: r.identity for name, r in extras.items()})
            key = identity.key() if self.cache is not None and plan.has_wheel_steps else None
            if key is not None and self.cache is not None and use_cache and until is None:
                hit = self.cache.lookup(key)
                if hit is not None:
                    return self._from_cache(hit)
            if not first_clone and check_host:
                check_requirements(plan, self.runner, req_log, torch_env, install_missing=self.install_missing)
            previous = self._prepare(resolved, extras, identity, prepare_log)
            if until == "prepare":
                return BuildResult((), plan.work.src, stopped_after="prepare")
            self._ccache_links()
            self._extension_shim()
            with step_tmp(plan.step_tmp):
                for index, step in enumerate(plan.steps, start=1):
                    previous = self._run_step(index, step, previous)
                    if step.name == until:
                        self.progress.say(f"stopped after {until!r} (--until); run again without it to finish")
                        return BuildResult((), plan.work.src, stopped_after=until)
            labelled = self._label(identity, self._collect())
            placed = self._verify_and_publish(labelled, key, from_cache=False)
            if key is not None and self.cache is not None and labelled:
                self._store(key, labelled, identity)
            return BuildResult(tuple(placed), plan.work.src, cache_key=key)

    # -- resolve ------------------------------------------------------------

    def resolve_source(self, log: Path, held_to: Lock | None = None) -> Resolved:
        """The resolved commit (through the mirror) or the content fingerprint of the source folder;
        `held_to`: the lock file it must match (build --locked)."""
        resolved = self._resolve(self.plan.source, log)
        if held_to is not None:
            held_to.check(self.plan, resolved.identity)
        return resolved

    def _check_arch_lists(self, resolved: Resolved) -> None:
        """The source's own arch lists (`archs-not-in:`), read now that the source is here: an arch a list
        lacks stops the build before any requirement is installed or any step runs."""
        plan = self.plan
        if not plan.arch_lists:
            return
        from rocbuild.plan.archlists import read_arch_lists  # the few recipes with such a list

        checked = read_arch_lists(plan, rev=resolved.identity if isinstance(plan.source, GitSource) else None)
        for check in checked.arch_lists:
            if check.listed is not None:
                self.progress.say(f"    archs {', '.join(plan.host.archs)}: listed in {check.variable} "
                                  f"({check.file}:{check.line})")

    def _resolve(self, source: SourceSpec, log: Path) -> Resolved:
        match source:
            case GitSource():
                sha, downloaded = resolve_git(source, self._git_log(log))
                return Resolved(sha, downloaded)
            case DirSource():
                if not Path(source.directory).is_dir():
                    raise UsageError(f"source folder {source.directory} does not exist or is not a folder")
                return Resolved(tree_fingerprint(Path(source.directory)))
            case SdistSource():
                from rocbuild.source.sdist import resolve_sdist  # the index client: for sdists only

                identity, downloaded = resolve_sdist(source, self._git_log(log), log)
                return Resolved(identity, downloaded)
            case _:
                assert_never(source)

    def _git_log(self, log: Path) -> Callable[[str], None]:
        """Git commands go to the prepare log; what they are for also goes to the terminal."""
        def write(line: str) -> None:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
            if not line.startswith("$ "):
                self.progress.say(f"    {line}")
        return write

    # -- prepare ------------------------------------------------------------

    def _prepare(self, resolved: Resolved, extras: dict[str, Resolved], identity: BuildIdentity, log: Path) -> str:
        plan = self.plan
        started = self.progress.start("prepare", plan.source.describe())
        tree = identity.tree_json()
        fp = identity.tree_digest()
        stamp = self.workspace.stamp(PREPARE_STAMP)
        chain = chain_of(stamp, fp)
        if chain is not None and plan.work.src.is_dir():
            self.progress.done("prepare", started, "up to date")
            return chain
        if stamp is not None:
            self.progress.say("    " + _why_fresh(stamp.get("identity"), tree))
        # A fresh tree every time: patches then always start from upstream, and no build folder,
        # CMake cache or wheel made from other inputs survives.
        self.workspace.reset_tree()
        self._fetch(plan.source, resolved, plan.work.src, log, "source")
        for extra in plan.extra_sources:
            self._fetch(extra.source, extras[extra.name], Path(extra.dest), log, f"source {extra.name}")
        for action in plan.patches:
            self.progress.say(f"    patch: {apply_patch(action, plan.work.src, self.runner, log)}")
        chain = self.workspace.finish(PREPARE_STAMP, fp, {"identity": tree})
        self.progress.done("prepare", started)
        return chain

    def _fetch(self, source: SourceSpec, resolved: Resolved, dest: Path, log: Path, label: str) -> None:
        match source:
            case GitSource():
                checkout_git(source, resolved.identity, dest, self._git_log(log))
                how = "downloaded" if resolved.downloaded else "from the mirror cache"
                self.progress.say(f"    {label}: {resolved.identity[:12]} ({how})")
            case DirSource():
                skipped = copy_tree(Path(source.directory), dest)
                self.progress.say(f"    {label}: copy of {source.directory}")
                if skipped:
                    self.progress.say(f"    skipped {len(skipped)} FIFO(s), socket(s) or device(s): "
                                      + ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else ""))
            case SdistSource():
                from rocbuild.source.sdist import unpack_sdist

                unpack_sdist(source, dest)
                how = "downloaded" if resolved.downloaded else "from the cache"
                self.progress.say(f"    {label}: {resolved.identity} ({how})")
            case _:
                assert_never(source)

    def _ccache_links(self) -> None:
        """ccache's masquerade folder: `hipcc` there is ccache, which then runs the next hipcc on PATH."""
        folder, ccache = self.plan.ccache_bin, self.plan.host.ccache
        if folder is None or ccache is None:
            return
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / "hipcc"
        if not (link.is_symlink() and os.readlink(link) == ccache):
            tmp = folder / f".hipcc-{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(ccache)
            os.replace(tmp, link)

    def _extension_shim(self) -> None:
        """The torch extensions' build shim, where the plan's PYTHONPATH names it (plan/planner.py)."""
        if EXTENSION_JOBS not in self.plan.base_env:
            return
        folder = extension_shim_dir(self.plan.work)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(EXTENSION_SHIM, folder / EXTENSION_SHIM.name)

    # -- steps --------------------------------------------------------------

    def _run_step(self, index: int, step: Step, previous: str) -> str:
        total = len(self.plan.steps)
        label = f"[{index}/{total}] {step.name}"
        fp = fingerprint(previous, step.identity())
        stamp = f"{index:02d}-{step.name}"
        chain = chain_of(self.workspace.stamp(stamp), fp)
        if chain is not None and step.outputs_present():
            self.progress.skipped(label, "done in an earlier run, inputs unchanged")
            return chain
        self.workspace.drop_stamp(stamp)
        if step.kind == "wheel" and self.plan.build_env is not None:
            self.build_env.ready(self.plan.build_env)
        if index == total and self.plan.has_wheel_steps:
            import_readers_meanwhile()
        line = step.command_line()
        started = self.progress.start(label, line if len(line) < 160 else "")
        log = self.workspace.log_path(index, step.name)
        if step.wheel_dir is not None:  # only what this run of the step writes can be collected
            shutil.rmtree(step.wheel_dir, ignore_errors=True)
        if step.kind in ("cmake", "cmake-build"):
            self.plan.work.build.mkdir(parents=True, exist_ok=True)
        box = sandbox(self.plan, step)
        env = step_environment(self.plan, step) if box else {**self.plan.base_env, **step.env}
        watch = self.progress.watch(label, lambda: self.estimate)
        try:
            result = self.runner.run(step.argv, cwd=step.cwd, env=env, log=log, shell=step.shell, sandbox=box,
                                     watch=watch)
        finally:
            if watch is not None:
                watch.close()
        if result.exit_code != 0:
            from rocbuild.draft.report import diagnose, read_log, write_report  # a failure's report only

            report = diagnose(read_log(log), report_context(self.plan))
            write_report(log, report)
            raise StepFailed(
                f"step {step.name!r} failed with exit code {result.exit_code} (recipe {step.where})",
                hint="\n".join(report.lines(log)) + "\nfix the cause and run the same command again: "
                "finished steps are not repeated", report=report, log=log)
        chain = self.workspace.finish(stamp, fp)
        self.progress.done(label, started)
        return chain

    # -- wheels -------------------------------------------------------------

    def _collect(self) -> list[Path]:
        """The wheels this plan's wheel steps wrote; anything else under dist/ is an earlier plan's and goes."""
        steps = self.plan.wheel_steps
        if not steps:
            return []
        own = {Path(s.wheel_dir) for s in steps if s.wheel_dir}
        if self.plan.work.dist.is_dir():
            for stray in self.plan.work.dist.iterdir():
                if stray in own:
                    continue
                if stray.is_dir() and not stray.is_symlink():
                    shutil.rmtree(stray)
                else:
                    stray.unlink()
        wheels = []
        for step in steps:
            found = sorted(Path(step.wheel_dir or "").glob("*.whl"))
            if not found:
                raise StepFailed(f"wheel step {step.name!r} finished but left no wheel in {step.wheel_dir}")
            wheels += found
        return wheels

    def _label(self, identity: BuildIdentity, wheels: list[Path]) -> dict[Path, dict[str, Any]]:
        if not wheels:
            shutil.rmtree(self.plan.work.final, ignore_errors=True)
            return {}
        label = self.plan.local_label
        started = self.progress.start("label", f"+{label}" if label else "no label")
        labelled = finalize(self.plan, identity, wheels)
        self.progress.done("label", started, ", ".join(w.name for w in labelled))
        return labelled

    def _from_cache(self, entry: CacheEntry) -> BuildResult:
        """An unchanged build: the wheels of the earlier one, verified again, no build step run."""
        final = self.plan.work.final
        started = self.progress.start("build cache", f"hit {entry.key[:16]} (built {entry.data['created']}Z)")
        shutil.rmtree(final, ignore_errors=True)
        final.mkdir(parents=True)
        wheels = {copy_atomically(w.path, final / w.path.name): w.provenance for w in entry.wheels}
        self.progress.done("build cache", started, "inputs unchanged: no build step runs, "
                           "the cached wheel is verified again")
        placed = self._verify_and_publish(wheels, entry.key, from_cache=True)
        return BuildResult(tuple(placed), self.plan.work.src, cache_key=entry.key, from_cache=True)

    def _verify_and_publish(self, wheels: dict[Path, dict[str, Any]], key: str | None, *, from_cache: bool) -> list[Path]:
        """The plan's checks on the labelled wheels, then into the wheelhouse: the one way a wheel gets there."""
        verdict = Checker(self.plan, self.runner, self.progress, self.workspace.log_path(90, "verify")).run(
            list(wheels))
        placed = publish(self.plan.out, wheels, verdict, key, from_cache=from_cache)
        if placed and self.plan.run_env:
            self.progress.say("note: at run time it needs " + " ".join(f"{k}={v}" for k, v in self.plan.run_env.items())
                              + " (the recipe's run-env; `rocbuild verify` says so of its wheels too)")
        return placed

    def _store(self, key: str, wheels: dict[Path, dict[str, Any]], identity: BuildIdentity) -> None:
        assert self.cache is not None
        host = self.plan.host
        about = {"recipe": self.plan.recipe.name, "version": self.plan.recipe.version, "archs": list(host.archs),
                 "rocm": identity.toolchain.rocm_version, "python": host.python.version}
        try:
            entry = self.cache.store(key, wheels, about, identity.to_json())
        except OSError as exc:  # the wheels are already in the wheelhouse; only reuse is lost
            self.progress.say(f"    build cache: not stored ({exc})")
        else:
            self.progress.say(f"    build cache: stored as {key[:16]} ({entry.folder})")


@contextmanager
def step_tmp(folder: Path | None) -> Iterator[None]:
    """The steps' TMPDIR, empty when the first step starts (a killed build's leftovers go) and removed
    with whatever the compilers left in it when the last one ends, failed or not."""
    if folder is None:
        yield
        return
    shutil.rmtree(folder, ignore_errors=True)
    try:
        folder.mkdir(mode=0o700, parents=True)
    except OSError as exc:  # FileExistsError: not ours to remove (a link, another user's folder)
        raise StepFailed(f"cannot make the build's TMPDIR {folder}: {exc.strerror or exc}",
                         hint="remove it, or point TMPDIR at another folder") from None
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_out_folder(out: Path) -> None:
    """The wheelhouse must be (or be creatable as) a folder this user can write: found out before
    the build, not after it. Nothing is created here: a failed build leaves no empty wheelhouse."""
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"--out {out}: {existing} is not a folder",
                         hint="give a folder for the wheels (it is created if missing)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: this user cannot write in {existing}", hint="give a folder you can write")


def _why_fresh(before: object, after: dict[str, Any]) -> str:
    if not isinstance(before, dict):
        return "work folder: prepared by another rocbuild; starting from a fresh tree"
    changed = changed_fields(before, after)
    detail = ""
    if "toolchain" in changed:
        old, new = before.get("toolchain"), after["toolchain"]
        old = old if isinstance(old, dict) else {}  # a damaged stamp only loses the detail
        detail = f" (ROCm {old.get('rocm_version')} -> {new['rocm_version']}"
        if old.get("hip_compiler") != new["hip_compiler"]:
            detail += f", HIP compiler {old.get('hip_compiler')} -> {new['hip_compiler']}"
        detail += ")"
    if "components" in changed:
        old_c, new_c = before.get("components"), after["components"]
        old_c = old_c if isinstance(old_c, dict) else {}
        moved = [f"{name} {old_c.get(name, 'none')} -> {new_c.get(name, 'none')}"
                 for name in sorted(set(old_c) | set(new_c)) if old_c.get(name) != new_c.get(name)]
        detail += f" (ROCm components: {', '.join(moved[:6])}{' ...' if len(moved) > 6 else ''})"
    return (f"work folder: {', '.join(changed) or 'its inputs'} changed since it was prepared{detail}; "
            "starting from a fresh tree and build folder")
