"""The recipe, as loaded: typed and validated, with templates still unevaluated.

One frozen dataclass per section and per patch, step and check kind. A field a recipe writes carries
`spec(...)` (recipe/fields.py) and a docstring: the loader's key tables, the JSON Schema and the reference's
field lists are read from these classes (recipe/keys.py). Every entry keeps the position it came from so
later stages (rendering, planning) can point at the recipe line that produced a bad value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

from rocbuild.recipe.fields import (
    ARGV,
    ENV,
    ENV_NAME_PATTERN,
    FLAG,
    NAME,
    NAMED,
    POSITIVE,
    SETTINGS,
    TEXT,
    TEXTS,
    VERSIONED,
    WHEN,
    Key,
    Shape,
    entries,
    keys_of,
    names,
    obj,
    spec,
)

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


# -- sections ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where the source tree comes from: exactly one of git, path and sdist."""

    # Which keys go with which source: beside the one source key, the loader refuses the others.
    ONE_OF: ClassVar[tuple[str, ...]] = ("git", "path", "sdist")

    git: str | None = field(default=None, metadata=spec(TEXT))
    """a git URL (https, ssh, git, file) or an absolute path"""
    path: str | None = field(default=None, metadata=spec(TEXT))
    """a local folder, relative to the recipe file: copied, never modified"""
    sdist: str | None = field(default=None, metadata=spec(TEXT))
    """NAME==VERSION: that release's sdist from the package index"""
    ref: str | None = field(default=None, metadata=spec(TEXT))
    """git: the branch, tag or commit to build"""
    commit: str | None = field(default=None, metadata=spec(TEXT))
    """git: the whole commit id the ref must resolve to"""
    submodules: bool = field(default=False, metadata=spec(FLAG))
    """git: check out submodules recursively"""
    sha256: str | None = field(default=None, metadata=spec(TEXT))
    """sdist: the archive's sha256"""


@dataclass(frozen=True, kw_only=True)
class ExtraSource(Source):
    """Another tree the build reads (what its CMake would fetch, say): fetched by rocbuild beside the source
    tree before any step, never by a step; templates name its folder sources.NAME."""

    when: str | None = field(default=None, metadata=spec(WHEN))
    """fetch it only when this renders true"""
    name: str  # its key under `extra-sources:`
    pos: Position
    when_pos: Position | None = None


MEMORY_PATTERN = r"^\s*\d+(\.\d+)?\s*([GgMm]i?[Bb]?)\s*$"
TORCH: Shape = {"anyOf": [{"const": "rocm"}, obj({
    "value": Key("value", True, "value", {"const": "rocm"}, fixed_doc="rocm"),
    "when": Key("when", False, "when", WHEN, fixed_doc="needed when this renders true")})]}


@dataclass(frozen=True, kw_only=True)
class Requires:
    """What the host must provide, checked before anything runs."""

    rocm: str | None = field(default=None, metadata=spec(TEXT))
    """a PEP 440 specifier the ROCm version must satisfy, e.g. >=6.1"""
    tools: tuple[Conditional, ...] = field(default=(), metadata=spec(names(VERSIONED)))
    """programs that must be on PATH"""
    python: tuple[Conditional, ...] = field(default=(), metadata=spec(names(NAMED)))
    """modules the build imports (installed into the build environment)"""
    cmake_packages: tuple[Conditional, ...] = field(default=(), metadata=spec(names(NAMED)))
    """CMake config packages that must be found under the ROCm prefix"""
    headers: tuple[Conditional, ...] = field(default=(), metadata=spec(names(NAMED)))
    """headers of ROCm components without a CMake package, under the ROCm include folder (e.g.
    roctracer/roctx.h), or of a system library, in the system's include folders (cblas.h)"""
    libraries: tuple[Conditional, ...] = field(default=(), metadata=spec(names(NAMED)))
    """shared libraries of ROCm components without a CMake package, by name (roctx64 is libroctx64.so)"""
    openmp: str | None = field(default=None, metadata=spec({"const": "hip"}))
    """hip: OpenMP (omp.h, libomp) for the HIP compiler's clang, for host code it compiles"""
    torch: Conditional | None = field(default=None, metadata=spec(TORCH))
    """rocm: the target python's torch must be a ROCm build"""
    memory_per_job: int | None = field(default=None, metadata=spec({"type": "string", "pattern": MEMORY_PATTERN}))
    """what one compile job of this build takes at its peak, e.g. 9GiB (default 2GiB): the job count is the
    cores, or fewer where the available memory (or --memory) holds fewer jobs"""
    tool_versions: tuple[tuple[str, str], ...] = ()  # from `tools:`: (tool, specifier its --version must satisfy)


