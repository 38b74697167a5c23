"""GeoSPARQL 1.1 query functions (``geof:``, ``http://www.opengis.net/def/function/geosparql/``)
over ``geo:wktLiteral``, registered as built-in extension functions (``extensions``).

- the Simple Features relations ``sfEquals``, ``sfDisjoint``, ``sfIntersects``, ``sfTouches``,
  ``sfCrosses``, ``sfWithin``, ``sfContains``, ``sfOverlaps`` (xsd:boolean): the DE-9IM patterns
  of the standard's Simple Features relation family, as GEOS (shapely) implements them;
- ``distance(geom1, geom2, unit)`` (xsd:double): in a geographic CRS, metres and kilometres are the
  geodesic distance on the CRS's ellipsoid (pyproj's ``Geod``, Karney's algorithm; WGS84 for CRS84
  and EPSG:4326) between the two points nearest in the coordinates' plane, exact for two points;
  degrees and radians are the planar distance in the coordinates themselves. In a projected CRS,
  metres and kilometres are the planar distance in its linear unit, and an angle is an error;
- ``buffer(geom, radius, unit)`` and ``envelope(geom)`` (``geo:wktLiteral``, in geom's CRS, written
  with geom's CRS IRI and axis order). A metric buffer in a geographic CRS is taken in the
  azimuthal equidistant projection around the centre of geom's envelope (on the ellipsoid, through
  ``Geod``): exact from that centre, so exact for a point.

A literal is ``[<crs IRI> ]WKT`` (Req. ``/req/geometry-extension/wkt-literal``); without an IRI its
CRS is CRS84, WGS84 longitude-latitude (``wkt-literal-default-srs``); its coordinates are in the
axis order of its CRS (``wkt-axis-order``), so ``<http://www.opengis.net/def/crs/EPSG/0/4326>
POINT(53.27 -9.05)`` is latitude first. Every CRS is read from PROJ's database by authority and
code (``http://www.opengis.net/def/crs/{authority}/{version}/{code}``), and geometries are kept in
(east, north) order: a CRS whose first axis points north or south has its coordinates swapped on the
way in and back on the way out. An empty WKT is the empty geometry (``wkt-literal-empty``).

Two geometries in different CRSs: "calculations are in the spatial reference system of geom1"
(the standard, for every function of two geometries), so geom2 is converted to geom1's CRS by PROJ
(no conversion at all between CRSs that differ only by axis order, such as CRS84 and EPSG:4326);
where PROJ knows no conversion, the call is an error.

Expression errors (FILTER false, BIND unbound): an argument that is not a ``geo:wktLiteral``, WKT
that GEOS cannot read, nested more than ``MAX_NESTING`` deep or with a coordinate that is not finite, a CRS IRI that PROJ does not know
or that is neither geographic in degrees nor projected, a unit that is not one of ``UNITS``, a
non-finite radius or result, and any error GEOS or PROJ raise during a computation. Geometries that
GEOS reads but the Simple Features rules call invalid (a self-crossing ring) are used as they are,
as PostGIS and Jena do.

Parsed literals are kept in an LRU keyed by the lexical form (``_parse``), so a FILTER over a
fixed fence polygon parses it once. They are not GEOS "prepared" geometries: those build lazy
indexes that are not thread-safe (libgeos/geos#825), and the cache is shared by the engine and the
HTTP server's threads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import pyproj
import shapely
from pyoxigraph import Literal, NamedNode
from pyproj.exceptions import CRSError, ProjError
from shapely.errors import GEOSException

from cqels_endpoint.runtime.functions.values import numeric
from cqels_endpoint.runtime.functions.xsd import ExpressionError

GEOF = "http://www.opengis.net/def/function/geosparql/"
WKT_LITERAL = "http://www.opengis.net/ont/geosparql#wktLiteral"
CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
UOM = "http://www.opengis.net/def/uom/OGC/1.0/"
_ANYURI = "http://www.w3.org/2001/XMLSchema#anyURI"
_WKT = NamedNode(WKT_LITERAL)

# Unit IRI -> (is a length, metres or radians per unit).
UNITS = {
    UOM + "metre": (True, 1.0),
    UOM + "kilometre": (True, 1000.0),
    UOM + "degree": (False, math.pi / 180),
    UOM + "radian": (False, 1.0),
}

_LITERAL = re.compile(r"\s*(?:<([^>]*)>)?(.*)", re.DOTALL)
_CRS_IRI = re.compile(r"http://www\.opengis\.net/def/crs/([A-Za-z0-9_.-]+)/[A-Za-z0-9_.-]+/([A-Za-z0-9_.-]+)")
_EMPTY = shapely.from_wkt("GEOMETRYCOLLECTION EMPTY")
# GEOS's WKT reader recurses per parenthesis and overflows the C stack (a segfault) on deeply nested
# collections; real WKT nests 4 deep (a multipolygon in a collection).
MAX_NESTING = 32


@dataclass(frozen=True, eq=False)
class Frame:
    """A CRS as the functions use it: ``geod`` for a geographic CRS in degrees, else ``metres``
    per unit of a projected one; ``swapped`` if its first axis is a northing or a latitude."""

    iri: str
    crs: pyproj.CRS
    swapped: bool
    geod: pyproj.Geod | None
    metres: float


class Geometry(NamedTuple):
    shape: shapely.Geometry  # in (east, north) order
    frame: Frame
    written: str | None  # the CRS IRI as the literal wrote it (None: the default, CRS84)


# --------------------------------------------------------------------------- the functions


def _relation(predicate: Callable[[shapely.Geometry, shapely.Geometry], bool]) -> Callable[[object, object], bool]:
    def relation(geom1, geom2) -> bool:
        first, second, _ = _pair(geom1, geom2)
        try:
            return bool(predicate(first, second))
        except GEOSException:
            raise ExpressionError from None

    return relation


def distance(geom1, geom2, unit) -> float:
    first, second, frame = _pair(geom1, geom2)
    length, per_unit = _unit(unit)
    try:
        if frame.geod is not None and length:
            value = _geodesic_distance(first, second, frame.geod) / per_unit
        elif frame.geod is not None:
            value = math.radians(shapely.distance(first, second)) / per_unit
        elif length:
            value = shapely.distance(first, second) * frame.metres / per_unit
        else:
            raise ExpressionError
    except GEOSException:
        raise ExpressionError from None
    return _finite(value)


def buffer(geom, radius, unit) -> Literal:
    geometry = _geometry(geom)
    try:
        size = _finite(float(numeric(radius)[1]))
    except OverflowError:  # an integer or decimal past the double range
        raise ExpressionError from None
    length, per_unit = _unit(unit)
    frame = geometry.frame
    try:
        if frame.geod is not None and length:
            shape = _geodesic_buffer(geometry.shape, size * per_unit, frame.geod)
        elif frame.geod is not None:
            shape = shapely.buffer(geometry.shape, math.degrees(size * per_unit))
        elif length:
            shape = shapely.buffer(geometry.shape, size * per_unit / frame.metres)
        else:
            raise ExpressionError
    except (GEOSException, ProjError):
        raise ExpressionError from None
    return _literal(shape, geometry)


def envelope(geom) -> Literal:
    geometry = _geometry(geom)
    return _literal(shapely.envelope(geometry.shape), geometry)


FUNCTIONS: dict[str, Callable[..., object]] = {
    GEOF + "sfEquals": _relation(shapely.equals),
    GEOF + "sfDisjoint": _relation(shapely.disjoint),
    GEOF + "sfIntersects": _relation(shapely.intersects),
    GEOF + "sfTouches": _relation(shapely.touches),
    GEOF + "sfCrosses": _relation(shapely.crosses),
    GEOF + "sfWithin": _relation(shapely.within),
    GEOF + "sfContains": _relation(shapely.contains),
    GEOF + "sfOverlaps": _relation(shapely.overlaps),
    GEOF + "distance": distance,
    GEOF + "buffer": buffer,
    GEOF + "envelope": envelope,
}
"""The ``geof:`` functions by IRI, registered by ``extensions`` as built-ins."""


# --------------------------------------------------------------------------- geodesy


def _geodesic_distance(first: shapely.Geometry, second: shapely.Geometry, geod: pyproj.Geod) -> float:
    if shapely.intersects(first, second):
        return 0.0
    line = shapely.shortest_line(first, second)
    if line is None:  # an empty geometry
        raise ExpressionError
    (lon1, lat1), (lon2, lat2) = shapely.get_coordinates(line)
    return geod.inv(lon1, lat1, lon2, lat2)[2]  # NaN past a pole: not finite, an error


def _geodesic_buffer(shape: shapely.Geometry, metres: float, geod: pyproj.Geod) -> shapely.Geometry:
    """``shape`` buffered by ``metres`` in the azimuthal equidistant projection (on ``geod``'s
    ellipsoid) centred on its envelope: there a point's distance and azimuth from the centre are
    the geodesic ones. The projection ends at the antipode: a radius of half the equator or more,
    or a latitude past a pole, is an error."""
    if shapely.is_empty(shape):
        return shapely.buffer(shape, metres)
    west, south, east, north = shapely.bounds(shape)
    if abs(metres) >= math.pi * geod.a or south < -90 or north > 90:
        raise ExpressionError
    lon0, lat0 = (west + east) / 2, (south + north) / 2

    def project(lonlat: np.ndarray) -> np.ndarray:
        count = len(lonlat)
        azimuth, _, far = geod.inv(np.full(count, lon0), np.full(count, lat0), lonlat[:, 0], lonlat[:, 1])
        azimuth = np.radians(azimuth)
        return np.column_stack((far * np.sin(azimuth), far * np.cos(azimuth)))

    def unproject(xy: np.ndarray) -> np.ndarray:
        count = len(xy)
        azimuth = np.degrees(np.arctan2(xy[:, 0], xy[:, 1]))
        lon, lat, _ = geod.fwd(np.full(count, lon0), np.full(count, lat0), azimuth, np.hypot(xy[:, 0], xy[:, 1]))
        # Longitudes continuous around the centre's (fwd wraps them to [-180, 180]).
        return np.column_stack((lon0 + (lon - lon0 + 180) % 360 - 180, lat))

    with np.errstate(all="ignore"):
        return shapely.transform(shapely.buffer(shapely.transform(shape, project), metres), unproject)


# --------------------------------------------------------------------------- arguments and results


def _geometry(term) -> Geometry:
    if type(term) is not Literal or term.datatype != _WKT:
        raise ExpressionError
    geometry = _parse(term.value)
    if geometry is None:
        raise ExpressionError
    return geometry


@lru_cache(maxsize=4096)
def _parse(lexical: str) -> Geometry | None:
    """The geometry of a wktLiteral's lexical form, None if it has none (cached: None too)."""
    written, text = _LITERAL.fullmatch(lexical).groups()
    frame = _frame(CRS84 if written is None else written)
    if frame is None:
        return None
    if not text.strip():
        return Geometry(_EMPTY, frame, written)
    if text.count("(") > MAX_NESTING and _nesting(text) > MAX_NESTING:
        return None
    try:
        with np.errstate(all="ignore"):  # a coordinate past the double range overflows to inf
            shape = shapely.from_wkt(text)
    except GEOSException:
        return None
    if not np.isfinite(shapely.get_coordinates(shape)).all():
        return None
    return Geometry(_swap(shape) if frame.swapped else shape, frame, written)


