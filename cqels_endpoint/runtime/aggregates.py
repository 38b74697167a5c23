"""SPARQL 1.1 aggregate semantics (§18.5) on values already extracted from a group's solutions.

Both aggregation operators — the incremental one (``operators._aggregate``) and its recomputing
twin (``operators.reference.aggregate``) — reduce a group to, per aggregate, the multiset of its
argument values that evaluated without error (sorted by :func:`value_key`; a set for DISTINCT)
plus the number of arguments that raised an error or were unbound. :func:`finish` turns that into
the aggregate's term by its row in ``AGGREGATES``, or None (unbound) where SPARQL says the
aggregate is an error; the incremental operator keeps the same results up to date per delta with
the pieces below (:func:`summand`, :func:`sum_literal`, :func:`average_literal`).

Errors follow SPARQL 1.1 Query (REC 2013-03-21), §18.5.1 and its set functions §18.5.1.2–8: the
multiset M an aggregate receives holds one element per solution, ``ListEval`` keeping an error
where the argument fails, and an unbound variable *is* such an error ("ListEval((unbound), μ) =
(error)"). An error of the aggregate leaves its variable unbound (§11.5, W3C agg-err-01). Per
aggregate (``Aggregate.errors``):

- ``COUNT`` (§18.5.1.2, ``SKIP``): "remove error elements", then the cardinality: it counts the
  arguments that evaluated, so ``COUNT(ABS(?x))`` over 1, "a", 2 is 2; ``COUNT(*)`` counts
  solutions, ``COUNT(DISTINCT e)`` the distinct values.
- ``SUM`` (§18.5.1.3, ``FAIL``): ``op:numeric-add`` folded over M, so an error or a non-numeric
  value makes it an error; ``0`` over no solutions.
- ``AVG`` (§18.5.1.4, ``FAIL_IF_COUNTED``): "0 where Count(M) = 0, Sum(M) / Count(M) where
  Count(M) > 0". Count drops the errors, so a group whose arguments *all* failed (or are unbound)
  averages to ``0``; with one value that evaluated, an error makes Sum, hence AVG, an error.
- ``MIN`` (§18.5.1.5, ``FAIL``): S ordered as ``ORDER BY ASC``, the first element: an error sorts
  lowest (§15.1: "no value assigned … to the expression"), so one error makes MIN an error; any
  terms otherwise (``expressions.order_key``: blank nodes < IRIs < literals); unbound over no
  solutions ("Min({}) = error"), as MAX.
- ``MAX`` (§18.5.1.6, ``FAIL``): here the text has two readings, as its editor noted
  (public-sparql-dev, 2013-10-15, "MIN and MAX in face of errors"): ``ToList`` is not defined on
  an error (then MAX is an error, as MIN) or passes it through (then ORDER BY DESC puts it last and
  MAX ignores errors). We take the first: MIN and MAX then agree (``-MAX(?x) = MIN(-?x)``), a
  partition's MAX merges into the whole's (``plan.partitioning``), and pyoxigraph reads it so.
- ``GROUP_CONCAT`` (§18.5.1.7, ``FAIL``): ``CONCAT`` folded over S, so an error — or a value
  that is not a string literal (a number, an IRI) — makes it an error; ``""`` over no solutions.
- ``SAMPLE`` (§18.5.1.8, ``SKIP``): "v, where v in Flatten(M)": any element, an error included.
  We take a value that evaluated whenever there is one (below: the smallest), an error only when
  every argument failed (``Sample({}) = error``).
- ``MEDIAN`` (our extension, ``FAIL``): as MIN/MAX, an error or a non-numeric value makes it an
  error; unbound over no values.

Where pyoxigraph (the recompute oracle, and the one-shot ``/query`` path) answers otherwise:
``COUNT(e)`` of an expression that fails on some solution is unbound there (``COUNT(?x)`` of an
unbound ?x is right), and AVG over only errors is unbound. ``algebra.to_sparql`` therefore writes
the argument of a COUNT or AVG as a ``BIND`` before grouping (pyoxigraph counts the bound values)
and AVG as ``IF(COUNT(a) = 0, 0, AVG(a))``, so that re-evaluation gives the spec's answer. The
one-shot ``/query`` path hands the user's text to pyoxigraph as it is and keeps its two answers.

Choices where the spec leaves freedom, made so that both evaluation modes agree whatever order
solutions arrive and expire in:

- ``SUM`` is *the correctly rounded sum*: the exact sum of the values (integers and decimals as
  they are, floats and doubles as the binary numbers they denote, each an integer multiple of
  2⁻¹⁰⁷⁴), rounded once, to nearest with ties to even, to the datatype SPARQL's promotion gives
  (integer < decimal < float < double: the highest among the values). Integer and decimal sums are
  therefore exact, and a float/double sum does not depend on the order values arrive or leave in:
  a retraction leaves no residue. A NaN among float/double values makes the sum NaN, and so does
  +INF with -INF; otherwise an infinite value makes it that infinity, and a finite exact sum
  beyond the type's range rounds to ±INF. pyoxigraph adds one value at a time, rounding each
  partial sum (and promoting each integer or decimal to the result type first), so its float and
  double sums may differ in the last bits, and it overflows to INF when a partial sum does.
- ``AVG`` is that ``SUM`` divided by the number of values with SPARQL's ``/`` (a decimal for
  integers, xsd:decimal division truncated at 18 digits as pyoxigraph does).
- ``GROUP_CONCAT`` concatenates in :func:`value_key` order (pyoxigraph uses the order solutions
  come out of its store, which is not a function of the window's contents). The result is a
  simple literal even when every value carries the same language tag, as the W3C tests
  agg-groupconcat-04/06 expect (pyoxigraph keeps the tag: ``algebra.to_sparql`` writes
  ``STR(GROUP_CONCAT(…))`` so that it computes the same).
- ``SAMPLE`` is the smallest value in :func:`value_key` order.
- ``MIN``/``MAX`` between equal values of different terms (``1``, ``1.0``, ``1e0``) take the one
  :func:`value_key` puts first/last (integer < decimal < float < double, then lexical form);
  pyoxigraph keeps whichever it met first, which depends on its store order.
- ``MEDIAN`` (extension) is defined over numeric values only (any other value is an error): the
  *lower* median, i.e. the value at 0-based position ``(n - 1) // 2`` in ascending order — for an
  even count the smaller of the two middle values, so the result is always one of the group's
  values, with its own datatype.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import NamedTuple

from pyoxigraph import Literal, NamedNode

from cqels_endpoint.algebra.aggregates import MEDIAN_IRI
from cqels_endpoint.runtime import functions as fn
from cqels_endpoint.runtime.expressions import ExpressionError, order_key
from cqels_endpoint.runtime.functions import integer_literal
from cqels_endpoint.runtime.functions.xsd import EXACT, RANK_DECIMAL, RANK_FLOAT, RANK_INTEGER

_ZERO = integer_literal(0)


def value_key(term) -> tuple:
    """A total order on terms: ORDER BY order, ties between distinct terms broken by their N-Triples form."""
    return (order_key(term), str(term))


def is_numeric(term) -> bool:
    if not isinstance(term, Literal):
        return False
    kind, _rank, value = fn.literal_value(term)
    return kind == fn.KIND_NUMERIC and value is not fn.ILL_TYPED


def _count(values: Sequence, errors: int, separator: str | None) -> Literal:
    return integer_literal(len(values))


def _first(values: Sequence, errors: int, separator: str | None):
    return values[0] if values else None


def _last(values: Sequence, errors: int, separator: str | None):
    return values[-1] if values else None


# ---------------------------------------------------------------------- the correctly rounded sum

# Where a value goes in an exact sum (:func:`summand`): integers and decimals are added as they
# are; a finite float or double as an integer count of 2**-1074 (every binary32/binary64 number is
# one); NaN and the infinities are only counted.
SLOT_INTEGER, SLOT_DECIMAL, SLOT_BINARY, SLOT_NAN, SLOT_POSITIVE_INFINITY, SLOT_NEGATIVE_INFINITY = range(6)
BINARY_UNIT_EXPONENT = 1074
# Binary formats as (significant bits, exponent of the smallest subnormal, largest finite number).
_BINARY64 = (53, -1074, sys.float_info.max)
_BINARY32 = (24, -149, 3.4028234663852886e38)


def summand(term) -> tuple[int, int, object]:
    """``(rank, slot, amount)`` of a numeric term in an exact sum: its numeric rank, the ``SLOT_*``
    it is added to and what is added there (None for NaN and the infinities); ExpressionError for
    anything but a well-typed numeric literal."""
    rank, value = fn.numeric(term)
    if rank == RANK_INTEGER:
        return rank, SLOT_INTEGER, value
    if rank == RANK_DECIMAL:
        return rank, SLOT_DECIMAL, value
    if value != value:
        return rank, SLOT_NAN, None
    if value == math.inf:
        return rank, SLOT_POSITIVE_INFINITY, None
    if value == -math.inf:
        return rank, SLOT_NEGATIVE_INFINITY, None
    numerator, denominator = value.as_integer_ratio()  # the denominator is a power of two ≤ 2**1074
    return rank, SLOT_BINARY, numerator << (BINARY_UNIT_EXPONENT + 1 - denominator.bit_length())


def _round_binary(numerator: int, denominator: int, binary_format: tuple[int, int, float]) -> float:
    """``numerator / denominator`` (denominator > 0) rounded once to the nearest number of
    ``binary_format`` (``_BINARY64`` or ``_BINARY32``), ties to even; beyond its range, ±INF."""
    precision, min_exponent, largest = binary_format
    if numerator == 0:
        return 0.0
    magnitude = abs(numerator)
    # The exponent of the last kept bit, so that the quotient has `precision` bits (or fewer, subnormal).
    exponent = max(magnitude.bit_length() - denominator.bit_length() - precision, min_exponent)
    while True:
        if exponent >= 0:
            dividend, divisor = magnitude, denominator << exponent
        else:
            dividend, divisor = magnitude << -exponent, denominator
        quotient, remainder = divmod(dividend, divisor)
        if quotient.bit_length() <= precision:
            break
        exponent += 1
    if 2 * remainder > divisor or (2 * remainder == divisor and quotient & 1):
        quotient += 1
    try:
        result = math.ldexp(quotient, exponent)
    except OverflowError:
        result = math.inf
    if result > largest:
        result = math.inf
    return -result if numerator < 0 else result


def sum_literal(
    rank: int, integers: int, decimals: Decimal, binary: int, nan: int, positive_infinity: int, negative_infinity: int
) -> Literal:
    """The term of the correctly rounded sum (module docstring) of values of highest rank ``rank``
    whose :func:`summand` amounts add up to ``integers``, ``decimals`` and ``binary`` (in units of
    2**-1074), ``nan``/``positive_infinity``/``negative_infinity`` of them being those specials."""
    if rank == RANK_INTEGER:
        return fn.numeric_literal(rank, integers)
    if rank == RANK_DECIMAL:
        return fn.numeric_literal(rank, EXACT.add(Decimal(integers), decimals))
    if nan or (positive_infinity and negative_infinity):
        value = math.nan
    elif positive_infinity or negative_infinity:
        value = math.inf if positive_infinity else -math.inf
    else:
        numerator, denominator = binary + (integers << BINARY_UNIT_EXPONENT), 1 << BINARY_UNIT_EXPONENT
        if decimals:
            decimal_numerator, decimal_denominator = decimals.as_integer_ratio()
            numerator = numerator * decimal_denominator + (decimal_numerator << BINARY_UNIT_EXPONENT)
            denominator *= decimal_denominator
        value = _round_binary(numerator, denominator, _BINARY32 if rank == RANK_FLOAT else _BINARY64)
    return fn.numeric_literal(rank, value)


def average_literal(total: Literal, count: int) -> Literal:
    """AVG from the SUM of ``count`` values: ``total / count`` with SPARQL's ``/``, 0 over no values."""
    if not count:
        return _ZERO
    return fn.arithmetic("/", total, integer_literal(count))


