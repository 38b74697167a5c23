"""Window *state*, built from the frozen window configurations of ``query/windows.py``.

One state object per stream triple pattern (the window applies to the triples matching each
triple pattern: docs/ARCHITECTURE.md, "Windows and time"). A state only knows timestamps and
sequence numbers: the engine inserts ``(t, seq)`` for each matching triple and, before each
evaluation at time ``τ``, asks which sequence numbers leave. Every buffer is a FIFO by timestamp
(a stream's timestamps never decrease), so expiry pops from the left and never scans the window.
A stream-wide count window also counts the statements of its stream: the engine tells it each
event's number of statements (``StreamTriplesState.statements``) before offering its triples.

The classes below are the reference versions; ``build_window`` makes their compiled twins
(``_windows.pyx``: the same calls, each entry two int64 in a C++ deque) unless
``CQELS_PURE_PYTHON=1``; tests/runtime/test_window_states.py drives both with the same calls.

What a window holds at an evaluation time ``τ`` (the engine evaluates eager queries after each
event, at its timestamp, and at each clock advance; periodic queries at their close times):

=====================  =========================================================================
``RANGE T``            ``τ − T < t' ≤ τ``
``RANGE T SLIDE β``    ``τ − T ≤ t' < τ`` (``τ`` a close ``o + kβ``; the event that triggers a
                       close is inserted after it)
``NOW``                ``t' = τ``: the current instant, every event at it so far (a close ``c``
                       is triggered by an event with ``t ≥ c``, inserted after it: empty there)
``ALL``                every triple since the query was registered
``TRIPLES n``          the last ``n`` matching triples (expired as soon as the ``n+1``-th arrives)
``TRIPLES n`` (cqels2) the matching triples among the last ``n`` statements of the stream, counted
                       from the query's registration (expired once ``n`` later statements came)
=====================  =========================================================================

>>> state = build_window(RangeWindow(3))
>>> for seq, t in enumerate([0, 1, 4]):
...     _ = state.insert(t, seq)
>>> state.expire(4)   # 4 − 3 < t' ≤ 4 keeps t' = 4 only
[0, 1]
>>> state.contents()
[2]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from cqels_endpoint.query.windows import AllWindow, NowWindow, RangeWindow, TriplesWindow, WindowConfig
from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python


class WindowState:
    """The triples (as ``(t, seq)``) one window holds; subclasses decide when they leave.

    Call order per evaluation: any number of ``insert`` calls (each may expire entries itself, as
    ``TRIPLES n`` does), then one ``expire(τ)`` just before the evaluation at ``τ``.
    """

    def __init__(self) -> None:
        # (t, seq), and a stream-wide window's statement ordinal after them (StreamTriplesState)
        self._entries: deque[tuple[int, ...]] = deque()

    def admits(self, t: int, tau: int) -> bool:
        """Whether a triple at ``t``, inserted when the query's clock is at ``τ``, can ever be seen
        (one arriving on a lagging stream may already be out of the window)."""
        return True

    def insert(self, t: int, seq: int, index: int = 0) -> list[int]:
        """Adds a triple, the ``index``-th statement of its event; returns the sequence numbers
        this insertion pushes out (oldest first)."""
        self._entries.append((t, seq))
        return []

    def expire(self, tau: int) -> list[int]:
        """Removes and returns (oldest first) the sequence numbers not in the window at ``τ``."""
        return []

    def expiry(self) -> int | None:
        """The earliest ``τ`` at which ``expire(τ)`` removes something, None if no time does (the
        engine leaves a query alone until then: ``engine.fanout``)."""
        return None

    def _pop_while(self, leaves) -> list[int]:
        entries = self._entries
        gone = []
        while entries and leaves(entries[0]):
            gone.append(entries.popleft()[1])
        return gone

    def contents(self) -> list[int]:
        """The sequence numbers in the window, oldest first."""
        return [entry[1] for entry in self._entries]

    def times(self) -> list[int]:
        """The timestamps in the window, oldest first."""
        return [entry[0] for entry in self._entries]

    def __len__(self) -> int:
        return len(self._entries)


class EagerRangeState(WindowState):
    """``RANGE T``: holds ``τ − T < t' ≤ τ``."""

    def __init__(self, range_ms: int):
        super().__init__()
        self.range_ms = range_ms

    def admits(self, t: int, tau: int) -> bool:
        return t > tau - self.range_ms

    def expire(self, tau: int) -> list[int]:
        bound = tau - self.range_ms
        return self._pop_while(lambda entry: entry[0] <= bound)

    def expiry(self) -> int | None:
        return self._entries[0][0] + self.range_ms if self._entries else None


