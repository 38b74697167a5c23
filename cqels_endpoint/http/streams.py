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

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pyoxigraph as ox
from flask import Blueprint, Response, jsonify

from cqels_endpoint.errors import LateEventError, RdfSyntaxError, UnsupportedMediaType
from cqels_endpoint.http.auth import write_access
from cqels_endpoint.http.context import Endpoint, endpoint
from cqels_endpoint.http.errors import HttpError, not_found, unsupported_message
from cqels_endpoint.http.params import check_charset, decoded, iri, query_params, single
from cqels_endpoint.runtime.streams import (
    RATE_WINDOW_MS,
    FutureEventError,
    UnknownStreamError,
    parse_timestamp,
    read_plain_ntriples,
    to_millis,
)
from static_store.formats import essence, rdf_format
from static_store.load import parse_graph, rdf_syntax_error

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

NDJSON = "application/x-ndjson"
NDJSON_TYPES = (NDJSON, "application/ndjson", "application/jsonl")
PROV_GENERATED_AT = "http://www.w3.org/ns/prov#generatedAtTime"
# The syntaxes of one event: every RDF syntax the store reads except the quad ones.
_EVENT_SYNTAXES = (ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES, ox.RdfFormat.JSON_LD, ox.RdfFormat.RDF_XML,
                   ox.RdfFormat.N3)
ACCEPTED_BODIES = ("text/turtle", "application/n-triples", "application/ld+json", "application/rdf+xml",
                   "text/n3", "application/trig", NDJSON)

# triples (pyoxigraph triples, or the forms runtime.streams.read_plain_ntriples reads), time (None:
# the arrival time)
Event = tuple[object, int | None]


@dataclass
class _Batch:
    """The events of one request, in the order they are applied, each with how errors name it
    (``names``) and its line in the body when it has one (``lines``)."""

    events: list[Event] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    lines: list[int | None] = field(default_factory=list)

    def add(self, event: Event, name: str, line: int | None = None) -> None:
        self.events.append(event)
        self.names.append(name)
        self.lines.append(line)


