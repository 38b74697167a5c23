"""Filter push-down: each conjunct of a filter moves as close to the patterns it reads as is safe.

A filter ``Filter(c1 && c2 …, P)`` is split into its conjuncts (a solution passes ``a && b`` iff
it passes ``a`` and ``b``, errors included). Each *movable* conjunct then travels down:

- into one operand of a ``Join`` that *certainly binds* every variable of the conjunct the join
  can bind at all (the first such operand without streams if there is one, else the first)
  (variables inside EXISTS patterns included, since EXISTS substitutes the solution's bindings
  into its pattern): the operand's solutions agree with the joined ones on those variables, so
  the conjunct has the same value there. A variable that no solution of the join can bind (only
  inside an EXISTS pattern, or hidden in a sub-select) is unbound in both places, so it does not
  hold the conjunct back;
- into the left side of a ``LeftJoin`` under the same condition, never into its right side (that
  would turn dropped rows into unextended rows instead of dropping them);
- into the left side of a ``Minus``, and into both sides of a ``Union``, always: their solutions
  are solutions of those sides, unchanged;
- through an ``Extend`` whose variable the conjunct does not mention;
- into a ``Filter`` below (filters commute).

It stops anywhere else (``Graph`` changes the active graph EXISTS would see; ``Project``,
``Group``, ``Slice``… change which solutions or variables exist) and stays above that node.

Not movable at all, kept exactly where they were:

- conjuncts using ``BOUND``, ``COALESCE`` or ``IF``: they exist to observe unbound variables and
  errors, so their value is only preserved if "certainly bound" is exactly right; a conservative
  pass does not bet correctness on that analysis;
- conjuncts using ``RAND``, ``UUID``, ``STRUUID`` or ``BNODE``: evaluated once per operand
  solution instead of once per joined solution they would decide several rows at once.
"""

from __future__ import annotations

import dataclasses

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import map_children
from cqels_endpoint.algebra.variables import certainly_bound, contains_stream, in_scope, mentioned
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import Node

_UNBOUND_SENSITIVE = frozenset({"BOUND", "COALESCE", "IF"})
_NON_DETERMINISTIC = frozenset({"RAND", "UUID", "STRUUID", "BNODE"})


def push_filters(query: n.AlgebraQuery) -> n.AlgebraQuery:
    """The query with every movable filter conjunct pushed down as far as it safely goes."""
    return dataclasses.replace(query, pattern=_push(query.pattern, ()))


def conjuncts(expr: n.Expression) -> list[n.Expression]:
    """``a && (b && c)`` → ``[a, b, c]``"""
    if isinstance(expr, ast.BinaryOp) and expr.op == "&&":
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


def _movable(expr: n.Expression) -> bool:
    return all(not (isinstance(node, ast.BuiltinCall) and node.name in _UNBOUND_SENSITIVE | _NON_DETERMINISTIC) for node in walk(expr))


def _filter(exprs: list[n.Expression] | tuple[n.Expression, ...], pattern: n.Pattern, span=None) -> n.Pattern:
    if not exprs:
        return pattern
    return n.Filter(tuple(exprs), pattern, span=span if span is not None else exprs[0].span)


def _push(pattern: n.Pattern, pending: tuple[n.Expression, ...]) -> n.Pattern:
    """``pattern`` with ``pending`` (movable conjuncts from above) placed at or below it."""
    match pattern:
        case n.Filter(exprs, inner):
            split = [c for e in exprs for c in conjuncts(_in_expression(e))]
            fixed = [c for c in split if not _movable(c)]
            movable = tuple(c for c in split if _movable(c))
            return _filter(fixed, _push(inner, movable + pending), pattern.span)
        case n.Join(operands):
            placed: list[list[n.Expression]] = [[] for _ in operands]
            here = []
            bound = [certainly_bound(operand) for operand in operands]
            static = [not contains_stream(operand) for operand in operands]
            scope = frozenset(in_scope(pattern))
            for conjunct in pending:
                needed = mentioned(conjunct) & scope
                candidates = [i for i, b in enumerate(bound) if needed <= b]
                # A static operand first: there the filter is evaluated once, inside the cache.
                target = next((i for i in candidates if static[i]), candidates[0] if candidates else None)
                (here if target is None else placed[target]).append(conjunct)
            pushed = tuple(_push(operand, tuple(p)) for operand, p in zip(operands, placed))
            return _filter(here, dataclasses.replace(pattern, operands=pushed))
        case n.LeftJoin(left, right, exprs):
            bound, scope = certainly_bound(left), frozenset(in_scope(pattern))
            down: list[n.Expression] = []
            here = []
            for conjunct in pending:
                (down if mentioned(conjunct) & scope <= bound else here).append(conjunct)
            rebuilt = dataclasses.replace(
                pattern,
                left=_push(left, tuple(down)),
                right=_push(right, ()),
                exprs=tuple(_in_expression(e) for e in exprs),
            )
            return _filter(here, rebuilt)
        case n.Minus(left, right):
            return dataclasses.replace(pattern, left=_push(left, pending), right=_push(right, ()))
        case n.Union(left, right):
            return dataclasses.replace(pattern, left=_push(left, pending), right=_push(right, pending))
        case n.Extend(var, expr, inner):
            down = tuple(c for c in pending if var not in mentioned(c))
            here = [c for c in pending if var in mentioned(c)]
            rebuilt = dataclasses.replace(pattern, expr=_in_expression(expr), input=_push(inner, down))
            return _filter(here, rebuilt)
    return _filter(pending, map_children(pattern, _in_child))


def _in_child(child: Node) -> Node:
    """Pushes inside a child that is a pattern, or inside the EXISTS patterns of any other child."""
    if isinstance(child, n.PATTERN_TYPES):
        return _push(child, ())
    return _in_expression(child)


def _in_expression(expr: Node) -> Node:
    if isinstance(expr, n.Exists):
        return dataclasses.replace(expr, pattern=_push(expr.pattern, ()))
    return map_children(expr, _in_expression)
