"""Whether an sdist is a PyTorch extension, and what its build files say about building it for ROCm.

torch.utils.cpp_extension hipifies CUDA sources and compiles them with hipcc when the torch it runs with is a
ROCm build, but each package hides the rest behind its own variables and traps: an arch variable of its own
(with its own separator) that makes torch ignore PYTORCH_ROCM_ARCH, an allow-list of targets, a GPU build
that only happens when a GPU is visible, kernels compiled at run time, a prebuilt wheel downloaded instead
of compiling. Everything here is read from setup.py and op_builder/ (pysrc.py); what the reading
cannot decide becomes a note, with the file and line to look at."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rocbuild.draft.pysrc import EnvRead, Extension, PyFacts, Text, local_modules, read_python

CUDA_FLAG = re.compile(r"^(?:--expt-relaxed-constexpr|--expt-extended-lambda|-?-use_fast_math|--ptxas-options\b.*"
                       r"|-Xptxas\b.*|-lineinfo|--generate-line-info|-gencode\b.*|--generate-code\b.*|--gpu-architecture\b.*"
                       r"|-arch=(?:sm|compute)_\w+|-code=\S+|--gpu-code\b.*|-?-diag-suppress\b.*|-Xcudafe\b.*"
                       r"|-?-maxrregcount\b.*|--threads\b.*|--default-stream\b.*|-Xcompiler\b.*|--compiler-options\b.*"
                       r"|-ccbin\b.*|--fmad\b.*|--prec-(?:div|sqrt)\b.*|-?-ftz\b.*|-?-res-usage|--resource-usage"
                       r"|-?-extended-lambda|--relocatable-device-code\b.*|-rdc\b.*|--cudart[= ]\w+)$")
FORCE = re.compile(r"FORCE_(?:BUILD|CUDA|GPU|HIP|ROCM)(?:_EXT(?:ENSIONS?)?|_BUILD)?$|KEEP_\w*BUILD$|BUILD_(?:\w+_)?OPS$"
                   # a package's own extension switch (basicsr's BASICSR_EXT: 'True' builds its CUDA ops)
                   r"|^[A-Z][A-Z0-9]*_EXT$"
                   r"|^BUILD_\w*EXT$|(?:^|_)BUILD_\w*(?:CUDA|GPU)$"
                   # torchani's TORCHANI_BUILD_EXT: set, it builds its CUDA extensions; unset, none
                   r"|_BUILD_EXT(?:ENSIONS?)?$"
                   # arctic-inference's ARCTIC_INFERENCE_PRECOMPILED_OPS: set, it builds its CUDA ops at install;
                   # unset, its op builder compiles them at run time
                   r"|_PRECOMPILED_OPS$")
# A package's own CUDA switch whose default is "auto" (beamgrad's BEAMGRAD_CUDA): set, the GPU build is asked for.
AUTO_CUDA = re.compile(r"(?:^|_)CUDA$")
SKIP = re.compile(r"(?:^|_)(?:SKIP|ONLY|NO|NOCOMPILE|DISABLE)(?:_|$)")
JOBS = re.compile(r"^MAX_JOBS$|_JOBS$|THREADS$|PARALLEL")
TARGET = re.compile(r"(?:^|_)BUILD_TARGET$|TARGET_DEVICE$")
ROCM_WORD = re.compile(r"(?:^|_)(?:HIP|ROCM|AMD)(?:_|$)")
HOMES = ("ROCM_HOME", "ROCM_PATH", "HIP_PATH")
# Variables that alone select a package's ROCm path (unset, setup.py reads torch.version.cuda: None on ROCm).
SELECTOR = re.compile(r"^(?:ROCM_VERSION|HIP_VERSION|USE_ROCM|BUILD_ROCM|WITH_ROCM|IS_ROCM|ROCM_BUILD|USE_HIP)$")
VENDOR_DIRS = ("third_party", "third-party", "thirdparty", "3rdparty", "external", "extern", "vendor", "deps", "submodules")
MAX_PY_FILES = 3000  # package files searched for run-time compilation


@dataclass(frozen=True)
class Var:
    """A variable the build reads: what kind it is, what the draft sets it to (None: left unset), and why."""

    name: str
    where: str
    kind: str  # arch, switch, force, skip, jobs, home, cuda (a CUDA-only knob), option (of its HIP build), other
    value: str | None
    why: str


@dataclass
class TorchReading:
    marker: str  # "torch.utils.cpp_extension at setup.py:27"
    jit: str | None = None  # where kernels are compiled at run time
    built_at: str | None = None  # where setup.py names CUDAExtension: kernels built at install time
    arch_flag: str | None = None  # where it writes --offload-arch itself (torch then ignores PYTORCH_ROCM_ARCH)
    rocm_aware: list[str] = field(default_factory=list)  # "IS_HIP_EXTENSION at setup.py:29"
    variables: list[Var] = field(default_factory=list)
    allow_lists: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    cmake_lists: list[str] = field(default_factory=list)  # CMake variables of CMakeLists.txt that list its archs
    python: list[str] = field(default_factory=list)  # modules setup.py imports that the build must have
    cmake: bool = False  # setup.py runs cmake itself
    unpacked: list[str] = field(default_factory=list)  # folders setup.py compiles that the sdist lacks (monai/csrc)
    kernels: list[Extension] = field(default_factory=list)  # the CUDAExtension modules a ROCm build compiles
    jit_sources: list[str] = field(default_factory=list)  # the sources its load() calls name (a run-time build)
    packages: list[str] = field(default_factory=list)  # its own importable packages (optimum.quanto in a namespace)
    gpu_reads: list[list[str]] = field(default_factory=list)  # the variables each torch.cuda.is_available() test reads
    gpu_tests: list[str] = field(default_factory=list)  # where each such test is, in the same order
    on_values: dict[str, str] = field(default_factory=dict)  # the literal a variable is compared with to turn it on
    notes: list[str] = field(default_factory=list)  # what could not be decided, and the traps found
    hip_flags: list[tuple[str, str]] = field(default_factory=list)  # (flag, where): CUDA-only flags hipcc is given
    modules: list[str] = field(default_factory=list)  # the tree's own modules setup.py reaches (pysrc.local_modules)


# cmake run through a shell string: fast-rnnt's os.system(f"""cd {build_temp}\n cmake {cmake_args} {ft_dir}\n make""")
RUNS_CMAKE = re.compile(r"(?:^|\n|&&|;)\s*cmake\s+\S")


def read_torch(tree: Path) -> TorchReading | None:
    """None when nothing in setup.py or op_builder/ uses torch.utils.cpp_extension, and no module of the
    package compiles kernels at run time with it."""
    files = [p for p in [tree / "setup.py", *sorted((tree / "op_builder").glob("*.py"))] if p.is_file()]
    modules = local_modules(tree, files[0]) if files and files[0].name == "setup.py" else []
    files += [p for p in (tree / rel for rel in modules) if p not in files]  # the tree's own modules it imports
    facts = [read_python(tree, p) for p in files]
    marker = _first(facts, lambda n: "cpp_extension" in n or n.split(".")[-1] in ("CUDAExtension", "BuildExtension"))
    if marker is None:  # a file this Python cannot parse (Python 2, say) is searched as text
        marker = next(((n, f"{p.relative_to(tree)}") for p, f in zip(files, facts) if f.unreadable
                       for n in ["cpp_extension"] if n in p.read_text(errors="replace")), None)
    jit, jit_sources = _jit(tree, facts)
    if marker is None and jit is not None:  # setup.py builds nothing: the package compiles when it runs
        marker = ("cpp_extension.load", jit)
    if marker is None:
        return None
    reading = TorchReading(marker=f"torch.utils.cpp_extension at {marker[1]}", modules=modules)
    reading.notes += [f"{f.unreadable}: not parsed (not Python 3?), nothing was read from it: check it by hand"
                      for f in facts if f.unreadable]
    reading.rocm_aware = _rocm_markers(facts)
    reading.jit, reading.jit_sources = jit, jit_sources
    # setup.py's CUDAExtension, even one the reading cannot follow (deformops returns the class from a function
    # and calls it through a variable): its kernels are built at install time too, whatever load() does later
    built = _first(facts[:1] if files and files[0].name == "setup.py" else [], lambda n: n.split(".")[-1] == "CUDAExtension")
    reading.built_at = built[1] if built else None
    reading.packages = [name for p in _own_packages(tree) for name in _importable(p)]
    reading.gpu_reads = [reads for f in facts for _, reads in f.gpu_tests]
    reading.gpu_tests = [where for f in facts for where, _ in f.gpu_tests]
    reading.on_values = {r.name: r.on for f in facts for r in f.env if r.on}
    reading.arch_flag = next((t.where for f in facts for t in f.texts if "offload-arch" in t.text and t.side != "cuda"), None)
    reading.variables = classify(facts, gpu_gated=any(f.gpu_tests for f in facts), aware=bool(reading.rocm_aware),
                                 gated={name for reads in reading.gpu_reads for name in reads})
    # of what the modules setup.py imports read, only what steers the build (a run-time SLURM_PROCID is not)
    reading.variables = [v for v in reading.variables if v.kind != "other" or v.where.startswith(("setup.py:", "op_builder/"))]
    reading.allow_lists = [(targets, where) for f in facts for targets, where, tested in f.gfx_lists if tested]
    cmake = cmake_allow_lists(tree)
    reading.allow_lists += [(targets, where) for targets, where, _ in cmake]
    reading.cmake_lists = [variable for _, _, variable in cmake]
    reading.python = _imports(tree, facts[0] if files and files[0].name == "setup.py" else PyFacts())
    reading.cmake = any(t.text == "cmake" or RUNS_CMAKE.search(t.text) for f in facts for t in f.texts)
    # A CUDAExtension in a CUDA-only branch, or one of host sources alone, carries no device code on ROCm.
    reading.kernels = [e for f in facts for e in f.extensions if e.side != "cuda" and e.device_sources is not False]
    reading.notes += _untested_lists(facts) + _traps(facts, reading) + _downloads(facts, reading.variables)
    reading.notes += missing_submodules(tree, facts) + _cuda_flags(facts, aware=bool(reading.rocm_aware))
    reading.hip_flags = _hip_flags(facts, aware=bool(reading.rocm_aware))
    gone = _unpacked_dirs(tree, files[0]) if jit and reading.built_at and files[0].name == "setup.py" else []
    if gone and not _device_sources_beside(tree, jit or ""):
        # monai 1.6.1: setup.py globs monai/csrc, which its sdist leaves out; gmm, its one kernel, is load()'s
        reading.notes.append(f"setup.py compiles what {', '.join(gone)} holds, which the sdist lacks: its only device "
                             f"sources are those {jit} compiles at run time")
        reading.built_at, reading.kernels, reading.unpacked = None, [], gone
    return reading


def _unpacked_dirs(tree: Path, setup: Path) -> list[str]:
    """The folders setup.py joins from string parts (`os.path.join(this_dir, "monai", "csrc")`) that the tree lacks."""
    try:
        calls = [n for n in ast.walk(ast.parse(setup.read_text(errors="replace"))) if isinstance(n, ast.Call)]
    except SyntaxError:
        return []
    found = []
    for call in calls:
        parts = [a.value for a in call.args[1:] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not (isinstance(call.func, ast.Attribute) and ast.unparse(call.func) == "os.path.join"
                and parts and len(parts) == len(call.args) - 1 and not any(set(p) & set("*?[") for p in parts)):
            continue
        rel = "/".join(parts)
        if not (tree / rel).exists() and rel not in found:
            found.append(rel)
    return found


def _device_sources_beside(tree: Path, jit: str) -> bool:
    """Whether the tree holds CUDA sources outside the folder of the module that compiles at run time."""
    folder = jit.rsplit(":", 1)[0].rsplit("/", 1)[0]
    return any(not f"{p.relative_to(tree)}".startswith(f"{folder}/") for p in tree.rglob("*.cu"))


# `set(HIP_SUPPORTED_ARCHS "gfx906;gfx90a;...")`, as vLLM's CMakeLists.txt keeps its targets: an arch asked for
# that is not listed is dropped without a word (the build fails only when none is left).
CMAKE_ARCH_LIST = re.compile(r'^[ \t]*set\s*\(\s*(\w*(?:SUPPORTED|ALLOWED)\w*ARCH\w*)\s+"((?:gfx[0-9a-z]+[;\s]*)+)"',
                             re.M | re.I)


def cmake_allow_lists(tree: Path) -> list[tuple[tuple[str, ...], str, str]]:
    """The gfx allow-lists the top CMakeLists.txt sets: the archs, file:line with the variable, the variable."""
    path = tree / "CMakeLists.txt"
    if not path.is_file():
        return []
    text = path.read_text(errors="replace")
    return [(tuple(t for t in re.split(r"[;\s]+", m.group(2)) if t),
             f"CMakeLists.txt:{text.count(chr(10), 0, m.start()) + 1} ({m.group(1)})", m.group(1))
            for m in CMAKE_ARCH_LIST.finditer(text)]


def _first(facts: list[PyFacts], match: Callable[[str], bool]) -> tuple[str, str] | None:
    """The first dotted name (and where) that matches, in the order the files were read."""
    return next(((name, where) for f in facts for name, where in f.names if match(name)), None)


def _rocm_markers(facts: list[PyFacts]) -> list[str]:
    found = []
    for label, match in (("torch.version.hip", lambda n: n == "torch.version.hip"),
                         ("IS_HIP_EXTENSION", lambda n: n.split(".")[-1] == "IS_HIP_EXTENSION"),
                         ("ROCM_HOME", lambda n: n.split(".")[-1] == "ROCM_HOME"),
                         ("is_rocm_pytorch", lambda n: "is_rocm_pytorch" in n)):
        hit = _first(facts, match)
        if hit:
            found.append(f"{label} at {hit[1]}")
    return found


def _jit(tree: Path, facts: list[PyFacts]) -> tuple[str | None, list[str]]:
    """Where kernels are compiled at run time: cpp_extension's load/load_inline, in the build files or the
    package's own modules (searched as text: they are not all Python 3 that this ast reads); and the
    source files named after the first such call, which the wheel must then ship."""
    hit = _first(facts, lambda n: n.endswith(("cpp_extension.load", "cpp_extension.load_inline")))
    if hit:
        return hit[1], []
    # also imported by name (monai's `optional_import("torch.utils.cpp_extension", name="load")`)
    pattern = re.compile(r"cpp_extension\s+import\s+[^\n]*\bload(?:_inline)?\b|cpp_extension\.load(?:_inline)?\s*\("
                         r"""|["']torch\.utils\.cpp_extension["']\s*,\s*name\s*=\s*["']load(?:_inline)?["']""")
    for path in package_modules(tree):
        text = path.read_text(errors="replace")
        match = pattern.search(text)
        if match:
            sources = re.findall(r"""["']([\w./-]+\.(?:cu|cpp|cc|hip))["']""", text[match.start():])
            return f"{path.relative_to(tree)}:{text.count(chr(10), 0, match.start()) + 1}", list(dict.fromkeys(
                s.rsplit("/", 1)[-1] for s in sources))[:8]
    return None, []


