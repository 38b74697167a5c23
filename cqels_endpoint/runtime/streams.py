"""Stream events: input conversion, per-stream clocks, lateness buffering, watermarks.

Per stream IRI timestamps must not decrease, up to a lateness ``L`` (``Engine(lateness_ms=L)``):

- the stream's *watermark* is its latest timestamp − ``L`` (an ``Engine.advance(τ)`` also moves
  every stream's latest timestamp to at least ``τ``);
- an event older than the watermark raises ``LateEventError`` and is counted; nothing is applied
  (for a batch: nothing of it);
- with ``L = 0`` accepted events are released at once; with ``L > 0`` they wait in a buffer and are
  released in timestamp order once the watermark reaches them, equal timestamps in arrival order,
  so the queries see them as if they had arrived in order, ``L`` later.

Events are released one at a time and each released event is one tick, also when several share a
timestamp.

A batch (``Streams.push_batch``) is checked whole before any of it is accepted: one late event
rejects the batch, so a client never has to guess which prefix of it was applied.

An event's triples become term ids once, when its batch is accepted (``Streams.push_batch`` calls
the engine's ``TermDictionary.encode_triples``), and travel as an ``array('q')``; an event released
at once keeps only the triples its stream's predicate filter passes (``Streams.push_batch``). Before that,
``event_triples`` reads them outside the engine's lock: plain N-Triples text with the compiled
reader (``_reader.pyx``) straight to the forms the dictionary keys terms by, pyoxigraph triples as
they are, anything else through ``to_triples``.

**Time range.** A timestamp is integer milliseconds since 1970-01-01T00:00:00Z from ``TIME_MIN_MS``
(0001-01-01T00:00:00Z, the first instant of xsd:dateTime year 0001; earlier times, 1970 included, are
negative and accepted) to ``TIME_MAX_MS`` (4199-11-24T01:22:57.663Z, the last instant an inline
xsd:dateTime id holds: ``runtime/encoding.py``), so every evaluation time ``NOW()`` turns into a
literal is a dateTime the engine keeps inline, and window bounds stay far inside int64. Any other
timestamp is a ``TimeRangeError`` (a ``ValueError``) naming it before anything reaches a clock.

**Future bound.** With ``max_future_ms`` set (None or 0: off), an event more than that ahead of the
arrival clock (the wall clock of the server) is a ``FutureEventError``: its batch is rejected whole
and every such event counted, like a late one.

Each stream also keeps the statistics of ``GET /streams`` and ``/metrics``: events accepted
(``accepted_events``), of which ``out_of_order_events`` came after a later one of their stream and
were reordered within the lateness; events rejected as too late (``late_events``) or too far ahead
(``future_events``); pushes rejected as malformed, their body or a timestamp unreadable or out of
range (``malformed_pushes``, counted by the HTTP layer, which parses bodies); and its arrivals over
the last minute (``RATE_WINDOW_MS``) for the ingestion rate. ``StreamClock.state``/``restore`` carry
the clock and counters across a restart (``engine.clocks``).
"""

from __future__ import annotations

import heapq
import itertools
import re
import time as _time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import pyoxigraph as ox

from cqels_endpoint.errors import CqelsError, LateEventError, RdfSyntaxError
from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python

if use_pure_python():
    read_ntriples = TripleForms = None
else:
    with compiled_imports("N-Triples reader"):
        from cqels_endpoint.runtime._reader import TripleForms, read_ntriples

XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
XSD_DATETIMESTAMP = "http://www.w3.org/2001/XMLSchema#dateTimeStamp"
RATE_WINDOW_MS = 60_000
# The timestamps the engine holds (module docstring, "Time range").
TIME_MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z
TIME_MAX_MS = (1 << 46) - 1  # 4199-11-24T01:22:57.663Z: the inline xsd:dateTime range of runtime/encoding.py
TIME_RANGE = f"{TIME_MIN_MS} (0001-01-01T00:00:00Z) to {TIME_MAX_MS} (4199-11-24T01:22:57.663Z) ms"


class TimeRangeError(ValueError):
    """A timestamp outside ``TIME_MIN_MS`` … ``TIME_MAX_MS``."""


