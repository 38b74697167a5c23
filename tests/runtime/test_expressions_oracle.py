"""The expression evaluator against pyoxigraph as the oracle.

1. Every FILTER/BIND/SELECT expression of the W3C expression suites, evaluated on every solution
   of the pattern it applies to (computed by pyoxigraph over the test data): our term (or error)
   must equal what pyoxigraph computes for ``SELECT (expr AS ?r) WHERE {}`` with the same bindings
   substituted. Where pyoxigraph deviates from the spec we follow the spec and list the
   expression in ``EXPRESSION_DEVIATIONS`` with the reason; an entry that stops differing fails.
2. Hypothesis: random expression trees over random literals → the same term or the same error.

Non-deterministic functions (RAND, NOW, UUID, STRUUID, BNODE) are compared by the kind of term only.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from w3c import SPARQL10, SPARQL11, W3CTest, select_tests

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.to_sparql import to_sparql
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.errors import PlanError
from cqels_endpoint.query import ast
from cqels_endpoint.query.serialize import write_expression
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression
from cqels_endpoint.terms import IRI, XSD, Literal, Var

# Every query-evaluation test of both suites: the expression suites the issue names (functions, bind,
# project-expression, cast, expr-*, type-promotion, regex, open-world) and the FILTERs and BINDs of
# all the others.
MANIFESTS = [SPARQL10 / "manifest-evaluation.ttl", SPARQL11 / "manifest-sparql11-query.ttl"]
EXPRESSION_SUITES = {
    "functions", "bind", "project-expression", "cast", "expr-builtin", "expr-equals", "expr-ops",
    "type-promotion", "regex", "open-world",
}  # fmt: skip
ERROR = "error"
NONDETERMINISTIC = {"RAND", "NOW", "UUID", "STRUUID", "BNODE"}

_D10 = "http://www.w3.org/2001/sw/DataAccess/tests/data-r2/"

# (test IRI, expression as written by query.serialize) → why our value differs from pyoxigraph's.
EXPRESSION_DEVIATIONS: dict[tuple[str, str], str] = {
    (_D10 + "open-world/manifest#open-cmp-01", "((?v1 < ?v2) || (?v1 > ?v2))"): "pyoxigraph's <test:abc> < "
    "<test:abc> is false; the operator table of §17.3 has no < for IRIs, so it is a type error (the test's "
    "expected result cannot tell: the row is dropped either way)",
}

# The pyoxigraph-vs-spec differences of the random tests, in one place: either the generators avoid
# the inputs (integer overflow, decimal precision, SUBSTR arguments, empty-matching REPLACE, IN (),
# ill-typed literals) or ``_deviation`` recognises the sub-expression where the difference arises.
GENERATOR_EXCLUSIONS: dict[str, str] = {
    "integer overflow": "pyoxigraph's xsd:integer is 64-bit and overflows into an error; the spec's is "
    "unbounded (we use Python ints): the generators keep integers small",
    "decimal precision": "pyoxigraph's xsd:decimal has 18 fractional digits and errors on a product that needs "
    "more; the spec leaves the precision open and we multiply exactly: division is tested on its own",
    "SUBSTR arguments": "pyoxigraph requires xsd:integer start/length; the spec (XPath fn:substring) rounds any "
    "numeric: the generators use integers",
    "ordering identical terms": "pyoxigraph orders any term with itself (<a> <= <a> is true); the operator "
    "table of §17.3 has no < for IRIs, blank nodes or unknown datatypes, so it is a type error",
    "NaN ordering": "pyoxigraph makes 0 < NaN an error; XPath op:numeric-less-than is false for NaN",
    "boolean ordering": "pyoxigraph makes false < true an error; §17.3 orders booleans (op:boolean-less-than)",
    "dateTime arithmetic": "pyoxigraph subtracts dateTimes into xsd:dayTimeDuration (XPath, SPARQL 1.2); "
    "SPARQL 1.1 has no arithmetic on dateTimes, so it is a type error here",
    "zero divided by a decimal": "pyoxigraph makes 0 / 0.5 an error; it is 0 (op:numeric-divide)",
    "language-tagged <": 'pyoxigraph orders "a"@en < "b"@en; the spec operator table has no < for them (error)',
    "empty-matching REPLACE": "pyoxigraph replaces empty matches; XPath fn:replace raises FORX0003",
    "IN ()": 'pyoxigraph makes "x"^^xsd:integer IN () an error; the spec defines IN () as false: the '
    "generators give IN at least one member",
    "ill-typed literals": 'pyoxigraph makes the EBV of "x"^^xsd:integer an error; §17.2.2 says false. Ill-typed '
    "literals are left to tests/runtime/test_expressions.py",
    "floating-point to decimal": 'pyoxigraph casts "2363.0"^^xsd:double to 2363.000000000000262144 and '
    'xsd:float("1e10") to the integer 9999999999; we convert the exact value (XPath casting rules)',
}


# --------------------------------------------------------------------------- the oracle


_ORACLE = ox.Store()


def oracle(expr, row: dict, base_iri: str | None = None):
    """pyoxigraph's value of ``expr`` with ``row`` substituted (``ERROR`` for an error/unbound result)."""
    used = sorted({node.name for node in walk(expr) if isinstance(node, Var)} & row.keys())
    select = f"SELECT ({write_expression(expr)} AS ?__result)"
    if any(isinstance(row[name], ox.BlankNode) for name in used):
        # VALUES cannot hold blank nodes (and pyoxigraph folds BOUND(?x) of a substituted ?x to
        # false): the row goes into a store as <urn:row> <urn:var:name> term triples.
        store = ox.Store()
        row_node = ox.NamedNode("urn:row")
        store.extend(ox.Quad(row_node, ox.NamedNode(f"urn:var:{name}"), row[name]) for name in used)
        where = " ".join(f"<urn:row> <urn:var:{name}> ?{name} ." for name in used)
        solutions = store.query(f"{select} WHERE {{ {where} }}", base_iri=base_iri)
    else:
        names = " ".join(f"?{name}" for name in used)
        values = " ".join(str(row[name]) for name in used)
        solutions = _ORACLE.query(f"{select} WHERE {{ VALUES ({names}) {{ ({values}) }} }}", base_iri=base_iri)
    value = next(iter(solutions))["__result"]
    return ERROR if value is None else value