def compiled_at_run_time(tree: Path) -> str | None:
    """Where the package's own modules call cpp_extension's load/load_inline (trainkernel generates its CUDA source
    in Python and hands it to load_inline: a sdist of no source file), as `file:line`."""
    return _jit(tree, [])[0]


def package_modules(tree: Path) -> list[Path]:
    """The Python files of the package's own folders (_own_packages), at most MAX_PY_FILES."""
    return [p for pkg in _own_packages(tree) for p in sorted(pkg.rglob("*.py"))][:MAX_PY_FILES]


def _importable(folder: Path) -> list[str]:
    """A package's import name; a namespace package's, those of the packages it holds."""
    if (folder / "__init__.py").is_file():
        return [folder.name]
    return [f"{folder.name}.{c.parent.name}" for c in sorted(folder.glob("*/__init__.py"))]


def _own_packages(tree: Path) -> list[Path]:
    """The package's own top-level folders, at the top or under src/: a package (__init__.py), or a namespace
    package holding one (PEP 420: optimum/quanto has no optimum/__init__.py). Vendored trees, tests,
    examples and benchmarks have their own build and are left out."""
    skip = {*VENDOR_DIRS, "tests", "test", "examples", "example", "docs", "bench", "benchmarks", "build", "dist"}
    found = []
    roots = _package_roots(tree)
    skip |= {r.name for r in roots}  # deformops' sources/ holds its package; it is not a namespace package itself
    for top in dict.fromkeys((tree, tree / "src", *roots)):
        for p in sorted(top.iterdir()) if top.is_dir() else []:
            if p.is_dir() and p.name not in skip and not p.name.startswith(".") and (
                    (p / "__init__.py").is_file() or any(c.is_file() for c in p.glob("*/__init__.py"))):
                found.append(p)
    return found


