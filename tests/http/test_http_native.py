"""The native SPARQL Protocol routes of ``http.asgi.EndpointApp`` against the Flask routes they
stand in for.

Two apps over two stores with the same content take the same requests, one through the ASGI app the
server runs (``asgi_client``), one straight to Flask's WSGI app: every answer (status, body,
Content-Type, Vary, WWW-Authenticate) and the stores afterwards must be the same, whatever the
request, well-formed or not.
"""

from __future__ import annotations

import asgi_client
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug.test import EnvironBuilder

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.http.app import create_app
from cqels_endpoint.http.asgi import application
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.oxigraph.requests import open_store

EX = "http://example.org/"
TOKEN = "s3cret"
DATA = f"INSERT DATA {{ <{EX}a> <{EX}p> 1, 2 ; <{EX}q> <{EX}b> . GRAPH <{EX}g> {{ <{EX}b> <{EX}p> 3 }} }}"

QUERIES = [
    f"SELECT ?p ?o WHERE {{ <{EX}a> ?p ?o }}",
    "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }",
    "ASK { ?s ?p 3 }",
    f"CONSTRUCT WHERE {{ ?s <{EX}p> ?o }}",
    f"DESCRIBE <{EX}a>",
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    "SELECT ?s WHERE { ?s <rel> ?o }",  # a relative IRI, resolved against the request URL
    "SELECT ?s WHERE { ?s ?p ?o ",  # a syntax error
    "SELECT ?s WHERE { STREAM <http://s> [RANGE 1s] { ?s ?p ?o } }",  # continuous: refused here
    "SELECT ?s WHERE { SERVICE <http://remote.example/sparql> { ?s ?p ?o } }",  # remote: refused
    "SELECT (MEDIAN(?o) AS ?m) WHERE { ?s ?p ?o }",  # continuous-only aggregate
    f"SELECT ?s WHERE {{ ?s ?p ?o FILTER(<{EX}f>(?o)) }}",  # unknown function
]
UPDATES = [
    f"INSERT DATA {{ <{EX}c> <{EX}p> 4 }}",
    f"DELETE DATA {{ <{EX}a> <{EX}p> 1 }}",
    f"INSERT DATA {{ GRAPH <{EX}h> {{ <{EX}x> <{EX}p> 5 }} }}",  # (blank nodes would differ between the stores)
    f"DELETE WHERE {{ ?s <{EX}q> ?o }}",
    f"CLEAR GRAPH <{EX}g>",
    "INSERT DATA { <a> <b> ?c }",  # a variable in INSERT DATA
    f"DROP GRAPH <{EX}missing>",
    "LOAD <http://remote.example/data.ttl>",
]
ACCEPTS = [None, "application/sparql-results+json", "application/sparql-results+xml", "text/csv",
           "text/turtle", "application/n-triples", "text/plain", "*/*", "text/csv;q=0.5, application/json"]
CONTENT_TYPES = ["application/sparql-update", "application/sparql-update; charset=utf-8",
                 "application/sparql-update; charset=latin-1", "text/plain"]
AUTHORIZATIONS = [None, f"Bearer {TOKEN}", "Bearer wrong", "Basic xyz"]


class Request(dict):
    """The keywords of a werkzeug ``EnvironBuilder``: each call gets a fresh environ (and body stream)."""

    def __init__(self, **keywords):
        super().__init__(keywords)

    def environ(self) -> dict:
        return EnvironBuilder(**self).get_environ()


@st.composite
def requests(draw):
    if draw(st.booleans()):
        text = draw(st.sampled_from(QUERIES))
        path = draw(st.sampled_from(["/query", "/sparql"]))
        extra = draw(st.sampled_from([{}, {}, {"format": "csv"}, {"default-graph-uri": EX + "g"}]))
        headers = {"Accept": accept} if (accept := draw(st.sampled_from(ACCEPTS))) is not None else {}
        if draw(st.booleans()):
            return Request(path=path, method="GET", query_string={"query": text, **extra}, headers=headers)
        content_type = draw(st.sampled_from(["application/sparql-query", "application/sparql-query; charset=UTF-8",
                                             "application/x-www-form-urlencoded"]))
        body = text if content_type != "application/x-www-form-urlencoded" else f"query={text}"
        return Request(path=path, method="POST", data=body.encode(), content_type=content_type,
                              query_string=extra, headers=headers)
    text = draw(st.sampled_from(UPDATES))
    headers = {"Authorization": auth} if (auth := draw(st.sampled_from(AUTHORIZATIONS))) is not None else {}
    body = text.encode() if draw(st.integers(0, 9)) else b"INSERT DATA { <http://x/a> <http://x/b> '\xff' }"
    return Request(path="/update", method=draw(st.sampled_from(["POST", "POST", "GET"])), data=body,
                          content_type=draw(st.sampled_from(CONTENT_TYPES)), headers=headers,
                          query_string=draw(st.sampled_from([{}, {}, {"using-graph-uri": EX + "g"}])))


def _call(wsgi, request: Request):
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured["status"] = status
        captured["headers"] = {name.lower(): value for name, value in headers}  # ASGI's are lower-case

    body = b"".join(wsgi(request.environ(), start_response))
    headers = captured["headers"]
    kept = ("content-type", "vary", "www-authenticate", "allow")
    # The code, not the reason phrase, whose spelling is the server's.
    return int(captured["status"].split()[0]), {name: headers.get(name) for name in kept}, body


def _contents(app) -> list[str]:
    return sorted(str(quad) for quad in endpoint(app).store)


@settings(max_examples=300, deadline=None)
@given(st.lists(requests(), min_size=1, max_size=8), st.booleans())
def test_the_native_routes_answer_as_flask_does(batch, with_token):
    config = ServerConfig(memory=True, cache_engine="local", auth_token=TOKEN if with_token else None)
    with open_store() as native_store, open_store() as flask_store:
        native_store.update(DATA)
        flask_store.update(DATA)
        native_app, flask_app = create_app(native_store, config), create_app(flask_store, config)
        native = asgi_client.wsgi(application(native_app))
        try:
            for request in batch:
                assert _call(native, request) == _call(flask_app.wsgi_app, request), request
            assert _contents(native_app) == _contents(flask_app)
        finally:
            endpoint(native_app).close()
            endpoint(flask_app).close()


def test_plain_requests_never_reach_flask(monkeypatch):
    with open_store() as store:
        store.update(DATA)
        app = create_app(store, ServerConfig(memory=True, cache_engine="local"))
        native = application(app)
        try:
            def flask_called(*_):
                raise AssertionError("went to Flask")

            monkeypatch.setattr(native, "_flask", flask_called)
            served = asgi_client.wsgi(native)
            lookup = Request(path="/query", query_string={"query": f"SELECT * WHERE {{ <{EX}a> ?p ?o }}"})
            assert _call(served, lookup)[0] == 200
            update = Request(path="/update", method="POST", data=f"INSERT DATA {{ <{EX}z> <{EX}p> 9 }}",
                                    content_type="application/sparql-update")
            assert _call(served, update)[0] == 204
            assert _call(served, Request(path="/health"))[0] == 200
        finally:
            endpoint(app).close()