def ours(compiled, row: dict):
    try:
        return compiled(row)
    except ExpressionError:
        return ERROR


def shape(value):
    """What a non-deterministic result must agree on: the kind of term and the datatype."""
    if isinstance(value, ox.Literal):
        return ("literal", value.datatype.value)
    if isinstance(value, ox.NamedNode):
        return ("iri", value.value.split(":")[0])
    return type(value).__name__ if value is not ERROR else ERROR


def is_nondeterministic(expr) -> bool:
    return any(isinstance(node, ast.BuiltinCall) and node.name in NONDETERMINISTIC for node in walk(expr))


# --------------------------------------------------------------------------- W3C expressions


def _store(test: W3CTest) -> ox.Store:
    store = ox.Store()
    for path in test.data:
        store.bulk_load(path=str(path), format=ox.RdfFormat.from_extension(path.suffix[1:]), base_iri=path.as_uri())
    for graph, path in test.graph_data:
        store.bulk_load(
            path=str(path),
            format=ox.RdfFormat.from_extension(path.suffix[1:]),
            base_iri=path.as_uri(),
            to_graph=ox.NamedNode(graph),
        )
    return store


def _expression_sites(pattern) -> list[tuple[object, object]]:
    """(expression, the pattern whose solutions it is evaluated on) for every Filter, Extend, LeftJoin."""
    sites = []
    for node in walk(pattern):
        if isinstance(node, n.Filter):
            sites.extend((expr, node.input) for expr in node.exprs)
        elif isinstance(node, n.Extend):
            sites.append((node.expr, node.input))
        elif isinstance(node, n.LeftJoin):
            sites.extend((expr, n.Join((node.left, node.right))) for expr in node.exprs)
    return sites