# Where setup.py or pyproject.toml puts the packages' root: `package_dir={"": "sources"}`, setuptools'
# `[tool.setuptools.packages.find] where = ["lib"]`.
PACKAGE_ROOT = re.compile(r"""package_dir\s*=\s*\{\s*(["'])\1\s*:\s*["']([\w./-]+)["']|^\s*where\s*=\s*\[\s*["']([\w./-]+)["']""",
                          re.MULTILINE)


def _package_roots(tree: Path) -> list[Path]:
    """The folders the build files name as the packages' root, other than the tree's top and src/."""
    roots = []
    for name in ("setup.py", "pyproject.toml", "setup.cfg"):
        text = (tree / name).read_text(errors="replace") if (tree / name).is_file() else ""
        for match in PACKAGE_ROOT.finditer(text):
            folder = tree / (match.group(2) or match.group(3))
            if folder.is_dir() and folder.resolve() not in (tree.resolve(), (tree / "src").resolve()):
                roots.append(folder)
    return roots


def classify(facts: list[PyFacts], *, gpu_gated: bool, aware: bool, gated: frozenset[str] | set[str] = frozenset()
             ) -> list[Var]:
    """Each variable once, at its first read, in the order the files read them. `gated`: the variables a
    torch.cuda.is_available() test reads (directly or through a Python variable)."""
    # Variables whose tests lead to CUDA-only flags that are not behind a CUDA test: setting one takes them.
    leading = {name for f in facts for t in f.texts if t.side != "cuda" and CUDA_FLAG.match(t.text) for name in t.conds}
    own_flag = any("offload-arch" in t.text and t.side != "cuda" for f in facts for t in f.texts)
    out: dict[str, Var] = {}
    for f in facts:
        for read in f.env:
            if read.name not in out:
                reads = [r for g in facts for r in g.env if r.name == read.name]
                var = _var(read.name, read.where, reads, (gpu_gated and aware) or read.name in gated, leading)
                out[read.name] = _settled(var, reads, own_flag)
    return list(out.values())


