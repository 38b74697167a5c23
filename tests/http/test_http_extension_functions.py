"""Extension functions in one-shot ``/query``: the built-ins and a function registered in the server's
process, through the WSGI fast path (GET, POST application/sparql-query) and the Flask route (POST
form); an unregistered IRI stays a located 400."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from cqels_endpoint import register_function, unregister_function

if TYPE_CHECKING:
    from conftest import LiveEndpoint

EX = "http://example.org/"
USER = f"{EX}fn/shout"
DATA = f"""
<{EX}berlin> <{EX}lat> 52.52 ; <{EX}lon> 13.405 ; <{EX}name> "Berlin" .
<{EX}potsdam> <{EX}lat> 52.39 ; <{EX}lon> 13.065 ; <{EX}name> "Potsdam" .
<{EX}munich> <{EX}lat> 48.137 ; <{EX}lon> 11.575 ; <{EX}name> "Munich" .
""".encode()
NEAR = f"""PREFIX : <{EX}> PREFIX cqfn: <urn:cqels:fn:>
SELECT ?city (cqfn:levenshtein(?name, "Berlin") AS ?edits) (<{USER}>(?name) AS ?loud) WHERE {{
  ?city :lat ?lat ; :lon ?lon ; :name ?name
  FILTER(<urn:cqels:fn:haversine>(?lat, ?lon, 52.52, 13.405) <= 50)
}} ORDER BY ?city"""


@pytest.fixture
def endpoint(live_endpoint: LiveEndpoint) -> Iterator[LiveEndpoint]:
    live_endpoint.reset()
    assert live_endpoint.put_graph(None, DATA, "text/turtle").status in (201, 204)
    register_function(USER, lambda name: name.value.upper())
    try:
        yield live_endpoint
    finally:
        unregister_function(USER)


def bindings(response) -> list[dict[str, str]]:
    assert response.status == 200, response.text
    return [{name: value["value"] for name, value in row.items()} for row in response.json()["results"]["bindings"]]


EXPECTED = [
    {"city": f"{EX}berlin", "edits": "0", "loud": "BERLIN"},
    {"city": f"{EX}potsdam", "edits": "7", "loud": "POTSDAM"},
]


def test_get_and_post_query_take_the_fast_path(endpoint: LiveEndpoint) -> None:
    accept = {"Accept": "application/sparql-results+json"}
    assert bindings(endpoint.get("/query", params={"query": NEAR}, headers=accept)) == EXPECTED
    body = endpoint.post("/query", body=NEAR, headers={**accept, "Content-Type": "application/sparql-query"})
    assert bindings(body) == EXPECTED


def test_a_form_post_goes_through_flask(endpoint: LiveEndpoint) -> None:
    response = endpoint.post(
        "/sparql",
        body=urllib.parse.urlencode({"query": NEAR}),
        headers={"Accept": "application/sparql-results+json", "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert bindings(response) == EXPECTED


def test_a_failing_call_is_unbound_and_an_unknown_iri_is_a_400(endpoint: LiveEndpoint) -> None:
    failing = f'SELECT ?x WHERE {{ BIND(<urn:cqels:fn:levenshtein>(1, "a") AS ?x) BIND(<{USER}>(1, 2) AS ?y) }}'
    assert bindings(endpoint.query(failing)) == [{}]
    response = endpoint.query(f"SELECT ?x WHERE {{ BIND(<{EX}fn/nothing>(1) AS ?x) }}")
    assert response.status == 400
    assert f"function <{EX}fn/nothing> is not supported" in response.text
