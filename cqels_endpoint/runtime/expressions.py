"""SPARQL 1.1 expressions compiled once into closures over solution mappings (spec §17).

``compile_expression(expr)`` turns an algebra expression into ``fn(row) -> term``: ``row`` maps
variable names to pyoxigraph terms (a missing name, or ``None``, is unbound) and the result is a
pyoxigraph ``NamedNode``/``BlankNode``/``Literal``. An expression error (unbound variable, type
error, …) raises ``ExpressionError``; ``filter_passes`` turns it into ``False`` and ``BIND``
leaves the variable unbound. All name dispatch happens at compile time, and sub-expressions
whose arguments are constants are folded then.

>>> from cqels_endpoint.query import ast
>>> from cqels_endpoint.terms import Literal as AstLiteral, Var
>>> add = compile_expression(ast.BinaryOp("+", Var("x"), AstLiteral("1.5", "http://www.w3.org/2001/XMLSchema#decimal")))
>>> from cqels_endpoint.runtime.functions.xsd import INTEGER
>>> add({"x": Literal("2", datatype=INTEGER)}).value
'3.5'
>>> filter_passes(add, {})
False

Determinism. ``NOW()`` is the evaluation time the caller passes (``now=`` a zero-argument callable
returning milliseconds since the epoch, a ``datetime`` or an xsd:dateTime literal): the continuous
engine passes the evaluation time τ, so incremental and recompute evaluations of the same τ see the
same value. ``RAND()``, ``UUID()``, ``STRUUID()`` and ``BNODE()`` are non-deterministic by the
spec; they draw from ``rng`` (a ``random.Random``, seed it for reproducible runs) or make fresh
blank nodes, so they never compare equal across evaluation modes and are never constant-folded.
``BNODE(str)`` returns the same blank node for the same string within one solution mapping.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timezone

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from cqels_endpoint.algebra.nodes import Exists
from cqels_endpoint.errors import PlanError
from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.query import ast
from cqels_endpoint.runtime import functions as fn
from cqels_endpoint.runtime.canonical import canonical_literal
from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.functions import (
    DOUBLE,
    FALSE,
    TRUE,
    ExpressionError,
    effective_boolean_value,
)
from cqels_endpoint.runtime.functions.extensions import call_extension
from cqels_endpoint.terms import IRI as AstIRI  # noqa: N811 (pyoxigraph's IRI class is NamedNode here)
from cqels_endpoint.terms import Literal as AstLiteral
from cqels_endpoint.terms import Var

__all__ = [
    "Compiled",
    "ExpressionError",
    "compile_expression",
    "compile_filter",
    "compile_order_key",
    "compile_row_filter",
    "compile_row_order_key",
    "effective_boolean_value",
    "filter_passes",
    "order_key",
    "to_term",
]

COMPILED = not use_pure_python()
if COMPILED:
    with compiled_imports("numeric expressions"):
        from cqels_endpoint.runtime._expressions import (
            Conjunction,
            Descending,
            NumericExpression,
            RowFilter,
            RowOrderKey,
            compile_numeric,
        )

Row = Mapping[str, object]
Compiled = Callable[[Row], object]
NowSource = Callable[[], "int | datetime | Literal"]

_NOT_CONSTANT = object()


def to_term(term: AstIRI | AstLiteral) -> NamedNode | Literal:
    """The pyoxigraph term of a query constant; a literal in the form pyoxigraph gives its query
    constants and stored literals (``runtime.canonical``): ``"01"^^xsd:integer`` is ``"1"``."""
    try:
        value = constant_term(term)
    except ValueError as error:
        msg = f"the constant {term} is not a valid RDF term ({error}); write an absolute IRI or fix the literal"
        raise PlanError(msg) from None
    return canonical_literal(value) if isinstance(value, Literal) else value


def compile_expression(
    expr,
    *,
    now: NowSource | None = None,
    base_iri: str | None = None,
    rng: random.Random | None = None,
) -> Compiled:
    """Compile an algebra expression into ``fn(row) -> term`` (raising ``ExpressionError``).

    ``now`` gives NOW() (default: the wall clock at each call), ``base_iri`` resolves IRI()/URI(),
    ``rng`` feeds RAND()/UUID()/STRUUID(). EXISTS raises ``PlanError`` (not supported yet).

    An expression of the numeric subset of ``runtime._expressions`` (arithmetic, comparisons,
    connectives, ROUND/FLOOR/CEIL/ABS, BOUND, IF, COALESCE over variables and numeric constants)
    is evaluated in compiled code, the closure being its fallback and twin; ``CQELS_PURE_PYTHON=1``
    keeps the closure alone.
    """
    closure = _Compiler(now, base_iri, rng).compile(expr)[0]
    if COMPILED:
        compiled = compile_numeric(expr, closure)
        if compiled is not None:
            return compiled
    return closure


def compile_filter(exprs, **context) -> Callable[[Row], bool]:
    """The conjunction of a Filter node's expressions as ``row -> bool`` (an error is false)."""
    compiled = [compile_expression(expr, **context) for expr in exprs]
    ebv = effective_boolean_value

    if len(compiled) == 1:
        (only,) = compiled
        if COMPILED and isinstance(only, NumericExpression):
            return only.passes

        def passes_one(row: Row) -> bool:
            try:
                return ebv(only(row))
            except ExpressionError:
                return False

        return passes_one

    if COMPILED and all(isinstance(condition, NumericExpression) for condition in compiled):
        return Conjunction(compiled).passes

    def passes_all(row: Row) -> bool:
        try:
            for condition in compiled:
                if not ebv(condition(row)):
                    return False
        except ExpressionError:
            return False
        return True

    return passes_all


