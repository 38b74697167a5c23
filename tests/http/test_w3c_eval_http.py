"""The W3C SPARQL query-evaluation suites, run through the HTTP endpoint.

Every test goes the way a user's client would: the store is emptied with ``DROP ALL`` on
``/update``; ``qt:data`` is PUT (then POSTed, for a second file) into the default graph and each
``qt:graphData`` PUT into its named graph with the Graph Store Protocol; the query goes to
``/query`` asking for the format the expected results are written in; the answer is parsed from
the response and compared under the W3C rules (``sparql_results.py``).

IRIs: the manifests name files by their ``file:`` IRIs, and so does this test. A named graph's name
is its file's IRI, the query's base is the query file's IRI (sent as a ``BASE`` line, since the
Protocol has no base parameter), and the files a query names with ``FROM`` / ``FROM NAMED`` are
loaded under those IRIs. Data files are sent with their own IRI as base (see ``_with_base``).

Known failures are listed with reasons in ``known_failures.py`` and run as strict xfails.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sparql_results import (
    MEDIA_TYPE_OF_EXTENSION,
    SPARQL_JSON,
    Graph,
    parse_results,
    read_expected,
    results_difference,
)
from w3c import QUERY_EVALUATION_SUITES, SPARQL10, SPARQL11, W3CTest
from w3c import params as w3c_params
from w3c import select_tests as w3c_tests

from cqels_endpoint import parse_query
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import Var

if TYPE_CHECKING:
    from conftest import LiveEndpoint

SPARQL11_SUITES = (*QUERY_EVALUATION_SUITES, "csv-tsv-res")
MANIFESTS = [SPARQL11 / name / "manifest.ttl" for name in SPARQL11_SUITES] + [SPARQL10 / "manifest-evaluation.ttl"]
TESTS = w3c_tests(MANIFESTS, "QueryEvaluationTest", "CSVResultFormatTest")

DATA_MEDIA_TYPES = {".ttl": "text/turtle", ".nt": "application/n-triples", ".rdf": "application/rdf+xml"}



def test_the_suites_have_the_expected_sizes() -> None:
    """Guards against a manifest that silently stops loading (the counts of the vendored suites)."""
    assert len([t for t in TESTS if t.manifest.is_relative_to(SPARQL11)]) == 235
    assert len([t for t in TESTS if t.manifest.is_relative_to(SPARQL10)]) == 277
    assert len([t for t in TESTS if t.type == "CSVResultFormatTest"]) == 3
    assert len({t.iri for t in TESTS}) == len(TESTS)


@pytest.mark.parametrize("test", w3c_params(TESTS))
def test_query_evaluation(test: W3CTest, live_endpoint: LiveEndpoint) -> None:
    text = test.action.read_text(encoding="utf-8")
    query = parse_query(text, base_iri=test.action.as_uri())
    expected = read_expected(test.result)

    live_endpoint.reset()
    for graph, files in _dataset(test, query).items():
        for position, file in enumerate(files):
            # PUT replaces the graph; further files of the same graph are merged in with POST.
            write = live_endpoint.put_graph if position == 0 else live_endpoint.post_graph
            response = write(graph, _with_base(file), DATA_MEDIA_TYPES[file.suffix])
            assert response.status in (201, 204), f"loading {file.name}: {response.status} {response.text}"

    accept = _accept(test.result, expected)
    response = live_endpoint.query(f"BASE <{test.action.as_uri()}>\n{text}", accept=accept)
    assert response.status == 200, f"{response.status} {response.text}"
    assert response.content_type.split(";")[0].strip() == accept
    actual = parse_results(response.body, response.content_type)
    difference = results_difference(
        expected, actual, order_by=_order_by(query), lax_cardinality=test.lax_cardinality
    )
    assert difference is None, f"{test.name} ({test.action.name} → {test.result.name}):\n{difference}"


def _dataset(test: W3CTest, query: ast.Query) -> dict[str | None, list[Path]]:
    """The files to load, by graph (None = the default graph).

    ``qt:data`` goes to the default graph, ``qt:graphData`` to the graph named by its IRI, and a
    file the query names in FROM or FROM NAMED to the graph of that IRI (FROM reads named graphs
    of the store, merged into the query's default graph).
    """
    graphs: dict[str | None, list[Path]] = {}
    if test.data:
        graphs[None] = list(test.data)
    for iri, file in test.graph_data:
        graphs[iri] = [file]
    for clause in query.form.datasets:
        if isinstance(clause, ast.DatasetClause) and clause.iri.value.startswith("file:"):
            file = Path(clause.iri.value.removeprefix("file://"))
            if file.is_file():
                graphs[clause.iri.value] = [file]
    return graphs


def _with_base(file: Path) -> bytes:
    """The file's bytes with its own IRI made its explicit base.

    A document's base is the IRI it was retrieved from, which for these files is their ``file:``
    IRI; some use relative IRIs (``<>``, ``rdf:resource=""``) that the expected results spell out
    against it. Over the GSP the endpoint would resolve them against the request URL (or the
    target graph's IRI), so the base is stated in the document itself: an ``@base`` line first
    in Turtle, an ``xml:base`` on the root element of RDF/XML. N-Triples has only absolute IRIs.
    """
    data = file.read_bytes()
    iri = file.as_uri()
    if file.suffix == ".ttl":
        return f"@base <{iri}> .\n".encode() + data
    if file.suffix == ".rdf":
        root = re.search(rb"<(?![?!])[^\s>/]+", data)  # the first element's start tag
        if root is None:
            msg = f"{file} has no root element"
            raise ValueError(msg)
        if b"xml:base=" in data[root.end() : data.index(b">", root.end())]:
            return data
        return data[: root.end()] + f' xml:base="{iri}"'.encode() + data[root.end() :]
    return data


def _accept(result_file: Path, expected) -> str:
    """Ask for the format the expected results are written in; RDF-encoded result sets as JSON."""
    media_type = MEDIA_TYPE_OF_EXTENSION[result_file.suffix]
    if result_file.suffix in (".ttl", ".rdf", ".nt") and not isinstance(expected, Graph):
        return SPARQL_JSON
    return media_type


def _order_by(query: ast.Query) -> list[frozenset[str]]:
    """Per top-level ORDER BY condition, the variables it mentions (what the comparator can check)."""
    if not isinstance(query.form, ast.SelectQuery):
        return []
    return [
        frozenset(node.name for node in walk(condition.expr) if isinstance(node, Var))
        for condition in query.form.modifiers.order_by
    ]

