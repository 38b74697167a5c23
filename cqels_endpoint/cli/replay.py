"""Replaying a CSV file as stream events: the row → RDF mappings of ``cqels replay`` and its pacing.

``MAPPINGS`` names each mapping; today ``debs2015``, the mapping of the DEBS 2015 Grand Challenge
taxi trips written down in ``examples/data/debs2015/README.md``: one event per CSV row on
``<http://debs2015.org/streams/trips>`` at its drop-off time, subject ``:trip<line number>``.

>>> row = ["07290D3599E7A0D62097A346EFCC1FB5", "E7750A37CAB07D0DFF0AF7E3573AC141", "2013-01-01 00:00:00",
...        "2013-01-01 00:02:00", "120", "0.44", "-73.956528", "40.716976", "-73.962440", "40.715008", "CSH",
...        "3.50", "0.50", "0.50", "0.00", "0.00", "4.50"]
>>> event = _debs_event(1, row, predicates=("taxi", "tip"))
>>> event.line, event.time
(1, 1356998520000)
>>> print(event.data)  # doctest: +ELLIPSIS
<http://debs2015.org/taxi#trip1> <http://debs2015.org/taxi#taxi> <http://debs2015.org/taxi#taxi_07290D3599E7A0D62097A346EFCC1FB5> .
<http://debs2015.org/taxi#trip1> <http://debs2015.org/taxi#tip> "0.00"^^<http://www.w3.org/2001/XMLSchema#double> .
"""

from __future__ import annotations

import csv
import time as _time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DEBS_TAXI = "http://debs2015.org/taxi#"
DEBS_TRIPS = "http://debs2015.org/streams/trips"
_XSD = "http://www.w3.org/2001/XMLSchema#"

# predicate → (CSV column, how its object is written: an IRI prefix ending in _, or an XSD type)
_DEBS_COLUMNS = {
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
DEBS_PREDICATES = tuple(_DEBS_COLUMNS)  # every column: the whole trip record


@dataclass(frozen=True)
class ReplayEvent:
    """One event of a replayed file: its ``line`` in the file, ``time`` in ms, ``data`` as N-Triples."""

    line: int
    time: int
    data: str


class MappingError(ValueError):
    """A row the mapping cannot read; the message names its line."""


def debs2015(path: str | Path, predicates: tuple[str, ...] = DEBS_PREDICATES) -> Iterator[ReplayEvent]:
    """The trips of a DEBS 2015 CSV file as events, each with the triples of ``predicates`` only."""
    unknown = set(predicates) - set(_DEBS_COLUMNS)
    if unknown:
        msg = f"unknown DEBS 2015 predicates {sorted(unknown)}; the mapping has {', '.join(DEBS_PREDICATES)}"
        raise ValueError(msg)
    with Path(path).open(encoding="utf-8", newline="") as lines:
        for number, row in enumerate(csv.reader(lines), 1):
            if len(row) != len(_DEBS_COLUMNS):
                msg = f"{path}, line {number}: {len(row)} columns, the DEBS 2015 trip records have {len(_DEBS_COLUMNS)}"
                raise MappingError(msg)
            try:
                yield _debs_event(number, row, predicates)
            except ValueError as error:
                raise MappingError(f"{path}, line {number}: {error}") from None


def _debs_event(number: int, row: list[str], predicates: tuple[str, ...]) -> ReplayEvent:
    trip = f"<{DEBS_TAXI}trip{number}>"
    triples = "\n".join(
        f"{trip} <{DEBS_TAXI}{name}> {_debs_object(row[_DEBS_COLUMNS[name][0]], _DEBS_COLUMNS[name][1])} ."
        for name in predicates
    )
    return ReplayEvent(number, int(_debs_time(row[3]).timestamp() * 1000), triples)


def _debs_time(text: str) -> datetime:
    # The CSV times are local New York time; the mapping reads them as UTC.
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def _debs_object(value: str, kind: str) -> str:
    if kind.endswith("_"):
        return f"<{DEBS_TAXI}{kind}{value}>"
    if kind == "dateTime":
        return f'"{_debs_time(value).strftime("%Y-%m-%dT%H:%M:%SZ")}"^^<{_XSD}dateTime>'
    if kind == "string":
        return f'"{value}"'
    return f'"{value}"^^<{_XSD}{kind}>'


@dataclass(frozen=True)
class Mapping:
    """A named row → RDF mapping: the stream its events go to unless told otherwise, and its reader."""

    name: str
    stream: str
    events: Callable[[str | Path], Iterator[ReplayEvent]]


MAPPINGS: dict[str, Mapping] = {"debs2015": Mapping("debs2015", DEBS_TRIPS, debs2015)}


def paced(
    events: Iterable[ReplayEvent],
    speed: float,
    batch_size: int,
    *,
    clock: Callable[[], float] = _time.monotonic,
    sleep: Callable[[float], None] = _time.sleep,
) -> Iterator[list[ReplayEvent]]:
    """``events`` in batches of at most ``batch_size``, each handed out when its first event is
    due: ``speed`` × real time from the first event's timestamp (``speed`` 0: no waiting at all).
    A batch holds the events already due when it is cut, so a slow consumer catches up in bigger
    batches rather than falling further behind.

    >>> events = [ReplayEvent(i, t, "") for i, t in enumerate([0, 0, 1000, 3000], 1)]
    >>> now = [0.0]
    >>> batches = paced(events, 2, 10, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    >>> [([e.line for e in batch], now[0]) for batch in batches]
    [([1, 2], 0.0), ([3], 0.5), ([4], 1.5)]
    """
    if speed < 0:
        msg = f"the replay speed must be >= 0 (0: as fast as possible), not {speed}"
        raise ValueError(msg)
    if batch_size < 1:
        msg = f"the batch size must be at least 1, not {batch_size}"
        raise ValueError(msg)
    started = clock()
    first_time: int | None = None
    batch: list[ReplayEvent] = []
    for event in events:
        if first_time is None:
            first_time = event.time
        due = 0.0 if speed == 0 else (event.time - first_time) / 1000 / speed
        if batch and (len(batch) >= batch_size or due > clock() - started):
            yield batch
            batch = []
        wait = due - (clock() - started)
        if not batch and wait > 0:
            sleep(wait)
        batch.append(event)
    if batch:
        yield batch
