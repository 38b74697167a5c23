"""GeoSPARQL functions in continuous queries: the incremental mode (the interpreter's FILTER and
BIND over stream rows; static caches built by pyoxigraph with the registry's functions) emits what
the recompute oracle (pyoxigraph over the windows, the same functions) emits, at every evaluation.

Hypothesis draws the geometries — points, boxes, lines, random (possibly self-crossing) polygons,
some written in EPSG:4326 (latitude first), empty and malformed WKT, plain strings — as stream
events and static data, and a query with a ``geof:`` relation against a fence, a distance or an
envelope in a BIND, and a stream–static join on a relation, in CQELS and in CQELS-QL 2.0 syntax.
Shrunk failures are kept under ``tests/regressions/geosparql/`` and replayed below.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS, REGRESSIONS, Scenario, check, check_keeping_failures, emitted, regression_cases

EX = "http://ex.org/"
S = EX + "s0"
GEO_REGRESSIONS = REGRESSIONS.parent / "geosparql"
WKT = "<http://www.opengis.net/ont/geosparql#wktLiteral>"
EPSG4326 = "<http://www.opengis.net/def/crs/EPSG/0/4326>"
PREFIXES = f"""PREFIX : <{EX}>
PREFIX geo: <http://www.opengis.net/ont/geosparql#>
PREFIX geof: <http://www.opengis.net/def/function/geosparql/>
PREFIX uom: <http://www.opengis.net/def/uom/OGC/1.0/>
"""
RELATIONS = ("sfWithin", "sfContains", "sfIntersects", "sfTouches", "sfOverlaps", "sfCrosses", "sfDisjoint", "sfEquals")
UNITS = ("uom:metre", "uom:kilometre", "uom:degree", "uom:radian", "uom:foot")
# Coordinates on a small grid, so that points fall on edges and vertices as often as inside.
COORDINATES = st.sampled_from((0, 1, 2, 3, 4, 0.5, 2.5, -1))


def point(draw) -> list[tuple]:
    return [(draw(COORDINATES), draw(COORDINATES))]


def ring(vertices: list[tuple]) -> str:
    return ", ".join(f"{x} {y}" for x, y in [*vertices, vertices[0]])


@st.composite
def geometries(draw) -> str:
    """The lexical form of a wktLiteral: mostly well-formed, sometimes in EPSG:4326, empty or broken."""
    kind = draw(st.sampled_from(("point",) * 4 + ("box", "box", "polygon", "line", "empty", "broken")))
    if kind == "empty":
        return ""
    if kind == "broken":
        return draw(st.sampled_from(("POINT(1 1", "POINT(1)", "POINT(a b)", "CIRCLE(0 0 1)", "POINT(1e400 0)", "POLYGON((0 0, 1 0))", "LINESTRING(0 0)")))
    if kind == "point":
        vertices = point(draw)
    elif kind == "box":
        xs = sorted(draw(st.lists(COORDINATES, min_size=2, max_size=2, unique=True)))
        ys = sorted(draw(st.lists(COORDINATES, min_size=2, max_size=2, unique=True)))
        vertices = [(xs[0], ys[0]), (xs[1], ys[0]), (xs[1], ys[1]), (xs[0], ys[1])]
    else:
        vertices = draw(st.lists(st.tuples(COORDINATES, COORDINATES), min_size=2 if kind == "line" else 3, max_size=5))
    latitude_first = draw(st.sampled_from((False, False, False, True)))
    if latitude_first:
        vertices = [(y, x) for x, y in vertices]
    if kind == "point":
        text = f"POINT({vertices[0][0]} {vertices[0][1]})"
    elif kind == "line":
        text = "LINESTRING(" + ", ".join(f"{x} {y}" for x, y in vertices) + ")"
    else:
        text = f"POLYGON(({ring(vertices)}))"
    return f"{EPSG4326} {text}" if latitude_first else text


@st.composite
def literals(draw) -> str:
    """An object in N-Triples: a wktLiteral, now and then a plain string or an IRI (wrong types)."""
    text = draw(geometries())
    kind = draw(st.sampled_from(("wkt",) * 8 + ("string", "iri")))
    if kind == "iri":
        return f"<{EX}somewhere>"
    return f'"{text}"' if kind == "string" else f'"{text}"^^{WKT}'


@st.composite
def histories(draw) -> list[list]:
    events: list[list] = []
    time = 0
    for _ in range(draw(st.integers(1, 12))):
        time += draw(st.sampled_from((0, 1, 1, 2, 5)))
        if draw(st.sampled_from(("push",) * 5 + ("advance",))) == "advance":
            events.append(["advance", time])
            continue
        vehicles = draw(st.lists(st.sampled_from(("v0", "v1", "v2")), min_size=1, max_size=3, unique=True))
        events.append(["push", S, time, "\n".join(f"<{EX}{v}> <{EX}pos> {draw(literals())} ." for v in vehicles)])
    if draw(st.booleans()):
        events.append(["advance", time + draw(st.sampled_from((1, 3, 10)))])
    return events


@st.composite
def static_zones(draw) -> str:
    return "\n".join(f"<{EX}z{i}> <{EX}area> {draw(literals())} ." for i in range(draw(st.integers(0, 4))))


@st.composite
def queries(draw) -> str:
    fence = draw(geometries())
    relation = draw(st.sampled_from(RELATIONS))
    unit = draw(st.sampled_from(UNITS))
    window = draw(st.sampled_from(("[RANGE 3ms]", "[RANGE 10ms]", "[NOW]", "[TRIPLES 2]")))
    body = [f'FILTER(geof:{relation}(?p, "{fence}"^^geo:wktLiteral))'] if draw(st.booleans()) else []
    head = "SELECT ?v ?p"
    if draw(st.booleans()):
        origin = draw(geometries())
        body.append(f'BIND(geof:distance(?p, "{origin}"^^geo:wktLiteral, {unit}) AS ?d)')
        head += " ?d"
    if draw(st.booleans()):
        body.append(draw(st.sampled_from(("BIND(geof:envelope(?p) AS ?e)", f"BIND(geof:buffer(?p, 1, {unit}) AS ?e)"))))
        head += " ?e"
    if draw(st.booleans()):
        # A stream–static join on a relation; the zone's own FILTER reads static variables only and
        # goes into the static cache, which pyoxigraph builds.
        body.append(f"?z :area ?a FILTER(geof:{draw(st.sampled_from(RELATIONS))}(?p, ?a))")
        if draw(st.booleans()):
            body.append(f'FILTER(geof:sfIntersects(?a, "{draw(geometries())}"^^geo:wktLiteral))')
        head += " ?z"
    if draw(st.booleans()):  # CQELS-QL 2.0 / C-SPARQL: the window is the default graph, static data via GRAPH
        body = [part.replace("?z :area ?a", "GRAPH :zones { ?z :area ?a }") for part in body]
        register = draw(st.sampled_from(("", "REGISTER QUERY Geofence AS\n")))
        return f"{PREFIXES}{register}{head}\nFROM STREAM <{S}> {window}\nWHERE {{\n  ?v :pos ?p .\n  " + "\n  ".join(body) + "\n}"
    return f"{PREFIXES}{head} WHERE {{\n  STREAM <{S}> {window} {{ ?v :pos ?p }}\n  " + "\n  ".join(body) + "\n}"


@settings(ORACLE_SETTINGS, max_examples=300)
@given(query=queries(), static=static_zones(), events=histories())
def test_incremental_equals_recompute(query: str, static: str, events: list[list]) -> None:
    if "GRAPH :zones" in query:
        static = "\n".join(line[:-1] + f"<{EX}zones> ." for line in static.splitlines())
    logs = check_keeping_failures(Scenario(query, static, events), GEO_REGRESSIONS)
    event("Γ gained rows" if emitted(logs, "ISTREAM") else "Γ stayed empty")


@pytest.mark.parametrize(("name", "scenario"), regression_cases(GEO_REGRESSIONS))
def test_regression(name: str, scenario: Scenario) -> None:
    check(scenario)


# --------------------------------------------------------------------------- known answers

FENCE = "POLYGON((-9.10 53.25, -9.00 53.25, -9.00 53.30, -9.10 53.30, -9.10 53.25))"  # around Galway
POSITIONS = [
    ["push", S, 1, f'<{EX}v1> <{EX}pos> "POINT(-9.0568 53.2707)"^^{WKT} .'],  # in Galway, longitude first
    ["push", S, 2, f'<{EX}v2> <{EX}pos> "{EPSG4326} POINT(53.2707 -9.0568)"^^{WKT} .'],  # the same, latitude first
    ["push", S, 3, f'<{EX}v3> <{EX}pos> "POINT(53.2707 -9.0568)"^^{WKT} .'],  # swapped without saying so: far away
    ["push", S, 4, f'<{EX}v4> <{EX}pos> "POINT(-9.05 53.27"^^{WKT} .'],  # malformed: an error, no row
    ["push", S, 5, f'<{EX}v5> <{EX}pos> "POINT(-6.2603 53.3498)"^^{WKT} .'],  # Dublin
    ["advance", 20],
]


def rows(logs: dict, *variables: str) -> set:
    return {tuple(row[v].value if v in row else None for v in variables) for e in logs["incremental", "RSTREAM"] for row in e.rows}


def test_a_fence_in_cqels_ql_2_syntax() -> None:
    # CQELS-QL 2.0 §9: geof: functions resolve; a position within the fence polygon passes the FILTER.
    logs = check(
        Scenario(
            PREFIXES + "REGISTER QUERY InGalway AS\nSELECT ?v (geof:distance(?p, \"POINT(-9.0568 53.2707)\"^^geo:wktLiteral, uom:metre) AS ?d)\n"
            f"FROM STREAM <{S}> [RANGE 10s]\nWHERE {{ ?v :pos ?p FILTER(geof:sfWithin(?p, \"{FENCE}\"^^geo:wktLiteral)) }}",
            "",
            # [RANGE 10s] tumbles in CQELS-QL 2.0 (§3.1): the window from the first event closes at 10 001 ms.
            [*POSITIONS, ["advance", 10_001]],
        )
    )
    assert {(v, float(d)) for v, d in rows(logs, "v", "d")} == {(EX + "v1", 0.0), (EX + "v2", 0.0)}


def test_static_zones_filtered_in_the_cache_and_joined_with_positions() -> None:
    zones = "\n".join(
        f'<{EX}{name}> <{EX}area> "{wkt}"^^{WKT} .'
        for name, wkt in (
            ("galway", FENCE),
            ("dublin", f"{EPSG4326} POLYGON((53.30 -6.30, 53.30 -6.20, 53.40 -6.20, 53.40 -6.30, 53.30 -6.30))"),
            ("atlantic", "POLYGON((-30 40, -20 40, -20 50, -30 50, -30 40))"),
            ("broken", "POLYGON((0 0, 1 0"),
        )
    )
    ireland = "POLYGON((-11 51, -5 51, -5 56, -11 56, -11 51))"
    logs = check(
        Scenario(
            PREFIXES + f"SELECT ?v ?zone WHERE {{ STREAM <{S}> [RANGE 10s] {{ ?v :pos ?p }} "
            f'?zone :area ?a FILTER(geof:sfIntersects(?a, "{ireland}"^^geo:wktLiteral)) FILTER(geof:sfContains(?a, ?p)) }}',
            zones,
            POSITIONS,
        )
    )
    assert rows(logs, "v", "zone") == {(EX + "v1", EX + "galway"), (EX + "v2", EX + "galway"), (EX + "v5", EX + "dublin")}
