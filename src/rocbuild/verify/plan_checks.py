"""Verify phase: the plan's checks against the finished wheels, before any reaches the wheelhouse."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from rocbuild.compat import assert_never
from rocbuild.errors import StepFailed
from rocbuild.plan.failure import report_context
from rocbuild.plan.model import CodeObjectsCheck, CommandCheck, ImportCheck, Plan, WheelContainsCheck
from rocbuild.process.runner import StepRunner
from rocbuild.progress import Progress
from rocbuild.source.spec import SdistSource
from rocbuild.verify.finding import BUILD_ONLY_NOTE
from rocbuild.verify.install import install_wheels

if TYPE_CHECKING:  # the ELF readers cost ~20 ms to import; a build without wheels never needs them
    from rocbuild.verify.findings import InputFindings
    from rocbuild.verify.verdict import Verdict

KEPT_OUT = "the wheel was not put in the wheelhouse"


def import_readers_meanwhile() -> None:
    """verify's readers (pyelftools and rocbuild's own, ~30 ms) imported in a thread while the last
    step runs (a compiler or pip, waited for), so that verify starts at once when it ends."""
    threading.Thread(target=_import_readers, name="rocbuild-import-verify").start()


def _import_readers() -> None:
    try:
        import rocbuild.verify.text  # noqa: F401  (it imports the readers)
        import rocbuild.verify.verdict  # noqa: F401
    except Exception:  # verify itself imports them again and says what is wrong
        pass


def versioned(wheel: Path, version: str, *, exact: bool = False) -> None:
    """A wheel of version 0.0.0 from a recipe of another: setup.py found no version (setuptools' default), most
    often a setuptools_scm or pyscaffold the build lacked, or one that read no git metadata. With `exact` (a
    recipe built from an sdist, whose version is the release's), any other version too: a setup.py that dates
    its version unless told it is a release (torch-encoding's RELEASE). Checked before any other, on a cached
    build's wheels too."""
    from packaging.version import InvalidVersion, Version

    built = wheel.name.split("-")[1] if wheel.name.count("-") >= 4 else ""
    try:  # the wheel's public version: rocbuild's local label (+rocm7.2) is its own
        public, wanted = Version(Version(built).public), Version(version)
    except InvalidVersion:
        return  # a name pip did not write, or a recipe version verify's own checks refuse
    if public == wanted or (public != Version("0.0.0") and not exact):
        return
    if public == Version("0.0.0"):
        raise StepFailed(f"{wheel.name}: the wheel's version is 0.0.0, where the recipe builds {version}: setup.py "
                         "found no version (a setuptools_scm or pyscaffold the build environment lacks, or one "
                         "that reads a version only from git)",
                         hint="give the build what setup.py takes its version from (requires.python), or set it "
                              "(SETUPTOOLS_SCM_PRETEND_VERSION for setuptools_scm)")
    raise StepFailed(f"{wheel.name}: the wheel's version is {public}, where the recipe builds {version} from its "
                     "sdist: setup.py changed the release's version (a date or a git hash added, unless a variable "
                     "says it is a release)",
                     hint="set what setup.py reads before it adds to its version (`rocbuild recipes traps` lists "
                          "the known ones)")


class Checker:
    def __init__(self, plan: Plan, runner: StepRunner, progress: Progress, log: Path):
        self.plan = plan
        self.runner = runner
        self.progress = progress
        self.log = log
        self.inspected: dict[Path, InputFindings] = {}  # each wheel is read once, however many checks judge it

    def run(self, wheels: list[Path]) -> Verdict | None:
        """Every check in order; the first failure raises. Returns the built-in check's findings."""
        for wheel in wheels:
            versioned(wheel, self.plan.recipe.version, exact=isinstance(self.plan.source, SdistSource))
        verdict = None
        installed: dict[str, str] | None = None
        for check in self.plan.verify:
            label = f"verify {check.name}"
            match check:
                case CodeObjectsCheck():
                    result = self._code_objects(check, wheels)
                    if check.built_in:  # its findings go into the manifest
                        verdict = result
                case WheelContainsCheck():
                    started = self.progress.start(label, check.glob)
                    _wheel_contains(check, wheels)
                    self.progress.done(label, started)
                case ImportCheck():
                    if self._build_only(label):  # the first reason: with a GPU it would not load either
                        continue
                    if not self.plan.host.gpu.usable:
                        self.progress.skipped(label, f"import {check.module} not tried: {self.plan.host.gpu.reason}")
                        continue
                    if installed is None:
                        installed = self._install(wheels)
                    self._run_command(check, installed, wheels)
                case CommandCheck():
                    if self._build_only(label):
                        continue
                    if installed is None:
                        installed = self._install(wheels)
                    self._run_command(check, installed, wheels)
                case _:
                    assert_never(check)
        return verdict

    def _build_only(self, label: str) -> bool:
        """Against a build-only torch the wheels' modules cannot load (its libraries hold no code): the
        checks that run them are skipped, saying so, and the rest still judge the wheels."""
        torch = self.plan.host.torch
        if torch is None or not torch.build_only:
            return False
        self.progress.skipped(label, f"{BUILD_ONLY_NOTE}: import not tried")
        return True

    def _code_objects(self, check: CodeObjectsCheck, wheels: list[Path]) -> Verdict:
        from rocbuild.verify.text import format_verdict
        from rocbuild.verify.verdict import verify_paths

        label = f"verify {check.name}"
        started = self.progress.start(label, f"{', '.join(check.archs) or 'no archs'}; no CUDA libraries; "
                                             "one ROCm major")
        version = self.plan.host.rocm.version
        result = verify_paths(wheels, list(check.archs), f"the build ({check.where})", check.files, check.links,
                              rocm_major=version.major if version is not None and check.built_in else None,
                              inspected=self.inspected)
        with open(self.log, "a") as fh:
            fh.write(format_verdict(result, quiet_files=False) + "\n")
        if not result.ok:
            codes = [(str(x.code), f"{Path(where).name}: {x.message}") for i in result.inputs
                     for where, x in i.all_findings() if x.problem]
            from rocbuild.draft.report import cpu_path_said, diagnose_findings, trap_lines  # a failure's report only

            hits = diagnose_findings(codes, report_context(self.plan))
            said = cpu_path_said(codes, sorted(p for p in self.log.parent.glob("*.log") if p != self.log))
            raise StepFailed(f"{label}: {result.problems[0]}",
                             hint="\n".join(["- " + p for p in result.problems] + said + trap_lines(hits))
                             + f"\nreport: {self.log}\n{KEPT_OUT}", report=hits, log=self.log)
        files = sum(1 for i in result.inputs for f in i.files if f.info.bundles)
        self.progress.done(label, started, f"device code in {files} file(s); nothing links CUDA")
        return result

    def _install(self, wheels: list[Path]) -> dict[str, str]:
        env = dict(self.plan.base_env)
        verify_dir = self.plan.work.verify
        shutil.rmtree(verify_dir, ignore_errors=True)
        if not wheels:
            return env
        site = verify_dir / "site"
        install_wheels(wheels, site, self.plan.host.python.executable)
        with open(self.log, "a") as fh:
            fh.write(f"installed {', '.join(w.name for w in wheels)} into {site}\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), self.plan.host.environ.get("PYTHONPATH")]))
        env["PATH"] = os.pathsep.join([str(site / "bin"), env.get("PATH", self.plan.host.path)])
        return env

    def _run_command(self, check: CommandCheck | ImportCheck, env: dict[str, str], wheels: list[Path]) -> None:
        label = f"verify {check.name}"
        shown = " ".join(check.argv)
        started = self.progress.start(label, shown)
        cwd = str(self.plan.work.verify / "site") if wheels else str(self.plan.work.src)
        result = self.runner.run(check.argv, cwd=cwd, env={**env, **check.env}, log=self.log)
        lacking = missing_dependency(check, result.output) if result.exit_code != 0 else None
        if lacking is not None:
            self.progress.skipped(label, f"it needs {lacking}, which the target python "
                                         f"{self.plan.host.python.executable} lacks")
            return
        if result.exit_code != 0:
            from rocbuild.draft.report import diagnose  # a failure's report only

            report = diagnose(result.output, report_context(self.plan))
            raise StepFailed(f"{label}: command exited with {result.exit_code} (recipe {check.where})",
                             hint="\n".join(report.lines(self.log)) + f"\n{KEPT_OUT}", report=report, log=self.log)
        expect = check.expect if isinstance(check, CommandCheck) else ()
        missing = [p for p in expect if not re.search(p, result.output, re.MULTILINE)]
        if missing:
            raise StepFailed(
                f"{label}: the output of {shown} lacks {missing[0]!r} (recipe {check.where})",
                hint=result.output.strip()[-3000:] + f"\nfull log: {self.log}\n{KEPT_OUT}",
            )
        self.progress.done(label, started)


NO_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def missing_dependency(check: CommandCheck | ImportCheck, output: str) -> str | None:
    """For an `import:` check that failed because the target python lacks another module the
    package imports (bitsandbytes imports torch): that module. The package's own modules missing
    is a real failure."""
    if not isinstance(check, ImportCheck):
        return None
    found = NO_MODULE.findall(output)
    if not found:
        return None
    top = found[-1].split(".")[0]
    return None if top == check.module.split(".")[0] else top


def _wheel_contains(check: WheelContainsCheck, wheels: list[Path]) -> None:
    members: list[str] = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            members += zf.namelist()
    if not any(fnmatch.fnmatch(m, check.glob) for m in members):
        sample = "\n".join("  " + m for m in members[:30])
        raise StepFailed(f"verify {check.name!r}: no file in the wheel matches {check.glob!r} (recipe {check.where})",
                         hint=f"the wheel holds:\n{sample}\n{KEPT_OUT}")

