"""The compiled numeric expressions (``runtime/_expressions.pyx``) against their twin, the
interpreted closure of ``runtime.expressions``: random expression trees over random rows must give
the same term (or both an error), read from ``{name: term}`` mappings and from rows of ids alike,
and FILTER must pass the same rows."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from cqels_endpoint.query import ast
from cqels_endpoint.runtime import _expressions, expressions
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression, compile_filter
from cqels_endpoint.terms import IRI, XSD, Var
from cqels_endpoint.terms import Literal as AstLiteral

pytestmark = pytest.mark.skipif(not expressions.COMPILED, reason="CQELS_PURE_PYTHON=1: only the interpreter is built")

VARIABLES = ("x", "y", "z")

# Lexical forms chosen to cross every boundary of the compiled path: inline and dictionary ids,
# int64 overflow, decimals too wide for a double, NaN/INF/-0, ill-typed forms, non-numerics.
INTEGERS = ("0", "1", "-7", "42", "9223372036854775807", "-9223372036854775808", "123456789012345678901", "01", "x")
DECIMALS = ("0.0", "1.5", "-2.25", "1.50", "0.005986", "41.474937", "123456789.123456789", "99999999999999999.9", ".5", "-0.0", "1.")
DOUBLES = ("0", "-0", "1.5", "-73.98", "1e3", "4.9E-324", "1.7976931348623157E308", "NaN", "INF", "-INF", "0.1", "abc")
# Lexical forms at the edges of the xsd:double grammar the compiled reader checks by hand.
ODD_DOUBLES = (".5", "1.", "+1.5e+3", "1e", "e5", ".", " 1", "1_0", "\u0661", "+INF", "inf", "nan", "-NaN", "1e400", "2.5E-330")
FLOATS = ("1.5", "0.1", "3.4028235E38", "-1e-45", "NaN")
# Inline (with and without a timezone, equal instants in different zones) and dictionary forms.
DATETIMES = (
    "2013-01-01T00:00:00Z",
    "2013-01-01T01:00:00+01:00",
    "2013-01-01T00:02:00",
    "2013-01-01T00:00:00.5Z",
    "2013-01-01T00:00:00.000Z",
    "1969-12-31T23:59:59-05:00",
)


def _literal(lexical: str, datatype: str) -> Literal:
    return Literal(lexical, datatype=NamedNode(XSD + datatype))


TERMS = st.one_of(
    st.sampled_from(INTEGERS).map(lambda v: _literal(v, "integer")),
    st.sampled_from(("5", "-3", "200")).map(lambda v: _literal(v, "byte")),
    st.sampled_from(DECIMALS).map(lambda v: _literal(v, "decimal")),
    st.sampled_from(DOUBLES + ODD_DOUBLES).map(lambda v: _literal(v, "double")),
    st.sampled_from(ODD_DOUBLES).map(lambda v: _literal(v, "float")),
    st.sampled_from(FLOATS).map(lambda v: _literal(v, "float")),
    st.sampled_from(("true", "false", "1", "maybe")).map(lambda v: _literal(v, "boolean")),
    st.integers(-(10**6), 10**6).map(lambda v: _literal(str(v), "integer")),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda v: _literal(repr(v).replace("inf", "INF").replace("nan", "NaN"), "double")),
    st.sampled_from(DATETIMES).map(lambda v: _literal(v, "dateTime")),
    st.sampled_from((Literal("abc"), Literal(""), Literal("5"), Literal("abc", language="en"), NamedNode("http://example.org/a"),
                     BlankNode("b1"), Triple(NamedNode("http://example.org/a"), NamedNode("http://example.org/p"), Literal("5")),
                     _literal("abc", "date"), _literal("5", "string"))),
)

CONSTANTS = st.one_of(
    st.sampled_from(INTEGERS[:5]).map(lambda v: AstLiteral(v, XSD + "integer")),
    st.sampled_from(DECIMALS[:8]).map(lambda v: AstLiteral(v, XSD + "decimal")),
    st.sampled_from(DOUBLES[:11]).map(lambda v: AstLiteral(v, XSD + "double")),
    st.sampled_from(FLOATS[:3]).map(lambda v: AstLiteral(v, XSD + "float")),
    st.sampled_from(("true", "false")).map(lambda v: AstLiteral(v, XSD + "boolean")),
    st.just(AstLiteral("abc")),
)
LEAVES = st.one_of(st.sampled_from(VARIABLES).map(Var), CONSTANTS)


def _extend(children):
    binary = st.tuples(st.sampled_from(("+", "-", "*", "/", "=", "!=", "<", ">", "<=", ">=", "&&", "||")), children, children)
    return st.one_of(
        binary.map(lambda t: ast.BinaryOp(t[0], t[1], t[2])),
        st.tuples(st.sampled_from(("!", "-", "+")), children).map(lambda t: ast.UnaryOp(t[0], t[1])),
        st.tuples(st.sampled_from(("ROUND", "FLOOR", "CEIL", "ABS")), children).map(lambda t: ast.BuiltinCall(t[0], (t[1],))),
        st.tuples(children, children, children).map(lambda t: ast.BuiltinCall("IF", t)),
        st.lists(children, min_size=1, max_size=3).map(lambda args: ast.BuiltinCall("COALESCE", tuple(args))),
        st.sampled_from(VARIABLES).map(lambda name: ast.BuiltinCall("BOUND", (Var(name),))),
        children.map(lambda child: ast.BuiltinCall("STR", (child,))),  # outside the subset: interpreted whole
        st.tuples(st.sampled_from(TERM_TESTS), children).map(lambda t: ast.BuiltinCall(t[0], (t[1],))),
        st.tuples(st.sampled_from(("=", "!=", "sameTerm")), st.sampled_from(VARIABLES), DATATYPE_OR_STR, st.booleans()).map(_term_test),
    )


# Tests of a variable's term, compiled when their argument is a variable (interpreted otherwise).
TERM_TESTS = ("isIRI", "isURI", "isBlank", "isLiteral", "isNumeric")
COMPILED_DATATYPE_OR_STR = st.one_of(
    st.tuples(st.just("DATATYPE"), st.sampled_from(("integer", "byte", "decimal", "double", "float", "boolean", "dateTime", "string", "date"))
              .map(lambda name: IRI(XSD + name))),
    st.tuples(st.just("DATATYPE"), st.just(IRI("http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"))),
    st.tuples(st.just("STR"), st.sampled_from(("5", "abc", "", "1.5", "true", "http://example.org/a", "2013-01-01T00:00:00Z")).map(AstLiteral)),
    st.tuples(st.just("STR"), st.sampled_from(("urn:5", "b1")).map(AstLiteral)),
)
DATATYPE_OR_STR = COMPILED_DATATYPE_OR_STR | st.just(("STR", AstLiteral("5", XSD + "integer")))  # typed: interpreted


def _term_test(parts) -> ast.Expression:
    op, name, (function, constant), flipped = parts
    call = ast.BuiltinCall(function, (Var(name),))
    left, right = (constant, call) if flipped else (call, constant)
    if op == "sameTerm":
        return ast.BuiltinCall("sameTerm", (left, right))
    return ast.BinaryOp(op, left, right)


EXPRESSIONS = st.recursive(LEAVES, _extend, max_leaves=8)
ROWS = st.fixed_dictionaries({name: st.one_of(st.none(), TERMS) for name in VARIABLES})


def _outcome(function, row):
    try:
        return ("term", function(row))
    except ExpressionError:
        return ("error", None)


def _same(left, right) -> bool:
    if left[0] != right[0]:
        return False
    a, b = left[1], right[1]
    if a == b:
        return True
    # NaN literals compare unequal by value in no place here: the terms themselves must match.
    return isinstance(a, Literal) and isinstance(b, Literal) and a.value == b.value and a.datatype == b.datatype


def _as_ids(row: dict, dictionary: TermDictionary) -> DecodedRow:
    positions = {name: position for position, name in enumerate(VARIABLES)}
    ids = tuple(None if row[name] is None else dictionary.encode(row[name]) for name in VARIABLES)
    return DecodedRow(positions, ids, TermDecoder(dictionary))


@settings(max_examples=600, deadline=None)
@given(EXPRESSIONS, st.lists(ROWS, min_size=1, max_size=4))
def test_compiled_expression_equals_interpreter(expr, rows):
    compiled = compile_expression(expr)
    twin = getattr(compiled, "fallback", compiled)
    dictionary = TermDictionary()
    for row in rows:
        mapping = {name: term for name, term in row.items() if term is not None}
        expected = _outcome(twin, mapping)
        assert _same(_outcome(compiled, mapping), expected), (expr, row)
        # Ids stand for the terms in the form the Store gives them (runtime/canonical.py).
        stored = {name: dictionary.decode(dictionary.encode(term)) for name, term in mapping.items()}
        assert _same(_outcome(compiled, _as_ids(row, dictionary)), _outcome(twin, stored)), (expr, row)


# Term tests on variables, alone and combined, over rows where every kind of term is common.
NON_LITERALS = st.sampled_from((
    NamedNode("http://example.org/a"), NamedNode("urn:5"), BlankNode("b1"),
    Triple(NamedNode("http://example.org/a"), NamedNode("http://example.org/p"), Literal("5")),
))  # fmt: skip
TERM_TEST_ROWS = st.fixed_dictionaries({name: st.one_of(st.none(), TERMS, NON_LITERALS) for name in VARIABLES})
TERM_TEST_EXPRESSIONS = st.recursive(
    st.one_of(
        st.tuples(st.sampled_from(TERM_TESTS), st.sampled_from(VARIABLES)).map(lambda t: ast.BuiltinCall(t[0], (Var(t[1]),))),
        st.tuples(st.sampled_from(("=", "!=", "sameTerm")), st.sampled_from(VARIABLES), COMPILED_DATATYPE_OR_STR, st.booleans()).map(_term_test),
    ),
    lambda children: st.one_of(
        st.tuples(st.sampled_from(("&&", "||", "=")), children, children).map(lambda t: ast.BinaryOp(t[0], t[1], t[2])),
        children.map(lambda child: ast.UnaryOp("!", child)),
    ),
    max_leaves=3,
)


@settings(max_examples=600, deadline=None)
@given(TERM_TEST_EXPRESSIONS, st.lists(TERM_TEST_ROWS, min_size=1, max_size=4))
def test_compiled_term_tests_equal_interpreter(expr, rows):
    compiled = compile_expression(expr)
    assert hasattr(compiled, "fallback")  # compiled, not interpreted
    dictionary = TermDictionary()
    for row in rows:
        mapping = {name: term for name, term in row.items() if term is not None}
        expected = _outcome(compiled.fallback, mapping)
        assert _same(_outcome(compiled, mapping), expected), (expr, row)
        # Ids stand for the terms in the form the Store gives them (runtime/canonical.py).
        stored = {name: dictionary.decode(dictionary.encode(term)) for name, term in mapping.items()}
        assert _same(_outcome(compiled, _as_ids(row, dictionary)), _outcome(compiled.fallback, stored)), (expr, row)


@settings(max_examples=300, deadline=None)
@given(st.lists(EXPRESSIONS, min_size=1, max_size=2), ROWS)
def test_compiled_filter_equals_interpreter(exprs, row):
    passes = compile_filter(tuple(exprs))
    mapping = {name: term for name, term in row.items() if term is not None}
    twins = [getattr(compiled, "fallback", compiled) for compiled in (compile_expression(e) for e in exprs)]
    expected = all(expressions.filter_passes(twin, mapping) for twin in twins)
    assert passes(mapping) == expected
    # Ids stand for the terms in the form the Store gives them (runtime/canonical.py).
    dictionary = TermDictionary()
    stored = {name: dictionary.decode(dictionary.encode(term)) for name, term in mapping.items()}
    assert passes(_as_ids(row, dictionary)) == all(expressions.filter_passes(twin, stored) for twin in twins)


def test_the_debs_cell_expression_runs_compiled():
    # ROUND((41.474937 - ?lat) / 0.005986): decimal constants promoted to double, as Q1 writes them.
    expr = ast.BuiltinCall(
        "ROUND",
        (ast.BinaryOp("/", ast.BinaryOp("-", AstLiteral("41.474937", XSD + "decimal"), Var("x")), AstLiteral("0.005986", XSD + "decimal")),),
    )
    compiled = compile_expression(expr)
    assert compiled is not compiled.fallback
    latitude = _literal("40.751171", "double")
    result = compiled({"x": latitude})
    assert result == compiled.fallback({"x": latitude})
    assert float(result.value) == math.floor((41.474937 - 40.751171) / 0.005986 + 0.5)


def test_expressions_outside_the_subset_stay_interpreted():
    regex = ast.BuiltinCall("REGEX", (Var("x"), AstLiteral("a")))
    assert not hasattr(compile_expression(regex), "fallback")
    constant = ast.BinaryOp("+", AstLiteral("1", XSD + "integer"), AstLiteral("2", XSD + "integer"))
    assert not hasattr(compile_expression(constant), "fallback")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(("a", "b"))), max_size=12))
def test_descending_orders_as_its_twin(keys):
    compiled = sorted(((expressions.Descending(key), index) for index, key in enumerate(keys)))
    twin = sorted(((expressions.DescendingPython(key), index) for index, key in enumerate(keys)))
    assert [index for _, index in compiled] == [index for _, index in twin]
    # Descending keys first, equal keys by the second element ascending.
    expected = sorted(range(len(keys)), key=lambda index: (tuple(-x if isinstance(x, int) else -ord(x) for x in keys[index]), index))
    assert [index for _, index in compiled] == expected


# The row evaluators on ids (RowFilter, RowTerms, RowOrderKey) against their twins on DecodedRows.
ORDER_ROWS = st.fixed_dictionaries({
    name: st.one_of(st.none(), TERMS, st.sampled_from((NamedNode("http://example.org/b"), BlankNode("b2"))))
    for name in VARIABLES
})  # fmt: skip
ORDER_CONDITIONS = st.lists(
    st.tuples(st.one_of(st.sampled_from((*VARIABLES, "absent")).map(Var), EXPRESSIONS), st.booleans()).map(
        lambda t: ast.OrderCondition(t[0], descending=t[1])
    ),
    min_size=1,
    max_size=4,
)


def _id_rows(rows: list[dict], dictionary: TermDictionary) -> list[tuple]:
    return [tuple(None if row[name] is None else dictionary.encode(row[name]) for name in VARIABLES) for row in rows]


@settings(max_examples=400, deadline=None)
@given(ORDER_CONDITIONS, st.lists(ORDER_ROWS, min_size=1, max_size=6))
def test_row_order_key_equals_its_twin(conditions, rows):
    dictionary = TermDictionary()
    decoder = TermDecoder(dictionary)
    positions = {name: position for position, name in enumerate(VARIABLES)}
    compiled = expressions.compile_row_order_key(conditions, positions, decoder)
    assert isinstance(compiled, expressions.RowOrderKey)
    twin = expressions.compile_order_key(conditions)
    id_rows = _id_rows(rows, dictionary)
    for _ in range(2):  # the second pass reads the key parts kept by id
        keys = [compiled(row) for row in id_rows]
        expected = [twin(DecodedRow(positions, row, decoder)) for row in id_rows]
        assert keys == expected
        assert sorted(range(len(keys)), key=keys.__getitem__) == sorted(range(len(keys)), key=expected.__getitem__)


@settings(max_examples=300, deadline=None)
@given(st.lists(EXPRESSIONS, min_size=1, max_size=3), st.lists(ROWS, min_size=1, max_size=4))
def test_row_filter_equals_its_twin(exprs, rows):
    dictionary = TermDictionary()
    decoder = TermDecoder(dictionary)
    positions = {name: position for position, name in enumerate(VARIABLES)}
    compiled = expressions.compile_row_filter(exprs, positions, decoder)
    assert isinstance(compiled, expressions.RowFilter)
    twin = compile_filter(tuple(exprs))
    for row in _id_rows(rows, dictionary):
        assert compiled(row) == twin(DecodedRow(positions, row, decoder)), (exprs, row)


@settings(max_examples=300, deadline=None)
@given(st.lists(EXPRESSIONS, min_size=1, max_size=3), st.sampled_from((*VARIABLES, "absent")), st.lists(ROWS, min_size=1, max_size=4))
def test_row_terms_equal_the_expressions_on_decoded_rows(exprs, counted, rows):
    dictionary = TermDictionary()
    decoder = TermDecoder(dictionary)
    positions = {name: position for position, name in enumerate(VARIABLES)}
    compiled = [compile_expression(expr) for expr in exprs]
    terms = _expressions.RowTerms([*(("term", c) for c in compiled), ("bound", counted), ("row", None)], positions, decoder)
    for row in _id_rows(rows, dictionary):
        decoded = DecodedRow(positions, row, decoder)
        expected = [_outcome(c, decoded) for c in compiled]
        *values, bound, whole = terms(row)
        assert [("error", None) if v is None else ("term", v) for v in values] == expected
        assert bound == (True if decoded.get(counted) is not None else None)
        assert whole is row
