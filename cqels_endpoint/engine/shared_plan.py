"""One window buffer for a unit of queries that read one window state (``engine.fanout``).

The queries of a unit read the same stream pattern through one shared window state
(``runtime.sharing``) and are driven in lockstep: every event and advance reaches all of them at
the same clock. Each would still keep its own window buffer (the set of triples in its window)
with the same content, and be fed and punctuated on its own. A ``SharedPlan`` keeps one buffer
for all of them instead: one ``EventFeed`` call per event routes the event once, inserts into and
expires from the window state once, and hands what enters and leaves to that buffer, whose
downstream is a ``Fan`` (``operators._base``) pushing each batch and punctuation on to the first
operator of every query's plan (its FILTER, say) through C. A *round* is one event or advance:
the first query of the unit driven in it (``start``) feeds and punctuates for all; each query then
only looks at its own sink (``_shared_round.Member``): with no change, it counts the evaluation
and moves its clock, with no ``Emission`` and no outbox work; with changes, it takes them as an
evaluation of its own would. At an event, ``Engine._dispatch`` runs the whole round at once
(``run``: one C loop over the queries, ``_shared_round.run_round``); at an advance, and at the
plan's first event, each query evaluates on its own (``ContinuousQuery._evaluate_shared``).

It applies to a unit of two or more plain eager queries (``FanOut.run``) where every query reads
one stream pattern of one named stream with no bound on the window's size and a compiled plan
whose only source is that pattern's compiled window buffer (no static cache, no SEQ), no ORDER BY,
no ``max_tick_rows``, not RSTREAM; and only from the unit's first event, before which no window
holds anything (a unit's queries all join before its first event: ``runtime.sharing``), or at a
later event that finds the window empty (each query's own buffer then holds nothing either). The
readers of the window state are bypassed from then on, which leaves their call log untouched. The plan
stays until its last query leaves (a unit left with one query keeps it).
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Iterator, Sequence

from cqels_endpoint.engine._shared_round import Member, run_round
from cqels_endpoint.engine.incremental import IncrementalEvaluator, WindowEntry, release_rows
from cqels_endpoint.operators._base import Fan
from cqels_endpoint.operators._join import WindowBuffer
from cqels_endpoint.operators._sink import Sink
from cqels_endpoint.query.kinds import R2S
from cqels_endpoint.runtime.feed import EventFeed
from cqels_endpoint.runtime.streams import Event

__all__ = ["SharedPlan"]


class SharedPlan:
    """The buffer, fan and feed a unit's queries share (module docstring); ``make`` builds it."""

    def __init__(self, queries: Sequence, buffer: WindowBuffer, released: list[tuple]) -> None:
        first = queries[0]
        self._dictionary = first.evaluator.dictionary
        self._buffer = buffer
        self._released = released  # what the buffer handed back, dropped at the next round
        self._fan = Fan()
        self.errors = self._fan.errors  # by id of a query's first operator: what its plan raised this round
        # By query: the first operator of its plan and its port, where its own buffer pushed.
        self._targets: dict[object, tuple[object, int]] = {}
        # The rows decoded in this round, by sink schema: the queries that emit one row (the
        # triple that entered, say) decode it once; each emission gets its own copy of the mapping.
        self._decoded: dict[tuple, dict[tuple, dict]] = {}
        self._members: dict[object, Member] = {}
        for query in queries:
            self._targets[query] = target = query.evaluator.adopt_buffer(0, buffer)
            decoded = self._decoded.setdefault(tuple(query.evaluator.sink.schema), {})
            self._members[query] = Member(query, target[0], self.errors, decoded)
            query._shared = self
        self._fan.set_targets(list(self._targets.values()))
        self._round_members = list(self._members.values())  # rebuilt, not changed, when one leaves
        buffer.downstream = self._fan
        entry = WindowEntry(self._dictionary, {0: buffer})
        self._feed = EventFeed([first.windows[0].state(next(iter(first.streams)))], entry.insert, entry.expire)
        self.round: int | None = None  # the step of the round under way (``start``)
        self.evaluated: int | None = None  # the step of the last round ``run`` evaluated all in

    @classmethod
    def make(cls, queries: Sequence, always: Callable[[object], bool]) -> SharedPlan | None:
        """The plan ``queries`` (a unit's, in order) share, or None when they cannot (module
        docstring): then each keeps its own buffer. Asked at each event of a unit that shares none
        (``FanOut.run``): it may start sharing whenever its window is empty. ``always``: whether
        every event must reach a query (``engine.fanout``: ``NOW()``, SEQ, …), which excludes it."""
        if WindowEntry is None or len(queries) < 2 or len(queries[0].windows) != 1 or len(queries[0].windows[0]):
            return None  # checked first: most events of a unit that does not share find its window full
        for query in queries:
            shape = query._shareable
            if shape is None:
                shape = query._shareable = _shape_allows(query) and not always(query)
            if not shape or query.on_changes is not None or query.failure is not None or len(query.evaluator._windows[0]):
                return None
        own = queries[0].evaluator._windows[0]
        released: list[tuple] = []
        buffer = WindowBuffer(queries[0].evaluator.plan.leaves[0].positions, own.label, on_release=released.append)
        return cls(queries, buffer, released)

    def start(self, step: int, tau: int, event: Event | None = None, query=None, seqs: Iterator[int] | None = None) -> None:
        """Round ``step`` (an event's or an advance's number) at clock ``tau``: the first query
        driven in it offers ``event`` (routed by ``query``'s router) and expires the window, for all."""
        if step == self.round:
            return
        self.round = step
        if self._released:
            release_rows(self._dictionary, self._released)  # left two rounds ago: decoded by all
            self._released.clear()
        self.errors.clear()
        for decoded in self._decoded.values():
            decoded.clear()
        if event is not None:
            self._feed.offer(query._router(event.stream), event.ids, event.time, tau, seqs)
        self._feed.expire(tau)
        self._buffer.on_punctuation(tau)

    def run(self, event: Event, seqs: Iterator[int], step: int, fail: Callable[[object, Exception], None]) -> None:
        """Event ``step`` for every query of the unit at once (``Engine._dispatch``): ``start``
        by the first, then each query's evaluation in C (``_shared_round.run_round``), which calls
        Python only for the queries that emit. ``fail(query, error)`` stops a query that raised."""
        started = _time.perf_counter()
        members = self._round_members
        query = members[0].query
        clock = query._clock  # caught up by the fan-out's ``reached``
        tau = event.time if clock is None or clock < event.time else clock
        try:
            self.start(step, tau, event, query, seqs)
        except Exception as error:  # the first query's failure, as when it runs alone
            fail(query, error)
        self.evaluated = step
        run_round(members, event.time, event.received, fail, started)

    def evaluate(self, query, tau: int) -> None:
        """``query``'s evaluation at ``tau`` once the round fed and punctuated its plan
        (``ContinuousQuery._evaluate_shared``): ``Member.evaluate``."""
        self._members[query].evaluate(tau)

    def leave(self, query) -> None:
        """``query`` is gone (unregistered or failed): its plan gets nothing more; the last query
        to leave releases the buffer."""
        if self._targets.pop(query, None) is None:
            return
        self._members.pop(query).leave()
        self._round_members = list(self._members.values())
        self._fan.set_targets(list(self._targets.values()))
        if not self._targets:
            self._buffer.close()
            release_rows(self._dictionary, self._released)
            self._released.clear()


def _shape_allows(query) -> bool:
    """Whether ``query``'s plan and windows may read a shared buffer (module docstring): what
    registration fixed, asked once per query."""
    evaluator = query.evaluator
    return (
        type(evaluator) is IncrementalEvaluator and len(query.patterns) == 1 and query.patterns[0].variable is None
        and query.r2s is not R2S.RSTREAM and evaluator.max_tick_rows is None and not evaluator._timed
        and evaluator._order is None and len(evaluator._sources) == 1 and type(evaluator._windows.get(0)) is WindowBuffer
        and evaluator._sources[0] is evaluator._windows[0] and isinstance(evaluator.sink, Sink)
        and isinstance(getattr(evaluator.on_insert, "__self__", None), WindowEntry)
        and len(query.windows) == 1 and query.windows[0].feedable()
    )
