"""A trap's fix as recipe data: what the failure report shows as text to paste, and what the drafter and
`--try` write into a recipe (draft/edit.py). Each kind is the recipe key it lands under."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SetEnv:
    """A variable for the wheel step (`steps: - wheel: env:`); a template such as ${{ rocm.version }} is fine."""

    name: str
    value: str
    when: str | None = None  # only where this renders true (a distro layout's variables)

    def yaml(self) -> list[str]:
        return ["steps:", "  - wheel: {}", "    env:", f"      {self.name}: {self.written()}"]

    def written(self) -> str:
        """The value as the recipe writes it: a scalar, or `{value: ..., when: ...}`."""
        return quote(self.value) if self.when is None else f"{{value: {quote(self.value)}, when: {quote(self.when)}}}"

    def describe(self) -> str:
        return f"set {self.name}={self.value} for the wheel step" + (f" (when {self.when})" if self.when else "")


@dataclass(frozen=True)
class ReplaceText:
    """A `replace` edit of a file of the tree, for the torch versions (or always) that need it."""

    file: str
    find: str
    with_: str
    when: str | None = None
    regex: bool = False
    says: str = ""  # what it does, in words, when `find` is a regex

    def yaml(self) -> list[str]:
        return ["patches:", *self.entry()]

    def entry(self) -> list[str]:
        lines = ["  - replace:", f"      file: {self.file}", f"      find: {quote(self.find)}",
                 f"      with: {quote(self.with_)}"]
        lines += ["      regex: true"] if self.regex else []
        return lines + ([f"    when: {quote(self.when)}"] if self.when else [])

    def describe(self) -> str:
        return self.says or f"replace {self.find!r} with {self.with_!r} in {self.file}"


@dataclass(frozen=True)
class Require:
    """Something the build needs: Python modules for the build environment, or ROCm CMake packages and
    headers (which --install-missing brings into a build root)."""

    key: Literal["python", "cmake-packages", "headers", "libraries"]
    names: tuple[str, ...]

    def yaml(self) -> list[str]:
        return ["requires:", f"  {self.key}: [{', '.join(self.names)}]"]

    def describe(self) -> str:
        return f"require {', '.join(self.names)} ({self.key})"


@dataclass(frozen=True)
class MemoryPerJob:
    """What one compile job takes: fewer jobs run where memory is short."""

    value: str

    def yaml(self) -> list[str]:
        return ["requires:", f"  memory-per-job: {self.value}"]

    def describe(self) -> str:
        return f"memory-per-job {self.value} (fewer parallel compile jobs)"


@dataclass(frozen=True)
class BuildOption:
    """Options for setup.py's command line, which pip hands setuptools as `--config-settings=--build-option=...`
    (apex and its copies pick their extensions from sys.argv: `--cpp_ext --cuda_ext`)."""

    options: str  # space-separated, as setuptools splits them

    def yaml(self) -> list[str]:
        return ["steps:", "  - wheel:", "      config-settings:", f"        {BUILD_OPTION}: {quote(self.options)}"]

    def describe(self) -> str:
        return f"hand setup.py {self.options} (the wheel step's config-settings {BUILD_OPTION})"


BUILD_OPTION = "'--build-option'"  # a YAML key that starts with a dash, quoted


@dataclass(frozen=True)
class HipOpenMP:
    """OpenMP for the HIP compiler's own clang (omp.h, libomp): `requires.openmp: hip`."""

    def yaml(self) -> list[str]:
        return ["requires:", "  openmp: hip"]

    def describe(self) -> str:
        return "require OpenMP for the HIP compiler's clang (requires.openmp: hip; --install-missing brings it)"


