"""The static/stream split: maximal sub-patterns without streams become ``StaticPattern`` caches.

A continuous query re-evaluates its stream patterns at every tick, but the parts that read only
the static store give the same mappings each time: they are materialised once (a *cached
mapping*) and the stream operands probe them on the variables they share.

- A sub-tree without any stream node (an OPTIONAL over static data, a static sub-select, a
  ``GRAPH`` block, a static ``EXISTS`` pattern…) becomes one ``StaticPattern``, whole.
- Within a ``Join`` that reads streams (nested joins count as one multiway join and come out
  flat), the static operands are grouped into maximal
  *connected* sub-patterns: two static operands belong to one cache when they share a variable
  (directly or through other static operands). The triples of a static BGP are considered one by
  one, so a BGP whose triples fall apart into unconnected groups gives one cache per group
  (triples sharing a blank node stay together: a blank node is an existential over its whole BGP).
  Unconnected static parts are never cached together, which would store their cross product.
- ``join_vars`` of a cache are its variables that the patterns around it can also bind: the other
  operands of its join, the other side of a LeftJoin or Minus, the graph variable of an enclosing
  ``GRAPH``, the solutions an EXISTS pattern is substituted with; the projection of a sub-select
  limits what passes further out. Variables only read by filters, SELECT expressions or the
  projection above are not join variables.

A query without any stream is returned unchanged. Runs last, after the filters have moved into
the operands they read (a filter on static variables then lies inside its cache).
"""

from __future__ import annotations

import dataclasses

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import map_children
from cqels_endpoint.algebra.variables import contains_stream, in_scope, mentioned, triple_vars
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import BlankNode, Node, Var


def split_static(query: n.AlgebraQuery) -> n.AlgebraQuery:
    """The query with its maximal static sub-patterns wrapped as ``StaticPattern`` caches."""
    if not contains_stream(query.pattern):
        return query
    return dataclasses.replace(query, pattern=_split(query.pattern, frozenset()))


def streams_and_caches(node: object) -> tuple[list[n.StreamPattern], list[n.StaticPattern]]:
    """The stream patterns and the static caches of a (split) plan, in printing order."""
    found = list(walk(node))
    return (
        [x for x in found if isinstance(x, n.StreamPattern)],
        [x for x in found if isinstance(x, n.StaticPattern)],
    )


def _static(pattern: n.Pattern, outside: frozenset[Var]) -> n.StaticPattern:
    if isinstance(pattern, n.StaticPattern):
        return pattern  # already a cache (the pass is idempotent)
    join_vars = tuple(v for v in in_scope(pattern) if v in outside)
    return n.StaticPattern(pattern, join_vars, span=pattern.span)


def _correlated(value) -> frozenset[Var]:
    """Variables of the EXISTS patterns in ``value`` (an expression or nested tuples of them):
    the solutions are substituted into those patterns."""
    if isinstance(value, tuple):
        return frozenset().union(*(_correlated(item) for item in value))
    if not isinstance(value, Node):
        return frozenset()
    return frozenset().union(*(mentioned(x.pattern) for x in walk(value) if isinstance(x, n.Exists)))


def _split(pattern: n.Pattern, outside: frozenset[Var]) -> n.Pattern:
    """``pattern`` split; ``outside`` holds the variables the patterns around it may bind."""
    if not contains_stream(pattern):
        return _static(pattern, outside)
    replace = dataclasses.replace
    match pattern:
        case n.StreamPattern() | n.Seq():
            return pattern
        case n.Join():
            return _split_join(pattern, outside)
        case n.LeftJoin(left, right, exprs):
            left_scope, right_scope = frozenset(in_scope(left)), frozenset(in_scope(right))
            return replace(
                pattern,
                left=_split(left, outside | right_scope),
                right=_split(right, outside | left_scope),
                exprs=_in_expressions(exprs, left_scope | right_scope),
            )
        case n.Minus(left, right):
            # The right side's solutions are only compared with the left's, never seen outside.
            left_scope, right_scope = frozenset(in_scope(left)), frozenset(in_scope(right))
            return replace(pattern, left=_split(left, outside | right_scope), right=_split(right, left_scope))
        case n.Union(left, right):
            return replace(pattern, left=_split(left, outside), right=_split(right, outside))
        case n.Filter(exprs, inner):
            scope = frozenset(in_scope(inner))
            return replace(
                pattern, exprs=_in_expressions(exprs, scope), input=_split(inner, outside | _correlated(exprs))
            )
        case n.Extend(_, expr, inner):
            scope = frozenset(in_scope(inner))
            return replace(
                pattern, expr=_in_expressions(expr, scope), input=_split(inner, outside | _correlated(expr))
            )
        case n.OrderBy(conditions, inner):
            scope = frozenset(in_scope(inner))
            return replace(
                pattern,
                conditions=_in_expressions(conditions, scope),
                input=_split(inner, outside | _correlated(conditions)),
            )
        case n.Graph(name, inner) | n.Service(name, inner):
            own = frozenset({name}) if isinstance(name, Var) else frozenset()
            return replace(pattern, pattern=_split(inner, outside | own))
        case n.Group(keys, aggregates, inner):
            # The group's output is new solutions; nothing outside joins with its input directly.
            scope = frozenset(in_scope(inner))
            return replace(
                pattern,
                keys=_in_expressions(keys, scope),
                aggregates=_in_expressions(aggregates, scope),
                input=_split(inner, _correlated((keys, aggregates))),
            )
        case n.Project(variables, inner):
            return replace(pattern, input=_split(inner, outside & frozenset(variables)))
        case n.Distinct(inner) | n.Reduced(inner) | n.Slice(input=inner):
            return replace(pattern, input=_split(inner, outside))
    raise TypeError(f"cannot split {type(pattern).__name__}")


