"""The static rules of ``cqels_endpoint.query.checks``: one case per rule, each with a valid twin.

In a bad query the offending text is marked ``«…»``; the markers are removed before parsing and the
error's span must cover exactly the marked text.
"""

from __future__ import annotations

import re

import pytest
from w3c import SPARQL10, SPARQL11
from w3c import select_tests as w3c_tests_of_type

from cqels_endpoint import parse_query, parse_update
from cqels_endpoint.errors import QuerySyntaxError, Span
from cqels_endpoint.query import ast
from cqels_endpoint.query.checks import check_query, check_update, in_scope_variables
from cqels_endpoint.terms import IRI, BlankNode, Literal, Var


def unmark(marked: str) -> tuple[str, int, int]:
    """The text without its ``«…»`` markers and the offsets of the marked region."""
    start = marked.index("«")
    end = marked.index("»") - 1
    return marked.replace("«", "").replace("»", ""), start, end


def assert_error_at(parse, marked: str, message: str) -> QuerySyntaxError:
    text, start, end = unmark(marked)
    with pytest.raises(QuerySyntaxError) as caught:
        parse(text)
    error = caught.value
    assert message in error.message
    assert (error.span.start, error.span.end) == (start, end), (
        f"error at {text[error.span.start:error.span.end]!r}, expected {text[start:end]!r}"
    )
    expected = Span.at(text, start, end)
    assert (error.lineno, error.offset) == (expected.line, expected.column)
    return error