def _nesting(text: str) -> int:
    """The deepest nesting of parentheses in ``text``."""
    codes = np.frombuffer(text.encode(), dtype=np.uint8)
    return int(np.cumsum((codes == ord("(")).astype(np.int64) - (codes == ord(")"))).max())


@lru_cache(maxsize=256)
def _frame(iri: str) -> Frame | None:
    found = _CRS_IRI.fullmatch(iri)
    if found is None:
        return None
    try:
        crs = pyproj.CRS.from_authority(*found.groups())
    except CRSError:
        return None
    axes = crs.axis_info
    if len(axes) < 2:
        return None
    swapped = axes[0].direction.lower() in ("north", "south")
    if crs.is_geographic and axes[0].unit_name == "degree":
        return Frame(iri, crs, swapped, crs.get_geod(), 0.0)
    if crs.is_projected:
        return Frame(iri, crs, swapped, None, axes[0].unit_conversion_factor)
    return None


def _pair(geom1, geom2) -> tuple[shapely.Geometry, shapely.Geometry, Frame]:
    """Both geometries in geom1's CRS (the standard: "calculations are in the spatial reference
    system of geom1"), and that CRS."""
    first, second = _geometry(geom1), _geometry(geom2)
    if first.frame.iri == second.frame.iri:
        return first.shape, second.shape, first.frame
    convert = _conversion(second.frame.iri, first.frame.iri)
    if convert is None:
        raise ExpressionError
    if convert is _unchanged:
        return first.shape, second.shape, first.frame
    try:
        with np.errstate(all="ignore"):
            shape = shapely.transform(second.shape, convert)
    except ProjError:
        raise ExpressionError from None
    return first.shape, shape, first.frame


