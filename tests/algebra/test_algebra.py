"""The translation to the algebra (spec §18.2 plus streams), its variable analysis and its printer.

Golden fixtures: ``tests/fixtures/algebra/translate/*.rq`` → ``.sse`` (``UPDATE_FIXTURES=1`` rewrites).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyoxigraph as ox
import pytest
from algebra_golden import cases, check_golden
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra import to_algebra, to_sexpr
from cqels_endpoint.algebra.variables import certainly_bound, in_scope, required_by
from cqels_endpoint.errors import PlanError, QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import NowWindow, RangeWindow, TriplesWindow
from cqels_endpoint.runtime.expressions import compile_filter
from cqels_endpoint.terms import IRI, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, BlankNode, Literal, Var

EX = "http://example.org/"


def algebra(text: str) -> n.AlgebraQuery:
    return to_algebra(parse_query(text))


@pytest.mark.parametrize("query_file", cases("translate"), ids=lambda p: p.stem)
def test_translation_matches_golden_file(query_file: Path):
    check_golden(query_file, to_sexpr(algebra(query_file.read_text(encoding="utf-8"))))


# --------------------------------------------------------------------------- group patterns


def test_filters_apply_to_the_whole_group_whatever_their_position():
    before = algebra(f"SELECT * {{ FILTER (?o > 1) ?s <{EX}p> ?o }}")
    after = algebra(f"SELECT * {{ ?s <{EX}p> ?o FILTER (?o > 1) }}")
    assert before == after
    assert isinstance(before.pattern.input, n.Filter)


def test_empty_group_is_the_identity_of_join_but_not_of_left_join():
    pattern = algebra(f"SELECT * {{ {{}} ?s <{EX}p> ?o {{}} OPTIONAL {{}} }}").pattern.input
    assert pattern == n.LeftJoin(n.BGP((ast.TriplePattern(Var("s"), IRI(EX + "p"), Var("o")),)), n.EMPTY)


def test_optional_filter_becomes_the_left_join_condition_only_at_the_top_of_its_group():
    top = algebra(f"SELECT * {{ ?s <{EX}p> ?o OPTIONAL {{ ?s <{EX}q> ?z FILTER (?z > ?o) }} }}").pattern.input
    assert isinstance(top, n.LeftJoin) and len(top.exprs) == 1 and isinstance(top.right, n.BGP)
    nested = algebra(f"SELECT * {{ ?s <{EX}p> ?o OPTIONAL {{ {{ ?s <{EX}q> ?z FILTER (?z > ?o) }} }} }}").pattern.input
    assert isinstance(nested, n.LeftJoin) and nested.exprs == () and isinstance(nested.right, n.Filter)


def test_equal_aggregates_share_one_internal_variable():
    query = algebra(
        f"SELECT (COUNT(?o) AS ?n) WHERE {{ ?s <{EX}p> ?o }} GROUP BY ?s HAVING (COUNT(?o) > 1) ORDER BY COUNT(?o)"
    )
    groups = [x for x in walk(query.pattern) if isinstance(x, n.Group)]
    assert len(groups) == 1 and len(groups[0].aggregates) == 1
    ((var, aggregate),) = groups[0].aggregates
    assert var == Var(".0") and aggregate == ast.Aggregate("COUNT", Var("o"))


def test_select_star_leaves_out_internal_variables():
    query = algebra(f"SELECT * {{ ?a <{EX}p>/<{EX}q>/<{EX}r> ?b }}")
    assert query.pattern.vars == (Var("a"), Var("b"))
    assert {v.name for v in in_scope(query.pattern.input)} == {"a", "b", "?P0", "?P1"}


def test_translation_keeps_the_spans_of_the_ast():
    text = f"SELECT * {{\n  ?s <{EX}p> ?o .\n  STREAM <{EX}s> [NOW] {{ ?o <{EX}q> ?z }}\n}}"
    query = to_algebra(parse_query(text))
    bgp, stream = query.pattern.input.operands
    assert (bgp.span.line, stream.span.line) == (2, 3)
    assert text[stream.span.start : stream.span.end].startswith("STREAM")
    assert bgp.triples[0].subject.span.line == 2


def test_parses_of_the_same_query_give_equal_algebra_whatever_the_layout():
    one = algebra(f"PREFIX : <{EX}> SELECT ?s {{ ?s :p ?o ; :q [ :r ?z ] FILTER (?o) }}")
    two = algebra(f"SELECT ?s\nWHERE {{\n  ?s <{EX}p> ?o .\n  ?s <{EX}q> [ <{EX}r> ?z ] .\n  FILTER ( ?o )\n}}")
    assert one == two


# --------------------------------------------------------------------------- streams


def test_stream_block_is_one_stream_pattern_even_under_graph():
    query = algebra(f"SELECT * {{ GRAPH ?g {{ STREAM <{EX}s> [RANGE 30s SLIDE 5s] {{ ?a <{EX}p> ?b . ?b <{EX}q> ?c }} }} }}")
    graph = query.pattern.input
    assert isinstance(graph, n.Graph)
    assert graph.pattern == n.StreamPattern(
        IRI(EX + "s"),
        RangeWindow(30_000, 5_000),
        (
            ast.TriplePattern(Var("a"), IRI(EX + "p"), Var("b")),
            ast.TriplePattern(Var("b"), IRI(EX + "q"), Var("c")),
        ),
    )


def test_window_blocks_read_the_declared_windows():
    query = algebra(
        f"PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :w ON :s [COUNT 10] "
        "WHERE { WINDOW :w { ?a :p ?b OPTIONAL { ?b :q ?c } } ?a :r ?d }"
    )
    streams = [x for x in walk(query.pattern) if isinstance(x, n.StreamPattern)]
    assert [(s.stream, s.window, s.window_name, len(s.triples)) for s in streams] == [
        (IRI(EX + "s"), TriplesWindow(10), IRI(EX + "w"), 1),
        (IRI(EX + "s"), TriplesWindow(10), IRI(EX + "w"), 1),
    ]
    assert any(isinstance(x, n.BGP) for x in walk(query.pattern))  # ?a :r ?d stays static


def test_window_variable_is_a_union_over_the_declared_windows():
    query = algebra(
        f"PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :w1 ON :s1 [RANGE PT10S] FROM NAMED WINDOW :w2 ON :s2 [COUNT 5] "
        "WHERE { WINDOW ?w { ?x :p ?y } }"
    )
    union = query.pattern.input
    assert isinstance(union, n.Union)
    assert [branch.operands[1] for branch in (union.left, union.right)] == [
        n.Table((Var("w"),), ((IRI(EX + "w1"),),)),
        n.Table((Var("w"),), ((IRI(EX + "w2"),),)),
    ]


def test_from_stream_turns_default_graph_bgps_into_stream_patterns():
    query = algebra(
        f"PREFIX : <{EX}> SELECT * FROM STREAM :s [RANGE 1m STEP 10s] FROM NAMED :g "
        "WHERE { ?a :p ?b FILTER EXISTS { ?b :q ?c } GRAPH :g { ?b :r ?d } { SELECT ?a { ?a :t ?e } } }"
    )
    streams = [x for x in walk(query.pattern) if isinstance(x, n.StreamPattern)]
    assert len(streams) == 3 and {s.window for s in streams} == {RangeWindow(60_000, 10_000)}
    (graph,) = [x for x in walk(query.pattern) if isinstance(x, n.Graph)]
    assert isinstance(graph.pattern, n.BGP)


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        (
            f"PREFIX : <{EX}>\nSELECT * FROM NAMED WINDOW :w ON :s [RANGE PT1M]\nWHERE {{ WINDOW :v {{ ?s :p ?o }} }}",
            "window <http://example.org/v> is not declared",
            3,
            16,
        ),
        (
            f"PREFIX : <{EX}>\nSELECT * FROM STREAM :a [RANGE 1m] FROM STREAM :b [NOW]\nWHERE {{ ?s :p+ ?o }}",
            "the property path operator `+` (one or more) cannot be matched against the merge of several windows",
            3,
            12,
        ),
    ],
    ids=["undeclared-window", "path-over-merged-windows"],
)
def test_window_errors_point_at_the_offending_part(text, message, line, column):
    with pytest.raises(QuerySyntaxError) as caught:
        algebra(text)
    assert message in caught.value.message
    assert (caught.value.lineno, caught.value.offset) == (line, column)


def test_sequence_paths_over_a_window_are_spelled_out_as_triples():
    query = algebra(f"PREFIX : <{EX}> SELECT * FROM STREAM :a [NOW] WHERE {{ ?s :p/^:q ?o }}")
    (stream,) = [x for x in walk(query.pattern) if isinstance(x, n.StreamPattern)]
    assert stream.window == NowWindow()
    assert stream.triples == (
        ast.TriplePattern(Var("s"), IRI(EX + "p"), Var("?P0")),
        ast.TriplePattern(Var("o"), IRI(EX + "q"), Var("?P0")),
    )


def test_errors_of_a_hand_built_query_without_text_are_plan_errors():
    triple = ast.TriplePattern(Var("s"), IRI(EX + "p"), Var("o"))
    window = ast.WindowPattern(IRI(EX + "w"), ast.GroupGraphPattern((ast.TriplesBlock((triple,)),)))
    query = ast.Query(ast.SelectQuery((), ast.GroupGraphPattern((window,))))
    with pytest.raises(PlanError, match=re.escape("window <http://example.org/w> is not declared")):
        to_algebra(query)


def test_several_stream_windows_and_static_data_merge_into_the_default_graph():
    query = algebra(
        f"PREFIX : <{EX}> SELECT * FROM STREAM :a [RANGE 1m] FROM STREAM :b [NOW] FROM :g WHERE {{ ?x :p ?y }}"
    )
    triple = ast.TriplePattern(Var("x"), IRI(EX + "p"), Var("y"))
    assert query.pattern.input == n.Distinct(
        n.Union(
            n.Union(
                n.StreamPattern(IRI(EX + "a"), RangeWindow(60_000), (triple,)),
                n.StreamPattern(IRI(EX + "b"), NowWindow(), (triple,)),
            ),
            n.BGP((triple,)),
        )
    )


def test_aggregates_outside_select_having_and_order_by_are_rejected():
    where = ast.GroupGraphPattern((ast.Filter(ast.BinaryOp(">", ast.Aggregate("COUNT", None), Literal("1", XSD_INTEGER))),))
    with pytest.raises(PlanError, match="aggregate COUNT is only allowed"):
        to_algebra(ast.Query(ast.SelectQuery((), where)))


# --------------------------------------------------------------------------- variables


def test_in_scope_variables_follow_section_18_2_1():
    query = algebra(
        f"PREFIX : <{EX}> SELECT * {{ ?a :p ?b MINUS {{ ?a :q ?m }} "
        "{ SELECT ?b { ?b :r ?hidden } } BIND (1 AS ?one) GRAPH ?g { ?b :s ?c } VALUES ?v { 1 } "
        "FILTER EXISTS { ?a :t ?e } }"
    )
    assert [v.name for v in query.pattern.vars] == ["a", "b", "one", "g", "c", "v"]


def test_certainly_bound_variables():
    t = lambda s, o: ast.TriplePattern(Var(s), IRI(EX + "p"), Var(o))  # noqa: E731
    a, b, c = n.BGP((t("x", "y"),)), n.BGP((t("x", "z"),)), n.BGP((t("w", "z"),))
    assert certainly_bound(n.Join((a, c))) == {Var("x"), Var("y"), Var("w"), Var("z")}
    assert certainly_bound(n.LeftJoin(a, b)) == {Var("x"), Var("y")}
    assert certainly_bound(n.Union(a, b)) == {Var("x")}
    assert certainly_bound(n.Extend(Var("e"), Literal("1"), a)) == {Var("x"), Var("y")}
    assert certainly_bound(n.Graph(Var("g"), a)) == {Var("g"), Var("x"), Var("y")}
    assert certainly_bound(n.Table((Var("p"), Var("q")), ((IRI(EX), None), (IRI(EX), IRI(EX))))) == {Var("p")}
    assert certainly_bound(n.Project((Var("y"), Var("w")), a)) == {Var("y")}
    assert certainly_bound(n.Group(((Var("x"), Var("x")),), (), a)) == frozenset()
    assert certainly_bound(n.Service(IRI(EX), a)) == {Var("x"), Var("y")}
    assert certainly_bound(n.Service(IRI(EX), a, silent=True)) == frozenset()  # failure: one empty solution


# --------------------------------------------------------------------------- printer


def test_literals_print_in_short_form_only_when_it_reads_back_the_same():
    printed = [
        to_sexpr(literal)
        for literal in (
            Literal("42", XSD_INTEGER),
            Literal("042", XSD_INTEGER),
            Literal("4x", XSD_INTEGER),
            Literal("1.5", XSD_DECIMAL),
            Literal("1e3", XSD_DOUBLE),
            Literal("tab\there \"q\" back\\slash\n"),
            Literal("chat", language="fr"),
            Literal("x", EX + "type"),
        )
    ]
    assert printed == [
        "42",
        "042",
        '"4x"^^<http://www.w3.org/2001/XMLSchema#integer>',
        "1.5",
        "1e3",
        '"tab\\there \\"q\\" back\\\\slash\\n"',
        '"chat"@fr',
        '"x"^^<http://example.org/type>',
    ]


def test_iris_are_abbreviated_with_the_longest_prefix_when_the_local_name_is_plain():
    triple = ast.TriplePattern(IRI(EX + "a/b"), IRI(EX + "sub/p"), IRI(EX + "odd name"))
    printed = to_sexpr(n.BGP((triple, ast.TriplePattern(BlankNode("b0"), IRI(EX), Var("x")))), {"ex": EX, "s": EX + "sub/"})
    assert printed == (
        "(bgp\n"
        "  (triple <http://example.org/a/b> s:p <http://example.org/odd name>)\n"
        "  (triple _:b0 ex: ?x))"
    )


def test_exists_inside_an_expression_breaks_the_line_around_its_pattern():
    bgp = n.BGP((ast.TriplePattern(Var("s"), IRI(EX + "p"), Var("o")),))
    printed = to_sexpr(n.Filter((n.Exists(bgp, negated=True),), bgp), {"": EX})
    assert printed == "(filter\n  (notexists\n    (bgp (triple ?s :p ?o)))\n  (bgp (triple ?s :p ?o)))"


_FILTER_VARS = ("a", "b", "c")
_filter_leaves = st.sampled_from([Var(name) for name in _FILTER_VARS] + [Literal("1", XSD_INTEGER)])
_filter_expressions = st.recursive(
    _filter_leaves,
    lambda inner: st.one_of(
        st.builds(ast.BinaryOp, st.sampled_from(["||", "&&", "=", "<", "+", "*"]), inner, inner),
        st.builds(ast.UnaryOp, st.sampled_from(["!", "-"]), inner),
        st.builds(ast.In, inner, st.tuples(inner, inner), st.booleans()),
        st.builds(lambda args: ast.BuiltinCall("COALESCE", args), st.tuples(inner, inner)),
        st.builds(lambda c, x, y: ast.BuiltinCall("IF", (c, x, y)), inner, inner, inner),
        st.builds(lambda x: ast.BuiltinCall("ABS", (x,)), inner),
        st.builds(lambda: ast.BuiltinCall("BOUND", (Var("a"),))),
    ),
    max_leaves=8,
)


@given(
    _filter_expressions,
    st.fixed_dictionaries({name: st.sampled_from([None, None, -1, 0, 1, 2]) for name in _FILTER_VARS}),
)
@example(ast.BinaryOp("||", Var("a"), Literal("1", XSD_INTEGER)), {"a": None, "b": None, "c": None})
@settings(max_examples=400, deadline=None)
def test_a_passing_filter_binds_the_variables_it_requires(expr, values):
    """``required_by`` against the expression evaluator: whenever the filter holds on a mapping,
    every variable it claims to require is bound in that mapping."""
    row = {name: ox.Literal(str(v), datatype=ox.NamedNode(XSD_INTEGER)) for name, v in values.items() if v is not None}
    if compile_filter((expr,))(row):
        assert {v.name for v in required_by(expr)} <= row.keys()


def test_filters_make_the_variables_they_require_certain():
    t = ast.TriplePattern(Var("x"), IRI(EX + "p"), Var("y"))
    grouped = n.Group(((Var("k"), Var("y")),), (), n.BGP((t,)))
    positive = ast.BinaryOp(">", Var("k"), Literal("0", XSD_INTEGER))
    assert certainly_bound(n.Filter((positive,), grouped)) == {Var("k")}
    either = ast.BinaryOp("||", positive, ast.BuiltinCall("BOUND", (Var("z"),)))
    assert certainly_bound(n.Filter((either,), grouped)) == frozenset()
