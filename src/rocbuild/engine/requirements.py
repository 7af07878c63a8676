"""Before anything compiles: does this host have what the recipe requires?"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocbuild.detect.rocm import OpenMp
from rocbuild.detect.torch import PythonEnv, TorchInfo, parse_probe, torch_install_argv, venv_advice
from rocbuild.errors import HostNotReady, RocbuildError
from rocbuild.plan.buildenv import distribution_of
from rocbuild.plan.model import Plan
from rocbuild.process.runner import StepRunner, query_process
from rocbuild.progress import Progress
from rocbuild.roots.info import RootInfo

if TYPE_CHECKING:  # the Debian side is imported when a build root needs it: builds on the host never do
    from rocbuild.roots.packages import Mapping, Wanted


def probe_torch(plan: Plan, runner: StepRunner, log: Path, *, install: bool = False,
                progress: Progress | None = None) -> PythonEnv | None:
    """The target python's torch, as its torch/version.py says; None when the probe failed. `install`
    (--install-missing): a recipe that requires a ROCm torch gets one first, when the target has none;
    before anything is fetched, and before the build identity records the torch."""
    env = _probe(plan, runner, log)
    if install and env is not None and _lacks_rocm_torch(plan, env):
        _install_torch(plan, runner, log, env, progress or Progress(quiet=True))
        env = _probe(plan, runner, log)
        _check_installed(plan, env, log)
    return env


def install_missing_torch(plan: Plan, runner: StepRunner, log: Path, progress: Progress) -> bool:
    """--install-missing before a build is planned again: True when a ROCm torch was installed into the
    target python (the plan was made with the torch that was there before: templates, label, checks)."""
    env = _probe(plan, runner, log)
    if env is None or not _lacks_rocm_torch(plan, env):
        return False
    _install_torch(plan, runner, log, env, progress)
    _check_installed(plan, _probe(plan, runner, log), log)
    return True


def _probe(plan: Plan, runner: StepRunner, log: Path) -> PythonEnv | None:
    argv = plan.requirements.torch_check_argv
    if argv is None:
        return None
    # cwd "/": `-c` puts the working folder on sys.path, where a ./torch would shadow the real one.
    result = runner.run(argv, cwd="/", env=plan.base_env, log=log)
    if result.exit_code != 0:
        return None
    try:
        return parse_probe(result.output)
    except (ValueError, KeyError):
        return None


@dataclass(frozen=True)
class Missing:
    """What the host lacks of the recipe's requirements that a package manager can provide."""

    tools: tuple[str, ...] = ()
    cmake_packages: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    openmp: OpenMp | None = None

    def __bool__(self) -> bool:
        return bool(self.tools or self.cmake_packages or self.headers or self.libraries or self.openmp)

    def wanted(self, amd: bool = False) -> Wanted:
        """`amd`: the ROCm is AMD's own tree (/opt/rocm), whose repository names packages otherwise."""
        from rocbuild.roots.packages import Wanted

        return Wanted.of(self.tools, self.cmake_packages, self.headers, self.libraries,
                         self.openmp.package if self.openmp else None, amd)


def missing_of(plan: Plan) -> Missing:
    req, rocm = plan.requirements, plan.host.rocm
    path = plan.base_env.get("PATH", plan.host.path)
    return Missing(
        tools=tuple(t for t in req.tools if shutil.which(t, path=path) is None),
        cmake_packages=tuple(p for p in req.cmake_packages if rocm.cmake_package(p) is None),
        headers=tuple(h for h in req.headers if not rocm.finds_header(h)),
        libraries=tuple(n for n in req.libraries if rocm.library(n) is None),
        openmp=req.openmp if req.openmp is not None and not req.openmp.found() else None,
    )


