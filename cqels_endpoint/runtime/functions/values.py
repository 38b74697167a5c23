"""Literal terms read as values and values written back as literal terms: the layer every family
of built-in functions stands on.

A literal's kind and value are read once and cached by term (``literal_value``); on top of them the
accessors the functions take their arguments with (``numeric``, ``string_value``, ``simple_value``,
``datetime_value``), the writers of results (``numeric_literal``, ``integer_literal``,
``boolean_literal``, ``string_like``), the effective boolean value and the comparison operators of
§17.3. ``Builtin`` is the row of the family modules' tables.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import NamedTuple

from pyoxigraph import Literal

from cqels_endpoint.runtime.functions.xsd import (
    DECIMAL,
    DOUBLE,
    FALSE,
    FLOAT,
    INTEGER,
    NUMERIC_RANK,
    RANK_DECIMAL,
    RANK_DOUBLE,
    RANK_INTEGER,
    TRUE,
    XSD_DATE,
    XSD_DATETIME,
    DateTime,
    ExpressionError,
    boolean_value,
    compare_datetimes,
    format_decimal,
    format_double,
    format_float,
    parse_date,
    parse_datetime,
    parse_numeric,
    promote,
)
from cqels_endpoint.terms import RDF_LANG_STRING, XSD_BOOLEAN, XSD_STRING

# --------------------------------------------------------------------------- reading literals

# Literal kinds for the operator mapping of §17.3. xsd:date is an extension (the W3C open-world
# tests "require XsdDateOperations"; pyoxigraph has them).
KIND_NUMERIC, KIND_STRING, KIND_LANG, KIND_BOOLEAN, KIND_DATETIME, KIND_DATE, KIND_OTHER = range(7)
_KINDS: dict[str, int] = dict.fromkeys(NUMERIC_RANK, KIND_NUMERIC)
_KINDS.update(
    {
        XSD_STRING: KIND_STRING,
        RDF_LANG_STRING: KIND_LANG,
        XSD_BOOLEAN: KIND_BOOLEAN,
        XSD_DATETIME: KIND_DATETIME,
        XSD_DATE: KIND_DATE,
    }
)

ILL_TYPED = object()
"""The value of a literal whose lexical form is not in its datatype's lexical space (``"x"^^xsd:integer``)."""

# Parsing a literal (datatype lookup, lexical check, conversion) costs far more than a dict probe,
# and stream data repeats values, so parsed values are cached by term; the cache is simply emptied
# when full (no LRU bookkeeping on the hot path).
_VALUES: dict = {}
_VALUES_LIMIT = 1 << 16


def _read(term: Literal) -> tuple[int, int, object]:
    datatype = term.datatype.value
    kind = _KINDS.get(datatype, KIND_OTHER)
    lexical = term.value
    try:
        if kind == KIND_NUMERIC:
            rank = NUMERIC_RANK[datatype]
            return kind, rank, parse_numeric(lexical, datatype, rank)
        if kind == KIND_STRING or kind == KIND_LANG:
            return kind, -1, lexical
        if kind == KIND_BOOLEAN:
            return kind, -1, boolean_value(lexical)
        if kind == KIND_DATETIME:
            return kind, -1, parse_datetime(lexical)
        if kind == KIND_DATE:
            return kind, -1, parse_date(lexical)
    except ExpressionError:
        return kind, -1, ILL_TYPED
    return kind, -1, None


def literal_value(term: Literal) -> tuple[int, int, object]:
    """``(kind, numeric rank or -1, value)`` of a literal: the value is ``ILL_TYPED`` for a bad lexical
    form, None for a datatype we do not interpret; dateTimes and dates are ``DateTime`` tuples."""
    info = _VALUES.get(term)
    if info is None:
        info = _read(term)
        if len(_VALUES) >= _VALUES_LIMIT:
            _VALUES.clear()
        _VALUES[term] = info
    return info


def numeric(term) -> tuple[int, int | Decimal | float]:
    """``(rank, value)`` of a numeric literal; ExpressionError for anything else."""
    if type(term) is not Literal:
        raise ExpressionError
    kind, rank, value = literal_value(term)
    if kind != KIND_NUMERIC or value is ILL_TYPED:
        raise ExpressionError
    return rank, value


def datetime_value(term) -> DateTime:
    if type(term) is not Literal:
        raise ExpressionError
    kind, _, value = literal_value(term)
    if kind != KIND_DATETIME or value is ILL_TYPED:
        raise ExpressionError
    return value


# --------------------------------------------------------------------------- writing results


def numeric_literal(rank: int, value: int | Decimal | float) -> Literal:
    """The literal of a computed numeric value of the given rank (its value cached: it is usually read next)."""
    if rank == RANK_INTEGER:
        term = Literal(str(value), datatype=INTEGER)
    elif rank == RANK_DECIMAL:
        term = Literal(format_decimal(value), datatype=DECIMAL)
    elif rank == RANK_DOUBLE:
        term = Literal(format_double(value), datatype=DOUBLE)
    else:
        term = Literal(format_float(value), datatype=FLOAT)
    if len(_VALUES) >= _VALUES_LIMIT:
        _VALUES.clear()
    _VALUES[term] = (KIND_NUMERIC, rank, value)
    return term


