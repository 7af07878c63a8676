"""Executes a Plan: requirement checks, prepare (fetch + patch), steps, verify, wheelhouse.

A finished step leaves a stamp holding the fingerprint of its rendered
definition chained with everything before it; the next run skips it while
the fingerprint matches, so a failed or interrupted build resumes where it
stopped and a changed input re-runs from the first step it affects.
"""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import json
import os
import re
import shutil
import zipfile
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from packaging.specifiers import SpecifierSet

from rocbuild import __version__
from rocbuild.buildcache import BuildCache, Entry, cache_inputs, cache_key
from rocbuild.detect.torch import parse_probe, rocm_torch_install
from rocbuild.errors import HostNotReady, StepFailed, UsageError
from rocbuild.lock import check_locked_source
from rocbuild.plan import Plan, Step
from rocbuild.progress import Progress
from rocbuild.runner import Runner
from rocbuild.steps.fetch import checkout_git, copy_tree, resolve_git, tree_fingerprint
from rocbuild.steps.patch import apply_patch
from rocbuild.verify.install import install_wheels
from rocbuild.wheels import copy_atomically, file_sha256, rewrite_wheel, update_manifest, write_text_atomically

if TYPE_CHECKING:  # the ELF readers cost ~20 ms to import; a build without wheels never needs them
    from rocbuild.verify.check import Verdict

TAIL_LINES = 40
_UNPROBED = object()


def fingerprint(previous: str, identity: object) -> str:
    data = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256((previous + "\n" + data).encode()).hexdigest()


