"""Security settings (issue 16, deliverable 8): the token is compared in constant time, read-only
mode refuses every write, remote LOAD/SERVICE only when enabled, CORS off unless configured, request
bodies over the limit are 413 everywhere, and no graph, stream or query name reaches a file path."""

from __future__ import annotations

import hmac
import json
import urllib.parse
from pathlib import Path

import pytest
from a2wsgi import WSGIMiddleware
from flask import Flask

from cqels_endpoint.http import auth
from cqels_endpoint.http.queries import registry
from cqels_endpoint.http.server import serve_in_thread
from tests.conftest import LiveEndpoint
from tests.http.test_persistence import running

EX = "http://example.org/"
TRIPLE = f'<{EX}s> <{EX}p> "1" .'
TURTLE = {"Content-Type": "text/turtle"}
JSON = {"Content-Type": "application/json"}
QUERY = "SELECT ?s WHERE { STREAM <urn:s> [RANGE 10s] { ?s ?p ?o } }"


# ------------------------------------------------------------------ the token, in constant time


def test_the_token_is_compared_in_constant_time(endpoint_factory, monkeypatch) -> None:
    compared = []
    constant_time = hmac.compare_digest

    def spy(given, expected):
        compared.append((given, expected))
        return constant_time(given, expected)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    live = endpoint_factory(auth_token="s3cret")
    update = "INSERT DATA { <http://example.org/s> <http://example.org/p> 1 }"
    assert live.update(update, headers={"Authorization": "Bearer wrong"}).status == 401
    assert live.update(update, headers={"Authorization": "Bearer s3cret"}).status == 204  # the fast path
    stream = live.post("/streams/s", body=TRIPLE, headers={"Content-Type": "application/n-triples", "Authorization": "Bearer s3cret"})
    assert stream.status in (200, 202), stream.text
    # The fast path and the routes both compare (the wrong token twice: the route answers it).
    assert set(compared) == {(b"wrong", b"s3cret"), (b"s3cret", b"s3cret")}
    assert compared.count((b"s3cret", b"s3cret")) == 2


# ------------------------------------------------------------------ read-only mode


@pytest.fixture(scope="module")
def read_only(endpoint_factory) -> LiveEndpoint:
    live = endpoint_factory(read_only=True, auth_token="tok")
    # What there is to read was put there before: the engine and store directly, not over HTTP.
    live.store.update(f"INSERT DATA {{ GRAPH <{EX}g> {{ {TRIPLE} }} }}")
    registry(live.app).put("q", QUERY, None, "incremental")
    return live


WRITES = [
    ("POST", "/update", f"INSERT DATA {{ {TRIPLE} }}", {"Content-Type": "application/sparql-update"}),
    ("POST", "/update", "update=DROP+ALL", {"Content-Type": "application/x-www-form-urlencoded"}),
    ("PUT", f"/store?graph={EX}g", TRIPLE, TURTLE),
    ("POST", f"/store?graph={EX}g", TRIPLE, TURTLE),
    ("POST", "/store", TRIPLE, TURTLE),
    ("DELETE", f"/store?graph={EX}g", None, {}),
    ("PUT", "/store/x", TRIPLE, TURTLE),
    ("POST", "/streams/s", TRIPLE, {"Content-Type": "application/n-triples"}),
    ("DELETE", "/streams/s/clock", None, {}),
    ("PUT", "/queries/new", QUERY, {"Content-Type": "application/sparql-query"}),
    ("DELETE", "/queries/q", None, {}),
    ("POST", "/queries/q/instances", json.dumps({"bindings": {}}), JSON),
    ("DELETE", "/queries/q/1", None, {}),
]


@pytest.mark.parametrize(("method", "path", "body", "headers"), WRITES)
@pytest.mark.parametrize("token", [None, "tok"])
def test_read_only_refuses_every_write_with_403(read_only: LiveEndpoint, method, path, body, headers, token) -> None:
    headers = {**headers, **({"Authorization": f"Bearer {token}"} if token else {})}
    error = read_only.request(method, path, body=body, headers=headers).error(403)["error"]
    assert "read-only" in error and "--read-only" in error and path.split("?")[0] in error
    assert len(read_only.store) == 1  # nothing written
    assert [q["name"] for q in read_only.get("/queries").json()["queries"]] == ["q"]


def test_read_only_still_reads(read_only: LiveEndpoint) -> None:
    assert read_only.query(f"ASK {{ GRAPH <{EX}g> {{ {TRIPLE} }} }}").json()["boolean"] is True
    post = read_only.post("/query", body="ASK {}", headers={"Content-Type": "application/sparql-query", "Accept": "application/json"})
    assert post.status == 200
    assert read_only.get("/store", params={"graph": f"{EX}g"}, headers={"Accept": "application/n-triples"}).status == 200
    assert read_only.get("/streams").status == 200
    assert read_only.get("/queries/q").status == 200
    assert read_only.head("/queries/q/results").status == 200
    assert read_only.get("/health").status == 200