def _settled(var: Var, reads: list[EnvRead], own_flag: bool) -> Var:
    """An arch variable is the package's own only where it writes --offload-arch itself and reads it outside
    a CUDA branch; a variable read only in HIP branches is an option of its ROCm build."""
    if var.kind == "arch" and var.name != "PYTORCH_ROCM_ARCH" and (
            not own_flag or all(r.side == "cuda" for r in reads)):
        return Var(var.name, var.where, "other", None, "")
    if var.kind == "other" and all(r.side == "hip" for r in reads):
        default = next((r.default for r in reads if r.default is not None), None)
        return Var(var.name, var.where, "option", None, "an option of its ROCm build: left at its default"
                   + (f" {default!r}" if default is not None else ""))
    return var


def _var(name: str, where: str, reads: list[EnvRead], gpu_gated: bool, leading: set[str]) -> Var:
    on = next((r.on for r in reads if r.on), None) or "1"
    if name in HOMES:
        return Var(name, where, "home", None, "the ROCm prefix")
    if "CUDA" in name and "ARCH" in name:
        return Var(name, where, "cuda", None, "CUDA's targets: never set on ROCm")
    if "ARCH" in name or name.endswith("_TARGETS"):
        return _arch(name, where, reads)
    if JOBS.search(name):
        return Var(name, where, "jobs", "${{ jobs }}" if name == "MAX_JOBS" else None,
                   "parallel compile jobs" if name == "MAX_JOBS" else "left at its default")
    if SKIP.search(name):
        return Var(name, where, "skip", None, "left unset: it skips or narrows the build")
    if FORCE.search(name):
        return _force(name, where, on, gpu_gated, leading)
    if AUTO_CUDA.search(name) and name not in leading and any((r.default or "").lower() == "auto" for r in reads):
        return Var(name, where, "force", on, "its default 'auto' decides from nvcc and CUDA_HOME, which ROCm lacks "
                                             "(and may drop the GPU build when it fails): the GPU build is asked for")
    if TARGET.search(name):
        return Var(name, where, "switch", "rocm", "the backend to build")
    if SELECTOR.match(name):
        return Var(name, where, "switch", None, "it alone selects the ROCm path: the trap rocm-selector-unset sets it")
    if ROCM_WORD.search(name):
        default = next((r.default for r in reads if r.default is not None), None)
        return Var(name, where, "option", None, "an option of its ROCm build: left at its default"
                   + (f" {default!r}" if default is not None else ""))
    return Var(name, where, "other", None, "")


