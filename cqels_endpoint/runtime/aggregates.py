"""SPARQL 1.1 aggregate semantics (§18.5) on values already extracted from a group's solutions.

Both aggregation operators — the incremental one (``operators.aggregate``) and its recomputing
twin (``operators.reference.aggregate``) — reduce a group to, per aggregate, the multiset of its
argument values that evaluated without error (sorted by :func:`value_key`; a set for DISTINCT)
plus the number of arguments that raised an error or were unbound. :func:`finish` turns that into
the aggregate's term, or None (unbound) where SPARQL says the aggregate is an error. The rules
follow pyoxigraph, the engine's recompute oracle:

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
  simple literal, or language-tagged when every value carries the same language tag.
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

from collections.abc import Sequence

from pyoxigraph import Literal

from cqels_endpoint.runtime import functions as fn
from cqels_endpoint.runtime.expressions import ExpressionError, order_key
from cqels_endpoint.runtime.functions import integer_literal

AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT", "MEDIAN")
_ZERO = integer_literal(0)


def value_key(term) -> tuple:
    """A total order on terms: ORDER BY order, ties between distinct terms broken by their N-Triples form."""
    return (order_key(term), str(term))


def is_numeric(term) -> bool:
    if not isinstance(term, Literal):
        return False
    kind, _rank, value = fn.literal_value(term)
    return kind == fn.KIND_NUMERIC and value is not fn.ILL_TYPED


def finish(name: str, values: Sequence, errors: int, separator: str | None = None):
    """The value of aggregate ``name`` over ``values`` (sorted by :func:`value_key`), ``errors``
    arguments having failed; None when the aggregate is an error (its variable stays unbound)."""
    if name == "COUNT":
        return integer_literal(len(values))
    if name == "SAMPLE":
        return values[0] if values else None
    if errors:
        return None
    try:
        if name == "SUM":
            return _sum(values)
        if name == "AVG":
            if not values:
                return _ZERO
            return fn.arithmetic("/", _sum(values), integer_literal(len(values)))
        if name == "MIN":
            return values[0] if values else None
        if name == "MAX":
            return values[-1] if values else None
        if name == "MEDIAN":
            # Numerics sort before every other literal and after IRIs and blank nodes: checking
            # both ends checks them all.
            if not values or not (is_numeric(values[0]) and is_numeric(values[-1])):
                return None
            return values[(len(values) - 1) // 2]
        if name == "GROUP_CONCAT":
            return _concat(values, " " if separator is None else separator)
    except ExpressionError:
        return None
    raise ValueError(f"unknown aggregate {name}")


def _sum(values: Sequence) -> Literal:
    total = _ZERO
    for value in values:
        total = fn.arithmetic("+", total, value)
    return total


def _concat(values: Sequence, separator: str) -> Literal:
    parts = []
    languages = set()
    for value in values:
        text, language = fn.string_value(value)
        parts.append(text)
        languages.add(language)
    text = separator.join(parts)
    if len(languages) == 1:
        (language,) = languages
        if language is not None:
            return Literal(text, language=language)
    return Literal(text)


# ---------------------------------------------------------------------- MEDIAN for pyoxigraph

MEDIAN_IRI = "urn:cqels:aggregate:median"


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
