"""The W3C SPARQL query-evaluation suites, run through the continuous path of the engine.

Each test query is rewritten at the AST level to read its default graph from a stream,
``FROM STREAM <urn:test:stream> [ALL]`` (its own ``FROM`` clauses removed); the default-graph data
(``qt:data`` and the files the query named with ``FROM``) is pushed as ONE event into that stream,
while named graphs (``qt:graphData``, ``FROM NAMED``) stay static in the engine's store. The query
is registered in incremental mode with RSTREAM; after the event, its Γ (``q.snapshot()``, the
triples of the last emission for CONSTRUCT, its ``boolean`` for ASK) is compared with the W3C expected result under the W3C
rules (``sparql_results.py``). Γ is a bag: ORDER BY does not constrain it.

Queries using constructs the incremental planner still refuses (see the PlanError messages:
sub-queries, top-k, …) are skipped with the reason the planner's ``PlanError`` gives, and
queries the stream rewrite makes illegal (a path with ``*``, ``+``, ``?`` or ``!`` over the merge
of several windows) with the ``QuerySyntaxError`` the registration raises: the skip list
follows the engine, not a hand list. Known failures: ``CONTINUOUS_KNOWN_FAILURES`` in
``known_failures.py``, run as strict xfails.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyoxigraph as ox
import pytest
from known_failures import CONTINUOUS_KNOWN_FAILURES
from sparql_results import Boolean, Graph, Solutions, read_expected, results_difference
from w3c import QUERY_EVALUATION_SUITES, SPARQL10, SPARQL11, W3CTest
from w3c import params as w3c_params
from w3c import select_tests as w3c_tests

from cqels_endpoint import Engine, parse_query
from cqels_endpoint.errors import PlanError, QuerySyntaxError
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.query import ast
from cqels_endpoint.query.serialize import serialize_query
from cqels_endpoint.query.windows import AllWindow
from cqels_endpoint.terms import IRI
from static_store import StaticStore

STREAM = "urn:test:stream"
MANIFESTS = [SPARQL11 / name / "manifest.ttl" for name in QUERY_EVALUATION_SUITES]
MANIFESTS.append(SPARQL10 / "manifest-evaluation.ttl")
TESTS = w3c_tests(MANIFESTS, "QueryEvaluationTest")
RDF_FORMATS = {".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES, ".rdf": ox.RdfFormat.RDF_XML}


def continuous_text(query: ast.Query) -> tuple[str, list[Path]]:
    """The query reading its default graph from the stream, and the files of its ``FROM`` clauses."""
    form = query.form
    from_files = []
    datasets: list[ast.Dataset] = []
    for clause in form.datasets:
        if isinstance(clause, ast.DatasetClause) and not clause.named:
            from_files.append(_file_of(clause.iri))
        else:
            datasets.append(clause)
    datasets.append(ast.StreamDataset(IRI(STREAM), AllWindow()))
    rewritten = dataclasses.replace(query, form=dataclasses.replace(form, datasets=tuple(datasets)))
    return serialize_query(rewritten), [f for f in from_files if f is not None]


def _file_of(iri: IRI) -> Path | None:
    path = Path(iri.value.removeprefix("file://"))
    return path if iri.value.startswith("file:") and path.is_file() else None


def default_graph_triples(files: list[Path]) -> list[ox.Triple]:
    """The RDF merge of ``files`` (each parsed against its own IRI as base), as one stream event: the
    parser keeps blank node labels, so each file's blank nodes are renamed apart from the others'."""
    triples = []
    for file in files:
        fresh: dict[ox.BlankNode, ox.BlankNode] = {}

        def apart(term, fresh=fresh):
            return fresh.setdefault(term, ox.BlankNode()) if isinstance(term, ox.BlankNode) else term

        for quad in ox.parse(path=str(file), format=RDF_FORMATS[file.suffix], base_iri=file.as_uri()):
            triples.append(ox.Triple(apart(quad.subject), quad.predicate, apart(quad.object)))
    return triples


def static_named_graphs(test: W3CTest, query: ast.Query) -> StaticStore:
    store = open_store()
    for iri, file in test.graph_data:
        store.load(file, graph=iri)
    for clause in query.form.datasets:
        if isinstance(clause, ast.DatasetClause) and clause.named:
            file = _file_of(clause.iri)
            if file is not None:
                store.load(file, graph=clause.iri.value)
    return store


def test_the_suites_are_loaded() -> None:
    """Guards against a manifest that silently stops loading (the counts of the vendored suites)."""
    assert len([t for t in TESTS if t.manifest.is_relative_to(SPARQL11)]) == 229
    assert len([t for t in TESTS if t.manifest.is_relative_to(SPARQL10)]) == 277
    assert len({t.iri for t in TESTS}) == len(TESTS)


@pytest.mark.parametrize("test", w3c_params(TESTS, CONTINUOUS_KNOWN_FAILURES))
def test_continuous_query_evaluation(test: W3CTest) -> None:
    query = parse_query(test.action.read_text(encoding="utf-8"), base_iri=test.action.as_uri())
    text, from_files = continuous_text(query)
    expected = read_expected(test.result)
    engine = Engine(store=static_named_graphs(test, query))
    try:
        continuous = engine.register(text, r2s="RSTREAM", mode="incremental")
    except PlanError as error:
        pytest.skip(f"not an incremental query: {error}")
    except QuerySyntaxError as error:
        # The original query parsed: the stream version uses what windows cannot answer (paths).
        pytest.skip(f"not a continuous query once it reads a stream: {error.msg}")
    emissions = []
    continuous.subscribe(emissions.append)
    engine.push(STREAM, default_graph_triples(list(test.data) + from_files), time=0)
    assert [e.time for e in emissions] == [0]
    if continuous.form == "CONSTRUCT":
        actual = Graph(frozenset((t.subject, t.predicate, t.object) for t in emissions[-1].triples))
    elif continuous.form == "ASK":
        actual = Boolean(emissions[-1].boolean)
    else:
        actual = Solutions.of(continuous.variables, continuous.snapshot())
    difference = results_difference(expected, actual, lax_cardinality=test.lax_cardinality)
    engine.close()
    assert difference is None, f"{test.name} ({test.action.name} → {test.result.name}):\n{text}\n{difference}"
