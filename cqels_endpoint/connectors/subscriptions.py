"""Fan-out of a continuous query's emissions to the HTTP clients reading its results.

One ``QueryHub`` per registered query subscribes to it once (``ContinuousQuery.subscribe``) and
hands every emission, numbered by a per-query sequence number, to

- a bounded replay buffer (the last ``replay`` emissions), from which a client that reconnects
  with ``Last-Event-ID`` gets what it missed, and
- one bounded queue per subscriber.

The engine delivers emissions synchronously, inside ``push``/``advance`` and under its lock, so
nothing here may wait for a client. What happens when a subscriber's queue is full is its
overflow policy (``OVERFLOW_POLICIES``):

- ``disconnect`` (the default, and the only one of SSE): the subscriber is dropped on the spot (its
  reason logged on ``cqels_endpoint.http`` and counted) and resumes, if it wants, with
  ``Last-Event-ID``;
- ``drop-oldest``: the oldest queued emission is discarded to make room for the new one;
- ``drop-newest``: the new emission is not queued.

Every discarded emission is counted, per subscriber (``Subscriber.dropped``) and per (query,
policy) (``Subscriptions.stats``); the entry a subscriber takes after a gap says how many it
missed (``Subscriber.next``: ``skipped``). Serialising an emission is left to the subscribers' own threads (``Entry``
caches each rendering, so fifty subscribers of one format serialise it once).

>>> from cqels_endpoint.engine import Engine
>>> engine = Engine()
>>> q = engine.register("SELECT ?s WHERE { STREAM <http://ex.org/s> [NOW] { ?s ?p ?o } }", name="q")
>>> subscriptions = Subscriptions(engine, replay=10, queue=5)
>>> hub = subscriptions.hub("q")
>>> subscriber, replay, gap = hub.subscribe(after=None)
>>> engine.push("http://ex.org/s", "<http://ex.org/a> <http://ex.org/p> 1 .", time=1)
>>> entry = subscriber.next(timeout=0)
>>> entry.seq, entry.emission.time
(1, 1)
>>> _, replay, gap = hub.subscribe(after=0)  # a client resuming from before emission 1 gets it again
>>> [entry.seq for entry in replay], gap
([1], None)
>>> subscriptions.close()
>>> engine.close()
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from cqels_endpoint.engine import ContinuousQuery, Emission, Engine, UnknownQueryError

log = logging.getLogger("cqels_endpoint.http")

# Why a subscriber was dropped (the ``reason`` label of the disconnect counter).
SLOW = "slow"
UNREGISTERED = "unregistered"
SHUTDOWN = "shutdown"
FAILED = "failed"  # the engine stopped the query (past its limits): the stream ends with an error event

# What a full subscriber queue does with a new emission (module docstring).
DISCONNECT = "disconnect"
DROP_OLDEST = "drop-oldest"
DROP_NEWEST = "drop-newest"
OVERFLOW_POLICIES = (DISCONNECT, DROP_OLDEST, DROP_NEWEST)


@dataclass(frozen=True, eq=False)
class Entry:
    """One emission with its per-query sequence number (the SSE ``id``)."""

    seq: int
    emission: Emission = field(repr=False)
    _rendered: dict = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:  # short, for logs and doctests
        return f"Entry(seq={self.seq}, emission=...)"

    def rendered(self, key: object, render: Callable[[Entry], bytes]) -> bytes:
        """``render(self)``, computed once per ``key`` (a race only computes it twice, same bytes)."""
        found = self._rendered.get(key)
        if found is None:
            found = self._rendered[key] = render(self)
        return found


@dataclass(frozen=True)
class Gap:
    """Emissions ``first..last`` a resuming client missed that the replay buffer no longer holds."""

    first: int
    last: int


class SubscriptionEnded(Exception):
    """The subscription is over: ``reason`` is one of SLOW, UNREGISTERED, SHUTDOWN, FAILED; ``message`` says why."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


