"""Windows read at *anchors*: the state of a query with a LARS directional window (CQELS-QL 2.0).

A directional query is evaluated once per anchor ``a`` (engine/directional.py); each of its stream
patterns' windows is then read at that anchor (``Extent``):

=================================  ==============================================================
``[PAST p FUTURE f]``, ``[RANGE p  ``a − p < t ≤ a + f`` (``[FUTURE f]``: ``p = 0``)
FUTURE f]``, ``[FUTURE f]``
``[RANGE T]`` (``[PAST T]``)       ``a − T < t ≤ a``
``[NOW]``                          ``t = a``
``[ALL]``                          ``t ≤ a``
``[TRIPLES n]``                    the last ``n`` triples with ``t ≤ a``
``[TRIPLES n]`` (cqels2)           the triples among the last ``n`` statements of the stream with
                                   ``t ≤ a`` (``StatementCount`` counts them)
``[TRIPLES PAST n FUTURE m]``      the last ``n`` triples with ``t ≤ a`` and the first ``m`` after ``a``
=================================  ==============================================================

Triples reach a pattern in timestamp order (streams release events in order:
runtime/streams.py), so each window's content at an anchor is a contiguous run of the pattern's
triples, and both ends of the run only move forward as the anchor does. A ``AnchoredWindow``
keeps the pattern's triples that some reader may still need and one ``View`` per reader (the
query's final and early evaluations); moving a view hands over the copies that enter and the
sequence numbers that leave, which is what an ``Evaluator`` takes. The window holds a dictionary
reference to each triple it keeps.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from cqels_endpoint.query.windows import AllWindow, DirectionalWindow, NowWindow, RangeWindow, TriplesWindow, WindowConfig


@dataclass(frozen=True)
class Extent:
    """What a window holds around an anchor: ``past``/``future`` in ms, or in triples when
    ``count`` (in statements of the stream when also ``stream_wide``); ``past`` None is unbounded
    (``ALL``)."""

    past: int | None
    future: int = 0
    count: bool = False
    stream_wide: bool = False

    @staticmethod
    def of(window: WindowConfig) -> Extent:
        """The extent of a (policy-free) window configuration; ``ValueError`` for a periodic one."""
        match window:
            case DirectionalWindow(past, future, _step, count):
                return Extent(past, future, count)
            case RangeWindow(range_ms, None):
                return Extent(range_ms)
            case NowWindow():
                return Extent(1)  # integer ms: a − 1 < t ≤ a is t = a
            case AllWindow():
                return Extent(None)
            case TriplesWindow(count, stream_wide):
                return Extent(count, 0, True, stream_wide)
        msg = f"the window {window!r} is not read at anchors"
        raise ValueError(msg)


@dataclass
class View:
    """One reader's part of a window: the triples ``lo ≤ i < hi`` (indexes over the pattern's
    triples since registration) and the sequence number each was inserted under."""

    lo: int = 0
    hi: int = 0
    seqs: deque = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.seqs = deque()


class StatementCount:
    """The statements of one stream a directional query was offered, counted by time: a
    stream-wide count window reads, at an anchor ``a``, how many have ``t ≤ a``. One record per
    distinct event time, until no anchor to come can read it (``forget``)."""

    def __init__(self) -> None:
        self.total = 0  # every statement offered so far: the ordinal of the next one
        self._times: list[int] = []
        self._totals: list[int] = []  # the statements with t ≤ _times[i]
        self._before = 0  # the statements with t ≤ the last record forgotten

    def add(self, t: int, k: int) -> None:
        """An event at ``t`` (released in timestamp order) of ``k`` statements was offered."""
        self.total += k
        if self._times and self._times[-1] == t:
            self._totals[-1] = self.total
        else:
            self._times.append(t)
            self._totals.append(self.total)

    def through(self, anchor: int) -> int:
        """How many statements have ``t ≤ anchor`` (an anchor not before the last ``forget``)."""
        i = bisect.bisect_right(self._times, anchor)
        return self._totals[i - 1] if i else self._before

    def forget(self, anchor: int) -> None:
        """No anchor before ``anchor`` will be read again: the records it made useless go, in
        chunks so that forgetting stays amortised O(1)."""
        i = bisect.bisect_right(self._times, anchor)
        if i and i * 2 >= len(self._times):
            self._before = self._totals[i - 1]
            del self._times[:i], self._totals[:i]


class AnchoredWindow:
    """The triples of one stream pattern of a directional query, read at anchors by ``views``;
    a stream-wide count window reads its stream's ``statements`` too."""

    def __init__(self, extent: Extent, dictionary, views: int, statements: StatementCount | None = None) -> None:
        self.extent = extent
        self.dictionary = dictionary
        self.views = [View() for _ in range(views)]
        self.statements = statements
        self._times: list[int] = []
        self._ids: list[tuple[int, int, int]] = []
        self._ordinals: list[int] = []  # a stream-wide window's: each triple's statement in the stream
        self._base = 0  # the index of _times[0]

    def __len__(self) -> int:
        return len(self._times)

    def append(self, t: int, ids: tuple[int, int, int], ordinal: int = 0) -> None:
        """A triple (released in timestamp order), the ``ordinal``-th statement of its stream,
        matched the pattern; the window keeps a reference."""
        self.dictionary.incref_many(ids)
        self._times.append(t)
        self._ids.append(ids)
        if self.statements is not None:
            self._ordinals.append(ordinal)

    def after(self, anchor: int) -> int:
        """How many of the kept triples have ``t > anchor``."""
        return len(self._times) - bisect.bisect_right(self._times, anchor)

    def complete(self, anchor: int) -> bool:
        """Whether the window's content at ``anchor`` can no longer change: the count of triples
        after the anchor is reached (a time extent is complete once the clock passes ``a + f``,
        which the query checks)."""
        return not self.extent.count or self.after(anchor) >= self.extent.future

    def bounds(self, anchor: int, cap: int | None = None) -> tuple[int, int]:
        """The run ``[lo, hi)`` the window holds at ``anchor``, of the triples with ``t ≤ cap``
        (None: of all it has)."""
        times, base, extent = self._times, self._base, self.extent
        below_cap = base + (len(times) if cap is None else bisect.bisect_right(times, cap))
        if extent.count:
            split = base + bisect.bisect_right(times, anchor)
            if self.statements is not None:
                # The triples of the last n statements with t ≤ a: both ends are monotone in a.
                lo = base + bisect.bisect_left(self._ordinals, self.statements.through(anchor) - extent.past)
            else:
                lo = base if extent.past is None else max(base, split - extent.past)
            return lo, min(split + extent.future, below_cap)
        lo = base if extent.past is None else base + bisect.bisect_right(times, anchor - extent.past)
        return lo, min(base + bisect.bisect_right(times, anchor + extent.future), below_cap)

    def move(self, view: int, lo: int, hi: int, seqs: Iterator[int]) -> tuple[list[tuple[int, tuple, int]], list[int]]:
        """Moves reader ``view`` to ``[lo, hi)`` (never backwards): the copies that enter, as
        ``(seq, ids, t)``, and the sequence numbers that leave, oldest first."""
        state = self.views[view]
        left: list[int] = []
        while state.lo < lo and state.lo < state.hi:
            left.append(state.seqs.popleft())
            state.lo += 1
        state.lo = max(state.lo, lo)
        entered: list[tuple[int, tuple, int]] = []
        for index in range(max(state.hi, lo), hi):
            seq = next(seqs)
            state.seqs.append(seq)
            entered.append((seq, self._ids[index - self._base], self._times[index - self._base]))
        state.hi = max(state.hi, hi, state.lo)
        self._trim()
        return entered, left

    def _trim(self) -> None:
        # Triples every reader has passed go, in chunks so that trimming stays amortised O(1).
        keep_from = min(view.lo for view in self.views) - self._base
        if keep_from and keep_from * 2 >= len(self._times):
            self._release(self._ids[:keep_from])
            del self._times[:keep_from], self._ids[:keep_from], self._ordinals[:keep_from]
            self._base += keep_from

    def _release(self, rows: Sequence[tuple[int, int, int]]) -> None:
        for ids in rows:
            self.dictionary.decref_many(ids)

    def close(self) -> None:
        self._release(self._ids)
        self._times, self._ids, self._ordinals = [], [], []