def _evaluable(expr, pattern) -> bool:
    """Sites we can replay: no aggregates (internal variables) and no EXISTS/SERVICE inside."""
    for node in (*walk(expr), *walk(pattern)):
        if isinstance(node, Var) and not node.name[:1].isalnum() and not node.name.startswith("_"):
            return False
        if isinstance(node, n.Group | n.Service | n.Exists):
            return False
    return True


def _w3c_tests() -> list[W3CTest]:
    return [t for t in select_tests(MANIFESTS, "QueryEvaluationTest") if t.action is not None]


def _rows(store: ox.Store, algebra: n.AlgebraQuery, pattern) -> list[dict]:
    text = to_sparql(dataclasses.replace(algebra, form="SELECT", pattern=pattern))
    solutions = store.query(text)
    names = [v.value for v in solutions.variables]
    return [{name: s[name] for name in names if s[name] is not None} for s in solutions]


def compare_w3c(test: W3CTest) -> tuple[int, dict[tuple[str, str], str]]:
    """(evaluations compared, {(test IRI, expression): first difference}) for one W3C test."""
    source = test.action.read_text(encoding="utf-8")
    query = parse_query(source, base_iri=test.action.as_uri())
    algebra = to_algebra(query)
    store = _store(test)
    compared = 0
    differences: dict[tuple[str, str], str] = {}
    for expr, pattern in _expression_sites(algebra.pattern):
        if any(isinstance(node, n.Exists) for node in walk(expr)):
            with pytest.raises(PlanError, match="EXISTS is not supported"):
                compile_expression(expr)
            continue
        if not _evaluable(expr, pattern):
            continue
        compiled = compile_expression(expr, base_iri=algebra.base)
        text = write_expression(expr)
        loose = is_nondeterministic(expr)
        for row in _rows(store, algebra, pattern):
            expected = oracle(expr, row, algebra.base)
            got = ours(compiled, row)
            compared += 1
            if (shape(got) != shape(expected)) if loose else (got != expected):
                differences.setdefault((test.iri, text), f"{row}: ours {got}, pyoxigraph {expected}")
    return compared, differences


W3C_TESTS = _w3c_tests()


@pytest.mark.parametrize("test", W3C_TESTS, ids=[t.id for t in W3C_TESTS])
def test_w3c_expressions_agree_with_pyoxigraph(test: W3CTest):
    _, differences = compare_w3c(test)
    unexplained = {key: diff for key, diff in differences.items() if key not in EXPRESSION_DEVIATIONS}
    assert not unexplained, "\n".join(f"{expr}: {diff}" for (_, expr), diff in unexplained.items())
    stale = [expr for (iri, expr) in EXPRESSION_DEVIATIONS if iri == test.iri and (iri, expr) not in differences]
    assert not stale, f"listed deviations that no longer differ: {stale}"


def test_w3c_expression_suites_are_all_compared():
    suites = {test.manifest.parent.name for test in W3C_TESTS}
    assert suites >= EXPRESSION_SUITES
    compared = sum(compare_w3c(test)[0] for test in W3C_TESTS if test.manifest.parent.name in EXPRESSION_SUITES)
    assert compared > 500


# --------------------------------------------------------------------------- random expressions


def _xsd(name: str) -> str:
    return XSD + name


def _canonical(term):
    """The term as pyoxigraph holds it: inputs are canonical so that both sides start from the same term."""
    return oracle(Var("x"), {"x": term})


