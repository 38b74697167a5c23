"""The W3C SPARQL 1.1 Protocol tests (``sparql11/protocol/manifest.ttl``) against the live endpoint.

Each test is a list of HTTP requests with the response each must get (``http_manifest.py`` reads
them). The manifest writes every path as ``/sparql/…`` and lets an endpoint use different paths
for queries and updates; here a request goes to ``/update`` when it carries an update by any
means the protocol has — ``Content-Type: application/sparql-update``, an ``update`` parameter in
the URL or form body, or ``using-graph-uri``/``using-named-graph-uri`` — and to ``/query``
otherwise. The two ``bad_update_*`` requests that carry none of these (a ``text/plain`` body)
still test the update operation, so they go to ``/update`` too.

Before each test the store is emptied (``DROP ALL``) and the test's ``ut:graphData`` files are PUT
into their named graphs with the Graph Store Protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

import pytest
from http_manifest import ManifestRequest, RawResponse, graph_data_of, requests_of, send
from sparql_results import SPARQL_CSV, SPARQL_JSON, SPARQL_TSV, SPARQL_XML, Boolean, Graph, Solutions, parse_results
from w3c import SPARQL11, W3CTest
from w3c import params as w3c_params
from w3c import select_tests as w3c_tests

if TYPE_CHECKING:
    from conftest import LiveEndpoint

MANIFEST = SPARQL11 / "protocol" / "manifest.ttl"
TESTS = w3c_tests([MANIFEST], "ProtocolTest")

UPDATE_PARAMETERS = {"update", "using-graph-uri", "using-named-graph-uri"}
FORM = "application/x-www-form-urlencoded"

# What mf:expectedFormat allows, as the manifest's test names spell it out.
BOOLEAN_TYPES = {SPARQL_JSON, SPARQL_XML}
TABULAR_TYPES = {SPARQL_JSON, SPARQL_XML, SPARQL_CSV, SPARQL_TSV}
RDF_TYPES = {"application/rdf+xml", "text/turtle", "application/n-triples"}


def _local_name(test: W3CTest) -> str:
    return test.iri.rsplit("#", 1)[-1]


def _parameter_names(request: ManifestRequest) -> set[str]:
    _, _, query = request.path.partition("?")
    names = {name for name, _ in parse_qsl(query, keep_blank_values=True)}
    content_type = (request.header("content-type") or "").split(";", 1)[0].strip().lower()
    if request.body is not None and content_type in (FORM, ""):
        names |= {name for name, _ in parse_qsl(request.body_text(), keep_blank_values=True)}
    return names


def is_update(test: W3CTest, request: ManifestRequest) -> bool:
    content_type = (request.header("content-type") or "").split(";", 1)[0].strip().lower()
    if content_type == "application/sparql-update" or _parameter_names(request) & UPDATE_PARAMETERS:
        return True
    return _local_name(test).startswith("bad_update_")


def endpoint_path(test: W3CTest, request: ManifestRequest) -> str:
    """``/sparql/?x`` → ``/update?x`` or ``/query?x``."""
    path, mark, query = request.path.partition("?")
    assert path == "/sparql/", f"unexpected path {request.path!r} in the manifest"
    return ("/update" if is_update(test, request) else "/query") + mark + query


def check_response(request: ManifestRequest, response: RawResponse, where: str) -> None:
    expected = request.response
    assert expected.accepts(response.status), (
        f"{where}: status {response.status}, expected {' or '.join(map(str, expected.statuses))}; "
        f"body: {response.body[:500]!r}"
    )
    if expected.result_format is None:
        return
    allowed = {"boolean": BOOLEAN_TYPES, "tabular": TABULAR_TYPES, "RDF": RDF_TYPES}[expected.result_format]
    assert response.media_type in allowed, f"{where}: {response.media_type!r} is not one of {sorted(allowed)}"
    parsed = parse_results(response.body, response.media_type)
    shape = {"boolean": Boolean, "tabular": Solutions, "RDF": Graph}[expected.result_format]
    assert isinstance(parsed, shape), f"{where}: expected a {shape.__name__} result, got {parsed!r}"
    if expected.boolean is not None:
        assert parsed == Boolean(expected.boolean), f"{where}: ASK answered {parsed.value}, expected {expected.boolean}"


def test_the_manifest_has_every_test() -> None:
    assert len(TESTS) == 34


def test_bad_update_requests_without_an_update_marker_are_the_text_plain_one() -> None:
    """The name-based routing covers exactly the request whose content does not say it is an update."""
    routed_by_name = [
        _local_name(test)
        for test in TESTS
        for request in requests_of(test)
        if _local_name(test).startswith("bad_update_")
        and not (
            (request.header("content-type") or "").startswith("application/sparql-update")
            or _parameter_names(request) & UPDATE_PARAMETERS
        )
    ]
    assert routed_by_name == ["bad_update_wrong_media_type"]


@pytest.mark.parametrize("test", w3c_params(TESTS))
def test_protocol(test: W3CTest, live_endpoint: LiveEndpoint) -> None:
    live_endpoint.reset()
    for graph, path in graph_data_of(test):
        loaded = live_endpoint.put_graph(graph, path.read_bytes(), "application/n-triples")
        assert loaded.status in (201, 204), loaded.text
    for number, request in enumerate(requests_of(test), 1):
        path = endpoint_path(test, request)
        response = send(live_endpoint.base_url, request.method, path, request.headers, request.body)
        check_response(request, response, f"request {number} ({request.method} {path})")
