"""What a project's Python build files (setup.py, op_builder/) say, read with `ast` and never run.

The drafter needs more than names: which environment variables are read and how (their default, the value
they are compared with, what they are split on), and on which side of a CUDA/HIP test each string sits, so
a CUDA-only flag in a HIP branch can be told from one in a CUDA branch. A test decides a side only when it
names a HIP marker (torch.version.hip, IS_HIP_EXTENSION, a name holding HIP or ROCm) or a CUDA marker
(torch.version.cuda, CUDA_HOME, nvcc's version); `torch.cuda` is both on ROCm, so it decides nothing."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

# A side of the build a piece of code runs on: "hip", "cuda", "unknown" (a test that reads a marker but does
# not decide, e.g. `A or B`), or "any" (no test on the way names one).
Side = str
CUDA_NAMES = frozenset({"torch.version.cuda", "CUDA_HOME", "CUDA_PATH", "cuda_home", "cuda_version",
                        "bare_metal_version", "TORCH_CUDA_ARCH_LIST", "nvcc"})
HIP_WORD = re.compile(r"(?:^|[._])(?:hip|rocm|is_rocm\w*|amd)(?:$|[._])", re.IGNORECASE)
# The environment's readers, matched by their last parts (`os.` may be imported under another name).
ENV_CALLS = ("environ.get", "getenv")
ENV_HELPER = re.compile(r"(?:^|_)env(?:$|_)|getenv", re.IGNORECASE)  # get_env_if_set, is_env_set, ...
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
GFX = re.compile(r"^gfx[0-9a-f]{3,4}$")
# Literals a variable is compared with that turn something off: never the value that turns it on.
OFF_WORDS = frozenset({"no", "off", "false", "0", "none", "disable", "disabled", "n", ""})
# Folders a build made, or that hold other projects: their Python files are not the build's own.
NOT_READ = frozenset({"build", "dist", "__pycache__", "tests", "test", "third_party", "3rdparty", "vendor", "external"})
MAX_MODULES = 40  # a setup.py that imports its whole package still reads in at most this many files


@dataclass(frozen=True)
class EnvRead:
    name: str
    where: str  # file:line
    default: str | None = None  # its literal default
    on: str | None = None  # the literal it is compared with (`== "TRUE"`): the value that turns it on
    split: str | None = None  # what it is split on (" " for .split()), None when it is not split
    in_arch_flag: bool = False  # read inside the f-string of an --offload-arch flag
    side: Side = "any"


@dataclass(frozen=True)
class Text:
    """A string literal (an f-string's literal parts joined by {}), and the side of the build it is on."""

    text: str
    where: str
    side: Side
    guard: str | None  # where the test that left the side undecided is
    conds: tuple[str, ...] = ()  # the variables the tests it sits under (in their true branch) read


@dataclass(frozen=True)
class Extension:
    """A CUDAExtension(...) call: the module it builds, where, on which side."""

    name: str | None  # the dotted module name when it is a literal; None when computed (a loop, an f-string)
    where: str
    side: Side
    device_sources: bool | None  # its literal sources hold a .cu/.hip file; None when computed


@dataclass
class PyFacts:
    env: list[EnvRead] = field(default_factory=list)
    env_writes: list[tuple[str, str]] = field(default_factory=list)  # (name, where) the file sets itself
    texts: list[Text] = field(default_factory=list)
    commands: list[Text] = field(default_factory=list)  # the program of each argv-like list given to a call
    names: list[tuple[str, str]] = field(default_factory=list)  # dotted names used (and called), with where
    gfx_lists: list[tuple[tuple[str, ...], str, bool]] = field(default_factory=list)  # (targets, where, tested with in)
    imports: list[str] = field(default_factory=list)  # top-level module names imported
    guards: dict[str, list[str]] = field(default_factory=dict)  # where of an undeciding test -> env names it reads
    extensions: list[Extension] = field(default_factory=list)  # the CUDAExtension(...) calls
    gpu_tests: list[tuple[str, list[str]]] = field(default_factory=list)  # torch.cuda.is_available() in a test:
    # (where, the variables the same test reads): one of them may take the branch without a GPU
    unreadable: str | None = None  # why the file could not be parsed


def read_python(tree: Path, path: Path) -> PyFacts:
    facts = PyFacts()
    rel = path.relative_to(tree)
    try:
        module = ast.parse(path.read_text(errors="replace"), filename=str(rel))
        _Walker(str(rel), facts).walk(module, "any", None)
        facts.gfx_lists = _tested_lists(module, str(rel))
    except (OSError, SyntaxError, ValueError, RecursionError) as exc:  # Python 2, NUL bytes, absurd nesting
        return PyFacts(unreadable=f"{rel}: {exc.__class__.__name__}")
    return facts


def dotted(node: ast.AST) -> str:
    """`a.b.c` for an Attribute chain on a Name; '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return ""


def _catches_import(caught: ast.expr | None) -> bool:
    names = [dotted(e) for e in caught.elts] if isinstance(caught, ast.Tuple) else [dotted(caught)] if caught else [""]
    return any(n in ("", "ImportError", "ModuleNotFoundError", "Exception", "BaseException") for n in names)


def _gives_up(handler: ast.ExceptHandler) -> bool:
    """A handler that raises or exits (`except ImportError: raise RuntimeError("pybind11 is needed")`): the
    module is required after all."""
    return any(isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and dotted(n.func) in ("sys.exit", "exit", "quit"))
               for stmt in handler.body for n in ast.walk(stmt))


class _Walker:
    def __init__(self, rel: str, facts: PyFacts):
        self.rel, self.facts = rel, facts
        self.parents: dict[int, ast.AST] = {}
        self.aliases: set[str] = set()  # names given CUDAExtension (`Extension = CppExtension if cpu else CUDAExtension`)
        # Python variables holding what the environment said (`force = getenv("FORCE_CUDA") == "1"`): a
        # test that reads the variable reads the environment variable.
        self.env_vars: dict[str, list[str]] = {}

    def walk(self, node: ast.AST, side: Side, guard: str | None, conds: tuple[str, ...] = ()) -> None:
        for child in ast.iter_child_nodes(node):
            self.parents[id(child)] = node
        if isinstance(node, ast.If | ast.IfExp):
            self._branch(node, side, guard, conds)
            return
        self._record(node, side, guard, conds)
        for child in ast.iter_child_nodes(node):
            self.walk(child, side, guard, conds)

    def _branch(self, node: ast.If | ast.IfExp, side: Side, guard: str | None, conds: tuple[str, ...]) -> None:
        """The body runs on the side the test decides, the else part on the other; a decided side stays."""
        self.walk(node.test, side, guard, conds)
        asks = [n for n in ast.walk(node.test) if isinstance(n, ast.Call) and dotted(n.func) == "torch.cuda.is_available"]
        if asks:
            self.facts.gpu_tests.append((f"{self.rel}:{asks[0].lineno}", self._reads(node.test)))
        found = test_side(node.test)
        body, other, here = side, side, guard
        if side in ("any", "unknown") and found in ("hip", "cuda"):
            body, other = found, {"hip": "cuda", "cuda": "hip"}[found]
        elif side == "any" and found == "unknown":
            body = other = "unknown"
            here = f"{self.rel}:{node.lineno}"
            self.facts.guards[here] = self._reads(node.test)
        for part, part_side, part_conds in ((node.body, body, (*conds, *self._reads(node.test))),
                                            (node.orelse, other, conds)):
            for child in part if isinstance(part, list) else [part]:
                self.parents[id(child)] = node
                self.walk(child, part_side, here, part_conds)

    def _optional(self, node: ast.AST) -> bool:
        """An import in the body of a `try` that catches its ImportError: setup.py goes on without the module
        (turbo-gnn's `import nvidia`, for CUDA's pip packages), so the build need not bring it."""
        child, parent = node, self.parents.get(id(node))
        while parent is not None:
            if isinstance(parent, ast.Try) and any(child is b for b in parent.body) and \
                    any(_catches_import(h.type) and not _gives_up(h) for h in parent.handlers):
                return True
            child, parent = parent, self.parents.get(id(parent))
        return False

    def _record(self, node: ast.AST, side: Side, guard: str | None, conds: tuple[str, ...]) -> None:
        where = f"{self.rel}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            self.facts.imports += [a.name.split(".")[0] for a in node.names if not self._optional(node)]
            self.facts.names += [(a.name, where) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            self.facts.imports += [node.module.split(".")[0]] if not self._optional(node) else []
            self.facts.names += [(f"{node.module}.{a.name}", where) for a in node.names]
        elif isinstance(node, ast.Attribute | ast.Name) and not isinstance(self.parents.get(id(node)), ast.Attribute):
            name = dotted(node)
            if name:
                self.facts.names.append((name, where))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and not self._in_fstring(node):
            self.facts.texts.append(Text(node.value, where, side, guard, conds))
        elif isinstance(node, ast.Call):
            self.facts.commands += [Text(a.elts[0].value, where, side, guard) for a in node.args
                                    if isinstance(a, ast.List | ast.Tuple) and a.elts
                                    and isinstance(a.elts[0], ast.Constant) and isinstance(a.elts[0].value, str)]
            called = dotted(node.func).split(".")[-1]
            if called == "CUDAExtension" or called in self.aliases:
                self.facts.extensions.append(Extension(_literal(_argument(node, 0, "name")), where, side,
                                                       _device_sources(_argument(node, 1, "sources"))))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if any(dotted(n).split(".")[-1] == "CUDAExtension" for n in ast.walk(node.value)):
                self.aliases.add(node.targets[0].id)
            reads = self._reads(node.value)
            if reads:
                self.env_vars[node.targets[0].id] = reads
            self._probe_kept(node.value)  # `BUILD_CUDA = FORCE or torch.cuda.is_available()`
        elif isinstance(node, ast.Return) and node.value is not None:
            self._probe_kept(node.value)  # torch-quiver's `def have_cuda(): ... return torch.cuda.is_available()`
        elif isinstance(node, ast.Compare):
            self._compared(node)
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                           for v in node.values)
            self.facts.texts.append(Text(text, where, side, guard, conds))
        self._env(node, where, side)

    def _probe_kept(self, value: ast.expr) -> None:
        """A GPU test kept in a variable or returned by a function that picks the extension: a test as an `if`'s."""
        asks = [n for n in ast.walk(value) if isinstance(n, ast.Call) and dotted(n.func) == "torch.cuda.is_available"]
        if asks:
            self.facts.gpu_tests.append((f"{self.rel}:{asks[0].lineno}", self._reads(value)))

    def _compared(self, node: ast.Compare) -> None:
        """A variable that holds an environment variable's value (basicsr's `cuda_ext`, BASICSR_EXT's), then
        `if cuda_ext == 'True':`: the literal turns the environment variable on, as comparing the read would."""
        other = node.comparators[0]
        if not (isinstance(node.left, ast.Name) and node.left.id in self.env_vars and isinstance(node.ops[0], ast.Eq)
                and isinstance(other, ast.Constant) and isinstance(other.value, str)):
            return
        names = self.env_vars[node.left.id]
        if other.value.strip().lower() in OFF_WORDS:
            return  # orionvis' `if BUILD_CUDA_EXT == "NO": return []` before its `== "YES"`
        self.facts.env = [replace(r, on=other.value) if r.name in names and r.on is None else r for r in self.facts.env]

    def _reads(self, node: ast.AST) -> list[str]:
        """The environment variables an expression reads, directly or through a variable holding one."""
        through = [r for n in ast.walk(node) if isinstance(n, ast.Name) for r in self.env_vars.get(n.id, [])]
        return list(dict.fromkeys(_env_names(node) + through))

    def _in_fstring(self, node: ast.AST) -> bool:
        return isinstance(self.parents.get(id(node)), ast.JoinedStr)

    def _env(self, node: ast.AST, where: str, side: Side) -> None:
        name, store = env_name(node)
        if name is None:
            return
        if store:
            self.facts.env_writes.append((name, where))
            return
        args = node.args if isinstance(node, ast.Call) else []
        default = args[1].value if len(args) > 1 and isinstance(args[1], ast.Constant) else None
        split, on = self._use(node)
        self.facts.env.append(EnvRead(name, where, None if default is None else str(default), on, split,
                                      self._in_arch_flag(node), side))

    def _use(self, node: ast.AST) -> tuple[str | None, str | None]:
        """(what the value is split on, the literal it is compared with), through one .lower()/.strip()."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in ("lower", "upper", "strip"):
            node = self.parents.get(id(parent), parent)
            parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr == "split":
            call = self.parents.get(id(parent))
            args = call.args if isinstance(call, ast.Call) else []
            first = args[0] if args else None
            return (first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else " "), None
        if isinstance(parent, ast.Compare) and isinstance(parent.ops[0], ast.Eq | ast.NotEq):
            other = parent.comparators[0] if parent.left is node else parent.left
            if (isinstance(other, ast.Constant) and isinstance(other.value, str) and isinstance(parent.ops[0], ast.Eq)
                    and other.value.strip().lower() not in OFF_WORDS):
                return None, other.value
        return None, None

    def _in_arch_flag(self, node: ast.AST) -> bool:
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.JoinedStr):
                return any(isinstance(v, ast.Constant) and "offload-arch" in str(v.value) for v in parent.values)
            parent = self.parents.get(id(parent))
        return False


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    found = next((k.value for k in call.keywords if k.arg == keyword), None)
    return found if found is not None else call.args[index] if len(call.args) > index else None


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _device_sources(node: ast.expr | None) -> bool | None:
    """Whether a literal list of sources holds a device file; None when the list is computed."""
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    files = [_literal(e) for e in node.elts]
    if not all(files):
        return None
    return any(f.endswith((".cu", ".hip")) for f in files if f)


def env_name(node: ast.AST) -> tuple[str | None, bool]:
    """(the variable a node reads or sets, whether it sets it): the environment's get, getenv, [NAME],
    `NAME in` it, and helpers named like get_env_if_set("NAME")."""
    if isinstance(node, ast.Call):
        func = dotted(node.func)
        first = node.args[0] if node.args else None
        literal = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        reader = func.endswith(ENV_CALLS) and func.split(".")[-1] in ("get", "getenv")
        if literal and (reader or (ENV_HELPER.search(func.split(".")[-1]) and ENV_NAME.match(literal))):
            return literal, False
    if isinstance(node, ast.Subscript) and dotted(node.value).split(".")[-1] == "environ":
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, isinstance(node.ctx, ast.Store)
    if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn)
            and dotted(node.comparators[0]).split(".")[-1] == "environ"
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return node.left.value, False
    return None, False


def _env_names(node: ast.AST) -> list[str]:
    return [name for sub in ast.walk(node) for name, store in [env_name(sub)] if name and not store]


def test_side(node: ast.AST) -> Side | None:
    """The side a test's true branch is on; None when it names no CUDA or HIP marker."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _flip(test_side(node.operand))
    if isinstance(node, ast.BoolOp):
        sides = [s for s in (test_side(v) for v in node.values) if s is not None]
        decided = {s for s in sides if s != "unknown"}
        if isinstance(node.op, ast.And) and len(decided) == 1:
            return decided.pop()  # every part must hold: one decided part decides
        if isinstance(node.op, ast.Or) and len(decided) == 1 and len(sides) == len(node.values) and "unknown" not in sides:
            return decided.pop()
        return "unknown" if sides else None
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare_side(node)
    return _marker(node)


def _compare_side(node: ast.Compare) -> Side | None:
    op, right = node.ops[0], node.comparators[0]
    left = _marker(node.left)
    negate = isinstance(op, ast.NotEq | ast.IsNot | ast.NotIn)
    if isinstance(right, ast.Constant) and right.value is None:  # X is None: the other side of X
        return left if isinstance(op, ast.IsNot) else _flip(left)
    if isinstance(right, ast.Constant) and isinstance(right.value, str) and right.value.lower() in ("rocm", "hip", "cuda"):
        side = "cuda" if right.value.lower() == "cuda" else "hip"
        return _flip(side) if negate else side
    return left or _marker(right)


def _marker(node: ast.AST) -> Side | None:
    if isinstance(node, ast.Call):
        name, _ = env_name(node)
        if name is not None:
            return "hip" if HIP_WORD.search(name) else "cuda" if name in CUDA_NAMES else None
        node = node.func
    name = dotted(node)
    if not name or name.startswith("torch.cuda"):
        return None  # torch.cuda is the GPU module on ROCm too
    if name in CUDA_NAMES or name.split(".")[-1] in CUDA_NAMES:
        return "cuda"
    return "hip" if HIP_WORD.search(name) else None


def _flip(side: Side | None) -> Side | None:
    return {"hip": "cuda", "cuda": "hip"}.get(side or "", side)


def _tested_lists(module: ast.Module, rel: str) -> list[tuple[tuple[str, ...], str, bool]]:
    """Lists of gfx literals, and whether something is tested for membership in them (`arch in allowed`)."""
    members = [n.comparators[0] for n in ast.walk(module)
               if isinstance(n, ast.Compare) and isinstance(n.ops[0], ast.In | ast.NotIn)]
    tested, literal = {dotted(m) for m in members} - {""}, {id(m) for m in members}
    assigned: dict[int, str] = {id(n.value): dotted(n.targets[0]) for n in ast.walk(module)
                                if isinstance(n, ast.Assign) and len(n.targets) == 1}
    found = []
    for node in ast.walk(module):
        if not isinstance(node, ast.List | ast.Tuple | ast.Set) or not node.elts:
            continue
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        targets = tuple(i for i in items if GFX.match(i))
        if len(items) == len(node.elts) and targets and all(GFX.match(i) or i == "native" for i in items):
            name = assigned.get(id(node), "")
            found.append((targets, f"{rel}:{node.lineno}", name in tested or id(node) in literal))
    return found


def local_modules(tree: Path, path: Path) -> list[str]:
    """The tree's own Python files a build file reaches, as paths relative to the tree, in the order they are
    reached: the modules it imports (`from build_utils import FLAGS`, looked for at the tree's top and under src/),
    a `.py` file it names in a string (deformops loads its flags from `... / "core" / "configs.py"` with
    SourceFileLoader), and what those import in turn (colossalai's setup.py imports extensions/, whose
    cuda_extension.py reads FORCE_CUDA). What such a file holds reaches the build as surely as setup.py's own."""
    rel = str(path.relative_to(tree))
    found: dict[str, None] = {}
    queue = [path]
    while queue and len(found) < MAX_MODULES:
        for reached in _reached(tree, queue.pop(0)):
            if reached != rel and reached not in found and len(found) < MAX_MODULES:
                found[reached] = None
                queue.append(tree / reached)
    return list(found)


def _reached(tree: Path, path: Path) -> list[str]:
    """The tree's Python files one file imports or names."""
    try:
        module = ast.parse(path.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return []
    here = path.parent.relative_to(tree).parts
    dotted_names: list[tuple[str, tuple[str, ...]]] = [(a.name, ()) for n in ast.walk(module) if isinstance(n, ast.Import)
                                                       for a in n.names]
    for n in ast.walk(module):
        if isinstance(n, ast.ImportFrom):  # `from .x import y`: x beside this file; `from . import y`: y beside it
            base = here[:len(here) - n.level + 1] if n.level else ()
            names = [n.module] if n.module else [a.name for a in n.names]
            dotted_names += [(name, base) for name in names]
    named = {n.value.rsplit("/", 1)[-1] for n in ast.walk(module)
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and re.fullmatch(r"[\w./-]+\.py", n.value)}
    found: list[str] = []
    for name, base in dotted_names:
        parts = name.split(".")
        for top in ([tree.joinpath(*base)] if base else [tree, tree / "src"]):
            found += [str(p.relative_to(tree)) for p in (top.joinpath(*parts[:-1], parts[-1] + ".py"),
                                                          top.joinpath(*parts, "__init__.py")) if p.is_file()]
    if named:
        for folder, dirs, names in os.walk(tree):
            dirs[:] = sorted(d for d in dirs if d not in NOT_READ and not d.startswith("."))
            found += [str((Path(folder) / n).relative_to(tree)) for n in sorted(names) if n in named]
    return list(dict.fromkeys(found))


PIP = frozenset({"pip", "pip3"})


def pip_runs(path: Path) -> list[tuple[int, str]]:
    """The statements of a build file that run pip themselves (MinkowskiEngine's `run_command("pip", "uninstall",
    "MinkowskiEngine", "-y")`, `subprocess.check_call([sys.executable, "-m", "pip", "install", "ninja"])`,
    `os.system("pip install x")`): line and source text of each call that stands as a statement of its own."""
    try:
        text = path.read_text(errors="replace")
        module = ast.parse(text)
    except (OSError, SyntaxError, ValueError, RecursionError):
        return []
    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _runs_pip(node.value):
            segment = ast.get_source_segment(text, node.value)
            if segment:
                found.append((node.lineno, segment))
    return found


def _runs_pip(call: ast.Call) -> bool:
    words: list[str | None] = []
    for arg in call.args:
        items = arg.elts if isinstance(arg, ast.List | ast.Tuple) else [arg]
        words += [i.value if isinstance(i, ast.Constant) and isinstance(i.value, str) else None for i in items]
    if not words:
        return False
    shell = (words[0] or "").split()
    return (words[0] in PIP or bool(shell and shell[0] in PIP)
            or any(a == "-m" and b in PIP for a, b in zip(words, words[1:])))
