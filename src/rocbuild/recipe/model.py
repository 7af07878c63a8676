"""The recipe, as loaded: typed and validated, with templates still unevaluated.

Every entry keeps the position it came from so later stages (rendering,
planning) can point at the recipe line that produced a bad value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, get_args

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Position:
    """Where a value sits in its recipe file (1-based line and column)."""

    file: str
    line: int
    column: int
    key: str  # the key path, e.g. "steps[2].cmake.defines"

    def describe(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Conditional:
    """A value that applies only when its `when:` template renders to true."""

    value: Any
    when: str | None
    pos: Position
    when_pos: Position | None = None  # where `when:` was written (errors in it point there)


@dataclass(frozen=True)
class Source:
    """Where the source tree comes from."""

    git: str | None = None
    ref: str | None = None
    commit: str | None = None  # optional pin: the build fails when `ref` resolves elsewhere
    submodules: bool = False
    path: str | None = None  # a local folder (relative to the recipe file), copied, never modified
    sdist: str | None = None  # NAME==VERSION: the release's sdist from the package index
    sha256: str | None = None  # the sdist's pin


@dataclass(frozen=True)
class Requires:
    """What the host must provide before anything compiles."""

    rocm: str | None = None  # a PEP 440 version specifier, e.g. ">=6.1"
    torch: Conditional | None = None  # value "rocm": the target python's torch must be a ROCm build
    tools: tuple[Conditional, ...] = ()
    tool_versions: tuple[tuple[str, str], ...] = ()  # (tool, PEP 440 specifier its --version must satisfy)
    python: tuple[Conditional, ...] = ()  # modules importable in the target python
    cmake_packages: tuple[Conditional, ...] = ()  # config packages under the ROCm prefix
    headers: tuple[Conditional, ...] = ()  # header paths under the ROCm include folder
    libraries: tuple[Conditional, ...] = ()  # shared library names (roctx64: libroctx64.so) in the ROCm lib folders
    openmp: str | None = None  # "hip": OpenMP for the HIP compiler's clang


@dataclass(frozen=True)
class Refusal:
    """Why a combination cannot build; `step`: refused only when the build would run that step."""

    why: str
    step: str | None = None


@dataclass(frozen=True)
class Option:
    """A named knob set with `--set NAME=VALUE`."""

    name: str
    default: str | tuple[str, ...]
    choices: tuple[str, ...] | None = None
    multi: bool = False  # comma-separated values, each one of `choices`; renders as a list
    help: str = ""


# The closed sets of entry kinds. The loader accepts exactly these (KINDS below are read from them),
# and the planner's `match` on them ends in `assert_never`: a new kind is one new name here, and the
# type checker then names every place that must handle it.
PatchKind = Literal["diff", "replace", "link", "copy"]
StepKind = Literal["cmake", "cmake-build", "make", "run", "shell", "wheel"]
VerifyKind = Literal["command", "wheel-contains", "code-objects", "import"]
PATCH_KINDS: tuple[PatchKind, ...] = get_args(PatchKind)
STEP_KINDS: tuple[StepKind, ...] = get_args(StepKind)
VERIFY_KINDS: tuple[VerifyKind, ...] = get_args(VerifyKind)

K = TypeVar("K", PatchKind, StepKind, VerifyKind)


@dataclass(frozen=True)
class Entry(Generic[K]):
    """One patch, step or verify entry: its kind and its (unrendered) body."""

    kind: K
    body: Any
    when: str | None
    pos: Position
    name: str | None = None
    env: tuple[tuple[str, Conditional], ...] = ()
    cwd: str | None = None
    when_pos: Position | None = None  # where `when:` was written (errors in it point there)


@dataclass(frozen=True)
class Recipe:
    path: Path
    text: str
    name: str
    version: str
    summary: str = ""
    homepage: str = ""
    source: Source = field(default_factory=Source)
    requires: Requires = field(default_factory=Requires)
    options: tuple[Option, ...] = ()
    env: tuple[tuple[str, Conditional], ...] = ()
    patches: tuple[Entry[PatchKind], ...] = ()
    steps: tuple[Entry[StepKind], ...] = ()
    verify: tuple[Entry[VerifyKind], ...] = ()
    local_version: str | None = None  # PEP 440 local label template; None: +rocmX.Y, "": none
    output: str = "wheel"  # "wheel": verified wheels in the wheelhouse; "tree": the prepared source tree
    runpath: str = "as-built"  # "relative": RUNPATH entries into the work folder become $ORIGIN-relative
    unsupported: tuple[Conditional, ...] = ()  # value: a Refusal; refused when its `when:` renders true
    bases: tuple[tuple[Path, str], ...] = ()  # the recipes it extends (path, text), nearest first
    patch_dirs: tuple[Path, ...] = ()  # where `diff:` names were found: beside it, then beside its bases
    # Where the scalar templates rendered only when planning were written (source.ref, source.commit,
    # local-version): an error in what they render to points there.
    positions: dict[str, Position] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """sha256 over the recipe's text and the texts of the recipes it extends."""
        h = hashlib.sha256(self.text.encode())
        for _, text in self.bases:
            h.update(b"\0" + text.encode())
        return h.hexdigest()

    @property
    def directory(self) -> Path:
        return self.path.parent

    def position(self, key: str) -> Position | None:
        return self.positions.get(key)

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)
