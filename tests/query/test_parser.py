"""The CQELS / RSP-QL / C-SPARQL layer of the parser, spans, IRI resolution and lexical details.

The SPARQL 1.1 grammar itself is covered by the W3C suites (test_w3c_syntax.py); golden error
messages by test_parser_errors.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import ROOT

from cqels_endpoint import parse_query, parse_update
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query._durations import parse_duration
from cqels_endpoint.query._iri import resolve_iri
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import AllWindow, NowWindow, RangeWindow, TriplesWindow
from cqels_endpoint.terms import (
    IRI,
    RDF_FIRST,
    RDF_NIL,
    RDF_REST,
    RDF_TYPE,
    XSD,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    BlankNode,
    Literal,
    Var,
)

EXAMPLES = sorted((ROOT / "examples" / "queries").glob("*.rq"))
EX = "http://example.org/"


def stream_patterns(query: ast.Query) -> list[ast.StreamPattern]:
    return [node for node in walk(query) if isinstance(node, ast.StreamPattern)]


def only_stream(text: str) -> ast.StreamPattern:
    (pattern,) = stream_patterns(parse_query(text))
    return pattern


def window_of(window_text: str) -> object:
    return only_stream(f"SELECT * WHERE {{ STREAM <{EX}s> {window_text} {{ ?s ?p ?o }} }}").window


def triples(text: str) -> tuple[ast.TriplePattern, ...]:
    return tuple(node for node in walk(parse_query(text)) if isinstance(node, ast.TriplePattern))


# ------------------------------------------------------------------------------------ windows


@pytest.mark.parametrize(
    ("window", "config"),
    [
        ("[RANGE 30s]", RangeWindow(30_000)),
        ("[RANGE 30s SLIDE 5s]", RangeWindow(30_000, 5_000)),
        ("[RANGE 1m STEP 10s]", RangeWindow(60_000, 10_000)),
        ("[RANGE 2h TUMBLING]", RangeWindow(7_200_000, 7_200_000)),
        ("[RANGE 5s SLIDE 5s]", RangeWindow(5_000, 5_000)),
        ("[NOW]", NowWindow()),
        ("[ALL]", AllWindow()),
        ("[TRIPLES 5]", TriplesWindow(5)),
        ("[COUNT 1000]", TriplesWindow(1000)),
        ("[range 3s]", RangeWindow(3_000)),
        ("[Range 3S Slide 1S]", RangeWindow(3_000, 1_000)),
        ("[range 1h tumbling]", RangeWindow(3_600_000, 3_600_000)),
        ("[now]", NowWindow()),
        ("[all]", AllWindow()),
        ("[triples 2]", TriplesWindow(2)),
        ("[ RANGE  30 seconds  SLIDE 5 seconds ]", RangeWindow(30_000, 5_000)),
    ],
)
def test_every_window_form(window: str, config: object) -> None:
    assert window_of(window) == config


@pytest.mark.parametrize(
    ("duration", "ms"),
    [
        ("500ms", 500),
        ("30s", 30_000),
        ("5m", 300_000),
        ("2h", 7_200_000),
        ("1d", 86_400_000),
        ("1w", 604_800_000),
        ("1h30m", 5_400_000),
        ("1m30s", 90_000),
        ("2s500ms", 2_500),
        ("1 hour 30 minutes", 5_400_000),
        ("30 minutes", 1_800_000),
        ("1 minute", 60_000),
        ("1 hour", 3_600_000),
        ("2 hours", 7_200_000),
        ("2 seconds", 2_000),
        ("1 second", 1_000),
        ("100 milliseconds", 100),
        ("3 days", 259_200_000),
        ("10 mins", 600_000),
        ("5 secs", 5_000),
        ("30 ms", 30),
        ("PT30M", 1_800_000),
        ("PT1H30M", 5_400_000),
        ("PT2H", 7_200_000),
        ("PT5M", 300_000),
        ("PT45S", 45_000),
        ("PT0.5S", 500),
        ("P1D", 86_400_000),
        ("P1DT12H", 129_600_000),
        ("P2W", 1_209_600_000),
        ("pt30m", 1_800_000),
        ("30S", 30_000),
        ("1H30M", 5_400_000),
        ("1.5s", 1_500),
    ],
)
def test_every_duration_form(duration: str, ms: int) -> None:
    assert parse_duration(duration) == ms
    assert window_of(f"[RANGE {duration}]") == RangeWindow(ms)


@st.composite
def durations(draw) -> tuple[int, int, int, int, int]:
    """(days, hours, minutes, seconds, milliseconds), not all zero."""
    parts = draw(
        st.tuples(
            st.integers(0, 3), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999)
        ).filter(any)
    )
    return parts


def compact(parts: tuple[int, ...]) -> str:
    return "".join(f"{n}{unit}" for n, unit in zip(parts, ("d", "h", "m", "s", "ms"), strict=True) if n)


def words(parts: tuple[int, ...]) -> str:
    names = ("day", "hour", "minute", "second", "millisecond")
    return " ".join(f"{n} {name}{'s' if n != 1 else ''}" for n, name in zip(parts, names, strict=True) if n)


def iso(parts: tuple[int, ...]) -> str:
    days, hours, minutes, seconds, millis = parts
    text = "P" + (f"{days}D" if days else "")
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds or millis:
        clock += f"{seconds}.{millis:03d}S" if millis else f"{seconds}S"
    return text + ("T" + clock if clock else "")


def milliseconds(parts: tuple[int, ...]) -> int:
    days, hours, minutes, seconds, millis = parts
    return (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000 + millis


@settings(max_examples=150, deadline=None)
@given(durations(), st.sampled_from([str.lower, str.upper, lambda s: s]))
def test_duration_forms_agree(parts: tuple[int, ...], case) -> None:
    expected = milliseconds(parts)
    for written in (compact(parts), words(parts), iso(parts), f"{expected}ms"):
        assert window_of(f"[RANGE {case(written)}]") == RangeWindow(expected), written


# ------------------------------------------------------------------------------------ STREAM


def test_both_stream_keyword_orders_give_the_same_pattern() -> None:
    cqels = only_stream(f"SELECT * WHERE {{ STREAM <{EX}s> [RANGE 3s] {{ ?s <{EX}p> ?o }} }}")
    iswc = only_stream(f"SELECT * WHERE {{ STREAM [RANGE 3s] <{EX}s> {{ ?s <{EX}p> ?o }} }}")
    assert cqels == iswc
    assert cqels.stream == IRI(EX + "s")
    assert cqels.window == RangeWindow(3000)
    assert cqels.pattern == ast.GroupGraphPattern(
        (ast.TriplesBlock((ast.TriplePattern(Var("s"), IRI(EX + "p"), Var("o")),)),)
    )


def test_stream_named_by_a_variable_or_a_prefixed_name() -> None:
    by_var = only_stream("SELECT * WHERE { STREAM ?stream [NOW] { ?s ?p ?o } }")
    assert by_var.stream == Var("stream")
    by_name = only_stream(f"PREFIX s: <{EX}streams/> SELECT * WHERE {{ stream s:rfid [range 3s] {{ ?s ?p ?o }} }}")
    assert by_name.stream == IRI(EX + "streams/rfid")


def test_full_triples_syntax_inside_stream_blocks() -> None:
    sugared = only_stream(
        f"""PREFIX : <{EX}>
        SELECT * WHERE {{ STREAM <{EX}s> [NOW] {{
            ?s :p ?o1 , ?o2 ; a :C ; :q [ :r ?x ; :t 1 ] ; :list ( ?a ?b ) .
        }} }}"""
    )
    list_head, list_rest = BlankNode("b1"), BlankNode("b2")
    node = BlankNode("b0")
    (block,) = sugared.pattern.elements
    assert block.triples == (
        ast.TriplePattern(Var("s"), IRI(EX + "p"), Var("o1")),
        ast.TriplePattern(Var("s"), IRI(EX + "p"), Var("o2")),
        ast.TriplePattern(Var("s"), IRI(RDF_TYPE), IRI(EX + "C")),
        ast.TriplePattern(Var("s"), IRI(EX + "q"), node),
        ast.TriplePattern(node, IRI(EX + "r"), Var("x")),
        ast.TriplePattern(node, IRI(EX + "t"), Literal("1", XSD_INTEGER)),
        ast.TriplePattern(Var("s"), IRI(EX + "list"), list_head),
        ast.TriplePattern(list_head, IRI(RDF_FIRST), Var("a")),
        ast.TriplePattern(list_head, IRI(RDF_REST), list_rest),
        ast.TriplePattern(list_rest, IRI(RDF_FIRST), Var("b")),
        ast.TriplePattern(list_rest, IRI(RDF_REST), IRI(RDF_NIL)),
    )
    assert all(t.generated for t in walk(sugared) if isinstance(t, BlankNode))


def test_stream_blocks_sit_among_other_group_elements() -> None:
    query = parse_query(
        f"""SELECT * WHERE {{
          ?a <{EX}p> ?b .
          STREAM <{EX}s> [RANGE 1m] {{ ?b <{EX}q> ?c }}
          OPTIONAL {{ STREAM <{EX}t> [NOW] {{ ?c <{EX}r> ?d }} }}
          FILTER NOT EXISTS {{ STREAM <{EX}u> [ALL] {{ ?d <{EX}s> ?e }} }}
        }}"""
    )
    kinds = [type(e).__name__ for e in query.form.where.elements]
    assert kinds == ["TriplesBlock", "StreamPattern", "OptionalPattern", "Filter"]
    assert len(stream_patterns(query)) == 3
    assert query.is_continuous


# ------------------------------------------------------------------------------------ datasets, REGISTER, MEDIAN


def test_rspql_named_windows_and_window_patterns() -> None:
    query = parse_query(
        f"""PREFIX : <{EX}>
        SELECT ?taxi (COUNT(?ride) AS ?n)
        FROM NAMED WINDOW :w1 ON :pickups [RANGE PT1H STEP PT5M]
        FROM NAMED WINDOW :w2 ON STREAM :fares [COUNT 1000]
        FROM <{EX}static>
        WHERE {{ WINDOW :w1 {{ ?ride :taxi ?taxi }} WINDOW ?w {{ ?ride :fare ?f }} }}
        GROUP BY ?taxi"""
    )
    assert query.form.datasets == (
        ast.NamedWindow(IRI(EX + "w1"), IRI(EX + "pickups"), RangeWindow(3_600_000, 300_000)),
        ast.NamedWindow(IRI(EX + "w2"), IRI(EX + "fares"), TriplesWindow(1000)),
        ast.DatasetClause(IRI(EX + "static")),
    )
    first, second = query.form.where.elements
    assert isinstance(first, ast.WindowPattern) and first.name == IRI(EX + "w1")
    assert first.pattern.elements == (
        ast.TriplesBlock((ast.TriplePattern(Var("ride"), IRI(EX + "taxi"), Var("taxi")),)),
    )
    assert isinstance(second, ast.WindowPattern) and second.name == Var("w")


@pytest.mark.parametrize(
    ("window", "config"),
    [
        ("[RANGE 30s]", RangeWindow(30_000)),
        ("[RANGE 30s STEP 5s]", RangeWindow(30_000, 5_000)),
        ("[RANGE 1m SLIDE 1m]", RangeWindow(60_000, 60_000)),
        ("[NOW]", NowWindow()),
        ("[ALL]", AllWindow()),
        ("[TRIPLES 10]", TriplesWindow(10)),
    ],
)
def test_from_stream_datasets(window: str, config: object) -> None:
    query = parse_query(f"SELECT * FROM STREAM <{EX}s> {window} FROM NAMED <{EX}g> WHERE {{ ?s ?p ?o }}")
    assert query.form.datasets == (
        ast.StreamDataset(IRI(EX + "s"), config),
        ast.DatasetClause(IRI(EX + "g"), named=True),
    )
    assert query.is_continuous


@pytest.mark.parametrize(
    ("text", "register"),
    [
        (f"REGISTER ISTREAM <{EX}out> AS SELECT * WHERE {{ ?s ?p ?o }}", ast.Register("ISTREAM", IRI(EX + "out"))),
        (f"REGISTER RSTREAM <{EX}out> AS SELECT * WHERE {{ ?s ?p ?o }}", ast.Register("RSTREAM", IRI(EX + "out"))),
        (f"REGISTER DSTREAM <{EX}out> AS ASK {{ ?s ?p ?o }}", ast.Register("DSTREAM", IRI(EX + "out"))),
        ("REGISTER QUERY myQuery AS SELECT * WHERE { ?s ?p ?o }", ast.Register("QUERY", "myQuery")),
        ("register query my-query as select * where { ?s ?p ?o }", ast.Register("QUERY", "my-query")),
        (
            f"PREFIX : <{EX}> REGISTER RSTREAM :out AS CONSTRUCT {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}",
            ast.Register("RSTREAM", IRI(EX + "out")),
        ),
        (
            f"REGISTER QUERY q AS PREFIX : <{EX}> SELECT ?s WHERE {{ ?s :p ?o }}",
            ast.Register("QUERY", "q"),
        ),
    ],
)
def test_register_prefix(text: str, register: ast.Register) -> None:
    query = parse_query(text)
    assert query.register == register
    assert query.register.span.start == text.upper().index("REGISTER")


def test_prologue_after_register_is_kept() -> None:
    query = parse_query(f"PREFIX a: <{EX}a/> REGISTER QUERY q AS PREFIX b: <{EX}b/> SELECT * WHERE {{ ?s a:p b:o }}")
    assert query.prologue.prefixes == (("a", EX + "a/"), ("b", EX + "b/"))
    (triple,) = query.form.where.elements[0].triples
    assert triple.object == IRI(EX + "b/o")


@pytest.mark.parametrize(
    ("call", "aggregate"),
    [
        ("MEDIAN(?x)", ast.Aggregate("MEDIAN", Var("x"))),
        ("median(DISTINCT ?x)", ast.Aggregate("MEDIAN", Var("x"), distinct=True)),
        ("MEDIAN(?x + ?y)", ast.Aggregate("MEDIAN", ast.BinaryOp("+", Var("x"), Var("y")))),
    ],
)
def test_median_aggregate(call: str, aggregate: ast.Aggregate) -> None:
    query = parse_query(f"SELECT ({call} AS ?m) WHERE {{ ?s ?p ?x , ?y }}")
    (projection,) = query.form.projection
    assert projection.expr == aggregate


# ------------------------------------------------------------------------------------ examples, one-shot queries


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_every_example_query_parses(path: Path) -> None:
    query = parse_query(path.read_text(encoding="utf-8"))
    assert query.is_continuous
    with pytest.raises(QuerySyntaxError, match="only allowed in continuous queries"):
        parse_query(path.read_text(encoding="utf-8"), allow_streams=False)


def test_there_are_example_queries() -> None:
    assert len(EXAMPLES) >= 9


def test_one_shot_queries_parse_without_streams() -> None:
    query = parse_query(f"SELECT * WHERE {{ ?s <{EX}p> ?o }}", allow_streams=False)
    assert not query.is_continuous


@pytest.mark.parametrize(
    ("text", "keyword"),
    [
        (f"SELECT * WHERE {{ STREAM <{EX}s> [NOW] {{ ?s ?p ?o }} }}", "STREAM"),
        (f"SELECT * WHERE {{ WINDOW <{EX}w> {{ ?s ?p ?o }} }}", "WINDOW"),
        (f"SELECT * FROM STREAM <{EX}s> [NOW] WHERE {{ ?s ?p ?o }}", "FROM STREAM"),
        (f"SELECT * FROM NAMED WINDOW <{EX}w> ON <{EX}s> [NOW] WHERE {{ ?s ?p ?o }}", "FROM NAMED WINDOW"),
        (f"REGISTER RSTREAM <{EX}o> AS SELECT * WHERE {{ ?s ?p ?o }}", "REGISTER"),
    ],
)
def test_stream_constructs_in_one_shot_queries_name_their_keyword(text: str, keyword: str) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        parse_query(text, allow_streams=False)
    error = raised.value
    assert error.message.startswith(f"{keyword} is only allowed in continuous queries")
    spanned = text[error.span.start : error.span.end]
    assert spanned.split()[-1] == keyword.split()[-1]
    assert spanned.split()[0] == keyword.split()[0] or keyword.startswith("FROM")


# ------------------------------------------------------------------------------------ spans


def test_spans_of_terms_and_patterns() -> None:
    text = (
        "PREFIX ex: <http://example.org/>\n"
        "SELECT ?name WHERE {\n"
        "  STREAM ex:rfid [RANGE 30s] { ?person ex:detectedAt ?room }\n"
        '  ?person ex:name "Alice"@en .\n'
        "  FILTER (?room != ex:hall)\n"
        "}\n"
    )
    query = parse_query(text)

    def source(node) -> str:
        return text[node.span.start : node.span.end]

    stream, block, filter_ = query.form.where.elements
    assert source(stream) == "STREAM ex:rfid [RANGE 30s] { ?person ex:detectedAt ?room }"
    assert (stream.span.line, stream.span.column) == (3, 3)
    assert source(stream.stream) == "ex:rfid"
    (in_stream,) = stream.pattern.elements[0].triples
    assert source(in_stream) == "?person ex:detectedAt ?room"
    assert source(in_stream.predicate) == "ex:detectedAt"
    (static,) = block.triples
    assert source(static.object) == '"Alice"@en'
    assert (static.object.span.line, static.object.span.column) == (4, 19)
    assert (static.object.span.end_line, static.object.span.end_column) == (4, 29)
    assert source(filter_) == "FILTER (?room != ex:hall)"
    assert source(filter_.constraint) == "?room != ex:hall"
    assert source(filter_.constraint.left) == "?room"
    assert source(query.form.where) == text[text.index("{") : text.rindex("}") + 1]
    (projected,) = query.form.projection
    assert source(projected) == "?name"


def test_every_node_has_a_span() -> None:
    text = (EXAMPLES[0].parent / "debs-q2-profitable-areas.rq").read_text(encoding="utf-8")
    query = parse_query(text)
    missing = [node for node in walk(query) if isinstance(node, ast.Node) and node.span is None]
    assert not [n for n in missing if not isinstance(n, ast.Modifiers | ast.Prologue)], missing


def test_spans_point_into_the_original_text_past_codepoint_escapes() -> None:
    text = 'SELECT * WHERE { ?s <http://ex/\\u0070> "\\u00e9t\\u00e9" , ?later }'
    query = parse_query(text)
    first, second = query.form.where.elements[0].triples
    assert first.predicate == IRI("http://ex/p")
    assert first.object == Literal("été")
    assert text[first.predicate.span.start : first.predicate.span.end] == "<http://ex/\\u0070>"
    assert text[first.object.span.start : first.object.span.end] == '"\\u00e9t\\u00e9"'
    assert text[second.object.span.start : second.object.span.end] == "?later"


def test_a_codepoint_escape_producing_a_backslash_starts_no_second_escape() -> None:
    with pytest.raises(QuerySyntaxError):
        parse_query("SELECT * WHERE { ?s ?p \\u005cu0031 }")


# ------------------------------------------------------------------------------------ IRIs


@pytest.mark.parametrize(
    ("reference", "resolved"),
    [  # RFC 3986 §5.4.1 and §5.4.2, base http://a/b/c/d;p?q
        ("g:h", "g:h"),
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"),
        ("g#s", "http://a/b/c/g#s"),
        (";x", "http://a/b/c/;x"),
        ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"),
        ("g/./h", "http://a/b/c/g/h"),
        ("g/../h", "http://a/b/c/h"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g#s/../x", "http://a/b/c/g#s/../x"),
        ("http:g", "http:g"),
    ],
)
def test_rfc3986_reference_resolution(reference: str, resolved: str) -> None:
    assert resolve_iri("http://a/b/c/d;p?q", reference) == resolved


def test_relative_iris_resolve_against_the_base_argument_then_base_declarations() -> None:
    text = "SELECT * WHERE { <s> <p> <../o> }"
    (triple,) = parse_query(text, base_iri="http://ex.org/a/b").form.where.elements[0].triples
    assert triple == ast.TriplePattern(IRI("http://ex.org/a/s"), IRI("http://ex.org/a/p"), IRI("http://ex.org/o"))
    declared = parse_query("BASE <http://other.org/x/> PREFIX p: <ns#> SELECT * WHERE { <s> p:q ?o }", base_iri="http://ex.org/")
    (triple,) = declared.form.where.elements[0].triples
    assert triple.subject == IRI("http://other.org/x/s")
    assert triple.predicate == IRI("http://other.org/x/ns#q")
    assert declared.prologue.base == "http://other.org/x/"
    assert declared.prologue.prefixes == (("p", "http://other.org/x/ns#"),)


def test_relative_iris_stay_relative_without_a_base() -> None:
    (triple,) = parse_query("SELECT * WHERE { <s> <../p> <#o> }").form.where.elements[0].triples
    assert triple == ast.TriplePattern(IRI("s"), IRI("../p"), IRI("#o"))


def test_base_resolves_against_the_previous_base() -> None:
    query = parse_query("BASE <http://ex.org/a/> BASE <b/> SELECT * WHERE { <c> ?p ?o }")
    assert query.form.where.elements[0].triples[0].subject == IRI("http://ex.org/a/b/c")


def test_prefixed_names_with_escapes_and_empty_local_parts() -> None:
    (first, second) = parse_query(
        f"PREFIX : <{EX}> PREFIX e: <{EX}e/> SELECT * WHERE {{ : :a\\.b%20c e: . :x e:1\\-2 ?o }}"
    ).form.where.elements[0].triples
    assert first == ast.TriplePattern(IRI(EX), IRI(EX + "a.b%20c"), IRI(EX + "e/"))
    assert second.predicate == IRI(EX + "e/1-2")


# ------------------------------------------------------------------------------------ terms and expressions


def test_literals() -> None:
    query = parse_query(
        "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT * WHERE { ?s ?p 1 , -2.5 , +3e2 , .5 , true , FALSE ,"
        ' "a\\tb\\n\\"q\\"" , \'\'\'it\'s \'quoted\' \'\'\' , "x"@EN-gb , "y"^^xsd:string , "1"^^xsd:int , """two\nlines""" }'
    )
    objects = [t.object for t in query.form.where.elements[0].triples]
    assert objects == [
        Literal("1", XSD_INTEGER),
        Literal("-2.5", XSD_DECIMAL),
        Literal("+3e2", XSD_DOUBLE),
        Literal(".5", XSD_DECIMAL),
        Literal("true", XSD + "boolean"),
        Literal("false", XSD + "boolean"),
        Literal('a\tb\n"q"'),
        Literal("it's 'quoted' "),
        Literal("x", language="en-gb"),
        Literal("y"),
        Literal("1", XSD + "int"),
        Literal("two\nlines"),
    ]


def test_signed_numbers_after_an_operand_are_operators() -> None:
    (projection,) = parse_query("SELECT (?x -1*2 AS ?y) WHERE {}").form.projection
    assert projection.expr == ast.BinaryOp(
        "-", Var("x"), ast.BinaryOp("*", Literal("1", XSD_INTEGER), Literal("2", XSD_INTEGER))
    )


def test_expression_precedence_and_calls() -> None:
    (filter_,) = parse_query(
        "SELECT * WHERE { FILTER (!bound(?a) || ?b + 2 * ?c >= 3 && ?d NOT IN (1, 2) && regex(str(?e), 'x', 'i')"
        " && <http://f>(?g, ?h) && COALESCE() = EXISTS { ?x ?y ?z }) }"
    ).form.where.elements
    expr = filter_.constraint
    assert expr.op == "||"
    assert expr.left == ast.UnaryOp("!", ast.BuiltinCall("BOUND", (Var("a"),)))
    conjunction = expr.right
    assert conjunction.op == "&&"
    comparison = conjunction.left.left.left.left
    assert comparison == ast.BinaryOp(
        ">=",
        ast.BinaryOp("+", Var("b"), ast.BinaryOp("*", Literal("2", XSD_INTEGER), Var("c"))),
        Literal("3", XSD_INTEGER),
    )
    assert conjunction.left.left.left.right == ast.In(
        Var("d"), (Literal("1", XSD_INTEGER), Literal("2", XSD_INTEGER)), negated=True
    )
    assert conjunction.left.left.right == ast.BuiltinCall(
        "REGEX", (ast.BuiltinCall("STR", (Var("e"),)), Literal("x"), Literal("i"))
    )
    assert conjunction.left.right == ast.FunctionCall(IRI("http://f"), (Var("g"), Var("h")))
    assert conjunction.right.left == ast.BuiltinCall("COALESCE", ())
    assert isinstance(conjunction.right.right, ast.Exists)


def test_aggregates() -> None:
    projection = parse_query(
        "SELECT (COUNT(*) AS ?a) (COUNT(DISTINCT ?x) AS ?b) (GROUP_CONCAT(?x ; SEPARATOR = ', ') AS ?c) "
        "(SUM(?x) AS ?d) WHERE { ?s ?p ?x } GROUP BY ?s"
    ).form.projection
    assert [p.expr for p in projection] == [
        ast.Aggregate("COUNT", None),
        ast.Aggregate("COUNT", Var("x"), distinct=True),
        ast.Aggregate("GROUP_CONCAT", Var("x"), separator=", "),
        ast.Aggregate("SUM", Var("x")),
    ]


def test_paths() -> None:
    (plain, sequence, negated) = triples(
        "PREFIX : <http://ex/> SELECT * WHERE { ?a :p ?b . ?a ^:p/:q*|(:r)+ ?b . ?a !(:s|^:t|a) ?b }"
    )
    assert plain.predicate == IRI("http://ex/p")
    assert sequence.predicate == ast.PathAlternative(
        (
            ast.PathSequence((ast.PathInverse(IRI("http://ex/p")), ast.PathMod(IRI("http://ex/q"), "*"))),
            ast.PathMod(IRI("http://ex/r"), "+"),
        )
    )
    assert negated.predicate == ast.PathNegatedSet(
        (IRI("http://ex/s"), IRI(RDF_TYPE)), (IRI("http://ex/t"),)
    )


def test_generated_blank_nodes_avoid_written_labels_and_are_deterministic() -> None:
    text = "SELECT * WHERE { _:b0 <http://p> [ <http://q> _:b2 ] . [] <http://r> ( 1 ) }"
    first = triples(text)
    generated = {t.label for node in first for t in (node.subject, node.object) if isinstance(t, BlankNode) and t.generated}
    assert generated and not generated & {"b0", "b2"}
    assert triples(text) == first
    assert [t.subject.label for t in triples(text) if isinstance(t.subject, BlankNode)] == [
        s.subject.label for s in first if isinstance(s.subject, BlankNode)
    ]


def test_values_and_solution_modifiers() -> None:
    query = parse_query(
        "SELECT ?x WHERE { VALUES (?x ?y) { (1 UNDEF) (<http://a> 'b') } } "
        "GROUP BY ?x (STR(?y) AS ?z) HAVING (COUNT(?y) > 1) ORDER BY DESC(?x) ?y LIMIT 5 OFFSET 2 "
        "VALUES ?x { 1 2 }"
    )
    (data,) = query.form.where.elements
    assert data == ast.InlineData((Var("x"), Var("y")), ((Literal("1", XSD_INTEGER), None), (IRI("http://a"), Literal("b"))))
    modifiers = query.form.modifiers
    assert modifiers.group_by == (
        ast.GroupCondition(Var("x")),
        ast.GroupCondition(ast.BuiltinCall("STR", (Var("y"),)), Var("z")),
    )
    assert modifiers.order_by == (ast.OrderCondition(Var("x"), descending=True), ast.OrderCondition(Var("y")))
    assert (modifiers.limit, modifiers.offset) == (5, 2)
    assert query.form.values == ast.InlineData((Var("x"),), ((Literal("1", XSD_INTEGER),), (Literal("2", XSD_INTEGER),)))


# ------------------------------------------------------------------------------------ updates


def test_update_operations_keep_the_prologue_in_force() -> None:
    update = parse_update(
        "PREFIX : <http://a/> INSERT DATA { :s :p :o } ; PREFIX : <http://b/> "
        "DELETE { ?s :p ?o } INSERT { GRAPH :g { ?s :q ?o } } USING NAMED :n WHERE { ?s :p ?o } ; "
        "LOAD SILENT <http://src> INTO GRAPH :g ; CLEAR DEFAULT ; MOVE :g TO DEFAULT"
    )
    insert, modify, load, clear, move = update.operations
    assert insert == ast.InsertData((ast.QuadPattern(IRI("http://a/s"), IRI("http://a/p"), IRI("http://a/o")),))
    assert modify.insert == (ast.QuadPattern(Var("s"), IRI("http://b/q"), Var("o"), IRI("http://b/g")),)
    assert modify.using == (ast.DatasetClause(IRI("http://b/n"), named=True),)
    assert load == ast.Load(IRI("http://src"), IRI("http://b/g"), silent=True)
    assert clear == ast.Clear(ast.GraphTarget(keyword="DEFAULT"))
    assert move == ast.GraphTransfer("MOVE", ast.GraphTarget(IRI("http://b/g")), ast.GraphTarget(keyword="DEFAULT"))
    assert [dict(p.prefixes)[""] for p in update.prologues] == ["http://a/"] + ["http://b/"] * 4


# ------------------------------------------------------------------------------------ robustness

_FRAGMENTS = [
    "SELECT", "*", "WHERE", "{", "}", "(", ")", "[", "]", "?x", "<http://a>", "ex:p", "PREFIX ex: <http://e/>",
    ".", ";", ",", "STREAM", "[RANGE 30s]", "RANGE", "30", "s", "FILTER", "'str", '"', "\\u0041", "a", "|", "/",
    "OPTIONAL", "UNION", "GRAPH", "INSERT", "DATA", "1.5", "+", "-", "COUNT", "AS", "REGISTER", "NOW", "#c\n",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=25), st.booleans())
def test_only_query_syntax_errors_escape(fragments: list[str], update: bool) -> None:
    text = " ".join(fragments)
    try:
        (parse_update if update else parse_query)(text)
    except QuerySyntaxError as error:
        assert type(error) is QuerySyntaxError
        assert 1 <= error.span.line <= text.count("\n") + 1


# ------------------------------------------------------------------------------------ the grammar files


def test_the_sparql_grammar_numbers_every_w3c_rule_and_stands_alone() -> None:
    import re
    from importlib.resources import files

    from lark import Lark
    from lark.exceptions import UnexpectedInput

    text = files("cqels_endpoint.grammar").joinpath("sparql11.lark").read_text(encoding="utf-8")
    comments = "\n".join(line for line in text.splitlines() if line.startswith("//"))
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", comments)}
    assert numbers == set(range(1, 174))
    base = Lark.open_from_package(
        "cqels_endpoint.grammar", "sparql11.lark", parser="lalr", start=["query_unit", "update_unit"]
    )
    base.parse("SELECT * WHERE { ?s ?p ?o }", start="query_unit")
    base.parse("INSERT DATA { <a> <b> <c> }", start="update_unit")
    with pytest.raises(UnexpectedInput):
        base.parse("SELECT * WHERE { STREAM <s> [NOW] { ?s ?p ?o } }", start="query_unit")


def test_the_cqels_layer_extends_rather_than_copies() -> None:
    from importlib.resources import files

    text = files("cqels_endpoint.grammar").joinpath("cqels.lark").read_text(encoding="utf-8")
    assert "%import .sparql11" in text and "%extend" in text and "%override" in text
    assert "select_clause:" not in text and "IRIREF:" not in text


def test_deeply_nested_queries_are_syntax_errors_not_crashes() -> None:
    text = "SELECT * WHERE " + "{" * 5000 + " ?s ?p ?o " + "}" * 5000
    with pytest.raises(QuerySyntaxError, match="nested too deeply"):
        parse_query(text)


def test_the_module_examples_run() -> None:
    import doctest

    from cqels_endpoint.query import parser

    failures, tried = doctest.testmod(parser)
    assert tried and not failures
