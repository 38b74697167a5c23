"""``/update`` through real HTTP: both ways to send an update, the ``using-*`` dataset, the errors,
remote access, and one change event per request."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

import pytest
from http_manifest import send

if TYPE_CHECKING:
    from conftest import LiveEndpoint

EX = "http://example.org/"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
DIRECT = {"Content-Type": "application/sparql-update"}


def ask(endpoint: LiveEndpoint, query: str) -> bool:
    response = endpoint.get("/query", params={"query": query})
    assert response.status == 200, response.text
    return response.json()["boolean"]



def test_direct_post(endpoint: LiveEndpoint) -> None:
    response = endpoint.post("/update", body=f"INSERT DATA {{ <{EX}s> <{EX}p> 1 }}", headers=DIRECT)
    assert response.status == 204
    assert response.body == b""
    assert ask(endpoint, f"ASK {{ <{EX}s> <{EX}p> 1 }}")


def test_form_post(endpoint: LiveEndpoint) -> None:
    body = urllib.parse.urlencode({"update": f"INSERT DATA {{ GRAPH <{EX}g> {{ <{EX}s> <{EX}p> 'x' }} }}"})
    assert endpoint.post("/update", body=body, headers=FORM).status == 204
    assert ask(endpoint, f"ASK {{ GRAPH <{EX}g> {{ <{EX}s> <{EX}p> 'x' }} }}")


def test_relative_iris_resolve_against_the_endpoint_url(endpoint: LiveEndpoint) -> None:
    assert endpoint.update(f"INSERT DATA {{ <{EX}s> <{EX}p> <thing> }}").status == 204
    response = endpoint.get("/query", params={"query": f"SELECT ?o WHERE {{ <{EX}s> <{EX}p> ?o }}"})
    assert response.json()["results"]["bindings"][0]["o"]["value"] == f"{endpoint.base_url}/thing"


def test_using_graph_uri_sets_the_where_dataset(endpoint: LiveEndpoint) -> None:
    endpoint.update(f"INSERT DATA {{ GRAPH <{EX}src> {{ <{EX}a> <{EX}p> 1 }} }}")
    update = f"INSERT {{ GRAPH <{EX}dst> {{ ?s <{EX}copied> ?o }} }} WHERE {{ ?s <{EX}p> ?o }}"
    response = endpoint.post("/update", params={"using-graph-uri": f"{EX}src"}, body=update, headers=DIRECT)
    assert response.status == 204
    assert ask(endpoint, f"ASK {{ GRAPH <{EX}dst> {{ <{EX}a> <{EX}copied> 1 }} }}")


def test_using_named_graph_uri_sets_the_named_graphs(endpoint: LiveEndpoint) -> None:
    endpoint.update(
        f"INSERT DATA {{ GRAPH <{EX}one> {{ <{EX}a> <{EX}p> 1 }} GRAPH <{EX}two> {{ <{EX}b> <{EX}p> 2 }} }}"
    )
    update = f"INSERT {{ GRAPH <{EX}dst> {{ ?s <{EX}from> ?g }} }} WHERE {{ GRAPH ?g {{ ?s <{EX}p> ?o }} }}"
    body = urllib.parse.urlencode({"update": update, "using-named-graph-uri": f"{EX}two"})
    assert endpoint.post("/update", body=body, headers=FORM).status == 204
    assert ask(endpoint, f"ASK {{ GRAPH <{EX}dst> {{ <{EX}b> <{EX}from> <{EX}two> }} }}")
    assert not ask(endpoint, f"ASK {{ GRAPH <{EX}dst> {{ <{EX}a> ?p ?o }} }}")


def test_using_graph_uri_with_a_with_clause_is_400(endpoint: LiveEndpoint) -> None:
    update = f"WITH <{EX}g> INSERT {{ ?s ?p 2 }} WHERE {{ ?s ?p 1 }}"
    response = endpoint.post("/update", params={"using-graph-uri": f"{EX}src"}, body=update, headers=DIRECT)
    assert "WITH" in response.error(400)["error"]


def test_get_is_405(endpoint: LiveEndpoint) -> None:
    response = endpoint.get("/update", params={"update": "CLEAR ALL"})
    response.error(405)
    assert response.headers["Allow"] == "POST"


def test_two_updates_are_400(endpoint: LiveEndpoint) -> None:
    body = urllib.parse.urlencode([("update", "CLEAR DEFAULT"), ("update", "CLEAR NAMED")])
    assert "given 2 times" in endpoint.post("/update", body=body, headers=FORM).error(400)["error"]


def test_an_update_in_the_url_and_the_body_is_400(endpoint: LiveEndpoint) -> None:
    response = endpoint.post("/update", params={"update": "CLEAR ALL"}, body="CLEAR ALL", headers=DIRECT)
    response.error(400)


@pytest.mark.parametrize("content_type", ["text/plain", "application/sparql-query", None])
def test_other_content_types_are_415(endpoint: LiveEndpoint, content_type) -> None:
    headers = (("Content-Type", content_type),) if content_type else ()
    response = send(endpoint.base_url, "POST", "/update", headers, b"CLEAR ALL")
    assert response.status == 415
    assert b"application/sparql-update" in response.body


def test_a_syntax_error_names_line_and_column(endpoint: LiveEndpoint) -> None:
    body = endpoint.update("CLEAR ALL ;\nINSERT DATA { <a> <b> }").error(400)
    assert body["line"] == 2


def test_a_failing_operation_is_400_and_rolls_the_request_back(endpoint: LiveEndpoint) -> None:
    endpoint.update(f"CREATE GRAPH <{EX}g>")
    response = endpoint.update(f"INSERT DATA {{ <{EX}s> <{EX}p> 1 }} ;\nCREATE GRAPH <{EX}g>")
    body = response.error(400)
    assert "already exists" in body["error"]
    assert body["line"] == 2
    assert not ask(endpoint, f"ASK {{ <{EX}s> <{EX}p> 1 }}")


@pytest.mark.parametrize(
    "update",
    [
        "LOAD <http://example.org/data.ttl>",
        "LOAD <https://example.org/data.ttl> INTO GRAPH <http://example.org/g>",
        "INSERT { ?s ?p ?o } WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
    ],
)
def test_remote_access_is_refused_with_403(endpoint: LiveEndpoint, update: str) -> None:
    assert "--allow-remote" in endpoint.update(update).error(403)["error"]


def test_a_remote_service_in_a_query_is_refused_with_403(endpoint: LiveEndpoint) -> None:
    query = "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }"
    assert "--allow-remote" in endpoint.get("/query", params={"query": query}).error(403)["error"]


def test_one_change_event_per_request_with_its_graphs(endpoint: LiveEndpoint) -> None:
    events = []
    unsubscribe = endpoint.store.subscribe(events.append)
    try:
        update = (
            f"INSERT DATA {{ <{EX}s> <{EX}p> 1 . GRAPH <{EX}g> {{ <{EX}s> <{EX}p> 1, 2 }} }} ;\n"
            f"DELETE DATA {{ GRAPH <{EX}g> {{ <{EX}s> <{EX}p> 2 }} }}"
        )
        assert endpoint.update(update).status == 204
        assert endpoint.update(f"INSERT DATA {{ <{EX}s> <{EX}p> 1 }}").status == 204  # changes nothing
    finally:
        unsubscribe()
    assert len(events) == 1
    assert {(c.graph, c.added, c.removed) for c in events[0].changes} == {(None, 1, 0), (f"{EX}g", 1, 0)}
    assert endpoint.get("/health").json()["version"] == events[0].version
