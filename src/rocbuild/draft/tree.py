"""A draft recipe from a project's own build files: `rocbuild recipes new NAME --sdist NAME==VERSION`.

The sdist is read, not built: its build backend (pyproject.toml), its CMake files and setup.py are
searched for the switches that turn a HIP/ROCm backend on and the variables that name the GPU
targets. A PyTorch extension is read for what torch.utils.cpp_extension leaves to each package
(torch_reading.py) and drafted like the shipped torch-extension recipes (torch_text.py). What is
found goes into the draft with the file and line it came from; what cannot be decided is said in the
draft, so a person finishes it knowing what was guessed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rocbuild.compat import tomllib
from rocbuild.draft.edit import apply_fix
from rocbuild.draft.fixes import Edits, RemoveFile, SetEnv
from rocbuild.draft.masks import SKIP_DIRS, sources
from rocbuild.draft.pysrc import read_python
from rocbuild.draft.torch_reading import TorchReading, compiled_at_run_time, missing_submodules, read_torch
from rocbuild.draft.torch_text import torch_draft
from rocbuild.draft.traps import BuildFiles, Hit, in_build_files
from rocbuild.recipe.schema import MODELINE, MODELINE_HINT

# Switches that turn a ROCm backend on, as projects spell them, and how each is set.
SWITCHES = ("USE_ROCM", "USE_HIP", "GGML_HIP", "WITH_HIP", "FAISS_ENABLE_ROCM", "CUPY_INSTALL_USE_HIP", "SD_HIPBLAS",
            "WITH_ROCM", "ENABLE_HIP", "ENABLE_ROCM", "BUILD_WITH_HIP", "HOROVOD_GPU", "COMPUTE_BACKEND")
ARCH_VARIABLES = ("CMAKE_HIP_ARCHITECTURES", "AMDGPU_TARGETS", "GPU_TARGETS", "HCC_AMDGPU_TARGET",
                  "PYTORCH_ROCM_ARCH", "BNB_ROCM_ARCH", "HIP_ARCHITECTURES")
# How each arch variable wants its list: CMake lists take ';', the environment variables ','.
COMMA_LISTS = ("HCC_AMDGPU_TARGET",)
MAX_FILES = 400  # CMake files read at most (a vendored tree can hold thousands)


@dataclass(frozen=True)
class Found:
    name: str
    where: str  # file:line
    how: str  # "cmake" (a CMake variable or option) or "env" (read from the environment by setup.py)


@dataclass
class Reading:
    """What a project's build files say about building it for ROCm."""

    backend: str | None = None  # the PEP 517 build backend
    cmake: bool = False  # a CMakeLists.txt at the top
    hip_language: str | None = None  # where enable_language(HIP) / project(... HIP) is
    hipcc: str | None = None  # where the build runs hipcc itself (which reads HCC_AMDGPU_TARGET)
    rocm_home: str | None = None  # where the build reads ROCM_HOME (the ROCm prefix) from the environment
    switches: list[Found] = field(default_factory=list)
    archs: list[Found] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)  # build-system.requires
    cmake_args: tuple[str, str] | None = None  # (where, separator): setup.py passes $CMAKE_ARGS on to cmake
    torch: TorchReading | None = None  # a PyTorch extension
    traps: list[Hit] = field(default_factory=list)  # the catalogue's traps its build files show, with their fixes
    notes: list[str] = field(default_factory=list)  # what could not be decided

    @property
    def scikit_build(self) -> bool:
        return self.backend is not None and self.backend.startswith("scikit_build_core")


