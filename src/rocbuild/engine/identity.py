"""The build identity: one value holding everything that can change what a build produces.

Computed once per build, after the source is resolved and the toolchain and
target python are probed. Everything that decides reuse derives from it:
- the prepared tree and its build folder are reused only while `tree_digest()`
  is unchanged (a toolchain, environment or source change starts afresh, CMake
  caches included); step stamps chain from that digest;
- the build cache key is `key()`, the hash of the whole value;
- provenance records `to_json()`; lock files record `pinned()`.
A new input is one new field here, and every one of those follows.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from rocbuild import __version__
from rocbuild.compat import assert_never
from rocbuild.detect.rocm import Rocm
from rocbuild.detect.torch import TorchInfo
from rocbuild.fsutil import json_sha256
from rocbuild.plan.model import DiffPatch, Plan, patch_record
from rocbuild.source.spec import DirSource, GitSource, SdistSource

SCHEMA = 6  # 3: the ROCm components' versions; 4: torch-extension wheels pin their torch; 5: confined steps;
# 6: rocbuild's build rules
# rocbuild's own modules that shape a wheel beyond what the other fields render: how the wheel steps' build
# environment is made (setup.cfg's setup_requires joined it once, and a cached 0.0.0 wheel made without it came
# back), relabeling, provenance and RUNPATHs. rocbuild's version moves too seldom to say so. (The extension
# shim counts already: its folder, in the steps' env, is named by its digest.)
RULE_MODULES = ("engine/buildenv.py", "engine/relabel.py", "engine/publish.py", "engine/runpath.py",
                "plan/buildenv.py")
PACKAGE = Path(__file__).resolve().parent.parent
# Fields that do not touch the prepared tree or the build folder: a change to them re-runs the steps
# that changed (steps), re-verifies (checks) or relabels (local_label); the recipe's text counts
# through what it renders to (env, patches, steps), so editing a comment rebuilds nothing.
NOT_TREE = frozenset({"steps", "checks", "local_label", "recipe"})
# Variables of the caller's environment that reach a compiler or build backend and change its output.
HOST_ENV_NAMES = frozenset({
    "CC", "CXX", "CPP", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "HIPFLAGS", "HIPCC", "NVCC",
    "PYTHONPATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "SETUPTOOLS_SCM_PRETEND_VERSION", "MAKEFLAGS",
})
HOST_ENV_PREFIXES = ("HIP_", "HIPCC_", "ROCM_", "HSA_", "HCC_", "AMDGPU_", "PYTORCH_", "TORCH_", "CMAKE_",
                     "SKBUILD_", "BNB_", "HOROVOD_", "MAMBA_", "CAUSAL_CONV1D_", "LLVM_", "DEVICE_LIB")
# Launchers and parallelism say how fast, not what.
HOST_ENV_IGNORED = frozenset({"CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER",
                              "CMAKE_HIP_COMPILER_LAUNCHER", "CMAKE_BUILD_PARALLEL_LEVEL"})


def rules_digest(files: Iterable[Path]) -> str:
    """A digest of the texts of `files`, each with its name: a rule moved between them counts as a change."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.parent.name}/{path.name}".encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@cache
def current_rules() -> str:
    """The digest of RULE_MODULES as installed: read once, when the first identity is made."""
    return rules_digest(PACKAGE / module for module in RULE_MODULES)


