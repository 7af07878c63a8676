"""The catalogue of known traps of ROCm builds: one typed table that the drafter, the failure report and
`--try` all read (and the recipe reference lists, generated from it).

Each trap has a stable id (recipe comments, reports and --json use it), one line of why, a detector on
the build files (what the drafter sees before anything runs), detectors on a failed log's text and on a
failed check's finding codes (what a failure shows), and its fix as recipe data (fixes.py). Detectors
read text and codes only: this module imports neither verify nor the engine."""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rocbuild.cudalibs import CUDA_LIB, needed
from rocbuild.draft.cmake_port import HIPIFY, cmake_files, port
from rocbuild.draft.fixes import (
    BuildOption,
    CopyFile,
    Edits,
    Expect,
    ExtraSdist,
    Fix,
    HipOpenMP,
    MemoryPerJob,
    RemoveFile,
    ReplaceText,
    Require,
    RocmTorch,
    RunFirst,
    SetEnv,
)
from rocbuild.draft.headers import cub_names, cublas_fp16_includes, host_bf16_include, math_constants
from rocbuild.draft.masks import (
    FULL,
    INCLUDE,
    SKIP_DIRS,
    WARP32,
    SourceEdit,
    atomic_overloads,
    c10_hip_names,
    cg_reduce_includes,
    compiled_as,
    cucomplex_names,
    cuda_includes,
    cuda_std_names,
    cudart_cb,
    cusolver_status_names,
    device_arch_guards,
    device_traps,
    find_masks,
    half_macros,
    hip_forms,
    hipified,
    kernel_pointers,
    ldg_calls,
    line_at,
    line_of,
    member_templates,
    read_sources,
    renamed_torch_api,
    rounding_intrinsics,
    spaced_launches,
    variable_masks,
    vector_helpers,
    vendored_hip_headers,
)
from rocbuild.draft.needle import Needled, needled
from rocbuild.draft.pysrc import EnvRead, local_modules, pip_runs, read_python
from rocbuild.draft.torch_reading import (
    AUTO_CUDA,
    CUDA_FLAG,
    FORCE,
    SELECTOR,
    VENDOR_DIRS,
    TorchReading,
    distribution,
    package_modules,
    read_torch,
)
from rocbuild.draft.void_arith import byte_arithmetic
from rocbuild.roots.packages import SYSTEM_HEADERS
from rocbuild.torchkit.cmake import LOADHIP_CMAKE_PACKAGES

# What the device-code check finds in a build that came out without device code: a trap that explains such a
# build (a force variable, a GPU probe, an nvcc probe) is seen in any of them.
CPU_ONLY = ("cpu_only", "named_file_no_code", "no_file_matches", "runtime_only_unwanted")
# A download that found no network: pip (urllib3 names the host), git, curl, wget, CMake's FetchContent and
# ExternalProject, urllib. The host, where the line names one, is the value the report shows.
NETWORK_FAILED = (r"host='(?P<value>[\w.-]+)', port=\d+\): (?:Failed to resolve|Max retries)",
                  r"Could not resolve host:? '?(?P<value>[\w.-]+)",
                  r"unable to resolve host address .(?P<value>[\w.-]+).",
                  r"Resolving (?P<value>[\w.-]+) .*failed: Temporary failure in name resolution",
                  r"downloading '\w+://(?P<value>[^/':]+)[^']*' failed",
                  r"urlopen error", r"Temporary failure in name resolution", r"Failed to establish a new connection",
                  r"Network is unreachable", r"Couldn't resolve host name")
# ROCm's CMake packages and header folders, as --install-missing can bring them into a root.
ROCM_PACKAGE = re.compile(r"^(?:hip\w*|roc\w+|rccl|miopen|MIOpen|composable_kernel|hsa-runtime64|amd_comgr|hsakmt)$")
ROCM_HEADER = re.compile(r"^(?:hip(?:blas|blaslt|cub|fft|rand|sparse|solver|_bf16)\w*|roc\w+|rccl|miopen|thrust)/")
STD = re.compile(r"""(?P<token>-std=(?:c|gnu)\+\+(?:11|14|17)|/std:c\+\+(?:14|17))|CMAKE_CXX_STANDARD\s+(?P<cmake>1[147])""")


@dataclass(frozen=True)
class Evidence:
    """Where a trap was seen: a build file's line, a log's line, or a check's finding."""

    where: str  # "setup.py:12", "log:345", "check kernels-are-rocm"
    text: str  # the line (or finding) itself
    value: str | None = None  # what the fix is made from: a variable, a flag, a module, a package
    file: str | None = None  # the build file the fix edits
    also: tuple[SourceEdit, ...] = ()  # the places one fix edits across the sources (warp masks, includes)
    keep: tuple[str, ...] = ()  # what stands before a match the fix leaves as it is (a probe that asks the device)


@dataclass
class BuildFiles:
    """A tree's build files, read once for every detector."""

    tree: Path
    setup: list[str] = field(default_factory=list)  # setup.py's lines
    cmake: list[str] = field(default_factory=list)  # the top CMakeLists.txt's lines
    torch: TorchReading | None = None
    env: list[EnvRead] = field(default_factory=list)  # what setup.py reads from the environment (any package)

    @classmethod
    def read(cls, tree: Path, torch: TorchReading | None | bool = True) -> BuildFiles:
        """`torch`: the tree's torch reading when the caller already made it (True: read it here)."""
        setup, cmake = tree / "setup.py", tree / "CMakeLists.txt"
        env = read_python(tree, setup).env if setup.is_file() else []
        reading = read_torch(tree) if torch is True else torch if isinstance(torch, TorchReading) else None
        return cls(tree, setup.read_text(errors="replace").splitlines() if setup.is_file() else [],
                   cmake.read_text(errors="replace").splitlines() if cmake.is_file() else [], reading, env)

    @functools.cached_property
    def sources(self) -> dict[str, str]:
        """The tree's C++/CUDA/HIP sources, relative path -> text: read once, for the detectors that look at
        every source (lane masks, CUDA-only includes, kernels cast to pointers)."""
        return read_sources(self.tree)

    @functools.cached_property
    def helpers(self) -> dict[str, list[str]]:
        """The tree's own Python modules setup.py imports or loads (relative path -> lines): where a package
        keeps its compiler flags outside setup.py (deformops' core/configs.py)."""
        setup = self.tree / "setup.py"
        if not self.setup or not setup.is_file():
            return {}
        modules = self.torch.modules if self.torch is not None else local_modules(self.tree, setup)
        return {rel: (self.tree / rel).read_text(errors="replace").splitlines() for rel in modules}

    def lines(self) -> list[tuple[str, int, str]]:
        return [("setup.py", n, t) for n, t in enumerate(self.setup, 1)] + \
               [("CMakeLists.txt", n, t) for n, t in enumerate(self.cmake, 1)] + \
               [(rel, n, t) for rel, lines in self.helpers.items() for n, t in enumerate(lines, 1)]


@dataclass(frozen=True)
class Trap:
    id: str
    title: str
    why: str
    fix: Callable[[Evidence | None, Evidence | None], Fix | None]  # (build files' evidence, failure's) -> fix
    log: tuple[str, ...] = ()  # regexes on a failed log's lines; a group named value feeds the fix
    findings: tuple[str, ...] = ()  # finding codes of a failed check it explains (with build-file evidence)
    files: Callable[[BuildFiles], Evidence | None] | None = None  # the detector on the build files
    # Where the build files hold what a failure names (the flag clang refused): default, `files`.
    locate: Callable[[BuildFiles, re.Match[str]], Evidence | None] | None = None
    after_failure: Callable[[BuildFiles], Evidence | None] | None = None  # the build files' detector once it failed
    draft: bool = True  # the drafter applies its fix when the build files show it
    fixes: str = ""  # what kind of recipe data the fix is, for the reference
    names: str = ""  # what the value a log detector takes is (the report shows it): "blocked host", ...
    # Its log pattern is wider than the trap (any atomicAdd without an overload): where the build files were read
    # and its locate finds no place, the failure is not this trap's, and it is not named.
    placed: bool = False
    # The compiler names each of its places (one error per line): the locate runs on every line the log pattern
    # matches, and one fix edits them all, rather than one try per place.
    every: bool = False

    def on_log(self, line: str, alive: tuple[Needled, ...] | None = None) -> re.Match[str] | None:
        """The first of its patterns (or of those `alive`, the ones the whole log can match) `line` matches."""
        patterns = alive if alive is not None else tuple(needled(p) for p in self.log)
        return next((m for p in patterns for m in [p.search(line)] if m), None)


# -- detectors on the build files ------------------------------------------------------------------------

def old_standard(files: BuildFiles) -> Evidence | None:
    """A C++ standard below 20 that setup.py (of a torch extension) or CMake asks for."""
    if files.torch is None:
        return None
    found = []
    for name, number, text in files.lines():
        if name == "CMakeLists.txt" and not files.torch.cmake:
            continue  # a CMakeLists.txt setup.py never runs (a C++ API build beside the extension)
        if text.lstrip().startswith("#"):
            continue
        for match in STD.finditer(text):  # each: torch-ans writes "/std:c++17" if win32 else "-std=c++17"
            found.append(Evidence(f"{name}:{number}", text.strip(), match.group("token") or match.group(0), name))
    # MSVC's /std:c++17 (fussim's Windows branch) only where nothing gcc or hipcc reads asks for one
    return next((e for e in found if not (e.value or "").startswith("/")), found[0] if found else None)


CMAKE_STANDARD = r"CXX_STANDARD(\s+\"?)1[147]\b"
HIP_STANDARD = "# rocbuild (trap cxx20-for-torch): torch needs C++20 of HIP sources too\nset(CMAKE_HIP_STANDARD 20)\n"


def cmake_standard(files: BuildFiles) -> Evidence | None:
    """Once a build met torch's #error: old_standard, or else a C++ standard below 20 in any CMake file of the tree
    (attention-kernels' cmake/utils.cmake sets a target's CXX_STANDARD 17), and the HIP standard a CMake project
    against torch leaves to clang's default (C++17) when it sets none."""
    found = old_standard(files)
    if found is not None:
        return found
    edits = []
    for rel, text in cmake_files(files.tree):
        match = re.search(CMAKE_STANDARD, text)
        if match is not None:
            number = line_of(text, match.start())
            edits.append(SourceEdit(rel, number, text.splitlines()[number - 1].strip(), CMAKE_STANDARD,
                                    r"CXX_STANDARD\g<1>20", True))
    top = "\n".join(files.cmake)
    project = re.search(r"(?im)^[ \t]*project[ \t]*\(", top)
    if project is not None and re.search(r"find_package\s*\(\s*Torch\b|\bHIP\b", top) and "HIP_STANDARD" not in top:
        number = top.count("\n", 0, project.start()) + 1
        edits.append(SourceEdit("CMakeLists.txt", number, files.cmake[number - 1].strip(),
                                r"(?i)^(?=[ \t]*project[ \t]*\()", HIP_STANDARD, True))
    return _in_sources(edits)


def force_unset(files: BuildFiles) -> Evidence | None:
    """A force variable (FORCE_CUDA, ...) the reading leaves unset, read in a test beside a GPU probe or
    through a Python variable: without it a GPU-less builder builds CPU-only, or hands .cu files to g++."""
    torch = files.torch
    if torch is None:  # a setup.py that runs hipcc itself: its force variable, as it compares it
        read = next((r for r in files.env if FORCE.search(r.name)), None)
        return Evidence(read.where, f"{read.name} read at {read.where}", f"{read.name}={read.on or '1'}") if read else None
    gated = {name for reads in torch.gpu_reads for name in reads}
    for var in torch.variables:
        if var.kind == "force" and (FORCE.search(var.name) or AUTO_CUDA.search(var.name)) and \
                "CUDA-only flags" not in var.why and (
                var.name in gated or var.value is not None):
            on = var.value or torch.on_values.get(var.name) or "1"
            return Evidence(var.where, f"{var.name} read at {var.where}", f"{var.name}={on}")
    return None


def gpu_probe(files: BuildFiles) -> Evidence | None:
    """A GPU probe in setup.py (torch.cuda.is_available(), torch.has_cuda) that no force variable can overrule."""
    torch = files.torch
    if torch is None:
        return None
    forced = {v.name for v in torch.variables if v.kind == "force"}
    for where, reads in zip(torch.gpu_tests, torch.gpu_reads, strict=True):
        if where.startswith("setup.py:") and not forced & set(reads):
            number = int(where.split(":")[1])
            # cpp_extension's CUDA_HOME is None on a ROCm torch (no nvcc): a test of it goes with the probe.
            keep = _device_asked(files.setup)
            probes = (["torch.cuda.is_available()"] if _probes_left(files.setup, keep) else []) + (
                ["CUDA_HOME is not None"] if any("CUDA_HOME is not None" in line for line in files.setup) else [])
            if not probes:  # each probe is followed by questions to the device, and stays
                return None
            return Evidence(where, files.setup[number - 1].strip(), "|".join(probes), "setup.py", keep=keep)
    for number, line in enumerate(files.setup, 1):
        if "torch.has_cuda" in line:
            return Evidence(f"setup.py:{number}", line.strip(), "torch.has_cuda", "setup.py")
    return None


DEVICE_QUERY = re.compile(r"\btorch\.cuda\.(?:current_device|get_device_name|get_device_capability|get_device_properties)\(")


def _device_asked(setup: list[str]) -> tuple[str, ...]:
    """What stands before each `torch.cuda.is_available()` that the next lines follow with a question to the device
    (stainx's `self.cuda_available = torch.cuda.is_available()`, then `torch.cuda.current_device()`): made True, it
    would ask a GPU there is none of; left as it is, the package takes its own no-GPU path there."""
    kept = []
    for number, line in enumerate(setup):
        at = line.find("torch.cuda.is_available()")
        if at < 0:
            continue
        if line.lstrip().startswith(("if ", "elif ")):
            # gimbal-engine's `if torch.cuda.is_available():` then get_device_capability(0), to pick an arch: its
            # block builds nothing, so the no-GPU path is kept; a block that builds the extension is made true
            block = _block(setup, number)
            if any(DEVICE_QUERY.search(inner) for inner in block) and \
                    not any(re.search(r"Extension\s*\(|ext_modules", inner) for inner in block):
                kept.append(line[:at])
        elif any(DEVICE_QUERY.search(after) for after in setup[number + 1:number + 12]):
            kept.append(line[:at])
    return tuple(kept)


def _probes_left(setup: list[str], keep: tuple[str, ...]) -> bool:
    """Whether a `torch.cuda.is_available()` stands where no kept prefix precedes it (the fix's edit has a match)."""
    return any(not any(line[:at].endswith(before) for before in keep)
               for line in setup for at in [m.start() for m in re.finditer(r"torch\.cuda\.is_available\(\)", line)])


def _block(lines: list[str], number: int) -> list[str]:
    """The lines of the block the statement at `number` (0-based) opens: those indented deeper, up to the first
    that is not."""
    indent = len(lines[number]) - len(lines[number].lstrip())
    block = []
    for line in lines[number + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    return block


# What a ROCm torch says to a setup.py that tests for CUDA's toolkit: neither is set, and cpp_extension
# hipifies and compiles the CUDA sources all the same.
TOOLKIT_TESTS = {"CUDA_HOME is not None": "True", "torch.version.cuda is not None": "True",
                 "CUDA_HOME is None": "False", "torch.version.cuda is None": "False",
                 # a CUDA torch told by its version's local label (megablocks': `'cu' in torch.__version__`)
                 **{f"{q}{tag}{q} in torch.__version__": "True" for q in "'\"" for tag in ("cu", "+cu")}}


# A CUDA arch variable of setup.py's own, read before it asks the GPU (mhc-cuda's CUDA_ARCH, then
# `torch.cuda.get_device_capability()`; gimbal-engine's TORCH_CUDA_ARCH_LIST): set, the probe
# is never reached. Its value is CUDA's, in the variable's own form; a ROCm torch takes its archs from
# PYTORCH_ROCM_ARCH, and the -gencode flags it may make are cuda-flag-for-hipcc's.
CUDA_ARCH_VARIABLE = re.compile(r"^(?:\w+_)?CUDA_ARCH(?:S|_LIST)?$")
PROBE_AFTER = 10  # lines: from reading the variable to the probe it stands in for


def arch_before_probe(files: BuildFiles) -> Evidence | None:
    """setup.py reads a CUDA arch variable of its own and, in the lines after, asks the GPU
    (torch.cuda.is_available(), torch.cuda.get_device_capability())."""
    if files.torch is None:
        return None
    for read in files.env:
        if not (CUDA_ARCH_VARIABLE.match(read.name) and read.where.startswith("setup.py:")):
            continue
        number = int(read.where.split(":")[1])
        after = files.setup[number:number + PROBE_AFTER]
        if any("torch.cuda.is_available()" in line or DEVICE_QUERY.search(line) for line in after):
            value = "8.0" if read.name.endswith("_LIST") else "80"
            return Evidence(read.where, files.setup[number - 1].strip(), f"{read.name}={value}")
    return None


def cuda_toolkit_tests(files: BuildFiles) -> Evidence | None:
    """setup.py (with no ROCm path of its own) builds its CUDA extension only where CUDA_HOME or
    torch.version.cuda is set; a test gpu-probe-at-build already turns true is left to it. `CUDA_HOME is not
    None` alone is not enough: beside a GPU probe it is that trap's, and in `(probe and CUDA_HOME is not None)
    or force` the force variable suffices."""
    if files.torch is None or files.torch.rocm_aware:
        return None

    def has(test: str, line: str) -> bool:  # as the fix's edit finds it (not inside a longer name)
        return re.search(_qualified(test), line) is not None

    # (an `assert CUDA_HOME is not None` decides nothing, it stops the build: cuda-home-as-path's)
    code = [(n, line) for n, line in enumerate(files.setup, 1) if not line.lstrip().startswith("#")
            and not CUDA_HOME_ASSERTED.match(line)]
    probe = gpu_probe(files)
    taken = set(probe.value.split("|")) if probe and probe.value else set()
    tests = [t for t in TOOLKIT_TESTS if t not in taken and any(has(t, line) for _, line in code)]
    # `CUDA_HOME is not None` alone decides where nothing else can (torchdtw's `use_cuda = CUDA_HOME is not None`)
    steered = probe is not None or files.torch.gpu_tests or any(v.kind == "force" for v in files.torch.variables)
    if not tests or (not set(tests) & set(list(TOOLKIT_TESTS)[1:]) and steered):
        return None
    number, line = next((n, line) for n, line in code if any(has(t, line) for t in tests))
    return Evidence(f"setup.py:{number}", line.strip(), "|".join(tests), "setup.py")


def force_any(files: BuildFiles) -> Evidence | None:
    """After a CPU-only build: any force variable setup.py reads, even one the draft left unset because its
    branch passes CUDA-only flags (the failure those flags then meet has a trap of its own)."""
    found = force_unset(files)
    if found is not None or files.torch is None:
        return found
    var = next((v for v in files.torch.variables if v.kind == "force" and FORCE.search(v.name)), None)
    if var is None:
        return None
    on = files.torch.on_values.get(var.name) or "1"
    return Evidence(var.where, f"{var.name} read at {var.where}", f"{var.name}={on}")


# What `nvcc -V` prints, as a stand-in for the call that asks it: CUDA 12.4 passes the version tests apex's
# setup.py and its copies make (>= 11.0 to build at all, >= 11.2 for --threads) without claiming the newest.
NVCC_VERSION = "12.4"
NVCC_ANSWER = f"Cuda compilation tools, release {NVCC_VERSION}, V{NVCC_VERSION}.131"
# nvcc named in the list, or a variable named for it (stable-fast's `nvcc_bin = ... cuda_dir + "/bin/nvcc"`, then
# `subprocess.check_output([nvcc_bin, "-V"], universal_newlines=True)`)
NVCC_VERSION_CALL = re.compile(r"""subprocess\.check_output\(\s*\[(?:[^\]]*nvcc["'][^\]]*|\s*(?i:\w*nvcc\w*)\s*,\s*)"""
                               r"""["'](?:-V|--version)["']\s*\][^()]*\)""")


def nvcc_probe(files: BuildFiles) -> Evidence | None:
    """setup.py runs nvcc to decide whether to build its CUDA extension (ROCm has none, so it builds CPU-only)."""
    if files.torch is None:
        return None
    for number, line in enumerate(files.setup, 1):
        match = re.search(r"""(["'])nvcc\1""", line)
        if match and re.search(r"\b(?:call|run|check_output|check_call|Popen|which)\b", line) \
                and not NVCC_VERSION_CALL.search(line):  # a version asked for: nvcc-version-probe answers it
            return Evidence(f"setup.py:{number}", line.strip(), match.group(0), "setup.py")
    return None


# An extension class no torch has, imported in a try (torch-ans: ROCMExtension), whose `except ImportError` leaves
# None; the ROCm branch then falls back to a CppExtension, which compiles the .cu files unhipified.
PHANTOM_EXTENSION = re.compile(r"^\s*(?P<name>\w*(?:ROCM|ROCm|Rocm|HIP|Hip)\w*Extension)\s*=\s*None\s*(?:#.*)?$")


def phantom_extension(files: BuildFiles) -> Evidence | None:
    """setup.py imports a ROCm extension class torch.utils.cpp_extension does not have (ROCMExtension), set to None
    when the import fails, beside CUDAExtension (which is a ROCm torch's ROCm extension: it hipifies)."""
    setup = "\n".join(files.setup)
    if files.torch is None or not re.search(r"\bCUDAExtension\b", setup):
        return None
    for number, line in enumerate(files.setup, 1):
        match = PHANTOM_EXTENSION.match(line)
        if match and re.search(rf"import[^\n]*\b{match.group('name')}\b", setup):
            return Evidence(f"setup.py:{number}", line.strip(), match.group("name"), "setup.py")
    return None


# A command pip's backend never passes: setuptools' build_meta runs `setup.py bdist_wheel` (and egg_info, dist_info).
ARGV_GATE = re.compile(r"""(["'])(?:build_ext|build|install|develop)\1\s+in\s+sys\.argv(?:\[\s*1\s*:\s*\])?""")


def argv_gate(files: BuildFiles) -> Evidence | None:
    """setup.py builds its extensions only when its command line names a command pip never runs
    (`needs_ext_modules = 'build_ext' in sys.argv`, torch-llm-kernels'): a wheel pip builds holds none."""
    for number, line in enumerate(files.setup, 1):
        match = ARGV_GATE.search(line)
        if match and not line.lstrip().startswith("#"):
            return Evidence(f"setup.py:{number}", line.strip(), match.group(0), "setup.py")
    return None


LIMITED_API = re.compile(r"\bpy_limited_api\s*=\s*True\b")
PYBIND11 = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:torch/extension\.h|torch/python\.h|pybind11/)", re.MULTILINE)