def _arch(name: str, where: str, reads: list[EnvRead]) -> Var:
    """The package's own arch variable, with the separator its reader splits on; one --offload-arch flag
    takes a comma-separated list (clang splits it)."""
    seps = {r.split for r in reads if r.split is not None} | {"," for r in reads if r.in_arch_flag}
    default = next((r.default for r in reads if r.default), None)
    sep = seps.pop() if len(seps) == 1 else None
    why = {";": "';'-separated", " ": "space-separated", ",": "one --offload-arch flag, ','-separated"}.get(
        sep or "", "its separator could not be decided: ';' guessed")
    if default == "native":
        why += "; its default 'native' needs a GPU at build time"
    value = "${{ archs | join('" + (sep or ";") + "') }}"
    return Var(name, where, "arch", value, why)


def _force(name: str, where: str, on: str, gpu_gated: bool, leading: set[str]) -> Var:
    if name in leading:
        return Var(name, where, "force", None, "left unset: it takes a branch that passes CUDA-only flags")
    if "CUDA" in name and not ("BUILD" in name or "OPS" in name) and not gpu_gated:
        return Var(name, where, "force", None, "left unset: its GPU build does not depend on a visible GPU")
    why = ("the GPU build otherwise needs a visible GPU" if "CUDA" in name and not name.endswith("BUILD")
           else "compile the kernels here, not download or defer them")
    return Var(name, where, "force", on, why)


