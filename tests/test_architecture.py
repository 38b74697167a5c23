"""The package's imports run one way along the pipeline, and no module imports itself back; the
static store (``static_store/``) imports nothing of cqels_endpoint.

Every ``import`` counts, those inside functions too: a lazy import that hides a cycle is a cycle.
A package's ``__init__`` importing its own modules is not a cycle (the parent is always set up
before its children); a module importing a name from another room's ``__init__`` is an edge to
that room.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from paths import ROOT

PACKAGE = ROOT / "cqels_endpoint"
STATIC_STORE = ROOT / "static_store"

# The rooms in pipeline order: a module may import its own room and the rooms before it.
ROOMS = (
    ("errors", "terms", "config"),
    ("grammar",),
    ("query",),
    ("oxigraph",),
    ("algebra",),
    ("plan",),
    ("runtime",),
    ("operators",),
    ("caches",),
    ("spark",),
    ("engine",),
    ("streaming",),
    ("testing",),
    ("connectors",),
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


def top_level_imports(path: Path) -> tuple[set[str], set[str]]:
    """The top-level names of the modules ``path`` imports: at module level, and anywhere (inside
    functions too). Relative imports name the module's own package."""
    at_module_level, anywhere = set(), set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {path.parent.name if node.level else (node.module or "").partition(".")[0]}
        else:
            continue
        anywhere |= names
        if id(node) in module_level:
            at_module_level |= names
    return at_module_level, anywhere


# What the static store may import on first use only: a progress bar (load), rdflib (to_rdflib).
STATIC_STORE_LAZY = {"tqdm", "rdflib"}


def test_the_static_store_imports_nothing_of_cqels_endpoint() -> None:
    """static_store depends on pyoxigraph and the standard library; cqels_endpoint imports it, never
    the reverse (a lazy import inside a function counts)."""
    allowed = set(sys.stdlib_module_names) | {"__future__", "pyoxigraph", "static_store"}
    found = {path.name: top_level_imports(path) for path in sorted(STATIC_STORE.rglob("*.py"))}
    assert "store.py" in found
    assert {name: sorted(anywhere) for name, (_, anywhere) in found.items() if "cqels_endpoint" in anywhere} == {}
    assert {name: sorted(eager - allowed) for name, (eager, _) in found.items() if eager - allowed} == {}
    assert {name: sorted(anywhere - allowed - STATIC_STORE_LAZY) for name, (_, anywhere) in found.items() if anywhere - allowed - STATIC_STORE_LAZY} == {}


def test_the_static_store_check_sees_a_lazy_import(tmp_path) -> None:
    (tmp_path / "static_store").mkdir()
    module = tmp_path / "static_store" / "m.py"
    module.write_text("import re\nfrom . import errors\n\ndef f():\n    from cqels_endpoint.errors import Span\n    import tqdm\n")
    assert top_level_imports(module) == ({"re", "static_store"}, {"re", "static_store", "cqels_endpoint", "tqdm"})
