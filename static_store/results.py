"""The result of a one-shot query, held serialised so it can be read any number of times.

Evaluation (in-process or in a forked child, see ``timeout``) writes the result once in a
*transport* syntax — SPARQL JSON for SELECT/ASK, N-Triples for CONSTRUCT/DESCRIBE — in
pyoxigraph's Rust serialiser. Asking for that same media type later returns the bytes unchanged
(the common HTTP case); other media types, iteration and ``to_rdflib`` re-parse them.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Literal as TypingLiteral

import pyoxigraph as ox

from static_store.errors import UnsupportedMediaType
from static_store.formats import GRAPH_MEDIA_TYPES, RESULTS_MEDIA_TYPES, rdf_format, results_format, serialize_graph

QueryKind = TypingLiteral["SELECT", "ASK", "CONSTRUCT", "DESCRIBE"]

SOLUTIONS_TRANSPORT = ox.QueryResultsFormat.JSON
GRAPH_TRANSPORT = ox.RdfFormat.N_TRIPLES


def serialize_evaluation(result: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples, output=None) -> bytes | None:
    """A fresh pyoxigraph result in the transport syntax of its kind: as bytes, or written to ``output``."""
    if isinstance(result, ox.QueryTriples):
        return result.serialize(output, format=GRAPH_TRANSPORT)
    return result.serialize(output, format=SOLUTIONS_TRANSPORT)


class QueryResult:
    """``kind`` is SELECT, ASK, CONSTRUCT or DESCRIBE; DESCRIBE and CONSTRUCT are graph results.

    Iterating gives pyoxigraph ``QuerySolution``s (SELECT) or ``Triple``s (graphs); ``boolean`` is
    the answer of an ASK; ``serialize(media_type)`` writes the result in any supported syntax.
    """

    def __init__(self, kind: QueryKind, payload: bytes):
        self.kind = kind
        self._payload = payload

    @property
    def is_graph(self) -> bool:
        return self.kind in ("CONSTRUCT", "DESCRIBE")

    @property
    def media_types(self) -> tuple[str, ...]:
        """The media types ``serialize`` accepts for this result, the preferred one first."""
        return GRAPH_MEDIA_TYPES if self.is_graph else RESULTS_MEDIA_TYPES

    @property
    def variables(self) -> list[ox.Variable]:
        """The projected variables of a SELECT, in order; empty for other kinds."""
        if self.kind != "SELECT":
            return []
        return list(self._solutions().variables)

    @property
    def boolean(self) -> bool:
        if self.kind != "ASK":
            msg = f"a {self.kind} result has no boolean; only ASK has"
            raise TypeError(msg)
        return bool(self._solutions())

    def __iter__(self) -> Iterator[ox.QuerySolution] | Iterator[ox.Triple]:
        if self.is_graph:
            return (quad.triple for quad in ox.parse(self._payload, format=GRAPH_TRANSPORT))
        if self.kind == "ASK":
            msg = "an ASK result is not iterable; read its boolean"
            raise TypeError(msg)
        return iter(self._solutions())

    def serialize(self, media_type: str) -> bytes:
        """The result in ``media_type``; ``UnsupportedMediaType`` if that syntax does not fit the kind."""
        if self.is_graph:
            fmt = rdf_format(media_type)
            if fmt == GRAPH_TRANSPORT:
                return self._payload
            return serialize_graph(ox.parse(self._payload, format=GRAPH_TRANSPORT), fmt)
        try:
            fmt = results_format(media_type)
        except UnsupportedMediaType:
            msg = f"a {self.kind} result cannot be written as {media_type!r}; use one of {', '.join(RESULTS_MEDIA_TYPES)}"
            raise UnsupportedMediaType(msg) from None
        if fmt == SOLUTIONS_TRANSPORT:
            return self._payload
        return self._solutions().serialize(format=fmt)

    def to_rdflib(self):
        """An ``rdflib.Graph`` (CONSTRUCT/DESCRIBE) or ``rdflib.query.Result`` (SELECT/ASK)."""
        import rdflib
        from rdflib.query import Result

        if self.is_graph:
            graph = rdflib.Graph()
            graph.parse(data=self._payload.decode("utf-8"), format="nt")
            return graph
        return Result.parse(io.BytesIO(self._payload), format="json")

    def _solutions(self) -> ox.QuerySolutions | ox.QueryBoolean:
        return ox.parse_query_results(self._payload, format=SOLUTIONS_TRANSPORT)

    def __repr__(self) -> str:
        return f"<QueryResult {self.kind} ({len(self._payload)} bytes)>"