# Import names whose distribution on PyPI is named otherwise: pip would install a stranger of the import's name, or
# nothing (ppq's ppl_caffe_pb2.py imports google.protobuf: PyPI's `google` is an unrelated package).
DISTRIBUTIONS = {"google": "protobuf", "yaml": "pyyaml", "cv2": "opencv-python-headless", "PIL": "pillow",
                 "sklearn": "scikit-learn", "skimage": "scikit-image", "attr": "attrs", "dateutil": "python-dateutil",
                 "bs4": "beautifulsoup4", "Crypto": "pycryptodome", "git": "GitPython"}


# Other vendors' torch backends, which a setup.py imports on their branch only (mmcv's `if FORCE_MLU: import
# torch_mlu`): never on PyPI for a ROCm build, and never what it needs.
OTHER_BACKENDS = frozenset({"torch_mlu", "torch_npu", "torch_musa", "torch_xla", "torch_dipu", "torch_gcu",
                            "intel_extension_for_pytorch", "habana_frameworks"})


def distribution(module: str) -> str:
    """The PyPI distribution that brings the top-level module `module`."""
    return DISTRIBUTIONS.get(module, module)


def _imports(tree: Path, setup: PyFacts) -> list[str]:
    """The distributions of the modules setup.py imports that neither Python, torch nor the sdist itself brings
    (build isolation is off: the build environment must have them)."""
    local = {p.stem if p.suffix == ".py" else p.name for p in tree.iterdir()}
    # and a module of the tree's own that setup.py puts on sys.path first (torchopt's `import version`, from
    # torchopt/version.py): pip could only bring a stranger of that name
    local |= {p.stem for pattern in ("*/*.py", "*/*/*.py") for p in tree.glob(pattern) if p.stem != "__init__"}
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())  # Python >= 3.10
    wanted = {"setuptools", "wheel", "ninja"}  # ninja: cpp_extension compiles serially without it
    for module in [*setup.imports, *_setup_requires(tree / "setup.py")]:
        # pkg_resources is kept by its name: the build environment brings it with a setuptools that still has it
        name = "setuptools" if module == "distutils" else module
        if name not in stdlib and name not in local and name != "torch" and not name.startswith("_") \
                and name not in OTHER_BACKENDS:
            wanted.add(distribution(name))
    return sorted(wanted)


