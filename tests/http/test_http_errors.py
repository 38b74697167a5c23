"""Errors are JSON with the right status, the body limit holds, and no input gets a 500.

The fuzz tests throw random query texts, token soups, bodies, Content-Types, Accept headers, graph
IRIs and query strings at every path (werkzeug's test client over the ASGI app the server runs,
``asgi_client``: a socket adds nothing to what is tested) and require an answer below 500 every time. A real bug still gets a JSON 500 and a logged
traceback, which the last test checks.
"""

from __future__ import annotations

import http.client
import logging
from urllib.parse import urlsplit

import asgi_client
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.http.app import create_app
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.oxigraph.requests import open_store
from static_store import StaticStore

EX = "http://example.org/"

# --------------------------------------------------------------------------- plain errors


def test_unknown_path_is_a_json_404(live_endpoint) -> None:
    response = live_endpoint.get("/nowhere")
    assert response.status == 404
    assert response.content_type.startswith("application/json")
    assert set(response.json()) == {"error", "line", "column"}


def test_health(live_endpoint) -> None:
    live_endpoint.reset()
    live_endpoint.update(f"INSERT DATA {{ <{EX}s> <{EX}p> 1, 2 }}")
    body = live_endpoint.get("/health").json()
    assert body == {"status": "ok", "version": live_endpoint.store.version}
    assert "cqels_store_quads 2\n" in live_endpoint.get("/metrics").text


@pytest.fixture(scope="module")
def small(endpoint_factory):
    return endpoint_factory(max_body_mb=0.01)  # 10 KiB


def test_a_body_over_the_limit_is_a_json_413(small) -> None:
    body = b"#" * 20_000
    for path, content_type in (("/update", "application/sparql-update"), ("/store?default", "text/turtle")):
        response = small.post(path, body=body, headers={"Content-Type": content_type})
        assert response.status == 413, path
        assert "--max-body-mb" in response.json()["error"]


def test_a_chunked_body_over_the_limit_is_a_json_413(small) -> None:
    where = urlsplit(small.base_url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        chunks = (b"#" * 4096 for _ in range(10))
        connection.request(
            "POST", "/update", body=chunks, headers={"Content-Type": "application/sparql-update"}, encode_chunked=True
        )
        response = connection.getresponse()
        assert response.status == 413
        assert b"--max-body-mb" in response.read()
    finally:
        connection.close()


def test_a_body_under_the_limit_passes(small) -> None:
    small.reset()
    assert small.update("INSERT DATA { <http://example.org/s> <http://example.org/p> 1 }").status == 204


def test_a_real_bug_is_a_logged_json_500(caplog) -> None:
    with open_store() as store:
        app = create_app(store, ServerConfig(memory=True))

        def broken():
            raise RuntimeError("a bug")

        app.add_url_rule("/broken", "broken", broken)
        with caplog.at_level(logging.ERROR, logger="cqels_endpoint.http"):
            response = asgi_client.client(app).get("/broken")
    assert response.status_code == 500
    assert response.get_json() == {"error": "internal server error; the server log has the details", "line": None,
                                   "column": None}
    assert "RuntimeError: a bug" in caplog.text


# --------------------------------------------------------------------------- fuzz: never a 500


@pytest.fixture(scope="module")
def client():
    with open_store() as store:
        store.update(f"INSERT DATA {{ <{EX}s> <{EX}p> 1 . GRAPH <{EX}g> {{ <{EX}s> <{EX}p> 'x' }} }}")
        yield asgi_client.client(create_app(store, ServerConfig(memory=True, query_timeout=5)))


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = [
    "SELECT", "ASK", "CONSTRUCT", "DESCRIBE", "WHERE", "FROM", "NAMED", "{", "}", "(", ")", "[", "]", ".", ";", ",",
    "*", "?x", "?y", "$z", "_:b", "[]", "a", "<http://example.org/s>", "<rel>", "<http://a b>", "<>", "ex:p",
    "PREFIX ex: <http://example.org/>", "BASE <http://example.org/>", '"lit"', "'x'@en", '"1"^^xsd:integer', "1",
    "-2.5e3", "true", "FILTER", "OPTIONAL", "UNION", "MINUS", "GRAPH", "SERVICE", "SILENT", "BIND", "AS", "VALUES",
    "UNDEF", "GROUP BY", "HAVING", "ORDER BY", "DESC", "LIMIT", "OFFSET", "DISTINCT", "COUNT(*)", "SUM(?x)",
    "REGEX(?x, \"[\")", "STRDT(?x, ?y)", "xsd:integer(?x)", "EXISTS", "NOT", "IN", "&&", "||", "=", "!=", "+", "/",
    "^", "|", "?", "STREAM", "[RANGE 5s]", "[NOW]", "WINDOW", "REGISTER", "ISTREAM", "INSERT", "DELETE", "DATA",
    "CLEAR", "DROP", "ALL", "DEFAULT", "CREATE", "LOAD", "<http://example.org/remote.ttl>", "<file:///etc/passwd>",
    "INTO", "ADD", "MOVE", "COPY", "TO", "WITH", "USING", "#", "\n", "\u00e9", "\\u0000", "\x00",
]
token_soup = st.lists(st.sampled_from(TOKENS), max_size=25).map(" ".join)
any_text = st.text(max_size=200)
query_text = st.one_of(token_soup, any_text)
header_value = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
                       max_size=80)
