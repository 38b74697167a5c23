"""The DEBS 2015 Grand Challenge sample (``examples/data/debs2015``: the first 5,000 NYC taxi trips of
2013-01-01, public NYC TLC data) as stream events, with the RDF mapping of that folder's README
(``cqels_endpoint.cli.replay.debs2015``, the mapping ``cqels replay --mapping debs2015`` uses): one event
per trip on ``DEBS_TRIPS`` at its drop-off time, subject ``:trip<line number>``."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from cqels_endpoint.cli.replay import DEBS_PREDICATES, DEBS_TRIPS, debs2015

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "data" / "debs2015" / "trips-2013-01-01-head5000.csv"
PREDICATES = DEBS_PREDICATES  # every column: the whole trip record


def trip_events(limit: int, predicates: tuple[str, ...]) -> list[list]:
    """The first ``limit`` trips as ``["push", DEBS_TRIPS, drop-off ms, N-Triples]`` steps of
    ``incremental_oracle.Scenario``, each with the triples of ``predicates`` only."""
    return [["push", DEBS_TRIPS, event.time, event.data] for event in islice(debs2015(SAMPLE, predicates), limit)]
