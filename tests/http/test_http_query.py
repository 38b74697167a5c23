"""``/query`` and ``/sparql`` through real HTTP: the three ways to send a query, the dataset
parameters, result negotiation, and the 4xx/5xx answers for what cannot be run."""

from __future__ import annotations

import threading
import time
import urllib.parse
from typing import TYPE_CHECKING

import pyoxigraph as ox
import pytest
from http_manifest import send

if TYPE_CHECKING:
    from conftest import LiveEndpoint

EX = "http://example.org/"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
DATA = f"""
<{EX}alice> <{EX}name> "Alice" ; <{EX}knows> <{EX}bob> .
<{EX}bob> <{EX}name> "Bob" .
""".encode()
GRAPH_A = f"<{EX}a> <{EX}in> <{EX}graphA> .".encode()
GRAPH_B = f"<{EX}b> <{EX}in> <{EX}graphB> .".encode()
NAMES = f"SELECT ?name WHERE {{ ?p <{EX}name> ?name }} ORDER BY ?name"


@pytest.fixture
def endpoint(live_endpoint: LiveEndpoint) -> LiveEndpoint:
    live_endpoint.reset()
    for graph, data in ((None, DATA), (f"{EX}graphA", GRAPH_A), (f"{EX}graphB", GRAPH_B)):
        assert live_endpoint.put_graph(graph, data, "text/turtle").status in (201, 204)
    return live_endpoint


def names(response) -> list[str]:
    assert response.status == 200, response.text
    return [b["name"]["value"] for b in response.json()["results"]["bindings"]]


def form(**fields) -> bytes:
    return urllib.parse.urlencode(fields).encode()


# --------------------------------------------------------------------------- three ways in


