"""Window states shared by queries that would keep identical ones (instances of one stored template).

A ``WindowState`` holds ``(t, seq, tick)`` per triple of one stream triple pattern. Two registered
queries keep *identical* window states for a pattern when they read the same streams through the
same stream triple patterns and windows (so every event and every close reaches both, at the same
evaluation times: their clocks and close schedules are the same function of the events) and were
registered with no event or advance in between (so they start from the same, empty, history). The
instances of one stored template (``http/queries.py``) are exactly such queries: a parameter is
pre-bound by a VALUES block at the top of the WHERE, which leaves the stream patterns alone.

``SharedWindows`` keys window states by ``(signature of all the query's stream patterns, pattern id,
origin, registration epoch)``; the engine bumps the epoch at every dispatched event and advance. The
queries of one key each get a ``WindowReader``; the engine drives them in lockstep (it hands each
event, advance and close to every query in turn, and identical queries make identical calls), so
the first reader to make a call — the *leader* — applies it to the one state and logs its result,
and the other readers replay that result instead of applying it again. An entry leaves the log
once every reader has read it; with a single reader nothing is logged at all.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field

from cqels_endpoint.runtime.patterns import StreamTriple
from cqels_endpoint.runtime.windows import WindowState, build_window


def signature(patterns: Sequence[StreamTriple]) -> tuple:
    """What makes two queries drive their windows identically: every stream pattern's stream,
    window and triple pattern, in id order (AST equality ignores source positions)."""
    return tuple((st.stream.value, st.window, st.triple) for st in patterns)


@dataclass(eq=False)
class _Entry:
    call: tuple  # the call's arguments, checked by the readers that replay it
    result: tuple
    unread: int  # readers that have not replayed it yet


@dataclass(eq=False)
class SharedWindow:
    """One window state and the log of calls its followers have not replayed yet."""

    key: Hashable
    state: WindowState
    readers: int = 0
    log: deque[_Entry] = field(default_factory=deque)
    first: int = 0  # the call number of log[0]; calls are numbered from 0 per shared window

    @property
    def next_call(self) -> int:
        return self.first + len(self.log)


class WindowReader:
    """A query's view of a shared window state: the calls of ``WindowState`` it makes, replayed
    from the leader's log when another reader already made them."""

    def __init__(self, registry: SharedWindows, shared: SharedWindow) -> None:
        self._registry = registry
        self._shared = shared
        self._position = shared.next_call
        self._closed = False

    def offer(self, t: int, tau: int, tick: object, seqs: Iterator[int]) -> tuple[int | None, tuple[int, ...]]:
        """Inserts a triple at ``t`` if the window admits it at clock ``tau``: ``(seq, expired
        seqs)``, or ``(None, ())`` when it does not. ``seqs`` numbers a new insertion (leader only)."""

        def apply(state: WindowState) -> tuple:
            if not state.admits(t, tau):
                return (None, ())
            seq = next(seqs)
            return (seq, tuple(state.insert(t, seq, tick)))

        return self._call(("offer", t, tau, tick), apply)

    def expire(self, tau: int, tick: object = None) -> tuple[int, ...]:
        """The seqs leaving the window before the evaluation at ``tau`` (``WindowState.expire``)."""
        return self._call(("expire", tau, tick), lambda state: tuple(state.expire(tau, tick)))

    def __len__(self) -> int:
        return len(self._shared.state)

    @property
    def state_key(self) -> Hashable:
        """Equal for the readers of one window state."""
        return self._shared.key

    @property
    def state_name(self) -> str:
        return type(self._shared.state).__name__

    @property
    def shared_by(self) -> int:
        """How many queries read this window state."""
        return self._shared.readers

    def close(self) -> None:
        """The query is gone: the entries it will never read stop waiting for it."""
        if self._closed:
            return
        self._closed = True
        shared = self._shared
        for entry in itertools.islice(shared.log, self._position - shared.first, None):
            entry.unread -= 1
        _trim(shared)
        shared.readers -= 1
        if shared.readers == 0:
            self._registry._drop(shared)

    def _call(self, call: tuple, apply) -> tuple:
        shared = self._shared
        if self._position == shared.next_call:
            result = apply(shared.state)
            if shared.readers > 1:
                shared.log.append(_Entry(call, result, shared.readers - 1))
            else:  # a lone reader logs nothing; its call still takes a number
                shared.first += 1
        else:
            entry = shared.log[self._position - shared.first]
            if entry.call != call:
                # Identical queries make identical calls; anything else is an engine bug, and
                # replaying a result for another call would corrupt this query's window silently.
                msg = f"shared window {shared.key!r}: replayed {entry.call!r} for {call!r}"
                raise AssertionError(msg)
            result = entry.result
            entry.unread -= 1
            _trim(shared)
        self._position += 1
        return result


def _trim(shared: SharedWindow) -> None:
    while shared.log and shared.log[0].unread == 0:
        shared.log.popleft()
        shared.first += 1


class SharedWindows:
    """The registry of shared window states of one engine (module docstring)."""

    def __init__(self) -> None:
        self._windows: dict[Hashable, SharedWindow] = {}

    def readers(self, patterns: Sequence[StreamTriple], origin_ms: int | None, epoch: int) -> list[WindowReader]:
        """One reader per stream pattern of a query registered at ``epoch``, joining the window
        states of the identical queries registered at the same epoch."""
        sig = signature(patterns)
        readers = []
        for st in patterns:
            key = (sig, st.id, origin_ms, epoch)
            shared = self._windows.get(key)
            if shared is None:
                shared = self._windows[key] = SharedWindow(key, build_window(st.window))
            shared.readers += 1
            readers.append(WindowReader(self, shared))
        return readers

    def stats(self) -> dict[str, int]:
        """``windows``: window states held; ``readers``: the query windows reading them."""
        return {"windows": len(self._windows), "readers": sum(w.readers for w in self._windows.values())}

    def _drop(self, shared: SharedWindow) -> None:
        if self._windows.get(shared.key) is shared:
            del self._windows[shared.key]
