"""Fuzzing the readers of ``/streams`` and ``/store``, and the query paths, over HTTP (Flask's test client).

Mutations of the example data (``examples/data``) as N-Triples, Turtle, RDF/XML, JSON-LD, TriG,
N-Quads and NDJSON bodies, and of the W3C and example queries, must get a 2xx or a 4xx with the
JSON error body — never a 500 — and a refused write must leave the stream's counters and the
store's quads as they were. The compiled N-Triples reader is checked against pyoxigraph on the same
mutated bodies: whatever it reads, pyoxigraph reads to the same terms. Seeded, so reproducible.
"""

from __future__ import annotations

import json
import random
import re
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import asgi_client
import pyoxigraph as ox
import pytest
from mutations import (
    CQELS_QL2_SEEDS,
    EXAMPLE_DATA,
    EXAMPLE_QUERIES,
    mutate_ndjson,
    mutate_rdf,
    mutate_tokens,
    query_corpus,
    record_figures,
    tokenize,
)

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.http.app import create_app
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.runtime._reader import read_ntriples
from static_store import StaticStore

STREAMS = "http://example.org/fuzz/"
GRAPH = "http://example.org/fuzz/graph"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
NDJSON = "application/x-ndjson"
# Bodies whose errors can always name a line: a refusal of them without one is a finding.
LINE_FORMATS = {"application/n-triples", "text/turtle", "application/n-quads", "application/trig", NDJSON}
ERROR_KEYS = {"error", "line", "column"}
SLOW_STREAM_PUSHES = 6_000
SLOW_STORE_WRITES = 4_000
SLOW_QUERIES = 2_000


# --------------------------------------------------------------------------- seed bodies


def _example_quads() -> list[ox.Quad]:
    quads = list(ox.parse(path=str(EXAMPLE_DATA / "conference.ttl"), format=ox.RdfFormat.TURTLE))
    return quads + list(ox.parse(path=str(EXAMPLE_DATA / "floorplan.trig"), format=ox.RdfFormat.TRIG))


def _serialize(quads, syntax: ox.RdfFormat) -> str:
    return ox.serialize(quads, format=syntax).decode("utf-8")


def _store_bodies() -> list[tuple[str, str]]:
    """(content type, body): the example data in every syntax ``/store`` reads."""
    quads = _example_quads()
    triples = [ox.Quad(q.subject, q.predicate, q.object) for q in quads]
    return [
        ("text/turtle", (EXAMPLE_DATA / "conference.ttl").read_text(encoding="utf-8")),
        ("application/n-triples", _serialize(triples, ox.RdfFormat.N_TRIPLES)),
        ("application/rdf+xml", _serialize(triples, ox.RdfFormat.RDF_XML)),
        ("application/ld+json", _serialize(triples, ox.RdfFormat.JSON_LD)),
        ("application/trig", (EXAMPLE_DATA / "floorplan.trig").read_text(encoding="utf-8")),
        ("application/n-quads", _serialize(quads, ox.RdfFormat.N_QUADS)),
    ]


def _event_lines() -> list[str]:
    triples = [ox.Quad(q.subject, q.predicate, q.object) for q in _example_quads()]
    return _serialize(triples, ox.RdfFormat.N_TRIPLES).splitlines()


def _trig_batch(lines: list[str], rng: random.Random, now: int) -> str:
    """A TriG batch of two or three graphs timestamped from ``now`` ms (the RSP timestamped-graph model)."""
    parts = []
    for g in range(rng.randint(2, 3)):
        stamp = datetime.fromtimestamp((now + rng.randint(0, 999)) / 1000, UTC).isoformat().replace("+00:00", "Z")
        parts.append(f'<http://ex.org/g{g}> <{PROV}> "{stamp}"^^<{XSD_DATETIME}> .')
        parts.append(f"<http://ex.org/g{g}> {{ {' '.join(rng.sample(lines, 3))} }}")
    return "\n".join(parts) + "\n"