def compile_row_filter(exprs, positions: Mapping[str, int], decoder: TermDecoder, **context) -> Callable[[tuple], bool]:
    """``row of ids -> bool``: ``compile_filter``'s conjunction on the row's ``DecodedRow``, over
    rows whose columns ``positions`` names. Compiled, ``RowFilter`` tests the same expressions in
    the same order on the ids, building the DecodedRow only for what leaves the compiled subset;
    ``CQELS_PURE_PYTHON=1`` keeps ``compile_filter``, its twin."""
    positions = dict(positions)
    if COMPILED:
        return RowFilter([compile_expression(expr, **context) for expr in exprs], positions, decoder)
    passes = compile_filter(tuple(exprs), **context)
    return lambda row: passes(DecodedRow(positions, row, decoder))


def filter_passes(compiled: Compiled, row: Row) -> bool:
    """FILTER semantics: the effective boolean value of the result, an error being false."""
    try:
        return effective_boolean_value(compiled(row))
    except ExpressionError:
        return False


# --------------------------------------------------------------------------- ORDER BY (§15.1)


def order_key(term) -> tuple:
    """A sort key giving the ORDER BY order of §15.1: unbound < blank nodes < IRIs < literals <
    RDF 1.2 triple terms (by subject, predicate, object), as pyoxigraph orders them.

    Literals that ``<`` orders (numerics, strings, booleans, dateTimes) sort by value; the rest
    sort in a fixed, arbitrary but total order (by kind, then datatype and lexical form), so top-k
    and re-sorting agree. A dateTime without a timezone sorts as if it were UTC.
    """
    if term is None:
        return (0,)
    kind_of = type(term)
    if kind_of is BlankNode:
        return (1, term.value)
    if kind_of is NamedNode:
        return (2, term.value)
    if kind_of is Triple:
        return (4, order_key(term.subject), order_key(term.predicate), order_key(term.object))
    kind, rank, value = fn.literal_value(term)
    lexical = term.value
    if value is not fn.ILL_TYPED:
        if kind == fn.KIND_NUMERIC:
            if value != value:
                return (3, 0, 0, rank, lexical)
            return (3, 0, 1, value, rank, lexical)
        if kind == fn.KIND_BOOLEAN:
            return (3, 1, value, lexical)
        if kind == fn.KIND_STRING:
            return (3, 2, lexical)
        if kind == fn.KIND_LANG:
            return (3, 3, lexical, term.language)
        if kind == fn.KIND_DATETIME or kind == fn.KIND_DATE:
            return (3, 4 if kind == fn.KIND_DATETIME else 5, fn.utc_seconds(value), value.tz is None, lexical)
    # ill-typed literals and unknown datatypes: a fixed order by datatype and lexical form
    datatype = term.datatype.value
    return (3, 6, datatype, lexical)