@dataclass(frozen=True, kw_only=True)
class Option:
    """A named knob set with `--set NAME=VALUE`."""

    name: str  # its key under `options:`
    default: str | tuple[str, ...] = field(metadata=spec(TEXT))
    """the value when no --set NAME=VALUE is given"""
    choices: tuple[str, ...] | None = field(default=None, metadata=spec(TEXTS))
    """the values accepted"""
    multi: bool = field(default=False, metadata=spec(FLAG))
    """comma-separated values, each one of the choices; renders as a list"""
    help: str = field(default="", metadata=spec(TEXT))
    """one line for `rocbuild plan` and --set errors"""


@dataclass(frozen=True, kw_only=True)
class ArchList:
    """An arch allow-list the source keeps itself, as `set(NAME "gfx906;gfx90a;...")` in one of its CMake
    files: read from the source when the build is planned, so the recipe holds no copy to fall behind."""

    file: str = field(metadata=spec(TEXT))
    """the file of the source tree that sets it (CMakeLists.txt)"""
    set_: str = field(metadata=spec(TEXT))
    """the CMake variable whose `set(...)` lists every arch the package builds for"""


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """An `unsupported:` entry: a combination that cannot build, refused when its `when:` renders true, or
    (`archs-not-in:`) an arch the source's own allow-list lacks."""

    when: str | None = field(default=None, metadata=spec(WHEN))
    """the combination (ROCm, options, targets) that cannot build"""
    archs_not_in: ArchList | None = field(default=None, metadata=spec(ArchList))
    """instead of `when:`: refuse an arch that the source's own list lacks (`{file: CMakeLists.txt, set:
    HIP_SUPPORTED_ARCHS}`), read from the sdist, the source folder or the git mirror by `plan`, and again once
    the source is fetched, before any step"""
    why: str = field(metadata=spec(TEXT))
    """the reason, shown when the build is refused"""
    step: str | None = field(default=None, metadata=spec(TEXT))
    """refuse only builds that would run this step"""
    pos: Position
    when_pos: Position | None = None


# -- entries ----------------------------------------------------------------
# The closed sets of entry kinds. The loader accepts exactly the classes of PATCHES, STEPS and CHECKS
# (their KIND), and the planner's `match` on them ends in `assert_never`: a new kind is one new class
# here, and the type checker then names every place that must handle it.
PatchKind = Literal["diff", "replace", "link", "copy", "remove"]
StepKind = Literal["cmake", "cmake-build", "make", "run", "shell", "wheel"]
VerifyKind = Literal["command", "wheel-contains", "code-objects", "import"]
Output = Literal["wheel", "tree"]  # verified wheels in the wheelhouse, or the prepared source tree
Runpath = Literal["as-built", "relative"]  # relative: RUNPATH entries into the work folder become $ORIGIN-relative
OUTPUTS: tuple[Output, ...] = get_args(Output)  # the first is the default
RUNPATHS: tuple[Runpath, ...] = get_args(Runpath)
PATCH_KINDS: tuple[PatchKind, ...] = get_args(PatchKind)
STEP_KINDS: tuple[StepKind, ...] = get_args(StepKind)
VERIFY_KINDS: tuple[VerifyKind, ...] = get_args(VerifyKind)


@dataclass(frozen=True, kw_only=True)
class Placed:
    """What every entry has: where it was written, and where its `when:` was (errors in it point there)."""

    # The YAML types a kind key's value may have besides a mapping of the body's keys (`wheel:` alone).
    ALSO: ClassVar[tuple[str, ...]] = ()
    pos: Position
    when_pos: Position | None = None


@dataclass(frozen=True, kw_only=True)
class PatchEntry(Placed):
    when: str | None = field(default=None, metadata=spec(WHEN, place="beside"))
    """apply only when this renders true"""


