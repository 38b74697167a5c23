"""Window states shared by queries that would keep identical ones (instances of one stored template).

A ``WindowState`` holds ``(t, seq)`` per triple of one stream triple pattern and stream: a pattern
read from a variable stream (``STREAM ?s``) keeps one state per stream it has read, made at that
stream's first triple, since each stream's window is a graph of its own (a ``[TRIPLES n]`` keeps
the last ``n`` triples of each stream, a time window each stream's triples in time order). Two registered
queries keep *identical* window states for a pattern when they read the same streams through the
same stream triple patterns and windows (so every event and every close reaches both, at the same
evaluation times: their clocks and close schedules are the same function of the events) and were
registered with no event or advance in between (so they start from the same, empty, history). The
instances of one stored template (``engine.registry``) are exactly such queries: a parameter is
pre-bound by a VALUES block at the top of the WHERE, which leaves the stream patterns alone.

``SharedWindows`` keys window states by ``(signature of all the query's stream patterns, pattern id,
origin, registration epoch)``; the engine bumps the epoch at every dispatched event and advance.
The signature holds each pattern's window configuration, whose dialect's meaning is part of it
(``TriplesWindow.stream_wide``), so queries reading one text in two dialects share no state. The
queries of one key each get a ``WindowReader``; the engine drives them in lockstep (it hands each
event, advance and close to every query in turn, and identical queries make identical calls), so
the first reader to make a call — the *leader* — applies it to the one state and logs its result,
and the other readers replay that result instead of applying it again (``CallLog``).

A ``STREAM ?s`` pattern that static data restricts reads the streams its caches name, which each
query learns when its own caches change: its window states are never shared.

A query whose every window state has it as its only reader, with no size bound, no ``STREAM ?s``
and no stream-wide count (``WindowReader.alone``), skips its readers: its ``runtime.feed.EventFeed``
makes the calls on the states directly. With one reader nothing is logged, and the log's numbering
is only relative (a reader joining gets ``next_call``), so the two ways may alternate; the query
decides again whenever a reader joins or leaves (``SharedWindows.generation``).

A bound on the triples of a window state (``Limits.max_window_triples``) is applied in ``offer``:
a triple arriving at a full state is shed (not inserted, counted by each reader in ``shed``) or
raises ``LimitExceeded``, as the limits say.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field

from cqels_endpoint.plan.patterns import StreamTriple
from cqels_endpoint.query.windows import WindowConfig
from cqels_endpoint.runtime.limits import LimitExceeded, Limits
from cqels_endpoint.runtime.windows import WindowState, build_window


def signature(patterns: Sequence[StreamTriple]) -> tuple:
    """What makes two queries drive their windows identically: every stream pattern's stream,
    window and triple pattern, in id order (AST equality ignores source positions)."""
    return tuple((st.stream, st.window, st.triple) for st in patterns)


@dataclass(eq=False)
class _Entry:
    call: tuple  # the call's arguments, checked by the readers that replay it
    result: object
    unread: int  # readers that have not replayed it yet


class CallLog:
    """Calls that identical readers make in lockstep on one shared object.

    Each reader holds a *position* (the number of its next call, from ``join``). The first reader
    to make call k — the leader — applies it and logs the result for the others, which replay it
    instead of applying it again; an entry leaves the log once every reader has read it, and with a
    single reader nothing is logged at all.
    """

    def __init__(self, name: object) -> None:
        self.name = name
        self.readers = 0
        self.log: deque[_Entry] = deque()
        self.first = 0  # the call number of log[0]; calls are numbered from 0

    @property
    def next_call(self) -> int:
        return self.first + len(self.log)

    def join(self) -> int:
        """A new reader: its position (it replays nothing made before it joined)."""
        self.readers += 1
        return self.next_call

    def call(self, position: int, call: tuple, apply: Callable[[], object]) -> object:
        """The result of call number ``position`` (``call`` names it; ``apply()`` makes it)."""
        if position == self.next_call:
            result = apply()
            if self.readers > 1:
                self.log.append(_Entry(call, result, self.readers - 1))
            else:  # a lone reader logs nothing; its call still takes a number
                self.first += 1
            return result
        entry = self.log[position - self.first]
        if entry.call != call:
            # Identical readers make identical calls; anything else is an engine bug, and replaying
            # a result for another call would corrupt this reader's state silently.
            msg = f"shared {self.name!r}: replayed {entry.call!r} for {call!r}"
            raise AssertionError(msg)
        entry.unread -= 1
        self._trim()
        return entry.result

    def leave(self, position: int) -> int:
        """A reader at ``position`` is gone: the entries it will never read stop waiting for it.
        Returns how many readers are left."""
        for entry in itertools.islice(self.log, max(position - self.first, 0), None):
            entry.unread -= 1
        self._trim()
        self.readers -= 1
        return self.readers

    def _trim(self) -> None:
        while self.log and self.log[0].unread == 0:
            self.log.popleft()
            self.first += 1


@dataclass(eq=False)
class SharedWindow:
    """The window state of each stream a pattern reads (one, unless it is a ``STREAM ?s``), and the
    log of calls its followers have not replayed yet."""

    key: Hashable
    config: WindowConfig
    per_stream: bool = False  # a STREAM ?s pattern's: a state per stream it reads
    states: dict[str, WindowState] = field(default_factory=dict)  # by stream, in the order first read
    calls: CallLog = field(init=False)

    def __post_init__(self) -> None:
        self.calls = CallLog(self.key)
        self.state_name = type(build_window(self.config)).__name__

    @property
    def readers(self) -> int:
        return self.calls.readers

    def state(self, stream: str) -> WindowState:
        state = self.states.get(stream)
        if state is None:
            state = self.states[stream] = build_window(self.config)
        return state

    def expire(self, tau: int) -> tuple[int, ...]:
        """``WindowState.expire`` of every stream's state, stream by stream. A ``STREAM ?s``
        pattern's state left empty goes (an empty state remembers nothing), so the work stays that
        of the streams in the window, not of every stream ever read."""
        gone: list[int] = []
        for stream, state in list(self.states.items()):
            gone.extend(state.expire(tau))
            if self.per_stream and not len(state):
                del self.states[stream]
        return tuple(gone)

    def expiry(self) -> int | None:
        """The earliest ``τ`` at which ``expire(τ)`` removes something (None: no time does)."""
        times = [time for state in self.states.values() if (time := state.expiry()) is not None]
        return min(times) if times else None

    def __len__(self) -> int:
        return sum(len(state) for state in self.states.values())


class WindowReader:
    """A query's view of a shared window state: the calls of ``WindowState`` it makes, replayed
    from the leader's log when another reader already made them."""

    def __init__(self, registry: SharedWindows, shared: SharedWindow) -> None:
        self._registry = registry
        self._shared = shared
        self._position = shared.calls.join()
        self._closed = False
        self.shed = 0  # triples this query's window did not take because it was full

    def offer(self, stream: str, t: int, tau: int, seqs: Iterator[int], index: int = 0) -> tuple[int | None, tuple[int, ...]]:
        """Inserts a triple of ``stream`` at ``t``, the ``index``-th statement of its event, if the
        window admits it at clock ``tau``: ``(seq, expired seqs)``, or ``(None, expired seqs)`` when
        it does not (or it is full and sheds it). ``seqs`` numbers a new insertion (leader only)."""
        shared = self._shared
        bound = self._registry.limits.max_window_triples

        def apply() -> tuple:
            state = shared.state(stream)
            if not state.admits(t, tau):
                return (None, (), False)
            gone: tuple[int, ...] = ()
            if bound is not None and len(state) >= bound:
                # What is out of the window at the query's clock makes room first (the evaluation
                # at ``tau`` would expire it anyway).
                gone = tuple(state.expire(tau))
                if len(state) >= bound:
                    if not self._registry.limits.sheds:
                        msg = f"{self.describe(stream)} is full: it holds {len(state)} triples, the limit max_window_triples={bound}"
                        raise LimitExceeded(msg)
                    return (None, gone, True)
            seq = next(seqs)
            return (seq, gone + tuple(state.insert(t, seq, index)), False)

        seq, expired, shed = self._call(("offer", stream, t, tau, index), apply)
        self.shed += shed
        return seq, expired

    def expire(self, tau: int) -> tuple[int, ...]:
        """The seqs leaving the window before the evaluation at ``tau`` (``WindowState.expire``)."""
        return self._call(("expire", tau), lambda: self._shared.expire(tau))

    def statements(self, stream: str, k: int) -> tuple[int, ...]:
        """The seqs leaving a stream-wide count window as an event of ``k`` statements of ``stream``
        begins (``StreamTriplesState.statements``)."""
        return self._call(("statements", stream, k), lambda: tuple(self._shared.state(stream).statements(k)))

    def expiry(self) -> int | None:
        """``SharedWindow.expiry``: read between events, when every reader has made its calls."""
        return self._shared.expiry()

    def __len__(self) -> int:
        return len(self._shared)

    @property
    def streams(self) -> int:
        """How many streams' triples the window holds now."""
        return len(self._shared.states)

    def describe(self, stream: str) -> str:
        """Names the window of ``stream`` in messages: its stream pattern and stream."""
        return f"the window of stream pattern {self._shared.key[1]} on <{stream}>"

    def alone(self) -> bool:
        """Whether this query reads its state alone, with no size bound and a single stream: its
        calls can be made on the state itself (``state``), since no other reader replays them."""
        return self._shared.readers == 1 and self.feedable()

    def feedable(self) -> bool:
        """Whether the calls of every reader of the state can be made once on the state itself
        (``state``), bypassing the call log: a single stream and no size bound (``alone``; the
        readers of a unit's shared buffer, ``engine.shared_plan``)."""
        return not self._shared.per_stream and self._registry.limits.max_window_triples is None

    def state(self, stream: str) -> WindowState:
        """The window state of ``stream``, for the calls of a lone reader (``alone``): with one
        reader the call log stays empty and numbers nothing that another reader could replay."""
        return self._shared.state(stream)

    @property
    def registry(self) -> SharedWindows:
        return self._registry

    @property
    def state_key(self) -> Hashable:
        """Equal for the readers of one window state."""
        return self._shared.key

    @property
    def state_name(self) -> str:
        return self._shared.state_name

    @property
    def shared_by(self) -> int:
        """How many queries read this window state."""
        return self._shared.readers

    def close(self) -> None:
        """The query is gone: the entries it will never read stop waiting for it."""
        if self._closed:
            return
        self._closed = True
        self._registry.generation += 1
        if self._shared.calls.leave(self._position) == 0:
            self._registry._drop(self._shared)

    def _call(self, call: tuple, apply: Callable[[], tuple]) -> tuple:
        result = self._shared.calls.call(self._position, call, apply)
        self._position += 1
        return result