class DescendingPython:
    """Inverts the order of a key (for ``DESC(…)`` inside one tuple key); ``Descending`` is its
    compiled twin unless ``CQELS_PURE_PYTHON=1``."""

    __slots__ = ("key",)

    def __init__(self, key: tuple):
        self.key = key

    def __lt__(self, other: DescendingPython) -> bool:
        return other.key < self.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DescendingPython) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


if not COMPILED:
    Descending = DescendingPython


def compile_order_key(conditions, **context) -> Callable[[Row], tuple]:
    """``row -> key`` for ORDER BY conditions (``ast.OrderCondition``); an error sorts as unbound."""
    parts = [(compile_expression(c.expr, **context), c.descending) for c in conditions]

    def key(row: Row) -> tuple:
        out = []
        for compiled, descending in parts:
            try:
                value = order_key(compiled(row))
            except ExpressionError:
                value = order_key(None)
            out.append(Descending(value) if descending else value)
        return tuple(out)

    return key


def compile_row_order_key(
    conditions, positions: Mapping[str, int], decoder: TermDecoder, **context
) -> Callable[[tuple], tuple]:
    """``row of ids -> key`` for ORDER BY conditions over rows whose columns ``positions`` names:
    ``compile_order_key``'s key on the row's ``DecodedRow``. Compiled, ``RowOrderKey`` gives the
    same key, keeping the key part of each id of a plain variable's column instead of decoding it
    for every row; ``CQELS_PURE_PYTHON=1`` keeps the closure, its twin."""
    positions = dict(positions)
    if COMPILED:
        order = [
            (compile_expression(c.expr, **context), c.expr.name if isinstance(c.expr, Var) else None, c.descending)
            for c in conditions
        ]
        return RowOrderKey(order, positions, decoder, order_key)
    key = compile_order_key(conditions, **context)
    return lambda row: key(DecodedRow(positions, row, decoder))


# --------------------------------------------------------------------------- the compiler


_COMPARISONS = {
    "=": fn.equal,
    "!=": fn.not_equal,
    "<": fn.less,
    ">": fn.greater,
    "<=": fn.less_equal,
    ">=": fn.greater_equal,
}


def _raise_error(row: Row):
    raise ExpressionError


def _constant(value) -> Compiled:
    return lambda row: value


def _strict(function, args: list[Compiled]) -> Compiled:
    """A function of its evaluated arguments, specialised by arity (errors in arguments propagate)."""
    if len(args) == 1:
        (a,) = args
        return lambda row: function(a(row))
    if len(args) == 2:
        a, b = args
        return lambda row: function(a(row), b(row))
    if len(args) == 3:
        a, b, c = args
        return lambda row: function(a(row), b(row), c(row))
    return lambda row: function(*[arg(row) for arg in args])


