"""The ORDER BY tie-break both evaluation modes of a continuous query share.

SPARQL leaves the relative order of solutions that ORDER BY does not separate to the engine, so
``ORDER BY … LIMIT k`` (and LIMIT without ORDER BY) may legally keep different solutions in two
engines, and the emissions of a plain ORDER BY may list ties in different orders. A continuous
query breaks ties the same way in both modes (docs/python-api.md, "Continuous queries from Python"): after the query's own
conditions, by the SELECT's projected variables in projection order, ascending (§15.1 order,
``runtime.expressions.order_key``). Solutions still tied after that project identically, so
whichever of them a slice keeps, the slice's rows are the same.

``break_ties(pattern)`` writes that order into the algebra: each ``ORDER BY`` right under a
projection gets the tie-break conditions appended, and each ``LIMIT``/``OFFSET`` over a
projection without ``ORDER BY`` gets an ``ORDER BY`` of the tie-break alone. The recompute
evaluator and the static caches run that algebra; the incremental operators (``operators._topk`` and its twin)
compute the same order themselves.
"""

from __future__ import annotations

from dataclasses import replace

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import bottom_up
from cqels_endpoint.query import ast
from cqels_endpoint.terms import Var


def tie_break(variables: tuple[Var, ...]) -> tuple[ast.OrderCondition, ...]:
    """The ascending conditions on ``variables`` that follow a query's own ORDER BY conditions."""
    return tuple(ast.OrderCondition(var) for var in variables)


def break_ties(pattern: n.Pattern) -> n.Pattern:
    """``pattern`` with every ORDER BY under a projection, and every slice, in the tie-broken order."""

    def rewrite(node):
        match node:
            case n.Project(variables, n.OrderBy(conditions, inner) as order):
                ordered = replace(order, conditions=conditions + tie_break(variables))
                return replace(node, input=ordered)
            case n.Slice(input=inner):
                return replace(node, input=_ordered(inner))
        return node

    return bottom_up(pattern, rewrite)


def _ordered(pattern: n.Pattern) -> n.Pattern:
    """The input of a slice, sorted by the tie-break where it has no ORDER BY of its own."""
    match pattern:
        case n.Distinct(inner) | n.Reduced(inner):
            return replace(pattern, input=_ordered(inner))
        case n.Project(variables, inner) if not isinstance(inner, n.OrderBy):
            return replace(pattern, input=n.OrderBy(tie_break(variables), inner, span=pattern.span))
    return pattern