class Subscriber:
    """One client's bounded queue of ``capacity`` entries, full by its ``overflow`` policy (module
    docstring). The hub offers, the client's thread takes with ``next``.

    ``dropped``: the emissions the policy discarded; ``skipped``: those discarded just before the
    entry ``next`` returned last (its gap, for the client to report).
    """

    def __init__(self, hub: QueryHub, capacity: int, overflow: str, first_seq: int):
        self.hub = hub
        self.capacity = capacity
        self.overflow = overflow
        self.dropped = 0
        self.skipped = 0
        # The sequence number the next entry taken should have: the hub numbers every emission
        # and offers each to every subscriber, so any shortfall is what the policy discarded.
        self._expected = first_seq
        self._items: deque[Entry] = deque()
        self._ready = threading.Condition(threading.Lock())
        self._ended: SubscriptionEnded | None = None
        self._drain = False  # deliver what is queued before the end (unregistered), or not (slow)
        self.on_drop: Callable[[], None] | None = None  # called when the hub drops it for being slow
        # Called (from the engine's thread, any thread) after an entry is queued or the subscription
        # ends: the reader on an event loop waits for it instead of a thread blocked in ``next``.
        self.wake: Callable[[], None] | None = None

    def next(self, timeout: float) -> Entry | None:
        """The next entry, or None after ``timeout`` seconds without one (``skipped`` then counts the
        emissions discarded just before it); raises ``SubscriptionEnded``."""
        with self._ready:
            if not self._items and self._ended is None:
                self._ready.wait(timeout)
            if self._ended is not None and not (self._drain and self._items):
                raise self._ended
            if not self._items:
                return None
            entry = self._items.popleft()
            self.skipped = entry.seq - self._expected
            self._expected = entry.seq + 1
            return entry

    @property
    def queued(self) -> int:
        with self._ready:
            return len(self._items)

    def close(self) -> None:
        """The client is gone: stop offering it anything."""
        self.hub._remove(self)

    # ------------------------------------------------------------------ driven by the hub

    def _offer(self, entry: Entry) -> int | None:
        """Queues ``entry`` unless the queue is full and the policy says otherwise: the emissions
        discarded (0 or 1), or None when the subscriber must be disconnected. Never waits for the client."""
        discarded = 0
        with self._ready:
            if len(self._items) >= self.capacity:
                if self.overflow == DISCONNECT:
                    return None
                discarded = 1
                self.dropped += 1
                if self.overflow == DROP_NEWEST:
                    return discarded  # nothing new to take: no need to wake the reader
                self._items.popleft()
            self._items.append(entry)
            self._ready.notify()
        self._woken()
        return discarded

    def _woken(self) -> None:
        wake = self.wake
        if wake is not None:
            wake()

    def _end(self, reason: str, message: str, *, drain: bool) -> None:
        with self._ready:
            if self._ended is None:
                self._ended = SubscriptionEnded(reason, message)
                self._drain = drain
                if not drain:
                    self._items.clear()
            self._ready.notify()
        self._woken()