def _setup_requires(setup: Path) -> list[str]:
    """The modules of setup.py's `setup_requires=[...]`, which pip never installs: inplace-abn's setuptools_scm,
    without which `use_scm_version` quietly makes the wheel version 0.0.0."""
    try:
        found = re.search(r"setup_requires\s*=\s*\[([^\]]*)\]", setup.read_text(errors="replace"))
    except OSError:
        return []
    names = re.findall(r"""["']\s*([A-Za-z0-9][A-Za-z0-9._-]*)""", found.group(1)) if found else []
    return [n.replace("-", "_") for n in names]


def _untested_lists(facts: list[PyFacts]) -> list[str]:
    return [f"a list of targets ({', '.join(targets)}) at {where} is not tested for membership: a default, or an "
            "allow-list checked another way? Not applied." for f in facts for targets, where, tested in f.gfx_lists
            if not tested]


def _traps(facts: list[PyFacts], reading: TorchReading) -> list[str]:
    """What changes with the GPUs of the build machine: a builder has none."""
    notes = _gpu_tests(facts, reading.variables)
    hit = _first(facts, lambda n: n.endswith(("get_device_properties", "gcnArchName")))
    native = [v.name for v in reading.variables if v.kind == "arch" and v.value and "'native'" in v.why]
    if hit:
        notes.append(f"{hit[0]} at {hit[1]} reads the build machine's GPU, which a builder may not have"
                     + (f": the draft sets {', '.join(native)} instead of its 'native' default" if native else ""))
    rocminfo = next((t.where for f in facts for t in f.texts if re.search(r"\brocm(?:info|_agent_enumerator)\b", t.text)), None)
    wavefront = next((t.where for f in facts for t in f.texts if "WAVEFRONT" in t.text.upper()), None)
    if rocminfo:
        notes.append(f"rocminfo at {rocminfo}: the build asks the build machine's GPU (a GPU-less builder gets nothing, "
                     "a GPU gives its own target); check what it decides from it"
                     + (f", e.g. the wavefront size at {wavefront} (32 on RDNA, 64 on Instinct)" if wavefront else ""))
    writes = [where for f in facts for name, where in f.env_writes if name == "PYTORCH_ROCM_ARCH"]
    if writes:
        notes.append(f"{', '.join(writes)} set PYTORCH_ROCM_ARCH itself: the arch list the draft sets may be replaced")
    nvcc = next((t.where for f in facts for t in f.commands if t.text == "nvcc" and t.side != "cuda"), None)
    if nvcc:
        notes.append(f"{nvcc} runs nvcc, which ROCm lacks: what depends on it (its GPU extension?) is left out")
    if not reading.rocm_aware:
        notes.append("nothing in setup.py tests for ROCm (torch.version.hip, IS_HIP_EXTENSION, ROCM_HOME): torch "
                     "hipifies its CUDA sources, but upstream has likely never built it for ROCm")
    return notes


def _gpu_tests(facts: list[PyFacts], variables: list[Var]) -> list[str]:
    """torch.cuda.is_available() in a test: without a GPU the branch is taken only through a variable."""
    set_here = {v.name for v in variables if v.value}
    forced = [v.name for v in variables if v.kind == "force" and v.value and "CUDA" in v.name]
    said: dict[str, list[str]] = {}  # what is said -> where, so one verdict names all its places
    for where, reads in [t for f in facts for t in f.gpu_tests]:
        taken = [name for name in reads if name in set_here]
        said.setdefault(
            f"the draft sets {', '.join(taken)}, which takes that branch without one" if taken else
            f"{', '.join(forced)} is set so the GPU build does not depend on one" if forced else
            "on a GPU-less builder the branch it guards is not taken" + (
                f" (the test also reads {', '.join(reads)}: left unset)" if reads else ""), []).append(where)
    return [f"torch.cuda.is_available() at {', '.join(wheres[:3])}{', ...' if len(wheres) > 3 else ''} asks for a "
            f"visible GPU at build time: {verdict}" for verdict, wheres in said.items()]


