"""Feeding a stream event to one query's windows and evaluator in one call per event.

An ``EventFeed`` holds the window state of each stream triple pattern of one query (by pattern id)
and its evaluator's ``on_insert``/``on_expire``. ``offer(router, ids, t, tau, seqs)`` routes the
triples of an event (``runtime.routing``) and, for each match in order, asks the pattern's state
whether it admits a triple at ``t`` at the query's clock ``tau``; an admitted one gets the next
number of ``seqs``, is inserted, and goes to ``on_insert(pattern id, (s, p, o), t, seq)``, then
what the insertion pushed out (``TRIPLES n``) goes to ``on_expire(pattern id, seq)``.
``expire(tau)`` drops what is out of each window at ``tau``, pattern by pattern, through
``on_expire``. These are the calls ``engine.continuous`` makes through its ``WindowReader``s,
without their call log: the engine feeds a query this way only when each of its windows has no
other reader, no bound on its size, and no ``STREAM ?s`` or stream-wide count window
(``ContinuousQuery._feed``).

``EventFeed`` is compiled (``_feed.pyx``, one C loop per event over the router's tables) unless
``CQELS_PURE_PYTHON=1`` selects ``EventFeedPython``, the reference version below; both make the
same calls in the same order (tests/runtime/test_feed.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python
from cqels_endpoint.runtime.windows import WindowState

__all__ = ["EventFeed", "EventFeedPython"]


class EventFeedPython:
    """One query's window states and evaluator, fed an event at a time (module docstring)."""

    def __init__(
        self,
        states: Sequence[WindowState],
        on_insert: Callable[[int, tuple[int, ...], int, int], None],
        on_expire: Callable[[int, int], None],
    ) -> None:
        self._states = list(states)
        self._on_insert = on_insert
        self._on_expire = on_expire

    def offer(self, router, ids: Sequence[int], t: int, tau: int, seqs: Iterator[int]) -> None:
        for pattern_id, triple, index in router.route(ids):
            state = self._states[pattern_id]
            if not state.admits(t, tau):
                continue
            seq = next(seqs)
            expired = state.insert(t, seq, index)
            self._on_insert(pattern_id, triple, t, seq)
            for gone in expired:
                self._on_expire(pattern_id, gone)

    def expire(self, tau: int) -> None:
        for pattern_id, state in enumerate(self._states):
            for gone in state.expire(tau):
                self._on_expire(pattern_id, gone)


if use_pure_python():
    EventFeed = EventFeedPython
else:
    with compiled_imports("event feed"):
        from cqels_endpoint.runtime._feed import EventFeed
