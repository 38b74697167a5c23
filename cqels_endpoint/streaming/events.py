"""The events of a Spark job's input lines, and their routing to partitions.

An input line is one event:

- NDJSON: ``{"stream": "<IRI>", "time": ms or xsd:dateTime, "data": "<N-Triples>"}`` (``cqels
  push``'s NDJSON with the stream named; ``"stream"`` may be left out when the job has a default);
- a timestamped statement: ``TIME<TAB><N-Triples or N-Quads statement>``, the graph of a quad
  naming its stream.

Events are ordered by ``(time, file, line)``; the single-process engine fed in that order gives
the job's answers. ``route`` splits an event's triples between the partitions by the key positions
of ``plan.partitioning``, on the terms as the engine stores them (``runtime.canonical``), so a
partition finds again, in its results, the key values it owns (``owner``).
"""

from __future__ import annotations

import json
import zlib

import pyoxigraph as ox

from cqels_endpoint.runtime.canonical import canonical_literal, canonical_triple
from cqels_endpoint.runtime.streams import parse_timestamp, to_millis


class LineError(ValueError):
    """An input line that is not an event (the message says why)."""


def parse_line(line: str, default_stream: str | None) -> tuple[str, int, list[ox.Triple]]:
    """``(stream, time, triples)`` of one input line; ``LineError`` when it is not an event."""
    text = line.strip()
    if text.startswith("{"):
        return _ndjson(text, default_stream)
    time_text, tab, statement = text.partition("\t")
    if not tab:
        raise LineError('neither a JSON object {"stream", "time", "data"} nor TIME<TAB>statement')
    time = _time(time_text.strip())
    try:
        quads = list(ox.parse(statement, format=ox.RdfFormat.N_QUADS))
    except SyntaxError as error:
        raise LineError(f"the statement: {error}") from None
    if len(quads) != 1:
        raise LineError(f"one statement per line, not {len(quads)}")
    graph = quads[0].graph_name
    stream = default_stream if isinstance(graph, ox.DefaultGraph) else getattr(graph, "value", None)
    if stream is None:
        raise LineError("no stream: give the statement a graph name, or the job a default stream")
    return stream, time, [quads[0].triple]


def _ndjson(text: str, default_stream: str | None) -> tuple[str, int, list[ox.Triple]]:
    try:
        item = json.loads(text)
    except ValueError as error:
        raise LineError(f"not JSON: {error}") from None
    if not isinstance(item, dict) or set(item) - {"stream", "time", "data"} or "data" not in item or "time" not in item:
        raise LineError('an event is an object {"stream": IRI, "time": …, "data": "<N-Triples>"}')
    stream = item.get("stream", default_stream)
    if not isinstance(stream, str) or not stream:
        raise LineError('no stream: give the line a "stream", or the job a default stream')
    if not isinstance(item["data"], str):
        raise LineError('"data" must be a string of N-Triples')
    time = item["time"]
    if isinstance(time, bool) or not isinstance(time, (int, str)):
        raise LineError(f'"time" {time!r} is neither integer milliseconds nor an xsd:dateTime string')
    try:
        triples = [quad.triple for quad in ox.parse(item["data"], format=ox.RdfFormat.N_TRIPLES)]
    except SyntaxError as error:
        raise LineError(f'"data": {error}') from None
    return stream, _time(time), triples


def _time(value: int | str) -> int:
    try:
        if isinstance(value, int):
            return to_millis(value)
        return to_millis(int(value)) if value.lstrip("-").isdigit() else parse_timestamp(value)
    except ValueError as error:
        raise LineError(f"the time {value!r}: {error}") from None


def ntriples(triples: list[ox.Triple]) -> str:
    """Triples as N-Triples text, one per line."""
    return "".join(f"{t.subject} {t.predicate} {t.object} .\n" for t in triples)


def owner(term, partitions: int) -> int:
    """The partition that owns the key value ``term`` (the same in every process: CRC-32 of the
    term's N-Triples form as the engine stores it)."""
    if isinstance(term, ox.Literal):
        term = canonical_literal(term)
    elif isinstance(term, ox.Triple):
        term = canonical_triple(term)
    return zlib.crc32(str(term).encode()) % partitions


def route(triples: list[ox.Triple], positions: tuple[int, ...], partitions: int) -> list[str]:
    """The share of each partition of an event's triples (N-Triples text, empty for none): a
    triple goes to the owner of each of its terms at ``positions``."""
    shares: list[list[ox.Triple]] = [[] for _ in range(partitions)]
    for triple in triples:
        parts = (triple.subject, triple.predicate, triple.object)
        for target in {owner(parts[position], partitions) for position in positions}:
            shares[target].append(triple)
    return [ntriples(share) for share in shares]
