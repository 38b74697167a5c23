"""Variable analysis of algebra patterns: in-scope variables (spec §18.2.1) and certain bindings."""

from __future__ import annotations

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import Var


def in_scope(pattern: n.Pattern) -> tuple[Var, ...]:
    """The variables that may be bound by a solution of ``pattern``, in order of first appearance.

    Follows §18.2.1: the right side of MINUS and the inside of a sub-select other than its
    projection are not in scope; EXISTS patterns never are.
    """
    found: dict[Var, None] = {}
    _collect_scope(pattern, found)
    return tuple(found)


def _collect_scope(pattern: n.Pattern, found: dict[Var, None]) -> None:
    match pattern:
        case n.BGP(triples) | n.StreamPattern(triples=triples):
            if isinstance(pattern, n.StreamPattern) and isinstance(pattern.stream, Var):
                found.setdefault(pattern.stream)
            for triple in triples:
                for term in (triple.subject, triple.predicate, triple.object):
                    if isinstance(term, Var):
                        found.setdefault(term)
        case n.Path(subject, _, obj):
            for term in (subject, obj):
                if isinstance(term, Var):
                    found.setdefault(term)
        case n.Seq(steps):
            # A gap step binds nothing: only the bound steps' event variables are in scope.
            for step in steps:
                if step.bound:
                    for var in n.event_vars(step):
                        found.setdefault(var)
        case n.Join(operands):
            for operand in operands:
                _collect_scope(operand, found)
        case n.LeftJoin(left, right) | n.Union(left, right):
            _collect_scope(left, found)
            _collect_scope(right, found)
        case n.Minus(left, _):
            _collect_scope(left, found)
        case n.Graph(name, inner):
            if isinstance(name, Var):
                found.setdefault(name)
            _collect_scope(inner, found)
        case n.Service(pattern=inner):
            # SERVICE ?x does not bind ?x: it must be bound by the patterns before it.
            _collect_scope(inner, found)
        case n.Extend(var, _, inner):
            _collect_scope(inner, found)
            found.setdefault(var)
        case n.Group(keys, aggregates, _):
            for var, _expr in keys:
                if var is not None:
                    found.setdefault(var)
            for var, _aggregate in aggregates:
                found.setdefault(var)
        case n.Table(variables, _) | n.Project(variables, _):
            for var in variables:
                found.setdefault(var)
        case n.Filter(input=inner) | n.Distinct(inner) | n.Reduced(inner) | n.OrderBy(input=inner):
            _collect_scope(inner, found)
        case n.Slice(input=inner) | n.StaticPattern(pattern=inner):
            _collect_scope(inner, found)
        case _:
            raise TypeError(f"not an algebra pattern: {pattern!r}")


def certainly_bound(pattern: n.Pattern) -> frozenset[Var]:
    """The variables bound in *every* solution of ``pattern`` (an under-approximation).

    Used to decide where a filter may move: a filter whose variables are all certainly bound by an
    operand sees the same values there as above the join. ``Extend`` variables are not certain (the
    expression may raise an error and leave them unbound), nor are the results of ``Group``.
    """
    match pattern:
        case n.BGP() | n.StreamPattern() | n.Path() | n.Seq():
            return frozenset(in_scope(pattern))
        case n.Join(operands):
            return frozenset().union(*(certainly_bound(operand) for operand in operands))
        case n.Filter(exprs, inner):
            return certainly_bound(inner) | frozenset(v for e in exprs for v in required_by(e))
        case n.LeftJoin(left=inner) | n.Minus(left=inner) | n.Extend(input=inner):
            return certainly_bound(inner)
        case n.Union(left, right):
            return certainly_bound(left) & certainly_bound(right)
        case n.Graph(name, inner):
            own = {name} if isinstance(name, Var) else set()
            return certainly_bound(inner) | own
        case n.Service(pattern=inner, silent=silent):
            # A failing SERVICE SILENT gives one empty solution.
            return frozenset() if silent else certainly_bound(inner)
        case n.Table(variables, rows):
            return frozenset(var for i, var in enumerate(variables) if all(row[i] is not None for row in rows))
        case n.Project(variables, inner):
            return certainly_bound(inner) & frozenset(variables)
        case n.Distinct(inner) | n.Reduced(inner) | n.OrderBy(input=inner) | n.Slice(input=inner):
            return certainly_bound(inner)
        case n.StaticPattern(pattern=inner):
            return certainly_bound(inner)
        case n.Group():
            return frozenset()
    raise TypeError(f"not an algebra pattern: {pattern!r}")


# Built-ins that can succeed with an unbound or failing argument (§17.2: BOUND, COALESCE, IF's branches).
_ERROR_TOLERANT = frozenset({"BOUND", "COALESCE", "IF"})


def required_by(expr: n.Expression) -> frozenset[Var]:
    """The variables bound in every mapping on which ``expr`` is true (an under-approximation).

    So a mapping that passes ``FILTER (expr)`` binds these variables: after a HAVING like
    ``?pE > 0`` the group keys are certain, and a join on them can be hashed.
    """
    match expr:
        case ast.BinaryOp("&&", left, right):
            return required_by(left) | required_by(right)
        case ast.BinaryOp("||", left, right):
            return required_by(left) & required_by(right)
        case ast.UnaryOp("!", operand):
            # true when the operand is false: it has a value.
            return _strict(operand)
        case ast.BuiltinCall("BOUND", (Var() as var,)):
            return frozenset((var,))
    # Any other expression is true only if it has a value.
    return _strict(expr)


def _strict(expr: n.Expression) -> frozenset[Var]:
    """The variables whose being unbound makes ``expr`` an error (§17.2: an unbound variable is an
    error, and errors propagate through every operator and function but ``&&``/``||`` — ``false &&
    error`` is false —, BOUND, COALESCE and IF's branches)."""
    match expr:
        case Var():
            return frozenset((expr,))
        case ast.BinaryOp("&&" | "||", left, right):
            return _strict(left) & _strict(right)
        case ast.BinaryOp(_, left, right):
            return _strict(left) | _strict(right)
        case ast.UnaryOp(_, operand):
            return _strict(operand)
        case ast.In(expr=inner):
            return _strict(inner)
        case ast.BuiltinCall("IF", (condition, *_)):
            return _strict(condition)
        case ast.BuiltinCall(name, args) if name not in _ERROR_TOLERANT:
            return frozenset().union(*(_strict(arg) for arg in args))
        case ast.FunctionCall(args=args):
            return frozenset().union(*(_strict(arg) for arg in args))
    return frozenset()


def mentioned(node: object) -> frozenset[Var]:
    """Every variable occurring anywhere in ``node``, EXISTS patterns and sub-selects included."""
    return frozenset(x for x in walk(node) if isinstance(x, Var))


def contains_stream(node: object) -> bool:
    """Whether ``node`` reads a stream anywhere, EXISTS patterns in its expressions included."""
    return any(isinstance(x, n.StreamPattern) for x in walk(node))


def triple_vars(triple: ast.TriplePattern) -> tuple[Var, ...]:
    return tuple(t for t in (triple.subject, triple.predicate, triple.object) if isinstance(t, Var))