@dataclass
class Tally:
    """Statuses seen, and every answer that broke a property."""

    statuses: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def fail(self, what: str, response, body: str | bytes) -> None:
        self.failures.append(f"{what}: {response.status_code} {response.get_data(as_text=True)[:300]} for {body!r:.400}")

    def answer(self, response, body: str | bytes, content_type: str) -> dict | None:
        """Check the status and the error body; the error (or None for a 2xx)."""
        status = response.status_code
        self.statuses[status] += 1
        if status >= 500 or status < 200 or 300 <= status < 400:
            self.fail("not a 2xx or 4xx", response, body)
            return None
        if status < 300:
            return None
        error = response.get_json(silent=True)
        if not isinstance(error, dict) or set(error) != ERROR_KEYS:
            self.fail("the error is not JSON {error, line, column}", response, body)
            return None
        named = re.match(r"line (\d+)", error["error"])
        if named and error["line"] != int(named.group(1)):
            self.fail("the error names another line than its 'line'", response, body)
        if status == 400 and content_type in LINE_FORMATS and error["line"] is None and _syntax_error(error["error"]):
            self.fail("a syntax error without its line", response, body)
        return error

    def assert_clean(self) -> None:
        assert not self.failures, f"{len(self.failures)} failures (statuses {dict(self.statuses)}):\n" + "\n".join(
            self.failures[:10]
        )

    def fours_and_fives(self) -> tuple[int, int]:
        return (sum(n for s, n in self.statuses.items() if 400 <= s < 500),
                sum(n for s, n in self.statuses.items() if s >= 500))


def _syntax_error(message: str) -> bool:
    """Whether the message is a parser's (pyoxigraph's, which knows where it stopped)."""
    return "parser error" in message.lower()


def _encode(text: str) -> bytes:
    # Lone surrogates from the mutations go out as the invalid UTF-8 a careless client would send.
    return text.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- /streams


@pytest.fixture
def server():
    store = open_store()
    app = create_app(store, ServerConfig(memory=True, cache_engine="local"))
    try:
        yield app, store
    finally:
        store.close()


def fuzz_streams(app, count: int, seed: int, tally: Tally) -> None:
    client = asgi_client.client(app)
    engine = endpoint(app).engine
    lines = _event_lines()
    splices = [tokenize(line) for line in lines]
    rng = random.Random(seed)
    now = 1_000
    for i in range(count):
        # A new stream now and then: a mutated time far in the future closes a stream's clock to the rest.
        stream = f"{STREAMS}{i // 100}"
        if i % 100 == 0:
            engine.register(f"SELECT ?a ?c WHERE {{ STREAM <{stream}> [RANGE 10s] {{ ?a ?b ?c }} }}",
                            name=f"window-{i}", r2s="RSTREAM")
            engine.register(f"SELECT (COUNT(*) AS ?n) (MAX(?c) AS ?m) WHERE {{ STREAM <{stream}> [TRIPLES 50] {{ ?a ?b ?c }} }}",
                            name=f"count-{i}", r2s="RSTREAM")
        now += 1_000
        kind = rng.choice(("application/n-triples", "text/turtle", "application/rdf+xml", "application/ld+json",
                           "application/trig", NDJSON, NDJSON))
        params = {}
        if kind == NDJSON:
            events = [{"time": now + k, "data": "\n".join(rng.sample(lines, rng.randint(1, 3)))} for k in range(rng.randint(1, 4))]
            body = mutate_ndjson(events, rng, splices)
        elif kind == "application/trig":
            body = mutate_rdf(_trig_batch(lines, rng, now), rng, splices)
        else:
            triples = "\n".join(rng.sample(lines, rng.randint(1, 5))) + "\n"
            seed_body = triples if kind in ("application/n-triples", "text/turtle") else _serialize(
                ox.parse(triples, format=ox.RdfFormat.N_TRIPLES), ox.RdfFormat.RDF_XML if kind == "application/rdf+xml"
                else ox.RdfFormat.JSON_LD)
            body = mutate_rdf(seed_body, rng, splices)
            params["time"] = str(now) if rng.random() < 0.9 else rng.choice(
                ("-1", "99999999999999999999999", "1.5", "", "2024-02-30T00:00:00Z", "0001-01-01T00:00:00Z", "x"))
        before = engine.stream_stats(stream)
        response = client.post(f"/streams/{urllib.parse.quote(stream, safe='')}", query_string=params,
                               data=_encode(body), headers={"Content-Type": kind})
        error = tally.answer(response, body, kind)
        [after] = engine.stream_stats(stream) or [None]
        if response.status_code < 300:
            accepted = response.get_json()["accepted"]
            if after["events"] != (before[0]["events"] if before else 0) + accepted:
                tally.fail(f"{accepted} accepted, counted {after['events']}", response, body)
        elif error is not None and before and (after["events"], after["latest"]) != (before[0]["events"], before[0]["latest"]):
            tally.fail("a refused batch changed the stream", response, body)