# (id, bad query with the culprit marked, message fragment, valid twin)
QUERY_RULES = [
    (
        "select-star-with-group-by",
        "SELECT «*» { ?s ?p ?o } GROUP BY ?s",
        "SELECT * cannot be used with GROUP BY",
        "SELECT ?s { ?s ?p ?o } GROUP BY ?s",
    ),
    (
        "select-star-with-aggregate-in-having",
        "SELECT DISTINCT\n  «*» { ?s ?p ?o } HAVING (COUNT(?s) > 1)",
        "SELECT * cannot be used with aggregates",
        "SELECT DISTINCT\n  (COUNT(?s) AS ?n) { ?s ?p ?o } HAVING (COUNT(?s) > 1)",
    ),
    (
        "projected-variable-not-grouped",
        "SELECT ?s «?o» { ?s ?p ?o } GROUP BY ?s",
        "?o is used in SELECT but is neither in GROUP BY nor inside an aggregate",
        "SELECT ?s (SAMPLE(?o) AS ?one) { ?s ?p ?o } GROUP BY ?s",
    ),
    (
        "projected-variable-with-implicit-group",
        "SELECT «?p» (COUNT(?o) AS ?c)\nWHERE { ?s ?p ?o }",
        "?p is used in SELECT of an aggregate query",
        "SELECT (COUNT(?o) AS ?c)\nWHERE { ?s ?p ?o }",
    ),
    (
        "projection-expression-reads-ungrouped-variable",
        "SELECT ((«?a» + ?b) AS ?c) { ?s <p> ?a ; <q> ?b } GROUP BY (?a + ?b)",
        "?a is used in SELECT but is neither in GROUP BY nor inside an aggregate",
        "SELECT ((?a + ?b) AS ?c) { ?s <p> ?a ; <q> ?b } GROUP BY ?a ?b",
    ),
    (
        "group-by-alias-hides-the-expression-variable",
        "SELECT «?s» (COUNT(*) AS ?n) { ?s ?p ?o } GROUP BY (STR(?s) AS ?k)",
        "?s is used in SELECT but is neither in GROUP BY",
        "SELECT ?k (COUNT(*) AS ?n) { ?s ?p ?o } GROUP BY (STR(?s) AS ?k)",
    ),
    (
        "alias-used-before-it-is-assigned",
        "SELECT ((«?n» * 2) AS ?m) (COUNT(*) AS ?n) { ?s ?p ?o }",
        "?n is used in SELECT of an aggregate query",
        "SELECT (COUNT(*) AS ?n) ((?n * 2) AS ?m) { ?s ?p ?o }",
    ),
    (
        "variable-assigned-twice-in-select",
        "SELECT (1 AS ?x) (2 AS «?x») {}",
        "?x is assigned twice in SELECT",
        "SELECT (1 AS ?x) (2 AS ?y) {}",
    ),
    (
        "projected-variable-then-assigned",
        "SELECT ?x\n  (1 AS «?x») {}",
        "?x is assigned twice in SELECT",
        "SELECT ?x\n  (1 AS ?y) {}",
    ),
    (
        "select-alias-in-scope-in-where",
        "SELECT (?o AS «?s») { ?s ?p ?o }",
        "?s is already in scope in WHERE",
        "SELECT (?o AS ?t) { ?s ?p ?o }",
    ),
    (
        "select-alias-projected-by-sub-select",
        "SELECT (1 AS «?X») { SELECT (2 AS ?X) {} }",
        "?X is already in scope in WHERE",
        "SELECT (1 AS ?Y) { SELECT (2 AS ?X) {} }",
    ),
    (
        "select-alias-bound-by-trailing-values",
        "SELECT (1 AS «?v») {} VALUES ?v { 2 }",
        "?v is already in scope in WHERE",
        "SELECT (1 AS ?w) {} VALUES ?v { 2 }",
    ),
    (
        "select-alias-assigned-in-group-by",
        "SELECT (COUNT(*) AS «?k») { ?s ?p ?o } GROUP BY (STR(?s) AS ?k)",
        "?k is already assigned in GROUP BY",
        "SELECT ?k (COUNT(*) AS ?n) { ?s ?p ?o } GROUP BY (STR(?s) AS ?k)",
    ),
    (
        "bind-variable-in-scope-in-group",
        "SELECT * {\n  ?s ?p ?o .\n  BIND (1 AS «?o»)\n}",
        "BIND (… AS ?o): ?o is already in scope in this group",
        "SELECT * {\n  ?s ?p ?o .\n  BIND (1 AS ?x)\n}",
    ),
    (
        "bind-variable-in-scope-through-union",
        "SELECT * { { ?s ?p ?y } UNION { ?s ?p ?z } BIND (1 AS «?z») }",
        "?z is already in scope in this group",
        "SELECT * { { ?s ?p ?y } UNION { ?s ?p ?z } BIND (1 AS ?w) }",
    ),
    (
        "bind-variable-in-scope-through-optional",
        "SELECT * { ?s ?p ?o OPTIONAL { ?s ?q ?v } BIND (1 AS «?v») }",
        "?v is already in scope in this group",
        "SELECT * { ?s ?p ?o OPTIONAL { ?s ?q ?v } BIND (1 AS ?w) }",
    ),
    (
        "bind-variable-in-scope-through-nested-group",
        "SELECT * { { <s> <p> ?o . <s> <q> ?o1 } BIND ((1 + ?o) AS «?o1») }",
        "?o1 is already in scope in this group",
        # MINUS binds nothing outside itself, and a BIND may come before the variable's use.
        "SELECT * { { <s> <p> ?o } MINUS { <s> <q> ?o1 } BIND ((1 + ?o) AS ?o1) ?o1 <r> ?z }",
    ),
    (
        "aggregate-in-filter",
        "SELECT * { ?s ?p ?o FILTER («COUNT(?o)» > 1) }",
        "aggregate COUNT is not allowed in FILTER",
        "SELECT ?s { ?s ?p ?o } GROUP BY ?s HAVING (COUNT(?o) > 1) ORDER BY DESC(COUNT(?o))",
    ),
    (
        "aggregate-in-bind",
        "SELECT * { ?s ?p ?o BIND («SUM(?o)» AS ?t) }",
        "aggregate SUM is not allowed in BIND",
        "SELECT * { ?s ?p ?o BIND (ABS(?o) AS ?t) }",
    ),
    (
        "aggregate-in-group-by",
        "SELECT (COUNT(*) AS ?n) { ?s ?p ?o } GROUP BY («MAX(?o)»)",
        "aggregate MAX is not allowed in GROUP BY",
        "SELECT (COUNT(*) AS ?n) { ?s ?p ?o } GROUP BY (STR(?o))",
    ),
    (
        "aggregate-inside-exists-in-having",
        "SELECT ?s { ?s ?p ?o } GROUP BY ?s HAVING EXISTS { ?s ?q ?v FILTER («MIN(?v)» > 1) }",
        "aggregate MIN is not allowed in FILTER",
        "SELECT ?s { ?s ?p ?o } GROUP BY ?s HAVING EXISTS { ?s ?q ?v FILTER (?v > 1) }",
    ),
    (
        "nested-aggregate",
        "SELECT (COUNT(«SUM(?o)») AS ?n) { ?s ?p ?o }",
        "aggregate SUM cannot be nested inside the aggregate COUNT",
        "SELECT (COUNT(?o) AS ?n) (SUM(?o) AS ?t) { ?s ?p ?o }",
    ),
    (
        "blank-node-label-across-optional",
        "SELECT * { _:a ?p ?v . OPTIONAL { «_:a» ?q 1 } }",
        "blank node _:a is used in two different basic graph patterns",
        # A FILTER does not end a basic graph pattern.
        "SELECT * { _:a ?p ?v . FILTER (?v) _:a ?q 1 OPTIONAL { _:b ?q 1 } }",
    ),
    (
        "blank-node-label-across-graph",
        "ASK { _:who <p> ?h GRAPH ?g { ?x <q> ?h } «_:who» <r> ?s }",
        "blank node _:who is used in two different basic graph patterns",
        "ASK { _:who <p> ?h . _:who <r> ?s GRAPH ?g { ?x <q> ?h } }",
    ),
    (
        "blank-node-label-across-union",
        "SELECT * { { _:a ?p ?v . } UNION { «_:a» ?q 1 } }",
        "blank node _:a is used in two different basic graph patterns",
        "SELECT * { { _:a ?p ?v . } UNION { _:b ?q 1 } }",
    ),
    (
        "blank-node-label-in-exists-and-outside",
        "SELECT * { _:a ?p ?v FILTER EXISTS { «_:a» ?q 1 } }",
        "blank node _:a is used in two different basic graph patterns",
        "SELECT * { _:a ?p ?v FILTER EXISTS { ?v ?q 1 } }",
    ),
    (
        "blank-node-label-in-stream-and-outside",
        "SELECT * { STREAM <s> [RANGE 1s] { _:a <p> ?v } «_:a» <q> ?v }",
        "blank node _:a is used in two different basic graph patterns",
        "SELECT * { STREAM <s> [RANGE 1s] { _:a <p> ?v } _:b <q> ?v }",
    ),
    (
        "values-row-too-short",
        "SELECT * { VALUES (?a ?b) { («1») } }",
        "VALUES row has 1 value but 2 variables (?a ?b)",
        "SELECT * { VALUES (?a ?b) { (1 UNDEF) } }",
    ),
    (
        "values-row-too-long",
        "SELECT * {} VALUES (?a ?b) { (1 2) (1 2 «3») }",
        "VALUES row has 3 values but 2 variables",
        "SELECT * {} VALUES (?a ?b) { (1 2) (1 3) }",
    ),
    (
        "values-variable-listed-twice",
        "SELECT * { VALUES (?a «?a») { (1 2) } }",
        "?a is listed twice in the VALUES variables",
        "SELECT * { VALUES (?a ?b) { (1 2) } }",
    ),
    (
        "sub-select-grouping-rules",
        "SELECT * { { SELECT ?s «?o» { ?s ?p ?o } GROUP BY ?s } }",
        "?o is used in SELECT but is neither in GROUP BY",
        "SELECT * { { SELECT ?s (COUNT(?o) AS ?n) { ?s ?p ?o } GROUP BY ?s } }",
    ),
    (
        "outer-group-by-over-sub-select",
        "SELECT ?e «?photo» { ?photo <illustrate> ?e { SELECT ?e { ?e <title> ?n } } } GROUP BY ?e",
        "?photo is used in SELECT but is neither in GROUP BY",
        "SELECT ?e (COUNT(?photo) AS ?n) { ?photo <illustrate> ?e { SELECT ?e { ?e <title> ?n2 } } } GROUP BY ?e",
    ),
    (
        "undeclared-window",
        "SELECT * FROM NAMED WINDOW <w1> ON <s> [RANGE PT1M]\nWHERE { WINDOW «<w2>» { ?a ?b ?c } }",
        "window <w2> is not declared; add FROM NAMED WINDOW <w2> ON <stream> [RANGE …]",
        "SELECT * FROM NAMED WINDOW <w1> ON <s> [RANGE PT1M]\nWHERE { WINDOW <w1> { ?a ?b ?c } }",
    ),
    (
        "window-variable-without-declared-windows",
        "SELECT * WHERE { WINDOW «?w» { ?a ?b ?c } }",
        "WINDOW ?w ranges over the declared windows, but there are none",
        "SELECT * FROM NAMED WINDOW <w1> ON <s> [RANGE PT1M] WHERE { WINDOW ?w { ?a ?b ?c } }",
    ),
    (
        "window-declared-twice",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M]\n"
        "FROM NAMED WINDOW «<w>» ON <t> [RANGE PT2M] WHERE { WINDOW <w> { ?a ?b ?c } }",
        "window <w> is declared twice",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M]\n"
        "FROM NAMED WINDOW <v> ON <t> [RANGE PT2M] WHERE { WINDOW <w> { ?a ?b ?c } }",
    ),
    (
        "stream-inside-service",
        "SELECT * { SERVICE <e> { «STREAM <s> [RANGE 1s] { ?a ?b ?c }» } }",
        "STREAM blocks cannot be nested inside SERVICE",
        "SELECT * { SERVICE <e> { ?a ?b ?c } STREAM <s> [RANGE 1s] { ?a ?b ?c } }",
    ),
    (
        "stream-inside-window",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M]\n"
        "WHERE { WINDOW <w> { ?a ?b ?c «STREAM <t> [NOW] { ?a ?b ?d }» } }",
        "STREAM blocks cannot be nested inside WINDOW <w>",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M]\n"
        "WHERE { WINDOW <w> { ?a ?b ?c } STREAM <t> [NOW] { ?a ?b ?d } }",
    ),
    (
        "window-inside-window",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M] FROM NAMED WINDOW <v> ON <s> [RANGE PT2M]\n"
        "WHERE { WINDOW <w> { ?a ?b ?c OPTIONAL { «WINDOW <v> { ?a ?b ?d }» } } }",
        "WINDOW blocks cannot be nested inside WINDOW <w>",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M] FROM NAMED WINDOW <v> ON <s> [RANGE PT2M]\n"
        "WHERE { WINDOW <w> { ?a ?b ?c } OPTIONAL { WINDOW <v> { ?a ?b ?d } } }",
    ),
    (
        "window-inside-service",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M]\nWHERE { SERVICE ?e { «WINDOW <w> { ?a ?b ?c }» } }",
        "WINDOW blocks cannot be nested inside SERVICE",
        "SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE PT1M]\nWHERE { SERVICE ?e { ?a ?b ?c } WINDOW <w> { ?a ?b ?c } }",
    ),
]