_small_ints = st.integers(min_value=-1000, max_value=1000)
_decimals = st.builds(
    lambda whole, cents: Decimal(whole) + Decimal(cents).scaleb(-2), st.integers(-1000, 1000), st.integers(0, 99)
)
_doubles = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda f: round(f, 3)),
    st.sampled_from([math.inf, -math.inf, math.nan, 0.0, -0.0, 1e20, 1.5e-7]),
)
_strings = st.text(alphabet="aAbBé ßxyz-1", max_size=5)
_languages = st.sampled_from(["en", "en-US", "fr"])
_datetimes = st.builds(
    lambda y, mo, d, h, mi, s, tz: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s}{tz}",
    st.integers(1990, 2030),
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.sampled_from(["00", "30.5", "59.125"]),
    st.sampled_from(["", "Z", "+01:00", "-05:30"]),
)

_literals = st.one_of(
    _small_ints.map(lambda i: Literal(str(i), _xsd("integer"))),
    _decimals.map(lambda d: Literal(str(d), _xsd("decimal"))),
    _doubles.map(lambda f: Literal(repr(f).replace("inf", "INF").replace("nan", "NaN"), _xsd("double"))),
    _doubles.filter(lambda f: abs(f) < 1e30 or not math.isfinite(f)).map(
        lambda f: Literal(repr(f).replace("inf", "INF").replace("nan", "NaN"), _xsd("float"))
    ),
    st.integers(-100, 100).map(lambda i: Literal(str(i), _xsd("byte"))),
    st.sampled_from(["true", "false"]).map(lambda b: Literal(b, _xsd("boolean"))),
    _strings.map(Literal),
    st.builds(lambda s, lang: Literal(s, language=lang), _strings, _languages),
    _datetimes.map(lambda s: Literal(s, _xsd("dateTime"))),
    st.sampled_from(["1", "1.5", "-0", "abc", "true", "2020-01-01T00:00:00Z", " 1"]).map(Literal),
    st.just(Literal("v", "http://example.org/dt")),
)
_iris = st.sampled_from([IRI("http://example.org/a"), IRI("http://example.org/b%20c")])
VARIABLES = ("a", "b", "c")

_ARITHMETIC = ["+", "-", "*"]
_COMPARISON = ["=", "!=", "<", ">", "<=", ">="]
_UNARY = [
    "STR", "LANG", "DATATYPE", "STRLEN", "UCASE", "LCASE", "ENCODE_FOR_URI", "ABS", "ROUND", "CEIL", "FLOOR",
    "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS", "TIMEZONE", "TZ", "MD5", "SHA1", "SHA256",
    "ISIRI", "ISBLANK", "ISLITERAL", "BOUND",
]  # fmt: skip
_BINARY = ["STRDT", "STRSTARTS", "STRENDS", "CONTAINS", "STRBEFORE", "STRAFTER", "LANGMATCHES", "SAMETERM"]
_CASTS = ["string", "integer", "decimal", "double", "boolean", "dateTime"]
_PATTERNS = ["a", "^a", "b$", "[ab]+", "(a)(b)?", "é|ß", "A.", "x+", "\\p{Lu}", "[\\p{Ll}1]+", "\\P{L}"]
_SUBSTR_INDEXES = st.integers(-2, 6).map(lambda i: Literal(str(i), _xsd("integer")))