class PeriodicRangeState(WindowState):
    """``RANGE T SLIDE β`` (and ``TUMBLING``, β = T): at a close ``c`` holds ``c − T ≤ t' < c``."""

    def __init__(self, range_ms: int, slide_ms: int):
        super().__init__()
        self.range_ms = range_ms
        self.slide_ms = slide_ms

    def admits(self, t: int, tau: int) -> bool:
        # ``τ`` is the last close: every later close c > τ expires t' < c − T.
        return t >= tau - self.range_ms

    def expire(self, tau: int) -> list[int]:
        bound = tau - self.range_ms
        return self._pop_while(lambda entry: entry[0] < bound)

    def expiry(self) -> int | None:
        return self._entries[0][0] + self.range_ms + 1 if self._entries else None


class NowState(WindowState):
    """``NOW``: the triples at the current instant, ``t' = τ`` (CQELS: every event at that instant,
    not only the one being processed)."""

    def admits(self, t: int, tau: int) -> bool:
        # A lagging stream's triple is already in the past at the query's clock.
        return t >= tau

    def expire(self, tau: int) -> list[int]:
        return self._pop_while(lambda entry: entry[0] < tau)

    def expiry(self) -> int | None:
        return self._entries[0][0] + 1 if self._entries else None


class AllState(WindowState):
    """``ALL``: nothing ever leaves."""


class TriplesState(WindowState):
    """``TRIPLES n`` / ``COUNT n``: the last ``n`` triples; the oldest leaves when one more arrives."""

    def __init__(self, count: int):
        super().__init__()
        self.count = count

    def insert(self, t: int, seq: int, index: int = 0) -> list[int]:
        super().insert(t, seq)
        gone = []
        while len(self._entries) > self.count:
            gone.append(self._entries.popleft()[1])
        return gone


class StreamTriplesState(WindowState):
    """``TRIPLES n`` in CQELS-QL 2.0: the pattern's triples among the last ``n`` statements of the
    stream. Each entry keeps the ordinal of its statement in the stream (counted from the query's
    registration). ``statements(k)`` begins each event of the stream, then the event's matching
    triples are inserted with their index in it."""

    def __init__(self, count: int):
        super().__init__()
        self.count = count
        self.seen = 0  # the stream's statements, the current event's included
        self._start = 0  # the ordinal of the current event's first statement

    def statements(self, k: int) -> list[int]:
        """An event of ``k`` statements begins: the sequence numbers now out of the last ``n``."""
        self._start, self.seen = self.seen, self.seen + k
        first = self.seen - self.count
        return self._pop_while(lambda entry: entry[2] < first)

    def insert(self, t: int, seq: int, index: int = 0) -> list[int]:
        ordinal = self._start + index
        if ordinal < self.seen - self.count:
            return [seq]  # more than n later statements in its own event: out at once
        self._entries.append((t, seq, ordinal))
        return []


if use_pure_python():
    _STATES = (EagerRangeState, PeriodicRangeState, NowState, AllState, TriplesState, StreamTriplesState)
else:
    with compiled_imports("window states"):
        from cqels_endpoint.runtime import _windows

        _STATES = (
            _windows.EagerRangeState, _windows.PeriodicRangeState, _windows.NowState, _windows.AllState,
            _windows.TriplesState, _windows.StreamTriplesState,
        )


def build_window(config: WindowConfig) -> WindowState:
    """The state object of a window configuration: compiled (``_windows.pyx``) unless
    ``CQELS_PURE_PYTHON=1`` selects the classes above, its twins."""
    eager, periodic, now, every, last, stream_last = _STATES
    match config:
        case RangeWindow(range_ms, None):
            return eager(range_ms)
        case RangeWindow(range_ms, slide_ms):
            return periodic(range_ms, slide_ms)
        case NowWindow():
            return now()
        case AllWindow():
            return every()
        case TriplesWindow(count, True):
            return stream_last(count)
        case TriplesWindow(count):
            return last(count)
    raise TypeError(f"not a window configuration: {config!r}")


class CloseSchedule:
    """The close times of a query's periodic windows: the union over their slides of ``o + kβ``
    (``k ≥ 1``), ``o`` the origin (the query's first event unless given at registration).

    >>> schedule = CloseSchedule([2, 3], origin=10)
    >>> list(schedule.closes_through(19))
    [12, 13, 14, 16, 18, 19]
    >>> list(schedule.closes_through(19))
    []
    """

    def __init__(self, slides: Iterable[int], origin: int | None = None):
        self.slides = sorted(set(slides))
        if not self.slides or self.slides[0] <= 0:
            msg = f"a periodic window needs a positive slide, not {self.slides}"
            raise ValueError(msg)
        self.origin: int | None = None
        self._next: list[int] = []
        if origin is not None:
            self.set_origin(origin)

    def set_origin(self, origin: int) -> None:
        self.origin = origin
        self._next = [origin + slide for slide in self.slides]

    @property
    def next_close(self) -> int | None:
        return min(self._next) if self._next else None

    def closes_through(self, time: int):
        """Yields, in order, every close not yet yielded that is ``≤ time``."""
        if self.origin is None:
            return
        while True:
            close = min(self._next)
            if close > time:
                return
            for i, slide in enumerate(self.slides):
                if self._next[i] == close:
                    self._next[i] += slide
            yield close
