"""Before anything compiles: does this host have what the recipe requires?"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from packaging.specifiers import SpecifierSet

from rocbuild.detect.torch import PythonEnv, parse_probe, rocm_torch_install
from rocbuild.errors import HostNotReady, RocbuildError
from rocbuild.plan.buildenv import distribution_of
from rocbuild.plan.model import Plan
from rocbuild.process.runner import StepRunner, query_process
from rocbuild.roots.apt import apt_commands
from rocbuild.roots.info import RootInfo
from rocbuild.roots.packages import Mapping, listed_packages, map_requirements


def probe_torch(plan: Plan, runner: StepRunner, log: Path) -> PythonEnv | None:
    """The target python's torch, as its torch/version.py says; None when the probe failed."""
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


def check_requirements(plan: Plan, runner: StepRunner, log: Path, torch_env: PythonEnv | None, *,
                       install_missing: bool = False) -> None:
    """Raise HostNotReady listing every missing requirement. `torch_env`: probe_torch's answer.
    Inside a build root, missing tools and CMake packages are named as Debian packages, and
    `install_missing` installs them into the root first."""
    req = plan.requirements
    rocm = plan.host.rocm
    problems: list[str] = []
    if req.rocm:
        if rocm.version is None:
            problems.append(f"cannot tell the ROCm version at {rocm.path} (the recipe needs ROCm {req.rocm})")
        elif not SpecifierSet(req.rocm).contains(str(rocm.version), prereleases=True):
            problems.append(f"ROCm {rocm.version} at {rocm.path} does not satisfy {req.rocm}")
    tools, packages = _missing_tools(plan), _missing_cmake_packages(plan)
    root = plan.host.root
    install_hint = ""
    mapping = None  # inside a root: the Debian packages of what is missing, read from the suite once
    if root is not None and (tools or packages):
        available = root_packages(root)
        mapping = map_requirements(tools, packages, available)
        if install_missing and mapping.packages and root.rootless:
            names = " ".join(sorted(set(mapping.packages.values())))
            raise HostNotReady("--install-missing: a root entered without root privileges cannot change itself",
                               hint=f"install them from outside: rocbuild root install {root.name} {names}\n"
                                    "then run the same command again")
        if install_missing and mapping.packages:
            _install(plan, runner, log, root, sorted(set(mapping.packages.values())))
            tools, packages = _missing_tools(plan), _missing_cmake_packages(plan)
            mapping = map_requirements(tools, packages, available)
        if mapping.packages:
            names = " ".join(sorted(set(mapping.packages.values())))
            install_hint = (f"\ninstall them into the root: rocbuild root install {root.name} {names}\n"
                            "(or run the same command with --install-missing)")
    for tool in tools:
        problems.append(f"tool {tool!r} not found on PATH" + _debian(root, mapping, f"tool {tool!r}"))
    problems += _tool_version_problems(plan, tools)
    for pkg in packages:
        roots = ", ".join(str(r) for r in rocm.cmake_roots) or str(rocm.path)
        problems.append(f"CMake package {pkg!r} not found under {roots}"
                        + _debian(root, mapping, f"CMake package {pkg!r}"))
    if req.python_check_argv:
        result = runner.run(req.python_check_argv, cwd=os.getcwd(), env=plan.base_env, log=log)
        if result.exit_code != 0:
            missing = (result.output.strip().splitlines()[-1:] or ["?"])[0]
            python = plan.host.python.executable
            command = shlex.join([python, "-m", "pip", "install", *(distribution_of(m) for m in missing.split())])
            problems.append(f"python {python} lacks build module(s): {missing}\n  install them: {command}\n"
                            "  (or leave out --no-build-env: rocbuild then installs them into a build environment)")
    if req.torch_check_argv:
        problems += _torch_problems(plan, torch_env, log)
    if problems:
        raise HostNotReady(
            f"this host cannot build {plan.recipe.name} yet:",
            hint="\n".join("- " + p for p in problems) + install_hint
            + "\n(`rocbuild plan` lists every requirement; ROCm packages go under the ROCm prefix)",
        )


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
        elif not SpecifierSet(spec).contains(version, prereleases=True):
            problems.append(f"tool {tool!r} is {version}; the recipe needs {spec} (a newer one: pip install "
                            f"'{tool}{spec}' in a venv on PATH, or the distribution's backports)"
                            if tool == "cmake" else f"tool {tool!r} is {version}; the recipe needs {spec}")
    return problems


def _missing_tools(plan: Plan) -> list[str]:
    path = plan.base_env.get("PATH", plan.host.path)
    return [t for t in plan.requirements.tools if shutil.which(t, path=path) is None]


def _missing_cmake_packages(plan: Plan) -> list[str]:
    return [p for p in plan.requirements.cmake_packages if plan.host.rocm.cmake_package(p) is None]


def root_packages(root: RootInfo) -> set[str] | dict[str, str]:
    """What the root's suite offers: the archive's index (cached), else apt's lists in the root."""
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
        return f" (Debian package {mapping.packages[label]})"
    return f" (no package of Debian {root.suite or 'this root'} is known to provide it)"


def _install(plan: Plan, runner: StepRunner, log: Path, root: RootInfo, packages: list[str]) -> None:
    for argv in apt_commands(packages, root.apt_target):
        result = runner.run(argv, cwd="/", env={"DEBIAN_FRONTEND": "noninteractive"}, log=log)
        if result.exit_code != 0:
            raise HostNotReady(f"--install-missing: {shlex.join(argv)} exited with {result.exit_code}",
                               hint=result.output.strip()[-2000:] + f"\nfull log: {log}")


def _torch_problems(plan: Plan, env: PythonEnv | None, log: Path) -> list[str]:
    """A CUDA or CPU torch in the target python would make a CUDA-linked or CPU-only extension."""
    python = plan.host.python.executable
    install = rocm_torch_install(python, plan.host.rocm.version,
                                 externally_managed=bool(env is not None and env.externally_managed))
    if env is None:
        return [f"cannot read the torch of {python} (see {log})"]
    if env.torch is None:
        return [f"no torch in {python}: this recipe builds against a ROCm torch; install one:\n  {install}"]
    if env.torch.flavour != "rocm":
        return [(f"{env.torch.describe()}: building against it would give an extension that links CUDA "
                 f"(or none at all), not ROCm. Install a ROCm torch:\n  {install}")]
    return []
