"""``GRAPH ?g`` over a VALUES, a sub-select or a MINUS: SPARQL's scoping in both evaluation modes.

SPARQL evaluates ``GRAPH ?g { P }`` graph by graph and joins each graph's solutions of P with
``?g`` = that graph (§18.6). pyoxigraph binds ?g inside P instead, which changes the answer when P
holds a sub-select or a VALUES (no ?g bound at all) or a MINUS (?g shared by both sides); the static
caches and the recompute oracle, both evaluated by pyoxigraph, write such a GRAPH graph by graph over
the store's named graphs (``algebra.to_sparql.graph_by_graph``). The property test joins stream
patterns with such static parts over three named graphs and compares both modes at every evaluation
(``incremental_oracle``); the explicit tests check the answers themselves, and that a store change
(a new graph, a dropped one) reaches the cache and the oracle. Shrunk failures are kept under
``tests/regressions/graph_scope/`` and replayed below.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS, REGRESSIONS, Scenario, check, check_keeping_failures, regression_cases
from test_cache_rebuild import Both
from test_incremental_differential import EX, STREAMS, WINDOWS, histories

from cqels_endpoint import Engine
from cqels_endpoint.algebra.to_sparql import to_sparql
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.caches.engines import store_graph_iris
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.query.parser import parse_query
from cqels_endpoint.terms import IRI

GRAPH_SCOPE_REGRESSIONS = REGRESSIONS.parent / "graph_scope"
ENTITIES = ("e0", "e1", "e2")
# Static parts whose GRAPH ?g pyoxigraph scopes wrongly; ?g joins the stream's ?b, or not.
STATIC_PARTS = (
    "GRAPH ?g {{ SELECT (COUNT(*) AS ?c) WHERE {{ ?x :s ?y FILTER (?y != :e0) }} }}",
    "GRAPH ?b {{ SELECT (COUNT(*) AS ?c) WHERE {{ ?x :s ?y }} }}",
    "GRAPH ?g {{ SELECT ?b (COUNT(*) AS ?c) WHERE {{ ?b :s ?y }} GROUP BY ?b }}",
    "GRAPH ?g {{ VALUES (?g ?c) {{ (UNDEF 1) (:e1 2) }} }}",
    "GRAPH ?b {{ VALUES ?c {{ 1 2 }} }}",
    "GRAPH ?g {{ ?b :s ?c MINUS {{ ?x :s :e0 }} }}",
    "GRAPH ?g {{ ?b :s ?c MINUS {{ ?c :s ?b }} }}",
    "GRAPH ?b {{ ?x :s ?c MINUS {{ ?x :t ?c }} }}",
)
DATASETS = ("", "", f"FROM NAMED <{EX}e0> FROM NAMED <{EX}e2>", f"FROM <{EX}e1> FROM NAMED <{EX}e1>")


@st.composite
def named_graphs(draw) -> str:
    """Quads over three named graphs named like the stream's entities, and the default graph."""
    quads = []
    for _ in range(draw(st.integers(0, 12))):
        subject, obj = (f"<{EX}{draw(st.sampled_from(ENTITIES))}>" for _ in range(2))
        predicate = f"<{EX}{draw(st.sampled_from(('s', 's', 't')))}>"
        graph = draw(st.sampled_from(("", *ENTITIES)))
        quads.append(f"{subject} {predicate} {obj}{f' <{EX}{graph}>' if graph else ''} .")
    return "\n".join(quads)


@st.composite
def graph_queries(draw) -> str:
    part = draw(st.sampled_from(STATIC_PARTS))
    stream = f"STREAM <{draw(st.sampled_from(STREAMS))}> {draw(WINDOWS)} {{ ?a :p ?b }}"
    head = draw(st.sampled_from(("SELECT *", "SELECT ?a ?c", "SELECT DISTINCT ?b ?c")))
    return f"PREFIX : <{EX}>\n{head} {draw(st.sampled_from(DATASETS))}\nWHERE {{\n  {stream}\n  {part.format()}\n}}"


@settings(ORACLE_SETTINGS, max_examples=200)
@given(query=graph_queries(), static=named_graphs(), events=histories())
def test_graph_scope_incremental_equals_recompute(query: str, static: str, events: list[list]) -> None:
    check_keeping_failures(Scenario(query, static, events), GRAPH_SCOPE_REGRESSIONS)


@pytest.mark.parametrize(("name", "scenario"), regression_cases(GRAPH_SCOPE_REGRESSIONS))
def test_regression(name: str, scenario: Scenario) -> None:
    check(scenario)


STATIC = f"""<{EX}x> <{EX}s> <{EX}e0> <{EX}e0> .
<{EX}x> <{EX}s> <{EX}e1> <{EX}e1> .
<{EX}y> <{EX}s> <{EX}e2> <{EX}e1> .
<{EX}x> <{EX}t> <{EX}e2> <{EX}e2> ."""


def rows_of(logs: dict, *names: str) -> list:
    """The rows of each RSTREAM emission of the incremental mode (equal to the oracle's: ``check``)."""
    return [sorted(tuple(str(r.get(v)) for v in names) for r in e.rows) for e in logs["incremental", "RSTREAM"]]