def _downloads(facts: list[PyFacts], variables: list[Var]) -> list[str]:
    forced = [v.name for v in variables if v.kind == "force" and v.value and v.name.endswith("BUILD")]
    notes = []
    for f in facts:
        hits = [(n, w) for n, w in f.names if n.split(".")[-1] in ("urlretrieve", "urlopen", "download_url_to_file")
                or n in ("requests.get", "wget.download")]
        hits += [(t.text.split()[0], t.where) for t in f.texts
                 if re.match(r"(?:wget|curl)(?:\s|$)|git (?:clone|submodule)", t.text)]
        if hits:
            notes.append(f"downloads at {', '.join(w for _, w in hits[:3])} ({hits[0][0]}): a builder may have no network"
                         + (f"; {', '.join(forced)} is set so it compiles instead" if forced else ""))
    return notes


def missing_submodules(tree: Path, facts: list[PyFacts]) -> list[str]:
    """Git submodules an sdist left out: .gitmodules entries, and vendored folders setup.py names
    (`"third_party" / "x"` on one line), that are missing or empty."""
    paths: dict[str, str] = {}
    modules = tree / ".gitmodules"
    if modules.is_file():
        for number, line in enumerate(modules.read_text(errors="replace").splitlines(), 1):
            match = re.match(r"\s*path\s*=\s*(\S+)", line)
            if match:
                paths.setdefault(match.group(1).strip("/"), f".gitmodules:{number}")
    for f in facts:
        for where, parts in _path_parts(f).items():
            for i, part in enumerate(parts[:-1]):
                if part in VENDOR_DIRS and (tree / part).is_dir():
                    paths.setdefault(f"{part}/{parts[i + 1]}", where)
    return [f"{path} (named at {where}) is missing from the sdist or empty: a git submodule? Build from a checkout "
            "with its submodules (--source-dir), or vendor it" for path, where in paths.items()
            if not (tree / path).is_dir() or not any((tree / path).iterdir())]


def _path_parts(f: PyFacts) -> dict[str, list[str]]:
    lines: dict[str, list[str]] = {}
    for t in f.texts:
        if re.fullmatch(r"[\w.+-]+(?:/[\w.+-]+)*", t.text):
            lines.setdefault(t.where, []).extend(t.text.split("/"))
    return lines


def _cuda_flags(facts: list[PyFacts], *, aware: bool) -> list[str]:
    """CUDA-only nvcc flags hipcc would be given: in a HIP branch, or (for a package that never tests for
    HIP) anywhere; flags behind a test that decides nothing are named as undecided, with that test."""
    notes = []
    for f in facts:
        flags = [t for t in f.texts if CUDA_FLAG.match(t.text) and t.side != "cuda"]
        sure = [t for t in flags if t.side == "hip" or (t.side == "any" and not aware)]
        if sure:
            notes.append(f"CUDA-only flags hipcc would be given: {_flag_list(sure)} "
                         "(the draft drops those it can from setup.py: trap cuda-flag-for-hipcc)")
        for guard in sorted({t.guard for t in flags if t.side == "unknown" and t.guard}):
            under = [t for t in flags if t.guard == guard and t.side == "unknown"]
            reads = f.guards.get(guard) or []
            notes.append(f"CUDA-only flags {_flag_list(under)} sit under the test at {guard}, which does not decide "
                         "CUDA or HIP" + (f" (it reads {', '.join(reads)}: left unset)" if reads else "")
                         + ": could not decide whether hipcc gets them")
        loose = [t for t in flags if t.side == "any" and aware]
        if loose:
            notes.append(f"CUDA-only flags {_flag_list(loose)} are behind no CUDA or HIP test: could not decide "
                         "whether hipcc gets them")
    return notes


def _hip_flags(facts: list[PyFacts], *, aware: bool) -> list[tuple[str, str]]:
    """The CUDA-only flags hipcc would surely be given (in a HIP branch, or anywhere in a package that never tests
    for HIP: its CUDA branch too, which a ROCm torch takes, as apex's copies' `if CUDA_HOME is None: raise ...
    else:` do), each once, with where it is written."""
    sure = [t for f in facts for t in f.texts
            if CUDA_FLAG.match(t.text) and (t.side == "hip" or (t.side in ("any", "cuda") and not aware))]
    return list(dict.fromkeys((t.text, t.where) for t in sure))


def _flag_list(texts: list[Text]) -> str:
    names = list(dict.fromkeys(t.text for t in texts))
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "") + " at " + ", ".join(
        dict.fromkeys(t.where for t in texts[:4])) + (", ..." if len(texts) > 4 else "")
