"""``GET /queries/{name}/results``: a registered query's emissions as they happen (answered natively
by ``asgi.py``: a stream waits on the event loop, holding no thread).

Two framings, chosen by ``Accept``:

- ``text/event-stream`` (the default): one Server-Sent Event per emission::

      id: 7
      event: emission
      data: {"query": "q1", "time": 1000, "r2s": "ISTREAM", "head": {"vars": […]}, "results": {…}}

  ``id`` is the query's emission sequence number (1, 2, …), ``data`` one line of JSON:
  ``head``/``results`` as in SPARQL 1.1 JSON results for SELECT, ``boolean`` for ASK, ``triples``
  (N-Triples text, or Turtle / JSON-LD by ``?format=`` or ``Accept``) for CONSTRUCT. Comment lines
  (``:``) say that the subscription started, report a replay gap or why the server ended the stream,
  and keep an idle connection alive every ``keepalive_s`` seconds so proxies do not close it.
- ``application/x-ndjson``: the same JSON objects, one per line; an idle stream gets an empty line
  as keep-alive (skip empty lines).

Resuming: a client sending ``Last-Event-ID: n`` (or ``?last-event-id=n``) first gets the buffered
emissions after ``n``, then the live ones. The buffer keeps the last ``replay_buffer`` emissions of
each query; when ``n`` is older, the emissions in between are lost: the stream starts with what is
available, says so in a comment (``: emissions 3..40 are no longer in the replay buffer``) and in the
``Cqels-Replay-Gap: 3-40`` response header (NDJSON has no comments). An ``n`` beyond the last
emission (the query was registered anew) gets the live emissions and a comment saying so.

A client that falls ``subscriber_queue`` emissions behind (or ``?buffer=n``, 1 to that) is
disconnected (logged on ``cqels_endpoint.http``, counted in ``/metrics``), unless it chose to lose
emissions instead with ``?overflow=drop-oldest`` or ``drop-newest`` (counted in ``/metrics``; the
``id`` of the next event it gets shows the gap); ingestion never waits for a client. The same
parameters hold for a WebSocket reader (``sockets.py``). Unknown query: 404. The name may contain ``/`` (instances ``template/instance``).

A query the engine stops because it failed (past its limits: docs/ARCHITECTURE.md, "Limits") ends
its streams with one error object after its last emission, then closes them: ``event: error`` with
``data: {"query": …, "error": "<reason>"}`` in SSE, the same object as an NDJSON line. Subscribing
to it afterwards gets a 409 naming the reason (until it is deleted and stored again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pyoxigraph as ox

from cqels_endpoint.connectors.subscriptions import (
    DISCONNECT,
    FAILED,
    OVERFLOW_POLICIES,
    Entry,
    QueryHub,
    SubscriptionEnded,
    Subscriptions,
)
from cqels_endpoint.engine import UnknownQueryError
from cqels_endpoint.http.context import Endpoint
from cqels_endpoint.http.errors import HttpError, not_acceptable_message
from cqels_endpoint.http.negotiation import by_name, choose, parse_accept
from cqels_endpoint.http.params import Params, query_params, single
from static_store import GRAPH_FORMATS, MediaFormat

EVENT_STREAM = "text/event-stream"
NDJSON = "application/x-ndjson"

#: The syntaxes of CONSTRUCT triples, the default first.
TRIPLE_FORMATS: tuple[MediaFormat, ...] = tuple(
    fmt
    for syntax in (ox.RdfFormat.N_TRIPLES, ox.RdfFormat.TURTLE, ox.RdfFormat.JSON_LD)
    for fmt in GRAPH_FORMATS
    if fmt.syntax == syntax
)

@dataclass
class Opened:
    """The answer to a results request before its body: the headers, and for a GET the stream."""

    headers: list[tuple[str, str]]
    stream: ResultStream | None


def open_results(context: Endpoint, name: str, method: str, accept: str | None, last_event_id: str | None,
                 query_string: bytes) -> Opened:
    """Check a ``GET``/``HEAD /queries/{name}/results`` request (``HttpError`` when refused) and,
    for a GET, subscribe; the caller runs ``stream`` (answered natively by ``asgi.py``)."""
    ndjson = _wants_ndjson(accept)
    params = query_params(query_string)
    after = resume_after(last_event_id, params)
    hub = find_hub(context, name)
    triple_format = emission_format(hub, params, accept)
    content_type = f"{NDJSON}; charset=utf-8" if ndjson else f"{EVENT_STREAM}; charset=utf-8"
    # No proxy may hold events back.
    headers = [("Content-Type", content_type), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
    capacity, overflow = queue_policy(params, context.config.subscriber_queue)
    if method == "HEAD":
        return Opened(headers, None)
    stream = ResultStream(context.subscriptions, hub, after, capacity, overflow)
    if stream.gap is not None:
        headers.append(("Cqels-Replay-Gap", f"{stream.gap.first}-{stream.gap.last}"))
    render = render_with(_ndjson_line if ndjson else _sse_event, triple_format)
    key = (ndjson, None if triple_format is None else triple_format.media_type)
    stream.frame(lambda entry: entry.rendered(key, render), ndjson, context.config.keepalive_s)
    return Opened(headers, stream)


def queue_policy(params: Params, most: int) -> tuple[int | None, str]:
    """``?buffer=`` (the subscriber's queue, 1 to ``most``, the server's --subscriber-queue; None:
    that) and ``?overflow=`` (what a full queue does, ``OVERFLOW_POLICIES``; ``disconnect`` by default)."""
    text = single(params, "buffer", "give one size")
    if text is not None and (not text.isdigit() or not 1 <= int(text) <= most):
        raise HttpError(400, f"buffer={text}: give a number of emissions from 1 to {most} (the server's --subscriber-queue)")
    overflow = single(params, "overflow", "give one policy") or DISCONNECT
    if overflow not in OVERFLOW_POLICIES:
        raise HttpError(400, f"overflow={overflow}: a full buffer does one of {', '.join(OVERFLOW_POLICIES)}")
    return None if text is None else int(text), overflow


def find_hub(context: Endpoint, name: str) -> QueryHub:
    """The hub of the query ``name``: 404 when none is registered, 409 when the engine stopped it."""
    try:
        return context.subscriptions.hub(name)
    except UnknownQueryError as error:
        failed = context.engine.failed.get(name)
        if failed is not None:
            raise HttpError(409, f"query {name!r} failed: {failed.failure}; DELETE it and PUT it again to restart it") from None
        raise HttpError(404, f"{error.args[0]}; register it with PUT /queries/{{name}}") from None


def emission_format(hub: QueryHub, params: Params, accept: str | None) -> MediaFormat | None:
    """The syntax of the CONSTRUCT triples of ``hub``'s emissions (``?format=``, ``Accept``); None
    for the other forms, which ``?format=`` does not apply to (400)."""
    format_name = single(params, "format", "give one syntax")
    if hub.query.form == "CONSTRUCT":
        return _triple_format(format_name, accept)
    if format_name is not None:
        raise HttpError(400,
            f"format={format_name}: ?format= chooses the syntax of CONSTRUCT triples, and query "
            f"{hub.name!r} is a {hub.query.form}, whose emissions are SPARQL JSON"
        )
    return None


def resume_after(header: str | None, params: Params) -> int | None:
    """The emission to resume after: the ``Last-Event-ID`` header, else ``?last-event-id=`` (400 when not a number)."""
    return _last_event_id(header, single(params, "last-event-id", "give one event id"))


def render_with(frame: Callable[[str, int], bytes], triple_format: MediaFormat | None) -> Callable[[Entry], bytes]:
    """The bytes of one entry: its JSON text (CONSTRUCT triples in ``triple_format``) in ``frame``."""

    def render(entry: Entry) -> bytes:
        return frame(emission_json(entry, triple_format), entry.seq)

    return render


def emission_json(entry: Entry, triple_format: MediaFormat | None) -> str:
    """The JSON text of one emission, CONSTRUCT triples written in ``triple_format`` (None: N-Triples)."""
    emission = entry.emission
    if emission.constructed and triple_format is not None and triple_format.syntax != ox.RdfFormat.N_TRIPLES:
        data = emission.to_json()
        data["triples"] = ox.serialize(emission.graph(), format=triple_format.syntax).decode("utf-8")
        return json.dumps(data, ensure_ascii=False)
    return emission.json_text()


def _sse_event(text: str, seq: int) -> bytes:
    # json.dumps escapes CR and LF inside strings, so the JSON is one line, as one data: field needs.
    return f"id: {seq}\nevent: emission\ndata: {text}\n\n".encode()


def _ndjson_line(text: str, seq: int) -> bytes:
    return (text + "\n").encode()


def _error(query: str, message: str, ndjson: bool) -> bytes:
    text = json.dumps({"query": query, "error": message}, ensure_ascii=False)
    return (text + "\n").encode() if ndjson else f"event: error\ndata: {text}\n\n".encode()


def _comment(text: str) -> bytes:
    return "".join(f": {line}\n" for line in text.splitlines()).encode() + b"\n"


class ResultStream:
    """One subscription to a query's emissions, read on the server's event loop (the engine's
    thread wakes it: ``Subscriber.wake``): ``entries`` yields them as they come; ``chunks`` yields
    the bytes of a results response (after ``frame``).

    ``after``: the emission to resume after (None: live ones only); ``capacity`` and ``overflow``:
    the subscriber queue's (``QueryHub.subscribe``).
    """

    def __init__(self, subscriptions: Subscriptions, hub: QueryHub, after: int | None, capacity: int | None = None,
                 overflow: str | None = None):
        self.subscriptions = subscriptions
        self.hub = hub
        self.subscriber, self._replay, self.gap = hub.subscribe(after, capacity, overflow)
        self._after = after
        self._gone = False
        self._woken = asyncio.Event()  # bound to the loop that first waits on it

    def frame(self, render: Callable[[Entry], bytes], ndjson: bool, keepalive_s: float) -> None:
        """How ``chunks`` writes: ``render`` an entry, NDJSON or SSE, a keep-alive every ``keepalive_s`` idle seconds."""
        self._render = render
        self._ndjson = ndjson
        self.keepalive_s = keepalive_s

    def client_gone(self) -> None:
        """The client hung up (on the stream's event loop): ``entries`` ends."""
        self._gone = True
        self._woken.set()

    async def entries(self, idle_s: float | None = None) -> AsyncIterator[tuple[Entry, int] | None]:
        """The replayed entries, then the live ones until the client is gone, each with the emissions
        its queue's overflow policy discarded just before it (0 for the replayed ones); None after
        ``idle_s`` seconds without one (None: never). Raises ``SubscriptionEnded`` when the server ends it."""
        loop = asyncio.get_running_loop()
        woken = self._woken

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: so is this stream
                loop.call_soon_threadsafe(woken.set)

        subscriber = self.subscriber
        subscriber.wake = wake
        try:
            for entry in self._replay:
                yield entry, 0
            last = time.monotonic()
            while True:
                woken.clear()
                entry = subscriber.next(timeout=0)
                if entry is not None:
                    yield entry, subscriber.skipped
                    last = time.monotonic()
                    continue
                if self._gone:
                    return
                if idle_s is None:
                    await woken.wait()
                    continue
                idle = idle_s - (time.monotonic() - last)
                if idle <= 0:
                    yield None
                    last = time.monotonic()
                    continue
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(woken.wait(), idle)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the subscription (whether or not ``entries`` ran: its client may be gone before)."""
        self.subscriber.wake = None
        self.subscriber.close()

    async def chunks(self) -> AsyncIterator[bytes]:
        """The response's bytes until the subscription ends or the client is gone."""
        ndjson = self._ndjson
        try:
            # The first write sends the headers: the client knows it is subscribed from here on.
            # NDJSON has no comments, so it opens with a keep-alive (an empty line).
            yield b"\n" if ndjson else _comment(self.greeting())
            async for item in self.entries(self.keepalive_s):
                if item is None:
                    yield b"\n" if ndjson else b": keep-alive\n\n"
                else:
                    yield self._render(item[0])
        except SubscriptionEnded as ended:
            if ended.reason == FAILED:
                yield _error(self.hub.name, ended.message, ndjson)
            elif not ndjson:
                yield _comment(f"stream ended by the server: {ended.message}")
        finally:
            self.close()  # now: the inner generator would only be closed when collected

    def greeting(self) -> str:
        """What the client is told once subscribed: the last emission, and what of its resume is lost."""
        gap, after = self.gap, self._after
        lines = [f"subscribed to query {self.hub.name}; last emission {self.hub.last_seq}"]
        if gap is not None:
            lines.append(
                f"emissions {gap.first}..{gap.last} are no longer in the replay buffer "
                f"(it keeps the last {self.subscriptions.replay}); resuming from {gap.last + 1}"
            )
        elif after is not None and after > self.hub.last_seq:
            lines.append(
                f"Last-Event-ID {after} is beyond the last emission {self.hub.last_seq} "
                "(the query was registered anew?); sending new emissions only"
            )
        return "\n".join(lines)


def _wants_ndjson(accept: str | None) -> bool:
    """NDJSON when ``Accept`` prefers it to ``text/event-stream``; SSE otherwise (no Accept, ``*/*``,
    or only RDF syntaxes, which choose the CONSTRUCT triple syntax inside the event stream)."""
    ranges = parse_accept(accept)

    def quality(media_type: str) -> tuple[float, int]:
        matching = [(r.matches(media_type), r) for r in ranges]
        matching = [(specificity, r) for specificity, r in matching if specificity is not None]
        if not matching:
            return (0.0, -1)
        specificity, best = max(matching, key=lambda m: m[0])
        return (best.q, specificity)

    return quality(NDJSON) > quality(EVENT_STREAM)


def _last_event_id(header: str | None, param: str | None) -> int | None:
    raw, source = header, "the Last-Event-ID header"
    if raw is None:
        raw, source = param, "last-event-id"
    if raw is None or not raw.strip():
        return None
    value = raw.strip()
    if not value.isdigit():
        raise HttpError(400, f"{source} must be the id of an event of this stream (a number like 42), not {raw!r}")
    return int(value)


def _triple_format(name: str | None, accept: str | None) -> MediaFormat:
    """The syntax of CONSTRUCT triples: ``?format=``, else an RDF syntax ``Accept`` names, else N-Triples."""
    if name is not None:
        fmt = by_name(TRIPLE_FORMATS, name)
        if fmt is None:
            raise HttpError(406, not_acceptable_message(f"format={name}", [", ".join(f.names) for f in TRIPLE_FORMATS]))
        return fmt
    # "text/event-stream" or "application/x-ndjson" alone name no RDF syntax: the default then.
    return choose(TRIPLE_FORMATS, accept) or TRIPLE_FORMATS[0]