def test_mutated_stream_bodies_get_no_500_and_refusals_apply_nothing(server) -> None:
    tally = Tally()
    fuzz_streams(server[0], 400, seed=1, tally=tally)
    tally.assert_clean()
    assert tally.statuses[200] and tally.statuses[400]  # both sides reached


def test_an_escaped_lone_surrogate_in_ndjson_data_is_a_400_naming_the_line(server) -> None:
    """Found by the fuzzer: JSON's "\\ud800" decodes to a string pyoxigraph cannot take (a 500)."""
    app, _ = server
    stream = f"{STREAMS}surrogate"
    good = json.dumps({"time": 1000, "data": "<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> ."})
    bad = json.dumps({"time": 2000, "data": "<http://ex.org/a\ud800> <http://ex.org/p> <http://ex.org/c> ."})
    response = asgi_client.client(app).post(f"/streams/{urllib.parse.quote(stream, safe='')}", data=f"{good}\n{bad}\n",
                                            headers={"Content-Type": NDJSON})
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.get_json()
    assert error["line"] == 2
    assert "surrogate U+D800" in error["error"]
    [stats] = endpoint(app).engine.stream_stats(stream)
    assert (stats["events"], stats["malformed"]) == (0, 1)


# --------------------------------------------------------------------------- /store


def fuzz_store(app, store: StaticStore, count: int, seed: int, tally: Tally) -> None:
    client = asgi_client.client(app)
    bodies = _store_bodies()
    splices = [tokenize(body) for _, body in bodies]
    rng = random.Random(seed)
    for i in range(count):
        if i % 50 == 0:  # keep the store small, so comparing its quads stays cheap
            store.update("DROP ALL")
        content_type, seed_body = rng.choice(bodies)
        body = mutate_rdf(seed_body, rng, splices)
        method, params = rng.choice((("PUT", {"graph": GRAPH}), ("POST", {"graph": GRAPH}), ("PUT", {"default": ""}),
                                     ("POST", {})))
        before = set(store)
        response = client.open("/store", method=method, query_string=params, data=_encode(body),
                               headers={"Content-Type": content_type})
        tally.answer(response, body, content_type)
        if response.status_code >= 400 and set(store) != before:
            tally.fail("a refused write changed the store", response, body)


def test_mutated_store_bodies_get_no_500_and_refusals_write_nothing(server) -> None:
    tally = Tally()
    fuzz_store(*server, 300, seed=2, tally=tally)
    tally.assert_clean()
    assert tally.statuses[400] and (tally.statuses[201] or tally.statuses[204])


# --------------------------------------------------------------------------- /query and /queries


def fuzz_queries(app, count: int, seed: int, tally: Tally) -> None:
    """Mutated W3C queries as one-shot queries, mutated example (CQELS) queries registered: mostly one
    edit, so that some still run or register and the paths past the parser are reached too."""
    client = asgi_client.client(app)
    one_shot = [tokenize(text) for kind, text in query_corpus() if kind == "query" and len(text) < 2000]
    continuous = [tokenize(path.read_text(encoding="utf-8")) for path in sorted(EXAMPLE_QUERIES.glob("*.rq"))]
    continuous += [tokenize(text) for text in CQELS_QL2_SEEDS]
    rng = random.Random(seed)
    for i in range(count):
        if i % 2:
            text = mutate_tokens(rng.choice(one_shot), rng, one_shot, rounds=(0, 1, 1, 2))
            response = client.post("/query", data=_encode(text), headers={"Content-Type": "application/sparql-query",
                                                                           "Accept": "application/sparql-results+json"})
        else:
            text = mutate_tokens(rng.choice(continuous), rng, one_shot, rounds=(0, 1, 1, 2))
            response = client.put(f"/queries/fuzz{i}", data=_encode(text), headers={"Content-Type": "application/sparql-query"})
            if response.status_code == 201:
                client.delete(f"/queries/fuzz{i}")
        tally.answer(response, text, "application/sparql-query")