class _Compiler:
    """One compilation: the evaluation context shared by the closures of one expression."""

    def __init__(self, now: NowSource | None, base_iri: str | None, rng: random.Random | None):
        self.now = now
        self.base_iri = base_iri
        self.rng = rng if rng is not None else random.Random()
        # BNODE(str) scope: the same string gives the same blank node within one solution mapping.
        self.bnode_row: list = [None, {}]
        self.last_now: list = [None, None]

    def compile(self, expr) -> tuple[Compiled, object]:
        """``(closure, constant value or _NOT_CONSTANT)``; a constant error compiles to a raising closure."""
        if isinstance(expr, Var):
            return self._variable(expr.name), _NOT_CONSTANT
        if isinstance(expr, AstIRI | AstLiteral):
            value = to_term(expr)
            return _constant(value), value
        if isinstance(expr, ast.BinaryOp):
            return self._binary(expr)
        if isinstance(expr, ast.UnaryOp):
            return self._unary(expr)
        if isinstance(expr, ast.In):
            return self._in(expr)
        if isinstance(expr, ast.BuiltinCall):
            return self._builtin(expr)
        if isinstance(expr, ast.FunctionCall):
            return self._function_call(expr)
        if isinstance(expr, Exists | ast.Exists):
            msg = "EXISTS is not supported in continuous queries yet"
            raise PlanError(msg)
        if isinstance(expr, ast.Aggregate):
            msg = f"the aggregate {expr.name} cannot be evaluated per solution; it belongs in a Group"
            raise PlanError(msg)
        msg = f"cannot compile the expression {expr!r}"
        raise PlanError(msg)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _variable(name: str) -> Compiled:
        def variable(row: Row):
            value = row.get(name)
            if value is None:
                raise ExpressionError
            return value

        return variable

    def _fold(self, closure: Compiled, constants: list[object]) -> tuple[Compiled, object]:
        """Evaluate a deterministic closure now when all its arguments are constants."""
        if any(constant is _NOT_CONSTANT for constant in constants):
            return closure, _NOT_CONSTANT
        try:
            value = closure({})
        except ExpressionError:
            return _raise_error, _NOT_CONSTANT
        return _constant(value), value

    def _args(self, exprs) -> tuple[list[Compiled], list[object]]:
        compiled = [self.compile(expr) for expr in exprs]
        return [c[0] for c in compiled], [c[1] for c in compiled]

    # ------------------------------------------------------------------ operators

    def _binary(self, expr: ast.BinaryOp) -> tuple[Compiled, object]:
        (left, right), constants = self._args((expr.left, expr.right))
        op = expr.op
        if op == "&&":
            closure = _and(left, right)
        elif op == "||":
            closure = _or(left, right)
        elif op in _COMPARISONS:
            test = _COMPARISONS[op]

            def closure(row: Row):
                return TRUE if test(left(row), right(row)) else FALSE

        elif op in ("+", "-", "*", "/"):
            arithmetic = fn.arithmetic

            def closure(row: Row):
                return arithmetic(op, left(row), right(row))

        else:
            msg = f"unknown binary operator {op!r}"
            raise PlanError(msg)
        return self._fold(closure, constants)

    def _unary(self, expr: ast.UnaryOp) -> tuple[Compiled, object]:
        (operand,), constants = self._args((expr.operand,))
        if expr.op == "!":
            ebv = effective_boolean_value

            def closure(row: Row):
                return FALSE if ebv(operand(row)) else TRUE

        elif expr.op == "-":
            closure = _strict(fn.negate, [operand])
        elif expr.op == "+":
            closure = _strict(fn.unary_plus, [operand])
        else:
            msg = f"unknown unary operator {expr.op!r}"
            raise PlanError(msg)
        return self._fold(closure, constants)

    def _in(self, expr: ast.In) -> tuple[Compiled, object]:
        (value, *members), constants = self._args((expr.expr, *expr.values))
        found, missing = (FALSE, TRUE) if expr.negated else (TRUE, FALSE)
        equal = fn.equal

        def closure(row: Row):
            term = value(row)
            error = False
            for member in members:
                try:
                    if equal(term, member(row)):
                        return found
                except ExpressionError:
                    error = True
            if error:
                raise ExpressionError
            return missing

        return self._fold(closure, constants)

    def _function_call(self, expr: ast.FunctionCall) -> tuple[Compiled, object]:
        iri = expr.iri.value
        cast = fn.CASTS.get(iri)
        args, constants = self._args(expr.args)
        if cast is None:
            # An extension function, looked up at each call as pyoxigraph's evaluations do; never
            # folded (a registered function need not be deterministic), unknown: an error (§17.6).
            call = call_extension
            return (lambda row: call(iri, [arg(row) for arg in args])), _NOT_CONSTANT
        if len(args) != 1:
            return _raise_error, _NOT_CONSTANT
        return self._fold(_strict(cast, args), constants)

    # ------------------------------------------------------------------ built-in calls

    def _builtin(self, expr: ast.BuiltinCall) -> tuple[Compiled, object]:
        name = expr.name.upper()
        builtin = fn.BUILTINS.get(name)
        form = _FORMS.get(name)
        if builtin is not None:
            function, low, high = builtin
        elif form is not None:
            compile_form, low, high = form
        else:
            msg = f"unknown built-in function {expr.name}"
            raise PlanError(msg)
        if len(expr.args) < low or (high is not None and len(expr.args) > high):
            msg = f"{name} takes {low if low == high else f'{low} to {high}'} arguments, not {len(expr.args)}"
            raise PlanError(msg)
        if builtin is None:
            return compile_form(self, expr.args)
        args, constants = self._args(expr.args)
        return self._fold(_strict(function, args), constants)

    # ------------------------------------------------------------------ built-in forms (``_FORMS``)

    def _form_bound(self, exprs) -> tuple[Compiled, object]:
        (arg,) = exprs
        if not isinstance(arg, Var):
            msg = "BOUND takes a variable"
            raise PlanError(msg)
        name = arg.name

        def bound(row: Row):
            return FALSE if row.get(name) is None else TRUE

        return bound, _NOT_CONSTANT

    def _form_if(self, exprs) -> tuple[Compiled, object]:
        args, constants = self._args(exprs)
        return self._fold(_if(*args), constants)

    def _form_coalesce(self, exprs) -> tuple[Compiled, object]:
        return _coalesce(*self._args(exprs))

    def _form_iri(self, exprs) -> tuple[Compiled, object]:
        (arg,), constants = self._args(exprs)
        base_iri = self.base_iri

        def iri(row: Row):
            return fn.fn_iri(arg(row), base_iri)

        return self._fold(iri, constants)

    def _form_regex(self, exprs) -> tuple[Compiled, object]:
        args, constants = self._args(exprs)
        return self._fold(_regex(args, constants), constants)

    def _form_replace(self, exprs) -> tuple[Compiled, object]:
        args, constants = self._args(exprs)
        return self._fold(_replace(args, constants), constants)

    def _form_rand(self, exprs) -> tuple[Compiled, object]:
        rng = self.rng
        return (lambda row: Literal(fn.format_double(rng.random()), datatype=DOUBLE)), _NOT_CONSTANT

    def _form_uuid(self, exprs) -> tuple[Compiled, object]:
        rng = self.rng
        return (lambda row: NamedNode(f"urn:uuid:{_uuid4(rng)}")), _NOT_CONSTANT

    def _form_struuid(self, exprs) -> tuple[Compiled, object]:
        rng = self.rng
        return (lambda row: Literal(str(_uuid4(rng)))), _NOT_CONSTANT

    def _form_bnode(self, exprs) -> tuple[Compiled, object]:
        if not exprs:
            return (lambda row: BlankNode()), _NOT_CONSTANT
        (label,), _ = self._args(exprs)
        scope = self.bnode_row

        def bnode(row: Row):
            text = fn.simple_value(label(row))
            if scope[0] is not row:
                scope[0] = row
                scope[1] = {}
            node = scope[1].get(text)
            if node is None:
                node = scope[1][text] = BlankNode()
            return node

        return bnode, _NOT_CONSTANT

    def _form_now(self, exprs) -> tuple[Compiled, object]:
        source = self.now
        last = self.last_now  # [source value, literal]: format each distinct time once

        def now(row: Row):
            value = time.time_ns() // 1_000_000 if source is None else source()
            if value != last[0] or last[1] is None:
                last[0] = value
                last[1] = _datetime_literal(value)
            return last[1]

        return now, _NOT_CONSTANT


