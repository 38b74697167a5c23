"""``/streams``: pushing stream events over HTTP, and the state of every stream.

``POST /streams/{name}`` (answered natively, ``asgi.py``, by ``push``) pushes to the stream ``name``: a percent-encoded absolute IRI
(``/streams/http%3A%2F%2Fderi.org%2Fstreams%2Frfid``) or a short name appended to the server's
``stream_base`` (``/streams/rfid`` → ``urn:cqels:stream:rfid`` by default). The body, by
``Content-Type``:

- Turtle, N-Triples, JSON-LD, RDF/XML, N3: one event, at ``?time=`` (integer ms or
  ``xsd:dateTime``), else at its arrival time;
- TriG: one event per named graph, at the ``prov:generatedAtTime`` the default graph gives that
  graph (the RSP "timestamped graph" model), applied in timestamp order (document order for equal
  ones); the default graph holds those timestamps and nothing else;
- NDJSON (``application/x-ndjson``): one event per line, ``{"time": ms | "xsd:dateTime", "data":
  "<N-Triples>"}`` (no ``time``: the arrival time), applied in line order; blank lines are skipped.

A timestamp is integer milliseconds since 1970-01-01T00:00:00Z or an ``xsd:dateTime``, from
0001-01-01T00:00:00Z (negative milliseconds: before 1970, accepted) to 4199-11-24T01:22:57.663Z
(``runtime.streams.TIME_MIN_MS``/``TIME_MAX_MS``: what the engine holds); any other is a 400 naming
it, whichever way it came (``?time=``, an NDJSON ``"time"``, a TriG ``prov:generatedAtTime``).

A batch is all or nothing: every event is parsed and every timestamp read before anything is
applied (400 naming the line, counted as a malformed push), and the whole batch is checked against
the stream's clock before the first event is applied: 409 naming the first event older than the
watermark, or, with ``--max-future-ms``, 422 naming the first event further ahead of the server's
clock than that bound (each refused event is counted). The answer is ``{"stream", "accepted",
"latest", "watermark"}``.

``GET /streams`` lists every stream seen: its clock (``latest``, ``watermark``, ``lateness_ms``,
``buffered`` events waiting for the watermark), ``accepted`` events (``events``, its older name), of
which ``late`` arrived after a later event of the stream and were reordered within the lateness;
``rejected``: ``late`` events older than the watermark (409), ``future`` events too far ahead (422),
``malformed`` pushes (400: a body or timestamp unreadable or out of range); and the ingestion rate
over the last minute.

``DELETE /streams/{name}/clock`` (a write: the token) resets the stream's clock, an operator's
repair after a client pushed a wrong time: its buffered events are released, in order, then its
latest timestamp is forgotten, so the next event starts the clock again whatever its time. The
answer is the stream's entry of ``GET /streams`` with ``released``, the events the reset released,
and ``queries``, the queries reading the stream with their clocks; 404 for a stream never seen. A
query's own time never goes backwards, so a query that already evaluated at the wrong time keeps it
(older events then fall outside its windows): re-register it (``DELETE`` then ``PUT
/queries/{name}``) or restart the server, which starts every query afresh.

Unless the store is in memory, the clocks are kept in the data directory and restored when the app
starts, before its first push (``engine.clocks``).
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, Response, jsonify

from cqels_endpoint.connectors.events import (
    EVENT_MEDIA_TYPES,
    NDJSON_TYPES,
    MalformedBatch,
    Reader,
    reader,
    times_itself,
)
from cqels_endpoint.errors import LateEventError
from cqels_endpoint.http.auth import write_access
from cqels_endpoint.http.context import Endpoint, endpoint
from cqels_endpoint.http.errors import HttpError, not_found, unsupported_message
from cqels_endpoint.http.params import check_charset, iri, query_params, single
from cqels_endpoint.runtime.streams import (
    RATE_WINDOW_MS,
    FutureEventError,
    UnknownStreamError,
    is_short_stream_name,
    parse_timestamp,
)
from static_store.formats import essence

blueprint = Blueprint("streams", __name__)


@blueprint.record_once
def _time_settings(state) -> None:
    """When the app is built, for the engine it builds (as its lateness, an engine given to
    ``create_app`` is the caller's to configure): the server's future bound, and its clocks kept in
    the data directory, restored now, before the stored queries start and before the first push."""
    context = endpoint(state.app)
    config = context.config
    if not context.owns_engine:
        return
    context.engine.streams.max_future_ms = config.max_future_ms or None
    if not config.memory:
        context.engine.keep_clocks(config.data_dir)

@dataclass(frozen=True)
class PushRequest:
    """What a push needs of its HTTP request (answered natively by ``asgi.py``): the stream name of
    the path, the ``Content-Type``, the raw query string, the body and the request URL (the base IRI
    of relative IRIs in the body)."""

    name: str
    content_type: str | None
    query_string: bytes
    body: bytes
    base_url: str


def push(context: Endpoint, request: PushRequest) -> dict:
    """Apply the batch of ``request`` (module docstring) and say what was accepted; ``HttpError``
    for a refused batch, of which nothing was applied. The caller checked the write access."""
    stream = stream_iri(request.name, context.config.stream_base)
    engine = context.engine
    read = _reader(request.content_type)
    try:
        batch = read(request.body, _time_param(request.query_string, request.content_type), request.base_url)
    except MalformedBatch as error:
        engine.reject_malformed(stream)
        raise HttpError(400, str(error), line=error.line, column=error.column) from None
    try:
        latest = engine.push_batch(stream, batch.events)
    except LateEventError as error:
        others = f" ({error.late_in_batch} late events in the batch)" if error.late_in_batch > 1 else ""
        message = f"{batch.names[error.index]}: {error}{others}; nothing of the batch was applied"
        raise HttpError(409, message, line=batch.lines[error.index]) from None
    except FutureEventError as error:
        others = f" ({error.future_in_batch} such events in the batch)" if error.future_in_batch > 1 else ""
        message = f"{batch.names[error.index]}: {error}{others}; nothing of the batch was applied"
        raise HttpError(422, message, line=batch.lines[error.index]) from None
    [stats] = engine.stream_stats(stream)
    return {"stream": stream, "accepted": len(batch.events), "latest": latest, "watermark": stats["watermark"]}


@blueprint.get("/streams")
def streams() -> Response:
    return jsonify({"streams": [_listed(stats) for stats in endpoint().engine.stream_stats()]})


@blueprint.delete("/streams/<path:name>/clock", merge_slashes=False)
@write_access
def reset_clock(name: str) -> Response:
    stream = stream_iri(name, endpoint().config.stream_base)
    engine = endpoint().engine
    try:
        released = engine.reset_clock(stream)
    except UnknownStreamError as error:
        return not_found(str(error))
    [stats] = engine.stream_stats(stream)
    # A query's time never goes backwards: the queries reading the stream keep theirs (docstring).
    readers = [{"name": q.name, "clock": q.clock} for q in list(engine.queries.values()) if q.reads(stream)]
    return jsonify({**_listed(stats), "released": released, "queries": readers})


def _listed(stats: dict) -> dict:
    """A stream's entry in ``GET /streams`` (module docstring)."""
    return {
        "stream": stats["stream"],
        "events": stats["events"],
        "accepted": stats["events"],
        "late": stats["out_of_order"],
        "rejected": {"late": stats["late"], "future": stats["future"], "malformed": stats["malformed"]},
        "rate_per_second": stats["last_minute"] / (RATE_WINDOW_MS / 1000),
        "latest": stats["latest"],
        "watermark": stats["watermark"],
        "lateness_ms": stats["lateness_ms"],
        "buffered": stats["buffered"],
    }


def stream_iri(name: str, base: str) -> str:
    """The stream ``name`` stands for: itself when it is an absolute IRI (it came percent-encoded),
    else ``base`` + ``name`` (400 when that is no IRI either).

    >>> stream_iri("http://deri.org/streams/rfid", "urn:s:"), stream_iri("rfid", "urn:s:")
    ('http://deri.org/streams/rfid', 'urn:s:rfid')
    """
    if not is_short_stream_name(name):
        return iri(name, "the stream name")
    return iri(base + name, f"the stream base + short name {name!r}")


# --------------------------------------------------------------------------- reading a batch


def _reader(content_type: str | None) -> Reader:
    """How to read a body of ``content_type``; 415 for a type that cannot carry events."""
    read = reader(content_type or "")
    if read is None:
        raise HttpError(415, unsupported_message(content_type, EVENT_MEDIA_TYPES))
    check_charset(content_type, list(EVENT_MEDIA_TYPES))
    return read


def _time_param(query_string: bytes, content_type: str | None) -> int | None:
    text = single(query_params(query_string), "time", "give one timestamp")
    if text is None:
        return None
    try:
        time = parse_timestamp(text)
    except ValueError as error:
        raise MalformedBatch(f"?time={error}") from None
    if not times_itself(content_type or ""):
        return time
    if essence(content_type or "") in NDJSON_TYPES:
        raise HttpError(400, '?time= does not apply to NDJSON: give each line its own "time"')
    raise HttpError(400, "?time= does not apply to TriG: each named graph is timestamped by its prov:generatedAtTime")