class SharedWindows:
    """The registry of shared window states of one engine (module docstring)."""

    def __init__(self, limits: Limits | None = None) -> None:
        self._windows: dict[Hashable, SharedWindow] = {}
        self.limits = limits or Limits()
        # Bumped whenever a reader joins or leaves a state: a query that bypasses its readers
        # (``runtime.feed``) while it reads its states alone checks it has not changed.
        self.generation = 0

    def readers(self, patterns: Sequence[StreamTriple], origin_ms: int | None, epoch: int) -> list[WindowReader]:
        """One reader per stream pattern of a query registered at ``epoch``, joining the window
        states of the identical queries registered at the same epoch (none for a query whose
        static data restricts a ``STREAM ?s``: module docstring)."""
        self.generation += 1
        sig = signature(patterns)
        private = object() if any(st.restricted_by for st in patterns) else None
        readers = []
        for st in patterns:
            key = (sig, st.id, origin_ms, epoch, private)
            shared = self._windows.get(key)
            if shared is None:
                shared = self._windows[key] = SharedWindow(key, st.window, st.variable is not None)
            readers.append(WindowReader(self, shared))
        return readers

    def stats(self) -> dict[str, int]:
        """``windows``: the shared windows held; ``readers``: the query windows reading them."""
        return {"windows": len(self._windows), "readers": sum(w.readers for w in self._windows.values())}

    def sizes(self) -> list[int]:
        """The triples each window state holds now (each state once, however many queries read it)."""
        return [len(state) for w in self._windows.values() for state in w.states.values()]

    def _drop(self, shared: SharedWindow) -> None:
        if self._windows.get(shared.key) is shared:
            del self._windows[shared.key]