@pytest.mark.parametrize(("bad", "message", "good"), [r[1:] for r in QUERY_RULES], ids=[r[0] for r in QUERY_RULES])
def test_query_rule(bad: str, message: str, good: str) -> None:
    assert_error_at(parse_query, bad, message)
    parse_query(good)


UPDATE_RULES = [
    (
        "blank-node-in-delete-data",
        "DELETE DATA { «_:a» <p> <o> }",
        "blank nodes are not allowed in DELETE DATA (found _:a)",
        "INSERT DATA { _:a <p> <o> }",
    ),
    (
        "blank-node-in-delete-where",
        "DELETE WHERE { ?s <p> «_:a» }",
        "blank nodes are not allowed in DELETE WHERE",
        "DELETE WHERE { ?s <p> ?a }",
    ),
    (
        "generated-blank-node-in-delete-template",
        "DELETE { <s> <p> «[]» } WHERE { ?x <p> <o> }",
        "blank nodes are not allowed in a DELETE template (found [])",
        "INSERT { <s> <p> [] } WHERE { ?x <p> <o> }",
    ),
    (
        "blank-node-label-in-two-operations",
        "INSERT DATA { _:b1 <p> <o> } ;\nINSERT DATA { «_:b1» <p> <o> }",
        "blank node _:b1 is already used by INSERT DATA in operation 1 of this request",
        # Labels in templates are local to their operation.
        "INSERT DATA { _:b1 <p> <o> . _:b1 <q> <o> } ;\nINSERT DATA { _:b2 <p> <o> } ;\n"
        "INSERT { _:b1 <p> ?o } WHERE { ?s <p> ?o } ;\nINSERT { _:b1 <p> ?o } WHERE { ?s <q> ?o }",
    ),
    (
        "blank-node-label-across-basic-graph-patterns-in-where",
        "DELETE { ?s <p> ?o } WHERE { _:a <p> ?o OPTIONAL { «_:a» <q> ?s } }",
        "blank node _:a is used in two different basic graph patterns",
        "DELETE { ?s <p> ?o } WHERE { _:a <p> ?o OPTIONAL { _:b <q> ?s } }",
    ),
    (
        "bind-scope-in-update-where",
        "INSERT { ?s <p> ?o } WHERE { ?s <p> ?o BIND (1 AS «?s») }",
        "?s is already in scope in this group",
        "INSERT { ?s <p> ?n } WHERE { ?s <p> ?o BIND (1 AS ?n) }",
    ),
    (
        "stream-in-update",
        "INSERT { ?s <p> ?o } WHERE { «STREAM <s> [RANGE 1s] { ?s <p> ?o }» }",
        "STREAM blocks are not allowed in an update",
        "INSERT { ?s <p> ?o } WHERE { GRAPH <s> { ?s <p> ?o } }",
    ),
]


