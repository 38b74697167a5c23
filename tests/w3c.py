"""Reading the W3C SPARQL test manifests vendored under ``tests/w3c-sparql`` (W3C licence in
``tests/w3c-sparql/LICENSE.md``).

``load_tests(manifest)`` follows ``mf:include`` and yields one ``W3CTest`` per entry, so test
modules only choose manifests and test types; known failures live in ``tests/known_failures.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox
import pytest
from known_failures import KNOWN_FAILURES

ROOT = Path(__file__).parent / "w3c-sparql" / "sparql"
SPARQL10 = ROOT / "sparql10"
SPARQL11 = ROOT / "sparql11"

# The SPARQL 1.1 query-evaluation suites the one-shot endpoint and the continuous path both run.
QUERY_EVALUATION_SUITES = (
    "aggregates",
    "bind",
    "bindings",
    "cast",
    "construct",
    "exists",
    "functions",
    "grouping",
    "negation",
    "project-expression",
    "property-path",
    "subquery",
    "json-res",
)

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
QT = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#"
UT = "http://www.w3.org/2009/sparql/tests/test-update#"
DAWGT = "http://www.w3.org/2001/sw/DataAccess/tests/test-dawg#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
RDF_FIRST = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#first")
RDF_REST = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#rest")
RDF_NIL = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#nil")


@dataclass(frozen=True)
class W3CTest:
    """One manifest entry. File references are local paths (``None`` when absent)."""

    iri: str
    type: str  # local name in the mf: namespace, e.g. "PositiveSyntaxTest11"
    name: str
    manifest: Path
    action: Path | None = None  # the query/update file (syntax tests, or qt:query/ut:request)
    data: tuple[Path, ...] = ()  # qt:data / ut:data
    graph_data: tuple[tuple[str, Path], ...] = ()  # (graph IRI, file) for qt:graphData / ut:graphData
    result: Path | None = None
    result_graph_data: tuple[tuple[str, Path], ...] = ()
    approval: str | None = None  # local name in dawgt:, e.g. "Approved"
    lax_cardinality: bool = False  # mf:resultCardinality mf:LaxCardinality: duplicates may be dropped (REDUCED)
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def id(self) -> str:
        """A short, unique, stable pytest id: ``sparql10|sparql11/<suite dir>/<entry name>``."""
        version = self.manifest.relative_to(ROOT).parts[0]
        return f"{version}/{self.manifest.parent.name}/{self.iri.rsplit('#', 1)[-1]}"


def _graph(path: Path) -> ox.Store:
    store = ox.Store()
    store.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=path.as_uri())
    return store


def objects(store: ox.Store, subject, predicate: str) -> list:
    return [q.object for q in store.quads_for_pattern(subject, ox.NamedNode(predicate), None)]


def one(store: ox.Store, subject, predicate: str):
    found = objects(store, subject, predicate)
    return found[0] if found else None


def rdf_list(store: ox.Store, head) -> list:
    items = []
    while head is not None and head != RDF_NIL:
        items.append(one(store, head, RDF_FIRST.value))
        head = one(store, head, RDF_REST.value)
    return items


def _path(term) -> Path | None:
    if isinstance(term, ox.NamedNode) and term.value.startswith("file:"):
        return Path(term.value.removeprefix("file://"))
    return None


def graph_refs(store: ox.Store, subject, predicate: str) -> tuple[tuple[str, Path], ...]:
    """``qt:graphData <file>`` or the update form ``[ ut:graph <file>; rdfs:label "iri" ]``."""
    refs = []
    for obj in objects(store, subject, predicate):
        if isinstance(obj, ox.NamedNode):
            refs.append((obj.value, _path(obj)))
        else:
            file = one(store, obj, UT + "graph")
            label = one(store, obj, RDFS_LABEL.value)
            refs.append((label.value if label is not None else file.value, _path(file)))
    return tuple(refs)


def load_tests(manifest: Path) -> Iterator[W3CTest]:
    """Every entry of ``manifest`` and of the manifests it includes, in manifest order."""
    store = _graph(manifest)
    root = ox.NamedNode(manifest.as_uri())
    for included in rdf_list(store, one(store, root, MF + "include")):
        yield from load_tests(_path(included))
    for entry in rdf_list(store, one(store, root, MF + "entries")):
        types = [t.value for t in objects(store, entry, RDF_TYPE.value) if t.value.startswith(MF)]
        name = one(store, entry, MF + "name")
        action = one(store, entry, MF + "action")
        result = one(store, entry, MF + "result")
        approval = one(store, entry, DAWGT + "approval")
        test = dict(
            iri=entry.value,
            type=types[0].removeprefix(MF) if types else "",
            name=name.value if name is not None else entry.value,
            manifest=manifest,
            approval=approval.value.rsplit("#", 1)[-1] if approval is not None else None,
            lax_cardinality=one(store, entry, MF + "resultCardinality") == ox.NamedNode(MF + "LaxCardinality"),
        )
        if isinstance(action, ox.NamedNode):
            test["action"] = _path(action)
        elif action is not None:
            query = one(store, action, QT + "query") or one(store, action, UT + "request")
            test["action"] = _path(query) if query is not None else None
            test["data"] = tuple(
                _path(d) for d in objects(store, action, QT + "data") + objects(store, action, UT + "data")
            )
            test["graph_data"] = graph_refs(store, action, QT + "graphData") + graph_refs(
                store, action, UT + "graphData"
            )
            test["extra"] = {"action_node": action, "store": store}
        if isinstance(result, ox.NamedNode):
            test["result"] = _path(result)
        elif result is not None:
            data = one(store, result, UT + "data")
            test["result"] = _path(data) if data is not None else None
            test["result_graph_data"] = graph_refs(store, result, UT + "graphData")
        yield W3CTest(**test)


def params(tests: list[W3CTest], known_failures: dict[str, str] = KNOWN_FAILURES) -> list:
    """``pytest.param``s of ``tests`` (ids = ``test.id``), strict xfail for the entries of ``known_failures``."""
    return [
        pytest.param(test, id=test.id, marks=pytest.mark.xfail(reason=known_failures[test.iri], strict=True))
        if test.iri in known_failures
        else pytest.param(test, id=test.id)
        for test in tests
    ]


def select_tests(manifests: list[Path], *types: str) -> list[W3CTest]:
    """The entries of the given types (local names) from several manifests, withdrawn ones dropped."""
    found = []
    for manifest in manifests:
        found.extend(
            t for t in load_tests(manifest) if t.type in types and t.approval not in ("Withdrawn", "NotApproved")
        )
    return found