@dataclass(frozen=True, kw_only=True)
class Diff(PatchEntry):
    """a patch file under patches/ (beside the recipe, its parent, or rocbuild's own)"""

    KIND: ClassVar[PatchKind] = "diff"
    file: str = field(metadata=spec(TEXT, place="value"))
    """the patch file's name, e.g. horovod/0001-fix.patch"""


@dataclass(frozen=True, kw_only=True)
class Replace(PatchEntry):
    """replace text in a file of the tree"""

    KIND: ClassVar[PatchKind] = "replace"
    file: str = field(metadata=spec(TEXT))
    """the file in the source tree"""
    find: str = field(metadata=spec(TEXT))
    """the text (or regex) to find"""
    with_: str = field(metadata=spec(TEXT))
    """what replaces it"""
    count: int | None = field(default=None, metadata=spec({"type": "integer", "minimum": 1}))
    """how many matches are expected (0 matches that are not already replaced is an error)"""
    regex: bool = field(default=False, metadata=spec(FLAG))
    """find is a Python regular expression"""


@dataclass(frozen=True, kw_only=True)
class Link(PatchEntry):
    """symlink files into a folder of the tree (replacing earlier links)"""

    KIND: ClassVar[PatchKind] = "link"
    from_: str = field(metadata=spec(TEXT))
    """a glob in the tree, the ROCm prefix or the recipe's folders"""
    into: str = field(metadata=spec(TEXT))
    """a folder in the source tree"""


@dataclass(frozen=True, kw_only=True)
class Copy(PatchEntry):
    """copy a file into the tree (the original is only read)"""

    KIND: ClassVar[PatchKind] = "copy"
    from_: str = field(metadata=spec(TEXT))
    """a file in the tree, the ROCm prefix or the recipe's folders"""
    to: str = field(metadata=spec(TEXT))
    """its place in the source tree"""


@dataclass(frozen=True, kw_only=True)
class Remove(PatchEntry):
    """remove a file from the tree (one its build would otherwise pick up, by scanning a folder)"""

    KIND: ClassVar[PatchKind] = "remove"
    file: str = field(metadata=spec(TEXT, place="value"))
    """the file in the source tree, e.g. src/x_cuda.cu"""


@dataclass(frozen=True, kw_only=True)
class StepEntry(Placed):
    when: str | None = field(default=None, metadata=spec(WHEN, place="beside"))
    """run only when this renders true"""
    name: str = field(default="", metadata=spec(NAME, place="beside"))
    """the step's name (--until NAME), lower-case"""
    env: tuple[tuple[str, Conditional], ...] = field(default=(), metadata=spec(ENV, place="beside"))
    """environment for this step"""
    cwd: str | None = field(default=None, metadata=spec(TEXT, place="beside"))
    """the folder it runs in, relative to the tree"""
    network: bool = field(default=False, metadata=spec(FLAG, place="beside"))
    """the step may reach the network (a confined step has none); say why in a comment"""


@dataclass(frozen=True, kw_only=True)
class CMake(StepEntry):
    """configure with CMake (CMAKE_HIP_COMPILER and its ROCm root are added)"""

    KIND: ClassVar[StepKind] = "cmake"
    source: str | None = field(default=None, metadata=spec(TEXT))
    """the source folder (default: the tree)"""
    build: str | None = field(default=None, metadata=spec(TEXT))
    """the build folder (default: the work folder's build/)"""
    defines: tuple[tuple[str, str], ...] = field(default=(), metadata=spec(SETTINGS))
    """-DNAME=value for each entry; YAML booleans become ON/OFF"""
    generator: str | None = field(default=None, metadata=spec(TEXT))
    """-G"""
    args: tuple[str, ...] = field(default=(), metadata=spec(ARGV))
    """more arguments"""


@dataclass(frozen=True, kw_only=True)
class CMakeBuild(StepEntry):
    """cmake --build"""

    KIND: ClassVar[StepKind] = "cmake-build"
    ALSO = ("null",)
    dir: str | None = field(default=None, metadata=spec(TEXT))
    """the build folder"""
    target: str | None = field(default=None, metadata=spec(TEXT))
    """--target"""
    jobs: str | None = field(default=None, metadata=spec(POSITIVE))
    """--parallel (default: the host's jobs)"""
    config: str | None = field(default=None, metadata=spec(TEXT))
    """--config"""


