"""Before anything compiles: does this host have what the recipe requires?"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from packaging.specifiers import SpecifierSet

from rocbuild.detect.torch import PythonEnv, parse_probe, rocm_torch_install
from rocbuild.errors import HostNotReady
from rocbuild.plan import Plan
from rocbuild.proc import StepRunner


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


def check_requirements(plan: Plan, runner: StepRunner, log: Path, torch_env: PythonEnv | None) -> None:
    """Raise HostNotReady listing every missing requirement. `torch_env`: probe_torch's answer."""
    req = plan.requirements
    rocm = plan.host.rocm
    problems: list[str] = []
    if req.rocm:
        if rocm.version is None:
            problems.append(f"cannot tell the ROCm version at {rocm.path} (the recipe needs ROCm {req.rocm})")
        elif not SpecifierSet(req.rocm).contains(str(rocm.version), prereleases=True):
            problems.append(f"ROCm {rocm.version} at {rocm.path} does not satisfy {req.rocm}")
    for tool in req.tools:
        if shutil.which(tool, path=plan.base_env.get("PATH", os.environ.get("PATH"))) is None:
            problems.append(f"tool {tool!r} not found on PATH")
    for pkg in (p for p in req.cmake_packages if rocm.cmake_package(p) is None):
        roots = ", ".join(str(r) for r in rocm.cmake_roots) or str(rocm.path)
        problems.append(f"CMake package {pkg!r} not found under {roots}")
    if req.python_check_argv:
        result = runner.run(req.python_check_argv, cwd=os.getcwd(), env=plan.base_env, log=log)
        if result.exit_code != 0:
            missing = result.output.strip().splitlines()[-1:] or ["?"]
            problems.append(f"python {plan.host.python.executable} lacks build module(s): {missing[0]}")
    if req.torch_check_argv:
        problems += _torch_problems(plan, torch_env, log)
    if problems:
        raise HostNotReady(
            f"this host cannot build {plan.recipe.name} yet:",
            hint="\n".join("- " + p for p in problems)
            + "\n(`rocbuild plan` lists every requirement; ROCm packages go under the ROCm prefix)",
        )


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