def limited_api_with_pybind11(files: BuildFiles) -> Evidence | None:
    """A torch extension built for Python's limited API (`py_limited_api=True`, which makes torch add
    -DPy_LIMITED_API to every compile, hipcc's too) whose sources include pybind11 (torch/extension.h)."""
    if files.torch is None:
        return None
    line = next(((n, t) for n, t in enumerate(files.setup, 1) if LIMITED_API.search(t) and not t.lstrip().startswith("#")),
                None)
    uses = next((rel for rel, text in sorted(files.sources.items()) if PYBIND11.search(text)), None)
    if line is None or uses is None:
        return None
    setup = "\n".join(files.setup)
    edits = tuple(SourceEdit("setup.py", line[0], line[1].strip(), find, with_, True) for find, with_ in FULL_API
                  if re.search(find, setup))
    return Evidence(f"setup.py:{line[0]}", line[1].strip(), uses, "setup.py", also=edits)


# The limited API undone in setup.py: the extension's flag, a -DPy_LIMITED_API of its own, bdist_wheel's abi3 tag.
FULL_API = ((LIMITED_API.pattern, "py_limited_api=False"),
            (r"""["']-DPy_LIMITED_API=\w+["']\s*,?[ \t]*""", ""),
            (r"""(["']py_limited_api["']\s*:\s*)["']cp\d+["']""", r"\g<1>False"))


def _compiles_itself(files: BuildFiles) -> bool:
    """Whether the sdist's own build compiles something: an extension in setup.py, or a top CMakeLists.txt."""
    # DeepSpeed's `ext_modules = []`, then `ext_modules.append(builder.builder())` under DS_BUILD_OPS
    return bool(files.cmake) or re.search(r"Extension\s*\(|cpp_extension|ext_modules\s*=\s*\[\s*\w"
                                          r"|ext_modules\s*(?:\.\s*(?:append|extend)\s*\(|\+=)",
                                          "\n".join(files.setup)) is not None


def nested_setup(files: BuildFiles) -> Evidence | None:
    """The sdist's own build compiles nothing, and a setup.py in a folder of it builds a torch extension that
    nothing runs (tiny-torch-nevmenko's tiny_torch/setup.py)."""
    if _compiles_itself(files):
        return None
    for path in sorted(files.tree.glob("*/**/setup.py")):
        text = path.read_text(errors="replace")
        match = re.search(r"^.*\b(?:CUDA|Cpp)Extension\s*\(.*$", text, re.MULTILINE)
        if match:
            rel = path.relative_to(files.tree).as_posix()
            return Evidence(f"{rel}:{text.count(chr(10), 0, match.start()) + 1}", match.group(0).strip(), rel, rel)
    return None


PREBUILT = (".so", ".dll", ".dylib", ".pyd")


def prebuilt_binary(files: BuildFiles) -> Evidence | None:
    """The sdist ships a library built elsewhere beside CUDA sources its build never compiles
    (deepgpr's lib/deepgpr.so and deepgpr.cu, loaded at run time): that library is CUDA's."""
    if _compiles_itself(files):
        return None
    kernels = [rel for rel in files.sources if rel.endswith((".cu", ".cuh"))]
    # (not what a build made: a failed build's tree holds its own build/lib.* outputs)
    built = sorted(rel for p in files.tree.rglob("*") for rel in [p.relative_to(files.tree).as_posix()]
                   if p.suffix in PREBUILT and not SKIP_DIRS.intersection(rel.split("/")) and p.is_file()
                   and not p.is_symlink())
    if not kernels or not built:
        return None
    return Evidence(built[0], f"{', '.join(built[:3])} shipped prebuilt beside {kernels[0]}", built[0], built[0])


# Another setup script's install, run by setup.py: `python setup_cuda.py install` in a string, or its argv
SIDE_INSTALL = re.compile(r"""(?P<script>[\w./-]*setup\w*\.py)["']?\s*,?\s*["']?(?:install|develop)\b""")


def kernels_installed_aside(files: BuildFiles) -> Evidence | None:
    """setup.py runs another setup script's install (hqq's `os.system("cd hqq/kernels; python setup_cuda.py
    install")`, from its egg_info command): that script's extension goes into the python running the build."""
    if not any(re.search(r"\bos\.system\b|\bsubprocess\.", line) for line in files.setup):
        return None
    for number, line in enumerate(files.setup, 1):
        match = SIDE_INSTALL.search(line)
        if match and not line.lstrip().startswith("#") and match.group("script").lstrip("./") != "setup.py":
            return Evidence(f"setup.py:{number}", line.strip(), match.group("script"), "setup.py")
    return None


# The command-line flags of apex's shape that turn a build's kernels on (not its optional features: --xentropy)
KERNEL_FLAG = re.compile(r"--(?:cpp|cuda|gpu|hip)_?(?:ext|extension|kernels?)?")


def argv_flags(files: BuildFiles) -> Evidence | None:
    """setup.py builds its extensions only for flags on its own command line (apex and its copies:
    `if "--cuda_ext" in sys.argv: sys.argv.remove("--cuda_ext"); ext_modules.append(CUDAExtension(...))`), which pip
    passes only as `--config-settings=--build-option=...`: the flags that turn its kernels on."""
    if files.torch is None:
        return None
    try:
        module = ast.parse("\n".join(files.setup))
    except (SyntaxError, ValueError, RecursionError):
        return None
    found: dict[str, int] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.If) and _builds_extension(node.body):
            for flag in _argv_tests(node.test):
                found.setdefault(flag, node.lineno)
    flags = [f for f in found if KERNEL_FLAG.fullmatch(f)]
    if not flags:
        return None
    line = min(found[f] for f in flags)
    return Evidence(f"setup.py:{line}", files.setup[line - 1].strip(), " ".join(flags), "setup.py")


def _argv_tests(test: ast.expr) -> list[str]:
    """The flags a test looks for in sys.argv: `"--x" in sys.argv`, joined by `or`."""
    return [n.left.value for n in ast.walk(test) if isinstance(n, ast.Compare) and isinstance(n.left, ast.Constant)
            and isinstance(n.left.value, str) and n.left.value.startswith("--") and isinstance(n.ops[0], ast.In)
            and isinstance(n.comparators[0], ast.Attribute) and n.comparators[0].attr == "argv"]


def _builds_extension(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) and (n.func.id if isinstance(n.func, ast.Name) else
                                            n.func.attr if isinstance(n.func, ast.Attribute) else "")
               in ("CUDAExtension", "CppExtension") for statement in body for n in ast.walk(statement))


def version_suffix(files: BuildFiles) -> Evidence | None:
    """setup.py adds to its version unless a variable is set (torch-encoding: `if not getenv('RELEASE'):
    version += today.strftime("b%Y%m%d")`): the wheel is then not the release's version."""
    try:
        module = ast.parse("\n".join(files.setup))
    except (SyntaxError, ValueError, RecursionError):
        return None
    for node in ast.walk(module):
        name = _unset_test(node.test) if isinstance(node, ast.If) else None
        if name and isinstance(node, ast.If) and _adds_to_version(node.body):
            return Evidence(f"setup.py:{node.lineno}", files.setup[node.lineno - 1].strip(), name, "setup.py")
    return None


def _unset_test(test: ast.expr) -> str | None:
    """The variable a test asks to be unset: `not getenv('X')`, `not environ.get('X')`, `getenv('X') is None`,
    `'X' not in environ`."""
    def read(call: ast.expr) -> str | None:
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args
                and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)):
            return None
        owner = call.func.value  # getenv, or the environment's get (not any dict's)
        environ = isinstance(owner, ast.Attribute) and owner.attr == "environ" or \
            isinstance(owner, ast.Name) and owner.id == "environ"
        return call.args[0].value if call.func.attr == "getenv" or (call.func.attr == "get" and environ) else None

    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return read(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
            return read(test.left)
        if isinstance(op, ast.NotIn) and isinstance(test.left, ast.Constant) and isinstance(test.left.value, str) \
                and isinstance(right, ast.Attribute) and right.attr == "environ":
            return test.left.value
    return None


def _adds_to_version(body: list[ast.stmt]) -> bool:
    """Whether `body` adds to a variable named *version* (`version += ...`, `version = version + ...`)."""
    for node in (n for statement in body for n in ast.walk(statement)):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and "version" in node.target.id.lower():
            return True
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) and isinstance(node.value.left, ast.Name) \
                and "version" in node.value.left.id.lower() \
                and any(isinstance(t, ast.Name) and t.id == node.value.left.id for t in node.targets):
            return True
    return False


def nvcc_build(files: BuildFiles) -> Evidence | None:
    """setup.py compiles its .cu sources with nvcc itself (`cmd = ['nvcc'] + flags + [source, '-o', out]`,
    cuda-kernels'), not through torch's cpp_extension, so nothing hipifies them."""
    for number, line in enumerate(files.setup, 1):
        if re.search(r"""\[\s*["']nvcc["']\s*(?:\]\s*\+|,)""", line) and not re.search(r"""["'](?:-V|--version)["']""", line):
            return Evidence(f"setup.py:{number}", line.strip(), "nvcc", "setup.py")
    return None


def nvcc_version_probe(files: BuildFiles) -> Evidence | None:
    """setup.py asks nvcc for CUDA's version (`subprocess.check_output([cuda_dir + "/bin/nvcc", "-V"], ...)`,
    apex's get_cuda_bare_metal_version and its copies): there is no nvcc, and CUDA_HOME is None on a ROCm torch."""
    if files.torch is None:
        return None
    setup = "\n".join(files.setup)
    call = NVCC_VERSION_CALL.search(setup)  # on one line, or over several (torch-lap-cuda's)
    if call is None:
        return None
    text = re.search(r"universal_newlines\s*=\s*True|text\s*=\s*True|encoding\s*=", call.group(0))
    answer = f'"{NVCC_ANSWER}"' if text else f'b"{NVCC_ANSWER}"'
    number = setup.count("\n", 0, call.start()) + 1
    return Evidence(f"setup.py:{number}", files.setup[number - 1].strip(), f"{call.group(0)}|{answer}", "setup.py")


def exec_into_locals(files: BuildFiles) -> Evidence | None:
    """setup.py runs `exec(code)` in a function, then reads what it defined from `locals()[...]` (the version,
    in OpenMMLab's setup.py and its copies): from Python 3.13 (PEP 667) exec writes into a snapshot of the
    function's locals, and the read raises KeyError."""
    found: list[SourceEdit] = []
    for number, line in enumerate(files.setup, 1):
        call = _lone_exec(line)
        reads = [(n, text.strip()) for n, text in enumerate(files.setup[number:number + 6], number + 1)
                 if "locals()[" in text]
        if call is None or not reads:
            continue
        found.append(SourceEdit("setup.py", number, line.strip(), line.strip(),
                                f"_exec_ns = {{}}; exec({call}, _exec_ns)", False))
        found += [SourceEdit("setup.py", n, text, text, text.replace("locals()[", "_exec_ns["), False) for n, text in reads]
    return _in_sources(found)


def _lone_exec(line: str) -> str | None:
    """The code of an `exec(code)` statement with no namespace of its own."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "exec" and len(node.value.args) == 1 and not node.value.keywords):
        return None
    return ast.get_source_segment(line.strip(), node.value.args[0])


# nvcc's options that take their value as the next argument.
VALUE_OPTIONS = frozenset({"--threads", "-t", "--maxrregcount", "-maxrregcount", "--gpu-architecture", "-arch",
                           "-gencode", "--generate-code", "-code", "--gpu-code", "-Xptxas", "--ptxas-options",
                           "-Xcompiler", "--compiler-options", "-ccbin", "--compiler-bindir", "--default-stream",
                           "-Xnvlink", "--nvlinker-options", "--split-compile",
                           # front-end diagnostics by number (gsplat: "-diag-suppress", "20012,186")
                           *(f"{dashes}diag{sep}{kind}" for dashes in ("-", "--") for sep in ("-", "_")
                             for kind in ("suppress", "warn", "error")),
                           "-Xcudafe", "--cudafe-options", "-Xfatbin", "--fatbin-options"})
# nvcc's options that hand their value, a flag itself, to another tool (the host compiler, ptxas, nvlink).
PASSED_ON = frozenset({"-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xnvlink", "--nvlinker-options"})
# CUDA's own headers that hipify leaves as they are, and what HIP has in their place.
CUDA_HEADERS = {"device_atomic_functions.h": "hip/hip_runtime.h", "device_launch_parameters.h": "hip/hip_runtime.h",
                "device_functions.h": "hip/hip_runtime.h", "sm_60_atomic_functions.h": "hip/hip_runtime.h",
                "cuda_profiler_api.h": "hip/hip_runtime_api.h",
                # cuSOLVER's dense API: torch's hipify maps its names (cusolverDnHandle_t) but not its header
                "cusolverDn.h": "hipsolver/hipsolver.h",
                # cuSPARSE's v2 header (turbo-gnn's), which only includes cusparse.h: hipify maps that one's names
                "cusparse_v2.h": "hipsparse/hipsparse.h"}


# CUDA headers of features HIP does not have (hipify maps the others): a failure to find one is not a
# ROCm package missing.
CUDA_ONLY_FEATURES = (r"cooperative_groups/(?:memcpy_async|reduce|scan)\.h|cuda/[\w/.]+|cuda_(?:pipeline|awbarrier)\w*\.h"
                      r"|mma\.h|cute/[\w/.]+|cutlass/[\w/.]+|nvtx3/[\w/.]+|nvToolsExt\.h"
                      # FP8 (arctic-inference's vLLM-style cache kernels): hip/hip_fp8.h names its types otherwise
                      r"|cuda_fp8\.h")


def vector_helpers_defined(files: BuildFiles) -> Evidence | None:
    """Arithmetic operators over CUDA's vector types (float3 operator+(float3, float3), helper_math.h's), or its
    scalar lerp, defined in any C++/CUDA/HIP source of the tree."""
    return _in_sources(vector_helpers(files.sources))


def cuda_headers(files: BuildFiles) -> Evidence | None:
    """An include of a CUDA-only header hipify leaves as it is (device_atomic_functions.h, ...), in any
    C++/CUDA source of the tree."""
    return _in_sources(cuda_includes(files.sources, CUDA_HEADERS))


def vendored_hip(files: BuildFiles) -> Evidence | None:
    """A header of a vendored library that has a HIP branch of its own (GLM's __HIP__), in a third_party/ (vendor/,
    external/, ...) folder of the tree, which the package's sources include or which names CUDA's macros hipify
    rewrites (__CUDACC__, CUDA_VERSION)."""
    return _in_sources(vendored_hip_headers(files.sources))


def c10_hip(files: BuildFiles) -> Evidence | None:
    """c10::hip's HIP names (c10::hip::HIPGuard, HIPCachingAllocator), which torch 2.11 dropped for c10::cuda's, in
    any C++/CUDA/HIP source of the tree."""
    return _in_sources(c10_hip_names(files.sources))


def rounding_calls(files: BuildFiles) -> Evidence | None:
    """A call of one of CUDA's directed-rounding additions, subtractions, multiplications or fmas (__fadd_ru, __dmul_rz,
    __fmaf_rd), in any C++/CUDA/HIP source of the tree."""
    return _in_sources(rounding_intrinsics(files.sources))


# find_package(NAME ... REQUIRED ...): CMake stops at the first it cannot find, so each missing one costs a try
FIND_REQUIRED = re.compile(r"(?i)\bfind_package\s*\(\s*(?P<name>[\w-]+)\b(?P<rest>[^)]*)\)")


def rocm_packages_in(texts: list[str]) -> list[str]:
    """The ROCm packages `texts` (CMake code) find REQUIRED, in order, each once; hip itself left out (the HIP
    language needs it, and every ROCm install has it)."""
    found = [m.group("name") for text in texts for m in FIND_REQUIRED.finditer(re.sub(r"#[^\n]*", "", text))
             if ROCM_PACKAGE.match(m.group("name")) and re.search(r"\bREQUIRED\b", m.group("rest"))
             and m.group("name").lower() != "hip"]
    return list(dict.fromkeys(found))


def rocm_packages_found(files: BuildFiles) -> Evidence | None:
    """The ROCm packages the tree's CMake files find REQUIRED, where the build runs CMake."""
    if files.torch is not None and not files.torch.cmake:
        return None
    cmake = cmake_files(files.tree)
    every = rocm_packages_in([text for _, text in cmake])
    # shown at the first file that finds one, on the line of its first
    for rel, text in cmake:
        names = rocm_packages_in([text])
        if names:
            number = next(n for n, line in enumerate(text.splitlines(), 1) if re.search(
                rf"(?i)\bfind_package\s*\(\s*{re.escape(names[0])}\b", line))
            return Evidence(f"{rel}:{number}", text.splitlines()[number - 1].strip(), ";".join(every), rel)
    return None


def header_not_packed(files: BuildFiles, match: re.Match[str]) -> Evidence | None:
    """The folder of the tree a missing header's path names (pulsar/ for "pulsar/global.h"), where that header is
    not: a folder of the package's own, packed without it."""
    header = match.group("value")
    folder = header.rsplit("/", 1)[0]
    found = sorted(p for p in files.tree.rglob(folder.rsplit("/", 1)[-1]) if p.is_dir()
                   and p.relative_to(files.tree).as_posix().endswith(folder) and not (p.parent / header).exists()
                   and not set(p.relative_to(files.tree).parts) & SKIP_DIRS)
    if not found or any(files.tree.rglob(header.rsplit("/", 1)[-1])):
        return None
    rel = found[0].relative_to(files.tree).as_posix()
    return Evidence(rel, f"{rel}/ holds no {header.rsplit('/', 1)[-1]}", header)


def prebuilt_cuda(files: BuildFiles) -> Evidence | None:
    """Shared objects packed in the tree that link CUDA's libraries (libcudart, libc10_cuda, libtorch_cuda), where
    the package compiles its kernels at run time (cpp_extension's load: prebuilt-cuda-binary is the other case)."""
    if files.torch is None or files.torch.jit is None:
        return None
    found: list[tuple[str, list[str]]] = []
    for path in sorted(files.tree.rglob("*.so*"))[:200]:
        rel = path.relative_to(files.tree)
        if set(rel.parts) & SKIP_DIRS or not path.is_file() or not re.search(r"\.so(?:\.[\d.]+)?$", path.name):
            continue
        cuda = [name for name in needed(path) if CUDA_LIB.match(name)]
        if cuda:
            found.append((rel.as_posix(), cuda))
    if not found:
        return None
    first, links = found[0]
    return Evidence(first, f"{first} links {', '.join(links)}", ";".join(rel for rel, _ in found))