def check_requirements(plan: Plan, runner: StepRunner, log: Path, torch_env: PythonEnv | None, *,
                       install_missing: bool = False) -> None:
    """Raise HostNotReady listing every missing requirement. `torch_env`: probe_torch's answer.
    Inside a build root, what is missing is named as Debian packages, and `install_missing` installs
    them into the root first."""
    req = plan.requirements
    problems = _rocm_problems(plan)
    missing = missing_of(plan)
    root = plan.host.root
    install_hint = ""
    mapping = None  # inside a root: the Debian packages of what is missing, read from the suite once
    if root is not None and missing:
        missing, mapping, install_hint = _in_root(plan, runner, log, root, missing, install_missing)
    problems += _missing_problems(plan, missing, root, mapping)
    problems += _tool_version_problems(plan, list(missing.tools))
    if req.python_check_argv:
        result = runner.run(req.python_check_argv, cwd=os.getcwd(), env=plan.base_env, log=log)
        if result.exit_code != 0:
            lacking = (result.output.strip().splitlines()[-1:] or ["?"])[0]
            python = plan.host.python.executable
            command = shlex.join([python, "-m", "pip", "install", *(distribution_of(m) for m in lacking.split())])
            problems.append(f"python {python} lacks build module(s): {lacking}\n  install them: {command}\n"
                            "  (or leave out --no-build-env: rocbuild then installs them into a build environment)")
    if req.torch_check_argv:
        problems += _torch_problems(plan, torch_env, log)
    if problems:
        raise HostNotReady(
            f"this host cannot build {plan.recipe.name} yet:",
            hint="\n".join("- " + p for p in problems) + install_hint
            + "\n(`rocbuild plan` lists every requirement; ROCm packages go under the ROCm prefix)",
        )


def _rocm_problems(plan: Plan) -> list[str]:
    wanted, rocm = plan.requirements.rocm, plan.host.rocm
    if not wanted:
        return []
    if rocm.version is None:
        return [f"cannot tell the ROCm version at {rocm.path} (the recipe needs ROCm {wanted})"]
    if not _satisfies(wanted, str(rocm.version)):
        return [f"ROCm {rocm.version} at {rocm.path} does not satisfy {wanted}"]
    return []


def _in_root(plan: Plan, runner: StepRunner, log: Path, root: RootInfo, missing: Missing,
             install_missing: bool) -> tuple[Missing, Mapping, str]:
    """Inside a root: what is missing as the packages its apt offers, installed first with --install-missing.
    An image root's indexes are read after `apt-get update` (images ship without them)."""
    from rocbuild.roots.packages import map_requirements

    amd = plan.host.rocm.amd_tree
    updated = install_missing and root.image is not None and not root.rootless
    if updated:
        _apt_update(runner, log)
    available = root_packages(root)
    mapping = map_requirements(missing.wanted(amd), available)
    if install_missing and mapping.packages and root.rootless:
        names = " ".join(sorted(set(mapping.packages.values())))
        raise HostNotReady("--install-missing: a root entered without root privileges cannot change itself",
                           hint=f"install them from outside: rocbuild root install {root.name} {names}\n"
                                "then run the same command again")
    if install_missing and mapping.packages:
        _install(plan, runner, log, root, sorted(set(mapping.packages.values())), updated)
        missing = missing_of(plan)
        mapping = map_requirements(missing.wanted(amd), available)
    hint = ""
    if mapping.packages:
        names = " ".join(sorted(set(mapping.packages.values())))
        hint = (f"\ninstall them into the root: rocbuild root install {root.name} {names}\n"
                "(or run the same command with --install-missing)")
    return missing, mapping, hint


def _missing_problems(plan: Plan, missing: Missing, root: RootInfo | None, mapping: Mapping | None) -> list[str]:
    rocm = plan.host.rocm
    problems = [f"tool {tool!r} not found on PATH" + _debian(root, mapping, f"tool {tool!r}") for tool in missing.tools]
    roots = ", ".join(str(r) for r in rocm.cmake_roots) or str(rocm.path)
    problems += [f"CMake package {pkg!r} not found under {roots}" + _debian(root, mapping, f"CMake package {pkg!r}")
                 for pkg in missing.cmake_packages]
    looked = ", ".join(str(d) for d in rocm.header_dirs()) or str(rocm.path)
    problems += [f"header {h!r} not found in {looked}" + _debian(root, mapping, f"header {h!r}") for h in missing.headers]
    folders = ", ".join(str(d) for d in rocm.lib_dirs) or str(rocm.path)
    problems += [f"library lib{n}.so not found in {folders}" + _debian(root, mapping, f"library {n!r}")
                 for n in missing.libraries]
    if missing.openmp is not None:
        omp = missing.openmp
        on_host = (f"; install it: apt-get install {omp.package}" if omp.package else
                   "; install the OpenMP runtime of that LLVM (ROCm's: its openmp-extras package)")
        problems.append(f"OpenMP for the HIP compiler {omp.compiler}: no {omp.header_glob}"
                        + (_debian(root, mapping, "OpenMP for the HIP compiler") if root else on_host))
    return problems