# The built-ins that are not functions of their evaluated arguments (those are ``fn.BUILTINS``): they
# read the solution or the evaluation context, short-circuit, or compile a constant pattern once.
# Each entry: the compiler method taking the argument expressions, and the arity.
_FORMS: dict[str, tuple[Callable[[_Compiler, tuple], tuple[Compiled, object]], int, int | None]] = {
    "BOUND": (_Compiler._form_bound, 1, 1),
    "IF": (_Compiler._form_if, 3, 3),
    "COALESCE": (_Compiler._form_coalesce, 0, None),
    "IRI": (_Compiler._form_iri, 1, 1),
    "URI": (_Compiler._form_iri, 1, 1),
    "REGEX": (_Compiler._form_regex, 2, 3),
    "REPLACE": (_Compiler._form_replace, 3, 4),
    "BNODE": (_Compiler._form_bnode, 0, 1),
    "RAND": (_Compiler._form_rand, 0, 0),
    "NOW": (_Compiler._form_now, 0, 0),
    "UUID": (_Compiler._form_uuid, 0, 0),
    "STRUUID": (_Compiler._form_struuid, 0, 0),
}


def _datetime_literal(value) -> Literal:
    if isinstance(value, Literal):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        value = (value - epoch) // _MILLISECOND
    return fn.datetime_from_ms(int(value))


