"""What `build`, `plan`, `prepare` and `lock` are asked for, as one typed value made by the command line."""

from __future__ import annotations

from dataclasses import dataclass, field

from rocbuild.roots.info import RootInfo


@dataclass(frozen=True)
class BuildRequest:
    """What `build`, `plan`, `prepare` and `lock` were asked for, as typed values."""

    recipe: str  # a name or a path
    arch: str | None = None
    rocm: str | None = None
    python: str | None = None
    out: str = "wheelhouse"
    work: str | None = None
    jobs: int | None = None
    memory: int | None = None  # --memory: bytes the build may assume available at most (for its job count)
    ref: str | None = None
    source_dir: str | None = None
    settings: tuple[str, ...] = ()  # --set NAME=VALUE
    recipe_dirs: tuple[str, ...] = ()  # --recipes
    local_version: str | None = None
    need_archs: bool = True  # `lock` pins no targets
    build_env: bool = True  # wheel steps in a build environment over the target python (--no-build-env: False)
    refuse: bool = True  # `unsupported:` entries refuse now; `recipes check` reads sources and patches only
    environ: dict[str, str] = field(default_factory=dict)  # the environment rocbuild was started with
    root: RootInfo | None = None  # the build root rocbuild runs in
    confine: bool = True  # build steps run confined where bubblewrap can (--no-confine: False)
    torch_index: str | None = None  # --torch-index: where --install-missing gets a ROCm torch (PyTorch's index if None)
