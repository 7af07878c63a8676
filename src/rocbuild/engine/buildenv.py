"""Making the build environment the plan describes (plan/buildenv.py): the venv, its layer over the
target python's site folders, and what it installs. Environments live in the cache, one per set of
inputs, shared by every build that needs the same one; a work folder's buildenv links to its own."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocbuild.engine.workspace import Workspace
from rocbuild.errors import StepFailed
from rocbuild.fsutil import exclusive
from rocbuild.paths import cache_root, short_hash
from rocbuild.plan.buildenv import FROM_TARGET_ONLY, LAYER_FILE, LEGACY_BUILD_REQUIRES, STATE_FILE, BuildEnv, distribution_of
from rocbuild.plan.failure import report_context
from rocbuild.plan.model import Plan
from rocbuild.process.runner import StepRunner
from rocbuild.progress import Progress


def layer(env: BuildEnv, site_answer: str) -> list[str]:
    """Write the .pth that puts the target's site folders (SITE_FOLDERS' answer) after the venv's own;
    `site.addsitedir` also runs the .pth files in them (editable installs, say). Returns the folders."""
    folders: Any = None
    for line in reversed(site_answer.splitlines()):  # stdout's line, wherever stderr put its own
        try:
            folders = json.loads(line)
            break
        except ValueError:
            continue
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
        raise StepFailed(f"build-env: cannot read the site folders of {env.target} (it answered "
                         f"{site_answer.strip()[:200]!r})")
    env.site.mkdir(parents=True, exist_ok=True)
    lines = [f"import site; site.addsitedir({f!r})" for f in folders]
    (env.site / LAYER_FILE).write_text("\n".join(lines) + "\n")
    return folders


def _from_target(requirement: str) -> bool:
    from packaging.requirements import InvalidRequirement, Requirement  # ~30 ms: only when a wheel step runs
    from packaging.utils import canonicalize_name

    try:
        name = Requirement(requirement).name
    except InvalidRequirement:
        return False
    return canonicalize_name(name) in FROM_TARGET_ONLY


def build_system_requires(project: Path) -> list[str]:
    """The project's [build-system] requires (PEP 518), or pip's assumption when it has none."""
    from packaging.requirements import InvalidRequirement, Requirement

    from rocbuild.compat import tomllib

    pyproject = project / "pyproject.toml"
    if not pyproject.is_file():
        return list(LEGACY_BUILD_REQUIRES)
    try:
        data = tomllib.loads(pyproject.read_text(errors="replace"))
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise StepFailed(f"{pyproject}: cannot read it ({exc})") from None
    table = data.get("build-system")
    if not isinstance(table, dict) or "requires" not in table:
        return list(LEGACY_BUILD_REQUIRES)
    requires = table["requires"]
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise StepFailed(f"{pyproject}: build-system.requires is not a list of strings")
    for item in requires:
        try:
            Requirement(item)
        except InvalidRequirement as exc:
            raise StepFailed(f"{pyproject}: build-system.requires {item!r} is not a requirement ({exc})") from None
    return list(requires)


def project_requires(projects: Iterable[Path]) -> list[str]:
    """Every project's build-system.requires and setup.cfg's setup_requires, torch left out."""
    out: list[str] = []
    for project in projects:
        out += [r for r in build_system_requires(project) + setup_requires(project) if not _from_target(r)]
    return list(dict.fromkeys(out))


def setup_requires(project: Path) -> list[str]:
    """setup.cfg's `[options] setup_requires`, which setuptools' get_requires_for_build_wheel hands an isolated
    build and pip leaves out of one without isolation. pyronn-torch's pyscaffold gives its version (setup.py's
    `use_pyscaffold=True`): without it the wheel came out as version 0.0.0."""
    import configparser

    path = project / "setup.cfg"
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(errors="replace") if path.is_file() and _setuptools(project) else "")
    except configparser.Error:
        return []  # setuptools refuses it too, and says so in the build's own log
    found = []
    for line in parser.get("options", "setup_requires", fallback="").splitlines():
        items = [line] if _valid(line) else line.split(";")  # one requirement with a marker, or a list
        found += [item.strip() for item in items if item.strip() and _valid(item)]
    return found


def _setuptools(project: Path) -> bool:
    """Whether setuptools builds the project (no build-backend, or setuptools' own)."""
    from rocbuild.compat import tomllib

    try:
        table = tomllib.loads((project / "pyproject.toml").read_text(errors="replace")).get("build-system", {})
    except (OSError, tomllib.TOMLDecodeError):
        return True  # no pyproject.toml (or one build_system_requires refuses first): pip's legacy setuptools
    backend = table.get("build-backend", "setuptools.build_meta") if isinstance(table, dict) else ""
    return isinstance(backend, str) and backend.startswith("setuptools.build_meta")


def _valid(requirement: str) -> bool:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        Requirement(requirement.strip())
    except InvalidRequirement:
        return False
    return True


def to_install(missing_modules: Iterable[str], requires: Sequence[str]) -> list[str]:
    """What pip installs: the distributions of the modules the layered venv lacks, then the projects'
    build-system.requires (pip leaves those the target already satisfies)."""
    return list(dict.fromkeys([distribution_of(m) for m in missing_modules] + list(requires)))


def is_current(env: BuildEnv, requirements: Sequence[str]) -> bool:
    try:
        state = json.loads((Path(env.folder) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(state, dict) and state.get("requirements") == list(requirements)
            and state.get("target") == env.target and Path(env.python).exists())


def record(env: BuildEnv, requirements: Sequence[str]) -> None:
    (Path(env.folder) / STATE_FILE).write_text(json.dumps({"target": env.target, "requirements": list(requirements)}))


def discard(env: BuildEnv) -> None:
    shutil.rmtree(env.folder, ignore_errors=True)


def _link(place: Path, target: Path) -> None:
    """`place` (the work folder's buildenv) becomes a link to the shared environment; what was there goes."""
    if place.is_symlink() and os.readlink(place) == str(target):
        return
    tmp = place.with_name(f".{place.name}-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    if place.is_dir() and not place.is_symlink():
        shutil.rmtree(place)
    os.replace(tmp, place)


class BuildEnvMaker:
    """Makes the plan's build environment (or finds it current) once per run, before the first wheel step."""

    def __init__(self, plan: Plan, runner: StepRunner, progress: Progress, workspace: Workspace):
        self.plan = plan
        self.runner = runner
        self.progress = progress
        self.workspace = workspace
        self._ready = False  # made or found current in this run

    def ready(self, env: BuildEnv) -> None:
        """The environment lives in the cache, under a key of everything that makes it (the target python,
        the root it is in, what it holds), and is shared: another build with the same key (a new work
        folder, a version bump) reuses it instead of making it again. The work folder links to it."""
        if self._ready:
            return
        requires = project_requires([Path(s.project) for s in self.plan.wheel_steps if s.project])
        state = [*env.modules, *requires]  # what it holds
        label = "build-env"
        started = self.progress.start(label, " ".join(state) or "nothing to install")
        shared = replace(env, folder=str(self._shared_folder(env, state)))
        with exclusive(Path(shared.folder + ".lock"),
                       lambda: self.progress.say("    waiting: another rocbuild is making this build environment")):
            installed = None if is_current(shared, state) else self._make(shared, requires, state)
        _link(Path(env.folder), Path(shared.folder))
        self._ready = True
        if installed is None:
            self.progress.done(label, started, f"up to date ({Path(shared.folder).name})")
        else:
            self.progress.done(label, started, f"installed {' '.join(installed)}" if installed else "nothing missing")

    def _shared_folder(self, env: BuildEnv, state: list[str]) -> Path:
        root = self.plan.host.root
        key = short_hash([os.path.realpath(env.target), env.version, state, root.label if root else None], 16)
        return cache_root() / "buildenvs" / f"py{env.version}-{key}"

    def _make(self, env: BuildEnv, requires: list[str], state: list[str]) -> list[str]:
        log = self.workspace.log_path(0, "build-env")
        discard(env)
        Path(env.folder).parent.mkdir(parents=True, exist_ok=True)
        self._command(env, env.create_argv, log)
        layer(env, self._command(env, env.site_argv, log))
        # The check exits 1 when something is missing: that is its answer, not a failure.
        missing = self._command(env, env.check_argv, log, answers=(0, 1)).split() if env.modules else []
        install = to_install(missing, requires)
        if install:
            self._command(env, env.install_argv(install), log)
        record(env, state)
        return install

    def _command(self, env: BuildEnv, argv: tuple[str, ...], log: Path, answers: tuple[int, ...] = (0,)) -> str:
        result = self.runner.run(argv, cwd=self.plan.work.root, env=self.plan.base_env, log=log)
        if result.exit_code not in answers:
            no_pip = "No module named pip" in result.output
            why = (f"the target python {env.target} has no pip to install with: install its pip (Debian: "
                   "apt-get install python3-pip), or build with --no-build-env" if no_pip else
                   f"{shlex.join(argv[:4])} ... exited with {result.exit_code}")
            from rocbuild.draft.report import diagnose, read_log  # a failure's report only

            report = diagnose(read_log(log), report_context(self.plan))
            raise StepFailed(f"build-env: {why}", hint="\n".join(report.lines(log)) + "\n"
                             "fix the cause and run the same command again: finished steps are kept",
                             report=report, log=log)
        return result.output
