"""The W3C SPARQL 1.1 update-evaluation suites run on ``StaticStore.update``.

Each test loads the action's data (``ut:data`` into the default graph, ``ut:graphData`` into the
graph its ``rdfs:label`` names), runs the request, and compares every graph of the store with the
expected result, isomorphic up to blank-node renaming. On every test it also checks that the
change event's counts are exactly the set difference of the store before and after.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from w3c import SPARQL11, W3CTest
from w3c import params as w3c_params
from w3c import select_tests as w3c_tests

from cqels_endpoint.oxigraph.requests import open_store
from static_store import StaticStore

SUITES = (
    "basic-update",
    "add",
    "clear",
    "copy",
    "delete",
    "delete-data",
    "delete-insert",
    "delete-where",
    "drop",
    "move",
    "update-silent",
)
TESTS = w3c_tests([SPARQL11 / suite / "manifest.ttl" for suite in SUITES], "UpdateEvaluationTest")



def snapshot(store: StaticStore) -> dict[str | None, set[ox.Quad]]:
    """The store's quads per graph (None = default graph); blank nodes keep their store identity."""
    graphs: dict[str | None, set[ox.Quad]] = {}
    for quad in store:
        name = None if isinstance(quad.graph_name, ox.DefaultGraph) else quad.graph_name.value
        graphs.setdefault(name, set()).add(quad)
    return graphs


def canonical(triples) -> ox.Dataset:
    """A dataset of ``triples`` in the default graph with canonical blank-node labels."""
    dataset = ox.Dataset(ox.Quad(t.subject, t.predicate, t.object) for t in triples)
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return dataset


def expected_graphs(test: W3CTest) -> dict[str | None, list[ox.Triple]]:
    expected: dict[str | None, list[ox.Triple]] = {None: []}
    if test.result is not None:
        expected[None] = _triples(test.result)
    for label, path in test.result_graph_data:
        expected[label] = _triples(path)
    return expected


def _triples(path) -> list[ox.Triple]:
    return [q.triple for q in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=path.as_uri())]


def differences(before: dict, after: dict) -> dict[str | None, tuple[int, int]]:
    """Per graph, ``(added, removed)`` by set difference, unchanged graphs left out."""
    found = {}
    for graph in set(before) | set(after):
        old, new = before.get(graph, set()), after.get(graph, set())
        added, removed = len(new - old), len(old - new)
        if added or removed:
            found[graph] = (added, removed)
    return found


@pytest.mark.parametrize("test", w3c_params(TESTS))
def test_update_evaluation(test: W3CTest) -> None:
    with open_store() as store:
        for path in test.data:
            store.load(path)
        for label, path in test.graph_data:
            store.load(path, graph=label)
        before = snapshot(store)
        events = []
        store.subscribe(events.append)
        request = test.action.read_text(encoding="utf-8")
        returned = store.update(request, base_iri=test.action.as_uri())
        after = snapshot(store)

        # The store holds exactly the expected graphs (empty graphs count as absent).
        expected = expected_graphs(test)
        for graph in set(expected) | set(after):
            got = canonical(q.triple for q in after.get(graph, ()))
            want = canonical(expected.get(graph, ()))
            assert got == want, f"graph {graph or 'DEFAULT'} differs:\ngot  {sorted(map(str, got))}\nwant {sorted(map(str, want))}"

        # One event exactly when something changed, with the real per-graph differences.
        real = differences(before, after)
        assert events == ([returned] if real else [])
        if real:
            assert {c.graph: (c.added, c.removed) for c in returned.changes} == real
        else:
            assert returned is None


def test_the_suites_are_all_there() -> None:
    # Guards against a manifest path typo silently running nothing.
    assert len(TESTS) == 94
