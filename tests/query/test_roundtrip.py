"""parse → serialise → parse gives an equal AST (and, for queries, the same algebra) on every W3C
query and update file, on the example queries, and on random expression trees, paths and windows;
serialised plain queries are valid for pyoxigraph.
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from known_failures import KNOWN_FAILURES
from paths import ROOT
from w3c import SPARQL10, SPARQL11, W3CTest
from w3c import select_tests as w3c_tests_of_type

from cqels_endpoint import parse_query, parse_update
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query.serialize import serialize_query, serialize_update
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import AllWindow, NowWindow, RangeWindow, TriplesWindow
from cqels_endpoint.terms import IRI, XSD, XSD_BOOLEAN, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, Literal, Var

EXAMPLES = ROOT / "examples" / "queries"

SPARQL11_MANIFESTS = sorted(SPARQL11.glob("*/manifest.ttl"))
SPARQL10_MANIFESTS = sorted(SPARQL10.glob("*/manifest.ttl"))


def unique_files(tests: list[W3CTest]) -> list[W3CTest]:
    """One test per action file (many evaluation tests share a query)."""
    by_file: dict[Path, W3CTest] = {}
    for test in tests:
        if test.action is not None and test.action.suffix in (".rq", ".ru"):
            by_file.setdefault(test.action, test)
    return list(by_file.values())


QUERY_TESTS = unique_files(
    w3c_tests_of_type(SPARQL10_MANIFESTS + SPARQL11_MANIFESTS, "PositiveSyntaxTest", "PositiveSyntaxTest11")
    + w3c_tests_of_type(SPARQL10_MANIFESTS + SPARQL11_MANIFESTS, "QueryEvaluationTest")
)
UPDATE_TESTS = unique_files(
    w3c_tests_of_type(SPARQL11_MANIFESTS, "PositiveUpdateSyntaxTest11", "UpdateEvaluationTest")
)
SPARQL11_EVALUATION_QUERIES = unique_files(w3c_tests_of_type(SPARQL11_MANIFESTS, "QueryEvaluationTest"))


def file_id(test: W3CTest) -> str:
    return str(test.action.relative_to(SPARQL10.parent))


def parse_w3c(test: W3CTest, parse):
    """Parse a W3C file as its manifest would (base IRI = the file), skipping documented failures."""
    try:
        return parse(test.action.read_text(encoding="utf-8"), base_iri=test.action.as_uri())
    except QuerySyntaxError:
        if test.iri in KNOWN_FAILURES:
            pytest.skip(f"known failure: {KNOWN_FAILURES[test.iri]}")
        raise


def test_the_suites_are_all_there() -> None:
    assert len(QUERY_TESTS) > 450
    assert len(UPDATE_TESTS) > 100
    assert len(SPARQL11_EVALUATION_QUERIES) > 150


def assert_round_trip(query: ast.Query) -> None:
    """The serialisation parses back to an equal AST, hence to the same algebra."""
    text = serialize_query(query)
    again = parse_query(text)
    assert again == query, text
    assert to_algebra(again) == to_algebra(query), text


@pytest.mark.parametrize("test", QUERY_TESTS, ids=file_id)
def test_w3c_query_round_trip(test: W3CTest) -> None:
    assert_round_trip(parse_w3c(test, parse_query))


@pytest.mark.parametrize("test", UPDATE_TESTS, ids=file_id)
def test_w3c_update_round_trip(test: W3CTest) -> None:
    update = parse_w3c(test, parse_update)
    text = serialize_update(update)
    assert parse_update(text) == update, text


def without_eager_service(query: ast.Query) -> ast.Query:
    """pyoxigraph evaluates ASK at once, and a SERVICE would then reach the network: ask as SELECT *."""
    form = query.form
    if isinstance(form, ast.AskQuery) and any(isinstance(n, ast.ServicePattern) for n in walk(form)):
        select = ast.SelectQuery(
            projection=(), where=form.where, datasets=form.datasets, modifiers=form.modifiers, values=form.values
        )
        return ast.Query(form=select, prologue=query.prologue)
    return query


@pytest.mark.parametrize("test", SPARQL11_EVALUATION_QUERIES, ids=file_id)
def test_pyoxigraph_accepts_serialised_query(test: W3CTest) -> None:
    query = without_eager_service(parse_w3c(test, parse_query))
    text = serialize_query(query)
    try:
        # SELECT/CONSTRUCT/DESCRIBE results are lazy: not iterating them evaluates nothing.
        pyoxigraph.Store().query(text)
    except SyntaxError as error:
        pytest.fail(f"pyoxigraph rejects the serialisation: {error}\n{text}")
    except (OSError, RuntimeError):
        pass  # an evaluation error (unsupported function, SERVICE) is not what this test is about


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.rq")), ids=lambda p: p.name)
def test_example_round_trip(path: Path) -> None:
    assert_round_trip(parse_query(path.read_text(encoding="utf-8")))


def test_examples_exist() -> None:
    assert len(list(EXAMPLES.glob("*.rq"))) >= 9


# ---------------------------------------------------------------- CQELS constructs, written by hand


CQELS_QUERIES = [
    "REGISTER QUERY q1 AS SELECT * WHERE { STREAM <s> [RANGE 1h30m SLIDE 90s] { ?a <p> ?b } }",
    "REGISTER DSTREAM <http://ex.org/out> AS CONSTRUCT { ?a <p> ?b } WHERE { STREAM ?s [NOW] { ?a <p> ?b } }",
    "SELECT * WHERE { STREAM <s> [ALL] { ?a <p> [ <q> (1 2) ] } STREAM <t> [TRIPLES 5] { ?a <r> ?c } }",
    "SELECT * WHERE { STREAM <s> [RANGE 500ms TUMBLING] { ?a <p> ?b } }",
    "SELECT * FROM STREAM <s> [RANGE 30s STEP 5s] FROM STREAM <t> [RANGE 1m] WHERE { ?a <p> ?b }",
    "SELECT (MEDIAN(?b) AS ?m) (MEDIAN(DISTINCT ?b) AS ?n) WHERE { STREAM <s> [RANGE 2h] { ?a <p> ?b } }",
    "REGISTER ISTREAM <out> AS SELECT * FROM NAMED WINDOW <w1> ON <s> [COUNT 10]\n"
    "FROM NAMED WINDOW <w2> ON STREAM <t> [RANGE PT2H STEP PT1.5S]\n"
    "WHERE { WINDOW <w1> { ?a <p> ?b } WINDOW ?w { ?a <q> ?c } }",
]


@pytest.mark.parametrize("text", CQELS_QUERIES)
def test_cqels_round_trip(text: str) -> None:
    assert_round_trip(parse_query(text))


# ---------------------------------------------------------------- random expressions and paths

# Awkward characters: quotes, backslashes (also as a would-be \u escape), line breaks, tabs, other
# control characters, non-BMP and combining characters; surrogates are not valid text.
awkward_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(['"', "'", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x7f"]),
        st.sampled_from(["u", "U", "0", "5", "c", "é", "\u0308", "😀"]),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=12,
)
# IRI characters valid for RFC 3987 too (pyoxigraph checks that): letters, digits, some delimiters.
iri_text = st.text(
    alphabet=st.one_of(st.characters(categories=("L", "N")), st.sampled_from("-._~:/?#@!$&'()*+,;=")),
    max_size=10,
)
iris = st.one_of(
    iri_text.map(lambda s: IRI("http://example.org/" + s)),
    st.from_regex(r"[a-z]{1,5}(/[a-z0-9]{1,3})?", fullmatch=True).map(IRI),  # relative, kept relative
    st.just(IRI("urn:x-ex:a#b?c=d&e")),
)
variables = st.from_regex(r"[A-Za-z_0-9][A-Za-z_0-9]{0,4}", fullmatch=True).map(Var)
numbers = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20).map(lambda n: Literal(str(n), XSD_INTEGER)),
    st.from_regex(r"[+-]?[0-9]{0,3}\.[0-9]{1,3}", fullmatch=True).map(lambda s: Literal(s, XSD_DECIMAL)),
    st.from_regex(r"[+-]?[0-9]{1,3}(\.[0-9]{0,2})?[eE][+-]?[0-9]{1,2}", fullmatch=True).map(
        lambda s: Literal(s, XSD_DOUBLE)
    ),
)
literals = st.one_of(
    awkward_text.map(Literal),
    st.tuples(awkward_text, st.from_regex(r"[a-z]{2,3}(-[a-z]{2}|-[a-z]{4})?", fullmatch=True)).map(
        lambda p: Literal(p[0], language=p[1])
    ),
    numbers,
    st.sampled_from(["true", "false"]).map(lambda v: Literal(v, XSD_BOOLEAN)),
    st.tuples(awkward_text, st.sampled_from([XSD + "date", XSD_INTEGER, XSD_BOOLEAN, "http://ex.org/dt"])).map(
        lambda p: Literal(p[0], p[1])
    ),
)
BUILTIN_ARITIES = {
    "STR": 1, "LANG": 1, "LANGMATCHES": 2, "DATATYPE": 1, "IRI": 1, "URI": 1, "ABS": 1, "CEIL": 1,
    "FLOOR": 1, "ROUND": 1, "STRLEN": 1, "UCASE": 1, "LCASE": 1, "ENCODE_FOR_URI": 1, "CONTAINS": 2,
    "STRSTARTS": 2, "STRENDS": 2, "STRBEFORE": 2, "STRAFTER": 2, "YEAR": 1, "MONTH": 1, "DAY": 1,
    "HOURS": 1, "MINUTES": 1, "SECONDS": 1, "TIMEZONE": 1, "TZ": 1, "MD5": 1, "SHA1": 1, "SHA256": 1,
    "SHA384": 1, "SHA512": 1, "IF": 3, "STRLANG": 2, "STRDT": 2, "SAMETERM": 2, "ISIRI": 1, "ISURI": 1,
    "ISBLANK": 1, "ISLITERAL": 1, "ISNUMERIC": 1, "BNODE": (0, 1), "RAND": 0, "NOW": 0, "UUID": 0,
    "STRUUID": 0, "REGEX": (2, 3), "SUBSTR": (2, 3), "REPLACE": (3, 4), "CONCAT": None, "COALESCE": None,
}  # fmt: skip


def builtin_calls(arguments: st.SearchStrategy) -> st.SearchStrategy:
    def for_name(name: str) -> st.SearchStrategy:
        arity = BUILTIN_ARITIES[name]
        if arity is None:
            sizes = st.integers(0, 3)
        elif isinstance(arity, tuple):
            sizes = st.integers(*arity)
        else:
            sizes = st.just(arity)
        return sizes.flatmap(lambda n: st.tuples(*[arguments] * n)).map(lambda args: ast.BuiltinCall(name, args))

    bound = variables.map(lambda v: ast.BuiltinCall("BOUND", (v,)))
    return st.one_of(bound, st.sampled_from(sorted(BUILTIN_ARITIES)).flatmap(for_name))


def compound(children: st.SearchStrategy) -> st.SearchStrategy:
    operators = ["||", "&&", "=", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/"]
    triple = st.tuples(variables, iris, st.one_of(variables, literals)).map(lambda t: ast.TriplePattern(*t))
    exists = st.tuples(st.lists(triple, min_size=1, max_size=2), st.booleans()).map(
        lambda p: ast.Exists(ast.GroupGraphPattern((ast.TriplesBlock(tuple(p[0])),)), negated=p[1])
    )
    return st.one_of(
        st.tuples(st.sampled_from(operators), children, children).map(lambda t: ast.BinaryOp(*t)),
        st.tuples(st.sampled_from(["!", "-", "+"]), children).map(lambda t: ast.UnaryOp(*t)),
        st.tuples(children, st.lists(children, max_size=3).map(tuple), st.booleans()).map(lambda t: ast.In(*t)),
        builtin_calls(children),
        st.tuples(iris, st.lists(children, max_size=3).map(tuple), st.booleans()).map(
            lambda t: ast.FunctionCall(t[0], t[1], distinct=t[2] and bool(t[1]))
        ),
        exists,
    )


expressions = st.recursive(st.one_of(variables, iris, literals), compound, max_leaves=12)


def filter_query(expr: ast.Expression) -> ast.Query:
    return ast.Query(form=ast.SelectQuery(projection=(), where=ast.GroupGraphPattern((ast.Filter(expr),))))


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_random_expression_round_trip(expr: ast.Expression) -> None:
    query = filter_query(expr)
    text = serialize_query(query)
    assert parse_query(text) == query, text


aggregates = st.one_of(
    st.tuples(
        st.sampled_from(["COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "MEDIAN"]), expressions, st.booleans()
    ).map(lambda t: ast.Aggregate(t[0], t[1], distinct=t[2])),
    st.booleans().map(lambda d: ast.Aggregate("COUNT", None, distinct=d)),
    st.tuples(expressions, st.booleans(), st.one_of(st.none(), awkward_text)).map(
        lambda t: ast.Aggregate("GROUP_CONCAT", t[0], distinct=t[1], separator=t[2])
    ),
)


@settings(max_examples=100, deadline=None)
@given(aggregates)
def test_random_aggregate_round_trip(aggregate: ast.Aggregate) -> None:
    projection = (ast.ProjectionExpression(aggregate, Var("aggregate_result")),)
    query = ast.Query(form=ast.SelectQuery(projection=projection, where=ast.GroupGraphPattern()))
    text = serialize_query(query)
    assert parse_query(text) == query, text


def path_children(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        children.map(ast.PathInverse),
        st.lists(children, min_size=2, max_size=3).map(lambda ps: ast.PathSequence(tuple(ps))),
        st.lists(children, min_size=2, max_size=3).map(lambda ps: ast.PathAlternative(tuple(ps))),
        st.tuples(children, st.sampled_from(["*", "+", "?"])).map(lambda t: ast.PathMod(*t)),
    )


negated_sets = st.tuples(st.lists(iris, max_size=2), st.lists(iris, max_size=2)).filter(lambda t: t[0] or t[1])
paths = st.recursive(
    st.one_of(iris, negated_sets.map(lambda t: ast.PathNegatedSet(tuple(t[0]), tuple(t[1])))),
    path_children,
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(paths, variables, st.one_of(variables, iris, literals))
def test_random_path_round_trip(path: ast.Path, subject: Var, obj) -> None:
    triples = ast.TriplesBlock((ast.TriplePattern(subject, path, obj),))
    query = ast.Query(form=ast.SelectQuery(projection=(), where=ast.GroupGraphPattern((triples,))))
    text = serialize_query(query)
    assert parse_query(text) == query, text


durations = st.one_of(
    st.integers(1, 10**9),
    st.sampled_from([1, 999, 1000, 60_000, 90_000, 3_600_000, 5_400_000, 86_400_000]),
)
windows = st.one_of(
    durations.map(RangeWindow),
    st.tuples(durations, durations).filter(lambda t: t[1] <= t[0]).map(lambda t: RangeWindow(*t)),
    st.just(NowWindow()),
    st.just(AllWindow()),
    st.integers(1, 10**6).map(TriplesWindow),
)


@settings(max_examples=100, deadline=None)
@given(windows, st.sampled_from(["stream", "from-stream", "named-window"]))
def test_random_window_round_trip(window, where: str) -> None:
    triple = ast.TriplePattern(Var("a"), IRI("http://ex.org/p"), Var("b"))
    stream = IRI("http://ex.org/s")
    datasets: tuple = ()
    if where == "stream":
        block = ast.GroupGraphPattern((ast.TriplesBlock((triple,)),))
        group = ast.GroupGraphPattern((ast.StreamPattern(stream, window, block),))
    elif where == "from-stream":
        datasets = (ast.StreamDataset(stream, window),)
        group = ast.GroupGraphPattern((ast.TriplesBlock((triple,)),))
    else:
        name = IRI("http://ex.org/w")
        datasets = (ast.NamedWindow(name, stream, window),)
        group = ast.GroupGraphPattern((ast.WindowPattern(name, ast.GroupGraphPattern((ast.TriplesBlock((triple,)),))),))
    query = ast.Query(form=ast.SelectQuery(projection=(), where=group, datasets=datasets))
    text = serialize_query(query)
    parsed = parse_query(text)
    assert parsed == query, text
    assert ast.mentions_streams(parsed)