def _remove_prebuilt(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or not files.value:
        return None
    names = files.value.split(";")
    return Edits(tuple(RemoveFile(name) for name in names), f"remove the CUDA binaries the sdist packs ({', '.join(names)})")


def host_only_functions(files: BuildFiles) -> Evidence | None:
    """A `#ifdef __CUDA_ARCH__` that alone makes a macro __host__ __device__, in any C++/CUDA/HIP source of the tree."""
    return _in_sources([edit for edit, _ in device_arch_guards(files.sources)])


def host_only_place(files: BuildFiles, match: re.Match[str]) -> Evidence | None:
    """The guards behind the function a note names as host-only: in the file that declares it, or where a macro that
    file uses is defined."""
    guards = device_arch_guards(files.sources)
    name = match.group("file").rsplit("/", 1)[-1]
    declaring = [text for rel, text in files.sources.items() if rel.rsplit("/", 1)[-1] == name]
    return _in_sources([edit for edit, macro in guards if edit.file.rsplit("/", 1)[-1] == name
                        or any(re.search(rf"\b{macro}\b", text) for text in declaring)])


def cg_reduce(files: BuildFiles) -> Evidence | None:
    """An include of CUDA's <cooperative_groups/reduce.h> (cg::reduce over a tile), in any C++/CUDA/HIP source of
    the tree."""
    return _in_sources(cg_reduce_includes(files.sources))


def half_switches(files: BuildFiles) -> Evidence | None:
    """A preprocessor test of __CUDA_NO_HALF_OPERATORS__ (or its CONVERSIONS, HALF2 kin), in any source of the tree."""
    return _in_sources(half_macros(files.sources))


def lane_mask_variables(files: BuildFiles) -> Evidence | None:
    """A lane mask kept in a 32-bit variable (`unsigned mask = __activemask()`) handed to a warp sync builtin, in
    any C++/CUDA/HIP source of the tree."""
    return _in_sources(variable_masks(files.sources))


def mask_place(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """The source whose warp call the compiler instantiated with a 32-bit mask (its note names torch's hipified
    copy: the fix goes into the original), or else what lane_mask_variables finds."""
    named = failure.groupdict().get("file")
    if named is None:
        return lane_mask_variables(files)
    for rel, text in files.sources.items():
        if "ROCBUILD_WARP32_MASKS" not in text and compiled_as(rel, named):
            return _in_sources([SourceEdit(rel, 1, f"{rel}: a warp call instantiated with an unsigned int mask",
                                           r"\A", WARP32, True)])
    return None


# C10_WARP_SIZE as a constant of host code (torchani's `constexpr int block_x = C10_WARP_SIZE;`, a kernel's template
# argument): a ROCm torch asks the device at run time there (at::cuda::warp_size()). Taken as 32 lanes, with the
# device compile for a wave64 GPU stopped, as lane-mask-variable-32bit's are.
WARP_SIZE_CONSTANT = r"(?P<head>\bconstexpr\s+(?:const\s+)?[\w:]+\s+\w+\s*=\s*)C10_WARP_SIZE\b(?!_)"
WARP32_SIZE = "\n".join([
    "#if !defined(ROCBUILD_WARP32_SIZE)  // rocbuild (trap warp-size-constant): C10_WARP_SIZE taken as 32 lanes",
    "#define ROCBUILD_WARP32_SIZE",
    "#if defined(__HIP_DEVICE_COMPILE__) && (defined(__GFX9__) || defined(__GFX8__) || defined(__GFX7__) || "
    "defined(__GFX6__))",
    "#error \"this code takes C10_WARP_SIZE as a constant of 32 lanes: build it for wave32 GPUs (RDNA) only\"",
    "#endif",
    "#endif",
    ""])


def warp_size_place(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """The source (torch's hipified copy named, the original edited) whose constexpr takes C10_WARP_SIZE."""
    for rel, text in files.sources.items():
        match = re.search(WARP_SIZE_CONSTANT, text)
        if match and "ROCBUILD_WARP32_SIZE" not in text and compiled_as(rel, failure.group("file")):
            number = line_of(text, match.start())
            return _in_sources([SourceEdit(rel, number, line_at(text, match.start()), r"\A", WARP32_SIZE, True),
                                SourceEdit(rel, number, "C10_WARP_SIZE as 32", WARP_SIZE_CONSTANT, r"\g<head>32", True)])
    return None


# CUDA's atomicAdd on a 16-bit float (__half, __nv_bfloat16; sm_70/sm_80 and up), which HIP's runtime does not declare:
# rocbuild's overloads, a compare-and-swap on the 32-bit word that holds the value, written first in the file.
ATOMIC_ADD_16 = "\n".join([
    "#if !defined(ROCBUILD_ATOMIC_ADD_16)  // rocbuild (trap atomic-add-16bit): HIP has no atomicAdd of a 16-bit float",
    "#define ROCBUILD_ATOMIC_ADD_16",
    "#if defined(__HIPCC__)",
    "#include <hip/hip_runtime.h>",
    "#include <hip/hip_fp16.h>",
    "#include <hip/hip_bf16.h>",
    "__device__ inline float rocbuild_float16_get(__half v) { return __half2float(v); }",
    "__device__ inline float rocbuild_float16_get(__hip_bfloat16 v) { return __bfloat162float(v); }",
    "__device__ inline void rocbuild_float16_set(__half* v, float f) { *v = __float2half(f); }",
    "__device__ inline void rocbuild_float16_set(__hip_bfloat16* v, float f) { *v = __float2bfloat16(f); }",
    "template <class T> __device__ inline T rocbuild_atomic_add_16(T* address, T val) {",
    "  const size_t at = reinterpret_cast<size_t>(address);",
    "  unsigned int* word = reinterpret_cast<unsigned int*>(at & ~size_t(3));",
    "  const unsigned int shift = (at & 2) ? 16u : 0u;",
    "  unsigned int old = *word, assumed;",
    "  T current;",
    "  do {",
    "    assumed = old;",
    "    unsigned short bits = static_cast<unsigned short>(assumed >> shift);",
    "    __builtin_memcpy(&current, &bits, 2);",
    "    T sum;",
    "    rocbuild_float16_set(&sum, rocbuild_float16_get(current) + rocbuild_float16_get(val));",
    "    __builtin_memcpy(&bits, &sum, 2);",
    "    old = atomicCAS(word, assumed, (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(bits) << shift));",
    "  } while (assumed != old);",
    "  return current;",
    "}",
    "__device__ inline __half atomicAdd(__half* address, __half val) { return rocbuild_atomic_add_16(address, val); }",
    "__device__ inline __hip_bfloat16 atomicAdd(__hip_bfloat16* address, __hip_bfloat16 val) {",
    "  return rocbuild_atomic_add_16(address, val);",
    "}",
    "#endif",
    "#endif",
    ""])
FLOAT16 = re.compile(r"\b(?:__half|half|__nv_bfloat16|nv_bfloat16|__hip_bfloat16|at::Half|at::BFloat16)\b")


def atomic_add_place(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """The source (its hipified copy named, the original edited) whose atomicAdd HIP has no overload for, where
    it works on 16-bit floats."""
    for rel, text in files.sources.items():
        if "ROCBUILD_ATOMIC_ADD_16" not in text and FLOAT16.search(text) and "atomicAdd" in text and \
                compiled_as(rel, failure.group("file")):
            at = text.index("atomicAdd")
            return _in_sources([SourceEdit(rel, line_of(text, at), line_at(text, at), r"\A", ATOMIC_ADD_16, True)])
    return None


# Thrust's algorithms and the header of each. CUDA's thrust headers include one another widely, so a source that
# includes <thrust/device_vector.h> can call thrust::sort; rocThrust's include less (torch-quiver).
THRUST_HEADERS = {
    **dict.fromkeys(("sort", "sort_by_key", "stable_sort", "stable_sort_by_key", "is_sorted"), "thrust/sort.h"),
    **dict.fromkeys(("reduce", "reduce_by_key"), "thrust/reduce.h"),
    **dict.fromkeys(("inclusive_scan", "exclusive_scan", "inclusive_scan_by_key", "exclusive_scan_by_key"),
                    "thrust/scan.h"),
    **dict.fromkeys(("copy", "copy_if", "copy_n"), "thrust/copy.h"),
    **dict.fromkeys(("unique", "unique_by_key", "unique_copy"), "thrust/unique.h"),
    **dict.fromkeys(("count", "count_if"), "thrust/count.h"),
    **dict.fromkeys(("find", "find_if"), "thrust/find.h"),
    **dict.fromkeys(("remove", "remove_if", "remove_copy_if"), "thrust/remove.h"),
    **dict.fromkeys(("lower_bound", "upper_bound", "binary_search", "equal_range"), "thrust/binary_search.h"),
    **dict.fromkeys(("max_element", "min_element", "minmax_element"), "thrust/extrema.h"),
    **{name: f"thrust/{name}.h" for name in ("sequence", "transform", "fill", "for_each", "gather", "scatter",
                                              "replace", "reverse", "tabulate", "transform_reduce", "generate")},
    "make_zip_iterator": "thrust/iterator/zip_iterator.h", "counting_iterator": "thrust/iterator/counting_iterator.h",
}


def thrust_place(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """The source (its hipified copy named, the original edited) calling Thrust's algorithms whose headers it does
    not include: each such header included first in it."""
    for rel, text in files.sources.items():
        if compiled_as(rel, failure.group("file")):
            used = {THRUST_HEADERS[n] for n in re.findall(r"\bthrust::(\w+)", text) if n in THRUST_HEADERS}
            headers = sorted(h for h in used if not re.search(rf"#\s*include\s*[<\"]{re.escape(h)}[>\"]", text))
            if not headers:
                return None
            at = text.index("thrust::")
            return _in_sources([SourceEdit(rel, line_of(text, at), line_at(text, at), r"\A",
                                           "".join(f"#include <{h}>\n" for h in headers), True)])
    return None


def void_arith_place(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """The line of the source (its hipified copy named, the original edited) the compiler named for arithmetic on
    a void*, that arithmetic written on a char pointer."""
    for rel, text in files.sources.items():
        if compiled_as(rel, failure.group("file")):
            found = byte_arithmetic(text, int(failure.group("line")))
            return _in_sources([SourceEdit(rel, found[0], found[1], found[1], found[2], False)]) if found else None
    return None


def hip_counterpart(cuda: str, hip: str) -> bool:
    """Whether `hip` is `cuda` under HIP's prefix (CUSPARSE_SPMM_ALG_DEFAULT and HIPSPARSE_SPMM_ALG_DEFAULT,
    cudaFoo and hipFoo, cublasBar and hipblasBar): the name hipify would have written, had it known it."""
    return (cuda.startswith("CU") and hip == "HIP" + cuda[2:]) or (
        cuda.startswith("cu") and hip in ("hip" + cuda[2:], "hip" + cuda[4:] if cuda.startswith("cuda") else ""))


# cuBLAS's GEMM-Ex calls given their compute type as a data type (`..., CUDA_R_64F, CUBLAS_GEMM_DEFAULT)`), which
# cuBLAS still takes; hipified, that is HIP_R_64F, and hipBLAS's v2 API (torch's cpp_extension builds with
# -DHIPBLAS_V2; ROCm 7's default) takes only a hipblasComputeType_t there. CUBLAS_COMPUTE_64F is right for both.
GEMM_EX_COMPUTE = r"\bCUDA_R_(16F|32F|64F|32I)(\s*,\s*CUBLAS_GEMM_\w+\s*\))"


def gemm_ex_compute_type(files: BuildFiles) -> Evidence | None:
    """The sources that call cublasGemm*Ex with a data type where its compute type goes (apex's mlp_cuda.cu)."""
    if files.torch is None:
        return None
    found = [SourceEdit(rel, line_of(text, m.start()), line_at(text, m.start()), GEMM_EX_COMPUTE,
                        r"CUBLAS_COMPUTE_\1\2", True)
             for rel, text in files.sources.items() if "GemmEx" in text or "GemmStridedBatchedEx" in text
             or "GemmBatchedEx" in text for m in [re.search(GEMM_EX_COMPUTE, text)] if m]
    return _in_sources(found)


# The calls of torch's C shim (the stable ABI's) for the GPU's stream, guards and allocator: torch declares them under
# USE_CUDA, which a ROCm torch's hipified headers test as USE_ROCM. cpp_extension defines USE_ROCM for each ROCm
# compile; a CMake build (openequivariance's stable module) does not, so the calls are undeclared.
SHIM_GPU_CALL = re.compile(r"\baoti_torch_(?:get_current_cuda_stream|create_cuda_guard|create_cuda_stream_guard|"
                           r"cuda_guard_set_index|delete_cuda_(?:stream_)?guard|cuda_caching_allocator_raw_\w+)\b")
SHIM_ROCM = "#ifndef USE_ROCM\n#define USE_ROCM 1  // torch's C shim declares its GPU calls under it on ROCm\n#endif\n"


def shim_gpu_calls(files: BuildFiles) -> Evidence | None:
    """The sources that call the C shim's GPU functions, with USE_ROCM defined first in each (where the file does
    not test it already)."""
    if files.torch is None:
        return None
    return _in_sources([SourceEdit(rel, line_of(text, m.start()), line_at(text, m.start()), r"\A", SHIM_ROCM, True)
                        for rel, text in files.sources.items() if "USE_ROCM" not in text
                        for m in [SHIM_GPU_CALL.search(text)] if m])


def suggested_place(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """Each source that names the CUDA name the compiler suggested HIP's counterpart for, renamed."""
    cuda, hip = failure.group("value"), failure.group("hip")
    if not hip_counterpart(cuda, hip):
        return None
    name = re.compile(rf"\b{re.escape(cuda)}\b")
    return _in_sources([SourceEdit(rel, line_of(text, m.start()), line_at(text, m.start()), name.pattern, hip, True)
                        for rel, text in files.sources.items() for m in [name.search(text)] if m])


# setup.py's -DCUB_NS_QUALIFIER=::cuaev::cub (torchani, after torch's own CUB wrapping): CUB's names under a namespace
# of the package's own, which hipCUB has no counterpart for.
CUB_QUALIFIER = re.compile(r"CUB_NS_QUALIFIER=(?:::)?(?P<ns>[A-Za-z_]\w*)::cub\b")


def cub_namespace_wrapped(files: BuildFiles) -> Evidence | None:
    """CUB wrapped in a namespace of the package's own by its flags, and its sources naming CUB through it."""
    ns = next((m.group("ns") for _, _, text in files.lines() for m in [CUB_QUALIFIER.search(text)] if m), None)
    if ns is None:
        return None
    qualified = rf"(?:::)?\b{re.escape(ns)}::cub::"
    found = [SourceEdit(rel, line_of(text, m.start()), line_at(text, m.start()), qualified, "cub::", True)
             for rel, text in files.sources.items() for m in [re.search(qualified, text)] if m]
    return _in_sources(found)


# cooperative_groups' partitions and calls that HIP's cooperative groups do not have
CG_MISSING = "labeled_partition|binary_partition|memcpy_async|invoke_one|invoke_one_broadcast|wait_prior"


# CUDA's runtime headers, which hipcc meets only in a source torch did not hipify
MISSING_CUDA_HEADER = r"fatal error: '?cuda(?:_runtime(?:_api)?)?\.h'?:? (?:No such file or directory|file not found)"
CPP_EXTENSION = re.compile(r"\bCppExtension\s*\(")


def cpp_extension_only(files: BuildFiles) -> Evidence | None:
    """setup.py of a torch extension builds a CppExtension and names no CUDAExtension (torch-quiver's
    `CppExtension(..., with_cuda=True)` over .cu sources): torch hipifies the sources of a CUDAExtension alone."""
    if files.torch is None or any("CUDAExtension" in line for line in files.setup):
        return None
    at = next(((n, line) for n, line in enumerate(files.setup, 1) if CPP_EXTENSION.search(line)), None)
    return Evidence(f"setup.py:{at[0]}", at[1].strip(), "CppExtension", "setup.py") if at else None


OMP_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<omp\.h>", re.MULTILINE)


def omp_in_device_sources(files: BuildFiles) -> Evidence | None:
    """A CUDA/HIP source (which the HIP compiler's clang builds, host code and all) that includes <omp.h>."""
    for rel, text in files.sources.items():
        match = OMP_INCLUDE.search(text) if rel.endswith((".cu", ".cuh", ".hip")) else None
        if match:
            return Evidence(f"{rel}:{line_of(text, match.start())}", match.group(0).strip(), None, rel)
    return None


def host_bf16(files: BuildFiles) -> Evidence | None:
    """A .cpp source, which the host compiler builds, that includes CUDA's bf16 header (or HIP's), itself or through
    the tree's own headers."""
    found = host_bf16_include(files.sources)
    return Evidence(f"{found.file}:{found.line}", found.text, None, found.file) if found else None


def cublas_half(files: BuildFiles) -> Evidence | None:
    """CUDA sources that use `half`, and a cuBLAS include without cuda_fp16.h beside it, in any source of the tree."""
    return _in_sources(cublas_fp16_includes(files.sources))


# A CMake list of the Python versions a build accepts (vLLM's PYTHON_SUPPORTED_VERSIONS, in its forks too).
PYTHON_VERSIONS = re.compile(r"^\s*set\s*\(\s*\w*PYTHON\w*VERSIONS?\w*\s+"
                             r"(?P<list>(?:\"3\.\d+\"\s*)+|\"3\.\d+(?:;3\.\d+)+\")\s*\)", re.IGNORECASE)


def python_versions(files: BuildFiles) -> Evidence | None:
    """A list of the Python versions the top CMakeLists.txt accepts (set(PYTHON_SUPPORTED_VERSIONS "3.9" ...))."""
    for number, line in enumerate(files.cmake, 1):
        match = PYTHON_VERSIONS.match(line)
        if match is not None:
            return Evidence(f"CMakeLists.txt:{number}", line.strip(), match.group("list").strip(), "CMakeLists.txt")
    return None


def torch_cmake(files: BuildFiles) -> Evidence | None:
    """find_package(Torch) in the top CMakeLists.txt, where the build runs CMake (not a C++ API build beside a
    setup.py that never runs it)."""
    if files.torch is not None and not files.torch.cmake:
        return None
    found = _cmake_line(files, r"^\s*find_package\s*\(\s*Torch\b", unless=r"(?!)")
    if found is not None or not files.cmake:
        return found
    # a module the top CMakeLists.txt includes (k2-fsa's cmake/torch.cmake)
    return next((Evidence(f"{rel}:{number}", line.strip()) for rel, text in cmake_files(files.tree, ("*.cmake",))
                 for number, line in enumerate(text.splitlines(), 1)
                 if re.search(r"^\s*find_package\s*\(\s*Torch\b", line)), None)


# HIP_FOUND where torch's own CMake sets PYTORCH_FOUND_HIP (vLLM's forks of 2024: `if (NOT HIP_FOUND AND
# CUDA_FOUND)`, then `elseif(HIP_FOUND)`, else "Can't find CUDA or HIP installation").
HIP_FOUND = r"(?<![\w{$])HIP_FOUND\b(?!\s+OR\s+PYTORCH_FOUND_HIP)"


def hip_found(files: BuildFiles) -> Evidence | None:
    """A test of HIP_FOUND in the top CMakeLists.txt that finds torch, with no PYTORCH_FOUND_HIP in it."""
    if torch_cmake(files) is None:
        return None
    found = _cmake_line(files, r"^\s*(?:else)?if\s*\(.*" + HIP_FOUND, unless=r"\bPYTORCH_FOUND_HIP\b")
    return Evidence(found.where, found.text, None, "CMakeLists.txt") if found else None


# An upper bound in the package's declared Pythons (deformops' `requires-python = ">=3.12,<3.14"`).
PYTHON_BOUND = re.compile(r"""(?<![\w-])(?:requires-python|python_requires)\s*=\s*["'](?P<spec>[^"']*)["']""")
UPPER = r"\s*,\s*<=?\s*3\.\d+\s*|\s*<=?\s*3\.\d+\s*,\s*"


def python_bound(files: BuildFiles) -> Evidence | None:
    """An upper bound on Python (`<3.14`) in pyproject.toml's requires-python or setup.py's python_requires."""
    for name in ("pyproject.toml", "setup.py", "setup.cfg"):
        path = files.tree / name
        text = path.read_text(errors="replace") if path.is_file() else ""
        for match in PYTHON_BOUND.finditer(text):
            if re.search(UPPER, match.group("spec")):
                number = line_of(text, match.start())
                line = text.splitlines()[number - 1].strip()
                return Evidence(f"{name}:{number}", line, match.group("spec"), name)
    return None


# setup.py's own test of a source's suffix for .cu, in code that runs in build_ext (deformops names a .cu file's
# object <stem>.cuda.o so that it does not collide with <stem>.cpp's): torch has hipified the source to .hip by then.
CU_SUFFIX = r"""(?P<head>(?:splitext\([^()]*\)\[1\]|\.suffix))\s*==\s*(?P<q>["'])\.cu(?P=q)"""


def cu_suffix_test(files: BuildFiles) -> Evidence | None:
    """A test of a source's suffix for .cu in a setup.py that subclasses torch's BuildExtension."""
    setup = "\n".join(files.setup)
    if not re.search(r"\(\s*(?:\w+\.)*BuildExtension\s*\)", setup):
        return None
    for number, line in enumerate(files.setup, 1):
        if re.search(CU_SUFFIX, line):
            return Evidence(f"setup.py:{number}", line.strip(), None, "setup.py")
    return None


def other_forms(files: BuildFiles) -> Evidence | None:
    """A CUDA call HIP declares in another form (__floats2bfloat162_rn(a, b), cudaMalloc3DArray without its flags),
    in any C++/CUDA/HIP source of the tree."""
    return _in_sources(hip_forms(files.sources))


def renamed_api(files: BuildFiles) -> Evidence | None:
    """A call of a torch C++ name removed since (AT_CHECK, torch 1.5), in any C++/CUDA source of the tree."""
    return _in_sources(renamed_torch_api(files.sources))


def cucomplex(files: BuildFiles) -> Evidence | None:
    """cuComplex's names (cuFloatComplex, cuCrealf, make_cuFloatComplex), in any C++/CUDA source of the tree."""
    return _in_sources(cucomplex_names(files.sources))


def cudart_callback(files: BuildFiles) -> Evidence | None:
    """CUDART_CB written on a host callback, in any C++/CUDA source of the tree."""
    return _in_sources(cudart_cb(files.sources))


def eigen_member_templates(files: BuildFiles) -> Evidence | None:
    """Once clang asked for it: Eigen's member templates called with a template argument list in CUDA sources."""
    return _in_sources(member_templates(files.sources))


def device_trap(files: BuildFiles) -> Evidence | None:
    """A call of CUDA's device __trap(), in any C++/CUDA source of the tree."""
    return _in_sources(device_traps(files.sources))


def cuda_std(files: BuildFiles) -> Evidence | None:
    """libcu++'s cuda::std through headers the standard library has, in any C++/CUDA source of the tree."""
    return _in_sources(cuda_std_names(files.sources))


# CUDA's home handed to a path join in setup.py (evnn-pytorch's `include_dirs=[..., os.path.join(CUDA_HOME,
# 'include')]`), or kept in a variable that is then tested (orionvis' `cuda_home = CUDA_HOME`, then `if not
# cuda_home: raise`): None on a ROCm torch, where ROCm's home stands for it.
CUDA_HOME_ASSERTED = re.compile(r"(?P<call>^[ \t]*assert[ \t]+)(?P<home>(?:\w+\.)*CUDA_HOME)(?=[ \t]+is[ \t]+not[ \t]+None\b)",
                                re.MULTILINE)
CUDA_HOME_USED = (re.compile(r"(?P<call>\b(?:os\.path|osp|path)\.join\(\s*)(?P<home>(?:\w+\.)*CUDA_HOME)(?=\s*,)"),
                  # `cuda_home = CUDA_HOME`, or curegot's environ["CUDA_HOME"] = CUDA_HOME (None: a TypeError)
                  re.compile(r"(?P<call>^[ \t]*(?:[a-z_]\w*|os\.environ\[[^\]\n]+\])[ \t]*=[ \t]*)"
                             r"(?P<home>(?:\w+\.)*CUDA_HOME)(?=[ \t]*(?:#.*)?$)", re.MULTILINE),
                  # handed to a function of its own (apex's check_cuda_torch_binary_vs_bare_metal(CUDA_HOME), whose
                  # `cuda_dir + "/bin"` raises TypeError), or to os.path.exists; not to print() or str()
                  re.compile(r"(?P<call>(?<![\w.])(?!(?:print|str|repr|bool|type|isinstance|len|id)\()"
                             r"(?:\w+\.)*\w+\(\s*)(?P<home>(?:\w+\.)*CUDA_HOME)(?=\s*\))"),
                  # asserted (stable-fast's `assert CUDA_HOME is not None, "Cannot find CUDA installation..."`)
                  CUDA_HOME_ASSERTED)
ROCM_HOME_TOO = r'\g<call>(\g<home> or __import__("os").environ.get("ROCM_HOME", "/opt/rocm"))'


def cuda_home_used(files: BuildFiles) -> Evidence | None:
    """setup.py of a torch extension with no ROCm path joins CUDA_HOME into a path, keeps it in a variable, or
    asserts it."""
    if files.torch is None or files.torch.rocm_aware:
        return None
    found = [SourceEdit("setup.py", n, line.strip(), form.pattern, ROCM_HOME_TOO, True)
             for form in CUDA_HOME_USED for n, line in enumerate(files.setup, 1) if form.search(line)]
    firsts = {e.find: e for e in reversed(found)}  # one edit per form, shown at its first line
    return _in_sources(sorted(firsts.values(), key=lambda e: e.line))


def cusolver_status(files: BuildFiles) -> Evidence | None:
    """cuSOLVER's status type or codes (cusolverStatus_t, CUSOLVER_STATUS_SUCCESS), in any C++/CUDA source of the
    tree."""
    return _in_sources(cusolver_status_names(files.sources))


def launches_spaced(files: BuildFiles) -> Evidence | None:
    """A kernel launch spaced inside its chevrons (`k << <grid, block >> > (...)`), in any CUDA source of the tree."""
    return _in_sources(spaced_launches(files.sources))


def atomics_defined(files: BuildFiles) -> Evidence | None:
    """A float or double atomicMax/atomicMin the package defines itself, in any C++/CUDA source of the tree."""
    return _in_sources(atomic_overloads(files.sources))


def cub_left(files: BuildFiles) -> Evidence | None:
    """CUB's names (cub::DoubleBuffer) in a tree that includes CUB, in any C++/CUDA source."""
    return _in_sources(cub_names(files.sources))


def cuda_math_constants(files: BuildFiles) -> Evidence | None:
    """An include of CUDA's math_constants.h, or its CUDART_ constants, in any C++/CUDA source of the tree."""
    return _in_sources(math_constants(files.sources))


def ldg_loads(files: BuildFiles) -> Evidence | None:
    """Calls of __ldg, in any C++/CUDA source of the tree (once a build met one HIP has no overload for)."""
    return _in_sources(ldg_calls(files.sources))


def warp_masks(files: BuildFiles) -> Evidence | None:
    """A literal 32-bit full lane mask (0xffffffff) handed to a warp sync builtin, in a call or in a *MASK*
    macro or constant, in any C++/CUDA source of the tree."""
    return _in_sources(find_masks(files.sources))


# What hipify rewrites in a C++ file; a file without any of it keeps its name (torch writes no copy of it).
CUDA_TOKEN = re.compile(r"cuda|CUDA|\bcu[A-Z]\w+|\bTHC|<<<")
COMPILED = (".cu", ".cpp", ".cc", ".cxx")
# A setup.py that lists a folder's sources itself (inplace-abn: `for file in listdir(root_dir)`).
SCANS = re.compile(r"\b(?:listdir|glob|iglob|walk|scandir|iterdir|rglob)\(")


def hipify_collisions(files: BuildFiles) -> Evidence | None:
    """Two sources of one folder whose hipified versions compile to one object: x.cpp (hipified to
    x_hip.cpp) and x_cuda.cu (to x_hip.hip) both become x_hip.o, and the link meets every function twice.
    Where setup.py names the .cu file, or lists the folder's sources itself (listdir, glob, walk)."""
    setup = "\n".join(files.setup)
    changed = _hipify_changes(files.sources)
    by_object: dict[str, list[str]] = {}
    for rel in sorted(files.sources):
        if rel.endswith(COMPILED):
            made = hipified(rel) if rel.endswith(".cu") or rel in changed else rel
            by_object.setdefault(os.path.splitext(made)[0], []).append(rel)
    places: list[SourceEdit] = []
    first: tuple[int, str, str | None] | None = None
    for obj, rels in by_object.items():  # every pair, in one fix
        cu = next((r for r in rels if r.endswith(".cu")), None)
        if cu is None or len(rels) < 2:
            continue
        name = os.path.basename(cu)
        named = re.search(rf"""["'][^"'\n]*\b{re.escape(name)}["']""", setup)
        found = named or SCANS.search(setup)
        if found is None:
            continue
        copy = os.path.join(os.path.dirname(cu), os.path.splitext(name)[0] + "_kernels.cu")
        places.append(SourceEdit(cu, 0, "", name if named else "", copy, False))
        others = ", ".join(r for r in rels if r != cu)
        first = first or (setup.count("\n", 0, found.start()) + 1, f"{cu} and {others} both compile to {obj}.o once "
                          "hipified", name if named else None)
    if first is None:
        return None
    return Evidence(f"setup.py:{first[0]}", first[1], first[2], "setup.py", tuple(places))


def _hipify_changes(sources: dict[str, str]) -> set[str]:
    """The sources hipify rewrites, so writes a _hip copy of: those naming CUDA, and those that include one of them
    (hipify rewrites the include to the copy's name: torch-ans's rans.cpp includes rans.hpp)."""
    includes = {rel: [m.group("path") for m in INCLUDE.finditer(text)] for rel, text in sources.items()}
    changed = {rel for rel, text in sources.items() if CUDA_TOKEN.search(text)}
    grew = True
    while grew:
        grew = False
        for rel, paths in includes.items():
            if rel not in changed and any(os.path.normpath(os.path.join(os.path.dirname(rel), p)) in changed
                                          for p in paths):
                changed.add(rel)
                grew = True
    return changed


def kernels_as_pointers(files: BuildFiles) -> Evidence | None:
    """A kernel handed itself to cudaFuncGetAttributes, cudaFuncSetAttribute and the like, whose HIP versions take
    `const void*` (CUDA's have template overloads), in any C++/CUDA source of the tree."""
    return _in_sources(kernel_pointers(files.sources))


def _in_sources(found: list[SourceEdit]) -> Evidence | None:
    """The evidence of a trap seen across the sources: its first place, with every place its fix edits."""
    if not found:
        return None
    first = found[0]
    return Evidence(f"{first.file}:{first.line}", first.text, None, first.file, tuple(found))


def pip_in_setup(files: BuildFiles) -> Evidence | None:
    """setup.py runs pip itself, as a statement of its own (to uninstall an older copy, or install a dependency)."""
    if not files.setup:
        return None
    return _in_sources([SourceEdit("setup.py", line, files.setup[line - 1].strip(), call, "pass", False)
                        for line, call in pip_runs(files.tree / "setup.py")])


# torch.version.cuda read as a string: a method called on it, or handed to a version parser. None on a ROCm torch.
CUDA_VERSION_READ = (r"(?<![\w.])torch\.version\.cuda(?=\s*\.\s*(?:split|replace|startswith|strip|partition|rsplit)\b)"
                     r"|(?:" + "|".join(rf"(?<=\b{f}\()" for f in ("float", "Version", "parse", "LooseVersion", "parse_version"))
                     + r")torch\.version\.cuda(?=\s*\))")


def cuda_version_reads(files: BuildFiles) -> Evidence | None:
    """setup.py (with no ROCm path and no variable that selects one) reads torch.version.cuda as a string (a
    build tag's `torch.version.cuda.replace('.', '')`, a version compared), outside a test of it."""
    if files.torch is None or files.torch.rocm_aware or rocm_selector(files) is not None:
        return None
    for number, line in enumerate(files.setup, 1):
        if not line.lstrip().startswith("#") and re.search(CUDA_VERSION_READ, line):
            return Evidence(f"setup.py:{number}", line.strip(), None, "setup.py")
    return None


def rocm_selector(files: BuildFiles) -> Evidence | None:
    """A variable that alone selects the ROCm path (ROCM_VERSION, USE_ROCM, ...)."""
    read = next((r for r in files.env if SELECTOR.match(r.name)), None)
    return Evidence(read.where, f"{read.name} is read at {read.where}", read.name) if read else None


def flag_with_value(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """The nvcc flag in setup.py whose value (the next item of its list) clang took for an input file."""
    text = "\n".join(files.setup)
    value = re.escape(failure.group("value"))
    match = re.search(rf"""(["'])(?P<flag>--?[\w-]+)\1\s*,\s*(["']){value}\3""", text)
    if match is None or match.group("flag") not in VALUE_OPTIONS:
        return None  # a flag that carries no value of its own (-D, -U, -O3) is not the one that lost it
    number = text.count("\n", 0, match.start()) + 1
    return Evidence(f"setup.py:{number}", files.setup[number - 1].strip(), f"{match.group('flag')}|{failure.group('value')}",
                    "setup.py")


def include_place(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """The source a compiler found lacking a standard header: the log names the file it compiled, which
    for a hipified source is torch's copy (x_hip.cpp, x.hip); the fix goes into the original."""
    header = HEADER_OF.get(failure.group("value"), failure.group("value"))
    for rel in files.sources:
        if compiled_as(rel, failure.group("file")):
            return Evidence(f"{rel}:1", f"{rel} lacks #include <{header}>", header, rel)
    return None


# The standard header of a name clang finds undeclared or incomplete (GCC names the header itself).
HEADER_OF = {**dict.fromkeys(("basic_ofstream", "basic_ifstream", "basic_fstream"), "fstream"),
             **dict.fromkeys(("basic_ostringstream", "basic_istringstream", "basic_stringstream"), "sstream"),
             **{f"{sign}int{bits}_t": "cstdint" for sign in ("", "u") for bits in (8, 16, 32, 64)},
             "numeric_limits": "limits", "runtime_error": "stdexcept", "invalid_argument": "stdexcept"}
CLANG_WHAT = "|".join(sorted(HEADER_OF, key=len, reverse=True))


def linked_library(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    """Where setup.py links the CUDA library the linker could not find: `-lcuda` among the link flags, or
    'cuda' in a `libraries=` list."""
    return _linked(files, failure.group("value"))


# What follows a string that is the operand of a test, not an item of a list (torchdtw's
# `[lib for lib in ext.libraries if "cudart" not in lib]`): such a string is never dropped.
TESTED = r"""(?!\s*(?:not\s+in\b|in\b|==|!=))"""
COMPARED = r"""(?<!==\s)(?<!!=\s)(?<!==)(?<!!=)"""  # ... nor one compared with (`f != "-lcudart"`)


def _linked(files: BuildFiles, name: str) -> Evidence | None:
    lib = re.escape(name)
    for number, line in enumerate(files.setup, 1):
        match = re.search(rf"""{COMPARED}(["'])(-l{lib})\1{TESTED}""", line) or (
            re.search(rf"""{COMPARED}(["'])({lib})\1{TESTED}""", line) if "libraries" in line else None)
        if match:
            return Evidence(f"setup.py:{number}", line.strip(), match.group(2), "setup.py")
    return None


# CUDA's math libraries, and the ROCm libraries hipify's names call instead (cusparseSpMM is hipsparseSpMM).
CUDA_MATH_LIBRARIES = {"cublas": "hipblas", "cublasLt": "hipblaslt", "cusparse": "hipsparse", "curand": "hiprand",
                       "cufft": "hipfft", "cusolver": "hipsolver"}


def cuda_math_libraries(files: BuildFiles) -> Evidence | None:
    """setup.py links CUDA's math libraries by name (turbo-gnn's `libraries=["cusparse"]`): one edit each."""
    if files.torch is None:
        return None
    edits = []
    for lib, hip in CUDA_MATH_LIBRARIES.items():
        found = _linked(files, lib)
        if found is not None and found.value:
            flag = "-l" if found.value.startswith("-l") else ""
            edits.append(SourceEdit("setup.py", int(found.where.split(":")[1]), found.text,
                                    rf"""(["']){re.escape(found.value)}\1""", rf"\g<1>{flag}{hip}\g<1>", True))
    return _in_sources(edits)


def cuda_libraries(files: BuildFiles) -> Evidence | None:
    """setup.py links one of CUDA's libraries by name (`'-lcudart'` among the link flags, `'cuda'` in a `libraries=`
    list; stainx's): there is none on ROCm, whatever branch names it."""
    if files.torch is None:
        return None
    return next((found for lib in ("cudart", "cuda", "nvToolsExt", ":libcudart_static.a") if (found := _linked(files, lib))),
                None)


def refused_flag(files: BuildFiles, failure: re.Match[str]) -> Evidence | None:
    return cuda_flag(files, failure.group("value"))


def cuda_flag(files: BuildFiles, refused: str | None = None) -> Evidence | None:
    """A CUDA-only nvcc flag (--expt-relaxed-constexpr, -Xptxas, ...) as a string in setup.py or CMake.

    With `refused` (the flag a failed log shows clang refusing): that flag, whatever it is."""
    for name, number, text in files.lines():
        for flag in re.findall(r"""["']([^"']+)["']""", text):
            if flag == refused or (refused is None and CUDA_FLAG.match(flag)):
                return Evidence(f"{name}:{number}", text.strip(), flag, name)
    return None


def cuda_flags_for_hipcc(files: BuildFiles) -> Evidence | None:
    """CUDA-only nvcc flags (--use_fast_math, -Xptxas, ...) that setup.py surely hands hipcc: in its HIP branch,
    or anywhere when it never tests for HIP."""
    flags = [(flag, where) for flag, where in (files.torch.hip_flags if files.torch else []) if where.startswith("setup.py:")]
    if files.torch is not None:  # a torch extension: its nvcc flags go to hipcc, wherever they are kept
        flags += [(flag, f"{rel}:{n}") for rel, lines in files.helpers.items() for n, text in enumerate(lines, 1)
                  if not text.lstrip().startswith("#") for flag in re.findall(r"""["']([^"']+)["']""", text)
                  if CUDA_FLAG.match(flag)]
    texts = {"setup.py": files.setup, **files.helpers}
    found = [edit for flag, where in flags for rel, number in [where.rsplit(":", 1)]
             if (edit := _flag_edit(rel, int(number), texts[rel][int(number) - 1], flag, flag))]
    if not found:
        return None
    first = found[0]
    return Evidence(f"{first.file}:{first.line}", texts[first.file][first.line - 1].strip(), first.text, first.file,
                    tuple(found))


def _flag_edit(rel: str, number: int, line: str, flag: str, shown: str) -> SourceEdit | None:
    """The edit that drops `flag` from line `number` of `rel`, where the edit finds it on that line: a flag it
    would not find is a test's operand (`"--use_fast_math" in flags`), which is left alone."""
    fix = _drop_flag(Evidence(f"{rel}:{number}", line, flag, rel), None)
    if isinstance(fix, ReplaceText) and re.search(fix.find, line):
        return SourceEdit(rel, number, shown, fix.find, fix.with_, True)
    return None


OLD_ABI = "-D_GLIBCXX_USE_CXX11_ABI=0"


def abi_forced(files: BuildFiles) -> Evidence | None:
    """setup.py (or a module it imports) of a torch extension hands the compiler libstdc++'s old ABI itself."""
    if files.torch is None:
        return None
    texts = {"setup.py": files.setup, **files.helpers}
    found: list[SourceEdit] = []
    for rel, lines in texts.items():
        for number, line in enumerate(lines, 1):
            edit = _flag_edit(rel, number, line, OLD_ABI, line.strip()) if OLD_ABI in line else None
            if edit and not line.lstrip().startswith("#"):
                found.append(edit)
                break  # one edit per file drops every such flag in it
    return _in_sources(found)


def native_arch(files: BuildFiles) -> Evidence | None:
    """An arch variable whose default is 'native'."""
    torch = files.torch
    for var in torch.variables if torch else []:
        if var.kind == "arch" and "'native'" in var.why:  # the reading's value joins the list as the package splits it
            return Evidence(var.where, f"{var.name}: {var.why}", f"{var.name}={var.value or ''}")
    return None


def downloads(files: BuildFiles) -> Evidence | None:
    """A download in setup.py (urlretrieve, wget, git clone), with the *_FORCE_BUILD variable that compiles instead."""
    torch = files.torch
    if torch is None or not any(n.startswith("downloads at") for n in torch.notes):
        return None
    force = next((v for v in torch.variables if v.kind == "force" and v.name.endswith("BUILD")), None)
    note = next(n for n in torch.notes if n.startswith("downloads at"))
    on = (force.value or torch.on_values.get(force.name) or "1") if force else ""
    return Evidence(note.split(" ")[2].rstrip(",("), note, f"{force.name}={on}" if force else None)


# pybind11 from PyPI's sdist, a whole CMake project (CMakeLists.txt, tools/, include/), of a release that knows the
# Python the torch is built for (3.14 needs pybind11 3.0): the one a project declares may predate it (fast-rnnt's
# 2.6.0, from 2020, does not compile against 3.11 and newer).
PYBIND11_SDIST = "pybind11==3.1.0"


def _fetched(files: BuildFiles, name: str, source_dir: str, before: Callable[[str], str] = lambda _t: "") -> \
        Evidence | None:
    """Each CMake file of the tree whose FetchContent_Declare(NAME ...) downloads (a URL or a git repository; the
    call spans lines and holds no parenthesis), with the edit that makes every such declaration take `source_dir`
    (after what `before` says for that file's text, a statement of its own)."""
    fetched = re.compile(rf"FetchContent_Declare\s*\(\s*{name}\b[^()]*\b(?:URL|GIT_REPOSITORY)\b[^()]*\)")
    declared = rf"(?m)^([ \t]*)FetchContent_Declare\s*\(\s*{name}\b[^()]*\)"  # (not a commented-out one)
    found = []
    for rel, text in cmake_files(files.tree):
        code = re.sub(r"#[^\n]*", "", text)  # (comments out, the lines kept)
        match = fetched.search(code)
        if match:
            line = line_of(code, match.start())
            said = before(code)
            first = rf"{said}\n\g<1>" if said else ""
            found.append(SourceEdit(rel, line, text.splitlines()[line - 1].strip(), declared,
                                    rf'\g<1>{first}FetchContent_Declare({name} SOURCE_DIR "{source_dir}")', True))
    return _in_sources(found)


def pybind11_fetched(files: BuildFiles) -> Evidence | None:
    """A CMake file that has FetchContent download pybind11 (fast-rnnt's and optimized-transducer's
    cmake/pybind11.cmake, k2-fsa's): its declarations, which the fix points at the extra source."""
    return _fetched(files, "pybind11", "${{ sources.pybind11 }}", _findpython)


def _findpython(code: str) -> str:
    """pybind11 2's way of finding Python, for a project that declares a pybind11 2 (its URL or tag says v2, or no
    version): pybind11 3 under another project takes CMake's FindPython (its COMPAT mode), which leaves
    PYTHON_INCLUDE_DIRS unset, and a target of fast-rnnt's that includes torch/extension.h from it found no Python.h;
    OFF (not OLD, which CMake's if() takes for true) is its classic mode."""
    three = re.search(r"""(?:GIT_TAG\s+["']?|/archive/|pybind11[-_])v?3\.\d+""", code)
    return "" if three else "set(PYBIND11_FINDPYTHON OFF)"


def libtorch_fetched(files: BuildFiles) -> Evidence | None:
    """A CMake file that has FetchContent download libtorch (openequivariance's libtorch 2.10 for the CPU, for
    its headers and libraries): the target python's torch package holds the same include/ and lib/."""
    return _fetched(files, "libtorch", "${{ torch.folder }}")


def torch_extension(files: BuildFiles) -> Evidence | None:
    """A PyTorch extension (torch.utils.cpp_extension in setup.py or op_builder/)."""
    return Evidence(files.torch.marker, files.torch.marker) if files.torch else None


def jit_kernels(files: BuildFiles) -> Evidence | None:
    """Kernels compiled at run time, with nothing that asks for them at install time."""
    torch = files.torch
    # setup.py driving CMake (vLLM: its kernels in CMake targets, one helper load()ed at run time) builds at install
    if torch is None or torch.jit is None or torch.kernels or torch.cmake or torch.built_at:
        return None
    # (a force variable asks for what setup.py compiles: nothing, where the sdist lacks its sources, as monai's)
    if any(v.kind == "force" and v.value for v in torch.variables) and not torch.unpacked:
        return None
    return Evidence(torch.jit, f"cpp_extension.load at {torch.jit}", ",".join(torch.jit_sources))


TRITON_JIT = re.compile(r"^[ \t]*@triton\.(?:jit|autotune)\b", re.MULTILINE)


def triton_kernels(files: BuildFiles) -> Evidence | None:
    """Triton kernels (`@triton.jit`) in the package's own modules, with nothing compiled at install: no extension
    in setup.py and no CMake project (flash-sparse-attn 2.x, whose csrc/ is left from 1.x and never built)."""
    if _compiles_itself(files):
        return None
    for path in package_modules(files.tree):
        text = path.read_text(errors="replace")
        found = TRITON_JIT.search(text)
        if found:
            where = f"{path.relative_to(files.tree).as_posix()}:{text.count(chr(10), 0, found.start()) + 1}"
            return Evidence(where, found.group(0).strip())
    return None


# PyPI's `triton` has NVIDIA's backend alone; ROCm's is pytorch-triton-rocm (the `triton` module a ROCm torch pins).
CUDA_TRITON = re.compile(r"""(["'])triton(?:\s*(?:[<>=!~]=?|===)\s*[\w.*]+(?:\s*,\s*[<>=!~]=?\s*[\w.*]+)*)?\1""")


def cuda_triton(files: BuildFiles) -> Evidence | None:
    """pyproject.toml's dependencies, or setup.py's install_requires, name PyPI's `triton`."""
    for name in ("pyproject.toml", "setup.py"):
        path = files.tree / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found = CUDA_TRITON.search(line)
            if found and not line.lstrip().startswith("#"):
                return Evidence(f"{name}:{number}", line.strip(), found.group(0), name)
    return None


HIP_LANGUAGE = r"enable_language\s*\(\s*HIP|LANGUAGES[^)]*\bHIP\b"


def cmake_cuda_only(files: BuildFiles) -> Evidence | None:
    """A CMakeLists.txt whose only GPU language is CUDA (project(... CUDA), enable_language(CUDA)), anywhere in the
    tree outside its vendored libraries; with the edits that build it as HIP. Not a torch extension's CMakeLists.txt
    that its setup.py never runs (torch-scatter's, for its C++ API)."""
    if files.torch is not None and not files.torch.cmake:
        return None
    found = port(files.tree, torch_extension=files.torch is not None)
    if found is None:
        return None
    rel, number, line = found.files[0]
    return Evidence(f"{rel}:{number}", line, "torch" if found.torch else None, rel, also=found.edits)


def runtime_binding(files: BuildFiles) -> Evidence | None:
    """A CMake project that links HIP's runtime (hip::host, amdhip64) and compiles no HIP source; or a torch
    CUDAExtension with no kernel source in the tree (its .cpp files call the runtime, torch links it)."""
    if files.torch is not None:
        return _extension_without_kernels(files)
    return _cmake_line(files, r"\bhip::host\b|\bamdhip64\b|\bhip::amdhip64\b",
                       unless=HIP_LANGUAGE + r"|\.hip\b|\.cu\b|hip_add_library")


def _extension_without_kernels(files: BuildFiles) -> Evidence | None:
    """torch-unified 0.1's shape: CUDAExtension('m', ['m.cpp']), the .cpp calling cudaMallocManaged."""
    kernels = any(rel.endswith((".cu", ".cuh", ".hip")) or "__global__" in text for rel, text in files.sources.items())
    host = any(rel.endswith((".cpp", ".cc", ".cxx")) for rel in files.sources)
    if kernels or not host or jit_kernels(files) is not None:
        return None
    for number, line in enumerate(files.setup, 1):
        if re.search(r"\bCUDAExtension\s*\(", line) and not line.lstrip().startswith(("#", "from", "import")):
            return Evidence(f"setup.py:{number}", line.strip())
    return None


def _cmake_line(files: BuildFiles, wanted: str, *, unless: str) -> Evidence | None:
    """The first line of the top CMakeLists.txt matching `wanted`, where nothing in it matches `unless`."""
    if re.search(unless, "\n".join(files.cmake)):
        return None
    for number, line in enumerate(files.cmake, 1):
        if re.search(wanted, line):
            return Evidence(f"CMakeLists.txt:{number}", line.strip())
    return None


# -- fixes -----------------------------------------------------------------------------------------------

def _cxx20(files: Evidence | None, failure: Evidence | None) -> Fix | None:
    if files is not None and files.also:
        return _source_edits("ask C++20 of CMake, as torch needs", "${{ torch.version >= '2.12' }}")(files, failure)
    if files is None or files.value is None or files.file is None:
        return None
    new = re.sub(r"1[147]$", "20", files.value)
    return ReplaceText(files.file, files.value, new, when="${{ torch.version >= '2.12' }}")


def _set_from_files(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None:
        return None
    name, _, on = files.value.partition("=")
    return SetEnv(name, on or "1")


def _selector(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None:
        return None
    return SetEnv(files.value, "${{ rocm.version }}" if files.value.endswith("VERSION") else "1")


def _cuda_version(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None:
        return None
    return ReplaceText("setup.py", CUDA_VERSION_READ, f'(torch.version.cuda or "{NVCC_VERSION}")', regex=True,
                       says=f"torch.version.cuda, where setup.py reads it as a string, is {NVCC_VERSION} when None")


def _gpu_branch(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None or files.file is None:
        return None
    probes = files.value.split("|")
    said = " and ".join(probes)
    # a probe the package follows with questions to the device stays (fixed-width look-behinds of what precedes it)
    unless = "".join(f"(?<!{re.escape(before)})" for before in dict.fromkeys(files.keep))
    left = ", but where setup.py then asks the device" if files.keep else ""
    if len(probes) == 1 and not unless:
        return ReplaceText(files.file, probes[0], "True", says=f"{said} is True in {files.file}: the GPU branch is "
                           "taken, as on a machine with a GPU")
    return ReplaceText(files.file, unless + "(?:" + "|".join(_qualified(p) for p in probes) + ")", "True", regex=True,
                       says=f"{said} {'is' if len(probes) == 1 else 'are'} True in {files.file}{left}: the GPU branch "
                            "is taken, as on a machine with a GPU" + (" (CUDA_HOME is None on a ROCm torch)"
                                                                     if len(probes) > 1 else ""))


def _qualified(test: str) -> str:
    """A test as a regex that takes its name qualified too (`cpp_ext.CUDA_HOME is None`, fussim's): replacing
    the bare name would leave `cpp_ext.False`."""
    text = re.escape(test).replace("\\ ", " ")
    return rf"(?<![\w.])(?:\w+\.)*{text}" if test.startswith("CUDA_HOME") else rf"(?<![\w.]){text}"


def _std_include(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None or files.file is None:
        return None
    return ReplaceText(files.file, r"\A", f"#include <{files.value}>\n", regex=True,
                       says=f"include <{files.value}> first in {files.file}")


def _toolkit_tests(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or not files.value or files.file is None:
        return None
    tests = files.value.split("|")
    edits = tuple(ReplaceText("setup.py", _qualified(t), TOOLKIT_TESTS[t], regex=True) for t in tests)
    return Edits(edits, "setup.py's tests of CUDA_HOME and torch.version.cuda pass: its CUDA branch is taken, which "
                        "torch hipifies")


def _cmake_as_hip(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    """Each CUDA-only CMakeLists.txt built as HIP, the sources hipified in place by a step before the wheel's,
    and torch's CMake package found (CMake reads CMAKE_PREFIX_PATH from the environment)."""
    if files is None or not files.also:
        return None
    edits = tuple(ReplaceText(e.file, e.find, e.with_, regex=e.regex) for e in files.also)
    names = sorted({e.file for e in files.also})
    # torch's CMake package (LoadHIP.cmake) takes the archs and its HIP compiler from the environment and refuses
    # without them (HIP_CLANG_PATH, else ROCm's own layout). ROCM_PATH is not set: at /usr, clang would no longer
    # find a distribution's device libraries.
    env = (SetEnv("CMAKE_PREFIX_PATH", "${{ torch.cmake_prefix }}"),
           SetEnv("PYTORCH_ROCM_ARCH", "${{ archs | join(';') }}"),
           SetEnv("HIP_CLANG_PATH", "${{ rocm.hip_clang_dir }}")) if files.value == "torch" else ()
    # the ROCm libraries the port finds for CUDA's (CUDA::cublas: hipBLAS), which CMake would name one a try
    packages = rocm_packages_in([e.with_.replace("\\", "") for e in files.also])
    return Edits(edits, f"build CUDA as HIP in {', '.join(names)}, the sources hipified in place first", env=env,
                 first=RunFirst("hipify", ("python", "-c", HIPIFY, ".")),
                 requires=(Require("cmake-packages", tuple(packages)),) if packages else ())


def _host_clang(_files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    return SetEnv("CXX", "${{ rocm.hip_compiler }}")  # an env value: nothing to locate


def _rocm_for_load_hip(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    distro = "${{ rocm.layout == 'distro' }}"
    return Edits((), "tell torch's LoadHIP.cmake where ROCm is (and, on a distro layout, its clang and device "
                     "libraries)",
                 env=(SetEnv("ROCM_PATH", "${{ rocm.path }}"), SetEnv("HIP_CLANG_PATH", "${{ rocm.hip_clang_dir }}", distro),
                      SetEnv("HIP_DEVICE_LIB_PATH", "${{ rocm.device_lib_dir }}", distro)),
                 requires=(Require("cmake-packages", LOADHIP_CMAKE_PACKAGES),))


def _hip_found_or_torchs(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.file is None:
        return None
    return ReplaceText(files.file, HIP_FOUND, "(HIP_FOUND OR PYTORCH_FOUND_HIP)", regex=True,
                       says=f"test torch's PYTORCH_FOUND_HIP beside HIP_FOUND in {files.file}")


def _unbounded_python(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None or files.file is None:
        return None
    spec = re.sub(UPPER, "", files.value, count=1)
    return ReplaceText(files.file, files.text, files.text.replace(files.value, spec),
                       says=f"drop the upper bound of {files.value!r} in {files.file}")


def _cu_or_hip(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None:
        return None
    return ReplaceText("setup.py", CU_SUFFIX, r'\g<head> in (".cu", ".hip")', regex=True,
                       says="setup.py's test of a .cu suffix takes hipify's .hip too")


def _python_listed(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    """The target python's version added to the list (where it is listed already, twice does no harm)."""
    if files is None or files.value is None or files.file is None:
        return None
    listed = files.value
    more = listed[:-1] + ';${{ python.version }}"' if ";" in listed else listed + ' "${{ python.version }}"'
    return ReplaceText(files.file, files.text, files.text.replace(listed, more),
                       says=f"add the target python's version to {files.where}'s list")


def _argv_true(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None or files.file is None:
        return None
    return ReplaceText(files.file, files.value, "True", says=f"setup.py's test of its command line ({files.where}) "
                       "is True: its extensions are built in the wheel pip builds")


def _requoted(name: str, says: str) -> Callable[[Evidence | None, Evidence | None], Fix | None]:
    """The fix that puts `name` in place of the quoted word the build files hold (in the same quotes); `says`
    what it does, with {where} and {file} filled in."""

    def fix(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
        if files is None or files.value is None or files.file is None:
            return None
        quote_mark = files.value[0]
        return ReplaceText(files.file, files.value, f"{quote_mark}{name}{quote_mark}",
                           says=says.format(where=files.where, file=files.file))

    return fix


def _source_edits(what: str, when: str | None = None, sources: tuple[ExtraSdist, ...] = ()) -> \
        Callable[[Evidence | None, Evidence | None], Fix | None]:
    """The fix of a trap whose detector found places across the sources: one replace edit per place, as one
    fix that says `what` it does (for the torch versions `when` names, or always), with the extra `sources` the
    edits name."""

    def fix(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
        if files is None or not files.also:
            return None
        edits = tuple(ReplaceText(e.file, e.find, e.with_, when, regex=e.regex, says=f"{e.with_} in {e.file}")
                      for e in files.also)
        names = sorted({e.file for e in files.also})
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return Edits(edits, f"{what} ({len(edits)} edit{'s' if len(edits) != 1 else ''}: {shown})", sources=sources)

    return fix


def _renamed_source(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    """Each .cu file moved to a name hipify turns into an object of its own (a copy, the original removed), and
    setup.py pointed at it where it names the file."""
    if files is None or not files.also:
        return None
    edits: list[CopyFile | RemoveFile | ReplaceText] = []
    for place in files.also:
        renamed = [ReplaceText("setup.py", place.find, os.path.basename(place.with_))] if place.find else []
        edits += [CopyFile(place.file, place.with_), RemoveFile(place.file), *renamed]
    shown = ", ".join(f"{p.file} as {p.with_}" for p in files.also)
    return Edits(tuple(edits), f"compile {shown}, a name of its own once hipified")


# Modules setup.py files import that no requirement can bring to a current python.
REMOVED_MODULES = r"numpy\.distutils(?:\.[\w.]+)?|imp"
# NVIDIA's own Python packages: the nvidia.* namespace of its CUDA library wheels (nvidia-cuda-nvcc, nvidia-nccl),
# cuda-python's `cuda`, PyCUDA, TensorRT. No ROCm build has them, and listing one brings CUDA (or nothing: the bare
# `nvidia` is not on PyPI).
CUDA_MODULES = r"(?:nvidia|cuda|pycuda|tensorrt)(?:\.[\w.]+)?"


def _python_module(_files: Evidence | None, failure: Evidence | None) -> Fix | None:
    module = failure.value.split(".")[0] if failure and failure.value else None
    if module is None or module in ("torch", "setuptools") or module.startswith("_"):
        return None  # torch: requires.torch; setuptools: pip's own
    return Require("python", (distribution(module),))


def _drop_flag(files: Evidence | None, failure: Evidence | None) -> Fix | None:
    if files is not None and files.also and failure is None:  # the drafter: every flag hipcc is surely given
        return _source_edits("drop CUDA-only flags hipcc refuses")(files, failure)
    if files is None or files.value is None or files.file is None:
        return None
    if failure is not None and failure.value and failure.value != files.value:
        return None  # the flag clang refused is not the one the build files hold
    # A dash needs no escape outside [...]; `{}` is where the reading found an f-string's field (`{arch}`).
    flag = re.escape(files.value).replace("\\-", "-").replace(r"\{\}", r"\{[^{}\"']*\}")
    quote = r"""[rfbRFB]{0,2}["']"""  # an f-string's prefix and its quote
    # The quoted flag with the comma before it (or, first in its list, the one after), and the value of an
    # option that takes one (`"--threads", "2"`): the list stays a list, and no value is left for clang.
    # (or a variable holding it, torch-lap-cuda's `["--threads", nvcc_threads]`)
    # A pass-through option's value is another tool's flag: `"-Xcompiler", "-fopenmp"`.
    # A value made by a call (torch-baidu-ctc's `"arch=compute_{},code=sm_{}".format(a, b)`) goes with its call;
    # a flag made by concatenation (`"-ccbin=" + CC`) with what it is concatenated with.
    tail = r"""(?:\s*\.\s*format\s*\([^()]*\)|\s*%\s*(?:\([^()]*\)|[A-Za-z_]\w*))?"""
    # A string closes on the quote it opened with: transformer-engine's `"--compiler-options", "'-fPIC'"` holds the
    # other one (taken for its end, `-fPIC'"` was left in the list: a SyntaxError at metadata).
    string = r"""(?:"[^"\n]*"|'[^'\n]*')"""
    concat = rf"""(?:\s*\+\s*(?:[A-Za-z_][\w.]*|{string}))*"""
    value = (rf"""(?:\s*,\s*{string})?""" if files.value in PASSED_ON else
             rf"""(?:\s*,\s*(?:(?:"[^-"\n][^"\n]*"|'[^-'\n][^'\n]*'){tail}|[A-Za-z_]\w*(?=\s*[\]),])))?"""
             if files.value in VALUE_OPTIONS else "")
    item = rf"""{COMPARED}{quote}{flag}["']{TESTED}{concat}{tail}"""
    # apex's setup.py and its copies append a flag and its value one statement each
    # (`cc_flag.append("-gencode")`, then `cc_flag.append("arch=compute_80,code=sm_80")`): both statements
    # become `pass`, which keeps an `if` block they were alone in valid; emptying the string left `append()`.
    says = f"drop {files.value}{' and its value' if value else ''} from {files.file}"
    statement = rf"""[\w.]+(?:\[[^\]\n]*\])*\.append\(\s*{item}\s*\)"""
    if re.search(statement, files.text):
        pair = rf"""(?:[ \t]*\n[ \t]*\w+\.append\(\s*{quote}[^-"'][^"']*["']\s*\))?""" if value else ""
        return ReplaceText(files.file, statement + pair, "pass", regex=True, says=says)
    # A list made by a comprehension of the flag (bf16-fused-adam's `[f"--generate-code=...{arch}" for arch in
    # ARCHS]`) is left an empty list.
    comprehension = rf"""{item}\s+for\s+[\w, ]+\s+in\s+[^\[\]]+?(?=\s*\])"""
    # The comma before the flag only on its line: the one a line above may be a comment's (pytorch-extension's
    # `# '--resource-usage',` above `'--use_fast_math'] + macros`, whose `]` had gone into the comment). A flag on
    # a line of its own goes with its indent and its line break, whatever follows it staying on its own line; the
    # list then keeps a trailing comma, which Python takes.
    own_line = rf"""(?<=\n)[ \t]*{item}{value}(?!\s+for\s)[ \t]*,?[ \t]*\n?"""  # (a comprehension's is above)
    # First in its list, the flag goes with the comma after it; a flag a function returns (warpconvnet's property
    # `return f"-gencode=arch=compute_{self.code},code=sm_{self.code}"`) stays: emptied, it had left `return` alone.
    first = rf"""(?<!return )(?<!\w){item}{value}\s*,?\s*"""  # (?<!\w): nor from inside an f-string's prefix
    return ReplaceText(files.file, rf"""(?:{comprehension}|,[ \t]*{item}{value}|{own_line}|{first})""",
                       "", regex=True, says=says)


def _phantom_is_cuda_extension(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None:
        return None
    return ReplaceText("setup.py", files.text, f"{files.value} = CUDAExtension  # rocbuild: hipifies on ROCm",
                       says=f"{files.value} falls back to CUDAExtension, which hipifies on a ROCm torch")


def _nvcc_answer(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None or files.file is None:
        return None
    call, _, answer = files.value.partition("|")
    return ReplaceText(files.file, call, answer, says=f"nvcc's version answer in place of asking it ({files.where})")


def _drop_pair(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None or files.value is None or files.file is None:
        return None
    flag, _, value = files.value.partition("|")
    find = rf"""["']{re.escape(flag)}["']\s*,\s*["']{re.escape(value)}["']\s*(?:,\s*)?"""
    return ReplaceText(files.file, find.replace("\\-", "-"), "", regex=True, says=f"drop {flag} {value} from {files.file}")


def _arch(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    name, _, value = (files.value if files and files.value else "PYTORCH_ROCM_ARCH=").partition("=")
    return SetEnv(name, value or "${{ archs | join(';') }}")


def _rocm_package(files: Evidence | None, failure: Evidence | None) -> Fix | None:
    if failure is None and files is not None and files.value:  # the drafter: every one the CMake files find
        return Require("cmake-packages", tuple(files.value.split(";")))
    if failure is None or failure.value is None:
        return None
    if "/" in failure.value:
        return Require("headers", (failure.value,)) if ROCM_HEADER.match(failure.value) else None
    return Require("cmake-packages", (failure.value,)) if ROCM_PACKAGE.match(failure.value) else None


def _system_header(_files: Evidence | None, failure: Evidence | None) -> Fix | None:
    return Require("headers", (failure.value,)) if failure and failure.value in SYSTEM_HEADERS else None


def _memory(_files: Evidence | None, failure: Evidence | None) -> Fix | None:
    per_job = failure.value if failure and failure.value else "2GiB"
    number = float(re.sub(r"[^\d.]", "", per_job) or 2)
    return MemoryPerJob(f"{max(4, int(number * 2))}GiB")


def _jit(files: Evidence | None, _failure: Evidence | None) -> Fix | None:
    if files is None:
        return None
    return Expect("jit", tuple(s for s in (files.value or "").split(",") if s))


TRAPS: tuple[Trap, ...] = (
    Trap("cxx20-for-torch", "C++17 asked for, against a torch that needs C++20",
         "torch 2.12 and newer refuses less than C++20 (#error in ATen.h and torch/all.h)",
         _cxx20, log=(r"C\+\+20 or later compatible compiler is required to use (?:PyTorch|ATen)",
                      r"no type named 'strong_ordering' in namespace 'std'"),
         files=old_standard, after_failure=cmake_standard, fixes="a replace edit"),
    Trap("force-variable-unset", "a force variable left unset",
         "without a visible GPU, setup.py builds its kernels only when a FORCE_* variable says so: "
         "unset, it builds CPU-only or gives .cu headers to the host compiler",
         _set_from_files, log=(MISSING_CUDA_HEADER,),
         findings=CPU_ONLY,
         files=force_unset, after_failure=force_any, fixes="an env value"),
    Trap("gpu-probe-at-build", "a GPU probe that no variable overrules",
         "setup.py builds its kernels only when it sees a GPU (torch.cuda.is_available()), and a builder has none",
         # (not a header's name: "'cuda/atomic' file not found" is libcu++'s, cuda-feature-missing's)
         _gpu_branch, log=(r"(?i)(?<!/)(?<!')(?<!\")(?<!<)\bcuda\b(?![/.])[^'\"]{0,40}\bnot (?:available|found|detected)",
                           r"(?i)no cuda (?:gpus?|devices?)(?: are| were)? (?:available|found|detected)",
                           r"module 'torch' has no attribute 'has_cuda'"),
         findings=CPU_ONLY,
         files=gpu_probe, fixes="a replace edit"),
    Trap("cuda-arch-before-probe", "a CUDA arch variable that setup.py reads before it asks the GPU",
         "setup.py takes its CUDA archs from a variable of its own and asks the GPU only where it is unset "
         "(torch.cuda.get_device_capability(), which a GPU-less builder cannot answer): set, the probe is never "
         "reached; a ROCm torch takes its archs from PYTORCH_ROCM_ARCH all the same", _set_from_files,
         files=arch_before_probe, fixes="an env value"),
    Trap("cuda-arch-list-demanded", "setup.py refuses without CUDA's arch variable",
         "setup.py stops unless TORCH_CUDA_ARCH_LIST is set (torchdtw: 'You must explicitly set TORCH_CUDA_ARCH_LIST "
         "to build from source'); a ROCm torch takes its archs from PYTORCH_ROCM_ARCH and ignores it, so any CUDA "
         "arch satisfies the test", lambda _f, failure: SetEnv(failure.value, "8.0") if failure and failure.value else None,
         log=(r"(?i)\b(?:must|need to|please)\b.{0,20}\bset\s+(?P<value>TORCH_CUDA_ARCH_LIST)\b",), draft=False,
         fixes="an env value"),
    Trap("cuda-toolkit-test", "CUDA's toolkit asked for by setup.py",
         "setup.py builds its CUDA extension only where CUDA_HOME or torch.version.cuda is set, or torch's version "
         "says +cu; on a ROCm torch both are None and its version says +rocm, and its cpp_extension hipifies and "
         "compiles the same sources: the tests are made to pass",
         _toolkit_tests, log=(r"(?i)requires? (?:a )?CUDA[- ]enabled (?:PyTorch|torch)",), findings=CPU_ONLY,
         files=cuda_toolkit_tests, fixes="replace edits"),
    Trap("nvcc-version-probe", "nvcc asked for CUDA's version",
         "apex's setup.py and its copies run `nvcc -V` from CUDA_HOME to test CUDA's version, and fail with no nvcc "
         "(CUDA_HOME is None on a ROCm torch); the call is replaced by what nvcc 12.4 answers, and hipcc compiles",
         _nvcc_answer, log=(r'File "[^"]*", line \d+, in get_cuda_bare_metal_version$',
                            r"FileNotFoundError: .*'[^']*/bin/nvcc'"),
         files=nvcc_version_probe, fixes="a replace edit"),
    Trap("rocm-extension-class-missing", "a ROCm extension class torch does not have",
         "setup.py imports a ROCm extension class (ROCMExtension) that no torch.utils.cpp_extension defines, and "
         "falls back to a CppExtension, which compiles the .cu sources unhipified; a ROCm torch's CUDAExtension "
         "hipifies them, and takes its place", _phantom_is_cuda_extension, findings=CPU_ONLY,
         files=phantom_extension, fixes="a replace edit"),
    Trap("nvcc-probe", "nvcc asked whether to build the GPU extension",
         "setup.py builds its CUDA extension only where nvcc runs; ROCm has hipcc, which hipifies and compiles it",
         _requoted("hipcc", "setup.py's nvcc probe runs hipcc instead ({where})"), findings=CPU_ONLY,
         files=nvcc_probe, fixes="a replace edit"),
    Trap("hipify-name-collision", "two sources hipify to one object",
         "hipify renames x_cuda.cu to x_hip.hip and x.cpp to x_hip.cpp: both compile to x_hip.o, and the link "
         "meets every function twice; the .cu file moves to a name of its own (a copy, the original removed)",
         _renamed_source, log=(r"multiple definition of .*_hip\.o", r"multiple rules generate \S*_hip\.o"),
         files=hipify_collisions,
         fixes="a copy, a remove and a replace edit"),
    Trap("vendored-library-hipified", "a vendored header library that knows HIP, rewritten by hipify",
         "hipify rewrites a vendored library's `defined(__CUDACC__)` to __HIPCC__, so hipcc takes its CUDA branch "
         "before its own __HIP__ one (GLM: \"GLM requires CUDA 7.0\"), and copies each header that includes a "
         "rewritten one to a _hip name its .inl files never include (every definition twice); hipify's breadcrumb "
         "put first in those headers makes hipify leave the library as it is",
         _source_edits("keep hipify out of the vendored library that knows HIP"),
         log=(r'error: "GLM requires CUDA', r"/(?:" + "|".join(map(re.escape, VENDOR_DIRS))
              + r")/\S*_hip\.(?:h|hpp|hh|cuh):\d+:\d+: error: "),
         files=vendored_hip, fixes="replace edits"),
    Trap("cuda-only-header", "a CUDA header hipify does not translate",
         "hipify maps the CUDA runtime's headers to HIP's, but not CUDA's internal ones (device_atomic_functions.h, "
         "device_launch_parameters.h): HIP's runtime header declares what they do",
         _source_edits("include HIP's runtime header instead of CUDA's own"),
         log=(r"(?P<value>\S+\.(?:hip|cpp|cc|cuh?|h|hpp)):\d+:\d+: fatal error: '?(?P<header>" + "|".join(
             re.escape(h) for h in CUDA_HEADERS) + r")'?:? (?:file not found|No such file or directory)",),
         files=cuda_headers, fixes="replace edits"),
    Trap("torch-api-renamed", "a torch C++ name removed since, which has a successor",
         "older extensions call torch macros that were removed (AT_CHECK, gone in torch 1.5), or dispatch on "
         "x.type(), which torch 2.14's AT_DISPATCH macros no longer convert; the name that took its place "
         "(TORCH_CHECK, x.scalar_type()) takes the same arguments, so each file gets one edit per name",
         _source_edits("call torch's current names"), log=(r"use of undeclared identifier '(?P<value>AT_CHECK)'",
                                                           r"'(?P<value>AT_CHECK)' was not declared in this scope",
                                                           r"conversion from 'const (?P<value>DeprecatedTypeProperties)' "
                                                           r"to '[\w:]*ScalarType'",
                                                           r"cannot convert .const at::(?P<value>DeprecatedTypeProperties). "
                                                           r"to .c10::ScalarType."),
         files=renamed_api, fixes="replace edits", names="removed name"),
    Trap("c10-hip-names-removed", "c10::hip's HIP names, which torch 2.11 dropped",
         "from torch 2.11 a ROCm torch's c10/hip headers keep CUDA's names (c10::cuda::CUDAGuard, CUDAStream, "
         "CUDACachingAllocator: pytorch#174087), so an extension written for older ROCm torches meets no "
         "c10::hip::HIPGuard; the c10::cuda name the same headers declare takes its place, one regex edit per name",
         _source_edits("name c10::cuda's types where torch 2.11 dropped c10::hip's", "${{ torch.version >= '2.11' }}"),
         log=(r"no (?:type|member) named '(?P<value>\w+)' in namespace 'c10::hip'",
              r"'(?P<value>\w+)' is not a member of 'c10::hip'"),
         files=c10_hip, fixes="replace edits", names="name"),
    Trap("rounding-intrinsics-hidden", "CUDA's directed-rounding intrinsics, which HIP hides",
         "clang's HIP headers define __fadd_rd, __fmul_ru, __fma_rz and the rest only under "
         "OCML_BASIC_ROUNDED_OPERATIONS, which no source can define early enough; each add, sub, mul and fma call "
         "becomes the device library's function (__ocml_add_rtn_f32) clang's own definition calls, the same rounding. "
         "ROCm 6.4's and 7.2's device libraries have them (5.2's has none), and no directed division, reciprocal "
         "or square root (__frcp_rd, __fdiv_ru): those need a hand edit",
         _source_edits("call the device library's directed-rounding functions", "${{ rocm.version >= '6.4' }}"),
         log=(r"use of undeclared identifier '(?P<value>__(?:[fd](?:add|sub|mul|div|sqrt|rcp)|fmaf?)_r[duz])'",),
         files=rounding_calls, fixes="replace edits", names="intrinsic"),
    Trap("device-arch-hostdev-guard", "functions made __host__ __device__ only where __CUDA_ARCH__ is defined",
         "nvcc defines __CUDA_ARCH__ in its device pass only, so `#ifdef __CUDA_ARCH__` / `#define HD __host__ "
         "__device__` / `#else` / `#define HD` gives the device pass device functions; clang compiles a HIP source's "
         "host and device sides with the same declarations and never defines __CUDA_ARCH__ (hipify leaves it), so the "
         "functions stay host-only and a kernel calling one is refused. The guard also tests __HIPCC__, which both "
         "of clang's HIP sides define and g++ never does (fast-rnnt's LogAdd)",
         _source_edits("make the functions host-and-device where clang compiles HIP"),
         log=(r"(?P<file>[^\s:]+\.(?:h|hh|hpp|hxx|cuh|cu|hip|inl|cpp|cc)):\d+:\d+: note: candidate function (?:template )?"
              r"not viable: call to __host__ function from __(?:global|device)__ function",),
         files=host_only_functions, locate=host_only_place, fixes="replace edits", placed=True),
    Trap("hip-form-differs", "a CUDA call HIP declares in another form",
         "hipify renames a call but keeps its arguments, and a few of HIP's differ: bf16 has "
         "__float22bfloat162_rn(float2) for CUDA's __floats2bfloat162_rn(a, b), __float2bfloat16 for its "
         "__float2bfloat16_rn and no __float2bfloat162_rn(x) (__bfloat162bfloat162 of x), CUDA's nv_bfloat16 "
         "typedef is __hip_bfloat16, hipMalloc3DArray takes its flags without CUDA's default of 0, and fp16 has "
         "no half2 __hmax2/__hmin2 (bf16 has); each call becomes the form both take, one regex edit per file and "
         "form (half2's max and min a function written first in the file)",
         _source_edits("call the form HIP declares too"),
         log=(r"use of undeclared identifier '(?P<value>__floats?2bfloat162_rn|__float2bfloat16_rn|__hm(?:ax|in)2)'",
              # half2's, where bf16's header (which declares a bf16 pair's) is included too
              r"no matching function for call to '(?P<value>__hm(?:ax|in)2)'",
              r"unknown type name '(?P<value>nv_bfloat162?)'",
              r"no matching function for call to '(?P<value>hipMalloc3DArray)'"),
         files=other_forms, fixes="replace edits", names="call"),
    Trap("bf16-header-for-host-compiler", "HIP's bf16 header read by the host compiler",
         "ROCm 7's hip_bf16.h (what hipify makes of cuda_bf16.h) is written for clang: under g++ its static_assert "
         "on __bf16_2 fails and __builtin_elementwise_fma is undeclared, while CUDA's header serves g++ too. torch's "
         "build hands .cpp files to the host compiler, so where one includes the header (itself or through the "
         "tree's headers) the host compiler is ROCm's clang++, which reads it",
         _host_clang, log=(r"hip/amd_detail/amd_hip_bf16\.h:\d+:\d+: error: ",), files=host_bf16,
         fixes="an env value"),
    Trap("fp16-from-cublas", "half taken from cuBLAS's header, which hipBLAS's does not bring",
         "cuBLAS's cublas_api.h includes cuda_fp16.h, so CUDA sources that include cuBLAS get `half` with it; "
         "hipBLAS's header, which hipify puts in its place, does not include hip_fp16.h. Each file that includes "
         "cuBLAS without cuda_fp16.h includes it first (hipify maps it to hip/hip_fp16.h)",
         _source_edits("include the fp16 header where cuBLAS's brought it"),
         log=(r"use of undeclared identifier '(?P<value>half2?)'", r"unknown type name '(?P<value>half2?)'"),
         files=cublas_half, fixes="replace edits", names="type"),
    Trap("cucomplex-names", "cuComplex's names, which hipify leaves",
         "hipify maps cuComplex.h to hip/hip_complex.h but leaves its types and functions (cuFloatComplex, cuCrealf, "
         "cuCaddf, make_cuFloatComplex) as they are; HIP declares each under the hip prefix: one regex edit per file",
         _source_edits("rename cuComplex's types and functions to HIP's"),
         log=(r"unknown type name '(?P<value>cu(?:Float|Double)?Complex)'",
              r"use of undeclared identifier '(?P<value>(?:make_)?cu(?:C\w+|FloatComplex|DoubleComplex))'"),
         files=cucomplex, fixes="replace edits", names="name"),
    Trap("cudart-cb-left", "CUDART_CB on a host callback, which hipify leaves",
         "CUDA's runtime marks host callbacks with CUDART_CB (a calling convention, empty but on Windows); HIP has "
         "no such macro, and `static void CUDART_CB cb(void*)` no longer parses: it is dropped",
         _source_edits("drop CUDART_CB"), log=(r"(?:variable or field|unknown type name) .CUDART_CB.",),
         files=cudart_callback, fixes="replace edits"),
    Trap("template-keyword-missing", "a member template called without `template`, which clang requires",
         "on a dependent expression (inside a template) C++ needs `x.template block<3,3>(0,0)`; nvcc takes it "
         "without, clang does not ('reference to non-static member function must be called'). Eigen's member "
         "templates in the CUDA sources get the keyword, which C++11 allows before any template-id",
         _source_edits("write `template` before Eigen's member templates"),
         log=(r"error: reference to non-static member function must be called",
              r"error: (?:use 'template' keyword to treat '\w+' as a dependent template name|missing 'template' keyword)"),
         after_failure=eigen_member_templates, draft=False, fixes="replace edits"),
    Trap("device-trap-intrinsic", "CUDA's __trap(), which HIP does not declare",
         "CUDA code stops a kernel with __trap(); HIP has no such function (use of undeclared identifier), and "
         "clang's __builtin_trap() does the same on both: each call becomes that",
         _source_edits("call __builtin_trap() for CUDA's __trap()"),
         log=(r"use of undeclared identifier '__trap'",), files=device_trap, fixes="replace edits"),
    Trap("cuda-std-to-std", "libcu++'s cuda::std where the standard library has the same",
         "hipify leaves libcu++'s <cuda/std/...> headers, which ROCm does not have; where the tree uses only those "
         "the standard library has too (array, utility, type_traits, limits, ...), HIP's clang takes the standard's "
         "constexpr functions and types in device code: each include and each cuda::std:: becomes the standard's",
         _source_edits("use the standard library for libcu++'s cuda::std"),
         log=(r"fatal error: 'cuda/std/(?P<value>[\w/]+)' file not found",), files=cuda_std, fixes="replace edits"),
    Trap("cuda-home-as-path", "CUDA_HOME used as a path by setup.py",
         "torch's CUDA_HOME is None on a ROCm torch (ROCm's home is ROCM_HOME): `os.path.join(CUDA_HOME, 'include')` "
         "raises TypeError before anything is built, `assert CUDA_HOME is not None` stops it, and `cuda_home = "
         "CUDA_HOME` then `if not cuda_home:` takes the CPU path; ROCm's home stands in where CUDA's is None",
         _source_edits("take ROCm's home where CUDA_HOME is None"),
         log=(r"TypeError: expected str, bytes or os\.PathLike object, not NoneType",
              r"AssertionError: Cannot find CUDA installation"), findings=CPU_ONLY,
         files=cuda_home_used, fixes="replace edits"),
    Trap("cusolver-status-names", "cuSOLVER's status names, which hipify leaves",
         "torch's hipify maps cuSOLVER's handles and calls to hipSOLVER's (cusolverDnCreate to hipsolverDnCreate) "
         "but not its status type and codes (cusolverStatus_t, CUSOLVER_STATUS_SUCCESS); hipsolver.h declares each "
         "under the HIP prefix: one regex edit per file and form",
         _source_edits("rename cuSOLVER's status names to hipSOLVER's"),
         log=(r"unknown type name '(?P<value>cusolverStatus_t)'",
              r"use of undeclared identifier '(?P<value>CUSOLVER_STATUS_\w+)'"),
         files=cusolver_status, fixes="replace edits", names="name"),
    Trap("kernel-launch-spaced", "a kernel launch spaced inside its chevrons",
         "nvcc takes `k << <grid, block >> > (args)` (simple-knn's, formatted by Visual Studio, copied into many "
         "Gaussian-splatting packages); hipify leaves it, and clang reads `<< <` as a shift and stops at `expected "
         "expression`: each launch is written `k<<<grid, block>>>(args)`, one regex edit per file",
         _source_edits("write spaced kernel launches as <<<...>>>"),
         log=(r"\|\s.*\b\w+\s*<<\s+<[^;]*>>\s+>\s*\(",), files=launches_spaced, fixes="replace edits"),
    Trap("atomic-redefined", "a float atomicMax or atomicMin of its own, which HIP's runtime defines",
         "CUDA has no atomicMax/atomicMin for float or double, so packages write their own with atomicCAS; HIP's "
         "runtime declares both, returning the old value, so a definition returning void `cannot be overloaded` "
         "(and one returning float redefines it). Each definition is guarded out for HIP, whose own does the same",
         _source_edits("keep HIP's own float atomicMax/atomicMin"),
         log=(r"\|\s.*\b(?P<value>atomic(?:Max|Min))\s*\(\s*(?:float|double)\s*\*",), files=atomics_defined,
         fixes="replace edits", names="function"),
    Trap("cub-namespace-wrapped", "CUB wrapped in a namespace of the package's own",
         "setup.py's -DCUB_NS_QUALIFIER=::X::cub puts CUB inside namespace X, as torch's own CUDA build does, and the "
         "sources name X::cub::; hipCUB has no such wrapping, so hipify's X::hipcub:: names nothing: the sources "
         "name CUB itself, which hipify maps",
         _source_edits("name CUB itself where the package wraps it in its own namespace"),
         files=cub_namespace_wrapped, fixes="replace edits"),
    Trap("cpp-extension-cuda-sources", "CUDA sources given to a CppExtension",
         "torch hipifies the sources of a CUDAExtension alone: a CppExtension's .cu files reach hipcc as CUDA wrote "
         "them, and CUDA's runtime headers are missing; as a CUDAExtension the same sources are hipified and built "
         "for the archs asked",
         lambda files, _f: ReplaceText("setup.py", r"\bCppExtension\b", "CUDAExtension", regex=True,
                                       says="build the CppExtension as a CUDAExtension") if files else None,
         log=(MISSING_CUDA_HEADER,), after_failure=cpp_extension_only, draft=False, fixes="a replace edit"),
    Trap("half-switch-cuda-name", "torch's fp16 switch tested by its CUDA name",
         "torch turns fp16's operators off with __CUDA_NO_HALF_OPERATORS__ for nvcc and __HIP_NO_HALF_OPERATORS__ for "
         "hipcc, and hipify leaves the CUDA name: code that writes its own __half operators under `#ifdef "
         "__CUDA_NO_HALF_OPERATORS__` drops them on ROCm, and `a < b` on two __half no longer compiles; the "
         "preprocessor tests HIP's name, one regex edit per file",
         _source_edits("test torch's fp16 switches by their HIP names"),
         log=(r"invalid operands to binary expression \('(?:const )?__half(?:2)?' and",), files=half_switches,
         fixes="replace edits"),
    Trap("atomic-add-16bit", "atomicAdd on a 16-bit float, which HIP does not declare",
         "CUDA declares atomicAdd for __half and __nv_bfloat16 (sm_70 and sm_80 up); HIP's runtime declares it for "
         "int, unsigned, float and double only: rocbuild's overloads for __half and __hip_bfloat16, a compare-and-swap "
         "on the 32-bit word that holds the value, are written first in the file (a later ROCm that declares them "
         "would make these a redefinition)",
         _source_edits("add atomicAdd overloads for 16-bit floats"),
         log=(r"(?P<file>[^\s:]+):\d+:\d+: error: no matching function for call to 'atomicAdd'",),
         locate=atomic_add_place, draft=False, fixes="replace edits", placed=True),
    Trap("gemm-ex-compute-type", "cuBLAS's GEMM-Ex compute type given as a data type",
         "cublasGemmEx and its batched forms take their compute type as a cublasComputeType_t (CUBLAS_COMPUTE_32F); "
         "cuBLAS still takes a cudaDataType there (CUDA_R_32F), hipified to a hipDataType, which hipBLAS's v2 API "
         "(torch's extensions build with HIPBLAS_V2) refuses: no matching function for hipblasGemmEx. The argument "
         "becomes CUBLAS_COMPUTE_*, right for both",
         _source_edits("give cuBLAS's GEMM-Ex calls their compute type as one"),
         log=(r"no known conversion from 'hipDataType' to 'hipblasComputeType_t'",),
         files=gemm_ex_compute_type, fixes="replace edits"),
    Trap("shim-gpu-calls-undeclared", "torch's C shim called for the GPU where USE_ROCM is not defined",
         "torch's stable C shim (aoti_torch/c/shim.h) declares its stream, guard and allocator calls under USE_CUDA, "
         "which a ROCm torch's hipified header tests as USE_ROCM; torch's cpp_extension defines it for each ROCm "
         "compile, but a CMake build of a stable-ABI module does not, and aoti_torch_get_current_cuda_stream is "
         "undeclared: each source that calls them defines USE_ROCM first",
         _source_edits("define USE_ROCM before torch's C shim, which declares its GPU calls under it"),
         log=(r"[‘'](?P<value>aoti_torch_\w*cuda\w*)[’'] was not declared in this scope",
              r"use of undeclared identifier '(?P<value>aoti_torch_\w*cuda\w*)'"),
         files=shim_gpu_calls, fixes="replace edits", names="function"),
    Trap("hip-name-suggested", "a CUDA name hipify left, whose HIP counterpart the compiler suggests",
         "hipify maps the names it knows (cusparseSpMM to hipsparseSpMM) and leaves the rest (CUSPARSE_SPMM_ALG_DEFAULT); "
         "where the compiler's `did you mean` names the same name under HIP's prefix, that is the one HIP declares: "
         "each source that names it gets one regex edit",
         _source_edits("rename CUDA names hipify left to their HIP counterparts"),
         log=(r"[‘'](?P<value>(?:CU|cu)\w+)[’'] (?:was not declared in this scope|does not name a type); did you mean "
              r"[‘'](?P<hip>(?:HIP|hip)\w+)[’']",
              r"(?:use of undeclared identifier|unknown type name) '(?P<value>(?:CU|cu)\w+)'; did you mean "
              r"'(?P<hip>(?:HIP|hip)\w+)'"),
         # every name the log suggests, in one fix (pytorch-block-sparse's vendored CUTLASS had cost a try per name)
         locate=suggested_place, draft=False, fixes="replace edits", names="name", placed=True, every=True),
    Trap("thrust-header-missing", "a Thrust algorithm called without its header",
         "CUDA's Thrust headers include one another widely, so code that includes <thrust/device_vector.h> alone "
         "can call thrust::sort; rocThrust's include less: each algorithm's own header (thrust/sort.h, "
         "thrust/sequence.h) is included first in the file that calls it",
         _source_edits("include the headers of the Thrust algorithms called"),
         log=(r"(?P<file>[^\s:]+):\d+:\d+: error: no member named '(?P<value>\w+)' in namespace 'thrust'",),
         locate=thrust_place, draft=False, fixes="replace edits", names="name", placed=True, every=True),
    Trap("void-pointer-arithmetic", "arithmetic on a void*",
         "GCC and nvcc take `p + n` on a void* as a GNU extension that counts bytes; clang, HIP's compiler, refuses it "
         "in C++: each line the compiler names gets its pointer cast to char* (const char*), which counts the same",
         _source_edits("count the bytes of void* arithmetic on a char pointer"),
         log=(r"(?P<file>[^\s:]+):(?P<line>\d+):\d+: error: arithmetic on (?:a pointer|pointers) to void\b",),
         locate=void_arith_place, draft=False, fixes="replace edits", every=True),
    Trap("warp-size-constant", "C10_WARP_SIZE taken as a constant by host code",
         "a ROCm torch's C10_WARP_SIZE is a run-time question to the device in host code (wave32 or wave64), so a "
         "constexpr or template argument made of it does not compile: it is taken as 32 lanes, right for wave32 GPUs "
         "(RDNA: gfx10, gfx11, gfx12), and the device compile for a wave64 GPU stops with an #error",
         _source_edits("take C10_WARP_SIZE as 32 lanes in constant expressions, for wave32 GPUs"),
         log=(r"(?P<file>[^\s:]+):\d+:\d+: note: non-constexpr function 'C10_WARP_SIZE_INTERNAL' cannot be used in "
              r"a constant expression",), locate=warp_size_place, draft=False, fixes="replace edits"),
    Trap("cub-names-left", "CUB's names, which hipify maps only in part",
         "torch's hipify maps CUB's include and a few of its names (cub::DeviceRadixSort) to hipCUB's, and leaves the "
         "rest (cub::DoubleBuffer): hipCUB declares each under hipcub::, one regex edit per file",
         _source_edits("name hipCUB's namespace where CUB's is left"),
         log=(r"use of undeclared identifier '(?P<value>cub)'",), files=cub_left, fixes="replace edits"),
    Trap("cuda-math-constants", "CUDA's math_constants.h, which hipify leaves",
         "hipify maps neither CUDA's math_constants.h nor its constants (CUDART_INF_F, CUDART_PI_F); HIP's "
         "hip/hip_math_constants.h defines the same under the HIP_ prefix: the include and each file's names edited",
         _source_edits("include HIP's math constants and name them"),
         log=(r"fatal error: '?(?P<value>math_constants\.h)'?:? (?:file not found|No such file)",
              r"use of undeclared identifier '(?P<value>CUDART_\w+)'"), files=cuda_math_constants,
         fixes="replace edits", names="name"),
    Trap("ldg-type-missing", "__ldg of a type HIP declares no __ldg for",
         "HIP declares __ldg for its scalar and vector types only, so a template that loads another type through it "
         "(megablocks' c10::Half) finds no matching function; on AMD GPUs HIP's __ldg is a plain load, so each call "
         "becomes one (`*(p)`), one regex edit per file. Only after a build met it: the calls that compile lose nothing",
         _source_edits("load directly where __ldg has no overload"),
         log=(r"no matching function for call to '__ldg'",), after_failure=ldg_loads, draft=False,
         fixes="replace edits"),
    Trap("warp-mask-32bit", "a 32-bit lane mask given to a warp sync builtin",
         "from ROCm 7, HIP's __shfl_*_sync and __ballot_sync take a 64-bit mask and static_assert it; CUDA code "
         "passes 0xffffffff. All 64 bits mean every lane on both wave sizes (HIP drops the upper half on wave32); "
         "a mask computed into a 32-bit variable is lane-mask-variable-32bit's",
         _source_edits(f"widen 32-bit full lane masks to {FULL}"),
         log=(r"The mask must be a 64-bit int",), files=warp_masks, fixes="replace edits"),
    Trap("lane-mask-variable-32bit", "a lane mask kept in a 32-bit variable, by warp code written for 32 lanes",
         "HIP's warp sync builtins static_assert a 64-bit mask, and the code keeps its masks in unsigned variables "
         "(__activemask(), a ballot, 1U << lane). On a wave32 GPU (RDNA: gfx10, gfx11, gfx12) 32 bits name every "
         "lane: overloads that take an unsigned mask and pass it on widened are written first in each such file. "
         "On a wave64 GPU (CDNA, GCN) the code would address half a wavefront: its compile stops with an #error, "
         "and a port by hand is needed there",
         _source_edits("write warp sync overloads for 32-bit lane masks, for wave32 GPUs"),
         log=(r"The mask must be a 64-bit int",
              r"(?P<file>[^\s:]+):\d+:\d+: note: in instantiation of function template specialization "
              r"'__(?:shfl(?:_up|_down|_xor)?|ballot|all|any|match_any)_sync<unsigned int\b"),
         files=lane_mask_variables, locate=mask_place, fixes="replace edits"),
    Trap("kernel-as-pointer", "a kernel handed to a HIP runtime call that takes a pointer",
         "CUDA's cudaFuncGetAttributes and cudaFuncSetAttribute have overloads that take a kernel itself; HIP's take "
         "`const void*` only, so clang finds no matching function: the kernel is cast (valid for CUDA too)",
         _source_edits("cast the kernel to const void* where HIP's runtime takes a pointer"),
         log=(r"no matching function for call to '(?P<value>hipFunc(?:GetAttributes|SetAttribute|SetCacheConfig"
              r"|SetSharedMemConfig))'",), files=kernels_as_pointers, fixes="replace edits"),
    Trap("vector-operators-redefined", "CUDA's vector helper operators defined again over HIP's",
         "HIP's float2/float3/int2... already define arithmetic operators (CUDA's have none), so a helper_math.h-style "
         "header's own make the calls ambiguous, and C++20's std::lerp clashes with its scalar lerp: those "
         "definitions are guarded with #if !defined(__HIP_PLATFORM_AMD__), one regex edit per file; an operator "
         "returning a scalar (a dot product) would change meaning as HIP's element-wise one, and is left to a hand edit",
         _source_edits("guard CUDA's vector helper operators and scalar lerp out of the HIP build"),
         log=(r"use of overloaded operator '\S+' is ambiguous \(with operand types '(?P<value>\w+)' \(aka 'HIP_vector_type",
              r"'(?P<value>lerp)'.*declaration conflicts with target of using declaration",
              r"declaration conflicts with target of using declaration already in scope"),
         files=vector_helpers_defined, fixes="replace edits", names="vector type"),
    Trap("exec-into-locals", "exec() into a function's locals, read back from locals()",
         "from Python 3.13 (PEP 667) exec() in a function writes into a snapshot of its locals, so `exec(code)` then "
         "`locals()['__version__']` raises KeyError: exec gets a dict of its own to write into and read from",
         _source_edits("exec into a dict of its own, read back from it"), log=(r"KeyError: '(?P<value>__\w+__)'",),
         files=exec_into_locals, fixes="replace edits"),
    Trap("rocm-selector-unset", "the variable that selects the ROCm path left unset",
         "setup.py takes its ROCm path only when a variable says so; otherwise it reads torch.version.cuda, "
         "None on a ROCm torch",
         _selector, log=(r"AttributeError: 'NoneType' object has no attribute '(?:split|startswith|replace)'",
                         r"TypeError: .*'NoneType'"),
         files=rocm_selector, fixes="an env value"),
    Trap("cuda-version-read", "torch.version.cuda read as a string",
         "setup.py with no ROCm path reads torch.version.cuda as a string (a build tag, a version compared), and it "
         f"is None on a ROCm torch; read there, it stands at the CUDA release nvcc-version-probe answers "
         f"({NVCC_VERSION}), so the CUDA branch a ROCm torch hipifies goes on",
         _cuda_version, log=(r"AttributeError: 'NoneType' object has no attribute '(?:split|startswith|replace|strip)'",
                             r"TypeError: .*'NoneType'"),
         files=cuda_version_reads, fixes="a replace edit"),
    Trap("build-module-missing", "a module setup.py imports is not in the build environment",
         "build isolation is off (with it on, pip would bring PyPI's CUDA torch), so what setup.py imports must "
         "be listed", _python_module,
         log=(r"ModuleNotFoundError: No module named '(?!(?:" + REMOVED_MODULES + "|" + CUDA_MODULES + r")')"
              r"(?P<value>[\w.]+)'",),
         draft=False, fixes="a build requirement"),
    Trap("cuda-python-module", "setup.py imports NVIDIA's own Python packages",
         "setup.py imports a package of NVIDIA's (the nvidia.* namespace of its CUDA library wheels, cuda-python, "
         "PyCUDA, TensorRT) to find CUDA, cuDNN or NCCL (transformer-engine-torch 2.20.2's build_tools/utils.py "
         "imports `nvidia`): there is no ROCm build of them, and listing one would bring CUDA's. The build needs a "
         "port (or the project's own ROCm fork), by hand",
         lambda _f, _e: None, log=(r"ModuleNotFoundError: No module named '(?P<value>" + CUDA_MODULES + r")'",),
         draft=False, fixes="by hand", names="module"),
    Trap("protobuf-generated-too-old", "protobuf modules generated by an older protoc",
         "a _pb2.py generated by protoc before 3.19 (ppq 0.6.6's ppl_caffe_pb2.py, imported by setup.py) is refused by "
         "protobuf 4 and newer's C++ and upb backends (\"Descriptors cannot be created directly\"); protobuf's own "
         "pure-Python backend still reads it, which PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python selects",
         lambda _f, _e: SetEnv("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python"),
         log=(r"TypeError: Descriptors cannot be created directly",), draft=False, fixes="an env value"),
    Trap("build-module-removed", "setup.py imports a module its python no longer has",
         "numpy.distutils is gone from numpy 2 (and from every numpy for Python 3.12 and newer), and `imp` from Python "
         "3.12: no requirement brings them back. setup.py needs a port (setuptools, importlib), or an older python",
         lambda _f, _e: None, log=(r"ModuleNotFoundError: No module named '(?P<value>" + REMOVED_MODULES + r")'",),
         draft=False, fixes="by hand", names="module"),
    Trap("std-include-missing", "a standard header the source relied on torch's headers to include",
         "torch's and the standard library's headers include fewer of their neighbours with each release (torch 2.x, "
         "GCC 13+): a source that used std::ofstream or uint8_t without including <fstream> or <cstdint> stops "
         "compiling; the compiler names the header, which is included first in that source",
         _std_include, log=(r"(?P<file>[^\s:]+):\d+:\d+: note: .{1,80} is defined in header [‘']<(?P<value>[\w./]+)>[’']; "
                            r"this is probably fixable",
                            r"(?P<file>[^\s:]+):\d+:\d+: error: (?:implicit instantiation of undefined template "
                            r"'std::(?:__1::)?|unknown type name '(?:std::)?|no member named ')(?P<value>" + CLANG_WHAT
                            + r")\b"),
         locate=include_place, draft=False, fixes="a replace edit", names="header"),
    Trap("cuda-library-linked", "a CUDA runtime library linked by name",
         "setup.py links CUDA's driver or runtime library itself (-lcuda, libraries=['cudart']); on ROCm, torch links "
         "the extension to HIP's runtime, which stands for both, and there is no libcuda: the name is dropped",
         lambda files, _f: _drop_flag(files, None),
         log=(r"(?:cannot find|unable to find library) -l(?P<value>cuda|cudart|nvToolsExt|:libcudart_static\.a)(?![\w.])",),
         locate=linked_library, files=cuda_libraries, fixes="a replace edit", names="library"),
    Trap("cuda-math-library-linked", "a CUDA math library linked by name",
         "setup.py links cuBLAS, cuSPARSE, cuRAND, cuFFT or cuSOLVER itself (libraries=['cusparse']); hipify makes the "
         "calls hipSPARSE's (cusparseSpMM to hipsparseSpMM), which ROCm's library of that name holds: it is linked "
         "instead, and --install-missing brings its package into a root",
         _source_edits("link ROCm's math libraries for CUDA's"),
         log=(r"(?:cannot find|unable to find library) -l(?P<value>" + "|".join(CUDA_MATH_LIBRARIES)
                            + r")(?![\w.])",),
         locate=lambda files, _m: cuda_math_libraries(files), files=cuda_math_libraries, fixes="a replace edit",
         names="library"),
    Trap("cuda-flag-for-hipcc", "a CUDA-only compiler flag given to hipcc",
         "nvcc's flags (--expt-relaxed-constexpr, -Xptxas, ...) are unknown to clang, which refuses them",
         _drop_flag, log=(r"clang(?:\+\+)?(?:-\d+)?: error: (?:unsupported option|unknown argument):? '(?P<value>[^']+)'",),
         files=cuda_flags_for_hipcc, locate=refused_flag, fixes="a replace edit"),
    Trap("cxx11-abi-forced", "libstdc++'s old ABI asked for by setup.py",
         "setup.py passes -D_GLIBCXX_USE_CXX11_ABI=0, as torch's wheels once needed; torch 2.7 and newer are built "
         "with the C++11 ABI, and torch's BuildExtension passes the ABI its torch was built with: the forced flag "
         "leaves torch's own symbols undefined. It is dropped",
         _source_edits("drop the forced old libstdc++ ABI"), files=abi_forced, fixes="replace edits"),
    Trap("nvcc-flag-value", "an nvcc flag's value taken by clang for a file",
         "nvcc's options that take a value (--threads 2) are not clang's: clang drops the flag and reads the "
         "value as an input file", _drop_pair,
         log=(r"clang(?:\+\+)?(?:-\d+)?: error: no such file or directory: '(?P<value>[^'/]{1,40})'",),
         locate=flag_with_value, draft=False, fixes="a replace edit"),
    Trap("gpu-arch-at-build", "the GPU targets taken from the build machine's GPU",
         "'native' (or an empty --offload-arch) asks the build machine's GPU, which a builder may not have",
         _arch, log=(r"invalid target ID 'native'", r"cannot determine (?:amdgcn|AMDGPU) architecture",
                     r"--offload-arch=(?:\s|$)"),
         files=native_arch, fixes="an env value"),
    Trap("pybind11-downloaded", "CMake downloads pybind11 while it builds",
         "a project's CMake has FetchContent download pybind11 (from GitHub), which a confined step cannot reach: "
         f"PyPI's {PYBIND11_SDIST} sdist, a whole CMake project of a release that knows the target Python, comes as "
         "an extra source, and each FetchContent_Declare(pybind11 ...) takes it as its SOURCE_DIR",
         _source_edits(f"give FetchContent PyPI's {PYBIND11_SDIST} for pybind11, instead of a download",
                       sources=(ExtraSdist("pybind11", PYBIND11_SDIST),)),
         log=(r"(?:downloading|unable to access|Failed to clone)\W+https?://github\.com/pybind/pybind11",),
         files=pybind11_fetched, fixes="an extra source and replace edits"),
    Trap("libtorch-downloaded", "CMake downloads libtorch while it builds",
         "a project's CMake has FetchContent download a libtorch archive (download.pytorch.org's, for the CPU, of "
         "another release), which a confined step cannot reach, and which is not the torch the extension is built "
         "against: the target python's torch package holds the same include/ and lib/, and each "
         "FetchContent_Declare(libtorch ...) takes it as its SOURCE_DIR",
         _source_edits("give FetchContent the target python's torch for libtorch, instead of a download"),
         log=(r"(?:downloading|unable to access)\W+https?://download\.pytorch\.org/libtorch/",),
         files=libtorch_fetched, fixes="replace edits"),
    Trap("downloads-at-build", "the build reaches the network",
         "a confined step has no network, and a download is not built for the archs asked: give what it fetches as "
         "a source or file entry of the recipe, or set the package's force-build variable so it compiles; only "
         "where nothing else can do, say `network: true` for the step, with a comment why",
         _set_from_files, log=NETWORK_FAILED, files=downloads, fixes="an env value", names="blocked host"),
    Trap("write-outside-work", "a step writes outside its work folder",
         "a confined step may write its work folder and its own /tmp only, never the system or the root (a pip "
         "install into the system python, a header into /usr/local): point the write at the build folder or "
         "TMPDIR, and what the build needs into requires: (rocbuild installs it, outside the steps)",
         lambda _f, _e: None, log=(r"Read-only file system: '(?P<value>[^']+)'",
                                   r"(?P<value>/\S+?)'?:? Read-only file system",
                                   r"cannot (?:touch|create(?: directory)?) '?‘?(?P<value>/[^':’]+)"),
         draft=False, fixes="by hand", names="refused write"),
    Trap("gpu-at-build", "a build step asks the GPU",
         "a confined step sees no GPU (no /dev/kfd, /dev/dri), and a builder may have none: give the archs with "
         "--arch and the package's arch variable instead of a probe (rocminfo, hipGetDeviceCount)",
         lambda _f, _e: None, log=(r"ROCk module is NOT loaded", r"(?:Unable to open|cannot open|failed to open).{0,20}/dev/kfd",
                                   r"/dev/kfd.{0,40}(?:No such file|Permission denied)", r"hipErrorNoDevice",
                                   r"no ROCm-capable device is detected",
                                   r"['\"/](?:rocminfo|rocm_agent_enumerator|amdgpu-arch|rocm-smi)['\"].{0,20}returned non-zero"),
         draft=False, fixes="by hand"),
    Trap("cg-reduce-missing", "CUDA's cooperative_groups/reduce.h, which HIP lacks",
         "HIP's cooperative groups have thread_block_tile and its shfl_xor, but not cg::reduce and its operators "
         "(cg::plus, cg::less, ...); in place of the include, for HIP, a butterfly over the tile's shfl_xor that "
         "leaves every lane the reduction, as cg::reduce does (a tile's size is a power of two)",
         _source_edits("write cg::reduce for HIP where cooperative_groups/reduce.h is included"),
         log=(r"fatal error: '?(?P<value>cooperative_groups/reduce\.h)'?:? (?:file not found|No such file)",),
         files=cg_reduce, fixes="replace edits"),
    Trap("cuda-feature-missing", "a CUDA feature HIP has no counterpart for",
         "some of CUDA's headers have no HIP equivalent to map to (cooperative_groups' memcpy_async and "
         "labeled_partition, libcu++'s "
         "cuda/pipeline and cuda/barrier and its cuda::std, which hipify leaves, WMMA's mma.h, CUTLASS and CuTe, "
         "NVTX, cuda_fp8.h, whose __nv_fp8 types hip/hip_fp8.h has under other names and kinds), nor NVVM's PTX intrinsics "
         "(__nvvm_read_ptx_sreg_laneid: HIP's __lane_id()) or PTX written inline (asm(\"mov.u64 %0, %%globaltimer;\")), "
         "nor its toolkit's programs (bin2c, ptxas, fatbinary) a "
         "CMake project runs on PTX: no package brings them; the code that uses them must be "
         "ported, or left out of the ROCm build, by hand",
         lambda _f, _e: None, log=(r"fatal error: '?(?P<value>" + CUDA_ONLY_FEATURES + r")'?:? (?:file not found"
                                   r"|No such file)", r"use of undeclared identifier '(?P<value>__nvvm_\w+)'",
                                   r"No matching distribution found for (?P<value>cutlass_library|nvidia[-_]cutlass\S*)",
                                   r"Could not find \w+ using the following names: (?P<value>bin2c|ptxas|fatbinary|nvlink"
                                   r"|cuobjdump|nvdisasm)\b",
                                   r"invalid (?:output|input) constraint '(?P<value>[^']*)' in asm",
                                   # libcu++'s cuda::std (cuda-moea's cuda::std::identity): ROCm's libhipcxx is hip::std
                                   r"use of undeclared (?:identifier|namespace) '(?P<value>cuda)'",
                                   # grouped-gemm's `::cuda::std::tuple<int&>`
                                   r"no member named '(?P<value>cuda)' in the global namespace",
                                   # cooperative groups HIP does not have (gsplat's cg::labeled_partition)
                                   r"no member named '(?P<value>" + CG_MISSING + r")' in namespace 'cooperative_groups'"),
         draft=False, fixes="by hand", names="CUDA feature"),
    Trap("torch-cmake-rocm-path", "torch's CMake package, which looks for ROCm at ROCM_PATH or /opt/rocm only",
         "a ROCm torch's find_package(Torch) runs its LoadHIP.cmake, which takes ROCm from ROCM_PATH or /opt/rocm; "
         "elsewhere (a distro's ROCm under /usr) it says `Building without ROCm support`, HIP_FOUND stays false, and "
         "the project takes its CUDA path or stops (vLLM's `Can't find CUDA or HIP installation`). ROCM_PATH is set; "
         "on a distro layout clang's folder and the device libraries too, which ROCM_PATH=/usr would hide from clang; "
         "and the ROCm packages LoadHIP.cmake finds REQUIRED are listed, which CMake would otherwise name one per "
         "try, stopping at each (fast-rnnt spent five tries on rocBLAS, MIOpen, hipFFT and rocSOLVER)",
         _rocm_for_load_hip, log=(r"ROCM_PATH environment variable is not set and /opt/rocm does not exist",),
         files=torch_cmake, fixes="env values and build requirements"),
    Trap("hip-found-renamed", "HIP_FOUND, which torch's CMake no longer sets",
         "torch's LoadHIP.cmake, reworked in 2025 to find ROCm's packages by CMAKE_PREFIX_PATH, says a ROCm torch by "
         "PYTORCH_FOUND_HIP; HIP_FOUND was set by the FindHIP module it used before. A CMakeLists.txt of that time "
         "(vLLM's forks) then takes neither path (`Can't find CUDA or HIP installation`): each test reads "
         "(HIP_FOUND OR PYTORCH_FOUND_HIP), as vLLM's own now does",
         _hip_found_or_torchs, log=(r"Can't find CUDA or HIP installation",), files=hip_found, fixes="a replace edit"),
    Trap("requires-python-bound", "an upper bound on Python that the target python is past",
         "a package's requires-python (`>=3.12,<3.14`) is its authors' guess at what they tested, and pip refuses "
         "the build before anything compiles on a newer python; once a build met it, the upper bound is dropped "
         "from the sdist's metadata, so the wheel claims a python its authors have not tried, as the build asked",
         _unbounded_python, log=(r"requires a different Python: (?P<value>[\d.]+) not in",),
         after_failure=python_bound, draft=False, fixes="a replace edit", names="python"),
    Trap("cu-suffix-after-hipify", "a build_ext that tests a source for .cu, which torch has made .hip",
         "torch's BuildExtension hipifies a ROCm build's sources before it compiles them, so a build_ext of the "
         "package's own that treats .cu sources apart (deformops names their objects <stem>.cuda.o, lest they "
         "collide with <stem>.cpp's) meets .hip instead: `ninja: multiple rules generate ...o`. The test takes "
         ".hip too",
         _cu_or_hip, log=(r"multiple rules generate \S+(?<!_hip)\.o",), files=cu_suffix_test, fixes="a replace edit"),
    Trap("python-version-allow-list", "a CMake list of the Python versions it accepts",
         "vLLM's CMake, and its forks', stops at configure on a Python its PYTHON_SUPPORTED_VERSIONS does not name "
         "(Python version (3.14) is not one of the supported versions), though nothing in the build depends on it; "
         "the target python's version is added to the list",
         _python_listed, log=(r"Python version \((?P<value>3\.\d+)\) is not one of the supported versions",),
         files=python_versions, fixes="a replace edit", names="python"),
    Trap("extension-behind-argv", "extensions built only for a command pip never runs",
         "setup.py adds its extensions only when sys.argv names build_ext (or install, develop); pip's backend runs "
         "bdist_wheel, so the wheel comes out without them: the test is made true",
         _argv_true, findings=CPU_ONLY, files=argv_gate, fixes="a replace edit"),
    Trap("limited-api-with-pybind11", "Python's limited API asked for by an extension that includes pybind11",
         "with py_limited_api=True, torch's BuildExtension adds -DPy_LIMITED_API to every compile, hipcc's too, and "
         "pybind11 (torch/extension.h) needs the full C API (Py_buffer, PyTypeObject's members): the extension is "
         "built for the full API, and its wheel is not tagged abi3",
         _source_edits("build for the full C API, which pybind11 needs"),
         log=(r"error: unknown type name 'Py_buffer'",
                         r"member access into incomplete type 'PyTypeObject'"),
         files=limited_api_with_pybind11, fixes="replace edits"),
    Trap("extension-in-subfolder", "the torch extension's setup.py sits in a folder the build never runs",
         "the sdist's own build (its pyproject.toml or setup.cfg) compiles nothing, and the CUDAExtension stands in "
         "a setup.py further down, which neither pip nor rocbuild runs: the package must be built from that folder, "
         "or packaged again, by hand", lambda _f, _e: None, findings=CPU_ONLY, after_failure=nested_setup,
         draft=False, fixes="by hand", names="setup.py"),
    Trap("extensions-by-argv", "extensions setup.py builds only for flags on its command line",
         "setup.py builds its kernels only where its own command line says so (apex and its copies: `--cpp_ext "
         "--cuda_ext` in sys.argv), which pip never passes: without them the wheel is pure Python; the wheel step "
         "hands them to setuptools as `--config-settings=--build-option=...` (its optional features, --xentropy and "
         "the like, are left to the recipe's author)",
         lambda files, _f: BuildOption(files.value) if files and files.value else None, findings=CPU_ONLY,
         files=argv_flags, fixes="a config setting"),
    Trap("version-changed-unless-release", "a version setup.py changes unless a variable says it is a release",
         "setup.py adds a date or a commit to its version unless a variable is set (torch-encoding's RELEASE), so "
         "the wheel built from a release's sdist says another version (1.2.1b20261203 for 1.2.1), which pip and a "
         "lock file refuse: the variable is set", _set_from_files,
         log=(r"the wheel's version is \S+, where the recipe builds \S+ from its sdist",),
         files=version_suffix, fixes="an env value", names="variable"),
    Trap("kernels-installed-aside", "setup.py installs its kernels beside the wheel",
         "setup.py runs another setup script's install itself (hqq: `python setup_cuda.py install`, from egg_info), "
         "so that script's extension goes into the python that runs the build, or fails to in a confined step, and "
         "never into the wheel: build that script as a wheel of its own (its folder, a recipe of its own), by hand",
         lambda _f, _e: None, findings=CPU_ONLY, after_failure=kernels_installed_aside, draft=False,
         fixes="by hand", names="setup script"),
    Trap("prebuilt-cuda-binary", "a library shipped built for CUDA beside its sources",
         "the sdist carries a shared library its author built with nvcc, and CUDA sources its build never "
         "compiles; the package loads that library at run time: building it for ROCm (hipify, hipcc) is a port "
         "by hand", lambda _f, _e: None, findings=CPU_ONLY, after_failure=prebuilt_binary, draft=False,
         fixes="by hand", names="library"),
    Trap("nvcc-build-of-its-own", "setup.py compiles its CUDA sources with nvcc itself",
         "setup.py runs nvcc on its .cu files itself (or a Makefile it runs does: haste-pytorch's `make haste`) "
         "instead of torch's cpp_extension, which hipifies them; there is no nvcc here, and hipcc takes CUDA sources "
         "only once hipified: a port by hand (a CUDAExtension, or hipify and hipcc in its build)",
         lambda _f, _e: None, findings=CPU_ONLY,
         log=(r"No such file or directory: '(?P<value>nvcc)'",
              r"\bmake(?:\[\d+\])?: (?P<value>nvcc): (?:No such file or directory|Command not found)"),
         after_failure=nvcc_build, draft=False,
         fixes="by hand"),
    Trap("cmake-cuda-only", "a CMake project whose GPU language is CUDA only",
         "CMake asks for nvcc where a project names CUDA as a language and has no HIP path, and there is no switch "
         "to set: CMake builds its CUDA sources as HIP (its HIP language, the sources hipified in place by torch's "
         "hipify first, HIP's runtime and ROCm's libraries behind CUDA's imported targets); what CMake gave nvcc "
         "alone no longer applies, and code written for NVIDIA's hardware alone still needs a port",
         _cmake_as_hip, log=(r"Failed to find nvcc", r"No CMAKE_CUDA_COMPILER could be found",
                                   r"Compiling the CUDA compiler identification source file"),
         findings=CPU_ONLY,  # a CUDA backend CMake leaves out where it finds no nvcc (serron's check_language)
         files=cmake_cuda_only, fixes="replace edits, a variable and a step"),
    Trap("torch-thc-removed", "a header of torch's THC, removed in torch 1.11",
         "torch 1.11 removed THC (THH once hipified): THC.h and its macros (THCudaCheck, THCState) are gone, and "
         "their ATen counterparts (at::cuda::getCurrentCUDAStream, C10_CUDA_CHECK) take their place in a port by "
         "hand; no package brings it back",
         lambda _f, _e: None, log=(r"fatal error: '?(?P<value>TH[CH]/TH[CH]\w*\.(?:h|cuh))'?:? (?:file not found"
                                   r"|No such file)",),
         draft=False, fixes="by hand", names="header"),
    Trap("sdist-incomplete", "the sdist lacks a file its setup.py reads",
         "an sdist holds only what its MANIFEST.in (or setuptools' defaults) put in: a setup.py may name CUDA sources, a "
         "requirements.txt or a package folder that were never packed; no edit brings them: build from the project's "
         "git tag instead (`source: git:` with its `ref:`)",
         lambda _f, _e: None, log=(r"FileNotFoundError: \[Errno 2\] No such file or directory: "
                                   r"'(?P<value>[^'/][^']*|[^']+\.(?:cuh?|cpp|cc|hp?p?))'",
                                   r"error: package directory '(?P<value>[^']+)' does not exist",
                                   # a header of its own (quoted, no folder) never packed: not one of CUDA's
                                   r"fatal error: '?(?!(?:cuda|cu[a-z]+|nv|device_|sm_\d|crt|mma|thrust|cub|math_constants)\w*\.)"
                                   r"(?!(?:math|std\w+|string|limits|float|assert|errno|time|ctype|wchar|signal|fenv"
                                   r"|complex|inttypes|unistd|pthread|omp|malloc|alloca"
                                   # a system library's (evnn-pytorch's <cblas.h>: libopenblas-dev), never packed
                                   r"|cblas|lapacke?|f77blas|openblas\w*|mkl\w*|png|jpeglib|zlib|mpi|nccl|rccl|gmp"
                                   r"|fftw3f?|hdf5|lz4|zstd"
                                   # Python's own (a target that includes torch/extension.h without its folder)
                                   r"|Python|pyconfig)\.h\b)"
                                   r"(?P<value>(?:\.\.?/)*[\w.-]+\.(?:h|hpp|cuh))'?:? (?:file not found|No such file)",
                                   # or beside it, named by a relative path (tvdcn's "../deform_conv2d.h")
                                   r"fatal error: '?(?P<value>(?:\.\.?/)+[\w.-]+(?:/[\w.-]+)*\.(?:h|hpp|cuh))'?:? "
                                   r"(?:file not found|No such file)"),
         draft=False, fixes="by hand", names="file"),
    Trap("sdist-header-missing", "the sdist lacks headers of the package's own",
         "a MANIFEST.in that packs sources but not headers leaves folders of the package's own without them "
         "(pipablepytorch3d 0.7.6 packs pytorch3d/csrc/pulsar/ with its .cpp and .cu files and not one .h): no edit "
         "brings them: build from the project's git tag instead (`source: git:` with its `ref:`)",
         lambda _f, _e: None,
         log=(r"fatal error: '?(?P<value>[\w.-]+(?:/[\w.-]+)+\.(?:h|hpp|hh|cuh|inl))'?:? (?:file not found|No such file)",),
         locate=header_not_packed, draft=False, fixes="by hand", names="file", placed=True),
    Trap("system-library-header", "a system library's header the build includes is not installed",
         "a package that links a system library (OpenBLAS for cblas.h, libpng, zlib) needs its -dev package, which no "
         "pip requirement brings: requires.headers names it, and --install-missing (or `rocbuild root install`) "
         "installs its Debian package into a root",
         _system_header, log=(r"fatal error: '?(?P<value>" + "|".join(re.escape(h) for h in SYSTEM_HEADERS)
                              + r")'?:? (?:file not found|No such file)",),
         draft=False, fixes="a build requirement", names="header"),
    Trap("rocm-package-missing", "a ROCm library the build needs is not installed",
         "ROCm's libraries come in separate packages; --install-missing brings what requires: names into a root. The "
         "drafter lists each ROCm package the CMake files find REQUIRED, which CMake would otherwise name one per "
         "try, stopping at each",
         _rocm_package, log=(r'provided by "(?P<value>[\w-]+)"',
                             # a ROCm library's header (hipblas/, rocprim/), not one of the package's own folders
                             r"fatal error: '?(?!(?:" + CUDA_ONLY_FEATURES + r"|TH[CH]/[\w.]+)\b)"
                             r"(?P<value>(?:" + ROCM_HEADER.pattern.lstrip("^") + r")[\w./]*\.h(?:pp)?)'?:? "
                             r"(?:file not found|No such file)"),
         files=rocm_packages_found, fixes="a build requirement"),
    Trap("rocm-library-missing", "a library a ROCm CMake package names is not installed",
         "a distribution may ship a library a ROCm CMake package's targets name apart from its -dev package (Debian's "
         "hipSOLVER names libhipsolver_fortran, which only libhipsolver-fortran1 holds); --install-missing brings "
         "what requires.libraries names into a root",
         lambda _f, failure: Require("libraries", (failure.value,)) if failure and failure.value else None,
         log=(r'The imported target "(?:\w+::)?(?P<value>\w+)" references the file',),
         draft=False, fixes="a build requirement"),
    Trap("compiler-killed", "a compiler killed by signal 9",
         "most often out of memory: too many parallel compile jobs for the memory one job takes",
         _memory, log=(r"Killed signal terminated program", r"unable to execute command: Killed",
                       r"failed due to signal 9", r"^\[exit (?:-9|137)\]$"),
         draft=False, fixes="memory-per-job"),
    Trap("rocm-home-usr", "ROCM_HOME is /usr",
         "cpp_extension puts -isystem $ROCM_HOME/include first: /usr/include then hides libstdc++'s own "
         "folders from #include_next", lambda _f, _e: SetEnv("ROCM_HOME", "${{ torch.rocm_home or rocm.path }}"),
         log=(r"fatal error: '?(?:stdlib|math)\.h'?:? (?:file not found|No such file or directory)",),
         draft=False, fixes="an env value"),
    Trap("stale-cuda-binaries", "CUDA binaries packed in an sdist that compiles its kernels at run time",
         "an sdist can carry shared objects built on its maintainer's CUDA machine (sevenn 0.13.0 packs the pair_d3.so "
         "its load() compiled there, linking libcudart.so.12 and libc10_cuda.so); the wheel would ship them, and the "
         "device-code check refuses a wheel that links CUDA. They are removed before the build: the package's load() "
         "builds them again on the user's machine, for ROCm",
         _remove_prebuilt, findings=("links_cuda",), files=prebuilt_cuda, fixes="remove patches"),
    Trap("cuda-torch-in-build", "built against a CUDA torch",
         "with build isolation on, pip brings PyPI's CUDA torch for the build, and the module links libc10_cuda.so",
         lambda files, _f: RocmTorch() if files else None, findings=("links_cuda",), files=torch_extension,
         draft=False, fixes="a build requirement"),
    Trap("hip-platform-nvidia", "hipcc took the NVIDIA platform",
         "without a GPU to look at, hipcc picks NVIDIA's platform where it finds nvcc, or where HIP_PLATFORM says so",
         # (not make's "make: nvcc: No such file or directory": a Makefile that runs nvcc itself, nvcc-build-of-its-own)
         lambda _f, _e: SetEnv("HIP_PLATFORM", "amd"),
         log=(r"nvcc fatal\s*:", r"(?<!make: )(?<!\d\]: )\bnvcc: (?:not found|No such file)"),
         draft=False, fixes="an env value"),
    Trap("kernels-at-run-time", "kernels compiled at run time",
         "cpp_extension.load() compiles on the user's machine: the wheel holds no device code, only the sources",
         _jit, files=jit_kernels, fixes="an expectation"),
    Trap("triton-kernels", "Triton kernels, compiled on the user's machine",
         "a package whose kernels are Triton's (@triton.jit) compiles nothing at install: its wheel is the same for "
         "every GPU and holds no device code, and Triton compiles the kernels where they run (with ROCm's Triton)",
         lambda files, _f: Expect("jit") if files else None, files=triton_kernels, fixes="an expectation"),
    Trap("cuda-triton-required", "PyPI's triton named as a dependency",
         "PyPI's `triton` has NVIDIA's backend alone; on ROCm the `triton` module is pytorch-triton-rocm's (the one a "
         "ROCm torch pins), and the wheel's requirement names it instead, so that pip never brings the other",
         _requoted("pytorch-triton-rocm", "require ROCm's Triton (pytorch-triton-rocm) for PyPI's triton in {file}"),
         files=cuda_triton, fixes="a replace edit"),
    Trap("openmp-for-hip-compiler", "OpenMP asked of the HIP compiler, whose clang has none installed",
         "hipcc's clang compiles the host code of .cu/.hip files too; GCC's libgomp is not its OpenMP, so an omp.h "
         "there needs the OpenMP of that clang (Debian: libomp-N-dev for /usr/lib/llvm-N; ROCm: openmp-extras)",
         lambda _f, _e: HipOpenMP(), log=(r"fatal error: 'omp\.h' file not found",), files=omp_in_device_sources,
         fixes="a build requirement"),
    Trap("pip-run-by-setup", "setup.py runs pip itself",
         "a build must not change the python it builds for: pip run from setup.py removes or installs packages "
         "there (or in the system's python, which refuses: externally-managed-environment), and a confined step has "
         "no network. The call is dropped; what it would install belongs in requires:",
         _source_edits("drop setup.py's own pip runs"), log=(r"error: externally-managed-environment",),
         files=pip_in_setup, fixes="a replace edit"),
    Trap("hip-runtime-binding", "a library that binds HIP's runtime without kernels of its own",
         "it links libamdhip64 but compiles no HIP source: no device code is expected",
         lambda files, _f: Expect("runtime") if files else None, files=runtime_binding, fixes="an expectation"),
)
BY_ID = {trap.id: trap for trap in TRAPS}


@dataclass(frozen=True)
class Hit:
    """A trap seen in a failure (or in the build files alone), with its evidence and the fix it gives."""

    trap: Trap
    evidence: Evidence  # the failure's (log line, finding), or the build files' for a draft
    files: Evidence | None  # the build files' evidence, when the tree was read
    fix: Fix | None

    def to_json(self) -> dict[str, object]:
        return {"trap": self.trap.id, "title": self.trap.title, "why": self.trap.why,
                "evidence": {"where": self.evidence.where, "text": self.evidence.text, "value": self.evidence.value},
                "build_files": {"where": self.files.where, "text": self.files.text} if self.files else None,
                "fix": {"kind": type(self.fix).__name__, "text": "\n".join(self.fix.yaml()),
                        "says": self.fix.describe()} if self.fix else None}


def in_build_files(files: BuildFiles) -> list[Hit]:
    """What the drafter applies: each trap whose build-file detector fires and that gives a fix."""
    hits = []
    for trap in TRAPS:
        found = trap.files(files) if trap.files and trap.draft else None
        fix = trap.fix(found, None) if found else None
        if found and fix:
            hits.append(Hit(trap, found, found, fix))
    return hits


def in_log(lines: list[tuple[int, str]], files: BuildFiles | None) -> list[Hit]:
    """Each trap whose log detector matches one of `lines` ((log line, text), the errors first), once, at
    its first match."""
    whole = "\n".join(text for _, text in lines)  # most traps' patterns match nowhere in it: those are not run
    hits = []
    for trap in TRAPS:
        alive = tuple(p for p in map(needled, trap.log) if p.anywhere(whole))
        found = _first_match(trap, lines, alive) if alive else None
        if found is None:
            continue
        number, text, match = found
        value = match.groupdict().get("value")
        if value is None and trap.names == "blocked host":  # "name resolution" names no host: the URL before it
            value = _host_before(lines, number)
        evidence = Evidence(f"log:{number}", text.strip(), value)
        tree = None
        if files is not None and trap.locate is not None and _names_place(match):
            tree = trap.locate(files, match)
            if tree is None and trap.placed:
                continue
            if trap.every:
                tree = _every_place(trap, files, lines, alive, tree)
        elif files is not None:
            tree = _after_failure(trap, files)
        hits.append(Hit(trap, evidence, tree, trap.fix(tree, evidence)))
    return hits


def _first_match(trap: Trap, lines: list[tuple[int, str]],
                 alive: tuple[Needled, ...]) -> tuple[int, str, re.Match[str]] | None:
    """The trap's first line in the log; for a trap that locates its fix, the first that names a place (clang's
    note naming the file of a warp call), where there is one."""
    first = None
    for number, text in lines:
        match = trap.on_log(text, alive)
        if match is None:
            continue
        first = first or (number, text, match)
        if trap.locate is None or _names_place(match):
            return number, text, match
    return first


def _every_place(trap: Trap, files: BuildFiles, lines: list[tuple[int, str]], alive: tuple[Needled, ...],
                 first: Evidence | None) -> Evidence | None:
    """The places of every line of the log the trap matches, as one evidence (the first place's, with all)."""
    places = list(first.also) if first else []
    for _, text in lines:
        match = trap.on_log(text, alive)
        found = trap.locate(files, match) if match is not None and trap.locate is not None else None
        places += [p for p in found.also if p not in places] if found else []
    return _in_sources(places) or first


def _names_place(match: re.Match[str]) -> bool:
    return bool(match.groupdict().get("value") or match.groupdict().get("file"))


# A URL a log names before a download fails ("Downloading rustup-init from https://static.rust-lang.org/...").
URL_HOST = re.compile(r"\b(?:https?|ftp|git|ssh)://(?:[^@/\s]+@)?(?P<host>[A-Za-z0-9][\w.-]*\.[A-Za-z]{2,})")
HOST_LOOKBACK = 80  # lines: what a tool prints between naming a URL and failing to reach it


def _host_before(lines: list[tuple[int, str]], number: int) -> str | None:
    """The host of the last URL the log names in the lines before `number` (a traceback's frames between)."""
    before = sorted({n: text for n, text in lines if number - HOST_LOOKBACK <= n <= number}.items())
    hosts = [m.group("host") for _, text in before for m in URL_HOST.finditer(text)]
    return hosts[-1] if hosts else None


def in_findings(codes: list[tuple[str, str]], files: BuildFiles | None) -> list[Hit]:
    """Traps a failed check's findings ((code, what it says)) point at: only where the build files show the
    trap too (a CPU-only module is explained by a force variable the build files read, not assumed)."""
    hits = []
    for trap in TRAPS:
        found = next(((c, said) for c, said in codes if c in trap.findings), None)
        tree = _after_failure(trap, files) if found and files else None
        if found and tree:
            hits.append(Hit(trap, Evidence(f"finding {found[0]}", found[1]), tree, trap.fix(tree, None)))
    return hits


def _after_failure(trap: Trap, files: BuildFiles) -> Evidence | None:
    detector = trap.after_failure or trap.files
    return detector(files) if detector else None


REFERENCE_START = "<!-- generated by `rocbuild recipes traps --reference`: edit src/rocbuild/draft/traps.py -->"
REFERENCE_END = "<!-- end of the generated trap catalogue -->"


def catalogue_json() -> list[dict[str, object]]:
    return [{"id": t.id, "title": t.title, "why": t.why, "fix": t.fixes, "drafter_applies": t.draft and t.files is not None,
             "build_files": _first_line(t.files.__doc__) if t.files else None, "log": list(t.log),
             "findings": list(t.findings)} for t in TRAPS]


def reference_text() -> str:
    """The catalogue as the recipe reference lists it (docs/recipes.md), generated from TRAPS."""
    rows = ["| id | what | why | seen in the build files | seen in a failure | fix |", "| --- | --- | --- | --- | --- | --- |"]
    for t in TRAPS:
        seen = [f"`{p}`".replace("|", "&#124;") for p in t.log] + [f"check finding `{c}`" for c in t.findings]
        files = _first_line(t.files.__doc__) if t.files else ""
        files += " (the drafter applies the fix)" if t.files and t.draft else ""
        rows.append(f"| `{t.id}` | {t.title} | {t.why} | {files or '-'} | {'<br>'.join(seen) or '-'} | {t.fixes} |")
    return "\n".join([REFERENCE_START, "", *rows, "", REFERENCE_END]) + "\n"


def _first_line(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split()).rstrip(".")