class FutureEventError(CqelsError):
    """Events more than ``max_future_ms`` ahead of the arrival clock (``now``): the batch was
    rejected whole and every such event counted. ``index``: the first of them in the batch."""

    def __init__(self, stream: str, time: int, now: int, max_future_ms: int, *, index: int = 0, future_in_batch: int = 1):
        self.stream = stream
        self.time = time
        self.now = now
        self.max_future_ms = max_future_ms
        self.index = index
        self.future_in_batch = future_in_batch
        super().__init__(
            f"event at {time} ms on stream <{stream}> is {time - now} ms ahead of the server's clock ({now} ms), "
            f"more than max_future_ms={max_future_ms}; check the client's clock or raise --max-future-ms"
        )


class UnknownStreamError(CqelsError, KeyError):
    """No event, advance or rejection ever named this stream."""

    def __str__(self) -> str:
        return str(self.args[0])


def check_time(millis: int, given: str | None = None) -> int:
    """``millis`` if the engine holds it (module docstring, "Time range"), else ``TimeRangeError``
    naming it (and ``given``, the text it was read from).

    >>> check_time(-1), check_time(TIME_MAX_MS) == TIME_MAX_MS
    (-1, True)
    >>> check_time(99999999999999999999999)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cqels_endpoint.runtime.streams.TimeRangeError: 99999999999999999999999 ms is outside the timestamps ...
    """
    if not TIME_MIN_MS <= millis <= TIME_MAX_MS:
        value = f"{millis} ms" if given is None else f"{given!r} ({millis} ms)"
        msg = f"{value} is outside the timestamps the engine holds, {TIME_RANGE}"
        raise TimeRangeError(msg)
    return millis


class Event(NamedTuple):
    """One stream event: a set of triples with one timestamp; ``arrival`` numbers pushes engine-wide.

    The triples come as term ids, three per triple (``TermDictionary.encode_triples``), each holding
    one dictionary reference until the engine has dispatched the event. ``received`` is when the
    engine accepted it (``time.perf_counter()``): what a query's push-to-emission latency counts from.
    """

    stream: str
    time: int
    ids: Sequence[int]
    arrival: int
    received: float = 0.0

    def sort_key(self) -> tuple[int, int]:
        return self.time, self.arrival


class ArrivalRate:
    """Arrivals over the last ``RATE_WINDOW_MS`` of the arrival clock, in one-second buckets, so
    the memory it takes does not grow with the rate.

    >>> rate = ArrivalRate()
    >>> rate.record(1_000, 30); rate.record(30_500, 15)
    >>> rate.count(60_000), rate.count(62_000), rate.count(100_000)
    (45, 15, 0)
    """

    _BUCKET_MS = 1_000

    def __init__(self) -> None:
        self._buckets: deque[list[int]] = deque()  # [bucket start ms, arrivals], oldest first

    def record(self, now_ms: int, events: int = 1) -> None:
        start = now_ms - now_ms % self._BUCKET_MS
        if self._buckets and self._buckets[-1][0] >= start:
            # The arrival clock never runs backwards for long; a step back joins the newest bucket.
            self._buckets[-1][1] += events
        else:
            self._buckets.append([start, events])
            self._forget(now_ms)  # only a new bucket grows the deque (count() forgets first)

    def count(self, now_ms: int) -> int:
        """Arrivals in the minute before ``now_ms`` (whole buckets: up to a second more)."""
        self._forget(now_ms)
        return sum(events for _, events in self._buckets)

    def _forget(self, now_ms: int) -> None:
        while self._buckets and self._buckets[0][0] + self._BUCKET_MS <= now_ms - RATE_WINDOW_MS:
            self._buckets.popleft()


