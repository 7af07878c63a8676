"""The tree reads as the pipeline: checked from the source itself, so a change that breaks the shape
fails here rather than in a reader's head."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "rocbuild"
# Folders by stage, in the order data flows: a module may import from its own folder, from a folder of
# lower rank, and from the top-level helpers (rank 0), never from a folder above it.
# draft/ (the drafter, the trap catalogue and the failure report) reads recipes and is read by verify and the
# engine, which report a failure through it: it sits between recipe and plan, and imports neither verify nor engine.
# attempt/ (--try) sits above the engine: it plans, builds and reads the failure report, and only cli calls it.
STAGES = {"cli": 11, "attempt": 10, "ci": 10, "engine": 9, "wheelhouse": 8, "doctor": 8, "verify": 7, "plan": 6, "draft": 5,
          "recipe": 4, "source": 3, "torchkit": 3, "detect": 2, "roots": 1, "process": 1}
# The only modules outside cli/ that may read os.environ: XDG folders, and a child's environment.
# engine/extshim runs inside a build step's python (as its sitecustomize), not in rocbuild: the plan's
# environment is all it has.
ENVIRONMENT_READERS = {"paths.py", "process/runner.py", "engine/extshim/sitecustomize.py"}


def modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts): p for p in PACKAGE.rglob("*.py")}


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in STAGES else None


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rocbuild"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("rocbuild")}
    return found


def test_every_import_runs_down_the_pipeline():
    upward = []
    for name, path in modules().items():
        here = stage_of(name)
        for target in imports(path):
            there = stage_of(target + ".x") if target.count(".") == 1 else stage_of(target)
            if here is None and there is not None and name not in ("rocbuild.__main__",):
                upward.append(f"{name} (top level) -> {target}")
            elif here and there and here != there and STAGES[there] >= STAGES[here]:
                upward.append(f"{name} -> {target}")
    assert upward == []


def test_at_most_ten_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top
    assert set(STAGES) <= {p.name for p in PACKAGE.iterdir() if p.is_dir()}


def test_the_environment_is_read_at_the_edge():
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if p.parts[len(PACKAGE.parts)] != "cli" and ("os.environ" in p.read_text()
                                                                  or "os.getenv" in p.read_text()))
    assert set(readers) <= ENVIRONMENT_READERS, readers
    plan = [p for p in (PACKAGE / "plan").rglob("*.py") if "os.environ" in p.read_text() or "os.getenv" in p.read_text()]
    assert plan == []


def test_no_function_is_longer_than_a_screen():
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > 80:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({length} lines)")
    assert long == []


def faces() -> set[str]:
    """The packages: `rocbuild`, `rocbuild.recipe`, ... (their __init__.py)."""
    return {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}


def test_package_faces_import_nothing():
    """A package's __init__ runs before any of its modules: one that imports a module of its own package
    makes every import of that package pull the module in, and can close a cycle at import time."""
    importing = []
    for path in PACKAGE.rglob("__init__.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import | ast.ImportFrom) and not (
                    isinstance(node, ast.ImportFrom) and node.module == "__future__"):
                importing.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert importing == []


def test_no_import_goes_through_a_package_face():
    """Every `from X import name` names the module that defines `name`, never a package: `from rocbuild.recipe
    import keys` reads through the face (the top package's __version__ is the one name a face holds)."""
    packages = faces()
    through = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in packages and not (
                    node.module == "rocbuild" and [a.name for a in node.names] == ["__version__"]):
                through.append(f"{name}:{node.lineno} from {node.module} import {', '.join(a.name for a in node.names)}")
    assert through == []


def import_time_graph() -> dict[str, set[str]]:
    """Module -> the rocbuild modules it imports at import time (top level, not inside functions or
    `if TYPE_CHECKING:`), each with the package faces that run first."""
    graph: dict[str, set[str]] = {}
    for name, path in modules().items():
        targets = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rocbuild"):
                targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith("rocbuild")}
        with_faces = set()
        for target in targets:
            parts = target.split(".")
            with_faces |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        parent = name.rsplit(".", 1)[0] if not name.endswith("__init__") else None
        if parent:
            with_faces.add(parent)  # importing a module runs its package's face first
        graph[name.removesuffix(".__init__")] = with_faces - {name.removesuffix(".__init__")}
    return graph


def test_no_import_cycles_at_import_time():
    """No module reaches itself through what it imports at the top, package faces counted (a cycle
    works or breaks by import order: `ImportError: cannot import name` for whoever comes second)."""
    graph = import_time_graph()
    cycles = []

    def visit(node: str, stack: list[str], done: set[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in stack:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in done:
                visit(nxt, stack + [nxt], done)
        done.add(node)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start], done)
    assert cycles == []
