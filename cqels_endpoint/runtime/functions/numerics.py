"""Arithmetic (``+ - * /`` and unary ``- +``, XPath op:numeric-*) and the numeric functions of
§17.4.4: ABS, ROUND, CEIL, FLOOR. RAND draws from the evaluation context (``expressions``)."""

from __future__ import annotations

import math
from decimal import Decimal

from pyoxigraph import Literal

from cqels_endpoint.runtime.functions.values import Builtin, numeric, numeric_literal
from cqels_endpoint.runtime.functions.xsd import (
    DECIMAL_DIVISION_DIGITS,
    EXACT,
    RANK_DECIMAL,
    RANK_FLOAT,
    RANK_INTEGER,
    ExpressionError,
    promote,
    to_f32,
)


def _divide_decimal(left: Decimal, right: Decimal) -> Decimal:
    if right == 0:
        raise ExpressionError
    left_num, left_den = left.as_integer_ratio()
    right_num, right_den = right.as_integer_ratio()
    numerator = left_num * right_den * 10**DECIMAL_DIVISION_DIGITS
    denominator = left_den * right_num
    quotient = abs(numerator) // abs(denominator)  # truncation toward zero, as pyoxigraph does
    if (numerator < 0) != (denominator < 0):
        quotient = -quotient
    return Decimal(quotient).scaleb(-DECIMAL_DIVISION_DIGITS, EXACT)


def _divide_float(left: float, right: float) -> float:
    if right == 0:
        if left != left or left == 0:
            return math.nan
        return math.copysign(math.inf, left) * math.copysign(1.0, right)
    return left / right


def arithmetic(op: str, left, right) -> Literal:
    """``left op right`` for op in ``+ - * /`` with numeric promotion (XPath op:numeric-*)."""
    left_rank, left_value = numeric(left)
    right_rank, right_value = numeric(right)
    rank = left_rank if left_rank > right_rank else right_rank
    if op == "/" and rank == RANK_INTEGER:
        rank = RANK_DECIMAL  # integer division yields a decimal
    a = promote(left_value, left_rank, rank)
    b = promote(right_value, right_rank, rank)
    if rank == RANK_DECIMAL:
        if op == "+":
            result = EXACT.add(a, b)
        elif op == "-":
            result = EXACT.subtract(a, b)
        elif op == "*":
            result = EXACT.multiply(a, b)
        else:
            result = _divide_decimal(a, b)
    elif op == "+":
        result = a + b
    elif op == "-":
        result = a - b
    elif op == "*":
        result = a * b
    elif rank == RANK_INTEGER:
        raise AssertionError("integer division is promoted to decimal above")
    else:
        result = _divide_float(a, b)
    if rank == RANK_FLOAT:
        result = to_f32(result)  # f64 arithmetic rounded once to f32 equals f32 arithmetic for + - * /
    return numeric_literal(rank, result)


def negate(term) -> Literal:
    rank, value = numeric(term)
    return numeric_literal(rank, -value if rank != RANK_DECIMAL else EXACT.minus(value))


def unary_plus(term) -> Literal:
    rank, value = numeric(term)
    return numeric_literal(rank, value)


def round_half_up(rank: int, value) -> int | Decimal | float:
    """fn:round: the nearest integer, halves toward positive infinity."""
    if rank == RANK_INTEGER:
        return value
    if rank == RANK_DECIMAL:
        floor = value.to_integral_value(rounding="ROUND_FLOOR")
        return EXACT.add(floor, 1) if EXACT.subtract(value, floor) >= Decimal("0.5") else floor
    if value != value or value in (math.inf, -math.inf):
        return value
    floor = math.floor(value)
    result = float(floor + 1 if value - floor >= 0.5 else floor)
    return math.copysign(result, value) if result == 0 else result  # round(-0.4) is -0


def fn_abs(term) -> Literal:
    rank, value = numeric(term)
    return numeric_literal(rank, EXACT.abs(value) if rank == RANK_DECIMAL else abs(value))


def fn_round(term) -> Literal:
    rank, value = numeric(term)
    return numeric_literal(rank, round_half_up(rank, value))


def fn_ceil(term) -> Literal:
    rank, value = numeric(term)
    if rank == RANK_DECIMAL:
        return numeric_literal(rank, value.to_integral_value(rounding="ROUND_CEILING"))
    if rank == RANK_INTEGER or value != value or value in (math.inf, -math.inf):
        return numeric_literal(rank, value)
    return numeric_literal(rank, math.copysign(float(math.ceil(value)), value))


def fn_floor(term) -> Literal:
    rank, value = numeric(term)
    if rank == RANK_DECIMAL:
        return numeric_literal(rank, value.to_integral_value(rounding="ROUND_FLOOR"))
    if rank == RANK_INTEGER or value != value or value in (math.inf, -math.inf):
        return numeric_literal(rank, value)
    return numeric_literal(rank, math.copysign(float(math.floor(value)), value))  # floor(-0.0) is -0


BUILTINS = {
    "ABS": Builtin(fn_abs, 1, 1),
    "ROUND": Builtin(fn_round, 1, 1),
    "CEIL": Builtin(fn_ceil, 1, 1),
    "FLOOR": Builtin(fn_floor, 1, 1),
}