@lru_cache(maxsize=256)
def _conversion(source: str, target: str) -> Callable[[np.ndarray], np.ndarray] | None:
    """The conversion of (east, north) coordinates from ``source`` to ``target`` (CRS IRIs whose
    frames exist), None where PROJ knows none."""
    source_crs, target_crs = _frame(source).crs, _frame(target).crs
    if source_crs.equals(target_crs, ignore_axis_order=True):
        return _unchanged
    try:
        transformer = pyproj.Transformer.from_crs(source_crs, target_crs, always_xy=True, only_best=True)
    except ProjError:
        return None

    def convert(xy: np.ndarray) -> np.ndarray:
        return np.column_stack(transformer.transform(xy[:, 0], xy[:, 1], errcheck=True))

    return convert


def _unchanged(xy: np.ndarray) -> np.ndarray:
    return xy


def _swap(shape: shapely.Geometry) -> shapely.Geometry:
    return shapely.transform(shape, lambda xy: xy[:, ::-1])


def _unit(term) -> tuple[bool, float]:
    if type(term) is NamedNode:
        unit = UNITS.get(term.value)
    elif type(term) is Literal and term.datatype.value == _ANYURI:
        unit = UNITS.get(term.value.strip())
    else:
        unit = None
    if unit is None:
        raise ExpressionError
    return unit


def _finite(value: float) -> float:
    value = float(value)  # GEOS and PROJ answer NumPy scalars
    if not math.isfinite(value):
        raise ExpressionError
    return value


def _literal(shape: shapely.Geometry, geometry: Geometry) -> Literal:
    """``shape`` as a wktLiteral in ``geometry``'s CRS, axis order and written IRI."""
    if not np.isfinite(shapely.get_coordinates(shape)).all():
        raise ExpressionError
    text = shapely.to_wkt(_swap(shape) if geometry.frame.swapped else shape, rounding_precision=-1)
    return Literal(text if geometry.written is None else f"<{geometry.written}> {text}", datatype=_WKT)
