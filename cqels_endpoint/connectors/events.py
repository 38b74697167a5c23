"""Reading a batch of stream events from bytes: an HTTP push body, a WebSocket or an MQTT message.

The syntaxes, by media type (``EVENT_FORMATS`` names them for the connectors' ``format``):

- Turtle, N-Triples, JSON-LD, RDF/XML, N3: one event, at the given time (None: its arrival);
- TriG: one event per named graph, at the ``prov:generatedAtTime`` the default graph gives that
  graph (the RSP "timestamped graph" model), in timestamp order (document order for equal ones);
  the default graph holds those timestamps and nothing else;
- NDJSON: one event per line, ``{"time": ms | "xsd:dateTime", "data": "<N-Triples>"}`` (no
  ``time``: the arrival time), in line order; blank lines are skipped.

A batch is read whole before anything is applied: ``MalformedBatch`` names the event and its line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import pyoxigraph as ox

from cqels_endpoint.errors import RdfSyntaxError, UnsupportedMediaType
from cqels_endpoint.runtime.streams import parse_timestamp, read_plain_ntriples, to_millis
from static_store.formats import essence, rdf_format
from static_store.load import parse_graph, rdf_syntax_error

NDJSON = "application/x-ndjson"
NDJSON_TYPES = (NDJSON, "application/ndjson", "application/jsonl")
TRIG = "application/trig"
PROV_GENERATED_AT = "http://www.w3.org/ns/prov#generatedAtTime"
#: The event syntaxes by the short names a connector's ``format`` takes.
EVENT_FORMATS = {
    "turtle": "text/turtle",
    "ntriples": "application/n-triples",
    "jsonld": "application/ld+json",
    "rdfxml": "application/rdf+xml",
    "n3": "text/n3",
    "trig": TRIG,
    "ndjson": NDJSON,
}
#: The media types a batch may come in (``Content-Type`` of a push).
EVENT_MEDIA_TYPES = tuple(EVENT_FORMATS.values())
# The syntaxes of one event: every RDF syntax the store reads except the quad ones.
_ONE_EVENT_SYNTAXES = (ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES, ox.RdfFormat.JSON_LD, ox.RdfFormat.RDF_XML,
                       ox.RdfFormat.N3)
_DATE_TIMES = ("http://www.w3.org/2001/XMLSchema#dateTime", "http://www.w3.org/2001/XMLSchema#dateTimeStamp")

# triples (pyoxigraph triples, or the forms runtime.streams.read_plain_ntriples reads), time (None:
# the arrival time)
Event = tuple[object, int | None]
#: Reads ``(body, time, base_iri)`` into a batch; ``time`` applies to one-event syntaxes only.
Reader = Callable[[bytes, "int | None", "str | None"], "Batch"]


@dataclass
class Batch:
    """The events of one body, in the order they are applied, each with how errors name it
    (``names``) and its line in the body when it has one (``lines``)."""

    events: list[Event] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    lines: list[int | None] = field(default_factory=list)

    def add(self, event: Event, name: str, line: int | None = None) -> None:
        self.events.append(event)
        self.names.append(name)
        self.lines.append(line)


class MalformedBatch(ValueError):
    """A batch that does not parse: the message names the event, ``line`` the line of the body."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


def reader(media_type: str, *, compiled: bool = True) -> Reader | None:
    """How to read a body of ``media_type`` (parameters ignored); None for a type that carries no
    events. The events' triples are pyoxigraph triples, or with ``compiled`` the compiled reader's
    forms where it reads them (``plain_ntriples``), which only the engine takes."""
    media_type = essence(media_type)
    if media_type in NDJSON_TYPES:
        return partial(_ndjson, compiled)
    try:
        syntax = rdf_format(media_type) if media_type else None
    except UnsupportedMediaType:
        return None
    if syntax == ox.RdfFormat.TRIG:
        return _trig
    if syntax in _ONE_EVENT_SYNTAXES:
        return partial(_one_event, syntax, compiled)
    return None


def times_itself(media_type: str) -> bool:
    """Whether a body of ``media_type`` gives each event its own time (TriG, NDJSON)."""
    media_type = essence(media_type)
    return media_type in NDJSON_TYPES or media_type == TRIG


def _one_event(syntax: ox.RdfFormat, compiled: bool, body: bytes, time: int | None, base_iri: str | None) -> Batch:
    triples = plain_ntriples(body, syntax) if compiled else None
    if triples is None:
        try:
            quads = parse_graph(body, syntax, ox.DefaultGraph(), base_iri, "event")
        except RdfSyntaxError as error:
            raise MalformedBatch(str(error), error.line, error.column) from None
        triples = tuple(quad.triple for quad in quads)
    batch = Batch()
    batch.add((triples, time), "the event")
    return batch