@dataclass(frozen=True, kw_only=True)
class Make(StepEntry):
    """make -C DIR -jN"""

    KIND: ClassVar[StepKind] = "make"
    ALSO = ("null",)
    dir: str | None = field(default=None, metadata=spec(TEXT))
    """the folder make runs in (-C)"""
    target: str | None = field(default=None, metadata=spec(TEXT))
    """the make target"""
    args: tuple[str, ...] = field(default=(), metadata=spec(ARGV))
    """more arguments"""
    jobs: str | None = field(default=None, metadata=spec(POSITIVE))
    """-j (default: the host's jobs)"""


@dataclass(frozen=True, kw_only=True)
class Run(StepEntry):
    """a command as an argv list (python means the target python)"""

    KIND: ClassVar[StepKind] = "run"
    argv: tuple[str, ...] = field(metadata=spec(ARGV, place="value"))
    """the command and its arguments, each a word of its own"""


@dataclass(frozen=True, kw_only=True)
class Shell(StepEntry):
    """a bash script, shown in plan; template values are passed as variables"""

    KIND: ClassVar[StepKind] = "shell"
    script: str = field(metadata=spec(TEXT, place="value"))
    """the script; a ${{ ... }} value is a word of its own, outside quotes"""


@dataclass(frozen=True, kw_only=True)
class Wheel(StepEntry):
    """pip wheel --no-deps --no-build-isolation, in the build environment"""

    KIND: ClassVar[StepKind] = "wheel"
    ALSO = ("null",)
    dir: str | None = field(default=None, metadata=spec(TEXT))
    """the project folder (default: the tree)"""
    args: tuple[str, ...] = field(default=(), metadata=spec(ARGV))
    """more arguments for pip wheel"""
    config_settings: tuple[tuple[str, str], ...] = field(default=(), metadata=spec(SETTINGS))
    """--config-settings=KEY=value for each entry"""


@dataclass(frozen=True, kw_only=True)
class CheckEntry(Placed):
    when: str | None = field(default=None, metadata=spec(WHEN, place="beside"))
    """check only when this renders true"""
    env: tuple[tuple[str, Conditional], ...] = field(default=(), metadata=spec(ENV, place="beside"))
    """environment for the check"""
    name: str = field(default="", metadata=spec(TEXT, place="beside"))
    """the check's name"""


@dataclass(frozen=True, kw_only=True)
class Command(CheckEntry):
    """run a command from the scratch install of the wheels"""

    KIND: ClassVar[VerifyKind] = "command"
    argv: tuple[str, ...] = field(metadata=spec(ARGV, place="value"))
    """the command and its arguments"""
    expect: tuple[str, ...] = field(default=(), metadata=spec(TEXTS, place="beside"))
    """command: regular expressions its output must match"""


@dataclass(frozen=True, kw_only=True)
class WheelContains(CheckEntry):
    """a glob that some path in the wheel must match"""

    KIND: ClassVar[VerifyKind] = "wheel-contains"
    glob: str = field(metadata=spec(TEXT, place="value"))
    """the glob, matched against the wheel's paths"""


@dataclass(frozen=True, kw_only=True)
class CodeObjects(CheckEntry):
    """device code for the archs (true), in named files, or false: none of its own"""

    KIND: ClassVar[VerifyKind] = "code-objects"
    ALSO = ("boolean", "null")
    archs: tuple[str, ...] | None = field(default=None, metadata=spec(TEXTS))
    """the gfx targets required (default: the build's)"""
    files: tuple[str, ...] = field(default=(), metadata=spec({"anyOf": [TEXT, TEXTS]}))
    """globs of wheel paths that must carry device code"""
    links: tuple[str, ...] = field(default=(), metadata=spec(
        {"type": "array", "items": {"type": "string", "pattern": "^lib[A-Za-z0-9_+.-]+$"}}))
    """libraries those files must need (DT_NEEDED), e.g. libamdhip64"""
    required: bool = True  # false (`code-objects: false`): the wheel has no device code of its own