_MILLISECOND = datetime(1970, 1, 1, 0, 0, 0, 1000) - datetime(1970, 1, 1)


def _uuid4(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _and(left: Compiled, right: Compiled) -> Compiled:
    """``&&`` with the error truth table of §17.2: false wins over an error."""
    ebv = effective_boolean_value

    def conjunction(row: Row):
        try:
            left_value = ebv(left(row))
        except ExpressionError:
            left_value = None
        if left_value is False:
            return FALSE
        if not ebv(right(row)):
            return FALSE
        if left_value is None:
            raise ExpressionError
        return TRUE

    return conjunction


def _or(left: Compiled, right: Compiled) -> Compiled:
    """``||`` with the error truth table of §17.2: true wins over an error."""
    ebv = effective_boolean_value

    def disjunction(row: Row):
        try:
            left_value = ebv(left(row))
        except ExpressionError:
            left_value = None
        if left_value:
            return TRUE
        if ebv(right(row)):
            return TRUE
        if left_value is None:
            raise ExpressionError
        return FALSE

    return disjunction


def _if(condition: Compiled, then: Compiled, otherwise: Compiled) -> Compiled:
    ebv = effective_boolean_value

    def if_(row: Row):
        return then(row) if ebv(condition(row)) else otherwise(row)

    return if_


def _coalesce(args: list[Compiled], constants: list[object]) -> tuple[Compiled, object]:
    # Arguments after the first constant that is not an error can never be reached.
    for index, constant in enumerate(constants):
        if constant is not _NOT_CONSTANT:
            args = args[: index + 1]
            if index == 0:
                return _constant(constant), constant
            break

    def coalesce(row: Row):
        for arg in args:
            try:
                return arg(row)
            except ExpressionError:
                pass
        raise ExpressionError

    return coalesce, _NOT_CONSTANT


def _pattern(args: list[Compiled], constants: list[object], pattern_index: int):
    """The compiled regex of REGEX/REPLACE: built once when pattern and flags are constants."""
    flags_index = pattern_index + 1
    pattern_arg = args[pattern_index]
    flags_arg = args[flags_index] if len(args) > flags_index else None
    flags_constant = constants[flags_index] if flags_arg is not None else fn.EMPTY_STRING
    if constants[pattern_index] is not _NOT_CONSTANT and flags_constant is not _NOT_CONSTANT:
        try:
            compiled = fn.compile_regex(fn.simple_value(constants[pattern_index]), fn.regex_flags(flags_constant))
        except ExpressionError:
            return None
        return lambda row: compiled
    if flags_arg is None:
        return lambda row: fn.compile_regex(fn.simple_value(pattern_arg(row)), "")
    return lambda row: fn.compile_regex(fn.simple_value(pattern_arg(row)), fn.regex_flags(flags_arg(row)))


def _regex(args: list[Compiled], constants: list[object]) -> Compiled:
    pattern = _pattern(args, constants, 1)
    if pattern is None:
        return _raise_error
    text = args[0]
    matches = fn.regex_matches

    def regex(row: Row):
        return matches(text(row), pattern(row))

    return regex


def _replace(args: list[Compiled], constants: list[object]) -> Compiled:
    # REPLACE(text, pattern, replacement[, flags]): the flags follow the replacement.
    pattern_args = [args[0], args[1], *args[3:]]
    pattern_constants = [constants[0], constants[1], *constants[3:]]
    pattern = _pattern(pattern_args, pattern_constants, 1)
    if pattern is None:
        return _raise_error
    text, replacement = args[0], args[2]
    replace = fn.regex_replace

    def replace_(row: Row):
        return replace(text(row), pattern(row), replacement(row))

    return replace_