def test_mutated_queries_over_http_get_no_500(server) -> None:
    tally = Tally()
    fuzz_queries(server[0], 120, seed=3, tally=tally)
    tally.assert_clean()
    assert tally.statuses[400] and tally.statuses[200] and tally.statuses[201]


# --------------------------------------------------------------------------- the compiled reader


def fuzz_compiled_reader(count: int, seed: int) -> tuple[int, int, list[str]]:
    """Mutated N-Triples through the compiled reader and pyoxigraph: (tried, read by the reader,
    disagreements). The reader is one-sided (None: "ask pyoxigraph"), so the property is that
    whatever it reads pyoxigraph reads to the same terms."""
    lines = _event_lines()
    splices = [tokenize(line) for line in lines]
    rng = random.Random(seed)
    read = 0
    failures = []
    for _ in range(count):
        text = mutate_rdf("\n".join(rng.sample(lines, rng.randint(1, 4))) + "\n", rng, splices)
        one_per_line = rng.random() < 0.5
        keep = rng.random() < 0.5
        try:
            forms = read_ntriples(text, keep, one_per_line)
        except Exception as error:  # the property under test: the reader never raises
            failures.append(f"{text!r}: {type(error).__name__}: {error}")
            continue
        if forms is None:
            continue
        read += 1
        syntax = ox.RdfFormat.N_TRIPLES if one_per_line else ox.RdfFormat.TURTLE
        try:
            expected = [str(t) for q in ox.parse(text, format=syntax) for t in (q.subject, q.predicate, q.object)]
        except SyntaxError as error:
            failures.append(f"{text!r}: the reader read {forms.forms()}, pyoxigraph refuses it: {error}")
            continue
        if forms.forms() != expected:
            failures.append(f"{text!r}: the reader read {forms.forms()}, pyoxigraph {expected}")
    return count, read, failures


def test_the_compiled_reader_agrees_with_pyoxigraph_on_mutated_bodies() -> None:
    tried, read, failures = fuzz_compiled_reader(3_000, seed=4)
    assert not failures, "\n".join(failures[:10])
    assert read > tried // 25  # the mutations leave enough plain N-Triples for the reader to read


# --------------------------------------------------------------------------- the slow run and its figures


@pytest.mark.slow
def test_slow_reader_fuzz_records_figures(server) -> None:
    app, store = server
    started = time.perf_counter()
    streams, stores, queries = Tally(), Tally(), Tally()
    fuzz_streams(app, SLOW_STREAM_PUSHES, seed=11, tally=streams)
    fuzz_store(app, store, SLOW_STORE_WRITES, seed=12, tally=stores)
    fuzz_queries(app, SLOW_QUERIES, seed=13, tally=queries)
    tried, read, reader_failures = fuzz_compiled_reader(50_000, seed=14)
    elapsed = time.perf_counter() - started

    def line(name: str, count: int, tally: Tally) -> str:
        fours, fives = tally.fours_and_fives()
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(tally.statuses.items()))
        return f"- {name}: {count} requests, {fours} 4xx, {fives} 5xx, {len(tally.failures)} failures ({statuses})"

    figures = [
        line("POST /streams (N-Triples, Turtle, RDF/XML, JSON-LD, TriG, NDJSON)", SLOW_STREAM_PUSHES, streams),
        line("PUT/POST /store (Turtle, N-Triples, RDF/XML, JSON-LD, TriG, N-Quads)", SLOW_STORE_WRITES, stores),
        line("POST /query and PUT /queries/{name}", SLOW_QUERIES, queries),
        f"- compiled N-Triples reader vs pyoxigraph: {tried} mutated bodies, {read} read by the reader, "
        f"{len(reader_failures)} disagreements",
        f"- {elapsed:.0f} s in all",
    ]
    print("\n".join(figures))
    record_figures("Readers and HTTP", figures)
    for tally in (streams, stores, queries):
        tally.assert_clean()
    assert not reader_failures, "\n".join(reader_failures[:10])
