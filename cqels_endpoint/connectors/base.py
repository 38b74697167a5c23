"""The two kinds of connector, behind which every transport sits: a ``Source`` reads messages and
pushes each as one batch of events; a ``Sink`` takes a query's emissions and publishes each.

A transport subclass implements ``_serve()``: connect, then take messages (a source calls
``self.deliver(payload, origin)`` for each; a sink calls ``self.next_emission()`` and publishes
it) until the connection is lost (raise ``ConnectionLost`` or any ``OSError``) or ``stopping`` is
set (return). The base runs it in its own thread, reconnects with backoff (``specs.Retry``) and
keeps the state every listing shows:

- ``connecting``: the first attempt; ``connected``; ``retrying`` (``reason``: the last failure,
  ``retry_in_s``); ``failed`` (past ``Retry.attempts``, or a declaration that cannot work:
  ``reason``); ``stopped``. A sink whose query is not registered is ``waiting``. A sink is
  subscribed when it is made (to a query registered already) and at each registration of the
  query, before its first event, so it publishes every emission from then on, however soon a
  registration comes and goes and whenever its thread looks.

**Delivering a message** (``Source.deliver``): the payload is read in the source's syntax
(``events``), each event's time taken as the spec's ``time`` says, and the batch pushed whole onto
the stream. A message that does not parse, or whose events the stream refuses (older than its
watermark, too far ahead), is counted by reason, logged with its origin (the MQTT topic, the
address) and skipped: the messages after it go on. ``deliver`` returns once the engine accepted or
refused the batch for good, so a transport acknowledges the message after it (an MQTT QoS 1
message then): a message the server did not take before it stopped stays with the broker.

**A sink's buffer** holds up to ``buffer`` emissions between the engine and the transport (the
engine never waits for a peer): when full, ``overflow`` says what goes (``drop-oldest``,
``drop-newest``, or ``disconnect``: the subscription ends and starts again from the next
emission), every emission lost is counted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections import Counter, deque

import pyoxigraph as ox

from cqels_endpoint.connectors.events import EVENT_FORMATS, Batch, MalformedBatch, reader
from cqels_endpoint.connectors.specs import Connection, SinkSpec, SourceSpec
from cqels_endpoint.connectors.subscriptions import SLOW, Entry, QueryHub, Subscriber, SubscriptionEnded, Subscriptions
from cqels_endpoint.engine import Engine
from cqels_endpoint.errors import LateEventError, UnknownQueryError
from cqels_endpoint.runtime.streams import FutureEventError, to_millis

log = logging.getLogger("cqels_endpoint.connectors")

CONNECTING = "connecting"
CONNECTED = "connected"
RETRYING = "retrying"
FAILED = "failed"
STOPPED = "stopped"
WAITING = "waiting"

# How often a sink waiting for its query looks for it again, and a serving loop checks ``stopping``.
_POLL_S = 0.2


class ConnectionLost(Exception):
    """The peer went away; the connector reconnects (after backoff)."""


class ConnectorFailed(Exception):
    """The connector cannot work as declared (a missing credential, a file it cannot read): no retry."""


class Connector:
    """The thread, state and reconnection of one source or sink (module docstring)."""

    role = "connector"

    def __init__(self, spec: Connection):
        self.spec = spec
        self.name = spec.name
        self.state = CONNECTING
        self.reason: str | None = None
        self.attempts = 0  # failed connection attempts in a row
        self.connections = 0  # times connected
        self.retry_at: float | None = None
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"cqels-{self.role}-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ends the connection and the thread (waiting up to ``timeout`` seconds for it)."""
        self.stopping.set()
        self._interrupt()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._set(STOPPED, None)

    def _interrupt(self) -> None:
        """Wake ``_serve`` out of a blocking read (a transport closes its socket here)."""

    def _serve(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        retry = self.spec.retry
        while not self.stopping.is_set():
            try:
                self._serve()
                if self.stopping.is_set():
                    break
                raise ConnectionLost("the connection ended")
            except ConnectorFailed as error:
                self._set(FAILED, str(error))
                log.error("%s %r failed: %s", self.role, self.name, error)
                return
            except Exception as error:  # a transport's failure of any kind: logged, retried
                if self.stopping.is_set():
                    break
                self.attempts += 1
                reason = f"{type(error).__name__}: {error}" if not isinstance(error, ConnectionLost) else str(error)
                if retry.attempts is not None and self.attempts > retry.attempts:
                    self._set(FAILED, f"{reason} (gave up after {retry.attempts} attempts)")
                    log.error("%s %r gave up after %d attempts: %s", self.role, self.name, retry.attempts, reason)
                    return
                wait = backoff_s(retry.initial_ms, retry.max_ms, self.attempts)
                self.retry_at = time.monotonic() + wait
                self._set(RETRYING, reason)
                log.warning("%s %r: %s; retrying in %.1f s", self.role, self.name, reason, wait)
                self.stopping.wait(wait)
                self.retry_at = None
        self._set(STOPPED, None)

    def secret(self, variable: str | None) -> str | None:
        """The value of the environment variable a credential is declared by (``ConnectorFailed``
        when it is not set: the connector cannot work until the server is started with it)."""
        if variable is None:
            return None
        value = os.environ.get(variable)
        if value is None:
            raise ConnectorFailed(f"the environment variable {variable} is not set for the server")
        return value

    def connected(self) -> None:
        """A transport calls this once its connection is up."""
        self.attempts = 0
        self.connections += 1
        self._set(CONNECTED, None)

    def _set(self, state: str, reason: str | None) -> None:
        with self._lock:
            if self.state == STOPPED and state != STOPPED:
                return
            self.state, self.reason = state, reason

    def status(self) -> dict:
        """The connector's entry in ``GET /sources`` or ``GET /sinks``."""
        with self._lock:
            state, reason = self.state, self.reason
        retry_at = self.retry_at
        return {
            "name": self.name,
            "state": state,
            "reason": reason,
            "retry_in_s": None if retry_at is None or state != RETRYING else round(max(0.0, retry_at - time.monotonic()), 3),
            "attempts": self.attempts,
            "connections": self.connections,
        }


def backoff_s(initial_ms: int, max_ms: int, attempt: int) -> float:
    """The wait before reconnection ``attempt`` (1, 2, …): doubling from ``initial_ms`` up to
    ``max_ms``, less up to a fifth at random so that many clients do not reconnect in step."""
    wait = min(max_ms, initial_ms * 2 ** min(attempt - 1, 30)) / 1000
    return wait * (1 - random.random() / 5)


class Source(Connector):
    """Pushes each message it reads onto ``stream`` (module docstring)."""

    role = "source"

    def __init__(self, spec: SourceSpec, engine: Engine, stream: str):
        super().__init__(spec)
        self.engine = engine
        self.stream = stream
        self._time_predicate = None if spec.time in ("payload", "arrival") else ox.NamedNode(spec.time)
        # The time predicate is looked for in pyoxigraph triples, not the compiled reader's forms.
        self._read = reader(EVENT_FORMATS[spec.format], compiled=self._time_predicate is None)
        self.received = 0  # messages
        self.accepted = 0  # events
        self.late = 0  # events accepted though older than the stream's latest (reordered)
        self.rejected: Counter[str] = Counter()  # messages, by reason
        self.last_event_time: int | None = None
        self.last_arrival: int | None = None

    def deliver(self, payload: bytes, origin: str) -> bool:
        """Reads ``payload`` (from ``origin``: a topic, an address) and pushes its events; True when
        accepted, False when refused and counted (module docstring)."""
        try:
            return self._deliver(payload, origin)
        finally:
            # Counted last: a listing that shows a message received shows what became of it.
            self.received += 1

    def _deliver(self, payload: bytes, origin: str) -> bool:
        try:
            batch = self._batch(payload)
        except MalformedBatch as error:
            return self._reject("malformed", origin, str(error), malformed=True)
        clock = self.engine.streams.clocks.get(self.stream)
        before = None if clock is None else clock.latest
        try:
            self.engine.push_batch(self.stream, batch.events)
        except LateEventError as error:
            return self._reject("late", origin, f"{batch.names[error.index]}: {error}")
        except FutureEventError as error:
            return self._reject("future", origin, f"{batch.names[error.index]}: {error}")
        except (ValueError, TypeError) as error:  # a time the engine cannot hold
            return self._reject("malformed", origin, str(error), malformed=True)
        self.accepted += len(batch.events)
        times = [event_time for _, event_time in batch.events if event_time is not None]
        if before is not None:
            self.late += sum(1 for event_time in times if event_time < before)
        self.last_arrival = int(time.time() * 1000)
        if times:
            self.last_event_time = max(times)
        return True

    def _batch(self, payload: bytes) -> Batch:
        spec = self.spec
        batch = self._read(payload, None, None)
        if spec.time == "arrival":
            batch.events = [(triples, None) for triples, _ in batch.events]
        elif self._time_predicate is not None:
            batch.events = [(triples, self._event_time(triples, name)) for (triples, _), name in zip(batch.events, batch.names)]
        return batch

    def _event_time(self, triples: object, name: str) -> int:
        """The time the spec's predicate gives the event (its only object)."""
        predicate = self._time_predicate
        found = [t.object for t in triples if t.predicate == predicate]
        if len(found) != 1:
            raise MalformedBatch(f"{name}: has {len(found) or 'no'} {predicate} triple{'s' if found else ''}; "
                                 "the source reads the event's time from exactly one")
        value = found[0]
        try:
            if isinstance(value, ox.Literal) and value.datatype.value.endswith("#integer"):
                return to_millis(int(value.value))
            return to_millis(value)
        except (ValueError, TypeError) as error:
            raise MalformedBatch(f"{name}: its time {value}: {error}") from None

    def _reject(self, reason: str, origin: str, message: str, *, malformed: bool = False) -> bool:
        self.rejected[reason] += 1
        if malformed:
            self.engine.reject_malformed(self.stream)
        log.warning("source %r rejected a message from %s (%s): %s", self.name, origin, reason, message)
        return False

    def status(self) -> dict:
        spec = self.spec
        now = int(time.time() * 1000)
        return {
            **super().status(),
            "kind": spec.kind,
            "stream": self.stream,
            "received": self.received,
            "accepted": self.accepted,
            "rejected": dict(self.rejected),
            "late": self.late,
            # Event-time lag: how far the newest event taken is behind the wall clock.
            "lag_ms": None if self.last_event_time is None else now - self.last_event_time,
            "last_message_ms_ago": None if self.last_arrival is None else now - self.last_arrival,
        }


class Sink(Connector):
    """Publishes each emission of the query ``spec.query`` (module docstring): a transport's
    ``_serve`` calls ``next_emission`` and publishes what it returns."""

    role = "sink"

    def __init__(self, spec: SinkSpec, subscriptions: Subscriptions):
        super().__init__(spec)
        self.subscriptions = subscriptions
        self._subscriber: Subscriber | None = None
        # Subscriptions made when the query was registered (``Subscriptions.on_hub``, under the
        # engine's lock), so none of its emissions is missed while the sink thread looks elsewhere;
        # the thread takes them in order.
        self._registered: deque[Subscriber] = deque()
        self._registered_lock = threading.Lock()
        self._stop_listening = subscriptions.on_hub(self._on_registered)
        with contextlib.suppress(UnknownQueryError):  # one registered already: followed from now, not from the thread's first look
            self._on_registered(subscriptions.hub(spec.query))
        self.published = 0
        self.failed_publishes = 0
        self.restarts = 0  # subscriptions ended by a full buffer (overflow "disconnect")
        self._dropped_before = 0  # emissions dropped under the subscriptions that ended

    def next_emission(self, timeout: float = _POLL_S) -> Entry | None:
        """The next emission to publish, or None after ``timeout`` seconds without one (or while the
        query is not registered: the sink is ``waiting`` then)."""
        subscriber = self._subscriber
        if subscriber is None:
            subscriber = self._attach()
            if subscriber is None:
                self.stopping.wait(timeout)
                return None
        try:
            return subscriber.next(timeout)
        except SubscriptionEnded as ended:
            self._subscriber = None
            self._dropped_before += subscriber.dropped
            if ended.reason == SLOW:
                self.restarts += 1
            log.info("sink %r: its subscription ended (%s); attaching again", self.name, ended.message)
            return None

    def _on_registered(self, hub: QueryHub) -> None:
        if hub.name != self.spec.query or self.stopping.is_set():
            return
        with self._registered_lock:
            if any(made.hub is hub for made in self._registered):  # the registration came as the sink began
                return
            subscriber, _, _ = hub.subscribe(None, capacity=self.spec.buffer, overflow=self.spec.overflow)
            self._registered.append(subscriber)

    def _attach(self) -> Subscriber | None:
        """The next subscription: one made at a registration, else one to the query registered now."""
        spec = self.spec
        with self._registered_lock:
            subscriber = self._registered.popleft() if self._registered else None
        if subscriber is None:
            try:
                hub = self.subscriptions.hub(spec.query)
            except UnknownQueryError:
                self._set(WAITING, f"query {spec.query!r} is not registered")
                return None
            with self._registered_lock:  # made at its registration, after this thread last looked
                made = next((s for s in self._registered if s.hub is hub), None)
                if made is not None:
                    self._registered.remove(made)
            subscriber = made or hub.subscribe(None, capacity=spec.buffer, overflow=spec.overflow)[0]
        query = subscriber.hub.query
        if query.form != "CONSTRUCT" and spec.format == "ntriples":
            subscriber.close()
            raise ConnectorFailed(f"format ntriples publishes CONSTRUCT triples; query {spec.query!r} is a {query.form}")
        self._subscriber = subscriber
        if self.state == WAITING:
            self._set(CONNECTED, None)
        return subscriber

    def payload(self, entry: Entry) -> bytes:
        """What is published for ``entry``: its JSON (the SSE payload), or its N-Triples."""
        emission = entry.emission
        if self.spec.format == "ntriples":
            return ox.serialize(emission.graph(), format=ox.RdfFormat.N_TRIPLES)
        return emission.json_text().encode()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop_listening()
        super().stop(timeout)
        subscriber, self._subscriber = self._subscriber, None
        with self._registered_lock:
            registered = [*self._registered, *([subscriber] if subscriber is not None else [])]
            self._registered.clear()
        for made in registered:
            made.close()

    def status(self) -> dict:
        spec = self.spec
        subscriber = self._subscriber
        return {
            **super().status(),
            "kind": spec.kind,
            "query": spec.query,
            "topic": spec.topic,
            "published": self.published,
            "failed": self.failed_publishes,
            "dropped": self._dropped_before + (0 if subscriber is None else subscriber.dropped),
            "buffered": 0 if subscriber is None else subscriber.queued,
            "restarts": self.restarts,
        }
