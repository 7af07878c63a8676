"""One thing verify found: a code and the data it is about. Verdicts decide on codes; the words a person
reads are rendered from the code and its data here alone (MESSAGES), so rewording one changes no verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, cast, get_args

# A datum: text, a number, a list of texts, or rows of texts (a table: one row per library, per major...).
Value = str | int | tuple[str, ...] | tuple[tuple[str, ...], ...]

Code = Literal[
    # what reading a file found (always problems)
    "unreadable_bundle", "empty_fatbin", "unreadable_elf", "broken_code_object", "unknown_processor",
    "unreadable_pe",
    # one file's rules
    "build_paths", "cuda_allowed", "links_cuda", "arch_missing", "named_file_no_code", "missing_link",
    # one input's rules
    "code_objects_miss_arch", "runtime_only", "runtime_only_unwanted", "cpu_only", "no_file_matches",
    "majors_in_library", "majors_mixed", "alternative_wrong_major", "alternative_serves", "major_disagrees",
    "stale_alternative",
    # what the wheel says of itself
    "build_only_torch", "torch_unpinned", "torch_distro_sonames", "run_env",
]
CODES: tuple[Code, ...] = get_args(Code)

# Worth knowing, not a failure; every other code is a problem.
NOTES: frozenset[Code] = frozenset({"build_paths", "cuda_allowed", "runtime_only", "alternative_serves",
                                    "build_only_torch", "torch_unpinned", "torch_distro_sonames", "run_env"})
# Said of a build against a build-only ROCm torch (`rocbuild root torch`), by verify and by the build's checks.
BUILD_ONLY_NOTE = "built against a build-only torch"
# The file could not be read: that is the cause of whatever seems missing from it.
UNREADABLE: frozenset[Code] = frozenset({"unreadable_bundle", "unreadable_elf"})


@dataclass(frozen=True)
class Finding:
    code: Code
    data: Mapping[str, Value] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", dict(self.data))  # its own copy: the caller's dict may change later

    @property
    def problem(self) -> bool:
        return self.code not in NOTES

    @property
    def message(self) -> str:
        return MESSAGES[self.code](self)

    def text(self, key: str) -> str:
        value = self.data.get(key, "")
        return value if isinstance(value, str) else str(value)

    def number(self, key: str) -> int:
        value = self.data[key]
        if not isinstance(value, int):
            raise TypeError(f"{self.code}: {key} is not a number: {value!r}")
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, ())
        if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            return cast("tuple[str, ...]", value)
        return ()

    def rows(self, key: str) -> tuple[tuple[str, ...], ...]:
        value = self.data.get(key, ())
        if isinstance(value, tuple) and all(isinstance(v, tuple) for v in value):
            return cast("tuple[tuple[str, ...], ...]", value)
        return ()

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "problem": self.problem, "message": self.message, "data": dict(self.data)}


def _claim(f: Finding) -> str:
    """What the build says of itself: `by` the build, its provenance or its label."""
    by = f.text("by")
    if by == "provenance":
        return f"its provenance says it was built with ROCm {f.text('said')}"
    if by == "label":
        return f"its label +{f.text('said')} says ROCm {f.number('claimed')}"
    return f"it was built with ROCm {f.number('claimed')}"


def _runtime_only(f: Finding) -> str:
    return (f"ships no GPU kernels of its own, but {f.text('how')} the ROCm runtime ({', '.join(f.texts('runtime'))}): "
            "a runtime binding or JIT compiler needs no kernels")


def _cpu_only(f: Finding) -> str:
    n = f.number("files")
    if f.text("kind") in ("elf", "bundle", "code object", "windows library"):
        what = "carries no HIP device code (no offload bundle, no code object)"
    elif n:
        what = f"has no HIP device code: none of its {n} ELF file(s) carries an offload bundle or a code object"
    else:
        what = "holds no ELF file at all, so no HIP device code"
    return (f"{what}, and nothing in it links the ROCm runtime, but {', '.join(f.texts('targets'))} requested: "
            "a CPU-only build (was the HIP/ROCm backend of the project enabled?)")


def _torch_unpinned(f: Finding) -> str:
    requires = "; ".join(f.texts("requires"))
    said = (f"its metadata's torch requirement ({requires}) allows more than one torch release" if requires
            else "its metadata requires no torch")
    pin = f"torch=={f.text('series')}.*" if f.text("series") else "torch==X.Y.* of the torch it was built against"
    return (f"a torch extension ({f.text('where')} needs {', '.join(f.texts('libs'))}), but {said}: pip may pair it "
            f"with another torch, whose C++ ABI differs (\"undefined symbol\" at import); its metadata should "
            f"require {pin}")


def _unreadable_bundle(f: Finding) -> str:
    within = f"{f.text('section')}: " if f.text("section") else ""
    return f"{within}unreadable offload bundle at offset {f.number('offset'):#x}: {f.text('reason')}"


MESSAGES: dict[Code, Callable[[Finding], str]] = {
    "unreadable_bundle": _unreadable_bundle,
    "empty_fatbin": lambda f: f"{f.text('section')} holds {f.number('size')} bytes but no offload bundle",
    "unreadable_elf": lambda f: f"not a readable ELF file: {f.text('reason')}",
    "broken_code_object": lambda f: "an AMDGPU ELF file whose header does not hold together (truncated?)",
    "unknown_processor": lambda f: ("a code object for a processor LLVM's table does not name "
                                    f"(EF_AMDGPU_MACH {f.number('mach'):#x})"),
    "unreadable_pe": lambda f: f"not a readable PE/COFF (Windows) file: {f.text('reason')}",
    "build_paths": lambda f: (f"its {f.text('which')} holds build-machine paths ({', '.join(f.texts('paths'))}): "
                              "harmless where they do not exist, a hijack risk where they do"),
    "cuda_allowed": lambda f: f"links the CUDA library {f.text('lib')} (allowed by --allow-cuda)",
    "links_cuda": lambda f: (f"links the CUDA library {f.text('lib')}: it was built against CUDA, not ROCm "
                             "(for a torch extension: a CUDA torch was in the build environment; for a "
                             "multi-backend wheel, scope the check with --files or --allow-cuda)"),
    "arch_missing": lambda f: f"{f.text('reason')}; rebuild with --arch including {f.text('target')}",
    "named_file_no_code": lambda f: f"carries no device code (it matches {f.text('pattern')!r}, which must)",
    "missing_link": lambda f: (f"does not link {f.text('lib')} (DT_NEEDED: {', '.join(f.texts('needed')) or 'none'}): "
                               "not a ROCm build of this extension"),
    "code_objects_miss_arch": lambda f: (f"its {f.number('files')} code object file(s) have {f.text('reason')}; "
                                         f"rebuild with --arch including {f.text('target')}"),
    "runtime_only": lambda f: f"{_runtime_only(f)}; nothing to check for {', '.join(f.texts('targets'))}",
    "runtime_only_unwanted": lambda f: (f"{_runtime_only(f)}; this build was meant to carry device code for "
                                        f"{', '.join(f.texts('targets'))} (was the HIP backend of the project enabled?)"),
    "cpu_only": _cpu_only,
    "no_file_matches": lambda f: f"no ELF file matches {f.text('pattern')!r}, which must carry device code",
    "majors_in_library": lambda f: (f"{f.text('path')} mixes ROCm majors inside one library: "
                                    + ", ".join(f"{lib} (ROCm {major})" for lib, major in f.rows("libs"))),
    "majors_mixed": lambda f: ("mixes ROCm majors: " + "; ".join(f"ROCm {major}: {', '.join(where)}"
                                                                 for major, *where in f.rows("by_major"))
                               + " (a stale library from an earlier build?)"),
    "alternative_wrong_major": lambda f: (f"{f.text('path')} is named for ROCm {f.text('release')} but links ROCm "
                                          f"{f.number('major')} libraries ({f.text('lib')}): it cannot load there"),
    "build_only_torch": lambda f: (f"{BUILD_ONLY_NOTE} (torch {f.text('torch')}, HIP {f.text('hip')}): import not "
                                   "tried; its torch libraries hold no code, so it loads nowhere: rebuild against a "
                                   "real ROCm torch to run it"),
    "torch_unpinned": _torch_unpinned,
    "run_env": lambda f: ("at run time it needs " + " ".join(f"{k}={v}" for k, v in f.rows("env"))
                          + " (its recipe's run-env, recorded in its provenance)"),
    "torch_distro_sonames": lambda f: (
        f"{f.text('where')} needs {', '.join(f.texts('libs'))}: versioned names no PyTorch wheel gives its "
        "libraries (a ROCm torch wheel ships libc10.so, libc10_hip.so, libtorch_cpu.so, ...); it was linked against "
        "a distribution's torch (Debian's, say) and loads only beside that torch, not with one from pip"),
    "alternative_serves": lambda f: (f"{f.text('path')} serves ROCm {f.text('release')} (links {f.text('lib')}); "
                                     "the package loads the library for the ROCm it finds"),
    "major_disagrees": lambda f: (f"links ROCm {f.number('major')} libraries ({f.text('where')}), but {_claim(f)}: "
                                  "built from a stale build folder or against another ROCm; rebuild with --clean"),
    "stale_alternative": lambda f: (f"carries {f.text('path')}, a library for ROCm {f.text('release')}, but "
                                    f"{_claim(f)}: a stale library from an earlier build; rebuild with --clean"),
}