class StreamClock:
    """The clock of one stream: latest timestamp, watermark, lateness buffer and counters."""

    # What ``state`` saves and ``restore`` reads back: the clock and its counters.
    _STATE = ("latest", "accepted_events", "out_of_order_events", "late_events", "future_events", "malformed_pushes")

    def __init__(self, iri: str, lateness_ms: int = 0):
        self.iri = iri
        self.lateness_ms = lateness_ms
        self.latest: int | None = None
        self.late_events = 0
        self.future_events = 0
        self.malformed_pushes = 0
        self.accepted_events = 0
        self.out_of_order_events = 0
        self.arrivals = ArrivalRate()
        self._buffer: list[tuple[int, int, Event]] = []
        # The watermark never goes back, also when the lateness grows (a query with a larger
        # LATENESS registers): events already released stay released in order.
        self._held: int | None = None

    @property
    def watermark(self) -> int | None:
        """Events strictly older than this are late; None before the first event or advance."""
        return self._watermark_at(self.latest)

    def _watermark_at(self, latest: int | None) -> int | None:
        if latest is None:
            return None
        watermark = latest - self.lateness_ms
        return watermark if self._held is None or watermark > self._held else self._held

    def set_lateness(self, lateness_ms: int) -> list[Event]:
        """Changes the lateness; returns the events a smaller one releases, in order."""
        self._held = self.watermark
        self.lateness_ms = lateness_ms
        return self._release()

    @property
    def buffered(self) -> int:
        """Events accepted but not yet released (always 0 when the lateness is 0)."""
        return len(self._buffer)

    def state(self) -> dict[str, int | None]:
        """The clock and counters, as ``restore`` takes them (JSON-ready)."""
        return {name: getattr(self, name) for name in self._STATE}

    def restore(self, state: dict) -> None:
        """Takes back what ``state`` gave (a name missing from ``state`` keeps its value)."""
        for name in self._STATE:
            if name in state:
                setattr(self, name, state[name])

    def reset(self) -> list[Event]:
        """Forgets the latest timestamp (the next event starts the clock again, whatever its time);
        returns the buffered events, released now in order so that no accepted event is lost."""
        released = [heapq.heappop(self._buffer)[2] for _ in range(len(self._buffer))]
        self.latest = self._held = None
        return released

    def check_batch(self, times: Sequence[int], now_ms: int | None = None, max_future_ms: int | None = None) -> None:
        """Raises for the first event of a batch pushed in this order that is late (``LateEventError``,
        as if each earlier one had been accepted) or, with ``max_future_ms``, more than that ahead of
        ``now_ms`` (``FutureEventError``); every late or future one of them is counted."""
        latest, first, late, future = self.latest, None, 0, 0
        horizon = now_ms + max_future_ms if max_future_ms and now_ms is not None else None
        for index, time in enumerate(times):
            if horizon is not None and time > horizon:
                future += 1
                first = first or (index, time, None)
                continue
            watermark = self._watermark_at(latest)
            if watermark is not None and time < watermark:
                late += 1
                first = first or (index, time, watermark)
                continue
            latest = time if latest is None else max(latest, time)
        self.late_events += late
        self.future_events += future
        if first is None:
            return
        index, time, watermark = first
        if watermark is None:
            raise FutureEventError(self.iri, time, now_ms, max_future_ms, index=index, future_in_batch=future)
        raise LateEventError(self.iri, time, watermark, index=index, late_in_batch=late)

    def accept(self, event: Event, now_ms: int | None = None) -> list[Event]:
        """Takes an event that passed ``check_batch``, arrived at ``now_ms`` on the arrival clock (for
        the rate; None: not recorded); returns the events it releases, in order."""
        self.accepted_events += 1
        if now_ms is not None:
            self.arrivals.record(now_ms)
        if self.latest is not None and event.time < self.latest:
            self.out_of_order_events += 1
        self.latest = event.time if self.latest is None else max(self.latest, event.time)
        if not self._buffer and self.lateness_ms == 0:
            return [event]  # on time, nothing waiting: released at once, as the heap would
        heapq.heappush(self._buffer, (event.time, event.arrival, event))
        return self._release()

    def advance(self, time: int) -> list[Event]:
        """Moves the latest timestamp to at least ``time``; returns the events this releases."""
        self.latest = time if self.latest is None else max(self.latest, time)
        return self._release()

    def _release(self) -> list[Event]:
        watermark = self.watermark
        released = []
        if watermark is None:
            return released
        while self._buffer and self._buffer[0][0] <= watermark:
            released.append(heapq.heappop(self._buffer)[2])
        return released