class Anchors:
    """The anchors of a directional query, in order: ``origin + k·step`` (``k ≥ 0``) with a
    STEP, else every distinct event time of its streams (``note``)."""

    def __init__(self, step_ms: int | None, origin: int | None = None) -> None:
        self.step_ms = step_ms
        self.origin = origin
        self._pending: deque[int] = deque()  # without STEP: event times not yet closed
        self._next: int | None = origin  # with STEP: the next anchor to close

    def note(self, time: int) -> None:
        """An event at ``time`` was released to the query."""
        if self.step_ms is None:
            if not self._pending or self._pending[-1] < time:
                self._pending.append(time)
        elif self._next is None:
            self.origin = self._next = time

    def newest(self, time: int) -> int | None:
        """The latest anchor ``≤ time`` (the one early results are for), None before the first."""
        if self.step_ms is None:
            return time
        if self.origin is None or time < self.origin:
            return None
        return self.origin + (time - self.origin) // self.step_ms * self.step_ms

    def first(self) -> int | None:
        """The earliest anchor not closed yet (None: none is known)."""
        if self.step_ms is None:
            return self._pending[0] if self._pending else None
        return self._next

    def pop(self) -> None:
        """The earliest anchor is closed."""
        if self.step_ms is None:
            self._pending.popleft()
        else:
            self._next += self.step_ms