@dataclass(frozen=True)
class Expect:
    """What the wheel is expected to hold, decided from the build files alone (never to silence a failed
    check): `jit` kernels compiled at run time (no device code, the sources shipped); `runtime` a library
    that binds HIP's runtime and has no kernels of its own."""

    kind: Literal["jit", "runtime"]
    detail: tuple[str, ...] = ()  # jit: the sources its load() calls name

    def yaml(self) -> list[str]:
        # `code-objects: false`: no device code of its own; the built-in check still refuses CUDA libraries.
        lines = ["verify:", "  - code-objects: false"]
        return lines + [f"  - wheel-contains: {quote('*/' + source)}" for source in self.detail[:8]]

    def describe(self) -> str:
        return {"jit": "expect no device code in the wheel (kernels compiled at run time), and their sources shipped",
                "runtime": "expect the HIP runtime bound, and no kernels of its own"}[self.kind]


@dataclass(frozen=True)
class RocmTorch:
    """The build must run against the target python's ROCm torch, with build isolation off (a torch recipe's
    wheel step always turns it off)."""

    def yaml(self) -> list[str]:
        return ["requires:", "  torch: rocm"]

    def describe(self) -> str:
        return "require a ROCm torch in the target python (build isolation off)"


@dataclass(frozen=True)
class CopyFile:
    """A `copy` patch: a file of the tree copied under a new name (the original is only read)."""

    from_: str  # both relative to the tree
    to: str

    def entry(self) -> list[str]:
        return ["  - copy:", f"      from: {quote(self.from_)}", f"      to: {quote(self.to)}"]

    def describe(self) -> str:
        return f"copy {self.from_} to {self.to}"


@dataclass(frozen=True)
class RemoveFile:
    """A `remove` patch: a file taken out of the tree (its build scans the folder it is in)."""

    file: str

    def entry(self) -> list[str]:
        return [f"  - remove: {quote(self.file)}"]

    def describe(self) -> str:
        return f"remove {self.file}"


@dataclass(frozen=True)
class RunFirst:
    """A `run:` step put before the wheel step (the sources hipified in place for a CMake port)."""

    name: str
    argv: tuple[str, ...]

    def entry(self) -> list[str]:
        return [f"  - name: {self.name}", "    run:", *(f"      - {quote(arg)}" for arg in self.argv)]

    def describe(self) -> str:
        return f"run {self.name} before the wheel step"


@dataclass(frozen=True)
class ExtraSdist:
    """An `extra-sources:` entry: an sdist the build reads beside its tree, at `${{ sources.NAME }}` (what its CMake
    would have downloaded)."""

    name: str
    requirement: str  # NAME==VERSION

    def entry(self) -> str:
        return f"{{sdist: {quote(self.requirement)}}}"


@dataclass(frozen=True)
class Edits:
    """Several patches that are one fix (the same mask in each of a package's sources; a source copied under
    a new name and the build file that names it); with the variables and the step before the wheel step a
    port needs besides."""

    edits: tuple[ReplaceText | CopyFile | RemoveFile, ...]
    says: str
    env: tuple[SetEnv, ...] = ()
    first: RunFirst | None = None
    sources: tuple[ExtraSdist, ...] = ()
    requires: tuple[Require, ...] = ()  # what the edited build then needs (torch's LoadHIP.cmake: ROCm's packages)

    def yaml(self) -> list[str]:
        lines = ["patches:", *(line for edit in self.edits for line in edit.entry())] if self.edits else []
        lines += ["requires:", *(f"  {r.key}: [{', '.join(r.names)}]" for r in self.requires)] if self.requires else []
        lines += ["extra-sources:", *(f"  {s.name}: {s.entry()}" for s in self.sources)] if self.sources else []
        if self.env or self.first:
            lines += ["steps:", *(self.first.entry() if self.first else []), "  - wheel: {}"]
            lines += ["    env:", *(f"      {e.name}: {e.written()}" for e in self.env)] if self.env else []
        return lines

    def describe(self) -> str:
        return self.says


Fix = SetEnv | ReplaceText | Edits | Require | MemoryPerJob | HipOpenMP | Expect | RocmTorch | BuildOption


def quote(text: str) -> str:
    """A YAML scalar that reads back as `text`: single-quoted (backslashes stay as they are, a quote is
    doubled), or JSON's double-quoted string for text with control characters."""
    if any(ord(c) < 32 for c in text):
        return json.dumps(text)
    return "'" + text.replace("'", "''") + "'"
