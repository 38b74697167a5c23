"""CQELS-QL 2.0 syntax (issue 17, deliverable 1): every example query of the specification parses,
round-trips through the serializer and registers, or names the construct the engine does not
execute yet; bare stream names resolve under the stream base; a window-less ``STREAM Name { … }``
reads its ``FROM STREAM`` window and leaves the patterns outside it to the static graph; implicit
stream binding; ``[SLIDE d STEP s]`` and ``[PAST d]``; ``FROM [STATIC] <g> [WITH DEPTH n] [CACHE d]``."""

from __future__ import annotations

import pytest
from cqels_ql2_examples import EXAMPLES, PREFIXES

from cqels_endpoint import parse_query
from cqels_endpoint.engine import Engine
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.query import ast
from cqels_endpoint.query.serialize import serialize_query
from cqels_endpoint.query.windows import DirectionalWindow, PolicyWindow, RangeWindow
from cqels_endpoint.terms import IRI
from cqels_endpoint.testing import Push, run, seen, timeline, window_query

EX = "http://example.org/"
BASE = "urn:cqels:stream:"


@pytest.mark.parametrize(("name", "text", "unsupported"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_spec_example_parses_and_round_trips(name, text, unsupported) -> None:
    query = parse_query(PREFIXES + text)
    assert query.is_continuous
    assert parse_query(serialize_query(query)) == query


@pytest.mark.parametrize(("name", "text", "unsupported"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_spec_example_registers_or_says_why_not(name, text, unsupported) -> None:
    engine = Engine()
    try:
        if unsupported is None:
            query = engine.register(PREFIXES + text)
            assert engine.queries[query.name] is query
        else:
            with pytest.raises(QuerySyntaxError) as raised:
                engine.register(PREFIXES + text)
            message = str(raised.value)
            assert unsupported in message
            assert "^" in message  # located, with its caret
    finally:
        engine.close()


def test_register_query_name_is_the_registered_name() -> None:
    engine = Engine()
    try:
        query = engine.register(PREFIXES + EXAMPLES[0][1])
        assert query.name == "HighTemperature"
    finally:
        engine.close()


def test_bare_stream_names_resolve_under_the_stream_base() -> None:
    text = "SELECT * FROM STREAM Sensors [NOW] FROM NAMED WINDOW <urn:w> ON Other [RANGE 1s] WHERE { ?s ?p ?o }"
    streams = [d.stream for d in parse_query(text).form.datasets]
    assert streams == [IRI(BASE + "Sensors"), IRI(BASE + "Other")]
    based = parse_query(text, stream_base="http://example.org/streams/")
    assert [d.stream for d in based.form.datasets] == [
        IRI("http://example.org/streams/Sensors"), IRI("http://example.org/streams/Other")]
    block = parse_query("SELECT * WHERE { STREAM Sensors [RANGE 1s] { ?s ?p ?o } }", stream_base="urn:s:")
    assert block.form.where.elements[0].stream == IRI("urn:s:Sensors")
    # IRIs and prefixed names keep working beside bare names.
    mixed = parse_query(f"PREFIX s: <{EX}> SELECT * FROM STREAM s:a [NOW] FROM STREAM <{EX}b> [NOW] WHERE {{ ?s ?p ?o }}")
    assert [d.stream for d in mixed.form.datasets] == [IRI(EX + "a"), IRI(EX + "b")]


def high_temperature_rows(engine_kwargs: dict, stream: str) -> list[list[str]]:
    engine = Engine(**engine_kwargs)
    try:
        query = engine.register(PREFIXES + EXAMPLES[0][1])
        emitted = []
        query.subscribe(emitted.append)
        engine.push(stream, f"<{EX}s1> <{EX}temperature> 25 . <{EX}s2> <{EX}temperature> 35 .", 1)
        return [sorted(str(row["sensor"]) for row in e.rows) for e in emitted]
    finally:
        engine.close()


def test_the_engine_resolves_bare_names_under_its_stream_base() -> None:
    assert high_temperature_rows({}, BASE + "Sensors") == [[f"<{EX}s2>"]]
    assert high_temperature_rows({"stream_base": "http://example.org/streams/"}, BASE + "Sensors") == []
    based = high_temperature_rows({"stream_base": "http://example.org/streams/"}, "http://example.org/streams/Sensors")
    assert based == [[f"<{EX}s2>"]]


def test_the_server_passes_its_stream_base_to_queries(endpoint_factory) -> None:
    base = "http://example.org/streams/"
    server = endpoint_factory(cache_engine="local", stream_base=base, auth_token="t")
    auth = {"Authorization": "Bearer t"}
    registered = server.put("/queries/hot", body=PREFIXES + EXAMPLES[0][1],
                            headers={"Content-Type": "application/sparql-query", **auth})
    assert registered.status == 201, registered.text
    emitted = []
    endpoint(server.app).engine.queries["hot"].subscribe(emitted.append)
    answer = server.post("/streams/Sensors", params={"time": "1000"},
                         body=f"<{EX}s2> <{EX}temperature> 35 .", headers={"Content-Type": "text/turtle", **auth})
    assert answer.status == 200, answer.text
    assert answer.json()["stream"] == base + "Sensors"
    assert [[str(row["sensor"]) for row in e.rows] for e in emitted] == [[f"<{EX}s2>"]]


REQUESTS = BASE + "Requests"
STATIC = f"""@prefix ex: <{EX}> .
<{EX}graph> {{ ex:ann ex:firstName "Ann" ; ex:city "Galway" . }}
"""
# The stream also says something about ann's first name: who reads it tells the semantics apart.
REQUEST = Push(REQUESTS, 1, f'<{EX}r1> <{EX}personIri> <{EX}ann> . <{EX}ann> <{EX}firstName> "Stream" .')


def first_names(text: str, mode: str) -> list[list[str]]:
    return [sorted(str(row["firstName"]) for row in e.rows) for e in run(PREFIXES + text, [REQUEST], STATIC, mode)]


@pytest.mark.parametrize("mode", ["recompute", "incremental"])
def test_a_declared_stream_block_leaves_the_other_patterns_to_the_static_graph(mode) -> None:
    declared = """SELECT ?firstName
FROM STREAM Requests [NOW]
FROM <http://example.org/graph> WITH DEPTH 2 CACHE 5m
WHERE { STREAM Requests { ?req ex:personIri ?person . } ?person ex:firstName ?firstName }"""
    assert first_names(declared, mode) == [['"Ann"']]
    assert first_names(declared.replace("FROM <", "FROM STATIC <"), mode) == [['"Ann"']]
    # A block with a window of its own keeps FROM STREAM in the default graph (merged with the static one).
    windowed = declared.replace("STREAM Requests {", "STREAM Requests [NOW] {")
    assert first_names(windowed, mode) == [['"Ann"', '"Stream"']]


@pytest.mark.parametrize("mode", ["recompute", "incremental"])
def test_implicit_stream_binding_reads_the_one_stream(mode) -> None:
    implicit = """SELECT ?firstName FROM STREAM Requests [NOW]
WHERE { ?req ex:personIri ?person . ?person ex:firstName ?firstName }"""
    assert first_names(implicit, mode) == [['"Stream"']]


def test_static_graph_options_are_parsed_as_written() -> None:
    query = parse_query(f"SELECT * FROM STATIC <{EX}g> WITH DEPTH 3 CACHE 90s FROM NAMED <{EX}h> CACHE 1m "
                        "FROM <urn:plain> WHERE { ?s ?p ?o }")
    assert query.form.datasets == (
        ast.DatasetClause(IRI(EX + "g"), static=True, depth=3, cache_ms=90_000),
        ast.DatasetClause(IRI(EX + "h"), named=True, cache_ms=60_000),
        ast.DatasetClause(IRI("urn:plain")),
    )


@pytest.mark.parametrize("mode", ["recompute", "incremental"])
def test_slide_step_is_range_step(mode) -> None:
    events = timeline("a--b----c-d--e")
    expected = seen(run(window_query("[RANGE 4ms STEP 2ms]"), events, r2s="RSTREAM", mode=mode, advance_to=16))
    assert expected  # the oracle saw windows
    assert seen(run(window_query("[SLIDE 4ms STEP 2ms]"), events, r2s="RSTREAM", mode=mode, advance_to=16)) == expected


@pytest.mark.parametrize("mode", ["recompute", "incremental"])
def test_past_is_range(mode) -> None:
    events = timeline("a--b----c-d--e")
    for past, range_ in (("[PAST 4ms]", "[RANGE 4ms]"), ("[PAST 4ms STEP 2ms]", "[RANGE 4ms STEP 2ms]")):
        expected = seen(run(window_query(range_), events, r2s="RSTREAM", mode=mode, advance_to=16))
        assert seen(run(window_query(past), events, r2s="RSTREAM", mode=mode, advance_to=16)) == expected


def test_windows_parse_into_their_configurations() -> None:
    def window(text: str):
        return parse_query(f"SELECT * FROM STREAM S {text} WHERE {{ ?s ?p ?o }}").form.datasets[0].window

    assert window("[SLIDE 30s STEP 10s]") == RangeWindow(30_000, 10_000)
    assert window("[PAST 10s]") == RangeWindow(10_000)
    assert window("[RANGE 2d STEP 1h]") == RangeWindow(172_800_000, 3_600_000)
    assert window("[RANGE 10s FUTURE 5s]") == window("[PAST 10s FUTURE 5s]") == DirectionalWindow(10_000, 5_000)
    assert window("[FUTURE 20s STEP 1s EMIT ON_CLOSE LATENESS 2s]") == PolicyWindow(
        DirectionalWindow(0, 20_000, 1_000), "ON_CLOSE", 2_000)
    assert window("[TRIPLES PAST 5 FUTURE 3]") == DirectionalWindow(5, 3, count=True)
    assert window("[RANGE 10s LATENESS 2s]") == PolicyWindow(RangeWindow(10_000), None, 2_000)


def test_seq_parses_its_steps() -> None:
    query = parse_query(PREFIXES + dict((e[0], e[1]) for e in EXAMPLES)["s7-seq-quantifiers"])
    seq = next(e.constraint for e in query.form.where.elements if isinstance(e, ast.Filter))
    assert [(s.var.name, s.negated, s.minimum, s.maximum, s.alias) for s in seq.steps] == [
        ("e1", False, 1, None, None), ("e2", True, 1, 1, None), ("e3", False, 2, 5, None),
        ("e4", False, 0, 1, None), ("e2", False, 0, None, None), ("e3", False, 3, 3, ast.Var("last")),
    ]


@pytest.mark.parametrize("text", [
    "SELECT * FROM STREAM S [RANGE 10s] WHERE { ?s ?p ?o FILTER(SEQ(?s)) }",  # one step
    "SELECT * FROM STREAM S [RANGE 10s] WHERE { ?s ?p ?o FILTER(SEQ(?s , ?o)) }",  # commas
    "SELECT * FROM STREAM S [RANGE 10s] WHERE { ?s ?p ?o FILTER(SEQ(?s ; ?o{5,2})) }",  # empty range
    "SELECT * FROM STREAM S [FUTURE 0s] WHERE { ?s ?p ?o }",
    "SELECT * FROM STREAM S [RANGE 10s EMIT SOMETIMES] WHERE { ?s ?p ?o }",
    "SELECT * FROM STREAM S [RANGE 10s LATENESS 1s EMIT ON_CLOSE] WHERE { ?s ?p ?o }",  # EMIT first
    "SELECT * FROM Graph WHERE { ?s ?p ?o }",  # a bare name is no graph IRI
    "SELECT * FROM <urn:g> WITH DEPTH 1 WITH DEPTH 2 WHERE { ?s ?p ?o }",
])
def test_malformed_cqels_ql2_is_a_located_syntax_error(text) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        parse_query(text)
    assert "^" in str(raised.value)


HUGE = "9" * 5000  # more digits than Python converts to an int


@pytest.mark.parametrize("text", [
    f"SELECT * FROM STREAM S [TRIPLES {HUGE}] WHERE {{ ?s ?p ?o }}",
    f"SELECT * FROM STREAM S [TRIPLES PAST {HUGE} FUTURE 1] WHERE {{ ?s ?p ?o }}",
    f"SELECT * FROM <urn:g> WITH DEPTH {HUGE} WHERE {{ ?s ?p ?o }}",
    f"SELECT * FROM STREAM S [RANGE 1s] WHERE {{ ?s ?p ?o FILTER(SEQ(?s ; ?o{{{HUGE}}})) }}",
])
def test_huge_counts_are_located_errors(text) -> None:
    with pytest.raises(QuerySyntaxError, match="at most"):
        parse_query(text)


def test_a_huge_limit_is_clamped_past_any_result_size() -> None:
    modifiers = parse_query(f"SELECT * WHERE {{ ?s ?p ?o }} LIMIT {HUGE} OFFSET 007").form.modifiers
    assert (modifiers.limit, modifiers.offset) == (1 << 63, 7)
