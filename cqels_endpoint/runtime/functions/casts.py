"""The XSD constructor functions of §17.5 (``xsd:integer(?x)`` …), keyed by datatype IRI in
``CASTS``: a function call whose IRI is not there is an extension function (``extensions``)."""

from __future__ import annotations

import math
from decimal import Decimal

from pyoxigraph import Literal, NamedNode

from cqels_endpoint.runtime.functions.values import (
    KIND_BOOLEAN,
    KIND_DATETIME,
    KIND_NUMERIC,
    KIND_STRING,
    boolean_literal,
    integer_literal,
    literal_value,
    numeric,
    numeric_literal,
)
from cqels_endpoint.runtime.functions.xsd import (
    DATETIME,
    DECIMAL,
    DECIMAL_RE,
    INTEGER_RE,
    RANK_DECIMAL,
    RANK_DOUBLE,
    RANK_FLOAT,
    RANK_INTEGER,
    XSD_DATETIME,
    XSD_FLOAT,
    ExpressionError,
    boolean_value,
    format_datetime,
    format_decimal,
    format_double,
    format_float,
    parse_datetime,
    parse_double,
    promote,
    to_f32,
)
from cqels_endpoint.terms import XSD_BOOLEAN, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, XSD_STRING


def _cast_source(term) -> tuple[str, int]:
    """(lexical form, kind) of a cast's argument; IRIs count as strings for xsd:string only."""
    if type(term) is not Literal:
        raise ExpressionError
    return term.value, literal_value(term)[0]


def cast_string(term) -> Literal:
    if type(term) is NamedNode:
        return Literal(term.value)
    lexical, kind = _cast_source(term)
    if kind == KIND_NUMERIC:
        return Literal(numeric_literal(*numeric(term)).value)
    if kind == KIND_BOOLEAN:
        return Literal("true" if boolean_value(lexical) else "false")
    if kind == KIND_DATETIME:
        return Literal(format_datetime(parse_datetime(lexical)))
    return Literal(lexical)


def _float_to_integer(value: float) -> int:
    if value != value or value in (math.inf, -math.inf):
        raise ExpressionError
    return int(value)


def cast_integer(term) -> Literal:
    lexical, kind = _cast_source(term)
    if kind == KIND_STRING:
        if INTEGER_RE.fullmatch(lexical) is None:
            raise ExpressionError
        return integer_literal(int(lexical))
    if kind == KIND_BOOLEAN:
        return integer_literal(int(boolean_value(lexical)))
    if kind != KIND_NUMERIC:
        raise ExpressionError
    rank, value = numeric(term)
    if rank == RANK_INTEGER:
        return integer_literal(value)
    if rank == RANK_DECIMAL:
        return integer_literal(int(value))
    return integer_literal(_float_to_integer(value))


def cast_decimal(term) -> Literal:
    lexical, kind = _cast_source(term)
    if kind == KIND_STRING:
        if DECIMAL_RE.fullmatch(lexical) is None:
            raise ExpressionError
        return Literal(format_decimal(Decimal(lexical)), datatype=DECIMAL)
    if kind == KIND_BOOLEAN:
        return Literal("1" if boolean_value(lexical) else "0", datatype=DECIMAL)
    if kind != KIND_NUMERIC:
        raise ExpressionError
    rank, value = numeric(term)
    if rank >= RANK_FLOAT:
        if value != value or value in (math.inf, -math.inf):
            raise ExpressionError
        # The shortest decimal that reads back as the same float (what pyoxigraph gives for 0.1e0).
        text = format_float(value) if rank == RANK_FLOAT else format_double(value)
        return Literal(format_decimal(Decimal(text)), datatype=DECIMAL)
    return Literal(format_decimal(Decimal(value)), datatype=DECIMAL)


def _cast_floating(term, rank: int) -> Literal:
    lexical, kind = _cast_source(term)
    if kind == KIND_STRING:
        value = parse_double(lexical)
    elif kind == KIND_BOOLEAN:
        value = 1.0 if boolean_value(lexical) else 0.0
    elif kind == KIND_NUMERIC:
        source_rank, source = numeric(term)
        value = promote(source, source_rank, RANK_DOUBLE)
    else:
        raise ExpressionError
    if rank == RANK_FLOAT:
        value = to_f32(value)
    return numeric_literal(rank, value)


def cast_float(term) -> Literal:
    return _cast_floating(term, RANK_FLOAT)


def cast_double(term) -> Literal:
    return _cast_floating(term, RANK_DOUBLE)


def cast_boolean(term) -> Literal:
    lexical, kind = _cast_source(term)
    if kind in (KIND_STRING, KIND_BOOLEAN):
        return boolean_literal(boolean_value(lexical))
    if kind != KIND_NUMERIC:
        raise ExpressionError
    _, value = numeric(term)
    return boolean_literal(value == value and value != 0)


def cast_datetime(term) -> Literal:
    lexical, kind = _cast_source(term)
    if kind not in (KIND_STRING, KIND_DATETIME):
        raise ExpressionError
    return Literal(format_datetime(parse_datetime(lexical)), datatype=DATETIME)


CASTS = {
    XSD_STRING: cast_string,
    XSD_INTEGER: cast_integer,
    XSD_DECIMAL: cast_decimal,
    XSD_FLOAT: cast_float,
    XSD_DOUBLE: cast_double,
    XSD_BOOLEAN: cast_boolean,
    XSD_DATETIME: cast_datetime,
}
"""The XSD constructor functions of §17.5, by datatype IRI."""
