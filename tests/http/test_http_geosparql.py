"""GeoSPARQL functions in one-shot ``/query``, through the WSGI fast path (GET) and the Flask route
(POST form): a geof: FILTER and BINDs over stored geometries, EPSG:4326 read latitude first, and
malformed WKT an expression error (a 200 with the row filtered or the variable unbound, never a 500)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LiveEndpoint

EX = "http://example.org/"
WKT = "<http://www.opengis.net/ont/geosparql#wktLiteral>"
DATA = f"""
<{EX}galway> <{EX}at> "POINT(-9.0568 53.2707)"^^{WKT} .
<{EX}dublin> <{EX}at> "<http://www.opengis.net/def/crs/EPSG/0/4326> POINT(53.3498 -6.2603)"^^{WKT} .
<{EX}paris> <{EX}at> "POINT(2.3522 48.8566)"^^{WKT} .
<{EX}nowhere> <{EX}at> "POINT(2.35 48.85"^^{WKT} .
""".encode()
IRELAND = "POLYGON((-11 51, -5 51, -5 56, -11 56, -11 51))"
QUERY = f"""PREFIX : <{EX}>
PREFIX geo: <http://www.opengis.net/ont/geosparql#>
PREFIX geof: <http://www.opengis.net/def/function/geosparql/>
PREFIX uom: <http://www.opengis.net/def/uom/OGC/1.0/>
SELECT ?city ?km WHERE {{
  ?city :at ?p
  FILTER(!geof:sfWithin(?p, "POLYGON((-5 40, 10 40, 10 50, -5 50, -5 40))"^^geo:wktLiteral))
  BIND(ROUND(geof:distance(?p, "POINT(-9.0568 53.2707)"^^geo:wktLiteral, uom:kilometre)) AS ?km)
}} ORDER BY ?city"""
INSIDE = f"""PREFIX : <{EX}> PREFIX geof: <http://www.opengis.net/def/function/geosparql/>
SELECT ?city WHERE {{ ?city :at ?p FILTER(geof:sfWithin(?p, "{IRELAND}"^^<http://www.opengis.net/ont/geosparql#wktLiteral>)) }} ORDER BY ?city"""


@pytest.fixture
def endpoint(live_endpoint: LiveEndpoint) -> Iterator[LiveEndpoint]:
    live_endpoint.reset()
    assert live_endpoint.put_graph(None, DATA, "application/n-triples").status in (201, 204)
    yield live_endpoint


def bindings(response) -> list[dict[str, str]]:
    assert response.status == 200, response.text
    return [{name: value["value"] for name, value in row.items()} for row in response.json()["results"]["bindings"]]


def test_a_geof_filter_through_the_fast_path(endpoint: LiveEndpoint) -> None:
    # Dublin is stored latitude first (EPSG:4326) and is in Ireland; the malformed point is in no polygon.
    assert bindings(endpoint.query(INSIDE)) == [{"city": f"{EX}dublin"}, {"city": f"{EX}galway"}]


def test_a_bind_leaves_a_malformed_geometry_unbound_through_flask(endpoint: LiveEndpoint) -> None:
    # !sfWithin of the malformed point is an error, so its row is filtered out; the distances are
    # geodesic kilometres (Galway–Dublin 186.6 on WGS84).
    response = endpoint.post(
        "/sparql",
        body=urllib.parse.urlencode({"query": QUERY}),
        headers={"Accept": "application/sparql-results+json", "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert bindings(response) == [{"city": f"{EX}dublin", "km": "187"}, {"city": f"{EX}galway", "km": "0"}]
    unbound = endpoint.query(f'PREFIX geof: <http://www.opengis.net/def/function/geosparql/> SELECT ?e WHERE {{ BIND(geof:envelope("POINT(1"^^{WKT}) AS ?e) }}')
    assert bindings(unbound) == [{}]


def test_an_update_where_calls_the_same_functions(endpoint: LiveEndpoint) -> None:
    # The registry reaches Update's WHERE too (fast path and Flask route): EPSG:4326 read latitude
    # first, and a literal nested past what a WKT reader can recurse is an error, not a crash —
    # pyoxigraph's own geof:envelope would overflow its stack on it and kill the server.
    deep = "GEOMETRYCOLLECTION(" * 100_000 + "POINT(1 1)" + ")" * 100_000
    update = f"""PREFIX : <{EX}> PREFIX geof: <http://www.opengis.net/def/function/geosparql/>
INSERT {{ ?city :in :ireland ; :deep ?deep }} WHERE {{
  ?city :at ?p FILTER(geof:sfWithin(?p, "{IRELAND}"^^{WKT}))
  BIND(geof:envelope("{deep}"^^{WKT}) AS ?deep)
}}"""
    assert endpoint.update(update).status == 204
    response = endpoint.post(
        "/update",
        body=urllib.parse.urlencode({"update": update.replace(":ireland", ":eire")}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status == 204, response.text
    found = endpoint.query(f"PREFIX : <{EX}> SELECT ?city ?where ?deep WHERE {{ ?city :in ?where OPTIONAL {{ ?city :deep ?deep }} }} ORDER BY ?city ?where")
    assert bindings(found) == [
        {"city": f"{EX}dublin", "where": f"{EX}eire"},
        {"city": f"{EX}dublin", "where": f"{EX}ireland"},
        {"city": f"{EX}galway", "where": f"{EX}eire"},
        {"city": f"{EX}galway", "where": f"{EX}ireland"},
    ]