class Streams:
    """Every stream the engine has seen, by IRI."""

    def __init__(self, lateness_ms: int = 0, max_future_ms: int | None = None):
        for name, value in (("lateness_ms", lateness_ms), ("max_future_ms", max_future_ms or 0)):
            if value < 0:
                msg = f"{name} must be >= 0, not {value}"
                raise ValueError(msg)
        self.lateness_ms = lateness_ms
        self.max_future_ms = max_future_ms or None  # None: no bound
        self.clocks: dict[str, StreamClock] = {}
        self.lateness_of: dict[str, int] = {}  # streams whose queries' LATENESS differs from lateness_ms
        # The latest advance: a stream first seen after it starts there, like the streams known then.
        self.floor: int | None = None
        self._arrivals = itertools.count()

    def clock(self, iri: str) -> StreamClock:
        clock = self.clocks.get(iri)
        if clock is None:
            clock = self.clocks[iri] = StreamClock(iri, self.lateness_of.get(iri, self.lateness_ms))
            clock.latest = self.floor
        return clock

    def set_lateness(self, lateness: dict[str, int]) -> list[Event]:
        """The lateness of the streams ``lateness`` names (the others keep ``lateness_ms``), as the
        LATENESS of the queries reading them asks; returns the events a smaller lateness releases,
        in timestamp order."""
        self.lateness_of = {iri: ms for iri, ms in lateness.items() if ms != self.lateness_ms}
        released = []
        for iri, clock in self.clocks.items():
            wanted = lateness.get(iri, self.lateness_ms)
            if wanted != clock.lateness_ms:
                released.extend(clock.set_lateness(wanted))
        released.sort(key=Event.sort_key)
        return released

    def push_batch(
        self,
        iri: str,
        events: Sequence[tuple[object, int]],
        now_ms: int | None = None,
        *,
        encode: Callable[..., Sequence[int]],
        accepted: list[Event] | None = None,
        kept_predicates: Callable[[str], Collection[int] | None] | None = None,
    ) -> list[Event]:
        """Accepts ``(triples, time)`` events in order, all or none (``LateEventError`` or
        ``FutureEventError`` naming the first refused one by its ``index``); returns the events
        released, in order, and appends the accepted ones to ``accepted`` when given. ``encode``
        turns an event's triples into its ids (``TermDictionary.encode_triples``); it runs on every
        event once the whole batch is known to be acceptable, before any is accepted.

        ``kept_predicates(iri)`` gives the stream's predicate filter (``FanOut.kept_predicates``; None:
        keep every triple), handed to ``encode`` as its second argument when the batch's events are
        all released at once (lateness 0, nothing buffered) and so read by the queries registered
        now and nothing else. A buffered event keeps all its triples: it is journaled, and queries
        registered while it waits read it."""
        clock = self.clock(iri)
        clock.check_batch([time for _, time in events], now_ms, self.max_future_ms)
        kept = None
        if kept_predicates is not None and clock.lateness_ms == 0 and not clock._buffer:
            kept = kept_predicates(iri)
        encoded = [(encode(triples) if kept is None else encode(triples, kept), time) for triples, time in events]
        received = _time.perf_counter()
        released = []
        for ids, time in encoded:
            event = Event(iri, time, ids, next(self._arrivals), received)
            if accepted is not None:
                accepted.append(event)
            released.extend(clock.accept(event, now_ms))
        return released

    def push_one(
        self,
        iri: str,
        triples: object,
        time: int,
        now_ms: int | None = None,
        *,
        encode: Callable[..., Sequence[int]],
        kept_predicates: Callable[[str], Collection[int] | None] | None = None,
    ) -> list[Event]:
        """``push_batch`` of the one event ``(triples, time)``, without its lists: the events
        released (the same predicate filter when the event is released at once)."""
        clock = self.clock(iri)
        # Not before the stream's latest time, so not late (the watermark is never past it), and
        # no future bound: nothing to check or count.
        if self.max_future_ms is not None or (clock.latest is not None and time < clock.latest):
            clock.check_batch((time,), now_ms, self.max_future_ms)
        kept = None
        if kept_predicates is not None and clock.lateness_ms == 0 and not clock._buffer:
            kept = kept_predicates(iri)
        ids = encode(triples) if kept is None else encode(triples, kept)
        # tuple.__new__: a NamedTuple's own __new__ is a Python function, a frame per event.
        return clock.accept(tuple.__new__(Event, (iri, time, ids, next(self._arrivals), _time.perf_counter())), now_ms)

    def buffer(self, iri: str, time: int, ids: Sequence[int]) -> None:
        """Puts back an event accepted before a restart and not released then (``engine.clocks``):
        it waits, as it did, for the watermark."""
        clock = self.clock(iri)
        event = Event(iri, time, ids, next(self._arrivals), _time.perf_counter())
        heapq.heappush(clock._buffer, (event.time, event.arrival, event))

    def buffered_events(self, iri: str) -> list[Event]:
        """The events of ``iri`` accepted and not yet released, in release order."""
        clock = self.clocks.get(iri)
        return [] if clock is None else [entry[2] for entry in sorted(clock._buffer)]

    def reset(self, iri: str) -> list[Event]:
        """``StreamClock.reset`` of ``iri`` (``UnknownStreamError`` for a stream never seen)."""
        clock = self.clocks.get(iri)
        if clock is None:
            msg = f"no stream <{iri}> has been seen"
            raise UnknownStreamError(msg)
        return clock.reset()

    def advance(self, time: int) -> list[Event]:
        """Moves every stream's clock to ``time``; the released events of all streams, in
        timestamp order (arrival order for equal timestamps)."""
        self.floor = time if self.floor is None else max(self.floor, time)
        released = [event for clock in self.clocks.values() for event in clock.advance(time)]
        released.sort(key=Event.sort_key)
        return released


