"""SPARQL 1.1 aggregate semantics (§18.5) on values already extracted from a group's solutions.

Both aggregation operators — the incremental one (``operators._aggregate``) and its recomputing
twin (``operators.reference.aggregate``) — reduce a group to, per aggregate, the multiset of its
argument values that evaluated without error (sorted by :func:`value_key`; a set for DISTINCT)
plus the number of arguments that raised an error or were unbound. :func:`finish` turns that into
the aggregate's term by its row in ``AGGREGATES``, or None (unbound) where SPARQL says the
aggregate is an error. The rules follow pyoxigraph, the engine's recompute oracle:

- ``COUNT`` counts the values without error; ``COUNT(*)`` counts solutions.
- ``SUM``, ``AVG``, ``MIN``, ``MAX``, ``GROUP_CONCAT`` and ``MEDIAN`` are errors as soon as one
  argument is (an unbound variable included); ``SAMPLE`` ignores errors.
- Over no values: ``SUM`` and ``AVG`` are ``0`` (xsd:integer), ``GROUP_CONCAT`` is ``""``, ``COUNT``
  is ``0``, ``MIN``/``MAX``/``SAMPLE``/``MEDIAN`` are unbound.
- ``MIN``/``MAX`` order every term as ``ORDER BY`` does (``expressions.order_key``).

Choices where the spec leaves freedom, made so that both evaluation modes agree whatever order
solutions arrive and expire in:

- ``SUM``/``AVG`` add the values in :func:`value_key` order (exact for integers and decimals; for
  floats/doubles the result is that of this order, which may differ from pyoxigraph's in the last
  bits).
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

from collections.abc import Callable, Sequence
from typing import NamedTuple

from pyoxigraph import Literal, NamedNode

from cqels_endpoint.algebra.aggregates import MEDIAN_IRI
from cqels_endpoint.runtime import functions as fn
from cqels_endpoint.runtime.expressions import ExpressionError, order_key
from cqels_endpoint.runtime.functions import integer_literal

_ZERO = integer_literal(0)


def value_key(term) -> tuple:
    """A total order on terms: ORDER BY order, ties between distinct terms broken by their N-Triples form."""
    return (order_key(term), str(term))


def is_numeric(term) -> bool:
    if not isinstance(term, Literal):
        return False
    kind, _rank, value = fn.literal_value(term)
    return kind == fn.KIND_NUMERIC and value is not fn.ILL_TYPED


def _count(values: Sequence, separator: str | None) -> Literal:
    return integer_literal(len(values))


def _first(values: Sequence, separator: str | None):
    return values[0] if values else None


def _last(values: Sequence, separator: str | None):
    return values[-1] if values else None


def _sum(values: Sequence, separator: str | None = None) -> Literal:
    total = _ZERO
    for value in values:
        total = fn.arithmetic("+", total, value)
    return total


def _avg(values: Sequence, separator: str | None) -> Literal:
    if not values:
        return _ZERO
    return fn.arithmetic("/", _sum(values), integer_literal(len(values)))


def _median(values: Sequence, separator: str | None):
    # Numerics sort before every other literal and after IRIs and blank nodes: checking both ends
    # checks them all.
    if not values or not (is_numeric(values[0]) and is_numeric(values[-1])):
        return None
    return values[(len(values) - 1) // 2]


def _group_concat(values: Sequence, separator: str | None) -> Literal:
    return Literal((" " if separator is None else separator).join(fn.string_value(value)[0] for value in values))


class Aggregate(NamedTuple):
    """One aggregate: ``fold(values, separator)`` gives its term over the values sorted by
    :func:`value_key` (None: unbound; an ``ExpressionError`` also leaves it unbound)."""

    fold: Callable[[Sequence, str | None], Literal | None]
    strict: bool  # an argument in error (or unbound) makes the whole aggregate an error


AGGREGATES: dict[str, Aggregate] = {
    "COUNT": Aggregate(_count, strict=False),
    "SUM": Aggregate(_sum, strict=True),
    "AVG": Aggregate(_avg, strict=True),
    "MIN": Aggregate(_first, strict=True),
    "MAX": Aggregate(_last, strict=True),
    "SAMPLE": Aggregate(_first, strict=False),
    "GROUP_CONCAT": Aggregate(_group_concat, strict=True),
    "MEDIAN": Aggregate(_median, strict=True),
}
"""The aggregates a query may use, by upper-case name."""


def finish(name: str, values: Sequence, errors: int, separator: str | None = None):
    """The value of aggregate ``name`` over ``values`` (sorted by :func:`value_key`), ``errors``
    arguments having failed; None when the aggregate is an error (its variable stays unbound)."""
    aggregate = AGGREGATES.get(name)
    if aggregate is None:
        raise ValueError(f"unknown aggregate {name}")
    if errors and aggregate.strict:
        return None
    try:
        return aggregate.fold(values, separator)
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