def tool_version(tool: str, path: str | None) -> str | None:
    """The first X.Y[.Z] that `TOOL --version` prints, or None."""
    found = shutil.which(tool, path=path)
    answer = query_process([found, "--version"], timeout=30) if found else None
    if answer is None or isinstance(answer, str):
        return None
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", answer.stdout + answer.stderr)
    return m.group(1) if m else None


def _tool_version_problems(plan: Plan, missing: list[str]) -> list[str]:
    path = plan.base_env.get("PATH", plan.host.path)
    problems = []
    for tool, spec in plan.requirements.tool_versions.items():
        if tool in missing:
            continue
        version = tool_version(tool, path)
        if version is None:
            problems.append(f"tool {tool!r}: cannot read its version (`{tool} --version`); the recipe needs {spec}")
        elif not _satisfies(spec, version):
            problems.append(f"tool {tool!r} is {version}; the recipe needs {spec} (a newer one: pip install "
                            f"'{tool}{spec}' in a venv on PATH, or the distribution's backports)"
                            if tool == "cmake" else f"tool {tool!r} is {version}; the recipe needs {spec}")
    return problems


def _satisfies(spec: str, version: str) -> bool:
    from packaging.specifiers import SpecifierSet  # read when a recipe pins a version, not on every build

    return SpecifierSet(spec).contains(version, prereleases=True)


def root_packages(root: RootInfo) -> set[str] | dict[str, str]:
    """What the root's suite offers: the archive's index (cached), else apt's lists in the root."""
    from rocbuild.roots.packages import listed_packages

    mirror, suite = root.mirror, root.suite
    if mirror is not None and suite is not None:
        from rocbuild.roots.archive import Archive

        try:
            return Archive(mirror).suite(suite).packages
        except RocbuildError:
            pass
    return listed_packages()


def _debian(root: RootInfo | None, mapping: Mapping | None, label: str) -> str:
    if root is None or mapping is None:
        return ""
    if label in mapping.packages:
        return f" ({root.packages_of} package {mapping.packages[label]})"
    later = "; an image's apt indexes are read after `apt-get update`: try --install-missing" if root.image else ""
    return f" (no package of {root.origin} is known to provide it{later})"


def _apt_update(runner: StepRunner, log: Path) -> None:
    from rocbuild.roots.apt import apt_commands

    update = apt_commands([], None)[0]
    if shutil.which(update[0]) is None:
        raise HostNotReady("--install-missing: this image root has no apt-get",
                           hint="install what is missing with the image's own package manager (rocbuild root run "
                                "NAME -- ...), or make the root from an image that has apt")
    _apt_run(runner, log, [update])


def _install(plan: Plan, runner: StepRunner, log: Path, root: RootInfo, packages: list[str], updated: bool) -> None:
    """`updated`: apt's indexes were just read (an image root's), so `apt-get update` is not run again."""
    from rocbuild.roots.apt import apt_commands

    _apt_run(runner, log, apt_commands(packages, root.apt_target)[1 if updated else 0:])


def _apt_run(runner: StepRunner, log: Path, commands: list[list[str]]) -> None:
    """Each apt command in turn; the first that fails stops the build, its output's tail in the message."""
    for argv in commands:
        result = runner.run(argv, cwd="/", env={"DEBIAN_FRONTEND": "noninteractive"}, log=log)
        if result.exit_code != 0:
            raise HostNotReady(f"--install-missing: {shlex.join(argv)} exited with {result.exit_code}",
                               hint=result.output.strip()[-2000:] + f"\nfull log: {log}")


def _lacks_rocm_torch(plan: Plan, env: PythonEnv) -> bool:
    return plan.requirements.torch == "rocm" and (env.torch is None or env.torch.flavour != "rocm")