@dataclass(frozen=True, kw_only=True)
class Import(CheckEntry):
    """import this module from the scratch install (skipped without a usable GPU)"""

    KIND: ClassVar[VerifyKind] = "import"
    module: str = field(metadata=spec(TEXT, place="value"))
    """the module's dotted name"""


PatchSpec = Diff | Replace | Link | Copy | Remove
StepSpec = CMake | CMakeBuild | Make | Run | Shell | Wheel
CheckSpec = Command | WheelContains | CodeObjects | Import
# In the order their kinds are declared above (PATCH_KINDS, STEP_KINDS, VERIFY_KINDS).
PATCHES: tuple[type[PatchSpec], ...] = (Diff, Replace, Link, Copy, Remove)
STEPS: tuple[type[StepSpec], ...] = (CMake, CMakeBuild, Make, Run, Shell, Wheel)
CHECKS: tuple[type[CheckSpec], ...] = (Command, WheelContains, CodeObjects, Import)

def _source_shape() -> Shape:
    return {**obj(keys_of(Source)), "oneOf": [{"required": [k]} for k in Source.ONE_OF]}


def _extra_sources_shape() -> Shape:
    return {"type": "object", "propertyNames": {"pattern": ENV_NAME_PATTERN},
            "additionalProperties": {**obj(keys_of(ExtraSource)), "oneOf": [{"required": [k]} for k in Source.ONE_OF]}}


def _options_shape() -> Shape:
    return {"type": "object", "propertyNames": {"pattern": ENV_NAME_PATTERN}, "additionalProperties": obj(keys_of(Option))}


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """A recipe file (schema 1), with the files it extends merged in."""

    path: Path
    text: str
    name: str = field(metadata=spec(NAME))
    """the recipe's name: lower-case letters, digits, '.', '_' and '-'"""
    version: str = field(metadata=spec(TEXT))
    """the PEP 440 version this recipe builds"""
    summary: str = field(default="", metadata=spec(TEXT))
    """one line saying what it builds"""
    homepage: str = field(default="", metadata=spec(TEXT))
    """the project's home"""
    source: Source = field(metadata=spec(_source_shape))
    """where the source tree comes from: exactly one of git, path and sdist"""
    extra_sources: tuple[ExtraSource, ...] = field(default=(), metadata=spec(_extra_sources_shape))
    """more trees the build reads, by name: each fetched beside the source tree before any step (as a step
    never fetches), a folder templates see as sources.NAME"""
    requires: Requires = field(default_factory=Requires, metadata=spec(Requires))
    """what the host must provide, checked before anything runs"""
    options: tuple[Option, ...] = field(default=(), metadata=spec(_options_shape))
    """knobs set with --set NAME=VALUE, seen as options.NAME in templates"""
    env: tuple[tuple[str, Conditional], ...] = field(default=(), metadata=spec(ENV))
    """environment for every step (a value may be {value, when})"""
    run_env: tuple[tuple[str, Conditional], ...] = field(default=(), metadata=spec(ENV))
    """environment the built package needs at run time: said by build and verify, set for import checks"""
    patches: tuple[PatchSpec, ...] = field(default=(), metadata=spec(lambda: entries(PATCHES)))
    """changes to the source tree, applied after every fresh checkout"""
    steps: tuple[StepSpec, ...] = field(default=(), metadata=spec(lambda: entries(STEPS)))
    """the build, in order (required unless output is tree)"""
    verify: tuple[CheckSpec, ...] = field(default=(), metadata=spec(lambda: entries(CHECKS)))
    """checks of the built wheels, after the built-in device-code check"""
    local_version: str | None = field(default=None, metadata=spec({"type": ["string", "null"]}))
    """the PEP 440 local label of the wheels (default rocmX.Y; empty for none)"""
    output: Output = field(default="wheel", metadata=spec({"enum": list(OUTPUTS)}))
    """wheel (verified wheels) or tree (a prepared source tree)"""
    runpath: Runpath = field(default="as-built", metadata=spec({"enum": list(RUNPATHS)}))
    """as-built, or relative: RUNPATH entries into the work folder become $ORIGIN-relative"""
    unsupported: tuple[Refusal, ...] = field(default=(), metadata=spec(lambda: {"type": "array", "items": obj(keys_of(Refusal))}))
    """combinations that cannot build, refused before anything runs"""
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