@pytest.mark.parametrize(("bad", "message", "good"), [r[1:] for r in UPDATE_RULES], ids=[r[0] for r in UPDATE_RULES])
def test_update_rule(bad: str, message: str, good: str) -> None:
    assert_error_at(parse_update, bad, message)
    parse_update(good)


# ---------------------------------------------------------------- rules on hand-built ASTs
# Some rules guard against trees the grammar never produces (variables in INSERT DATA, a
# CONSTRUCT WHERE with a FILTER); they are checked on trees built by hand.

TEXT = "INSERT DATA { ?s <p> <o> }"


def test_variable_in_insert_data() -> None:
    var = Var("s", span=Span.at(TEXT, 14, 16))
    update = ast.Update(
        operations=(ast.InsertData((ast.QuadPattern(var, IRI("p"), IRI("o")),), span=Span.at(TEXT, 0, len(TEXT))),),
        text=TEXT,
    )
    with pytest.raises(QuerySyntaxError, match=r"variables are not allowed in INSERT DATA \(found \?s\)") as caught:
        check_update(update)
    assert (caught.value.span.start, caught.value.span.end) == (14, 16)
    check_update(ast.Update(operations=(ast.InsertData((ast.QuadPattern(IRI("s"), IRI("p"), IRI("o")),)),), text=TEXT))