def _in_expressions(value, scope: frozenset[Var]):
    """Splits the EXISTS patterns inside expressions; they are correlated with ``scope``."""

    def convert(node: Node) -> Node:
        if isinstance(node, n.Exists):
            return dataclasses.replace(node, pattern=_split(node.pattern, scope))
        return map_children(node, convert)

    if isinstance(value, tuple):
        return tuple(_in_expressions(item, scope) for item in value)
    if isinstance(value, Node):
        return convert(value)
    return value


@dataclasses.dataclass
class _Atom:
    """One piece of the static side of a join: a whole operand, or one triple of a static BGP."""

    position: int
    rank: int
    node: n.Pattern | ast.TriplePattern
    links: frozenset


def _atoms(position: int, operand: n.Pattern) -> list[_Atom]:
    if isinstance(operand, n.BGP) and len(operand.triples) > 1:
        atoms = []
        for rank, triple in enumerate(operand.triples):
            blank = {(position, t) for t in (triple.subject, triple.object) if isinstance(t, BlankNode)}
            atoms.append(_Atom(position, rank, triple, frozenset(triple_vars(triple)) | blank))
        return atoms
    return [_Atom(position, 0, operand, frozenset(in_scope(operand)))]


def _components(atoms: list[_Atom]) -> list[list[_Atom]]:
    """Connected components of atoms sharing a variable (or a blank node of the same BGP)."""
    parent = list(range(len(atoms)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[object, int] = {}
    for i, atom in enumerate(atoms):
        for link in atom.links:
            if link in owner:
                parent[root(i)] = root(owner[link])
            else:
                owner[link] = i
    groups: dict[int, list[_Atom]] = {}
    for i, atom in enumerate(atoms):
        groups.setdefault(root(i), []).append(atom)
    return sorted(groups.values(), key=lambda group: (group[0].position, group[0].rank))


def _component_pattern(component: list[_Atom], operands: tuple[n.Pattern, ...]) -> n.Pattern:
    parts: list[n.Pattern] = []
    triples_by_operand: dict[int, list[ast.TriplePattern]] = {}
    for atom in component:
        if isinstance(atom.node, ast.TriplePattern):
            if atom.position not in triples_by_operand:
                triples_by_operand[atom.position] = []
                parts.append(atom.position)  # placeholder, filled below in operand order
            triples_by_operand[atom.position].append(atom.node)
        else:
            parts.append(atom.node)
    built: list[n.Pattern] = []
    for part in parts:
        if isinstance(part, int):
            original = operands[part]
            triples = tuple(triples_by_operand[part])
            span = original.span if triples == original.triples else n.cover(triples)
            built.append(n.BGP(triples, span=span))
        else:
            built.append(part)
    if len(built) == 1:
        return built[0]
    return n.Join(tuple(built), span=n.cover(built))


def _operands(join: n.Join) -> tuple[n.Pattern, ...]:
    """The operands of a join, those of directly nested joins included: one multiway join."""
    return tuple(x for o in join.operands for x in (_operands(o) if isinstance(o, n.Join) else (o,)))


def _split_join(join: n.Join, outside: frozenset[Var]) -> n.Join:
    operands = _operands(join)
    # An instance table is a cache of its own: its rows change with the instances, not the store.
    atoms = [
        atom
        for i, o in enumerate(operands)
        if not contains_stream(o) and not isinstance(o, n.InstanceTable)
        for atom in _atoms(i, o)
    ]
    pieces: list[tuple[tuple[int, int], n.Pattern, frozenset[Var], bool]] = []
    for i, operand in enumerate(operands):
        if contains_stream(operand):
            pieces.append(((i, 0), operand, frozenset(in_scope(operand)), True))
        elif isinstance(operand, n.InstanceTable):
            pieces.append(((i, 0), operand, frozenset(in_scope(operand)), False))
    for component in _components(atoms):
        pattern = _component_pattern(component, operands)
        key = (component[0].position, component[0].rank)
        pieces.append((key, pattern, frozenset(in_scope(pattern)), False))
    pieces.sort(key=lambda piece: piece[0])

    result = []
    for index, (_, pattern, _, has_stream) in enumerate(pieces):
        around = outside.union(*(scope for j, (_, _, scope, _) in enumerate(pieces) if j != index))
        result.append(_split(pattern, around) if has_stream else _static(pattern, around))
    return dataclasses.replace(join, operands=tuple(result))
