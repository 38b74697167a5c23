"""Flattens nested joins into one n-ary ``Join``: the shape of the multiway join operator.

``Join(Join(A, B), C)`` → ``Join(A, B, C)``; the join of solution multisets is associative, so this
changes nothing but the shape. A ``Filter`` between two joins stops the flattening (merging through
it would widen the filter's scope).
"""

from __future__ import annotations

import dataclasses

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import bottom_up
from cqels_endpoint.terms import Node


def flatten_joins(query: n.AlgebraQuery) -> n.AlgebraQuery:
    """The query with every join of joins merged into one n-ary join."""
    return dataclasses.replace(query, pattern=bottom_up(query.pattern, _flatten))


def _flatten(node: Node) -> Node:
    if not isinstance(node, n.Join) or not any(isinstance(o, n.Join) for o in node.operands):
        return node
    # Children were flattened first, so one level of unnesting is enough.
    operands = tuple(x for o in node.operands for x in (o.operands if isinstance(o, n.Join) else (o,)))
    return dataclasses.replace(node, operands=operands)
