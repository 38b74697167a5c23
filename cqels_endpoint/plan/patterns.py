"""The stream triple patterns of a continuous query: the unit that windows apply to.

A window applies to each triple pattern of a ``StreamPattern`` separately (``TRIPLES n`` counts
the triples matching *that* pattern, or in the cqels2 dialect the stream's statements, of which
each pattern sees those it matches: docs/ARCHITECTURE.md, "Windows and time"), so the engine
numbers the stream triple patterns of a query once, in a stable order, and every part of the
engine names them by that number:

- ids follow the pre-order walk of the algebra (``query.visit.walk``: parents before children,
  children left to right, EXISTS patterns included), then the triple order inside each
  ``StreamPattern``; two equal stream patterns at two places of the query get two sets of ids (a
  property path alternative over a stream is a ``Union`` of stream patterns: one set per branch);
- a triple pattern whose predicate is a property path with ``*``, ``+``, ``?`` or ``!`` (what
  is left of a path once the translation has split its sequences and alternatives) is one stream
  pattern too: its window holds the triples that can take part in the path (``path_links``)
  and the path is evaluated over that window graph;
- a stream triple enters a pattern's window when it has one of its ``predicates``, its
  ``constants`` and equal terms at its ``repeats`` (the engine routes triples by those, on term
  ids: ``runtime.routing``);
- a stream block named by a variable (``STREAM ?s [w] { … }``) reads every stream, ``?s`` bound to
  the stream each triple came from, unless static data restricts it: when a static sub-pattern
  (a cache) that binds ``?s`` in each of its solutions is joined with the block — an operand of a
  join around it, through filters, BINDs, UNION branches, the left side of OPTIONAL and MINUS and
  projections keeping ``?s`` — a triple of a stream it does not name can take part in no solution,
  and the pattern reads only the streams it names (``restricted_by``; the engine routes by them);
- ``map_stream_triples`` rebuilds an algebra replacing each stream triple pattern by a pattern of the
  caller's choice, visiting them in exactly that order (the recompute evaluator uses it to read each
  triple pattern from the named graph holding its window).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import map_children
from cqels_endpoint.algebra.variables import certainly_bound
from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import children, walk
from cqels_endpoint.query.windows import WindowConfig
from cqels_endpoint.terms import IRI, BlankNode, Var


@dataclass(frozen=True)
class StreamTriple:
    """One triple pattern of one stream block, with the window that applies to it.

    ``id`` is its index in ``stream_triples(query)``; ``source`` the ``StreamPattern`` it comes from.
    The predicate of ``triple`` is a variable, an IRI or a property path (``is_path``). ``stream``
    is a variable for ``STREAM ?s``: ``restricted_by`` then holds the static sub-patterns that name
    the streams it reads (none: every stream; module docstring).
    """

    id: int
    stream: IRI | Var
    window: WindowConfig
    triple: ast.TriplePattern
    window_name: IRI | None = None
    source: n.StreamPattern | None = None
    restricted_by: tuple[n.StaticPattern, ...] = ()

    @property
    def variable(self) -> Var | None:
        """The variable naming the stream (``STREAM ?s``), None for a stream named by its IRI."""
        return self.stream if isinstance(self.stream, Var) else None

    @property
    def is_path(self) -> bool:
        return not isinstance(self.triple.predicate, (IRI, Var))

    @property
    def pattern(self) -> n.Pattern:
        """This triple pattern alone in the algebra: a one-triple BGP, or a ``Path``."""
        if self.is_path:
            return n.Path(self.triple.subject, self.triple.predicate, self.triple.object, span=self.triple.span)
        return n.BGP((self.triple,), span=self.triple.span)

    @cached_property
    def predicates(self) -> frozenset[ox.NamedNode] | None:
        """The predicates a matching triple may have (None: any): the pattern's constant predicate,
        or a path's links (a path with a zero-length part or a negated set takes any triple: its ends
        are not looked at, since a path also runs through other nodes)."""
        if self.is_path:
            links = path_links(self.triple.predicate)
            return None if links is None else frozenset(constant_term(iri) for iri in links)
        predicate = self.triple.predicate
        return None if isinstance(predicate, (Var, BlankNode)) else frozenset((constant_term(predicate),))

    @cached_property
    def constants(self) -> tuple[tuple[int, ox.NamedNode | ox.Literal], ...]:
        """``(position, term)`` of each constant of a triple pattern (none for a path): a matching
        triple holds those terms there."""
        if self.is_path:
            return ()
        positions = (self.triple.subject, self.triple.predicate, self.triple.object)
        return tuple((i, constant_term(x)) for i, x in enumerate(positions) if not isinstance(x, (Var, BlankNode)))

    @cached_property
    def repeats(self) -> tuple[tuple[int, int], ...]:
        """Pairs of positions holding the same variable or blank node (``?x :p ?x``): a matching
        triple holds equal terms there (blank nodes of the pattern are variables, SPARQL §18.3:
        they are existential in a BGP); none for a path."""
        if self.is_path:
            return ()
        positions = (self.triple.subject, self.triple.predicate, self.triple.object)
        first: dict[object, int] = {}
        pairs = []
        for i, x in enumerate(positions):
            if isinstance(x, (Var, BlankNode)):
                if x in first:
                    pairs.append((first[x], i))
                else:
                    first[x] = i
        return tuple(pairs)


def stream_triples(query: n.AlgebraQuery | n.Pattern) -> list[StreamTriple]:
    """The stream triple patterns of ``query`` (an ``AlgebraQuery`` or a bare pattern), id = index."""
    pattern = query.pattern if isinstance(query, n.AlgebraQuery) else query
    restrictions = _restrictions(pattern)
    found: list[StreamTriple] = []
    for node in walk(pattern):
        if isinstance(node, n.StreamPattern):
            found.extend(_split(node, len(found), restrictions.get(id(node), ())))
    return found


def _split(pattern: n.StreamPattern, first_id: int, restricted_by: tuple[n.StaticPattern, ...] = ()) -> list[StreamTriple]:
    return [
        StreamTriple(first_id + i, pattern.stream, pattern.window, triple, pattern.window_name, pattern, restricted_by)
        for i, triple in enumerate(pattern.triples)
    ]


def _restrictions(pattern: n.Pattern) -> dict[int, tuple[n.StaticPattern, ...]]:
    """For each ``STREAM ?s`` block (by ``id``) restricted wherever it occurs, the static caches
    restricting it (module docstring)."""
    places: dict[int, list[tuple[n.StaticPattern, ...]]] = {}

    def visit(node: object, around: dict[Var, tuple[n.StaticPattern, ...]]) -> None:
        # ``around``: per variable, the caches a row binding it must match further up.
        if isinstance(node, n.StreamPattern) and isinstance(node.stream, Var):
            places.setdefault(id(node), []).append(around.get(node.stream, ()))
            return
        for child in children(node):
            visit(child, _passed(node, child, around))

    visit(pattern, {})
    return {key: tuple(dict.fromkeys(c for found in seen for c in found)) for key, seen in places.items() if all(seen)}


def _passed(node: object, child: object, around: dict[Var, tuple[n.StaticPattern, ...]]) -> dict:
    """What ``around`` becomes below ``node`` for its ``child``: kept where each row of the child
    reaches the join around unchanged, else nothing (a group, a slice, OPTIONAL's right side, an
    EXISTS: a row that cannot join there still changes the result)."""
    match node:
        case n.Join(operands):
            own = dict(around)
            for other in operands:
                if other is not child and isinstance(other, n.StaticPattern):
                    for var in certainly_bound(other):
                        own[var] = (*own.get(var, ()), other)
            return own
        case n.Filter(input=inner) | n.Extend(input=inner) | n.Distinct(inner) | n.Reduced(inner) | n.OrderBy(input=inner):
            return around if child is inner else {}
        case n.Union():
            return around
        case n.LeftJoin(left=left) | n.Minus(left=left):
            return around if child is left else {}
        case n.Project(variables, inner):
            return {var: found for var, found in around.items() if var in variables} if child is inner else {}
        case n.Graph(name, inner):
            return around if child is inner and isinstance(name, IRI) else {}
    return {}


def map_stream_triples(query: n.AlgebraQuery, replace: Callable[[StreamTriple], n.Pattern]) -> n.AlgebraQuery:
    """``query`` with each stream triple pattern replaced by ``replace(stream_triple)``.

    A ``StreamPattern`` of several triples becomes the ``Join`` of their replacements (a BGP is the
    join of its triple patterns, blank nodes being shared variables). The ids handed to ``replace``
    are those of ``stream_triples(query)``.
    """
    next_id = 0

    def rebuild(node):
        nonlocal next_id
        if isinstance(node, n.StreamPattern):
            parts = [replace(st) for st in _split(node, next_id)]
            next_id += len(parts)
            if not parts:
                return n.BGP(())
            return parts[0] if len(parts) == 1 else n.Join(tuple(parts), span=node.span)
        return map_children(node, rebuild)

    return map_children(query, rebuild)


def path_links(path: ast.Path) -> frozenset[IRI] | None:
    """The predicates a triple must have to take part in ``path``; None when any triple can (a
    negated set matches unlisted predicates, and a zero-length part every node of the graph)."""
    match path:
        case IRI():
            return frozenset((path,))
        case ast.PathInverse(inner):
            return path_links(inner)
        case ast.PathSequence(parts) | ast.PathAlternative(parts):
            links: set[IRI] = set()
            for part in parts:
                found = path_links(part)
                if found is None:
                    return None
                links |= found
            return frozenset(links)
        case ast.PathMod(inner, modifier):
            return None if modifier in "*?" else path_links(inner)
        case ast.PathNegatedSet():
            return None
    raise TypeError(f"not a property path: {path!r}")
