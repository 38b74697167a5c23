"""A CQELS ``STREAM <s> [window] { … }`` block takes a full group graph pattern, as RSP-QL's
``WINDOW <w> { … }`` does: parsing, the static checks, the round trip through the serialiser, the
translation (every triple pattern inside reads the stream) and the errors of malformed blocks.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query.serialize import serialize_query
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import RangeWindow
from cqels_endpoint.terms import IRI, Var

EX = "http://ex.org/"
PREFIX = f"PREFIX : <{EX}>\n"

# The shape of the CQELS queries written for SRBench: OPTIONAL and UNION inside the STREAM block.
SRBENCH = """PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>
SELECT DISTINCT ?sensor ?value ?uom
WHERE {
  STREAM <http://www.cwi.nl/SRBench/observations> [RANGE 1h] {
    ?observation om-owl:procedure ?sensor ;
                 om-owl:result ?result .
    ?result om-owl:floatValue ?value .
    OPTIONAL { ?result om-owl:uom ?uom . }
    { ?observation a weather:RainfallObservation . }
    UNION
    { ?observation a weather:SnowfallObservation . }
  }
}
"""

# Every kind of group element inside one STREAM block.
BODY = """
    ?who :at ?room .
    OPTIONAL { ?who :badge ?badge FILTER (?badge != :void) }
    { ?room :kind ?kind } UNION { ?room :label ?kind OPTIONAL { ?room :floor ?floor } }
    MINUS { ?who :banned true }
    { ?who :age ?age BIND (?age + 1 AS ?next) }
    VALUES ?room { :hall :lab }
    FILTER (?who != :nobody)