def _expressions():
    leaves = st.one_of(st.sampled_from([Var(v) for v in VARIABLES]), _literals, _iris)

    def extend(children):
        return st.one_of(
            st.builds(ast.BinaryOp, st.sampled_from(_ARITHMETIC + _COMPARISON + ["&&", "||"]), children, children),
            st.builds(ast.UnaryOp, st.sampled_from(["!", "-", "+"]), children),
            st.builds(
                lambda e, vs, negated: ast.In(e, tuple(vs), negated),
                children,
                st.lists(children, min_size=1, max_size=3),
                st.booleans(),
            ),
            st.builds(
                lambda name, arg: ast.BuiltinCall(name, (Var("a") if name == "BOUND" else arg,)),
                st.sampled_from(_UNARY),
                children,
            ),
            st.builds(lambda name, a, b: ast.BuiltinCall(name, (a, b)), st.sampled_from(_BINARY), children, children),
            st.builds(lambda args: ast.BuiltinCall("CONCAT", tuple(args)), st.lists(children, max_size=3)),
            st.builds(lambda args: ast.BuiltinCall("COALESCE", tuple(args)), st.lists(children, max_size=3)),
            st.builds(lambda c, a, b: ast.BuiltinCall("IF", (c, a, b)), children, children, children),
            st.builds(
                lambda s, start, length: ast.BuiltinCall("SUBSTR", (s, start) if length is None else (s, start, length)),
                children,
                _SUBSTR_INDEXES,
                st.none() | _SUBSTR_INDEXES,
            ),
            st.builds(
                lambda s, pattern, flags: ast.BuiltinCall("REGEX", (s, Literal(pattern), Literal(flags))),
                children,
                st.sampled_from(_PATTERNS),
                st.sampled_from(["", "i", "q", "x"]),
            ),
            st.builds(
                lambda s, pattern, replacement: ast.BuiltinCall("REPLACE", (s, Literal(pattern), Literal(replacement))),
                children,
                st.sampled_from([p for p in _PATTERNS if p != "(a)(b)?"]),
                st.sampled_from(["", "-", "<$0>", "$1"]),
            ),
            st.builds(
                lambda name, arg: ast.FunctionCall(IRI(_xsd(name)), (arg,)), st.sampled_from(_CASTS), children
            ),
        )

    return st.recursive(leaves, extend, max_leaves=6)


def _bindings():
    return st.dictionaries(st.sampled_from(VARIABLES), st.one_of(_literals, _iris), max_size=3)


def _from_ast(term):
    if isinstance(term, IRI):
        return ox.NamedNode(term.value)
    if term.language is not None:
        return ox.Literal(term.value, language=term.language)
    return ox.Literal(term.value, datatype=ox.NamedNode(term.datatype) if term.datatype else None)


def _canonical_constants(expr):
    """The expression with every literal constant replaced by its canonical (pyoxigraph) form."""
    if isinstance(expr, Literal):
        term = _canonical(_from_ast(expr))
        if term.language is not None:
            return Literal(term.value, language=term.language)
        return Literal(term.value, term.datatype.value)
    if isinstance(expr, Var | IRI):
        return expr
    changes = {}
    for field in dataclasses.fields(expr):
        value = getattr(expr, field.name)
        if isinstance(value, tuple):
            changes[field.name] = tuple(_canonical_constants(v) for v in value)
        elif isinstance(value, Var | IRI | Literal | ast.BinaryOp | ast.UnaryOp | ast.In | ast.BuiltinCall):
            changes[field.name] = _canonical_constants(value)
    return dataclasses.replace(expr, **changes)


def _is_floating(term) -> bool:
    return isinstance(term, ox.Literal) and term.datatype.value in (_xsd("double"), _xsd("float"))


def _deviation(node, row: dict) -> str | None:
    """The GENERATOR_EXCLUSIONS entry explaining why ``node`` differs on ``row``, if one does."""
    if isinstance(node, ast.BinaryOp) and node.op in ("<", ">", "<=", ">="):
        left, right = oracle(node.left, row), oracle(node.right, row)
        if left != ERROR and left == right:
            return "ordering identical terms"
        if any(_is_floating(v) and v.value == "NaN" for v in (left, right)):
            return "NaN ordering"
        if all(isinstance(v, ox.Literal) and v.datatype.value == _xsd("boolean") for v in (left, right)):
            return "boolean ordering"
        if all(isinstance(v, ox.Literal) and v.language is not None for v in (left, right)):
            return "language-tagged <"
    if isinstance(node, ast.BinaryOp) and node.op in ("+", "-", "*", "/"):
        operands = (oracle(node.left, row), oracle(node.right, row))
        if any(isinstance(v, ox.Literal) and v.datatype.value == _xsd("dateTime") for v in operands):
            return "dateTime arithmetic"
        left = operands[0]
        if node.op == "/" and isinstance(left, ox.Literal) and left.value in ("0", "-0", "0.0"):
            return "zero divided by a decimal"
    is_decimal_cast = isinstance(node, ast.FunctionCall) and node.iri.value in (_xsd("decimal"), _xsd("integer"))
    if is_decimal_cast and _is_floating(oracle(node.args[0], row)):
        return "floating-point to decimal"
    return None