def _totals(values: Sequence) -> tuple[int, list]:
    """The highest rank of ``values`` and their :func:`summand` amounts added up, by slot."""
    rank = RANK_INTEGER
    totals: list = [0, Decimal(0), 0, 0, 0, 0]  # by slot
    for value in values:
        value_rank, slot, amount = summand(value)
        rank = max(rank, value_rank)
        if slot == SLOT_DECIMAL:
            totals[slot] = EXACT.add(totals[slot], amount)
        elif amount is None:
            totals[slot] += 1
        else:
            totals[slot] += amount
    return rank, totals


def _sum(values: Sequence, errors: int = 0, separator: str | None = None) -> Literal:
    rank, totals = _totals(values)
    return sum_literal(rank, *totals)


def _avg(values: Sequence, errors: int, separator: str | None) -> Literal:
    return average_literal(_sum(values), len(values))


# ---------------------------------------------------------------------- partial sums

# A partition of a Spark job sums its share of a group exactly and hands on that state; the global
# stage adds the states and rounds once (streaming/, plan.partitioning.split_aggregates), so SUM and
# AVG are the single engine's to the bit. The state also counts the partition's arguments in error:
# AVG over only errors is 0 but an error beside a value is an error (§18.5.1.4), which the merge can
# only tell from the counts of both. The state is a literal of this internal datatype.
EXACT_SUM_DATATYPE = NamedNode("urn:cqels:datatype:exact-sum")


