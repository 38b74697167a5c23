"""The package's imports run one way along the pipeline, and no module imports itself back.

Every ``import`` counts, those inside functions too: a lazy import that hides a cycle is a cycle.
A package's ``__init__`` importing its own modules is not a cycle (the parent is always set up
before its children); a module importing a name from another room's ``__init__`` is an edge to
that room.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from paths import ROOT

PACKAGE = ROOT / "cqels_endpoint"

# The rooms in pipeline order: a module may import its own room and the rooms before it.
ROOMS = (
    ("errors", "terms", "config"),
    ("grammar",),
    ("query",),
    ("static_store",),
    ("algebra",),
    ("plan",),
    ("runtime",),
    ("operators",),
    ("caches",),
    ("spark",),
    ("engine",),
    ("streaming",),
    ("testing",),
    ("http",),
    ("cli",),
    ("__init__",),
)
RANK = {room: rank for rank, rooms in enumerate(ROOMS) for room in rooms}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyx")):
        parts = ["cqels_endpoint", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


# ``from a.b import (x, y)`` or ``import a.b`` at the start of a line of a .pyx file.
_PYX_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)|import[ \t]+[\w. ,]+)$", re.MULTILINE)


def imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The package modules ``path`` imports (anywhere in it), resolved to the longest known name."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".pyx":  # Cython: the Python import statements (cimports are compile-time)
        source = "\n".join(found.strip() for found in _PYX_IMPORT.findall(source))  # imports inside functions too
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, name, known) for name, path in known.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back() -> None:
    assert cycles(graph()) == []


def test_every_room_is_placed_in_the_pipeline() -> None:
    assert {room(m) for m in modules()} <= set(RANK)


def test_imports_run_one_way_along_the_pipeline() -> None:
    backwards = sorted(
        f"{source} -> {target}"
        for source, targets in graph().items()
        for target in targets
        if RANK[room(target)] > RANK[room(source)]
    )
    assert backwards == []


def test_only_the_shared_modules_are_loose() -> None:
    loose = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert loose == {"errors", "terms", "config", "testing"}


def test_the_checker_sees_a_lazy_import(tmp_path) -> None:
    """A cycle through an import inside a function is found (the checker is not blind to them)."""
    (tmp_path / "a.py").write_text("def f():\n    from cqels_endpoint.b import g\n")
    (tmp_path / "b.py").write_text("from cqels_endpoint.a import f\n")
    known = {"cqels_endpoint.a": tmp_path / "a.py", "cqels_endpoint.b": tmp_path / "b.py"}
    edges = {name: imports(path, name, known) for name, path in known.items()}
    assert cycles(edges) == [["cqels_endpoint.a", "cqels_endpoint.b"]]