class QueryHub:
    """The subscribers and replay buffer of one registered query (see the module docstring)."""

    def __init__(self, query: ContinuousQuery, replay: int, queue: int, on_disconnect: Callable[[str, str], None],
                 on_discard: Callable[[str, str, int], None]):
        self.query = query
        self.name = query.name
        self.queue = queue
        self._on_disconnect = on_disconnect
        self._on_discard = on_discard
        self._buffer: deque[Entry] = deque(maxlen=replay)
        self._subscribers: set[Subscriber] = set()
        self._lock = threading.Lock()
        # Numbered on from the query's emission count, so ids match ``emitted`` when the hub is
        # attached between two pushes (it is, unless a push races the first subscriber).
        self._last = query.emitted
        self._unsubscribe = query.subscribe(self._on_emission, json_only=True)

    @property
    def last_seq(self) -> int:
        return self._last

    def subscriber_count(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def subscribe(self, after: int | None, capacity: int | None = None,
                  overflow: str | None = None) -> tuple[Subscriber, list[Entry], Gap | None]:
        """A new subscriber, the buffered entries numbered after ``after`` (None: no replay) and the
        gap between ``after`` and the oldest of them when the buffer no longer reaches back that far.

        ``capacity``: its queue's bound (None: the hub's ``queue``); ``overflow``: one of
        ``OVERFLOW_POLICIES`` (None: ``disconnect``). Taken atomically with respect to new
        emissions: every later one is offered to the queue, none twice.
        """
        capacity = self.queue if capacity is None else capacity
        overflow = DISCONNECT if overflow is None else overflow
        if capacity < 1:
            raise ValueError(f"a subscriber queue holds at least 1 emission, not {capacity}")
        if overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"unknown overflow policy {overflow!r}; use one of {', '.join(OVERFLOW_POLICIES)}")
        with self._lock:
            subscriber = Subscriber(self, capacity, overflow, self._last + 1)
            replay: list[Entry] = []
            gap = None
            if after is not None and after < self._last:
                replay = [entry for entry in self._buffer if entry.seq > after]
                oldest = replay[0].seq if replay else self._last + 1
                if oldest > after + 1:
                    gap = Gap(after + 1, oldest - 1)
            self._subscribers.add(subscriber)
        return subscriber, replay, gap

    def end(self, reason: str, message: str) -> None:
        """Detaches from the query and ends every subscription (after what is already queued)."""
        self._unsubscribe()
        with self._lock:
            subscribers, self._subscribers = self._subscribers, set()
        for subscriber in subscribers:
            subscriber._end(reason, message, drain=True)
            self._on_disconnect(self.name, reason)

    def _remove(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(subscriber)

    def _on_emission(self, emission: Emission) -> None:
        # Runs inside the engine's push/advance, under its lock: queue and drop, never wait.
        with self._lock:
            self._last += 1
            entry = Entry(self._last, emission)
            self._buffer.append(entry)
            slow = []
            discarded: Counter[str] = Counter()
            for subscriber in self._subscribers:
                outcome = subscriber._offer(entry)
                if outcome is None:
                    slow.append(subscriber)
                elif outcome:
                    discarded[subscriber.overflow] += outcome
            self._subscribers.difference_update(slow)
        for policy, count in discarded.items():
            self._on_discard(self.name, policy, count)
        for subscriber in slow:
            message = (
                f"more than {subscriber.capacity} emissions behind at emission {entry.seq}; "
                f"reconnect with Last-Event-ID to resume from the replay buffer"
            )
            log.warning("dropped a results subscriber of query %r: %s", self.name, message)
            subscriber._end(SLOW, message, drain=False)
            self._on_disconnect(self.name, SLOW)
            if subscriber.on_drop is not None:
                subscriber.on_drop()


class Subscriptions:
    """The hubs of one engine's queries: one per query, attached when it is registered (so its
    replay buffer holds its emissions from the first on), ended when it is unregistered.

    ``replay``: emissions kept per query for resumes; ``queue``: emissions a subscriber may lag behind.
    """

    def __init__(self, engine: Engine, *, replay: int, queue: int):
        self.engine = engine
        self.replay = replay
        self.queue = queue
        self._hubs: dict[str, QueryHub] = {}
        self._disconnects: Counter[tuple[str, str]] = Counter()
        self._discarded: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[QueryHub], None]] = []
        self._stop_observing = engine.observe(self._observe)

    def hub(self, name: str) -> QueryHub:
        """The hub of the query registered as ``name`` (``UnknownQueryError`` if none)."""
        with self._lock:
            hub = self._hubs.get(name)
        if hub is None:
            raise UnknownQueryError(f"no continuous query is registered as {name!r}")
        return hub

    def stats(self) -> tuple[dict[str, int], dict[tuple[str, str], int], dict[tuple[str, str], int]]:
        """Subscribers per query now, drops per (query, reason) and emissions the subscribers'
        overflow policies discarded per (query, policy) since the start."""
        with self._lock:
            hubs = list(self._hubs.values())
            disconnects = dict(self._disconnects)
            discarded = dict(self._discarded)
        return {hub.name: hub.subscriber_count() for hub in hubs}, disconnects, discarded

    def close(self) -> None:
        """Ends every subscription (the server is stopping)."""
        self._stop_observing()
        with self._lock:
            hubs, self._hubs = list(self._hubs.values()), {}
        for hub in hubs:
            hub.end(SHUTDOWN, "the server is stopping")

    def on_hub(self, listener: Callable[[QueryHub], None]) -> Callable[[], None]:
        """Calls ``listener(hub)`` with the hub of every query registered from now on, before its
        first event and before ``hub()`` finds it (under the engine's lock: it must not wait), so a
        subscription made then sees every emission. Returns a function to stop."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def _observe(self, query: ContinuousQuery, registered: bool) -> None:
        # Called by the engine under its lock, before the query's first event or after its last.
        if registered:
            hub = QueryHub(query, self.replay, self.queue, self._count_disconnect, self._count_discarded)
            with self._lock:
                listeners = list(self._listeners)
            for listener in listeners:
                listener(hub)
            with self._lock:
                self._hubs[query.name] = hub
            return
        with self._lock:
            hub = self._hubs.get(query.name)
            if hub is None or hub.query is not query:
                return
            del self._hubs[query.name]
        # Outside the lock: it counts under it.
        if query.failure is not None:
            hub.end(FAILED, f"query {query.name!r} failed: {query.failure}")
        else:
            hub.end(UNREGISTERED, f"query {query.name!r} was unregistered")

    def _count_disconnect(self, name: str, reason: str) -> None:
        with self._lock:
            self._disconnects[name, reason] += 1

    def _count_discarded(self, name: str, policy: str, count: int) -> None:
        with self._lock:
            self._discarded[name, policy] += count