def test_get(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/query", params={"query": NAMES})
    assert response.content_type == "application/sparql-results+json; charset=utf-8"
    assert names(response) == ["Alice", "Bob"]


def test_post_form(endpoint: LiveEndpoint) -> None:
    response = endpoint.post(
        "/query", body=form(query=NAMES), headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert names(response) == ["Alice", "Bob"]


def test_post_direct(endpoint: LiveEndpoint) -> None:
    response = endpoint.post("/query", body=NAMES, headers={"Content-Type": "application/sparql-query"})
    assert names(response) == ["Alice", "Bob"]


@pytest.mark.parametrize("path", ["/sparql", "/query/", "/sparql/"])
def test_aliases(endpoint: LiveEndpoint, path: str) -> None:
    assert names(endpoint.get(path, params={"query": NAMES})) == ["Alice", "Bob"]


def test_a_non_ascii_query(endpoint: LiveEndpoint) -> None:
    endpoint.update(f'INSERT DATA {{ <{EX}zoë> <{EX}name> "Zoë ✓" }}')
    assert "Zoë ✓" in names(endpoint.get("/query", params={"query": NAMES}))
    assert "Zoë ✓" in names(
        endpoint.post("/query", body=NAMES, headers={"Content-Type": "application/sparql-query; charset=UTF-8"})
    )


# --------------------------------------------------------------------------- dataset


def test_default_graph_uri_sets_the_default_graph(endpoint: LiveEndpoint) -> None:
    query = "SELECT ?s WHERE { ?s ?p ?o }"
    response = endpoint.get("/query", params=[("query", query), ("default-graph-uri", f"{EX}graphA")])
    assert [b["s"]["value"] for b in response.json()["results"]["bindings"]] == [f"{EX}a"]


def test_default_graph_uri_repeats_and_merges(endpoint: LiveEndpoint) -> None:
    query = "SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s"
    params = [("query", query), ("default-graph-uri", f"{EX}graphA"), ("default-graph-uri", f"{EX}graphB")]
    response = endpoint.get("/query", params=params)
    assert [b["s"]["value"] for b in response.json()["results"]["bindings"]] == [f"{EX}a", f"{EX}b"]


def test_named_graph_uri_overrides_from_named(endpoint: LiveEndpoint) -> None:
    query = f"SELECT ?g FROM NAMED <{EX}graphA> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"
    response = endpoint.post(
        "/query",
        params=[("named-graph-uri", f"{EX}graphB")],
        body=query,
        headers={"Content-Type": "application/sparql-query"},
    )
    assert [b["g"]["value"] for b in response.json()["results"]["bindings"]] == [f"{EX}graphB"]


def test_dataset_parameters_in_a_form_body(endpoint: LiveEndpoint) -> None:
    body = form(query="SELECT ?s WHERE { ?s ?p ?o }", **{"default-graph-uri": f"{EX}graphB"})
    response = endpoint.post("/query", body=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert [b["s"]["value"] for b in response.json()["results"]["bindings"]] == [f"{EX}b"]


def test_an_invalid_graph_iri_is_400(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/query", params=[("query", "ASK {}"), ("default-graph-uri", "not an iri")])
    assert response.status == 400
    assert "default-graph-uri" in response.json()["error"]


# --------------------------------------------------------------------------- negotiation


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        (None, "application/sparql-results+json"),
        ("application/sparql-results+xml", "application/sparql-results+xml"),
        ("text/csv", "text/csv"),
        ("text/tab-separated-values", "text/tab-separated-values"),
        ("text/csv;q=0.2, application/sparql-results+xml;q=0.9", "application/sparql-results+xml"),
    ],
)
def test_select_results_are_negotiated(endpoint: LiveEndpoint, accept, media_type) -> None:
    headers = {"Accept": accept} if accept else {}
    response = endpoint.get("/query", params={"query": NAMES}, headers=headers)
    assert response.status == 200
    assert response.content_type.split(";")[0] == media_type
    assert "Vary" in response.headers and "Accept" in response.headers["Vary"]
    if media_type == "text/csv":
        assert response.text.replace("\r\n", "\n") == "name\nAlice\nBob\n"
    else:
        parsed = ox.parse_query_results(response.body, ox.QueryResultsFormat.from_media_type(media_type))
        assert [s["name"].value for s in parsed] == ["Alice", "Bob"]


def test_format_parameter_overrides_accept(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/query", params={"query": NAMES, "format": "tsv"}, headers={"Accept": "text/csv"})
    assert response.content_type.startswith("text/tab-separated-values")


def test_ask_answers_a_boolean(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/query", params={"query": f"ASK {{ <{EX}alice> ?p ?o }}"})
    assert response.json() == {"head": {}, "boolean": True}
    xml = endpoint.get("/query", params={"query": "ASK { ?s <urn:nothing> ?o }"}, headers={"Accept": "application/xml"})
    assert xml.content_type.startswith("application/sparql-results+xml")
    assert b"<boolean>false</boolean>" in xml.body


@pytest.mark.parametrize(
    ("accept", "rdf_format"),
    [
        (None, ox.RdfFormat.TURTLE),
        ("application/n-triples", ox.RdfFormat.N_TRIPLES),
        ("application/rdf+xml", ox.RdfFormat.RDF_XML),
        ("application/ld+json", ox.RdfFormat.JSON_LD),
        ("application/n-quads", ox.RdfFormat.N_QUADS),
        ("application/trig", ox.RdfFormat.TRIG),
    ],
)
def test_construct_results_are_negotiated(endpoint: LiveEndpoint, accept, rdf_format) -> None:
    query = f"CONSTRUCT {{ ?b <{EX}knownBy> ?a }} WHERE {{ ?a <{EX}knows> ?b }}"
    response = endpoint.get("/query", params={"query": query}, headers={"Accept": accept} if accept else {})
    assert response.status == 200, response.text
    assert response.content_type.split(";")[0] == rdf_format.media_type
    triples = {(q.subject.value, q.predicate.value, q.object.value) for q in ox.parse(response.body, rdf_format)}
    assert triples == {(f"{EX}bob", f"{EX}knownBy", f"{EX}alice")}


def test_describe_answers_turtle(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/query", params={"query": f"DESCRIBE <{EX}bob>"})
    assert response.content_type.startswith("text/turtle")
    triples = {(q.predicate.value, q.object.value) for q in ox.parse(response.body, ox.RdfFormat.TURTLE)}
    assert triples == {(f"{EX}name", "Bob")}


def test_406_when_nothing_acceptable(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/query", params={"query": NAMES}, headers={"Accept": "text/turtle"})
    assert response.status == 406
    assert "application/sparql-results+json" in response.json()["error"]
    construct = endpoint.get("/query", params={"query": "CONSTRUCT WHERE { ?s ?p ?o }"}, headers={"Accept": "text/csv"})
    assert construct.status == 406


def test_406_for_an_unknown_format_name(endpoint: LiveEndpoint) -> None:
    assert endpoint.get("/query", params={"query": NAMES, "format": "yaml"}).status == 406


# --------------------------------------------------------------------------- refused queries



def test_a_query_in_the_url_and_the_body_is_400(endpoint: LiveEndpoint) -> None:
    response = endpoint.post(
        "/query", params={"query": "ASK {}"}, body="ASK {}", headers={"Content-Type": "application/sparql-query"}
    )
    assert "given in the URL and as the body" in response.error(400)["error"]


def test_two_query_parameters_are_400(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/query", params=[("query", "ASK {}"), ("query", "ASK {}")])
    assert "given 2 times" in response.error(400)["error"]


def test_a_query_in_the_url_and_the_form_is_400(endpoint: LiveEndpoint) -> None:
    response = endpoint.post(
        "/query",
        params={"query": "ASK {}"},
        body=form(query="ASK {}"),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    response.error(400)


def test_no_query_is_400(endpoint: LiveEndpoint) -> None:
    assert "no query" in endpoint.get("/query").error(400)["error"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * WHERE { STREAM <http://ex.org/s> [RANGE 30s] { ?s ?p ?o } }",
        "SELECT * FROM STREAM <http://ex.org/s> [RANGE 10s STEP 2s] WHERE { ?s ?p ?o }",
        "SELECT * FROM NAMED WINDOW <http://ex.org/w> ON <http://ex.org/s> [RANGE PT1H STEP PT5M] "
        "WHERE { WINDOW <http://ex.org/w> { ?s ?p ?o } }",
        "REGISTER ISTREAM <http://ex.org/out> AS SELECT * WHERE { ?s ?p ?o }",
    ],
)
def test_continuous_queries_are_sent_to_queries(endpoint: LiveEndpoint, query: str) -> None:
    body = endpoint.get("/query", params={"query": query}).error(400)
    assert "/queries/{name}" in body["error"]
    assert body["line"] == 1 and body["column"] >= 1


def test_a_syntax_error_names_line_and_column(endpoint: LiveEndpoint) -> None:
    body = endpoint.get("/query", params={"query": "SELECT *\nWHERE { ?s ?p }"}).error(400)
    assert (body["line"], body["column"]) == (2, 15)
    assert "^" in body["error"]


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/sparql-update"])
def test_a_post_of_another_type_is_415(endpoint: LiveEndpoint, content_type) -> None:
    headers = (("Content-Type", content_type),) if content_type else ()
    response = send(endpoint.base_url, "POST", "/query", headers, b"ASK {}")
    assert response.status == 415
    assert "application/sparql-query" in response.body.decode()


def test_a_non_utf8_body_is_refused(endpoint: LiveEndpoint) -> None:
    utf16 = send(
        endpoint.base_url, "POST", "/query",
        (("Content-Type", "application/sparql-query; charset=UTF-16"),), "ASK {}".encode("utf-16"),
    )
    assert utf16.status == 415
    latin1 = send(
        endpoint.base_url, "POST", "/query", (("Content-Type", "application/sparql-query"),),
        'ASK { ?s ?p "café" }'.encode("latin-1"),
    )
    assert latin1.status == 400
    assert "UTF-8" in latin1.body.decode()


def test_percent_encoded_bytes_that_are_not_utf8_are_400(endpoint: LiveEndpoint) -> None:
    assert send(endpoint.base_url, "GET", "/query?query=ASK%20%7B%7D%FF").status == 400


def test_put_on_query_is_405_with_allow(endpoint: LiveEndpoint) -> None:
    response = endpoint.put("/query", params={"query": "ASK {}"})
    assert response.error(405)
    assert set(response.headers["Allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


def test_a_query_past_its_timeout_is_stopped_with_503(endpoint_factory) -> None:
    slow = endpoint_factory(query_timeout=0.5)
    triples = "".join(f"<{EX}s{i}> <{EX}p> {i} .\n" for i in range(200)).encode()
    assert slow.put_graph(None, triples, "text/turtle").status == 201
    # 200^4 = 1.6e9 combinations: minutes of work without the timeout.
    query = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    started = time.monotonic()
    response = slow.get("/query", params={"query": query})
    elapsed = time.monotonic() - started
    assert response.status == 503, response.text
    assert "0.5 s" in response.json()["error"]
    assert elapsed < 5
    # The endpoint goes on answering.
    assert slow.get("/query", params={"query": "ASK { ?s ?p 7 }"}).json()["boolean"] is True


def test_lookups_keep_answering_while_a_runaway_is_stopped(endpoint_factory) -> None:
    server = endpoint_factory(query_timeout=2)
    triples = "".join(f"<{EX}s{i}> <{EX}p> {i} .\n" for i in range(200)).encode()
    assert server.put_graph(None, triples, "text/turtle").status == 201
    runaway = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    outcome = {}

    def run() -> None:
        started = time.monotonic()
        outcome["status"] = server.get("/query", params={"query": runaway}).status
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    lookups = []
    while thread.is_alive():
        started = time.monotonic()
        response = server.get("/query", params={"query": f"SELECT ?o WHERE {{ <{EX}s7> ?p ?o }}"})
        lookups.append(time.monotonic() - started)
        assert response.json()["results"]["bindings"] == [{"o": {"type": "literal", "value": "7",
                                                                 "datatype": XSD_INTEGER}}]
        time.sleep(0.02)
    thread.join()
    assert outcome["status"] == 503 and 2 <= outcome["seconds"] < 3
    assert len(lookups) > 20
    assert max(lookups) < 0.5  # nothing waited behind the runaway's 2 s
