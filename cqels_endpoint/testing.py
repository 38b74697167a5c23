"""Helpers for testing continuous queries: list-backed streams, a manual clock, ``run``, timelines.

Run a query over a list of events and collect what it emits:

>>> from cqels_endpoint.testing import Push, run
>>> query = '''SELECT ?who WHERE {
...   STREAM <http://ex.org/door> [RANGE 10ms] { ?who <http://ex.org/enters> ?room } }'''
>>> emissions = run(query, [
...     Push("http://ex.org/door", 1, "<http://ex.org/ann> <http://ex.org/enters> <http://ex.org/hall> ."),
...     Push("http://ex.org/door", 4, "<http://ex.org/bob> <http://ex.org/enters> <http://ex.org/hall> ."),
... ], advance_to=12)
>>> [(e.time, e.r2s, [row["who"].value for row in e.rows]) for e in emissions]
[(1, 'ISTREAM', ['http://ex.org/ann']), (4, 'ISTREAM', ['http://ex.org/bob'])]
>>> [(e.time, len(e.rows)) for e in run(query, [
...     Push("http://ex.org/door", 1, "<http://ex.org/ann> <http://ex.org/enters> <http://ex.org/hall> ."),
... ], r2s="DSTREAM", advance_to=12)]
[(12, 1)]

Window tests draw their input as a timeline, one character per millisecond, a letter per event
(``timeline``), and read each evaluation's window contents back as letters (``seen``):

>>> events = timeline("a--b----c")
>>> for e in events[:2]:
...     print(e.time, e.data)
0 <urn:cqels:test:a> <urn:cqels:test:at> "0"^^<http://www.w3.org/2001/XMLSchema#integer> .
3 <urn:cqels:test:b> <urn:cqels:test:at> "3"^^<http://www.w3.org/2001/XMLSchema#integer> .
>>> seen(run(window_query("[RANGE 4ms SLIDE 2ms]"), events, r2s="RSTREAM", advance_to=10))
[(2, 'a'), (4, 'ab'), (6, 'b'), (8, ''), (10, 'c')]
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyoxigraph as ox

from cqels_endpoint.engine import Emission, Engine

TEST_STREAM = "urn:cqels:test:stream"
"""The stream of ``timeline`` events and ``window_query`` unless told otherwise."""


class ManualClock:
    """An arrival clock that only moves when told to, for ``Engine(clock=...)``.

    >>> clock = ManualClock(100)
    >>> engine = Engine(clock=clock)
    >>> clock.advance(5)
    105
    >>> clock()
    105
    """

    def __init__(self, start: int = 0):
        self.now = start

    def __call__(self) -> int:
        return self.now

    def set(self, time: int) -> int:
        self.now = time
        return self.now

    def advance(self, delta: int) -> int:
        self.now += delta
        return self.now


@dataclass(frozen=True)
class Push:
    """``Engine.push(stream, data, time)`` as a value (``time=None``: the run's manual clock)."""

    stream: str
    time: int | None
    data: object


@dataclass(frozen=True)
class Advance:
    """``Engine.advance(time)`` as a value."""

    time: int


@dataclass
class ListStream:
    """A stream backed by a list of ``(time, data)`` pairs; ``run`` merges several by time.

    >>> rfid = ListStream("http://ex.org/rfid", [(0, "<http://ex.org/a> <http://ex.org/p> 1 .")])
    >>> rfid.pushes()[0].time
    0
    """

    iri: str
    events: list[tuple[int, object]] = field(default_factory=list)

    def append(self, time: int, data: object) -> None:
        self.events.append((time, data))

    def pushes(self) -> list[Push]:
        return [Push(self.iri, time, data) for time, data in self.events]


Step = Push | Advance | ListStream | tuple


def _steps(events: Iterable[Step]) -> list[Push | Advance]:
    """Plain steps in order; the events of ``ListStream``s are merged by time, stably (ties keep the
    order of the streams in ``events``), and placed where the first ``ListStream`` was."""
    steps: list[Push | Advance] = []
    streams: list[ListStream] = []
    merged_at = None
    for item in events:
        if isinstance(item, ListStream):
            if merged_at is None:
                merged_at = len(steps)
            streams.append(item)
        elif isinstance(item, tuple):
            steps.append(Push(*item))
        else:
            steps.append(item)
    if streams:
        keyed = [[((p.time, i, j), p) for j, p in enumerate(s.pushes())] for i, s in enumerate(streams)]
        steps[merged_at:merged_at] = [p for _, p in heapq.merge(*keyed, key=lambda pair: pair[0])]
    return steps


def _static(static):
    if static is None or not isinstance(static, (str, bytes)):
        return static
    from cqels_endpoint.oxigraph.requests import open_store

    store = open_store()
    store.load(static.encode() if isinstance(static, str) else static, media_type="application/trig")
    return store


def run(
    query: str,
    events: Iterable[Step],
    static=None,
    mode: str = "recompute",
    r2s: str | None = None,
    advance_to: int | None = None,
    *,
    lateness_ms: int = 0,
    origin_ms: int | None = None,
    dialect: str | None = None,
) -> list[Emission]:
    """Registers ``query`` on a fresh engine, feeds it ``events`` in order and returns its emissions.

    ``events``: ``Push``/``Advance`` values, ``(stream, time, data)`` tuples, or ``ListStream``s.
    ``static``: a ``StaticStore``, a ``pyoxigraph.Store``, or TriG/Turtle text loaded into a new
    store. ``advance_to``: a final ``Engine.advance``. Events pushed with ``time=None`` are
    stamped by a manual clock that reads the last timestamp seen. ``dialect``: as ``Engine.register``'s.
    """
    clock = ManualClock()
    engine = Engine(_static(static), lateness_ms, clock=clock)
    registered = engine.register(query, r2s=r2s, mode=mode, origin_ms=origin_ms, dialect=dialect)
    emissions: list[Emission] = []
    registered.subscribe(emissions.append)
    for step in _steps(events):
        if isinstance(step, Advance):
            clock.set(max(clock(), step.time))
            engine.advance(step.time)
        else:
            if step.time is not None:
                clock.set(max(clock(), step.time))
            engine.push(step.stream, step.data, step.time)
    if advance_to is not None:
        engine.advance(advance_to)
    return emissions


# --------------------------------------------------------------------------- timelines


def timeline(drawing: str, stream: str = TEST_STREAM, unit_ms: int = 1, start: int = 0) -> list[Push]:
    """Events drawn one character per ``unit_ms``: each letter ``x`` is an event at its column
    holding ``<urn:cqels:test:x> <urn:cqels:test:at> t``; any other character is empty time."""
    pushes = []
    for column, char in enumerate(drawing):
        if char.isalpha():
            time = start + column * unit_ms
            data = f'<urn:cqels:test:{char}> <urn:cqels:test:at> "{time}"^^<http://www.w3.org/2001/XMLSchema#integer> .'
            pushes.append(Push(stream, time, data))
    return pushes


def window_query(window: str, stream: str = TEST_STREAM) -> str:
    """A query that reports the events in one window of ``stream`` (as ``?e``)."""
    return f"SELECT ?e WHERE {{ STREAM <{stream}> {window} {{ ?e <urn:cqels:test:at> ?t }} }}"


def letter(term: ox.NamedNode) -> str:
    """The letter of a ``timeline`` event IRI."""
    return term.value.rsplit(":", 1)[1]


def seen(emissions: Iterable[Emission], var: str = "e") -> list[tuple[int, str]]:
    """Each emission as ``(time, the sorted letters of its rows)``."""
    return [(e.time, "".join(sorted(letter(row[var]) for row in e.rows if var in row))) for e in emissions]