def host_build_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of the caller's environment that reaches the steps' compilers and changes their output."""
    return {k: v for k, v in sorted(environ.items())
            if k not in HOST_ENV_IGNORED and (k in HOST_ENV_NAMES or k.startswith(HOST_ENV_PREFIXES))}


@dataclass(frozen=True)
class Toolchain:
    """The ROCm a build compiles against, down to the compiler binaries and the HIP runtime library."""

    rocm_path: str
    rocm_version: str | None
    layout: str
    hipcc: str | None  # resolved path
    hipcc_version: str | None  # `hipcc --version`
    hip_compiler: str | None  # the clang++ hipcc drives (resolved path)
    hip_compiler_version: str | None  # its `--version`
    hip_runtime: str | None  # libamdhip64.so resolved to the file it names (its soname major decides links)
    root: str | None = None  # the build root it lives in: its suite and the id of its package versions

    def describe(self) -> str:
        where = f" in a {self.root}" if self.root else ""
        return f"ROCm {self.rocm_version or '?'} at {self.rocm_path}{where} (clang {self.hip_compiler or '?'})"


# Probes a tool's version: argv -> its output, or None. Injected so identities can be made without processes.
VersionQuery = Callable[[list[str]], str | None]


def toolchain_of(rocm: Rocm, query: VersionQuery, root: str | None = None) -> Toolchain:
    """`root`: the label of the build root the toolchain lives in (RootInfo.label)."""
    def version(tool: Path | None) -> str | None:
        out = query([str(tool), "--version"]) if tool is not None else None
        return _normalise_version(out) if out else None

    return Toolchain(
        rocm_path=str(rocm.path),
        rocm_version=str(rocm.version) if rocm.version else None,
        layout=rocm.layout,
        hipcc=_real(rocm.hipcc),
        hipcc_version=version(rocm.hipcc),
        hip_compiler=_real(rocm.hip_compiler),
        hip_compiler_version=version(rocm.hip_compiler),
        hip_runtime=_hip_runtime(rocm.path),
        root=root,
    )


def _real(path: Path | None) -> str | None:
    return os.path.realpath(path) if path is not None else None


def _normalise_version(text: str) -> str:
    # hipcc prints its own install folder and the clang it found; keep the lines that name versions.
    lines = [line.strip() for line in text.splitlines() if re.search(r"\d+\.\d+", line)]
    return "\n".join(lines[:4])


def _hip_runtime(prefix: Path) -> str | None:
    dirs = [prefix / "lib", prefix / "lib64"]
    if (prefix / "lib").is_dir():
        dirs += sorted(p for p in (prefix / "lib").glob("*-linux-gnu*") if p.is_dir())
    for d in dirs:
        lib = d / "libamdhip64.so"
        if lib.exists():
            return os.path.realpath(lib)
    return None


@dataclass(frozen=True)
class TargetPython:
    executable: str
    version: str
    torch: dict[str, str | None] | None = None  # for recipes built against torch: version, hip, cuda


def torch_record(torch: TorchInfo | None) -> dict[str, str | None]:
    if torch is None:
        return {"version": None, "hip": None, "cuda": None}
    record: dict[str, str | None] = {"version": torch.version, "hip": torch.hip, "cuda": torch.cuda}
    if torch.build_only:  # headers and link-only libraries: what is built against it cannot be imported
        record["build_only"] = "true"
    return record


@dataclass(frozen=True)
class RecipeRecord:
    name: str
    version: str
    sha256: str  # the recipe's text and the texts of the recipes it extends
    extends: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceRecord:
    """The tree a build starts from. The URL and ref only lead to the commit: they are not part of it."""

    kind: str  # git | dir
    identity: str  # the resolved commit, or "tree:<sha256>" of a source folder's contents


@dataclass(frozen=True)
class BuildIdentity:
    recipe: RecipeRecord
    source: SourceRecord
    patches: tuple[dict[str, Any], ...]  # rendered patch actions; diffs by their file's sha256
    toolchain: Toolchain
    python: TargetPython
    env: dict[str, str]  # the base environment the recipe gives every step (rendered, no locations)
    host_env: dict[str, str]  # the caller's variables that reach the steps' compilers
    archs: tuple[str, ...]
    options: dict[str, Any]
    hsa_override: str | None
    components: dict[str, str]  # the ROCm components the build can see -> their versions
    steps: tuple[dict[str, Any], ...]  # each step as rendered at fixed locations
    checks: tuple[dict[str, Any], ...]
    local_label: str
    confined: bool = False  # steps ran in a sandbox (no network, the machine read-only): never served to, nor
    # from, a build that ran without one
    extra_sources: dict[str, str] = field(default_factory=dict)  # `extra-sources:` name -> resolved commit/digest
    # What the wheel steps' build environment holds besides the tree's own build-system.requires: a module added
    # to requires.python (setuptools_scm, say) changes the wheel, so it builds again rather than being skipped.
    build_env: tuple[str, ...] = ()
    rocbuild: str = __version__
    build_rules: str = field(default_factory=current_rules)  # RULE_MODULES' digest
    schema: int = SCHEMA

    def to_json(self) -> dict[str, Any]:
        """JSON types throughout (tuples become lists), so a stored identity compares equal to a fresh one.
        The optional fields (extra sources, the build environment) are left out when empty."""
        data: dict[str, Any] = json.loads(json.dumps(asdict(self), sort_keys=True, default=str))
        for optional in ("extra_sources", "build_env"):
            if not data[optional]:
                del data[optional]
        return data

    def key(self) -> str:
        """The build cache key: the hash of every field."""
        return json_sha256(self.to_json())

    def tree_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.to_json().items() if k not in NOT_TREE}

    def tree_digest(self) -> str:
        """What the prepared tree and build folder were made from; step stamps chain from it."""
        return json_sha256(self.tree_json())


def recipe_record(plan: Plan) -> RecipeRecord:
    r = plan.recipe
    return RecipeRecord(r.name, r.version, r.digest, tuple(p.name for p, _ in r.bases))


def diff_records(plan: Plan) -> tuple[dict[str, Any], ...]:
    return tuple(patch_record(p) for p in plan.patches if isinstance(p, DiffPatch))


def source_record(plan: Plan, resolved: str) -> SourceRecord:
    kind = {GitSource: "git", DirSource: "dir", SdistSource: "sdist"}[type(plan.source)]
    return SourceRecord(kind, resolved)


def build_identity(plan: Plan, resolved_source: str, toolchain: Toolchain, torch: TorchInfo | None,
                   environ: Mapping[str, str], extra_sources: Mapping[str, str] | None = None) -> BuildIdentity:
    """`torch` counts only for recipes built against torch (`requires.torch`); `environ` is the caller's."""
    host = plan.host
    rendered = plan.rendered
    python = TargetPython(host.python.executable, host.python.version,
                          torch_record(torch) if plan.requirements.torch_check_argv else None)
    return BuildIdentity(
        recipe=recipe_record(plan),
        source=source_record(plan, resolved_source),
        patches=rendered.patches,
        toolchain=toolchain,
        python=python,
        env=dict(rendered.env),
        host_env={} if host.confine.on else host_build_env(environ),  # a confined step gets none of it
        archs=tuple(host.archs),
        options=dict(plan.options),
        hsa_override=host.override,
        components=dict(host.components),
        steps=rendered.steps,
        checks=rendered.checks,
        local_label=rendered.local_label,
        confined=host.confine.on,
        extra_sources=dict(extra_sources or {}),
        build_env=tuple(sorted(plan.build_env.modules)) if plan.build_env else (),
    )


def pinned(plan: Plan, resolved_source: str) -> dict[str, Any]:
    """The parts of a build identity a lock file pins: recipe, options, the resolved source, patch files."""
    source: dict[str, Any]
    match plan.source:
        case GitSource():
            source = {"kind": "git", "url": plan.source.url, "ref": plan.source.ref, "commit": resolved_source}
        case DirSource():
            source = {"kind": "dir", "fingerprint": resolved_source}
        case SdistSource():
            source = {"kind": "sdist", "requirement": plan.source.requirement,
                      "sha256": resolved_source.rsplit("sha256:", 1)[-1]}
        case _:
            assert_never(plan.source)
    return {"recipe": asdict(recipe_record(plan)), "options": dict(plan.options), "source": source,
            "patches": list(diff_records(plan))}


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Which top-level fields differ between two serialised identities, for messages."""
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