def _explained(expr, row: dict) -> str | None:
    """A documented deviation at some sub-expression where ours and pyoxigraph's values differ."""
    for node in walk(expr):
        reason = _deviation(node, row)
        if reason is not None and ours(compile_expression(node), row) != oracle(node, row):
            return reason
    return None


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=_expressions(), bindings=_bindings())
# Regressions hypothesis found (kept as examples so that they run first, every time).
@example(expr=ast.BuiltinCall("FLOOR", (Literal("-0.0", _xsd("double")),)), bindings={})
@example(expr=ast.BinaryOp("+", Literal("0", _xsd("integer")), Literal("131072.125", _xsd("float"))), bindings={})
@example(
    expr=ast.BinaryOp("<", ast.BinaryOp("=", Var("a"), Var("a")), ast.In(Literal("INF", _xsd("double")), (Var("a"),))),
    bindings={"a": Literal("0", _xsd("integer"))},
)
@example(expr=ast.BinaryOp("<", Var("b"), Literal("NaN", _xsd("double"))), bindings={"b": Literal("0", _xsd("integer"))})
@example(expr=ast.FunctionCall(IRI(_xsd("decimal")), (Literal("2363.0", _xsd("double")),)), bindings={})
@example(expr=ast.BinaryOp("<", IRI("http://example.org/a"), IRI("http://example.org/a")), bindings={})
def test_random_expressions_agree_with_pyoxigraph(expr, bindings):
    _check(expr, bindings)


def _numeric_expressions():
    """Well-typed numeric trees (so that most evaluations reach a value): promotion, rounding, casts."""
    numbers = st.one_of(
        _small_ints.map(lambda i: Literal(str(i), _xsd("integer"))),
        _decimals.map(lambda d: Literal(str(d), _xsd("decimal"))),
        _doubles.map(lambda f: Literal(repr(f).replace("inf", "INF").replace("nan", "NaN"), _xsd("double"))),
        st.integers(-100, 100).map(lambda i: Literal(str(i), _xsd("int"))),
        st.sampled_from([Var("a"), Var("b")]),
    )

    def extend(children):
        return st.one_of(
            st.builds(ast.BinaryOp, st.sampled_from(_ARITHMETIC), children, children),
            st.builds(ast.UnaryOp, st.sampled_from(["-", "+"]), children),
            st.builds(lambda name, arg: ast.BuiltinCall(name, (arg,)), st.sampled_from(_ROUNDING), children),
            st.builds(
                lambda name, arg: ast.FunctionCall(IRI(_xsd(name)), (arg,)),
                st.sampled_from(["integer", "decimal", "float", "double"]),
                children,
            ),
            st.builds(lambda c, a, b: ast.BuiltinCall("IF", (c, a, b)), children, children, children),
        )

    return st.recursive(numbers, extend, max_leaves=5)