def test_variable_graph_in_delete_data() -> None:
    text = "DELETE DATA { GRAPH ?g { <s> <p> <o> } }"
    quad = ast.QuadPattern(IRI("s"), IRI("p"), IRI("o"), Var("g"), span=Span.at(text, 25, 36))
    update = ast.Update(operations=(ast.DeleteData((quad,)),), text=text)
    with pytest.raises(QuerySyntaxError, match=r"variables are not allowed in DELETE DATA \(found \?g\)") as caught:
        check_update(update)
    # The variable has no span of its own: the error falls back to its quad's.
    assert (caught.value.span.start, caught.value.span.end) == (25, 36)


def test_construct_where_allows_only_triples() -> None:
    text = "CONSTRUCT WHERE { ?s ?p ?o FILTER (?o) }"
    triples = ast.TriplesBlock((ast.TriplePattern(Var("s"), Var("p"), Var("o")),))
    filter_element = ast.Filter(Var("o"), span=Span.at(text, 27, 38))
    query = ast.Query(
        form=ast.ConstructQuery(
            template=triples.triples, where=ast.GroupGraphPattern((triples, filter_element)), short_form=True
        ),
        text=text,
    )
    with pytest.raises(QuerySyntaxError, match=re.escape("CONSTRUCT WHERE { … } only allows triple patterns")) as caught:
        check_query(query)
    assert caught.value.span.start == 27
    check_query(ast.Query(form=ast.ConstructQuery(triples.triples, ast.GroupGraphPattern((triples,)), short_form=True)))