def plain_ntriples(text: str | bytes, syntax: ox.RdfFormat) -> object:
    """The triples of a Turtle or N-Triples body as the compiled reader reads plain N-Triples
    (``runtime.streams.read_plain_ntriples``), or None: ``parse_graph`` reads it then, to the same
    triples (the reader takes no relative IRI, so the base changes nothing, and gives up at a blank
    node, which ``parse_graph`` renames apart) or to the error with its line."""
    if syntax not in (ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES):
        return None
    return read_plain_ntriples(text, keep_blank_nodes=False, one_per_line=syntax == ox.RdfFormat.N_TRIPLES)


def _trig(body: bytes, time: int | None, base_iri: str | None) -> Batch:
    """One event per named graph, in timestamp order (``time`` does not apply: each has its own)."""
    try:
        quads = list(ox.parse(body, format=ox.RdfFormat.TRIG, base_iri=base_iri, rename_blank_nodes=True))
    except SyntaxError as error:
        raise MalformedBatch(str(rdf_syntax_error(error, ox.RdfFormat.TRIG, "event batch")), error.lineno) from None
    contents: dict[ox.NamedNode | ox.BlankNode, list[ox.Triple]] = {}
    stamps: dict[ox.NamedNode | ox.BlankNode, int] = {}
    for quad in quads:
        if not isinstance(quad.graph_name, ox.DefaultGraph):
            contents.setdefault(quad.graph_name, []).append(quad.triple)
            continue
        if quad.predicate.value != PROV_GENERATED_AT:
            raise MalformedBatch(
                f"the default graph of a TriG event batch holds only prov:generatedAtTime timestamps of its "
                f"named graphs, not {quad.triple} ."
            )
        stamps[quad.subject] = _graph_time(quad, stamps)
    for graph in stamps:
        contents.setdefault(graph, [])  # a timestamped empty graph is an event without triples
    for graph in contents:
        if graph not in stamps:
            raise MalformedBatch(f"named graph {graph} has no prov:generatedAtTime in the default graph")
    batch = Batch()
    for graph in sorted(contents, key=lambda graph: stamps[graph]):  # stable: document order for equal times
        batch.add((tuple(contents[graph]), stamps[graph]), f"graph {graph}")
    return batch


def _graph_time(quad: ox.Quad, stamps: dict) -> int:
    if quad.subject in stamps:
        raise MalformedBatch(f"named graph {quad.subject} has more than one prov:generatedAtTime")
    value = quad.object
    if not isinstance(value, ox.Literal) or value.datatype.value not in _DATE_TIMES:
        raise MalformedBatch(f"the prov:generatedAtTime of {quad.subject} must be an xsd:dateTime, not {value}")
    try:
        return to_millis(value)
    except ValueError as error:
        raise MalformedBatch(f"the prov:generatedAtTime of {quad.subject}: {error}") from None


def _ndjson(compiled: bool, body: bytes, time: int | None, base_iri: str | None) -> Batch:
    """One event per line (``time`` does not apply: each line has its own or its arrival)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedBatch(f"the NDJSON body is not UTF-8 (byte {error.start})") from None
    batch = Batch()
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            batch.add(_ndjson_event(line, number, compiled), f"line {number}", number)
    if not batch.events:
        raise MalformedBatch("the NDJSON body holds no events")
    return batch


def _ndjson_event(line: str, number: int, compiled: bool) -> Event:
    try:
        item = json.loads(line)
    except ValueError as error:
        raise MalformedBatch(f"line {number} is not JSON: {error}", number, getattr(error, "colno", None)) from None
    if not isinstance(item, dict) or "data" not in item or set(item) - {"time", "data"}:
        raise MalformedBatch(f'line {number} must be an object {{"time": …, "data": "<N-Triples>"}}', number)
    data, time = item["data"], item.get("time")
    if not isinstance(data, str):
        raise MalformedBatch(f'line {number}: "data" must be a string of N-Triples', number)
    if time is not None:
        try:
            if isinstance(time, bool) or not isinstance(time, (int, str)):
                raise ValueError(f"{time!r} is neither integer milliseconds nor an xsd:dateTime string")
            time = to_millis(time) if isinstance(time, int) else parse_timestamp(time)
        except ValueError as error:
            raise MalformedBatch(f'line {number}: "time" {error}', number) from None
    triples = plain_ntriples(data, ox.RdfFormat.N_TRIPLES) if compiled else None
    if triples is not None:
        return triples, time
    try:
        quads = parse_graph(data, ox.RdfFormat.N_TRIPLES, ox.DefaultGraph(), source="event data")
    except RdfSyntaxError as error:
        raise MalformedBatch(f"line {number}: {error}", number) from None
    return tuple(quad.triple for quad in quads), time