def _install_torch(plan: Plan, runner: StepRunner, log: Path, env: PythonEnv, progress: Progress) -> None:
    """pip installs torch from the plan's index into the target python, which the build environment is
    layered on. Refused, before anything runs, for a system Python (PEP 668) and where there is no index."""
    req, python = plan.requirements, plan.host.python.executable
    if req.torch_index is None:
        raise HostNotReady(f"--install-missing: no ROCm torch to install into {python}",
                           hint=req.torch_index_problem or "no index known")
    if env.externally_managed:
        raise HostNotReady(f"--install-missing: {python} is managed by the system (PEP 668); rocbuild installs "
                           "torch only into a virtual environment", hint=venv_advice(python, req.torch_index))
    argv = torch_install_argv(python, req.torch_index, replace=env.torch is not None)
    had = f"replacing torch {env.torch.version or '?'} ({env.torch.flavour})" if env.torch else "none there"
    started = progress.start("install-torch", f"a ROCm torch into {python} from {req.torch_index} ({had})")
    result = runner.run(argv, cwd="/", env={}, log=log)  # cwd "/": as the probe, no ./torch in the way
    if result.exit_code != 0:
        raise HostNotReady(f"--install-missing: {shlex.join(argv)} exited with {result.exit_code}",
                           hint=result.output.strip()[-2000:] + f"\nfull log: {log}")
    progress.done("install-torch", started, "installed")


def _check_installed(plan: Plan, env: PythonEnv | None, log: Path) -> None:
    """pip takes the highest version any index it knows offers: an extra index or find-links of its
    configuration can win with a CUDA or CPU torch."""
    torch: TorchInfo | None = env.torch if env is not None else None
    if torch is not None and torch.flavour == "rocm":
        return
    got = torch.describe() if torch is not None else f"no torch can be read there (see {log})"
    raise HostNotReady(f"--install-missing: after pip installed torch from {plan.requirements.torch_index}, {got}",
                       hint="pip picks the highest version of every index it is configured with: see `pip config "
                            "list` (extra-index-url, find-links) and PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS")


def _torch_problems(plan: Plan, env: PythonEnv | None, log: Path) -> list[str]:
    """A CUDA or CPU torch in the target python would make a CUDA-linked or CPU-only extension."""
    python = plan.host.python.executable
    if env is None:
        return [f"cannot read the torch of {python} (see {log})"]
    if env.torch is None:
        return [f"no torch in {python}: this recipe builds against a ROCm torch; install one:\n  "
                + _torch_fix(plan, env)]
    if env.torch.flavour != "rocm":
        return [(f"{env.torch.describe()}: building against it would give an extension that links CUDA "
                 f"(or none at all), not ROCm. Install a ROCm torch:\n  {_torch_fix(plan, env)}")]
    return _release_problems(plan, env.torch)


def _release_problems(plan: Plan, torch: TorchInfo) -> list[str]:
    """torch never compares its own HIP release with the toolchain's for ROCm (cpp_extension compiles
    with whatever hipcc it finds): an extension built with ROCm 7 against a torch for ROCm 6 links
    libamdhip64.so.7 beside torch's libamdhip64.so.6 and cannot load. Another minor of the same major
    loads, so only the major is refused."""
    built_for, toolchain = torch.rocm_version, plan.host.rocm.version
    if built_for is None or toolchain is None or int(built_for.split(".")[0]) == toolchain.major:
        return []
    return [f"{torch.describe()}: it was built for ROCm {built_for}, but this toolchain is ROCm "
            f"{toolchain.major}.{toolchain.minor}: the extension would link ROCm {toolchain.major}'s HIP runtime "
            f"beside torch's ROCm {built_for.split('.')[0]} one and load nowhere. Build with a ROCm "
            f"{built_for.split('.')[0]} toolchain (--rocm PATH, --root), or install torch for ROCm "
            f"{toolchain.major}.{toolchain.minor}:\n  {_torch_fix(plan, PythonEnv(plan.host.python.executable, ''))}"]


def _torch_fix(plan: Plan, env: PythonEnv) -> str:
    """The command --install-missing would run, or why it cannot."""
    req, python = plan.requirements, plan.host.python.executable
    if req.torch_index is None:
        return req.torch_index_problem or "no index known"
    if env.externally_managed:
        return venv_advice(python, req.torch_index)
    argv = torch_install_argv(python, req.torch_index, replace=env.torch is not None)
    return f"{shlex.join(argv)}\n  (or run the same command with --install-missing)"