def read_tree(tree: Path) -> Reading:
    reading = Reading(cmake=(tree / "CMakeLists.txt").is_file())
    _read_pyproject(tree, reading)
    for path in _cmake_files(tree):
        _scan(tree, path, reading, "cmake")
    for path in [tree / "setup.py", *sorted(tree.glob("install/**/*.py"))[:50]]:
        if path.is_file():
            _scan(tree, path, reading, "env")
    reading.torch = read_torch(tree)
    if (tree / "setup.py").is_file():
        reads = [r for r in read_python(tree, tree / "setup.py").env if r.name == "CMAKE_ARGS"]
        reading.cmake_args = (reads[0].where, next((r.split for r in reads if r.split), " ")) if reads else None
    if reading.torch is None:
        _cmake_notes(reading)
        reading.notes += missing_submodules(tree, [])  # a torch extension's reading has its own, with setup.py's
    if reading.backend is None:
        reading.notes.append("no [build-system] in pyproject.toml: pip falls back to setuptools (setup.py)")
    reading.traps = in_build_files(BuildFiles.read(tree, reading.torch))  # torch was read above
    return reading


# What a build may compile besides C/C++/CUDA/HIP sources (masks.SOURCES): C, Cython, Rust, Fortran.
OTHER_SOURCES = (".c", ".pyx", ".rs", ".f", ".f90")


def compiles_nothing(tree: Path) -> bool:
    """A tree with no source any compiler takes, no CMake project, no extension in setup.py and no kernels its
    modules compile at run time: a pure-Python package, the same wheel for every machine, which rocbuild has nothing
    to build for a GPU. (A package that generates its kernels' source and compiles it with load_inline is drafted
    as compiling at run time, whose wheel holds no device code.)"""
    if (tree / "CMakeLists.txt").is_file() or (tree / "Cargo.toml").is_file() or sources(tree):
        return False
    if any(p.suffix in OTHER_SOURCES for p in tree.rglob("*") if not SKIP_DIRS & set(p.relative_to(tree).parts)):
        return False
    setup = tree / "setup.py"
    text = setup.read_text(errors="replace") if setup.is_file() else ""
    if re.search(r"\bext_modules\b|Extension\s*\(|cpp_extension|\bload(?:_inline)?\s*\(", text):
        return False
    return compiled_at_run_time(tree) is None


def _cmake_notes(reading: Reading) -> None:
    """What a project that is no torch extension leaves undecided: its switch and its targets."""
    if not reading.switches:
        reading.notes.append("no known HIP/ROCm switch in its build files (looked for: " + ", ".join(SWITCHES)
                             + "): this draft builds what the project builds by default, probably for the CPU "
                             "only. Find how the project enables ROCm, or whether it can.")
    if reading.switches and not reading.archs and not reading.hip_language and reading.hipcc:
        reading.archs.append(Found("HCC_AMDGPU_TARGET", reading.hipcc, "env"))  # hipcc reads it itself
    if reading.switches and not reading.archs and not reading.hip_language:
        reading.notes.append("no variable naming the GPU targets was found (looked for: " + ", ".join(ARCH_VARIABLES)
                             + "): the build may compile for a default list, or for the GPUs of the build machine")