def integer_literal(value: int) -> Literal:
    return Literal(str(value), datatype=INTEGER)


def boolean_literal(value: bool) -> Literal:
    return TRUE if value else FALSE


# --------------------------------------------------------------------------- EBV and comparison


def effective_boolean_value(term) -> bool:
    """The effective boolean value of spec §17.2.2; ExpressionError for IRIs, blank nodes and other literals."""
    if type(term) is not Literal:
        raise ExpressionError
    kind, _, value = literal_value(term)
    if kind == KIND_BOOLEAN:
        return value is True  # an invalid lexical form is false
    if kind == KIND_STRING:
        return bool(value)
    if kind == KIND_NUMERIC:
        return value is not ILL_TYPED and value == value and value != 0
    raise ExpressionError


def literal_kind(datatype: str) -> int:
    return _KINDS.get(datatype, KIND_OTHER)


def _compare_values(kind: int, left_rank: int, a, right_rank: int, b) -> int | None:
    """Order two well-typed values of one comparable kind; None when unordered (NaN, indeterminate dates)."""
    if kind == KIND_NUMERIC:
        if left_rank != right_rank:
            rank = left_rank if left_rank > right_rank else right_rank
            a = promote(a, left_rank, rank)
            b = promote(b, right_rank, rank)
        if a != a or b != b:
            return None  # NaN is unordered and unequal to everything
        return (a > b) - (a < b)
    if kind == KIND_STRING or kind == KIND_BOOLEAN:
        return (a > b) - (a < b)
    return compare_datetimes(a, b)


def equal(left, right) -> bool:
    """SPARQL ``=``: value equality for the operand types of §17.3, else RDFterm-equal (with its type error).

    Literals of two different known value spaces (numbers, strings, booleans, dateTimes, dates) are
    unequal; a language-tagged literal is unequal to every other kind of literal (the W3C open-world
    tests); an ill-typed literal (``"xyz"^^xsd:integer``) is of unknown value, like an unknown datatype.
    """
    if type(left) is Literal and type(right) is Literal:
        left_kind, left_rank, a = literal_value(left)
        right_kind, right_rank, b = literal_value(right)
        if left_kind == right_kind:
            if left_kind == KIND_LANG:
                return left == right
            if left_kind != KIND_OTHER and a is not ILL_TYPED and b is not ILL_TYPED:
                return _compare_values(left_kind, left_rank, a, right_rank, b) == 0
            if left == right:
                return True
            raise ExpressionError
        if left_kind == KIND_LANG or right_kind == KIND_LANG:
            return False
        if left_kind != KIND_OTHER and right_kind != KIND_OTHER and a is not ILL_TYPED and b is not ILL_TYPED:
            return False
        raise ExpressionError  # RDFterm-equal: different literals whose values may coincide
    return left == right


def not_equal(left, right) -> bool:
    return not equal(left, right)


def compare(left, right) -> int:
    """The order of ``<``/``>``: numerics, simple literals/xsd:string, booleans, dateTimes; else an error."""
    if type(left) is not Literal or type(right) is not Literal:
        raise ExpressionError
    kind, left_rank, a = literal_value(left)
    right_kind, right_rank, b = literal_value(right)
    if kind != right_kind or kind == KIND_LANG or kind == KIND_OTHER or a is ILL_TYPED or b is ILL_TYPED:
        raise ExpressionError
    result = _compare_values(kind, left_rank, a, right_rank, b)
    if result is None:
        # NaN: every ordering is false; an indeterminate dateTime order (XSD §3.2.7.4) is an error
        raise _Unordered if kind == KIND_NUMERIC else ExpressionError
    return result


class _Unordered(ExpressionError):
    """Both operands are comparable but unordered (NaN): every ordering operator is false, not an error."""

    __slots__ = ()


def less(left, right) -> bool:
    try:
        return compare(left, right) < 0
    except _Unordered:
        return False


def less_equal(left, right) -> bool:
    try:
        return compare(left, right) <= 0
    except _Unordered:
        return False


def greater(left, right) -> bool:
    try:
        return compare(left, right) > 0
    except _Unordered:
        return False


def greater_equal(left, right) -> bool:
    try:
        return compare(left, right) >= 0
    except _Unordered:
        return False


# --------------------------------------------------------------------------- string arguments


def string_value(term) -> tuple[str, str | None]:
    """``(lexical form, language)`` of a string literal (simple, xsd:string or language-tagged)."""
    if type(term) is not Literal:
        raise ExpressionError
    language = term.language
    if language is not None:
        return term.value, language
    if term.datatype.value != XSD_STRING:
        raise ExpressionError
    return term.value, None


def simple_value(term) -> str:
    """The lexical form of a simple literal or xsd:string (no language tag)."""
    if type(term) is not Literal or term.language is not None or term.datatype.value != XSD_STRING:
        raise ExpressionError
    return term.value


def string_like(text: str, language: str | None) -> Literal:
    """A string result carrying the argument's language tag (or none), per §17.4.3."""
    return Literal(text) if language is None else Literal(text, language=language)


# --------------------------------------------------------------------------- the families' tables


class Builtin(NamedTuple):
    """A built-in function of its evaluated arguments, with the number of arguments it takes."""

    function: Callable[..., object]
    min_args: int
    max_args: int | None  # None: any number