class _Malformed(Exception):
    """A batch that does not parse: ``message`` names the event, ``line`` the line of the body."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


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
        batch = read(request, _time_param(request.query_string))
    except _Malformed as error:
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
    if ":" in name.split("/", 1)[0]:
        return iri(name, "the stream name")
    return iri(base + name, f"the stream base + short name {name!r}")


# --------------------------------------------------------------------------- reading a batch


def _reader(content_type: str | None) -> Callable[[PushRequest, int | None], _Batch]:
    """How to read a body of ``content_type``, given ``?time=``; 415 for a type that cannot carry events."""
    media_type = essence(content_type or "")
    if media_type in NDJSON_TYPES:
        reader = _ndjson
    else:
        try:
            syntax = rdf_format(media_type) if media_type else None
        except UnsupportedMediaType:
            syntax = None
        if syntax == ox.RdfFormat.TRIG:
            reader = _trig
        elif syntax in _EVENT_SYNTAXES:
            reader = functools.partial(_one_event, syntax)
        else:
            raise HttpError(415, unsupported_message(content_type, ACCEPTED_BODIES))
    check_charset(content_type, list(ACCEPTED_BODIES))
    return reader


def _time_param(query_string: bytes) -> int | None:
    text = single(query_params(query_string), "time", "give one timestamp")
    if text is None:
        return None
    try:
        return parse_timestamp(text)
    except ValueError as error:
        raise _Malformed(f"?time={error}") from None


def _one_event(syntax: ox.RdfFormat, request: PushRequest, time: int | None) -> _Batch:
    body = request.body
    triples = _plain_ntriples(body, syntax)
    if triples is None:
        try:
            quads = parse_graph(body, syntax, ox.DefaultGraph(), request.base_url, "event")
        except RdfSyntaxError as error:
            raise _Malformed(str(error), error.line, error.column) from None
        triples = tuple(quad.triple for quad in quads)
    batch = _Batch()
    batch.add((triples, time), "the event")
    return batch


def _plain_ntriples(text: str | bytes, syntax: ox.RdfFormat) -> object:
    """The triples of a Turtle or N-Triples body as the compiled reader reads plain N-Triples
    (``runtime.streams.read_plain_ntriples``), or None: ``parse_graph`` reads it then, to the same
    triples (the reader takes no relative IRI, so the base changes nothing, and gives up at a blank
    node, which ``parse_graph`` renames apart) or to the error with its line."""
    if syntax not in (ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES):
        return None
    return read_plain_ntriples(text, keep_blank_nodes=False, one_per_line=syntax == ox.RdfFormat.N_TRIPLES)


def _trig(request: PushRequest, time: int | None) -> _Batch:
    """One event per named graph, in timestamp order."""
    if time is not None:
        raise HttpError(400, "?time= does not apply to TriG: each named graph is timestamped by its prov:generatedAtTime")
    try:
        quads = list(ox.parse(request.body, format=ox.RdfFormat.TRIG, base_iri=request.base_url,
                              rename_blank_nodes=True))
    except SyntaxError as error:
        raise _Malformed(str(rdf_syntax_error(error, ox.RdfFormat.TRIG, "event batch")), error.lineno) from None
    contents: dict[ox.NamedNode | ox.BlankNode, list[ox.Triple]] = {}
    stamps: dict[ox.NamedNode | ox.BlankNode, int] = {}
    for quad in quads:
        if not isinstance(quad.graph_name, ox.DefaultGraph):
            contents.setdefault(quad.graph_name, []).append(quad.triple)
            continue
        if quad.predicate.value != PROV_GENERATED_AT:
            raise _Malformed(
                f"the default graph of a TriG event batch holds only prov:generatedAtTime timestamps of its "
                f"named graphs, not {quad.triple} ."
            )
        stamps[quad.subject] = _graph_time(quad, stamps)
    for graph in stamps:
        contents.setdefault(graph, [])  # a timestamped empty graph is an event without triples
    for graph in contents:
        if graph not in stamps:
            raise _Malformed(f"named graph {graph} has no prov:generatedAtTime in the default graph")
    batch = _Batch()
    for graph in sorted(contents, key=lambda graph: stamps[graph]):  # stable: document order for equal times
        batch.add((tuple(contents[graph]), stamps[graph]), f"graph {graph}")
    return batch


def _graph_time(quad: ox.Quad, stamps: dict) -> int:
    if quad.subject in stamps:
        raise _Malformed(f"named graph {quad.subject} has more than one prov:generatedAtTime")
    value = quad.object
    if not isinstance(value, ox.Literal) or value.datatype.value not in (
        "http://www.w3.org/2001/XMLSchema#dateTime", "http://www.w3.org/2001/XMLSchema#dateTimeStamp"
    ):
        raise _Malformed(f"the prov:generatedAtTime of {quad.subject} must be an xsd:dateTime, not {value}")
    try:
        return to_millis(value)
    except ValueError as error:
        raise _Malformed(f"the prov:generatedAtTime of {quad.subject}: {error}") from None


def _ndjson(request: PushRequest, time: int | None) -> _Batch:
    if time is not None:
        raise HttpError(400, '?time= does not apply to NDJSON: give each line its own "time"')
    batch = _Batch()
    for number, line in enumerate(decoded(request.body, "NDJSON").split("\n"), 1):
        if line.strip():
            batch.add(_ndjson_event(line, number), f"line {number}", number)
    if not batch.events:
        raise _Malformed("the NDJSON body holds no events")
    return batch


def _ndjson_event(line: str, number: int) -> Event:
    try:
        item = json.loads(line)
    except ValueError as error:
        raise _Malformed(f"line {number} is not JSON: {error}", number, getattr(error, "colno", None)) from None
    if not isinstance(item, dict) or "data" not in item or set(item) - {"time", "data"}:
        raise _Malformed(f'line {number} must be an object {{"time": …, "data": "<N-Triples>"}}', number)
    data, time = item["data"], item.get("time")
    if not isinstance(data, str):
        raise _Malformed(f'line {number}: "data" must be a string of N-Triples', number)
    if time is not None:
        try:
            if isinstance(time, bool) or not isinstance(time, (int, str)):
                raise ValueError(f"{time!r} is neither integer milliseconds nor an xsd:dateTime string")
            time = to_millis(time) if isinstance(time, int) else parse_timestamp(time)
        except ValueError as error:
            raise _Malformed(f'line {number}: "time" {error}', number) from None
    triples = _plain_ntriples(data, ox.RdfFormat.N_TRIPLES)
    if triples is not None:
        return triples, time
    try:
        quads = parse_graph(data, ox.RdfFormat.N_TRIPLES, ox.DefaultGraph(), source="event data")
    except RdfSyntaxError as error:
        raise _Malformed(f"line {number}: {error}", number) from None
    return tuple(quad.triple for quad in quads), time