class Engine:
    def __init__(self, plan: Plan, runner: Runner, progress: Progress, *, cache: BuildCache | None = None,
                 locked: dict | None = None):
        self.plan = plan
        self.runner = runner
        self.progress = progress
        self.work = plan.work
        self.cache = cache  # None: neither use nor fill the build cache
        self.locked = locked  # a lock file's contents the build must match (build --locked)
        self.source_identity: str | None = None  # resolved commit, or the fingerprint of a source folder
        self.downloaded = False
        self.cache_hit: str | None = None  # the build cache key when the wheels came from the cache
        self._torch_env = _UNPROBED

    # -- public entry points ------------------------------------------------

    def step_names(self) -> list[str]:
        return ["prepare"] + [s.name for s in self.plan.steps]

    def check_until(self, until: str | None) -> None:
        if until is not None and until not in self.step_names():
            raise UsageError(f"--until {until!r}: no such step in {self.plan.recipe.name}",
                             hint="steps: " + ", ".join(self.step_names()))

    def prepare(self, *, clean: bool = False) -> Path:
        with self._locked(clean):
            self._prepare()
        return self.work.src

    def build(self, *, clean: bool = False, until: str | None = None) -> list[Path]:
        self.check_until(until)
        with self._locked(clean):
            # A cache hit needs none of the build requirements, so they are checked after the lookup;
            # but never clone a repository for the first time for a host that cannot build it.
            checked = self.plan.source.kind == "git" and not Path(self.plan.source.mirror, "HEAD").is_file()
            if checked:
                self.check_requirements()
            identity = self.resolve_source()
            key = inputs = None
            if self.cache is not None and self.plan.has_wheel_steps and self.plan.cache_basis is not None:
                inputs = cache_inputs(self.plan.cache_basis, identity, os.environ, self._torch_identity())
                key = cache_key(inputs)
                hit = self.cache.lookup(key) if until is None else None
                if hit is not None:
                    return self._from_cache(hit)
            if not checked:
                self.check_requirements()
            previous = self._prepare()
            if until == "prepare":
                return []
            self._ccache_links()
            for index, step in enumerate(self.plan.steps, start=1):
                previous = self._run_step(index, step, previous)
                if step.name == until:
                    self.progress.say(f"stopped after {until!r} (--until); run again without it to finish")
                    return []
            provenance = self._finalize(self._collect())
            verdict = self._verify(list(provenance))
            placed = self._publish(provenance, verdict, key)
            if key is not None and provenance:
                try:
                    entry = self.cache.store(key, provenance, self._cache_about(), inputs)
                except OSError as exc:  # the wheels are already in the wheelhouse; only reuse is lost
                    self.progress.say(f"    build cache: not stored ({exc})")
                else:
                    self.progress.say(f"    build cache: stored as {key[:16]} ({entry.folder})")
            return placed

    def _torch_identity(self) -> dict | None:
        """An extension built against torch is only as good as that torch: its version joins the key."""
        argv = self.plan.requirements.torch_check_argv
        if not argv:
            return None
        env = self._probe_torch(argv)
        torch = env.torch if env is not None else None
        return {"version": torch.version, "hip": torch.hip, "cuda": torch.cuda} if torch else {"version": None}

    def _from_cache(self, entry: Entry) -> list[Path]:
        """An unchanged build: the wheels of the earlier one, verified again, no build step run."""
        self.cache_hit = entry.key
        started = self.progress.start("build cache", f"hit {entry.key[:16]} (built {entry.data['created']}Z)")
        shutil.rmtree(self.work.final, ignore_errors=True)
        self.work.final.mkdir(parents=True)
        provenance = {copy_atomically(w.path, self.work.final / w.path.name): w.provenance for w in entry.wheels}
        self.progress.done("build cache", started, "inputs unchanged: no build step runs, "
                           "the cached wheel is verified again")
        verdict = self._verify(list(provenance))
        return self._publish(provenance, verdict, entry.key, from_cache=True)

    def _cache_about(self) -> dict:
        host = self.plan.host
        return {"recipe": self.plan.recipe.name, "version": self.plan.recipe.version, "archs": list(host.archs),
                "rocm": str(host.rocm.version) if host.rocm.version else None, "python": host.python.version}

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

    # -- requirements -------------------------------------------------------

    def check_requirements(self) -> None:
        req = self.plan.requirements
        rocm = self.plan.host.rocm
        problems: list[str] = []
        if req.rocm:
            if rocm.version is None:
                problems.append(f"cannot tell the ROCm version at {rocm.path} (the recipe needs ROCm {req.rocm})")
            elif not SpecifierSet(req.rocm).contains(str(rocm.version), prereleases=True):
                problems.append(f"ROCm {rocm.version} at {rocm.path} does not satisfy {req.rocm}")
        for tool in req.tools:
            if shutil.which(tool, path=self.plan.base_env.get("PATH", os.environ.get("PATH"))) is None:
                problems.append(f"tool {tool!r} not found on PATH")
        missing_pkgs = [p for p in req.cmake_packages if rocm.cmake_package(p) is None]
        for pkg in missing_pkgs:
            roots = ", ".join(str(r) for r in rocm.cmake_roots) or str(rocm.path)
            problems.append(f"CMake package {pkg!r} not found under {roots}")
        if req.python_check_argv:
            log = self.work.logs / "00-requirements.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("")
            result = self.runner.run(req.python_check_argv, cwd=os.getcwd(), env=self.plan.base_env, log=log)
            if result.exit_code != 0:
                missing = result.output.strip().splitlines()[-1:] or ["?"]
                problems.append(f"python {self.plan.host.python.executable} lacks build module(s): {missing[0]}")
        if req.torch_check_argv:
            problems += self._torch_problems(req.torch_check_argv)
        if problems:
            raise HostNotReady(
                f"this host cannot build {self.plan.recipe.name} yet:",
                hint="\n".join("- " + p for p in problems)
                + "\n(`rocbuild plan` lists every requirement; ROCm packages go under the ROCm prefix)",
            )

    def _probe_torch(self, argv: tuple[str, ...]):
        """The target python's torch, as its torch/version.py says (None: the probe failed). Run once."""
        if self._torch_env is _UNPROBED:
            log = self.work.logs / "00-requirements.log"
            result = self.runner.run(argv, cwd=str(self.work.root), env=self.plan.base_env, log=log)
            try:
                self._torch_env = parse_probe(result.output) if result.exit_code == 0 else None
            except (ValueError, KeyError):
                self._torch_env = None
        return self._torch_env

    def _torch_problems(self, argv: tuple[str, ...]) -> list[str]:
        """A CUDA or CPU torch in the target python would make a CUDA-linked or CPU-only extension."""
        python = self.plan.host.python.executable
        log = self.work.logs / "00-requirements.log"
        env = self._probe_torch(argv)
        install = rocm_torch_install(python, self.plan.host.rocm.version)
        if env is None:
            return [f"cannot read the torch of {python} (see {log})"]
        if env.torch is None:
            return [f"no torch in {python}: this recipe builds against a ROCm torch; install one:\n  {install}"]
        if env.torch.flavour != "rocm":
            return [f"{env.torch.describe()}: building against it would give an extension that links CUDA "
                    f"(or none at all), not ROCm. Install a ROCm torch:\n  {install}"]
        return []

    # -- prepare ------------------------------------------------------------

    def resolve_source(self) -> str:
        """The resolved commit (through the mirror) or the content fingerprint of the source folder."""
        if self.source_identity is not None:
            return self.source_identity
        plan = self.plan
        if plan.source.kind == "git":
            identity, self.downloaded = resolve_git(plan.source, self.progress.say)
        else:
            if not Path(plan.source.directory).is_dir():
                raise UsageError(f"source folder {plan.source.directory} does not exist or is not a folder")
            identity = tree_fingerprint(Path(plan.source.directory))
        if self.locked is not None:
            check_locked_source(self.locked, plan, identity)
        self.source_identity = identity
        return identity

    def _prepare(self) -> str:
        plan = self.plan
        started = self.progress.start("prepare", _source_label(plan))
        log = self._log_path(0, "prepare", fresh=False)
        identity = self.resolve_source()
        downloaded = self.downloaded
        fp = fingerprint(identity, plan.prepare_identity())
        stamp = self.work.stamps / "prepare.json"
        if self._stamp_matches(stamp, fp) and self.work.src.is_dir():
            self.progress.done("prepare", started, "up to date")
            return fp
        # A fresh tree every time: patches then always start from upstream.
        for d in (self.work.src, self.work.build, self.work.dist, self.work.stamps):
            shutil.rmtree(d, ignore_errors=True)
        log.write_text("")
        if plan.source.kind == "git":
            checkout_git(plan.source, identity, self.work.src)
            how = "downloaded" if downloaded else "from the mirror cache"
            self.progress.say(f"    source: {identity[:12]} ({how})")
        else:
            copy_tree(Path(plan.source.directory), self.work.src)
            self.progress.say(f"    source: copy of {plan.source.directory}")
        for action in plan.patches:
            note = apply_patch(action, self.work.src, self.runner, log)
            self.progress.say(f"    patch: {note}")
        self._write_stamp(stamp, fp, {"source": identity})
        self.progress.done("prepare", started)
        return fp

    # -- steps --------------------------------------------------------------

    def _run_step(self, index: int, step: Step, previous: str) -> str:
        total = len(self.plan.steps)
        label = f"[{index}/{total}] {step.name}"
        fp = fingerprint(previous, step.identity())
        stamp = self.work.stamps / f"{index:02d}-{step.name}.json"
        if self._stamp_matches(stamp, fp):
            self.progress.skipped(label, "done in an earlier run, inputs unchanged")
            return fp
        stamp.unlink(missing_ok=True)
        started = self.progress.start(label, step.command_line() if len(step.command_line()) < 160 else "")
        log = self._log_path(index, step.name)
        if step.kind == "wheel":
            shutil.rmtree(step.detail["wheel_dir"], ignore_errors=True)
        if step.kind in ("cmake", "cmake-build"):
            self.work.build.mkdir(parents=True, exist_ok=True)
        env = {**self.plan.base_env, **step.env}
        result = self.runner.run(step.argv, cwd=step.cwd, env=env, log=log, shell=step.shell)
        if result.exit_code != 0:
            raise StepFailed(
                f"step {step.name!r} failed with exit code {result.exit_code} (recipe {step.where})",
                hint=_tail(log) + f"\nfull log: {log}\nfix the cause and run the same command again: "
                "finished steps are not repeated",
            )
        self._write_stamp(stamp, fp, {})
        self.progress.done(label, started)
        return fp

    # -- wheels -------------------------------------------------------------

    def _collect(self) -> list[Path]:
        if not self.plan.has_wheel_steps:
            return []
        wheels = sorted(self.work.dist.glob("*/*.whl"))
        if not wheels:
            raise StepFailed(f"the build finished but left no wheel in {self.work.dist}")
        return wheels

    def _finalize(self, wheels: list[Path]) -> dict[Path, dict]:
        """Relabel each wheel (+rocmX.Y) and add its provenance; the originals stay in dist/.

        Returns each final wheel with the provenance written into it."""
        shutil.rmtree(self.work.final, ignore_errors=True)
        if not wheels:
            return {}
        started = self.progress.start("label", f"+{self.plan.local_label}" if self.plan.local_label else "no label")
        out = {}
        for wheel in wheels:
            record = self._provenance(wheel)
            out[rewrite_wheel(wheel, self.work.final, self.plan.local_label, record)] = record
        self.progress.done("label", started, ", ".join(w.name for w in out))
        return out

    def _provenance(self, wheel: Path) -> dict:
        plan, host = self.plan, self.plan.host
        rocm, src = host.rocm, plan.source
        if src.kind == "git":
            source = {"kind": "git", "url": src.url, "ref": src.ref, "commit": self.source_identity,
                      "submodules": src.submodules}
        else:
            source = {"kind": "dir", "path": src.directory, "fingerprint": self.source_identity}
        return {
            "schema": 1,
            "rocbuild": __version__,
            "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "recipe": {"name": plan.recipe.name, "version": plan.recipe.version, "path": str(plan.recipe.path),
                       "sha256": plan.recipe.digest},
            "source": source,
            "patches": [p.record() for p in plan.patches],
            "options": plan.options,
            "archs": list(host.archs),
            "rocm": {"version": str(rocm.version) if rocm.version else None, "path": str(rocm.path),
                     "layout": rocm.layout},
            "compiler": {"hipcc": str(rocm.hipcc) if rocm.hipcc else None,
                         "hip_clang": str(rocm.hip_compiler) if rocm.hip_compiler else None},
            "hsa_override": host.override,
            "python": host.python.to_json(),
            "wheel": {"built_as": wheel.name, "local_version": plan.local_label or None},
        }

    def _verify(self, wheels: list[Path]) -> Verdict | None:
        """Run the verify entries in order; the first failure stops the build before the wheelhouse."""
        verdict = None
        log = self._log_path(90, "verify")
        installed: dict[str, str] | None = None
        for check in self.plan.verify:
            label = f"verify {check.name}"
            if check.kind == "code-objects":
                result = self._code_objects(check, wheels, log)
                if check.detail.get("built_in"):  # its findings go into the manifest
                    verdict = result
            elif check.kind == "wheel-contains":
                started = self.progress.start(label, check.detail["glob"])
                self._wheel_contains(check, wheels)
                self.progress.done(label, started)
            else:
                if check.detail.get("needs_gpu") and not self.plan.host.gpu.usable:
                    self.progress.skipped(label, f"import {check.detail['module']} not tried: "
                                          f"{self.plan.host.gpu.reason}")
                    continue
                if installed is None:
                    installed = self._install_for_checks(wheels, log)
                self._run_check(check, installed, log, cwd=str(self.work.verify / "site") if wheels
                                else str(self.work.src))
        return verdict

    def _code_objects(self, check: Step, wheels: list[Path], log: Path) -> Verdict:
        from rocbuild.verify.check import verify_paths
        from rocbuild.verify.text import format_verdict

        label = f"verify {check.name}"
        started = self.progress.start(label, f"{', '.join(check.detail['archs'])}; no CUDA libraries")
        result = verify_paths(wheels, check.detail["archs"], f"the build ({check.where})",
                              tuple(check.detail["files"]), tuple(check.detail.get("links", ())))
        with open(log, "a") as fh:
            fh.write(format_verdict(result, quiet_files=False) + "\n")
        if not result.ok:
            raise StepFailed(f"{label}: {result.problems[0]}",
                             hint="\n".join("- " + p for p in result.problems)
                             + f"\nreport: {log}\nthe wheel was not put in the wheelhouse")
        files = sum(1 for i in result.inputs for f in i.files if f.info.bundles)
        self.progress.done(label, started, f"device code in {files} file(s); nothing links CUDA")
        return result

    def _wheel_contains(self, check: Step, wheels: list[Path]) -> None:
        pattern = check.detail["glob"]
        members: list[str] = []
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as zf:
                members += zf.namelist()
        if not any(fnmatch.fnmatch(m, pattern) for m in members):
            sample = "\n".join("  " + m for m in members[:30])
            raise StepFailed(f"verify {check.name!r}: no file in the wheel matches {pattern!r} (recipe {check.where})",
                             hint=f"the wheel holds:\n{sample}\nthe wheel was not put in the wheelhouse")

    def _install_for_checks(self, wheels: list[Path], log: Path) -> dict[str, str]:
        env = dict(self.plan.base_env)
        shutil.rmtree(self.work.verify, ignore_errors=True)
        if not wheels:
            return env
        site = self.work.verify / "site"
        install_wheels(wheels, site, self.plan.host.python.executable)
        with open(log, "a") as fh:
            fh.write(f"installed {', '.join(w.name for w in wheels)} into {site}\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
        env["PATH"] = os.pathsep.join([str(site / "bin"), env.get("PATH", os.environ.get("PATH", ""))])
        return env

    def _run_check(self, check: Step, env: dict[str, str], log: Path, cwd: str) -> None:
        label = f"verify {check.name}"
        started = self.progress.start(label, check.command_line())
        result = self.runner.run(check.argv, cwd=cwd, env={**env, **check.env}, log=log)
        if result.exit_code != 0:
            raise StepFailed(f"{label}: command exited with {result.exit_code} (recipe {check.where})",
                             hint=_tail(log) + f"\nfull log: {log}\nthe wheel was not put in the wheelhouse")
        missing = [p for p in check.detail.get("expect", []) if not re.search(p, result.output, re.MULTILINE)]
        if missing:
            raise StepFailed(
                f"{label}: the output of {check.command_line()} lacks {missing[0]!r} (recipe {check.where})",
                hint=result.output.strip()[-3000:] + f"\nfull log: {log}\nthe wheel was not put in the wheelhouse",
            )
        self.progress.done(label, started)

    def _publish(self, provenance: dict[Path, dict], verdict: Verdict | None, key: str | None = None,
                 from_cache: bool = False) -> list[Path]:
        """Copy verified wheels into the wheelhouse (never visible half-written) and record
        them in its manifest."""
        if not provenance:
            return []
        out = self.plan.out
        out.mkdir(parents=True, exist_ok=True)
        placed, entries = [], {}
        for wheel, record in provenance.items():
            placed.append(copy_atomically(wheel, out / wheel.name))
            entries[wheel.name] = {"sha256": file_sha256(wheel), "size": wheel.stat().st_size,
                                   "provenance": record, "verify": _summary(verdict, wheel),
                                   "build_cache": {"key": key, "hit": from_cache} if key else None}
        update_manifest(out, entries)
        return placed

    # -- helpers ------------------------------------------------------------

    @contextmanager
    def _locked(self, clean: bool) -> Iterator[None]:
        root = self.work.root
        if clean and root.exists():
            self.progress.say(f"--clean: removing {root}")
            shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
        with open(root / ".lock", "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UsageError(f"another rocbuild is building in {root}",
                                 hint="wait for it, or give this build its own --work DIR") from None
            yield

    def _log_path(self, index: int, name: str, fresh: bool = True) -> Path:
        self.work.logs.mkdir(parents=True, exist_ok=True)
        log = self.work.logs / f"{index:02d}-{name}.log"
        if fresh:
            log.write_text("")
        return log

    @staticmethod
    def _stamp_matches(stamp: Path, fp: str) -> bool:
        try:
            return json.loads(stamp.read_text()).get("fingerprint") == fp
        except (OSError, ValueError):
            return False

    @staticmethod
    def _write_stamp(stamp: Path, fp: str, extra: dict) -> None:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(stamp, json.dumps({"fingerprint": fp, **extra}))


def _summary(verdict: Verdict | None, wheel: Path) -> dict | None:
    if verdict is None:
        return None
    for found in verdict.inputs:
        if Path(found.path) == wheel:
            files = [{"path": f.path, "targets": f.targets, "rocm": f.info.rocm}
                     for f in found.files if f.info.bundles or f.info.rocm]
            return {"archs": verdict.archs, "files": files}
    return None


def _source_label(plan: Plan) -> str:
    s = plan.source
    if s.kind == "dir":
        return f"copy {s.directory}"
    return f"{s.url} @ {s.commit or s.ref or 'HEAD'}"


def _tail(log: Path, n: int = TAIL_LINES) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return f"last {min(n, len(lines))} lines of the log:\n" + "\n".join("  | " + line for line in lines[-n:])
