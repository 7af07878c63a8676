"""The machine a build is for, found once: GPU targets, ROCm, the target python and its torch, jobs,
ccache, GPU access, the build root it runs in and the environment. The command line finds it and
passes it down; the planner and the engine read this value, never the machine itself."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field

from rocbuild.detect.arch import detect_archs, require_archs
from rocbuild.detect.components import cmake_component_versions
from rocbuild.detect.confine import NOT_CHECKED, Confinement, find_confinement
from rocbuild.detect.gpu import GpuAccess, gpu_access
from rocbuild.detect.jobs import available_memory, choose_jobs, cores
from rocbuild.detect.python import PythonInfo, find_python
from rocbuild.detect.rocm import Rocm, find_rocm, require_rocm
from rocbuild.detect.torch import TorchInfo, probe_python
from rocbuild.roots.info import RootInfo

GPU_NOT_CHECKED = GpuAccess(False, "not checked")


@dataclass(frozen=True)
class Host:
    """Everything about the build target that rendering and building need."""

    archs: tuple[str, ...]  # may be empty: a recipe that compiles device code refuses that (assemble)
    rocm: Rocm
    python: PythonInfo
    jobs: int
    jobs_why: str = ""  # what decided the job count (detect/jobs.py), shown in plan
    override: str | None = None  # HSA_OVERRIDE_GFX_VERSION in effect, recorded with the build
    gpu: GpuAccess = GPU_NOT_CHECKED  # decides whether verify `import:` entries run
    ccache: str | None = None  # ccache's path when it is installed: compilers are launched through it
    torch: TorchInfo | None = None  # the target python's torch, from its torch/version.py (never imported)
    root: RootInfo | None = None  # the build root rocbuild runs in; None on the machine itself
    components: dict[str, str] = field(default_factory=dict)  # ROCm components it can see -> versions
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    confine: Confinement = NOT_CHECKED  # how build steps are confined (detect/confine.py)

    @property
    def path(self) -> str:
        return self.environ.get("PATH", "")


def find_host(*, arch: str | None, rocm: str | None, python: str | None, jobs: int | None,
              environ: Mapping[str, str], root: RootInfo | None, need_archs: bool = True,
              need_torch: bool = True, memory_per_job: int | None = None, memory: int | None = None,
              confine: bool = True) -> Host:
    """`need_archs`: no GPU found and no --arch is an error (HostNotReady) before anything else is
    looked at; a recipe that compiles nothing for a GPU, and a lock, need none. `need_torch`: the
    target python's torch is read (a recipe that never mentions torch does without: one process less)."""
    env = dict(environ)
    detection = detect_archs(arch, environ=env, use_commands=need_archs)  # no GPU tool runs for a build that needs none
    archs = require_archs(detection) if need_archs else detection.archs
    target = find_python(python)
    found_rocm = require_rocm(find_rocm(rocm, env, python=target.executable))
    probed = probe_python(target.executable) if need_torch else "not needed"
    chosen = choose_jobs(asked=jobs, per_job=memory_per_job, available=available_memory(), budget=memory, cpus=cores())
    host = Host(
        archs=tuple(archs), rocm=found_rocm, python=target, jobs=chosen.count, jobs_why=chosen.why,
        override=detection.override.value if detection.override else None, gpu=gpu_access(),
        ccache=shutil.which("ccache") if env.get("ROCBUILD_CCACHE", "1") != "0" else None,
        torch=None if isinstance(probed, str) else probed.torch, root=root, environ=env,
        components=dict(root.components) if root is not None else cmake_component_versions(found_rocm),
        confine=find_confinement(asked=confine, root=root, environ=env),
    )
    return host