# --------------------------------------------------------------------------- input conversion


def is_short_stream_name(name: str) -> bool:
    """Whether a stream named ``name`` (in a push path, a source's declaration) is a short name the
    server's stream base goes before, not an absolute IRI (no scheme before its first ``/``).

    >>> is_short_stream_name("rfid"), is_short_stream_name("http://deri.org/streams/rfid")
    (True, False)
    """
    return ":" not in name.split("/", 1)[0]


def to_millis(time: object) -> int:
    """A timestamp as integer milliseconds since the epoch.

    Accepts an ``int``; a ``datetime`` (a naive one is taken as UTC); an ISO-8601 string; a
    pyoxigraph ``xsd:dateTime`` literal. Sub-millisecond parts are truncated.

    >>> to_millis(1500)
    1500
    >>> from datetime import datetime, timezone, timedelta
    >>> to_millis(datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))
    1000
    >>> to_millis(datetime(1970, 1, 1, 1, 0, 1, tzinfo=timezone(timedelta(hours=1))))
    1000
    >>> to_millis(datetime(1970, 1, 1, 0, 0, 2))  # naive: UTC
    2000
    >>> to_millis("1970-01-01T00:00:03Z")
    3000
    """
    if isinstance(time, bool):
        msg = f"a timestamp must be int milliseconds or a datetime, not {time!r}"
        raise TypeError(msg)
    if isinstance(time, int):
        return check_time(time)
    if isinstance(time, ox.Literal) and time.datatype.value in (XSD_DATETIME, XSD_DATETIMESTAMP):
        time = time.value
    given = time if isinstance(time, str) else None
    if isinstance(time, str):
        try:
            time = datetime.fromisoformat(time)
        except ValueError:
            # Python reads years 0001-9999: a later or negative year is out of range, not unreadable.
            msg = f"{time!r} is no ISO-8601 dateTime the engine holds, {TIME_RANGE}"
            raise ValueError(msg) from None
    if isinstance(time, datetime):
        if time.tzinfo is None:
            time = time.replace(tzinfo=UTC)
        delta = time - datetime(1970, 1, 1, tzinfo=UTC)
        return check_time((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000, given)
    msg = f"a timestamp must be int milliseconds, a datetime or an xsd:dateTime, not {type(time).__name__}"
    raise TypeError(msg)


_XSD_DATETIME_LEXICAL = re.compile(r"-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?\Z")


def parse_timestamp(text: str) -> int:
    """A timestamp written by a client (``?time=``, an NDJSON ``"time"``, ``cqels push --time``):
    integer milliseconds since the epoch or an ``xsd:dateTime`` (no zone: UTC), inside the range
    the engine holds (``check_time``). ``ValueError`` otherwise.

    >>> parse_timestamp("1500"), parse_timestamp("1970-01-01T00:00:01.5Z")
    (1500, 1500)
    """
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return check_time(int(text))
    if not _XSD_DATETIME_LEXICAL.match(text):
        msg = f"{text!r} is neither integer milliseconds nor an xsd:dateTime like 2024-05-01T12:00:00Z"
        raise ValueError(msg)
    return to_millis(text)


def to_triples(data: object) -> tuple[ox.Triple, ...]:
    """The triples of one event.

    ``data`` is an N-Triples/Turtle string (or bytes), one pyoxigraph ``Triple`` (or ``Quad``: its
    graph is ignored), an rdflib triple ``(s, p, o)``, or an iterable of those (an ``rdflib.Graph``
    included). Malformed text raises ``RdfSyntaxError`` with the line and column; conversion is
    complete before anything is applied.

    >>> to_triples('<http://e/a> <http://e/p> "1" .')
    (<Triple subject=<NamedNode value=http://e/a> predicate=<NamedNode value=http://e/p> object=<Literal value=1 datatype=<NamedNode value=http://www.w3.org/2001/XMLSchema#string>>>,)
    """
    if isinstance(data, (str, bytes)):
        return _parse(data)
    if isinstance(data, (ox.Triple, ox.Quad)) or _is_rdflib_triple(data):
        return (_triple(data),)
    if isinstance(data, Iterable):
        return tuple(_triple(item) for item in data)
    msg = f"stream data must be RDF text, triples or an iterable of triples, not {type(data).__name__}"
    raise TypeError(msg)


# What TermDictionary.encode_triples takes item by item (a quad's graph ignored, as to_triples does).
ENCODED_AS_THEY_ARE = (ox.Triple, ox.Quad)


def event_triples(data: object) -> object:
    """The triples of one event as ``to_triples`` reads them, for ``TermDictionary.encode_triples``:
    plain N-Triples text straight to the forms the compiled dictionary keys its terms by
    (``read_plain_ntriples``: no Python object per triple), ``TripleForms`` as they are, anything
    else as ``to_triples`` converts it."""
    if TripleForms is not None and isinstance(data, TripleForms):
        return data
    if type(data) in (list, tuple):
        for item in data:  # a loop, not all(): no generator per push
            if type(item) not in ENCODED_AS_THEY_ARE:
                break
        else:
            return data
    if isinstance(data, (str, bytes)):
        forms = read_plain_ntriples(data)
        if forms is not None:
            return forms
    return to_triples(data)


def read_plain_ntriples(text: str | bytes, *, keep_blank_nodes: bool = True, one_per_line: bool = False) -> object:
    """``_reader.read_ntriples``: the ``TripleForms`` of text made only of plain N-Triples statements,
    read as Turtle (or as N-Triples, ``one_per_line``), or None — the caller then parses the text
    itself, and gets the same triples or the error with its line. With ``keep_blank_nodes=False``
    (for a parse that renames blank nodes apart) a blank node makes it None. Always None under
    ``CQELS_PURE_PYTHON=1``."""
    if read_ntriples is None:
        return None
    return read_ntriples(text, keep_blank_nodes, one_per_line)


def _parse(text: str | bytes) -> tuple[ox.Triple, ...]:
    try:
        quads = list(ox.parse(input=text, format=ox.RdfFormat.TURTLE))
    except SyntaxError as error:
        message = error.msg if error.msg else str(error)
        lines = (text.decode("utf-8", "replace") if isinstance(text, bytes) else text).splitlines()
        line_text = lines[error.lineno - 1] if error.lineno and 0 < error.lineno <= len(lines) else ""
        raise RdfSyntaxError(f"malformed event data: {message}\n  {line_text}", error.lineno, error.offset) from None
    return tuple(quad.triple for quad in quads)


def _is_rdflib_triple(data: object) -> bool:
    return isinstance(data, tuple) and len(data) == 3 and type(data[0]).__module__.startswith("rdflib")


def _triple(item: object) -> ox.Triple:
    if isinstance(item, ox.Triple):
        return item
    if isinstance(item, ox.Quad):
        return item.triple
    if isinstance(item, tuple) and len(item) == 3:
        subject, predicate, obj = (_term(x) for x in item)
        try:
            return ox.Triple(subject, predicate, obj)
        except TypeError:
            msg = f"not a valid RDF triple: {item!r}"
            raise TypeError(msg) from None
    msg = f"not a triple: {item!r}"
    raise TypeError(msg)


def _term(term: object) -> ox.NamedNode | ox.BlankNode | ox.Literal:
    """A pyoxigraph term from a pyoxigraph or rdflib term."""
    if isinstance(term, (ox.NamedNode, ox.BlankNode, ox.Literal)):
        return term
    import rdflib

    if isinstance(term, rdflib.URIRef):
        return ox.NamedNode(str(term))
    if isinstance(term, rdflib.BNode):
        return ox.BlankNode(_bnode_id(str(term)))
    if isinstance(term, rdflib.Literal):
        if term.language:
            return ox.Literal(str(term), language=term.language)
        if term.datatype is not None:
            return ox.Literal(str(term), datatype=ox.NamedNode(str(term.datatype)))
        return ox.Literal(str(term))
    msg = f"not an RDF term: {term!r}"
    raise TypeError(msg)


def _bnode_id(label: str) -> str:
    # rdflib blank node ids may hold characters a pyoxigraph blank node id may not.
    return label if re.fullmatch(r"[A-Za-z0-9_]+", label) else "r" + label.encode().hex()