# ------------------------------------------------------------------ remote LOAD and SERVICE


@pytest.fixture(scope="module")
def remote(live_endpoint: LiveEndpoint):
    """A loopback 'remote' site: a Turtle document, and the shared endpoint as a SPARQL service."""
    site = Flask("remote")
    site.route("/data.ttl")(lambda: (f"<{EX}remote> <{EX}p> 7 .", 200, {"Content-Type": "text/turtle"}))
    base_url, stop = serve_in_thread(WSGIMiddleware(site))
    live_endpoint.reset()
    live_endpoint.store.update(f"INSERT DATA {{ <{EX}far> <{EX}p> 8 }}")
    yield f"{base_url}/data.ttl", f"{live_endpoint.base_url}/query"
    stop()
    live_endpoint.reset()


def test_remote_load_and_service_are_refused_unless_enabled(endpoint_factory, remote) -> None:
    document, service = remote
    live = endpoint_factory()
    for update in (f"LOAD <{document}>", f"INSERT {{ ?s ?p ?o }} WHERE {{ SERVICE <{service}> {{ ?s ?p ?o }} }}"):
        assert "--allow-remote" in live.update(update).error(403)["error"], update
    select = f"SELECT * WHERE {{ SERVICE <{service}> {{ ?s ?p ?o }} }}"
    assert "--allow-remote" in live.query(select).error(403)["error"]
    assert len(live.store) == 0


def test_remote_load_and_service_work_when_enabled(endpoint_factory, remote) -> None:
    document, service = remote
    live = endpoint_factory(allow_remote=True)
    assert live.update(f"LOAD <{document}>").status == 204
    assert live.query(f"ASK {{ <{EX}remote> <{EX}p> 7 }}").json()["boolean"] is True
    select = f"SELECT ?s WHERE {{ SERVICE <{service}> {{ ?s <{EX}p> 8 }} }}"
    assert [b["s"]["value"] for b in live.query(select).json()["results"]["bindings"]] == [f"{EX}far"]
    copy = f"INSERT {{ GRAPH <{EX}copy> {{ ?s <{EX}p> 8 }} }} WHERE {{ SERVICE <{service}> {{ ?s <{EX}p> 8 }} }}"
    assert live.update(copy).status == 204
    assert live.query(f"ASK {{ GRAPH <{EX}copy> {{ <{EX}far> <{EX}p> 8 }} }}").json()["boolean"] is True


def test_load_of_a_file_is_refused_even_with_remote_access(endpoint_factory, tmp_path: Path) -> None:
    secret = tmp_path / "secret.ttl"
    secret.write_text(f"<{EX}secret> <{EX}p> 1 .")
    live = endpoint_factory(allow_remote=True)
    assert "file system" in live.update(f"LOAD <{secret.as_uri()}>").error(403)["error"]
    assert len(live.store) == 0


# ------------------------------------------------------------------ CORS


def test_cors_is_off_by_default(live_endpoint: LiveEndpoint) -> None:
    origin = {"Origin": "https://evil.example"}
    for response in (
        live_endpoint.get("/health", headers=origin),
        live_endpoint.query("ASK {}", headers=origin),  # the fast path
        live_endpoint.request("OPTIONS", "/update", headers={**origin, "Access-Control-Request-Method": "POST"}),
    ):
        assert not [name for name in response.headers if name.lower().startswith("access-control-")]


@pytest.fixture(scope="module")
def cors(endpoint_factory) -> LiveEndpoint:
    return endpoint_factory(cors_origins=("https://app.example", "http://localhost:3000"), auth_token="tok")


def test_cors_answers_an_allowed_origin(cors: LiveEndpoint) -> None:
    for origin in ("https://app.example", "http://localhost:3000"):
        for response in (cors.get("/health", headers={"Origin": origin}), cors.query("ASK {}", headers={"Origin": origin})):
            assert response.status == 200
            assert response.headers["Access-Control-Allow-Origin"] == origin
            assert "Origin" in response.headers.get_all("Vary")
    denied = cors.update("DROP ALL", headers={"Origin": "https://app.example"})
    assert denied.status == 401  # CORS lets a page send the token; it does not replace it
    assert denied.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "WWW-Authenticate" in denied.headers["Access-Control-Expose-Headers"]


def test_cors_preflight(cors: LiveEndpoint) -> None:
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "PUT",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    response = cors.request("OPTIONS", "/queries/q", headers=preflight)
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "PUT" in response.headers["Access-Control-Allow-Methods"]
    assert {"authorization", "content-type"} <= {h.strip().lower() for h in response.headers["Access-Control-Allow-Headers"].split(",")}
    refused = cors.request("OPTIONS", "/queries/q", headers={**preflight, "Origin": "https://evil.example"})
    assert "https://evil.example" in refused.error(403)["error"]
    assert "Access-Control-Allow-Origin" not in refused.headers


