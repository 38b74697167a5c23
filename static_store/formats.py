"""Media types and file extensions ↔ pyoxigraph's ``RdfFormat`` / ``QueryResultsFormat``.

The one table of the syntaxes we speak, read by the store and by the HTTP layer's content
negotiation alike, so both always agree on what is supported. Media types are compared without
parameters (``text/turtle; charset=utf-8`` is Turtle) and case-insensitively.

>>> rdf_format("text/turtle; charset=utf-8").name
'Turtle'
>>> results_format("application/sparql-results+json").name
'SPARQL Results in JSON'
>>> rdf_format_for_path("data.nq").name
'N-Quads'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pyoxigraph as ox

from static_store.errors import UnsupportedMediaType

T = TypeVar("T")


@dataclass(frozen=True)
class MediaFormat:
    """One syntax: pyoxigraph's format, its media types and its short names (``?format=json``).

    The first media type is the canonical one, the one we answer with; the others are aliases
    accepted for it (in ``Accept``, ``Content-Type`` and ``?format=``).
    """

    syntax: ox.RdfFormat | ox.QueryResultsFormat
    media_types: tuple[str, ...]  # lower case, the canonical one first
    names: tuple[str, ...]

    @property
    def media_type(self) -> str:
        return self.media_types[0]

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` of what we write: every syntax is written as UTF-8 text."""
        return f"{self.media_type}; charset=utf-8"


#: Every RDF syntax we read (GSP bodies, loads), the preferred first.
RDF_FORMATS: tuple[MediaFormat, ...] = (
    MediaFormat(ox.RdfFormat.TURTLE, ("text/turtle", "application/x-turtle"), ("turtle", "ttl")),
    MediaFormat(ox.RdfFormat.N_TRIPLES, ("application/n-triples", "text/plain"), ("ntriples", "n-triples", "nt")),
    MediaFormat(
        ox.RdfFormat.RDF_XML,
        ("application/rdf+xml", "application/xml", "text/xml"),
        ("rdfxml", "rdf/xml", "rdf", "xml"),
    ),
    MediaFormat(ox.RdfFormat.JSON_LD, ("application/ld+json", "application/json"), ("jsonld", "json-ld", "json")),
    # Quad syntaxes: a graph written with its name (a CONSTRUCT result's is the default graph).
    MediaFormat(ox.RdfFormat.N_QUADS, ("application/n-quads", "text/x-nquads"), ("nquads", "n-quads", "nq")),
    MediaFormat(ox.RdfFormat.TRIG, ("application/trig", "application/x-trig"), ("trig",)),
    MediaFormat(ox.RdfFormat.N3, ("text/n3",), ("n3",)),
)

#: The RDF syntaxes a graph (CONSTRUCT/DESCRIBE result, GSP GET) is written in, the preferred first.
#: N3 is readable but not offered for writing: Turtle is its subset and every client reads Turtle.
GRAPH_FORMATS: tuple[MediaFormat, ...] = tuple(f for f in RDF_FORMATS if f.syntax != ox.RdfFormat.N3)
#: The syntaxes a whole dataset is served in (graph names kept), the preferred first.
DATASET_FORMATS: tuple[MediaFormat, ...] = tuple(f for f in RDF_FORMATS if f.syntax in (ox.RdfFormat.N_QUADS, ox.RdfFormat.TRIG))

#: The syntaxes of SELECT/ASK results, the preferred first.
RESULTS_FORMATS: tuple[MediaFormat, ...] = (
    MediaFormat(
        ox.QueryResultsFormat.JSON, ("application/sparql-results+json", "application/json"), ("json", "srj")
    ),
    MediaFormat(
        ox.QueryResultsFormat.XML, ("application/sparql-results+xml", "application/xml", "text/xml"), ("xml", "srx")
    ),
    MediaFormat(ox.QueryResultsFormat.CSV, ("text/csv",), ("csv",)),
    MediaFormat(ox.QueryResultsFormat.TSV, ("text/tab-separated-values",), ("tsv",)),
)

_EXTENSIONS: dict[str, ox.RdfFormat] = {
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".nq": ox.RdfFormat.N_QUADS,
    ".ttl": ox.RdfFormat.TURTLE,
    ".trig": ox.RdfFormat.TRIG,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".owl": ox.RdfFormat.RDF_XML,
    ".xml": ox.RdfFormat.RDF_XML,
    ".jsonld": ox.RdfFormat.JSON_LD,
    ".n3": ox.RdfFormat.N3,
}
_DATASET_FORMATS = (ox.RdfFormat.N_QUADS, ox.RdfFormat.TRIG)

_RDF_BY_TYPE = {media_type: f.syntax for f in RDF_FORMATS for media_type in f.media_types}
_RESULTS_BY_TYPE = {media_type: f.syntax for f in RESULTS_FORMATS for media_type in f.media_types}

#: Media types a SELECT/ASK result can be written in, the preferred one first.
RESULTS_MEDIA_TYPES: tuple[str, ...] = tuple(f.media_type for f in RESULTS_FORMATS)
#: Media types a graph can be written in, the preferred one first.
GRAPH_MEDIA_TYPES: tuple[str, ...] = tuple(f.media_type for f in GRAPH_FORMATS)
#: Every media type accepted for RDF input (GSP bodies, loads).
RDF_INPUT_MEDIA_TYPES: tuple[str, ...] = tuple(_RDF_BY_TYPE)


def essence(media_type: str) -> str:
    """``type/subtype`` without parameters, lower-cased: ``"Text/Turtle; charset=utf-8"`` → ``"text/turtle"``."""
    return media_type.split(";", 1)[0].strip().lower()


def rdf_format(media_type: str) -> ox.RdfFormat:
    """The RDF syntax named by ``media_type``; ``UnsupportedMediaType`` if there is none."""
    return _lookup(_RDF_BY_TYPE, media_type, "RDF", GRAPH_MEDIA_TYPES)


def results_format(media_type: str) -> ox.QueryResultsFormat:
    """The SPARQL results syntax named by ``media_type``; ``UnsupportedMediaType`` if there is none."""
    return _lookup(_RESULTS_BY_TYPE, media_type, "SPARQL results", RESULTS_MEDIA_TYPES)


def _lookup(by_type: dict[str, T], media_type: str, kind: str, offered: tuple[str, ...]) -> T:
    found = by_type.get(essence(media_type))
    if found is None:
        msg = f"unsupported {kind} media type {media_type!r}; use one of {', '.join(offered)}"
        raise UnsupportedMediaType(msg)
    return found


def is_dataset_format(media_type: str) -> bool:
    """Whether ``media_type`` is a syntax that names graphs (N-Quads, TriG)."""
    return rdf_format(media_type) in _DATASET_FORMATS


def serialize_graph(quads: Iterable[ox.Quad], syntax: ox.RdfFormat) -> bytes:
    """The quads of one graph in ``syntax``: N-Quads/TriG keep the graph name, the others cannot."""
    if syntax in _DATASET_FORMATS:
        return ox.serialize(quads, format=syntax)
    return ox.serialize((quad.triple for quad in quads), format=syntax)


def rdf_format_for_path(path: str | Path) -> ox.RdfFormat:
    """The RDF syntax of a file, guessed from its extension (``.nt .nq .ttl .trig .rdf .owl .xml .jsonld .n3``)."""
    suffix = Path(path).suffix.lower()
    found = _EXTENSIONS.get(suffix)
    if found is None:
        known = " ".join(_EXTENSIONS)
        msg = f"cannot guess the RDF syntax of {str(path)!r} from its extension; use one of {known} or give a media type"
        raise UnsupportedMediaType(msg)
    return found