def exact_sum_literal(count: int, rank: int, integers: int, decimals: Decimal, binary: int, nan: int, positive_infinity: int,
                      negative_infinity: int, errors: int) -> Literal:
    """The exact state of a sum of ``count`` values of highest rank ``rank`` (:func:`sum_literal`'s
    amounts) beside ``errors`` arguments in error. Equal states are equal terms: the decimal total
    is written without trailing zeros (a partition rebuilt from its events must hand on the very
    state it replaced)."""
    canonical = format(EXACT.normalize(decimals), "f") if decimals else "0"
    parts = (count, rank, integers, canonical, binary, nan, positive_infinity, negative_infinity, errors)
    return Literal(" ".join(map(str, parts)), datatype=EXACT_SUM_DATATYPE)


def exact_sum_state(term) -> tuple:
    """``(count, rank, integers, decimals, binary, nan, +inf, -inf, errors)`` of an :func:`exact_sum_literal`."""
    if not isinstance(term, Literal) or term.datatype != EXACT_SUM_DATATYPE:
        raise ExpressionError(f"not an exact sum: {term}")
    count, rank, integers, decimals, binary, nan, positive, negative, errors = term.value.split(" ")
    return (int(count), int(rank), int(integers), Decimal(decimals), int(binary), int(nan), int(positive), int(negative),
            int(errors))