"""
STREAM_QUERY = PREFIX + f"SELECT * WHERE {{ STREAM :s [RANGE 10s] {{ {BODY} }} }}"
WINDOW_QUERY = PREFIX + f"SELECT * FROM NAMED WINDOW :w ON :s [RANGE 10s] WHERE {{ WINDOW :w {{ {BODY} }} }}"


def only_stream(text: str) -> ast.StreamPattern:
    (pattern,) = [node for node in walk(parse_query(text)) if isinstance(node, ast.StreamPattern)]
    return pattern


# ------------------------------------------------------------------------------------ parsing


def test_srbench_query_with_optional_and_union_in_a_stream_block_parses() -> None:
    stream = only_stream(SRBENCH)
    assert stream.stream == IRI("http://www.cwi.nl/SRBench/observations")
    assert stream.window == RangeWindow(3_600_000)
    kinds = [type(e).__name__ for e in stream.pattern.elements]
    assert kinds == ["TriplesBlock", "OptionalPattern", "UnionPattern"]
    assert parse_query(SRBENCH).is_continuous


def test_a_stream_block_holds_the_same_group_as_a_window_block() -> None:
    stream = only_stream(STREAM_QUERY)
    (window,) = [node for node in walk(parse_query(WINDOW_QUERY)) if isinstance(node, ast.WindowPattern)]
    assert stream.pattern == window.pattern
    kinds = [type(e).__name__ for e in stream.pattern.elements]
    assert kinds == [
        "TriplesBlock", "OptionalPattern", "UnionPattern", "MinusPattern", "GroupGraphPattern", "InlineData", "Filter",
    ]


def test_both_keyword_orders_take_a_group() -> None:
    body = "{ ?a :p ?b OPTIONAL { ?b :q ?c } }"
    cqels = only_stream(PREFIX + f"SELECT * WHERE {{ STREAM :s [NOW] {body} }}")
    iswc = only_stream(PREFIX + f"SELECT * WHERE {{ STREAM [NOW] :s {body} }}")
    assert cqels == iswc
    assert isinstance(cqels.pattern.elements[1], ast.OptionalPattern)


def test_a_stream_block_may_hold_a_sub_select() -> None:
    stream = only_stream(PREFIX + "SELECT * WHERE { STREAM :s [NOW] { SELECT ?a WHERE { ?a :p ?b } } }")
    (sub_select,) = stream.pattern.elements
    assert isinstance(sub_select, ast.SubSelect)


def test_the_stream_variable_and_the_block_variables_are_in_scope() -> None:
    with pytest.raises(QuerySyntaxError, match=r"\?st is already in scope"):
        parse_query(PREFIX + "SELECT * WHERE { STREAM ?st [NOW] { ?a :p ?b } BIND (1 AS ?st) }")
    with pytest.raises(QuerySyntaxError, match=r"\?c is already in scope"):
        parse_query(PREFIX + "SELECT * WHERE { STREAM :s [NOW] { ?a :p ?b OPTIONAL { ?b :q ?c } } BIND (1 AS ?c) }")


def test_blank_node_labels_follow_the_bgps_inside_the_block() -> None:
    parse_query(PREFIX + "SELECT * WHERE { STREAM :s [NOW] { _:x :p ?b . _:x :q ?c } }")
    with pytest.raises(QuerySyntaxError, match="two different basic graph patterns"):
        parse_query(PREFIX + "SELECT * WHERE { STREAM :s [NOW] { _:x :p ?b OPTIONAL { _:x :q ?c } } }")
    with pytest.raises(QuerySyntaxError, match="two different basic graph patterns"):
        parse_query(PREFIX + "SELECT * WHERE { STREAM :s [NOW] { _:x :p ?b } _:x :q ?c }")


# ------------------------------------------------------------------------------------ round trip


@pytest.mark.parametrize("text", [SRBENCH, STREAM_QUERY, PREFIX + "SELECT * WHERE { STREAM ?st [TRIPLES 3] { ?a :p ?b } }"])
def test_round_trip(text: str) -> None:
    query = parse_query(text)
    written = serialize_query(query)
    again = parse_query(written)
    assert again == query, written
    assert to_algebra(again) == to_algebra(query)


def test_a_block_of_triples_is_written_as_before() -> None:
    text = PREFIX + "SELECT * WHERE { STREAM :s [RANGE 1m] { ?a :p ?b . ?b :q ?c } }"
    assert serialize_query(parse_query(text)).endswith(
        f"STREAM <{EX}s> [RANGE 1m] {{\n"
        f"    ?a <{EX}p> ?b .\n"
        f"    ?b <{EX}q> ?c .\n"
        "  }\n"
        "}\n"
    )


# ------------------------------------------------------------------------------------ translation


def _without_window_names(pattern: n.Pattern) -> n.Pattern:
    """The algebra with every stream pattern unnamed, comparing a WINDOW block with a STREAM block."""
    if isinstance(pattern, n.StreamPattern):
        return replace(pattern, window_name=None)
    if not isinstance(pattern, n.Pattern):
        return pattern
    changed = {}
    for name, value in vars(pattern).items():
        if isinstance(value, n.Pattern):
            changed[name] = _without_window_names(value)
        elif isinstance(value, tuple) and value and all(isinstance(v, n.Pattern) for v in value):
            changed[name] = tuple(_without_window_names(v) for v in value)
    return replace(pattern, **changed)


def test_a_stream_block_translates_as_the_window_block() -> None:
    stream = to_algebra(parse_query(STREAM_QUERY)).pattern
    window = to_algebra(parse_query(WINDOW_QUERY)).pattern
    assert stream == _without_window_names(window)


def test_every_triple_pattern_of_the_block_reads_the_stream() -> None:
    pattern = to_algebra(parse_query(STREAM_QUERY)).pattern
    streams = [x for x in walk(pattern) if isinstance(x, n.StreamPattern)]
    # ?who :at, :badge, :kind, :label, :floor, :banned, :age: one stream pattern each.
    assert len(streams) == 7
    assert all(s.stream == IRI(EX + "s") and s.window == RangeWindow(10_000) for s in streams)
    assert not [x for x in walk(pattern) if isinstance(x, n.BGP) and x.triples]


def test_graph_inside_a_stream_block_reads_the_static_named_graphs() -> None:
    text = PREFIX + "SELECT * WHERE { STREAM :s [NOW] { ?a :p ?b GRAPH :g { ?b :q ?c } } }"
    pattern = to_algebra(parse_query(text)).pattern
    (graph,) = [x for x in walk(pattern) if isinstance(x, n.Graph)]
    assert graph.pattern == n.BGP((ast.TriplePattern(Var("b"), IRI(EX + "q"), Var("c")),))


def test_a_block_of_plain_triples_is_still_one_stream_pattern_spanning_the_block() -> None:
    text = PREFIX + "SELECT * WHERE {\n  STREAM :s [NOW] {\n    ?a :p ?b .\n    ?b :q ?c\n  }\n}"
    query = parse_query(text)
    (stream,) = [x for x in walk(to_algebra(query).pattern) if isinstance(x, n.StreamPattern)]
    assert len(stream.triples) == 2
    assert text[stream.span.start : stream.span.end].startswith("STREAM :s [NOW] {")


# ------------------------------------------------------------------------------------ errors


def located(text: str) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query(text)
    return caught.value


def test_a_malformed_group_inside_a_stream_block_is_located() -> None:
    text = PREFIX + "SELECT * WHERE {\n  STREAM :s [RANGE 1s] {\n    ?a :p ?b\n    OPTIONAL { ?b :q }\n  }\n}"
    error = located(text)
    assert (error.line, error.column) == (5, len("    OPTIONAL { ?b :q ") + 1)
    assert error.message.startswith("unexpected '}', expected one of:")


def test_union_without_a_left_group_in_a_stream_block_is_located() -> None:
    line = "SELECT * WHERE { STREAM :s [RANGE 1s] { ?a :p ?b UNION { ?b :q ?c } } }"
    error = located(PREFIX + line)
    assert (error.line, error.column) == (2, line.index("UNION") + 1)
    assert error.message.startswith("unexpected 'UNION'")


def test_a_stream_block_without_a_triple_pattern_is_an_error() -> None:
    for block in ("{ }", "{ FILTER (true) }", "{ BIND (1 AS ?x) }"):
        error = located(PREFIX + f"SELECT * WHERE {{ STREAM :s [NOW] {block} }}")
        assert error.message == "a STREAM block needs at least one triple pattern"
        assert (error.line, error.column) == (2, 18)


def test_a_stream_block_still_needs_one_window() -> None:
    error = located(PREFIX + "SELECT * WHERE { STREAM :s { ?a :p ?b OPTIONAL { ?b :q ?c } } }")
    assert error.message.startswith("STREAM <http://ex.org/s> needs a window")
    assert (error.line, error.column) == (2, 18)


@pytest.mark.parametrize(
    ("inner", "construct"),
    [
        ("STREAM :t [NOW] { ?b :q ?c }", "STREAM"),
        ("OPTIONAL { STREAM :t [NOW] { ?b :q ?c } }", "STREAM"),
        ("{ SELECT * { STREAM :t [NOW] { ?b :q ?c } } }", "STREAM"),
        ("FILTER EXISTS { STREAM :t [NOW] { ?b :q ?c } }", "STREAM"),
        ("WINDOW :w { ?b :q ?c }", "WINDOW"),
    ],
)
def test_stream_and_window_blocks_do_not_nest_in_a_stream_block(inner: str, construct: str) -> None:
    text = PREFIX + f"SELECT * FROM NAMED WINDOW :w ON :s [NOW] WHERE {{ STREAM :s [NOW] {{ ?a :p ?b {inner} }} }}"
    error = located(text)
    assert error.message.startswith(f"{construct} blocks cannot be nested inside STREAM <{EX}s>")
    assert text[error.span.start : error.span.end].startswith(construct)


def test_one_shot_queries_still_reject_stream_blocks() -> None:
    with pytest.raises(QuerySyntaxError, match="STREAM is only allowed in continuous queries"):
        parse_query(PREFIX + "SELECT * WHERE { STREAM :s [NOW] { ?a :p ?b OPTIONAL { ?b :q ?c } } }", allow_streams=False)
