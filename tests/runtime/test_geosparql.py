"""The GeoSPARQL functions (``runtime.functions.geosparql``), each call evaluated twice — by the
interpreter of the incremental mode and by pyoxigraph with the registry's custom functions (the
recompute oracle, static caches, one-shot queries) — and both answers must be the same term.

Expected values come from the OGC GeoSPARQL 1.1 standard (22-047r1) and ISO 19125-1: the DE-9IM
patterns of the Simple Features relation family (Req. ``/req/geometry-topology-extension/
sf-query-functions``), the default CRS and axis order of ``geo:wktLiteral`` (``/req/
geometry-extension/wkt-literal-default-srs``, ``wkt-axis-order``, with the standard's own example
of one point written in CRS84 and in EPSG:4326), the empty literal (``wkt-literal-empty``), and
distances on the WGS84 ellipsoid (a = 6378137 m) that any geodesy text gives.
"""

from __future__ import annotations

import logging
import math

import pyoxigraph as ox
import pytest
import shapely

from cqels_endpoint import parse_query
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression
from cqels_endpoint.runtime.functions import geosparql
from cqels_endpoint.runtime.functions.extensions import custom_functions

PREFIXES = (
    "PREFIX geo: <http://www.opengis.net/ont/geosparql#> PREFIX geof: <http://www.opengis.net/def/function/geosparql/> "
    "PREFIX uom: <http://www.opengis.net/def/uom/OGC/1.0/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
)
EPSG4326 = "<http://www.opengis.net/def/crs/EPSG/0/4326>"
ERROR = "error"


def wkt(text: str) -> str:
    """A geo:wktLiteral in SPARQL syntax."""
    return '"' + text.replace('"', '\\"') + '"^^geo:wktLiteral'


def both(text: str):
    """The value of the expression ``text`` in the interpreter and in pyoxigraph, asserted equal."""
    expr = parse_query(f"{PREFIXES}SELECT ({text} AS ?r) WHERE {{ ?s ?p ?o }}").form.projection[0].expr
    try:
        mine = compile_expression(expr)({})
    except ExpressionError:
        mine = ERROR
    (solution,) = ox.Store().query(f"{PREFIXES}SELECT ({text} AS ?r) WHERE {{}}", custom_functions=custom_functions())
    oracle = ERROR if solution["r"] is None else solution["r"]
    assert mine == oracle, text
    return mine


def holds(function: str, a: str, b: str) -> bool:
    result = both(f"geof:{function}({wkt(a)}, {wkt(b)})")
    assert result != ERROR, (function, a, b)
    return result.value == "true"


def number(text: str) -> float:
    result = both(text)
    assert result != ERROR, text
    assert result.datatype.value == "http://www.w3.org/2001/XMLSchema#double"
    return float(result.value)


def geometry(text: str) -> tuple[str | None, shapely.Geometry]:
    """A function's wktLiteral result: its CRS IRI (None if it has none) and its WKT as written."""
    result = both(text)
    assert result != ERROR and result.datatype.value == geosparql.WKT_LITERAL, text
    if result.value.startswith("<"):
        iri, _, rest = result.value[1:].partition("> ")
        return iri, shapely.from_wkt(rest)
    return None, shapely.from_wkt(result.value)


# --------------------------------------------------------------------------- Simple Features relations

