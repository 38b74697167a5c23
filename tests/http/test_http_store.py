"""``/store`` (Graph Store Protocol) through real HTTP: each verb with indirect (``?graph=``,
``?default``) and direct (``/store/…``) identification, formats, status codes and errors."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

import pyoxigraph as ox
import pytest
from http_manifest import send
from paths import ROOT

if TYPE_CHECKING:
    from conftest import LiveEndpoint

EX = "http://example.org/"
G = f"{EX}graph"
TURTLE = "text/turtle"
ONE = f"<{EX}s> <{EX}p> 1 .".encode()
TWO = f"<{EX}s> <{EX}p> 2 .".encode()
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
ONE_NT = f'<{EX}s> <{EX}p> "1"^^<{XSD_INTEGER}> .'.encode()
TWO_NT = f'<{EX}s> <{EX}p> "2"^^<{XSD_INTEGER}> .'.encode()


def triples(response, rdf_format: ox.RdfFormat = ox.RdfFormat.TURTLE) -> set[tuple[str, str, str]]:
    assert response.status == 200, response.text
    return {(q.subject.value, q.predicate.value, q.object.value) for q in ox.parse(response.body, rdf_format)}



def get(endpoint: LiveEndpoint, graph: str | None, **kw):
    return endpoint.get("/store", params=endpoint.graph_params(graph), **kw)


# --------------------------------------------------------------------------- verbs


def test_put_creates_then_replaces(endpoint: LiveEndpoint) -> None:
    assert endpoint.put_graph(G, ONE, TURTLE).status == 201
    assert triples(get(endpoint, G)) == {(f"{EX}s", f"{EX}p", "1")}
    assert endpoint.put_graph(G, TWO, TURTLE).status == 204
    assert triples(get(endpoint, G)) == {(f"{EX}s", f"{EX}p", "2")}


def test_post_creates_then_merges(endpoint: LiveEndpoint) -> None:
    assert endpoint.post_graph(G, ONE, TURTLE).status == 201
    assert endpoint.post_graph(G, TWO, TURTLE).status == 204
    assert triples(get(endpoint, G)) == {(f"{EX}s", f"{EX}p", "1"), (f"{EX}s", f"{EX}p", "2")}


def test_get_answers_turtle_with_charset(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, ONE, TURTLE)
    assert get(endpoint, G).content_type == "text/turtle; charset=utf-8"


@pytest.mark.parametrize(
    "rdf_format",
    [ox.RdfFormat.N_TRIPLES, ox.RdfFormat.RDF_XML, ox.RdfFormat.JSON_LD, ox.RdfFormat.N_QUADS, ox.RdfFormat.TRIG],
)
def test_get_negotiates(endpoint: LiveEndpoint, rdf_format: ox.RdfFormat) -> None:
    endpoint.put_graph(G, ONE, TURTLE)
    response = get(endpoint, G, headers={"Accept": rdf_format.media_type})
    assert response.content_type.split(";")[0] == rdf_format.media_type
    assert triples(response, rdf_format) == {(f"{EX}s", f"{EX}p", "1")}


def test_get_with_format_parameter(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, ONE, TURTLE)
    response = endpoint.get("/store", params={"graph": G, "format": "nt"})
    assert response.content_type.startswith("application/n-triples")


def test_get_406_when_nothing_acceptable(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, ONE, TURTLE)
    get(endpoint, G, headers={"Accept": "application/sparql-results+json"}).error(406)


def test_head_has_the_headers_of_get_and_no_body(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, ONE, TURTLE)
    full = get(endpoint, G)
    head = endpoint.head("/store", params={"graph": G})
    assert head.status == 200
    assert head.body == b""
    assert head.headers["Content-Type"] == full.headers["Content-Type"]
    assert head.headers["Content-Length"] == str(len(full.body))


def test_missing_graph_is_404_for_get_head_and_delete(endpoint: LiveEndpoint) -> None:
    get(endpoint, f"{EX}missing").error(404)
    assert endpoint.head("/store", params={"graph": f"{EX}missing"}).status == 404
    endpoint.delete("/store", params={"graph": f"{EX}missing"}).error(404)


def test_delete(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, ONE, TURTLE)
    response = endpoint.delete("/store", params={"graph": G})
    assert response.status == 204
    assert get(endpoint, G).status == 404


def test_the_default_graph(endpoint: LiveEndpoint) -> None:
    assert triples(get(endpoint, None)) == set()  # always there, even empty
    assert endpoint.put_graph(None, ONE, TURTLE).status == 201  # empty before: content created
    assert endpoint.post_graph(None, TWO, TURTLE).status == 204
    assert len(triples(get(endpoint, None))) == 2
    assert endpoint.put_graph(None, ONE, TURTLE).status == 204
    assert endpoint.delete("/store", params={"default": ""}).status == 204
    assert triples(get(endpoint, None)) == set()


def test_put_of_an_empty_body_makes_an_empty_graph_that_exists(endpoint: LiveEndpoint) -> None:
    assert endpoint.put_graph(G, b"", TURTLE).status == 201
    assert triples(get(endpoint, G)) == set()
    assert endpoint.put_graph(G, b"", TURTLE).status == 204


@pytest.mark.parametrize(
    ("content_type", "data"),
    [
        ("application/n-triples", ONE_NT),
        ("application/n-triples; charset=utf-8", ONE_NT),
        ("text/plain", ONE_NT),
        ("application/n-quads", ONE_NT),
        ("application/trig", f"{{ {ONE.decode()} }}".encode()),
        (
            "application/rdf+xml",
            f'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="{EX}s">'
            f'<p xmlns="{EX}" rdf:datatype="{XSD_INTEGER}">1</p></rdf:Description></rdf:RDF>'.encode(),
        ),
        ("application/ld+json", f'{{"@id": "{EX}s", "{EX}p": 1}}'.encode()),
    ],
)
def test_put_reads_each_rdf_syntax(endpoint: LiveEndpoint, content_type: str, data: bytes) -> None:
    assert endpoint.put_graph(G, data, content_type).status == 201
    assert triples(get(endpoint, G)) == {(f"{EX}s", f"{EX}p", "1")}


def test_post_multipart_merges_every_part_in_one_write(endpoint: LiveEndpoint) -> None:
    boundary = "b0undary"
    parts = [("one.ttl", TURTLE, ONE), ("two.nt", "application/n-triples", TWO_NT)]
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n".encode() + data + b"\r\n"
        for name, content_type, data in parts
    ) + f"--{boundary}--\r\n".encode()
    events = []
    unsubscribe = endpoint.store.subscribe(events.append)
    try:
        response = endpoint.post(
            "/store", params={"graph": G}, body=body,
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
    finally:
        unsubscribe()
    assert response.status == 201, response.text
    assert len(triples(get(endpoint, G))) == 2
    assert [(c.graph, c.added) for e in events for c in e.changes] == [(G, 2)]


def test_post_to_the_store_creates_a_graph_and_says_where(endpoint: LiveEndpoint) -> None:
    response = endpoint.post("/store", body=ONE, headers={"Content-Type": TURTLE})
    assert response.status == 201
    location = response.headers["Location"]
    assert location.startswith(f"{endpoint.base_url}/store/")
    assert triples(endpoint.get("/store", params={"graph": location})) == {(f"{EX}s", f"{EX}p", "1")}
    direct = endpoint.get(urllib.parse.urlsplit(location).path)  # direct identification of the same graph
    assert triples(direct) == {(f"{EX}s", f"{EX}p", "1")}


@pytest.mark.parametrize("content_type", ["application/trig", "application/n-quads"])
def test_post_of_a_dataset_to_the_store_adds_its_quads_under_their_graph_names(endpoint: LiveEndpoint, content_type) -> None:
    # The demo's floor plan, a TriG file, must load in one curl call (README session).
    path = ROOT / "examples" / "data" / "floorplan.trig"
    data = path.read_bytes()
    if content_type == "application/n-quads":
        data = ox.serialize(ox.parse(data, ox.RdfFormat.TRIG), format=ox.RdfFormat.N_QUADS)
    response = endpoint.post("/store", body=data, headers={"Content-Type": content_type})
    assert response.status == 204, response.text
    expected = ox.Store()
    expected.load(path=str(path), format=ox.RdfFormat.TRIG)
    assert set(endpoint.store) == set(expected)
    bad = b"<http://example.org/g> { <http://example.org/s> <http://example.org/p> . }\n"
    before = len(endpoint.store)
    endpoint.post("/store", body=bad, headers={"Content-Type": "application/trig"}).error(400)
    assert len(endpoint.store) == before


def test_direct_identification_names_the_graph_by_its_url(endpoint: LiveEndpoint) -> None:
    assert endpoint.put("/store/people/1.ttl", body=ONE, headers={"Content-Type": TURTLE}).status == 201
    assert triples(endpoint.get("/store", params={"graph": f"{endpoint.base_url}/store/people/1.ttl"})) == {
        (f"{EX}s", f"{EX}p", "1")
    }
    assert endpoint.delete("/store/people/1.ttl").status == 204
    assert endpoint.get("/store/people/1.ttl").status == 404


def test_a_relative_graph_iri_resolves_against_the_request_url(endpoint: LiveEndpoint) -> None:
    assert endpoint.put("/store", params={"graph": "mine"}, body=ONE, headers={"Content-Type": TURTLE}).status == 201
    assert get(endpoint, f"{endpoint.base_url}/mine").status == 200


def test_relative_iris_in_the_body_resolve_against_the_graph_iri(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, b"<s> <p> <o> .", TURTLE)
    assert triples(get(endpoint, G)) == {(f"{EX}s", f"{EX}p", f"{EX}o")}


def test_one_change_event_per_write(endpoint: LiveEndpoint) -> None:
    events = []
    unsubscribe = endpoint.store.subscribe(events.append)
    try:
        endpoint.put_graph(G, ONE, TURTLE)
        endpoint.put_graph(G, TWO, TURTLE)
        endpoint.delete("/store", params={"graph": G})
    finally:
        unsubscribe()
    assert [[(c.graph, c.added, c.removed) for c in e.changes] for e in events] == [
        [(G, 1, 0)],
        [(G, 1, 1)],
        [(G, 0, 1)],
    ]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "query",
    [
        f"graph={urllib.parse.quote(G)}&default",
        f"graph={urllib.parse.quote(G)}&graph={urllib.parse.quote(EX)}other",
        "graph=",
        "graph=not%20an%20iri",
        "default=yes",
    ],
)
def test_a_bad_graph_selection_is_400(endpoint: LiveEndpoint, query: str) -> None:
    response = send(endpoint.base_url, "GET", f"/store?{query}")
    assert response.status == 400, response.body


def test_the_bare_store_is_the_whole_dataset_with_its_version(endpoint: LiveEndpoint) -> None:
    endpoint.put("/store", params={"graph": G}, body=ONE, headers={"Content-Type": TURTLE})
    endpoint.put("/store", params={"default": ""}, body=ONE, headers={"Content-Type": TURTLE})
    response = endpoint.get("/store", headers={"Accept": "application/n-quads"})
    assert response.status == 200 and response.content_type.startswith("application/n-quads")
    quads = set(ox.parse(response.body, format=ox.RdfFormat.N_QUADS))
    triple = ox.Triple(ox.NamedNode(f"{EX}s"), ox.NamedNode(f"{EX}p"), ox.Literal("1", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")))
    assert quads == {ox.Quad(*triple, ox.NamedNode(G)), ox.Quad(*triple, ox.DefaultGraph())}
    assert response.headers["ETag"] == f'"v{endpoint.get("/health").json()["version"]}"'
    # Only the syntaxes that keep graph names.
    assert endpoint.get("/store", headers={"Accept": "text/turtle"}).status == 406


def test_put_without_a_graph_is_400(endpoint: LiveEndpoint) -> None:
    endpoint.put("/store", body=ONE, headers={"Content-Type": TURTLE}).error(400)


def test_direct_identification_takes_no_graph_parameter(endpoint: LiveEndpoint) -> None:
    endpoint.get("/store/x", params={"graph": G}).error(400)


@pytest.mark.parametrize("content_type", ["application/pdf", "text/html", None])
def test_an_unsupported_content_type_is_415(endpoint: LiveEndpoint, content_type) -> None:
    headers = (("Content-Type", content_type),) if content_type else ()
    response = send(endpoint.base_url, "PUT", f"/store?graph={urllib.parse.quote(G)}", headers, ONE)
    assert response.status == 415, response.body
    assert b"text/turtle" in response.body


def test_a_charset_other_than_utf8_is_415(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, ONE, "text/turtle; charset=iso-8859-1").error(415)


def test_malformed_rdf_is_400_naming_the_line_and_writes_nothing(endpoint: LiveEndpoint) -> None:
    endpoint.put_graph(G, ONE, TURTLE)
    bad = f"<{EX}s> <{EX}p> 3 .\n<{EX}s> <{EX}p> .\n".encode()
    body = endpoint.put_graph(G, bad, TURTLE).error(400)
    assert body["line"] == 2
    assert "line 2" in body["error"]
    assert triples(get(endpoint, G)) == {(f"{EX}s", f"{EX}p", "1")}
    endpoint.post_graph(G, bad, TURTLE).error(400)
    assert triples(get(endpoint, G)) == {(f"{EX}s", f"{EX}p", "1")}


def test_a_malformed_multipart_part_is_400_and_writes_nothing(endpoint: LiveEndpoint) -> None:
    boundary = "xx"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="a"; filename="a.ttl"\r\n'
        f"Content-Type: text/turtle\r\n\r\n{ONE.decode()}\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="b"; filename="b.ttl"\r\n'
        f"Content-Type: text/turtle\r\n\r\n<a> <b> .\r\n--{boundary}--\r\n"
    ).encode()
    response = endpoint.post(
        "/store", params={"graph": G}, body=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}
    )
    assert "part 'b'" in response.error(400)["error"]
    assert get(endpoint, G).status == 404


def test_a_multipart_part_in_a_charset_other_than_utf8_is_415_and_writes_nothing(endpoint: LiveEndpoint) -> None:
    boundary = "xx"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="a"; filename="a.ttl"\r\n'
        f"Content-Type: text/turtle; charset=iso-8859-1\r\n\r\n{ONE.decode()}\r\n--{boundary}--\r\n"
    ).encode()
    response = endpoint.post(
        "/store", params={"graph": G}, body=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}
    )
    assert "iso-8859-1" in response.error(415)["error"]
    assert get(endpoint, G).status == 404


def test_patch_is_405(endpoint: LiveEndpoint) -> None:
    response = endpoint.request("PATCH", "/store", params={"graph": G})
    response.error(405)
    assert {"GET", "HEAD", "PUT", "POST", "DELETE"} <= set(response.headers["Allow"].replace(" ", "").split(","))