def test_error_without_any_span_points_at_the_start() -> None:
    query = ast.Query(
        form=ast.SelectQuery(
            projection=(
                ast.ProjectionExpression(Literal("1"), Var("x")),
                ast.ProjectionExpression(Literal("2"), Var("x")),
            ),
            where=ast.GroupGraphPattern(),
        ),
        text="SELECT (1 AS ?x) (2 AS ?x) {}",
    )
    with pytest.raises(QuerySyntaxError, match="assigned twice") as caught:
        check_query(query)
    assert (caught.value.lineno, caught.value.offset) == (1, 1)


def test_in_scope_variables_follow_section_18_2_1() -> None:
    query = parse_query(
        "SELECT * { ?a <p> ?b OPTIONAL { ?b <q> ?c } MINUS { ?a <r> ?m } FILTER (?f) BIND (1 AS ?d) "
        "{ ?e <p> ?a } UNION { GRAPH ?g { ?h <p> ?a } } VALUES ?i { 1 } "
        "{ SELECT ?j (1 AS ?k) { ?j <p> ?hidden } } SERVICE ?svc { ?l <p> ?a } "
        "STREAM ?st [NOW] { ?n <p> ?a } }"
    )
    names = set(in_scope_variables(query.form.where))
    assert names == {"a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "svc", "l", "st", "n"}


def test_blank_nodes_in_construct_template_are_not_a_basic_graph_pattern() -> None:
    parse_query("CONSTRUCT { _:x <p> ?o } WHERE { _:x <q> ?o }")


# ---------------------------------------------------------------- W3C negative syntax tests
# Every negative test that is a *semantic* error (the grammar accepts the text) must be caught by
# checks.py; the message fragment shows which rule does it.

SEMANTIC_NEGATIVE_TESTS = {
    "sparql11/syntax-query/test_43": "SELECT * cannot be used with GROUP BY",
    "sparql11/syntax-query/test_44": "?o is used in SELECT but is neither in GROUP BY",
    "sparql11/syntax-query/test_45": "?X is assigned twice in SELECT",
    "sparql11/syntax-query/test_60": "?o1 is already in scope in this group",
    "sparql11/syntax-query/test_61a": "?o1 is already in scope in this group",
    "sparql11/syntax-query/test_62a": "?Y is already in scope in this group",
    "sparql11/syntax-query/test_65": "?X is already in scope in WHERE",
    "sparql11/syntax-query/test_bad_values_too_few": "VALUES row has 1 value but 2 variables",
    "sparql11/syntax-query/test_bad_values_too_many": "VALUES row has 3 values but 2 variables",
    "sparql11/aggregates/agg08": "?O1 is used in SELECT but is neither in GROUP BY",
    "sparql11/aggregates/agg09": "?P is used in SELECT but is neither in GROUP BY",
    "sparql11/aggregates/agg10": "?P is used in SELECT of an aggregate query",
    "sparql11/aggregates/agg11": "?O1 is used in SELECT but is neither in GROUP BY",
    "sparql11/aggregates/agg12": "?O1 is used in SELECT but is neither in GROUP BY",
    "sparql11/grouping/group06": "?v is used in SELECT but is neither in GROUP BY",
    "sparql11/grouping/group07": "?eventName is used in SELECT but is neither in GROUP BY",
    "sparql11/syntax-update-1/test_50": "blank nodes are not allowed in DELETE WHERE",
    "sparql11/syntax-update-1/test_51": "blank nodes are not allowed in a DELETE template",
    "sparql11/syntax-update-1/test_52": "blank nodes are not allowed in DELETE DATA",
    "sparql11/syntax-update-1/test_54": "blank node _:b1 is already used by INSERT DATA in operation 1",
    "sparql11/delete-insert/dawg-delete-insert-03": "blank nodes are not allowed in a DELETE template",
    "sparql11/delete-insert/dawg-delete-insert-03b": "blank nodes are not allowed in a DELETE template",
    "sparql11/delete-insert/dawg-delete-insert-05": "blank nodes are not allowed in a DELETE template",
    "sparql11/delete-insert/dawg-delete-insert-06": "blank nodes are not allowed in a DELETE template",
    "sparql11/delete-insert/dawg-delete-insert-07": "blank nodes are not allowed in a DELETE template",
    "sparql11/delete-insert/dawg-delete-insert-07b": "blank nodes are not allowed in a DELETE template",
    "sparql11/delete-insert/dawg-delete-insert-08": "blank nodes are not allowed in a DELETE template",
    "sparql11/delete-insert/dawg-delete-insert-09": "blank nodes are not allowed in a DELETE template",
    "sparql10/syntax-sparql3/blabel-cross-graph-bad": "blank node _:who is used in two different basic graph patterns",
    "sparql10/syntax-sparql3/blabel-cross-optional-bad": "blank node _:who is used in two different basic graph patterns",
    "sparql10/syntax-sparql3/blabel-cross-union-bad": "blank node _:who is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-34": "blank node _:a is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-35": "blank node _:a is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-36": "blank node _:a is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-37": "blank node _:a is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-38": "blank node _:a is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-OPT-breaks-BGP": "blank node _:a is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-UNION-breaks-BGP": "blank node _:a is used in two different basic graph patterns",
    "sparql10/syntax-sparql4/syn-bad-GRAPH-breaks-BGP": "blank node _:a is used in two different basic graph patterns",
}

NEGATIVE_MANIFESTS = [
    *(SPARQL11 / d / "manifest.ttl" for d in ("syntax-query", "aggregates", "construct", "grouping")),
    *(SPARQL11 / d / "manifest.ttl" for d in ("syntax-update-1", "syntax-update-2", "delete-insert")),
    *sorted(SPARQL10.glob("syntax-sparql*/manifest.ttl")),
]
SEMANTIC_TESTS = [
    t
    for t in w3c_tests_of_type(
        NEGATIVE_MANIFESTS, "NegativeSyntaxTest", "NegativeSyntaxTest11", "NegativeUpdateSyntaxTest11"
    )
    if t.id in SEMANTIC_NEGATIVE_TESTS
]


def test_every_listed_semantic_test_exists() -> None:
    assert {t.id for t in SEMANTIC_TESTS} == set(SEMANTIC_NEGATIVE_TESTS)


@pytest.mark.parametrize("test", SEMANTIC_TESTS, ids=lambda t: t.id)
def test_w3c_semantic_negative_syntax(test) -> None:
    text = test.action.read_text(encoding="utf-8")
    is_update = test.type == "NegativeUpdateSyntaxTest11" or test.action.suffix == ".ru"
    parse = parse_update if is_update else parse_query
    with pytest.raises(QuerySyntaxError) as caught:
        parse(text, base_iri=test.action.as_uri())
    assert SEMANTIC_NEGATIVE_TESTS[test.id] in caught.value.message


def test_generated_blank_node_label_is_not_shown() -> None:
    # ``[]`` has a parser-made label that means nothing to the user.
    node = BlankNode("genid0", generated=True)
    text = "DELETE WHERE { <s> <p> [] }"
    update = ast.Update(operations=(ast.DeleteWhere((ast.QuadPattern(IRI("s"), IRI("p"), node),)),), text=text)
    with pytest.raises(QuerySyntaxError, match=r"\(found \[\]\)"):
        check_update(update)