def test_a_count_per_graph_including_the_graphs_without_a_match() -> None:
    query = f"""PREFIX : <{EX}> SELECT ?b ?c WHERE {{
      STREAM <{STREAMS[0]}> [ALL] {{ ?a :p ?b }}
      GRAPH ?b {{ SELECT (COUNT(*) AS ?c) WHERE {{ ?x :s ?y FILTER (?y != :e0) }} }}
    }}"""
    events = [["push", STREAMS[0], 1, f"<{EX}a> <{EX}p> <{EX}e0> .\n<{EX}a> <{EX}p> <{EX}e1> .\n<{EX}a> <{EX}p> <{EX}e2> ."]]
    logs = check(Scenario(query, STATIC, events))
    integer = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    assert rows_of(logs, "b", "c") == [[(f"<{EX}e0>", f'"0"{integer}'), (f"<{EX}e1>", f'"2"{integer}'), (f"<{EX}e2>", f'"0"{integer}')]]


def test_minus_inside_graph_removes_only_what_shares_a_variable() -> None:
    # MINUS { ?x :s :e0 } shares no variable with ?b :s ?c: it removes nothing, in every graph.
    query = f"""PREFIX : <{EX}> SELECT ?g ?c WHERE {{
      STREAM <{STREAMS[0]}> [ALL] {{ ?a :p ?b }}
      GRAPH ?g {{ ?b :s ?c MINUS {{ ?x :s :e0 }} }}
    }}"""
    events = [["push", STREAMS[0], 1, f"<{EX}a> <{EX}p> <{EX}x> ."]]
    logs = check(Scenario(query, STATIC, events))
    assert rows_of(logs, "g", "c") == [[(f"<{EX}e0>", f"<{EX}e0>"), (f"<{EX}e1>", f"<{EX}e1>")]]


def test_a_new_graph_and_a_dropped_one_reach_the_cache_and_the_oracle() -> None:
    store = open_store()
    store.load(STATIC.encode(), media_type="application/n-quads")
    engine = Engine(store=store, rebuild_debounce_ms=10)
    query = f"""PREFIX : <{EX}> SELECT ?g ?c WHERE {{
      STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?a :p ?b }}
      GRAPH ?g {{ SELECT (COUNT(*) AS ?c) WHERE {{ ?x :s ?y }} }}
    }}"""
    both = Both(engine, query)
    engine.push(STREAMS[0], f"<{EX}a> <{EX}p> <{EX}b> .", time=1)
    store.update(f"PREFIX : <{EX}> INSERT DATA {{ GRAPH :e3 {{ :x :s :y . :y :s :x }} }}")
    assert engine.wait_for_caches(10)
    engine.push(STREAMS[0], f"<{EX}a> <{EX}p> <{EX}c> .", time=2)
    store.update(f"PREFIX : <{EX}> DROP GRAPH :e1")
    assert engine.wait_for_caches(10)
    engine.push(STREAMS[0], f"<{EX}a> <{EX}p> <{EX}d> .", time=3)
    assert both.differences() == []
    # Every stream row joins the count of every graph: e3 comes in, e1 goes.
    graphs = [sorted({r["g"].value for r in e.rows}) for e in both.logs["incremental", "RSTREAM"]]
    assert graphs == [[EX + "e0", EX + "e1", EX + "e2"], [EX + g for g in ("e0", "e1", "e2", "e3")], [EX + g for g in ("e0", "e2", "e3")]]
    engine.close()


def test_the_text_lists_the_graphs_of_the_dataset() -> None:
    text = f"PREFIX : <{EX}> SELECT * WHERE {{ GRAPH ?g {{ VALUES ?c {{ 1 }} }} }}"
    algebra = to_algebra(parse_query(text))
    assert "VALUES ?g" not in to_sparql(algebra)  # unknown graphs: pyoxigraph's own GRAPH ?g
    assert to_sparql(algebra, store_graphs=()).endswith("WHERE { VALUES ?g { } }")
    by_graph = to_sparql(algebra, store_graphs=(IRI(EX + "e0"), IRI(EX + "e1")))
    assert by_graph.count("UNION") == 1 and f"GRAPH <{EX}e1>" in by_graph and f"VALUES ?g {{ <{EX}e1> }}" in by_graph
    named = to_algebra(parse_query(text.replace("SELECT *", f"SELECT * FROM NAMED <{EX}e2>")))
    # A FROM NAMED clause names the graphs whatever the store holds.
    assert f"GRAPH <{EX}e2>" in to_sparql(named) and f"GRAPH <{EX}e0>" not in to_sparql(named, store_graphs=(IRI(EX + "e0"),))


def test_graphs_named_by_blank_nodes_keep_pyoxigraphs_graph() -> None:
    store = ox.Store()
    store.add(ox.Quad(ox.NamedNode(EX + "x"), ox.NamedNode(EX + "s"), ox.NamedNode(EX + "y"), ox.NamedNode(EX + "e1")))
    assert store_graph_iris(store) == (IRI(EX + "e1"),)
    store.add(ox.Quad(ox.NamedNode(EX + "x"), ox.NamedNode(EX + "s"), ox.NamedNode(EX + "y"), ox.BlankNode()))
    # Query text cannot name a blank node: the text falls back to pyoxigraph's own GRAPH ?g.
    assert store_graph_iris(store) is None
    assert store_graph_iris(None) == ()