def test_cors_ignores_other_origins(cors: LiveEndpoint) -> None:
    response = cors.get("/health", headers={"Origin": "https://evil.example"})
    assert response.status == 200
    assert "Access-Control-Allow-Origin" not in response.headers
    assert "Vary" in response.headers


def test_cors_any_origin(endpoint_factory) -> None:
    live = endpoint_factory(cors_origins=("*",))
    assert live.get("/health", headers={"Origin": "https://anyone.example"}).headers["Access-Control-Allow-Origin"] == "*"


# ------------------------------------------------------------------ 413 everywhere a body is read


def test_every_body_over_the_limit_is_a_json_413(endpoint_factory) -> None:
    small = endpoint_factory(max_body_mb=0.01)  # 10 KiB
    body = b"#" * 20_000
    for method, path, content_type in (
        ("POST", "/update", "application/sparql-update"),
        ("POST", "/query", "application/sparql-query"),
        ("POST", "/store?default", "text/turtle"),
        ("PUT", f"/store?graph={EX}g", "text/turtle"),
        ("POST", "/streams/s", "application/n-triples"),
        ("POST", "/streams/s", "application/x-ndjson"),
        ("PUT", "/queries/q", "application/sparql-query"),
    ):
        response = small.request(method, path, body=body, headers={"Content-Type": content_type})
        assert "--max-body-mb" in response.error(413)["error"], (method, path)
    assert len(small.store) == 0


# ------------------------------------------------------------------ names never reach a path


NAMES = [
    "../../etc/passwd",
    "/etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e/%2e%2e/escaped",
    "nul\x00byte",
    "file:///etc/passwd",
    "..\\..\\windows",
]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_graph_stream_and_query_names_never_reach_a_file_path(tmp_path: Path) -> None:
    data_dir = tmp_path / "data" / "dir"
    outside = tmp_path / "outside.ttl"
    outside.write_text(f"<{EX}outside> <{EX}p> 1 .")
    with running(data_dir) as live:
        files_before = set(_files(data_dir))
        for name in NAMES:
            quoted = urllib.parse.quote(name, safe="")
            statuses = [
                live.put_graph(name, TRIPLE.encode(), "text/turtle").status,
                live.request("PUT", "/store/" + quoted, body=TRIPLE, headers=TURTLE).status,
                live.post(f"/streams/{quoted}", body=TRIPLE, headers={"Content-Type": "application/n-triples"}).status,
                live.put(f"/queries/{quoted}", body=QUERY, headers={"Content-Type": "application/sparql-query"}).status,
                live.get(f"/queries/{quoted}/results", headers={"Accept": "application/x-ndjson"}).status,
                live.update(f"LOAD <{outside.as_uri()}> INTO GRAPH <{EX}{quoted}>").status,
            ]
            assert 500 not in statuses, (name, statuses)
        # Whatever was accepted lives in the store and queries.json, under names; no file was
        # created for a name, inside the data directory or out of it, and no file was read.
        created = set(_files(data_dir)) - files_before
        assert all("passwd" not in path and "escaped" not in path and "windows" not in path for path in created), created
        assert live.query(f"ASK {{ GRAPH ?g {{ <{EX}outside> ?p ?o }} }}").json()["boolean"] is False
    assert set(_files(tmp_path)) - {f"data/dir/{path}" for path in _files(data_dir)} == {"outside.ttl"}


# ------------------------------------------------------------------ the flags


def test_security_flags_and_their_environment_twins(monkeypatch) -> None:
    from cqels_endpoint.cli import build_parser
    from cqels_endpoint.cli.server import _cors_origins
    from cqels_endpoint.config import ServerConfig

    args = build_parser().parse_args(
        ["serve", "--read-only", "--cors-origin", "https://a.example,https://b.example/", "--cors-origin", "http://c:8080"]
    )
    origins = _cors_origins(args.cors_origin)
    assert args.read_only is True
    assert ServerConfig(cors_origins=origins).cors_origins == ("https://a.example", "https://b.example", "http://c:8080")
    monkeypatch.setenv("CQELS_READ_ONLY", "yes")
    monkeypatch.setenv("CQELS_CORS_ORIGIN", "https://d.example, *")
    args = build_parser().parse_args(["serve"])
    assert (args.read_only, _cors_origins(args.cors_origin)) == (True, ("https://d.example", "*"))
    for bad in ("https://a.example/app", "a.example", "https://", ""):
        with pytest.raises(ValueError, match="is not an origin"):
            ServerConfig(cors_origins=(bad,))