def add_exact_sums(states: Sequence[tuple]) -> tuple:
    """The state of the sum of the values of ``states`` (each :func:`exact_sum_state`)."""
    count, rank, integers, decimals, binary, nan, positive, negative, errors = 0, RANK_INTEGER, 0, Decimal(0), 0, 0, 0, 0, 0
    for state in states:
        count += state[0]
        rank = max(rank, state[1])
        integers += state[2]
        decimals = EXACT.add(decimals, state[3])
        binary += state[4]
        nan, positive, negative = nan + state[5], positive + state[6], negative + state[7]
        errors += state[8]
    return count, rank, integers, decimals, binary, nan, positive, negative, errors


def merged_exact_sums(states: Sequence[tuple], average: bool) -> Literal | None:
    """SUM (or AVG, ``average``) of the values whose exact states are ``states``, by the error rules
    of SUM and AVG: None when an argument was in error, unless AVG saw no value at all (then 0)."""
    total = add_exact_sums(states)
    if total[8] and (total[0] or not average):
        return None
    found = sum_literal(*total[1:8])
    return average_literal(found, total[0]) if average else found


def _exact_sum(values: Sequence, errors: int, separator: str | None) -> Literal:
    rank, totals = _totals(values)
    return exact_sum_literal(len(values), rank, *totals, errors)


def _sum_of_exact(values: Sequence, errors: int, separator: str | None) -> Literal | None:
    return merged_exact_sums([exact_sum_state(value) for value in values], average=False)


