"""The bearer token: every write needs it when one is configured; reads never do."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from cqels_endpoint.cli import build_parser
from cqels_endpoint.config import ServerConfig

if TYPE_CHECKING:
    from conftest import LiveEndpoint

TOKEN = "s3cret-token"
EX = "http://example.org/"
ONE = f"<{EX}s> <{EX}p> 1 .".encode()
GOOD = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def guarded(endpoint_factory) -> LiveEndpoint:
    return endpoint_factory(auth_token=TOKEN)


@pytest.fixture
def endpoint(guarded: LiveEndpoint) -> LiveEndpoint:
    guarded.reset()  # LiveEndpoint.reset sends the configured token
    return guarded


WRITES = [
    ("POST", "/update", {}, f"INSERT DATA {{ <{EX}s> <{EX}p> 1 }}".encode(), "application/sparql-update"),
    ("PUT", "/store", {"graph": f"{EX}g"}, ONE, "text/turtle"),
    ("POST", "/store", {"graph": f"{EX}g"}, ONE, "text/turtle"),
    ("POST", "/store", {}, ONE, "text/turtle"),
    ("PUT", "/store/direct", {}, ONE, "text/turtle"),
    ("DELETE", "/store", {"default": ""}, None, None),
]


def send(endpoint: LiveEndpoint, write, headers: dict):
    method, path, params, body, content_type = write
    headers = {**headers, **({"Content-Type": content_type} if content_type else {})}
    return endpoint.request(method, path, params=params or None, body=body, headers=headers)


@pytest.mark.parametrize("write", WRITES, ids=lambda w: f"{w[0]} {w[1]}")
def test_a_write_without_a_token_is_401_with_a_challenge(endpoint: LiveEndpoint, write) -> None:
    response = send(endpoint, write, {})
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="cqels"'
    assert set(response.json()) == {"error", "line", "column"}
    assert len(endpoint.store) == 0


@pytest.mark.parametrize("write", WRITES, ids=lambda w: f"{w[0]} {w[1]}")
def test_a_write_with_a_wrong_token_is_401_invalid_token(endpoint: LiveEndpoint, write) -> None:
    response = send(endpoint, write, {"Authorization": "Bearer not-the-token"})
    assert response.status == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize("authorization", [f"Basic {TOKEN}", "Bearer", TOKEN, f"bearer  {TOKEN}x"])
def test_other_authorization_forms_are_refused(endpoint: LiveEndpoint, authorization: str) -> None:
    assert send(endpoint, WRITES[0], {"Authorization": authorization}).status == 401


@pytest.mark.parametrize("write", WRITES, ids=lambda w: f"{w[0]} {w[1]}")
def test_a_write_with_the_token_succeeds(endpoint: LiveEndpoint, write) -> None:
    if write[0] == "DELETE":
        send(endpoint, WRITES[1], GOOD)
    assert send(endpoint, write, GOOD).status in (201, 204)


def test_the_scheme_is_case_insensitive(endpoint: LiveEndpoint) -> None:
    assert send(endpoint, WRITES[0], {"Authorization": f"bearer {TOKEN}"}).status == 204


def test_the_token_is_checked_before_the_body(endpoint: LiveEndpoint) -> None:
    response = endpoint.post("/update", body="NOT SPARQL", headers={"Content-Type": "application/sparql-update"})
    assert response.status == 401


def test_reads_stay_open(endpoint: LiveEndpoint) -> None:
    send(endpoint, WRITES[1], GOOD)
    assert endpoint.get("/query", params={"query": "ASK { GRAPH ?g { ?s ?p 1 } }"}).json()["boolean"] is True
    assert endpoint.post(
        "/query", body="ASK {}", headers={"Content-Type": "application/sparql-query"}
    ).status == 200
    assert endpoint.get("/store", params={"graph": f"{EX}g"}).status == 200
    assert endpoint.head("/store", params={"graph": f"{EX}g"}).status == 200
    assert endpoint.get("/health").status == 200


def test_without_a_token_writes_are_open(live_endpoint: LiveEndpoint) -> None:
    live_endpoint.reset()
    assert live_endpoint.config.auth_token is None
    assert send(live_endpoint, WRITES[1], {}).status == 201


def test_the_server_binds_to_loopback_by_default(monkeypatch) -> None:
    monkeypatch.delenv("CQELS_HOST", raising=False)
    assert ServerConfig().host == "127.0.0.1"
    assert build_parser().parse_args(["serve"]).host == "127.0.0.1"


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        ServerConfig(auth_token="  ")