content_types = st.one_of(
    st.sampled_from(
        [
            "application/sparql-query", "application/sparql-update", "application/x-www-form-urlencoded",
            "text/turtle", "application/n-triples", "application/rdf+xml", "application/ld+json",
            "application/n-quads", "application/trig", "text/n3", "multipart/form-data; boundary=x",
            "multipart/form-data", "text/plain; charset=utf-16", "application/json", "",
        ]
    ),
    header_value,
)
bodies = st.one_of(st.binary(max_size=300), query_text.map(str.encode))


def assert_no_server_error(response, method: str = "GET") -> None:
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400 and method != "HEAD":
        assert set(response.get_json()) == {"error", "line", "column"}


@FUZZ
@given(query=query_text, accept=header_value)
def test_fuzz_query_get(client, query: str, accept: str) -> None:
    assert_no_server_error(client.get("/query", query_string={"query": query}, headers={"Accept": accept}))


@FUZZ
@given(body=bodies, content_type=content_types)
def test_fuzz_query_post(client, body: bytes, content_type: str) -> None:
    assert_no_server_error(client.post("/query", data=body, headers={"Content-Type": content_type}))


@FUZZ
@given(update=query_text, using=st.lists(header_value, max_size=2))
def test_fuzz_update(client, update: str, using: list[str]) -> None:
    params = [("using-graph-uri", u) for u in using]
    response = client.post(
        "/update", query_string=params, data=update.encode(), headers={"Content-Type": "application/sparql-update"}
    )
    assert_no_server_error(response)


@FUZZ
@given(
    method=st.sampled_from(["GET", "HEAD", "PUT", "POST", "DELETE"]),
    graph=st.one_of(st.none(), header_value, st.sampled_from([f"{EX}g", f"{EX}new", "relative", ""])),
    body=bodies,
    content_type=content_types,
    accept=header_value,
)
def test_fuzz_graph_store(client, method: str, graph: str | None, body: bytes, content_type: str, accept: str) -> None:
    params = {"default": ""} if graph is None else {"graph": graph}
    response = client.open(
        "/store", method=method, query_string=params, data=body,
        headers={"Content-Type": content_type, "Accept": accept},
    )
    assert_no_server_error(response, method)


@FUZZ
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
    path=st.sampled_from(["/query", "/sparql", "/update", "/store", "/store/a/b", "/health", "/", "/nope"]),
    query_string=st.binary(max_size=120),
)
def test_fuzz_raw_query_strings(client, method: str, path: str, query_string: bytes) -> None:
    # WSGI hands the raw bytes over as a latin-1 string.
    response = client.open(path, method=method, environ_overrides={"QUERY_STRING": query_string.decode("latin-1")})
    assert_no_server_error(response, method)


def test_an_update_a_store_without_request_engine_cannot_run_is_a_501() -> None:
    # create_app over a bare static_store.StaticStore (not cqels_endpoint.open_store): the store
    # runs INSERT DATA and DELETE DATA itself, and refuses the rest as the server's limit.
    with StaticStore() as store:
        app = create_app(store, ServerConfig(memory=True, cache_engine="local"))
        try:
            client = asgi_client.client(app)
            insert = client.post("/update", data=f"INSERT DATA {{ <{EX}s> <{EX}p> 1 }}", content_type="application/sparql-update")
            assert insert.status_code == 204
            response = client.post("/update", data="DELETE WHERE { ?s ?p ?o }", content_type="application/sparql-update")
            assert response.status_code == 501
            assert "request engine" in response.get_json()["error"]
            assert len(store) == 1
        finally:
            endpoint(app).close()