SQUARE = "POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))"
# The standard's table of the Simple Features query functions, as DE-9IM patterns (several: any).
# sfEquals is ISO 19125-1's Equals, T*F**FFF*, which GEOS, PostGIS and Jena test: the table's
# TFFFTFFFT asks the boundaries to meet, which two equal points (no boundary) never do.
PATTERNS = {
    "sfEquals": ("T*F**FFF*",),
    "sfDisjoint": ("FF*FF****",),
    "sfIntersects": ("T********", "*T*******", "***T*****", "****T****"),
    "sfTouches": ("FT*******", "F**T*****", "F***T****"),
    "sfWithin": ("T*F**F***",),
    "sfContains": ("T*****FF*",),
}
# sfCrosses and sfOverlaps depend on the dimensions (P point, L line, A area).
CROSSES = {(0, 1): "T*T******", (0, 2): "T*T******", (1, 2): "T*T******", (1, 1): "0********"}
OVERLAPS = {(2, 2): "T*T***T**", (0, 0): "T*T***T**", (1, 1): "1*T***T**"}
PAIRS = [
    ("POINT(1 1)", SQUARE),  # a point in a square
    ("POINT(2 1)", SQUARE),  # on its boundary
    ("POINT(3 1)", SQUARE),
    ("POLYGON((2 0, 4 0, 4 2, 2 2, 2 0))", SQUARE),  # touching squares
    ("POLYGON((1 1, 3 1, 3 3, 1 3, 1 1))", SQUARE),  # overlapping squares
    ("POLYGON((0.5 0.5, 1 0.5, 1 1, 0.5 0.5))", SQUARE),
    ("POLYGON((2 2, 0 2, 0 0, 2 0, 2 2))", SQUARE),  # equal, from another vertex and the other way round
    ("LINESTRING(-1 1, 3 1)", SQUARE),  # a line crossing a square
    ("LINESTRING(0 0, 2 2)", "LINESTRING(0 2, 2 0)"),  # crossing lines
    ("LINESTRING(0 0, 2 0)", "LINESTRING(1 0, 3 0)"),  # overlapping lines
    ("LINESTRING(0 0, 1 0)", "LINESTRING(1 0, 2 0)"),  # lines touching at an end
    ("MULTIPOINT((1 1), (5 5))", "MULTIPOINT((1 1), (6 6))"),  # overlapping point sets
    ("MULTIPOINT((1 1), (5 5))", "LINESTRING(0 0, 2 2)"),  # points crossing a line
    ("POINT(1 1)", "POINT(1 1)"),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_the_relations_are_the_de9im_patterns_of_the_standard(a: str, b: str) -> None:
    first, second = shapely.from_wkt(a), shapely.from_wkt(b)
    matrix = shapely.relate(first, second)
    dimensions = (shapely.get_dimensions(first), shapely.get_dimensions(second))
    expected = {name: any(shapely.relate_pattern(first, second, p) for p in patterns) for name, patterns in PATTERNS.items()}
    expected["sfCrosses"] = dimensions in CROSSES and shapely.relate_pattern(first, second, CROSSES[dimensions])
    expected["sfOverlaps"] = dimensions in OVERLAPS and shapely.relate_pattern(first, second, OVERLAPS[dimensions])
    assert {name: holds(name, a, b) for name in expected} == expected, matrix


def test_a_point_in_a_square_and_touching_squares() -> None:
    assert holds("sfWithin", "POINT(1 1)", SQUARE) and holds("sfContains", SQUARE, "POINT(1 1)")
    # A point on the boundary is not within (its interior meets no interior) but touches.
    assert not holds("sfWithin", "POINT(2 1)", SQUARE) and holds("sfTouches", "POINT(2 1)", SQUARE)
    touching = "POLYGON((2 0, 4 0, 4 2, 2 2, 2 0))"
    assert holds("sfTouches", touching, SQUARE) and holds("sfIntersects", touching, SQUARE)
    assert not holds("sfOverlaps", touching, SQUARE) and not holds("sfDisjoint", touching, SQUARE)
    assert holds("sfOverlaps", "POLYGON((1 1, 3 1, 3 3, 1 3, 1 1))", SQUARE)
    assert holds("sfCrosses", "LINESTRING(-1 1, 3 1)", SQUARE)
    assert holds("sfEquals", "POLYGON((2 2, 0 2, 0 0, 2 0, 2 2))", SQUARE)


# --------------------------------------------------------------------------- CRS and axis order


def test_the_standards_point_in_crs84_and_in_epsg_4326_is_one_point() -> None:
    # wkt-axis-order: "Point(-83.38 33.95)" (default CRS84, longitude first) and the same point
    # written with EPSG:4326, whose axis order is latitude first: "Point(33.95 -83.38)".
    crs84, epsg = "Point(-83.38 33.95)", f"{EPSG4326} Point(33.95 -83.38)"
    assert holds("sfEquals", crs84, epsg) and holds("sfEquals", epsg, crs84)
    assert number(f"geof:distance({wkt(crs84)}, {wkt(epsg)}, uom:metre)") == 0
    # Read longitude first, the EPSG:4326 coordinates would be another point.
    assert not holds("sfEquals", crs84, "Point(33.95 -83.38)")
    assert holds("sfWithin", f"{EPSG4326} POINT(1 3)", "POLYGON((2 0, 4 0, 4 2, 2 2, 2 0))")
    # The explicit default IRI is the default.
    assert holds("sfEquals", "<http://www.opengis.net/def/crs/OGC/1.3/CRS84> POINT(1 2)", "POINT(1 2)")


def test_a_projected_crs_is_converted_to_the_first_geometrys_crs() -> None:
    # Web Mercator (EPSG:3857) of (10°E, 50°N), on the sphere of radius a: x = a·λ, y = a·ln tan(π/4 + φ/2).
    a = 6378137.0
    x, y = a * math.radians(10), a * math.log(math.tan(math.pi / 4 + math.radians(50) / 2))
    mercator = f"<http://www.opengis.net/def/crs/EPSG/0/3857> POINT({x!r} {y!r})"
    assert number(f"geof:distance({wkt('POINT(10 50)')}, {wkt(mercator)}, uom:metre)") == pytest.approx(0, abs=1e-3)
    assert holds("sfWithin", mercator, "POLYGON((9 49, 11 49, 11 51, 9 51, 9 49))")
    # In the projected CRS (the first one): planar metres; an angle has no meaning there.
    assert number(f"geof:distance({wkt(mercator)}, {wkt('POINT(11 50)')}, uom:kilometre)") == pytest.approx(a * math.radians(1) / 1000)
    assert both(f"geof:distance({wkt(mercator)}, {wkt('POINT(11 50)')}, uom:degree)") == ERROR


# --------------------------------------------------------------------------- distance


def test_distances_on_the_wgs84_ellipsoid() -> None:
    a = 6378137.0  # the WGS84 semi-major axis
    metre = "uom:metre"
    # A degree of the equator, a geodesic: a·π/180 = 111319.49 m.
    assert number(f"geof:distance({wkt('POINT(0 0)')}, {wkt('POINT(1 0)')}, {metre})") == pytest.approx(a * math.pi / 180, abs=1e-3)
    # A degree of the meridian from the equator: 110574.39 m (the ellipse is flattest there).
    assert number(f"geof:distance({wkt('POINT(0 0)')}, {wkt('POINT(0 1)')}, {metre})") == pytest.approx(110574.389, abs=1e-2)
    # Pole to pole along a meridian: two meridian quadrants of 10001.965729 km.
    half_meridian = number(f"geof:distance({wkt('POINT(0 -90)')}, {wkt('POINT(0 90)')}, uom:kilometre)")
    assert half_meridian == pytest.approx(2 * 10001.965729, abs=1e-5)
    # Galway → Dublin (the cathedral squares): 186.60 km on the ellipsoid, where the 6371 km
    # sphere of urn:cqels:fn:haversine gives 185.98 km.
    galway, dublin = wkt("POINT(-9.0568 53.2707)"), wkt(f"{EPSG4326} POINT(53.3498 -6.2603)")
    assert number(f"geof:distance({galway}, {dublin}, uom:kilometre)") == pytest.approx(186.60, abs=0.01)
    assert number("<urn:cqels:fn:haversine>(53.2707, -9.0568, 53.3498, -6.2603)") == pytest.approx(185.98, abs=0.01)


def test_angular_units_measure_the_coordinates_and_geometries_measure_from_their_nearest_points() -> None:
    assert number(f"geof:distance({wkt('POINT(0 0)')}, {wkt('POINT(3 4)')}, uom:degree)") == pytest.approx(5)
    assert number(f"geof:distance({wkt('POINT(0 0)')}, {wkt('POINT(3 4)')}, uom:radian)") == pytest.approx(math.radians(5))
    # From a point to a square: to its nearest edge; inside it, 0.
    assert number(f"geof:distance({wkt('POINT(5 1)')}, {wkt(SQUARE)}, uom:degree)") == pytest.approx(3)
    assert number(f"geof:distance({wkt('POINT(5 1)')}, {wkt(SQUARE)}, uom:metre)") == pytest.approx(
        number(f"geof:distance({wkt('POINT(5 1)')}, {wkt('POINT(2 1)')}, uom:metre)")
    )
    assert number(f"geof:distance({wkt('POINT(1 1)')}, {wkt(SQUARE)}, uom:kilometre)") == 0
    # A unit may also be written as an xsd:anyURI literal.
    assert number(f'geof:distance({wkt("POINT(0 0)")}, {wkt("POINT(1 0)")}, "http://www.opengis.net/def/uom/OGC/1.0/kilometre"^^xsd:anyURI)') == pytest.approx(
        111.31949, abs=1e-5
    )


# --------------------------------------------------------------------------- buffer and envelope


def test_a_metric_buffer_of_a_point_is_a_geodesic_circle() -> None:
    crs, circle = geometry(f"geof:buffer({wkt('POINT(-9.0568 53.2707)')}, 1000, uom:metre)")
    assert crs is None and circle.geom_type == "Polygon" and circle.is_valid
    for x, y in circle.exterior.coords:
        assert number(f"geof:distance({wkt('POINT(-9.0568 53.2707)')}, {wkt(f'POINT({x!r} {y!r})')}, uom:metre)") == pytest.approx(1000, abs=1e-6)


def test_buffer_and_envelope_keep_the_crs_and_its_axis_order() -> None:
    crs, circle = geometry(f"geof:buffer({wkt(f'{EPSG4326} POINT(53.3498 -6.2603)')}, 2, uom:kilometre)")
    assert crs == EPSG4326[1:-1]
    # Latitude first: the circle is around (53.3498, -6.2603) as written.
    assert circle.centroid.x == pytest.approx(53.3498, abs=1e-6) and circle.centroid.y == pytest.approx(-6.2603, abs=1e-6)
    assert circle.bounds[2] - circle.bounds[0] == pytest.approx(2 * 2 / 111.25, rel=0.01)  # ±2 km of latitude
    crs, box = geometry(f"geof:envelope({wkt(f'{EPSG4326} LINESTRING(53 -9, 54 -6)')})")
    assert crs == EPSG4326[1:-1] and shapely.equals(box, shapely.box(53, -9, 54, -6))
    _, square = geometry(f"geof:buffer({wkt('POINT(1 1)')}, 1, uom:degree)")
    assert square.area == pytest.approx(math.pi, rel=0.02)  # a planar circle in degrees
    _, square = geometry(f"geof:buffer({wkt('POINT(1 1)')}, {math.radians(1)!r}, uom:radian)")
    assert square.area == pytest.approx(math.pi, rel=0.02)
    assert geometry(f"geof:envelope({wkt(SQUARE)})")[1].equals(shapely.from_wkt(SQUARE))


def test_the_empty_literal_is_the_empty_geometry() -> None:
    # wkt-literal-empty: an empty geo:wktLiteral is an empty geometry.
    assert not holds("sfIntersects", "", SQUARE) and holds("sfDisjoint", "", SQUARE)
    assert both(f"geof:distance({wkt('')}, {wkt(SQUARE)}, uom:metre)") == ERROR  # no nearest point


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text",
    [
        f"geof:sfWithin({wkt('POINT(1 1')}, {wkt(SQUARE)})",  # unbalanced
        f"geof:sfWithin({wkt('POINT(1)')}, {wkt(SQUARE)})",
        f"geof:sfWithin({wkt('CIRCLE(0 0 1)')}, {wkt(SQUARE)})",
        f"geof:sfWithin({wkt('POINT(1 1) POINT(2 2)')}, {wkt(SQUARE)})",
        f"geof:sfWithin({wkt('POINT(1e400 1)')}, {wkt(SQUARE)})",  # past the double range
        f"geof:sfWithin({wkt('POINT(NaN 1)')}, {wkt(SQUARE)})",
        f"geof:sfWithin({wkt('<http://example.org/crs> POINT(1 1)')}, {wkt(SQUARE)})",  # not a CRS IRI
        f"geof:sfWithin({wkt('<http://www.opengis.net/def/crs/EPSG/0/999999> POINT(1 1)')}, {wkt(SQUARE)})",
        f"geof:sfWithin({wkt('<http://www.opengis.net/def/crs/EPSG/0/4978> POINT(1 1)')}, {wkt(SQUARE)})",  # geocentric
        f'geof:sfWithin("POINT(1 1)", {wkt(SQUARE)})',  # a plain string
        f'geof:sfWithin("POINT(1 1)"^^<http://www.opengis.net/ont/geosparql#gmlLiteral>, {wkt(SQUARE)})',
        f"geof:sfWithin(<http://example.org/p>, {wkt(SQUARE)})",
        f"geof:sfWithin({wkt(SQUARE)})",  # arity
        f"geof:sfWithin(?unbound, {wkt(SQUARE)})",
        f"geof:distance({wkt('POINT(0 0)')}, {wkt('POINT(1 1)')}, <http://www.opengis.net/def/uom/OGC/1.0/foot>)",
        f'geof:distance({wkt("POINT(0 0)")}, {wkt("POINT(1 1)")}, "metre")',
        f"geof:distance({wkt('POINT(0 0)')}, {wkt('POINT(1 1)')})",
        f"geof:distance({wkt('POINT(0 0)')}, {wkt('POINT(0 95)')}, uom:metre)",  # past the pole
        f'geof:buffer({wkt("POINT(0 0)")}, "1", uom:metre)',
        f'geof:buffer({wkt("POINT(0 0)")}, "NaN"^^xsd:double, uom:metre)',
        f"geof:buffer({wkt('POINT(0 0)')}, 1{'0' * 400}, uom:metre)",  # an integer past the double range
        f"geof:buffer({wkt('POINT(0 0)')}, 30000, uom:kilometre)",  # past the antipode
        f"geof:buffer({wkt('<http://www.opengis.net/def/crs/EPSG/0/3857> POINT(0 0)')}, 1, uom:degree)",
        f"geof:envelope({wkt('LINESTRING(0 0)')})",
        # Nested deeper than GEOS's reader can recurse: refused before it (it would crash the process).
        f"geof:envelope({wkt('GEOMETRYCOLLECTION(' * 100_000 + 'POINT(1 1)' + ')' * 100_000)})",
    ],
)
def test_bad_arguments_are_expression_errors_in_both_evaluators(text: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert both(text) == ERROR
    assert not caplog.records  # an expected error, not an exception the registry logs


def test_a_fixed_fence_is_parsed_once() -> None:
    fence = "POLYGON((0 0, 7 0, 7 7, 0.123456 7, 0 0))"
    before = geosparql._parse.cache_info()
    for x in range(5):
        holds("sfWithin", f"POINT({x}.0625 1.03125)", fence)
    after = geosparql._parse.cache_info()
    assert after.misses - before.misses == 5 + 1  # the five points and the fence, once