def _avg_of_exact(values: Sequence, errors: int, separator: str | None) -> Literal | None:
    return merged_exact_sums([exact_sum_state(value) for value in values], average=True)


def _median(values: Sequence, errors: int, separator: str | None):
    # Numerics sort before every other literal and after IRIs and blank nodes: checking both ends
    # checks them all.
    if not values or not (is_numeric(values[0]) and is_numeric(values[-1])):
        return None
    return values[(len(values) - 1) // 2]


def _group_concat(values: Sequence, errors: int, separator: str | None) -> Literal:
    return Literal((" " if separator is None else separator).join(fn.string_value(value)[0] for value in values))


# How an aggregate meets arguments in error (the module docstring gives each one's section).
SKIP = "skip"  # errors are left out (COUNT removes them, SAMPLE picks a value that evaluated)
FAIL = "fail"  # one error makes the aggregate an error
FAIL_IF_COUNTED = "fail if counted"  # AVG: an error beside a value is an error; errors alone give 0


class Aggregate(NamedTuple):
    """One aggregate: ``fold(values, errors, separator)`` gives its term over the values sorted by
    :func:`value_key` beside ``errors`` arguments in error, once ``errors`` (its rule for them,
    ``SKIP``/``FAIL``/``FAIL_IF_COUNTED``) let it (None: unbound; an ``ExpressionError`` also leaves
    it unbound)."""

    fold: Callable[[Sequence, int, str | None], Literal | None]
    errors: str


AGGREGATES: dict[str, Aggregate] = {
    "COUNT": Aggregate(_count, SKIP),
    "SUM": Aggregate(_sum, FAIL),
    "AVG": Aggregate(_avg, FAIL_IF_COUNTED),
    "MIN": Aggregate(_first, FAIL),
    "MAX": Aggregate(_last, FAIL),
    "SAMPLE": Aggregate(_first, SKIP),
    "GROUP_CONCAT": Aggregate(_group_concat, FAIL),
    "MEDIAN": Aggregate(_median, FAIL),
    # Internal, no syntax: a partition's exact state of a SUM or AVG (its errors counted in it, for
    # the merge to apply SUM's or AVG's rule), and the two that merge those states.
    "EXACT_SUM": Aggregate(_exact_sum, SKIP),
    "SUM_OF_EXACT": Aggregate(_sum_of_exact, FAIL),
    "AVG_OF_EXACT": Aggregate(_avg_of_exact, FAIL),
}
"""The aggregates a plan may hold, by upper-case name."""


def finish(name: str, values: Sequence, errors: int, separator: str | None = None):
    """The value of aggregate ``name`` over ``values`` (sorted by :func:`value_key`), ``errors``
    arguments having failed; None when the aggregate is an error (its variable stays unbound)."""
    aggregate = AGGREGATES.get(name)
    if aggregate is None:
        raise ValueError(f"unknown aggregate {name}")
    if errors and (aggregate.errors == FAIL or (aggregate.errors == FAIL_IF_COUNTED and values)):
        return None
    try:
        return aggregate.fold(values, errors, separator)
    except ExpressionError:
        return None


# ---------------------------------------------------------------------- MEDIAN for pyoxigraph


class MedianAccumulator:
    """MEDIAN as a pyoxigraph custom aggregate (``custom_aggregate_functions={NamedNode(MEDIAN_IRI):
    MedianAccumulator}``, the query writing ``<urn:cqels:aggregate:median>(expr)``), so that
    re-evaluation computes the same MEDIAN as the operators. pyoxigraph itself makes the aggregate
    unbound when an argument is an error or unbound, as :func:`finish` does; it has no DISTINCT
    form for custom aggregates."""

    def __init__(self) -> None:
        self.values: list = []

    def accumulate(self, term) -> None:
        self.values.append(term)

    def finish(self):
        return finish("MEDIAN", sorted(self.values, key=value_key), 0)


CUSTOM_AGGREGATES = {NamedNode(MEDIAN_IRI): MedianAccumulator}
"""``custom_aggregate_functions`` for ``pyoxigraph.Store.query`` on ``to_sparql`` text."""
