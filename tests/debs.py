"""The DEBS 2015 Grand Challenge sample (``examples/data/debs2015``: the first 5,000 NYC taxi trips of
2013-01-01, public NYC TLC data) as stream events, with the RDF mapping of that folder's README: one
event per trip on ``TRIPS`` at its drop-off time, subject ``:trip<line number>``."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "data" / "debs2015" / "trips-2013-01-01-head5000.csv"
TAXI = "http://debs2015.org/taxi#"
TRIPS = "http://debs2015.org/streams/trips"
_XSD = "http://www.w3.org/2001/XMLSchema#"

# predicate → (CSV column, how its object is written)
_MAPPING = {
    "taxi": (0, "taxi_"),
    "license": (1, "license_"),
    "pickupTime": (2, "dateTime"),
    "dropoffTime": (3, "dateTime"),
    "tripTime": (4, "integer"),
    "distance": (5, "double"),
    "pickLon": (6, "double"),
    "pickLat": (7, "double"),
    "dropLon": (8, "double"),
    "dropLat": (9, "double"),
    "paymentType": (10, "string"),
    "fare": (11, "double"),
    "surcharge": (12, "double"),
    "mta": (13, "double"),
    "tip": (14, "double"),
    "tolls": (15, "double"),
    "total": (16, "double"),
}
PREDICATES = tuple(_MAPPING)  # every column: the whole trip record


def _time(text: str) -> datetime:
    # The CSV times are local New York time; the mapping reads them as UTC.
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def _object(value: str, kind: str) -> str:
    if kind.endswith("_"):
        return f"<{TAXI}{kind}{value}>"
    if kind == "dateTime":
        return f'"{_time(value).strftime("%Y-%m-%dT%H:%M:%SZ")}"^^<{_XSD}dateTime>'
    if kind == "string":
        return f'"{value}"'
    return f'"{value}"^^<{_XSD}{kind}>'


def trip_events(limit: int, predicates: tuple[str, ...]) -> list[list]:
    """The first ``limit`` trips as ``["push", TRIPS, drop-off ms, N-Triples]`` steps of
    ``incremental_oracle.Scenario``, each with the triples of ``predicates`` only."""
    events = []
    with SAMPLE.open(encoding="utf-8") as lines:
        for number, row in enumerate(csv.reader(lines), 1):
            if number > limit:
                break
            trip = f"<{TAXI}trip{number}>"
            triples = "\n".join(
                f"{trip} <{TAXI}{name}> {_object(row[_MAPPING[name][0]], _MAPPING[name][1])} ." for name in predicates
            )
            events.append(["push", TRIPS, int(_time(row[3]).timestamp() * 1000), triples])
    return events
