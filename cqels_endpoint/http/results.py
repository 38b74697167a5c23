"""``GET /queries/{name}/results``: a registered query's emissions as they happen.

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

A client that falls ``subscriber_queue`` emissions behind is disconnected (logged on
``cqels_endpoint.http``, counted in ``/metrics``); ingestion never waits for a client. Unknown
query: 404. The name may contain ``/`` (instances ``template/instance``).

A query the engine stops because it failed (past its limits: docs/ARCHITECTURE.md, "Limits") ends
its streams with one error object after its last emission, then closes them: ``event: error`` with
``data: {"query": …, "error": "<reason>"}`` in SSE, the same object as an NDJSON line. Subscribing
to it afterwards gets a 409 naming the reason (until it is deleted and stored again).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pyoxigraph as ox
from flask import Blueprint, Response, request

from cqels_endpoint.engine import UnknownQueryError
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.errors import bad_request, error_response, not_acceptable, not_found
from cqels_endpoint.http.negotiation import by_name, choose, parse_accept
from cqels_endpoint.http.server import CLOSE_CONNECTION
from cqels_endpoint.http.subscriptions import FAILED, Entry, Gap, QueryHub, Subscriber, SubscriptionEnded, Subscriptions
from static_store import GRAPH_FORMATS, MediaFormat

blueprint = Blueprint("results", __name__)

EVENT_STREAM = "text/event-stream"
NDJSON = "application/x-ndjson"

#: The syntaxes of CONSTRUCT triples, the default first.
TRIPLE_FORMATS: tuple[MediaFormat, ...] = tuple(
    fmt
    for syntax in (ox.RdfFormat.N_TRIPLES, ox.RdfFormat.TURTLE, ox.RdfFormat.JSON_LD)
    for fmt in GRAPH_FORMATS
    if fmt.syntax == syntax
)

# How often an idle stream checks that its client is still connected (seconds).
_POLL_S = 1.0
# How long a dropped subscriber's thread gets to end its response before its connection is closed
# under it (it may be stuck in a write to a client that stopped reading).
_DROP_GRACE_S = 2.0


@blueprint.get("/queries/<path:name>/results")
def results(name: str) -> Response:
    context = endpoint()
    ndjson = _wants_ndjson(request.headers.get("Accept"))
    try:
        after = _last_event_id()
    except ValueError as error:
        return bad_request(str(error))
    subscriptions = context.subscriptions
    try:
        hub = subscriptions.hub(name)
    except UnknownQueryError as error:
        failed = context.engine.failed.get(name)
        if failed is not None:
            return error_response(409, f"query {name!r} failed: {failed.failure}; DELETE it and PUT it again to restart it")
        return not_found(f"{error.args[0]}; register it with PUT /queries/{{name}}")
    triple_format = None
    if hub.query.form == "CONSTRUCT":
        triple_format = _triple_format()
        if isinstance(triple_format, Response):
            return triple_format
    elif request.args.get("format") is not None:
        return bad_request(
            f"format={request.args['format']}: ?format= chooses the syntax of CONSTRUCT triples, and query "
            f"{name!r} is a {hub.query.form}, whose emissions are SPARQL JSON"
        )
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy may hold events back
    content_type = f"{NDJSON}; charset=utf-8" if ndjson else f"{EVENT_STREAM}; charset=utf-8"
    if request.method == "HEAD":
        return Response(status=200, headers=headers, content_type=content_type)
    subscriber, replay, gap = hub.subscribe(after)
    if gap is not None:
        headers["Cqels-Replay-Gap"] = f"{gap.first}-{gap.last}"
    render = render_with(_ndjson_line if ndjson else _sse_event, triple_format)
    key = (ndjson, None if triple_format is None else triple_format.media_type)
    stream = _Stream(subscriptions, hub, subscriber, request.environ, context.config.keepalive_s)
    body = stream.run(replay, gap, after, lambda entry: entry.rendered(key, render), ndjson)
    return Response(body, status=200, headers=headers, content_type=content_type)


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


class _Stream:
    """The body of one results response, run in the request's thread."""

    def __init__(self, subscriptions: Subscriptions, hub: QueryHub, subscriber: Subscriber, environ: dict, keepalive_s: float):
        self.subscriptions = subscriptions
        self.hub = hub
        self.subscriber = subscriber
        self.keepalive_s = keepalive_s
        self.disconnected: Callable[[], bool] = environ.get("waitress.client_disconnected", lambda: False)
        self._close_connection: Callable[[], None] | None = environ.get(CLOSE_CONNECTION)
        self._finished = False
        subscriber.on_drop = self._on_drop

    def run(self, replay: list[Entry], gap: Gap | None, after: int | None, render: Callable[[Entry], bytes], ndjson: bool) -> Iterator[bytes]:
        try:
            # The first write sends the headers: the client knows it is subscribed from here on.
            # NDJSON has no comments, so it opens with a keep-alive (an empty line): waitress sends
            # nothing, headers included, for an empty write.
            yield b"\n" if ndjson else _comment(self._greeting(gap, after))
            for entry in replay:
                yield render(entry)
            last_write = time.monotonic()
            while True:
                try:
                    entry = self.subscriber.next(timeout=_POLL_S)
                except SubscriptionEnded as ended:
                    if ended.reason == FAILED:
                        yield _error(self.hub.name, ended.message, ndjson)
                    elif not ndjson:
                        yield _comment(f"stream ended by the server: {ended.message}")
                    return
                if entry is not None:
                    yield render(entry)
                    last_write = time.monotonic()
                    continue
                if self.disconnected():
                    return
                if time.monotonic() - last_write >= self.keepalive_s:
                    yield b"\n" if ndjson else b": keep-alive\n\n"
                    last_write = time.monotonic()
        finally:
            self._finished = True
            self.subscriber.close()

    def _greeting(self, gap: Gap | None, after: int | None) -> str:
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

    def _on_drop(self) -> None:
        # Called by the hub, inside the engine's push: only schedule the forced close.
        if self._close_connection is None:
            return
        timer = threading.Timer(_DROP_GRACE_S, self._force_close)
        timer.daemon = True
        timer.start()

    def _force_close(self) -> None:
        if not self._finished:
            self._close_connection()


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


def _last_event_id() -> int | None:
    raw = request.headers.get("Last-Event-ID")
    source = "the Last-Event-ID header"
    if raw is None:
        raw = request.args.get("last-event-id")
        source = "last-event-id"
    if raw is None or not raw.strip():
        return None
    value = raw.strip()
    if not value.isdigit():
        msg = f"{source} must be the id of an event of this stream (a number like 42), not {raw!r}"
        raise ValueError(msg)
    return int(value)


def _triple_format() -> MediaFormat | Response:
    """The syntax of CONSTRUCT triples: ``?format=``, else an RDF syntax ``Accept`` names, else N-Triples."""
    name = request.args.get("format")
    if name is not None:
        fmt = by_name(TRIPLE_FORMATS, name)
        if fmt is None:
            return not_acceptable(f"format={name}", [", ".join(f.names) for f in TRIPLE_FORMATS])
        return fmt
    # "text/event-stream" or "application/x-ndjson" alone name no RDF syntax: the default then.
    return choose(TRIPLE_FORMATS, request.headers.get("Accept")) or TRIPLE_FORMATS[0]