def _read_pyproject(tree: Path, reading: Reading) -> None:
    path = tree / "pyproject.toml"
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        return
    system = data.get("build-system")
    if isinstance(system, dict):
        backend = system.get("build-backend")
        reading.backend = backend if isinstance(backend, str) else None
        requires = system.get("requires")
        reading.requires = [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []


def _cmake_files(tree: Path) -> list[Path]:
    found = [p for p in sorted(tree.rglob("CMakeLists.txt")) + sorted(tree.rglob("*.cmake"))
             if not any(part in ("tests", "test", "examples", "docs") for part in p.relative_to(tree).parts)]
    found.sort(key=lambda p: (len(p.relative_to(tree).parts), str(p)))
    return found[:MAX_FILES]


def _scan(tree: Path, path: Path, reading: Reading, how: str) -> None:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return
    rel = path.relative_to(tree)
    for number, line in enumerate(lines, 1):
        code = line.split("#", 1)[0]
        where = f"{rel}:{number}"
        if how == "cmake" and reading.hip_language is None and re.search(
                r"\benable_language\s*\(\s*HIP\b|\bproject\s*\([^)]*\bHIP\b", code, re.IGNORECASE):
            reading.hip_language = where
        if how == "env" and reading.hipcc is None and re.search(r"\bhipcc\b", code):
            reading.hipcc = where
        if how == "env" and reading.rocm_home is None and re.search(r"""['"]ROCM_HOME['"]""", code):
            reading.rocm_home = where
        _note(reading.switches, SWITCHES, code, where, how)
        _note(reading.archs, ARCH_VARIABLES, code, where, how)


def _note(found: list[Found], names: tuple[str, ...], code: str, where: str, how: str) -> None:
    for name in names:
        if any(f.name == name for f in found):
            continue
        pattern = (rf"\b(?:option|if|elseif|set|cmake_dependent_option)\s*\(\s*(?:NOT\s+)?{name}\b|\$\{{{name}\}}"
                   if how == "cmake" else rf"""(?:environ(?:\.get)?|getenv|_get_env\w*)\s*[\[(]\s*['"]{name}['"]""")
        if re.search(pattern, code):
            found.append(Found(name, where, how))


def draft_recipe(name: str, requirement: str, sha256: str, reading: Reading, archs: list[str] | None = None) -> str:
    """The recipe text: a wheel step that turns on what was found, with comments saying where. `archs`, the
    targets it is meant for, are checked against allow-lists found in a torch extension's build files."""
    lines = [MODELINE,
             f"# {name}: a draft recipe written by `rocbuild recipes new {name} --sdist {requirement}` from the",
             "# sdist's own build files. Check every line marked DRAFT, then `rocbuild recipes lint`, then",
             f"# `rocbuild plan {name}.yaml --arch {(archs or ['gfx1100'])[0]}` shows every command before anything runs.",
             MODELINE_HINT,
             f"# Build backend: {reading.backend or 'none declared (setuptools)'}; "
             f"build-system.requires: {', '.join(reading.requires) or '-'}."]
    lines += [f"# Trap {h.trap.id} ({h.evidence.where}): {h.fix.describe()}" for h in reading.traps if h.fix]
    if reading.torch is not None:
        lines += [f"# DRAFT: {note}" for note in reading.notes]
        text = "\n".join(torch_draft(lines, name, requirement, sha256, reading.torch, archs or [], reading.requires))
        return with_traps(text, reading.traps)
    lines += [f"# Found: {f.name} ({'CMake' if f.how == 'cmake' else 'environment'}) at {f.where}"
              for f in reading.switches + reading.archs]
    if reading.hip_language:
        lines.append(f"# Found: CMake's HIP language at {reading.hip_language} (targets: CMAKE_HIP_ARCHITECTURES)")
    if reading.rocm_home:
        lines.append(f"# Found: ROCM_HOME (environment) at {reading.rocm_home}")
    lines += [f"# DRAFT: {note}" for note in reading.notes]
    version = requirement.partition("==")[2]
    lines += ["schema: 1", f"name: {name}", f'version: "{version}"', f"summary: {name} built for AMD GPUs (draft)", "",
              "source:", f"  sdist: {requirement}", f"  sha256: {sha256}", "", "requires:", '  rocm: ">=6.1"  # DRAFT',
              "  tools: [cmake]" if reading.cmake else "  tools: []", ""]
    env, defines = _settings(reading)
    if env:
        lines += ["env:"] + [f'  {k}: "{v}"' for k, v in env.items()] + [""]
    lines += ["steps:", "  - wheel:"]
    if defines and reading.scikit_build:
        lines += ["      config-settings:"] + [f'        cmake.define.{k}: "{v}"' for k, v in defines.items()]
        lines.append('        build-dir: "${{ build }}"')
    elif defines and reading.cmake_args:
        lines[-1] = "  - wheel: {}"
        lines[lines.index("steps:"):lines.index("steps:")] = _cmake_args(defines, reading.cmake_args, "env:" in lines)
    elif defines:
        lines[-1] = "  - wheel: {}"
        lines.insert(lines.index("steps:"), "# DRAFT: these CMake switches were found but the backend is not "
                     "scikit-build-core: pass them the way its setup.py reads them:")
        lines.insert(lines.index("steps:"), "#   " + " ".join(f"-D{k}={v}" for k, v in defines.items()))
    else:
        lines[-1] = "  - wheel: {}"
    lines += ["", "verify:", "  # Every wheel is checked for device code for each requested arch (built in); name the",
              "  # library that must carry it once the first build shows where it is.", f"  - import: {_module(name)}", ""]
    return with_traps("\n".join(lines), reading.traps)


def with_traps(text: str, hits: list[Hit]) -> str:
    """The draft with each trap fix its build files call for written in, where it belongs, naming the trap. A fix
    that moves sources (a copy, the original removed) comes last: the others edit the originals, which it copies
    edited (pytorch-extension's kernels had a header edited after their move)."""
    for hit in sorted(hits, key=_moves_sources):
        if hit.fix is not None:
            text = apply_fix(text, hit.fix, f"trap {hit.trap.id} ({hit.evidence.where}): {hit.evidence.text}")
    return _set_by_traps(text, {h.fix.name for h in hits if isinstance(h.fix, SetEnv)})


def _set_by_traps(text: str, names: set[str]) -> str:
    """The draft's note of variables left unset, without those a trap's fix sets (torch-encoding's RELEASE)."""
    def kept(match: re.Match[str]) -> str:
        left = [v for v in match.group(2).split(", ") if v.split(" (")[0] not in names]
        return f"{match.group(1)}{', '.join(left)}\n" if left else ""

    return re.sub(r"^(# Also read, left unset: )(.*)\n", kept, text, flags=re.MULTILINE)


def _moves_sources(hit: Hit) -> bool:
    return isinstance(hit.fix, Edits) and any(isinstance(e, RemoveFile) for e in hit.fix.edits)


def _cmake_args(defines: dict[str, str], cmake_args: tuple[str, str], have_env: bool) -> list[str]:
    """The CMake switches as $CMAKE_ARGS, which setup.py passes on to cmake (split as it splits it)."""
    where, sep = cmake_args
    joined = (" " if sep.strip() == "" else sep).join(f"-D{k}={v}" for k, v in defines.items())
    lines = [] if have_env else ["env:"]
    lines += [f"  # setup.py passes CMAKE_ARGS on to cmake ({where}), split on {sep!r}: no value may hold one",
              f'  CMAKE_ARGS: "{joined}"', ""]
    return lines


def _settings(reading: Reading) -> tuple[dict[str, str], dict[str, str]]:
    """(environment, CMake defines) that turn the backend on for the requested archs."""
    # ROCM_HOME, never ROCM_PATH: on a distro layout ROCM_PATH=/usr stops clang finding its device libraries.
    env: dict[str, str] = {"ROCM_HOME": "${{ rocm.path }}"} if reading.rocm_home else {}
    defines: dict[str, str] = {}
    for f in reading.switches:
        value = {"COMPUTE_BACKEND": "hip", "HOROVOD_GPU": "ROCM"}.get(f.name, "1" if f.how == "env" else "ON")
        (env if f.how == "env" else defines)[f.name] = value
    archs = list(reading.archs)
    if reading.hip_language and not any(a.name == "CMAKE_HIP_ARCHITECTURES" for a in archs):
        archs.append(Found("CMAKE_HIP_ARCHITECTURES", reading.hip_language, "cmake"))
    for f in archs:
        joined = "${{ archs | join(',') }}" if f.name in COMMA_LISTS else "${{ archs | join(';') }}"
        (env if f.how == "env" else defines)[f.name] = joined
    if defines and (reading.hip_language or "CMAKE_HIP_ARCHITECTURES" in defines):
        defines.setdefault("CMAKE_HIP_COMPILER", "${{ rocm.hip_compiler }}")
        defines.setdefault("CMAKE_HIP_COMPILER_ROCM_ROOT", "${{ rocm.path }}")
    return env, defines


def _module(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name).lower()
