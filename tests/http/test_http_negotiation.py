"""Content negotiation: parsing ``Accept``, choosing a format, and the store writing every format offered."""

from __future__ import annotations

import csv
import io

import pyoxigraph as ox
import pytest

from cqels_endpoint.http.negotiation import by_name, choose, parse_accept
from cqels_endpoint.oxigraph.requests import open_store
from static_store import GRAPH_FORMATS, RESULTS_FORMATS, MediaFormat

EX = "http://example.org/"


def chosen(formats, accept):
    fmt = choose(formats, accept)
    return None if fmt is None else fmt.media_type


@pytest.fixture(scope="module")
def store():
    with open_store() as store:
        store.update(f'INSERT DATA {{ <{EX}a> <{EX}p> "1", <{EX}b> }}')
        yield store


def solutions_and_answer(select: bytes, ask: bytes, syntax: ox.QueryResultsFormat) -> tuple[list, bool]:
    if syntax == ox.QueryResultsFormat.CSV:  # lossy: pyoxigraph does not read it back
        return list(csv.reader(io.StringIO(select.decode())))[1:], ask == b"true"
    return list(ox.parse_query_results(select, format=syntax)), bool(ox.parse_query_results(ask, format=syntax))


@pytest.mark.parametrize("fmt", RESULTS_FORMATS, ids=lambda f: f.media_type)
def test_every_negotiable_results_format_is_written_by_the_store(store, fmt: MediaFormat) -> None:
    select = store.query("SELECT ?o WHERE { ?s ?p ?o }").serialize(fmt.media_type)
    ask = store.query("ASK { ?s ?p ?o }").serialize(fmt.media_type)
    solutions, answer = solutions_and_answer(select, ask, fmt.syntax)
    assert len(solutions) == 2 and answer is True


@pytest.mark.parametrize("fmt", GRAPH_FORMATS, ids=lambda f: f.media_type)
def test_every_negotiable_graph_format_is_written_by_the_store(store, fmt: MediaFormat) -> None:
    construct = store.query("CONSTRUCT WHERE { ?s ?p ?o }").serialize(fmt.media_type)
    assert len(list(ox.parse(construct, format=fmt.syntax))) == 2
    assert len(list(ox.parse(store.get_graph(None, fmt.media_type), format=fmt.syntax))) == 2


@pytest.mark.parametrize("formats", [RESULTS_FORMATS, GRAPH_FORMATS], ids=["results", "graphs"])
def test_format_names_and_media_types_are_unambiguous(formats) -> None:
    # by_name and choose take the first match: a name or media type listed twice would shadow one.
    names = [name for fmt in formats for name in (*fmt.names, *fmt.media_types)]
    assert len(names) == len(set(names))


def test_parse_accept_reads_q_values_and_skips_garbage() -> None:
    ranges = parse_accept("text/csv;q=0.5, garbage, */*;q=0.1, application/json;q=x, text/*;q=2, image/png")
    assert [(r.type, r.subtype, r.q) for r in ranges] == [("text", "csv", 0.5), ("*", "*", 0.1), ("image", "png", 1.0)]


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "application/sparql-results+json"),
        ("", "application/sparql-results+json"),
        ("*/*", "application/sparql-results+json"),
        ("text/csv", "text/csv"),
        ("text/tab-separated-values", "text/tab-separated-values"),
        ("application/sparql-results+xml", "application/sparql-results+xml"),
        ("application/xml", "application/sparql-results+xml"),
        ("application/json", "application/sparql-results+json"),
        ("text/csv;q=0.5, application/sparql-results+xml", "application/sparql-results+xml"),
        ("text/csv, application/sparql-results+xml", "text/csv"),  # a tie: the client's order
        ("text/*", "text/csv"),  # a tie among ours: our order
        ("text/csv, */*", "text/csv"),  # named beats wildcard at the same q
        ("*/*;q=0.9, text/tab-separated-values;q=0.8", "application/sparql-results+json"),
        ("text/*;q=0.3, text/csv;q=0", "text/tab-separated-values"),  # q=0 refuses csv
        # A browser: XML (application/xml at 0.9) beats the wildcard default.
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/sparql-results+xml"),
        ("text/turtle", None),
        ("application/sparql-results+json;q=0", None),
        ("garbage", "application/sparql-results+json"),  # unreadable Accept: as if absent
    ],
)
def test_choose_results_format(accept, expected) -> None:
    assert chosen(RESULTS_FORMATS, accept) == expected


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "text/turtle"),
        ("application/n-triples", "application/n-triples"),
        ("text/plain", "application/n-triples"),
        ("application/rdf+xml", "application/rdf+xml"),
        ("application/ld+json", "application/ld+json"),
        ("application/json", "application/ld+json"),
        ("application/n-quads", "application/n-quads"),
        ("application/trig", "application/trig"),
        ("application/*", "application/n-triples"),
        ("application/sparql-results+json", None),
    ],
)
def test_choose_graph_format(accept, expected) -> None:
    assert chosen(GRAPH_FORMATS, accept) == expected


def test_format_names() -> None:
    assert by_name(RESULTS_FORMATS, "CSV").media_type == "text/csv"
    assert by_name(RESULTS_FORMATS, "json").media_type == "application/sparql-results+json"
    assert by_name(GRAPH_FORMATS, "json").media_type == "application/ld+json"
    assert by_name(GRAPH_FORMATS, "nt").media_type == "application/n-triples"
    assert by_name(GRAPH_FORMATS, "text/turtle").media_type == "text/turtle"
    assert by_name(RESULTS_FORMATS, "turtle") is None