def _string_expressions():
    """Well-typed string trees: language tags and xsd:string through every string function."""
    strings = st.one_of(
        _strings.map(Literal),
        st.builds(lambda s, lang: Literal(s, language=lang), _strings, _languages),
        _strings.map(lambda s: Literal(s, _xsd("string"))),
        st.sampled_from([Var("a"), Var("b")]),
    )

    def extend(children):
        return st.one_of(
            st.builds(
                lambda name, arg: ast.BuiltinCall(name, (arg,)),
                st.sampled_from(["UCASE", "LCASE", "STR", "ENCODE_FOR_URI"]),
                children,
            ),
            st.builds(
                lambda name, a, b: ast.BuiltinCall(name, (a, b)),
                st.sampled_from(["STRBEFORE", "STRAFTER"]),
                children,
                children,
            ),
            st.builds(lambda args: ast.BuiltinCall("CONCAT", tuple(args)), st.lists(children, min_size=1, max_size=3)),
            st.builds(
                lambda s, start, length: ast.BuiltinCall("SUBSTR", (s, start) if length is None else (s, start, length)),
                children,
                _SUBSTR_INDEXES,
                st.none() | _SUBSTR_INDEXES,
            ),
            st.builds(
                lambda s, pattern, replacement: ast.BuiltinCall("REPLACE", (s, Literal(pattern), Literal(replacement))),
                children,
                st.sampled_from([p for p in _PATTERNS if p != "(a)(b)?"]),
                st.sampled_from(["", "-", "<$0>"]),
            ),
        )

    def observe(expr):
        # End every tree in a function whose result says something about the whole string.
        return st.one_of(
            st.just(expr),
            st.builds(
                lambda name, other: ast.BuiltinCall(name, (expr, other)),
                st.sampled_from(["STRSTARTS", "STRENDS", "CONTAINS", "LANGMATCHES"]),
                strings,
            ),
            st.just(ast.BuiltinCall("STRLEN", (expr,))),
            st.just(ast.BuiltinCall("LANG", (expr,))),
            st.just(ast.BuiltinCall("DATATYPE", (expr,))),
            st.builds(ast.BinaryOp, st.sampled_from(_COMPARISON), st.just(expr), strings),
        )

    return st.recursive(strings, extend, max_leaves=5).flatmap(observe)


_ROUNDING = ["ABS", "ROUND", "CEIL", "FLOOR"]


def _check(expr, row: dict) -> None:
    expr = _canonical_constants(expr)
    row = {name: _canonical(_from_ast(term)) for name, term in row.items()}
    got, expected = ours(compile_expression(expr), row), oracle(expr, row)
    if got != expected and _explained(expr, row) in GENERATOR_EXCLUSIONS:
        return
    assert got == expected, f"{write_expression(expr)} with {row}: ours {got}, pyoxigraph {expected}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=_numeric_expressions(), a=_literals, b=_literals)
def test_random_numeric_expressions_agree_with_pyoxigraph(expr, a, b):
    _check(expr, {"a": a, "b": b})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=_string_expressions(), a=_literals, b=_literals)
def test_random_string_expressions_agree_with_pyoxigraph(expr, a, b):
    _check(expr, {"a": a, "b": b})


_numbers = st.one_of(
    _small_ints.map(lambda i: Literal(str(i), _xsd("integer"))),
    _decimals.map(lambda d: Literal(str(d), _xsd("decimal"))),
    _doubles.map(lambda f: Literal(repr(f).replace("inf", "INF").replace("nan", "NaN"), _xsd("double"))),
    st.integers(-100, 100).map(lambda i: Literal(str(i), _xsd("short"))),
    st.floats(width=32, allow_nan=False).map(lambda f: Literal(repr(f).replace("inf", "INF"), _xsd("float"))),
)


@settings(max_examples=300, deadline=None)
@given(left=_numbers, right=_numbers, op=st.sampled_from(["+", "-", "*", "/", "=", "<", ">="]))
@example(left=Literal("0", _xsd("integer")), right=Literal("0.01", _xsd("decimal")), op="/")
# An exact tie between two shortest digit strings (…994.625): pyoxigraph writes …994.63.
@example(left=Literal("100000000000000000000", _xsd("double")), right=Literal("711948.075", _xsd("double")), op="/")
def test_numeric_operators_agree_with_pyoxigraph(left, right, op):
    _check(ast.BinaryOp(op, Var("a"), Var("b")), {"a": left, "b": right})
