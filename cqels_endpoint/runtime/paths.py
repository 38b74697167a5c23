"""Property paths evaluated over a set of triples, as SPARQL 1.1 §18.4 defines them.

The path operators of a continuous query (``operators/path.py`` and its twin) keep the triples of a
window and ask this module for the solutions of ``subject path object`` over them. Terms are
whatever the triples hold (term ids in the operators, pyoxigraph terms in the tests); ``compile_path``
turns the AST path into steps whose IRIs are already mapped to such terms.

Semantics (§18.4), with ``x`` and ``y`` terms:

- a link ``:p`` matches the triples with predicate ``:p``; a negated set ``!(:a|:b)`` the triples
  whose predicate is none of those (the algebra keeps inverse members apart: ``!(^:a)`` is
  ``^!(:a)``); ``^P`` swaps the ends of ``P``;
- a sequence is the join of its parts on fresh variables and an alternative the union of its
  branches: both are bags, so a pair comes out once per way of matching it;
- ``P*``, ``P+`` and ``P?`` are sets: ``x P* ?y`` is the set ALP(x, P) of the nodes reachable from
  ``x`` in zero or more steps (``x`` itself always, even when ``x`` is in no triple), ``P+`` the
  nodes reachable in one or more steps (``x`` only through a cycle), ``P?`` ``x`` and its one-step
  successors;
- with a variable at both ends a path is evaluated from every node of the graph (every subject and
  object), so the zero-length part of ``?x P* ?y`` binds each node to itself; with a term at the
  object end only it is evaluated backwards from that term; the same variable at both ends keeps the
  pairs whose ends are equal.

Nothing is maintained incrementally here: ``TripleGraph`` is the indexed set of triples (triples
can be added and removed), and every call walks it afresh.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable

from cqels_endpoint.query import ast
from cqels_endpoint.terms import IRI

Term = Hashable
Triple = tuple  # (subject, predicate, object)


class TripleGraph:
    """A set of triples indexed for path steps: by predicate and subject/object, by subject and by
    object (for negated sets), and its nodes (terms in subject or object position)."""

    def __init__(self, triples: Iterable[Triple] = ()) -> None:
        self.forward: dict[Term, dict[Term, dict[Term, None]]] = {}  # p -> s -> {o}
        self.backward: dict[Term, dict[Term, dict[Term, None]]] = {}  # p -> o -> {s}
        self.out_edges: dict[Term, dict[tuple, None]] = {}  # s -> {(p, o)}
        self.in_edges: dict[Term, dict[tuple, None]] = {}  # o -> {(p, s)}
        self.nodes: Counter = Counter()  # node -> number of subject/object positions holding it
        self.size = 0
        for triple in triples:
            self.add(triple)

    def add(self, triple: Triple) -> None:
        s, p, o = triple
        targets = self.forward.setdefault(p, {}).setdefault(s, {})
        if o in targets:
            return
        targets[o] = None
        self.backward.setdefault(p, {}).setdefault(o, {})[s] = None
        self.out_edges.setdefault(s, {})[(p, o)] = None
        self.in_edges.setdefault(o, {})[(p, s)] = None
        self.nodes[s] += 1
        self.nodes[o] += 1
        self.size += 1

    def remove(self, triple: Triple) -> None:
        s, p, o = triple
        _discard(self.forward, p, s, o)
        _discard(self.backward, p, o, s)
        _discard_edge(self.out_edges, s, (p, o))
        _discard_edge(self.in_edges, o, (p, s))
        for node in (s, o):
            self.nodes[node] -= 1
            if not self.nodes[node]:
                del self.nodes[node]
        self.size -= 1

    def __len__(self) -> int:
        return self.size


def _discard(index: dict, first: Term, second: Term, third: Term) -> None:
    inner = index[first]
    targets = inner[second]
    del targets[third]
    if not targets:
        del inner[second]
        if not inner:
            del index[first]


def _discard_edge(index: dict, node: Term, edge: tuple) -> None:
    edges = index[node]
    del edges[edge]
    if not edges:
        del index[node]


# --------------------------------------------------------------------------- compiled paths
# Each step answers, for one node, the bag of nodes one evaluation of it reaches forwards (``x P ?y``)
# or backwards (``?x P y``), as a Counter node -> number of solutions.


class Step:
    """One compiled path expression."""

    def forward(self, graph: TripleGraph, x: Term) -> Counter:
        raise NotImplementedError

    def backward(self, graph: TripleGraph, y: Term) -> Counter:
        raise NotImplementedError


class Link(Step):
    def __init__(self, predicate: Term) -> None:
        self.predicate = predicate

    def forward(self, graph: TripleGraph, x: Term) -> Counter:
        return Counter(dict.fromkeys(graph.forward.get(self.predicate, {}).get(x, ()), 1))

    def backward(self, graph: TripleGraph, y: Term) -> Counter:
        return Counter(dict.fromkeys(graph.backward.get(self.predicate, {}).get(y, ()), 1))


class NegatedSet(Step):
    def __init__(self, excluded: frozenset) -> None:
        self.excluded = excluded

    def forward(self, graph: TripleGraph, x: Term) -> Counter:
        return Counter(o for p, o in graph.out_edges.get(x, ()) if p not in self.excluded)

    def backward(self, graph: TripleGraph, y: Term) -> Counter:
        return Counter(s for p, s in graph.in_edges.get(y, ()) if p not in self.excluded)


class Inverse(Step):
    def __init__(self, inner: Step) -> None:
        self.inner = inner

    def forward(self, graph: TripleGraph, x: Term) -> Counter:
        return self.inner.backward(graph, x)

    def backward(self, graph: TripleGraph, y: Term) -> Counter:
        return self.inner.forward(graph, y)


class Sequence(Step):
    def __init__(self, parts: tuple[Step, ...]) -> None:
        self.parts = parts

    def forward(self, graph: TripleGraph, x: Term) -> Counter:
        return _walk(graph, x, [part.forward for part in self.parts])

    def backward(self, graph: TripleGraph, y: Term) -> Counter:
        return _walk(graph, y, [part.backward for part in reversed(self.parts)])


def _walk(graph: TripleGraph, start: Term, steps: list[Callable[[TripleGraph, Term], Counter]]) -> Counter:
    """The join of the steps: each way through the intermediate nodes is one solution."""
    frontier = Counter({start: 1})
    for step in steps:
        reached: Counter = Counter()
        for node, ways in frontier.items():
            for target, count in step(graph, node).items():
                reached[target] += ways * count
        frontier = reached
    return frontier


class Alternative(Step):
    def __init__(self, parts: tuple[Step, ...]) -> None:
        self.parts = parts

    def forward(self, graph: TripleGraph, x: Term) -> Counter:
        total: Counter = Counter()
        for part in self.parts:
            total.update(part.forward(graph, x))
        return total

    def backward(self, graph: TripleGraph, y: Term) -> Counter:
        total: Counter = Counter()
        for part in self.parts:
            total.update(part.backward(graph, y))
        return total


class Repeat(Step):
    """``P*`` (``zero`` and ``unbounded``), ``P+`` (``unbounded``) or ``P?`` (``zero``): sets of nodes."""

    def __init__(self, inner: Step, zero: bool, unbounded: bool) -> None:
        self.inner = inner
        self.zero = zero
        self.unbounded = unbounded

    def forward(self, graph: TripleGraph, x: Term) -> Counter:
        return self._reach(graph, x, self.inner.forward)

    def backward(self, graph: TripleGraph, y: Term) -> Counter:
        return self._reach(graph, y, self.inner.backward)

    def _reach(self, graph: TripleGraph, start: Term, step: Callable[[TripleGraph, Term], Counter]) -> Counter:
        # ALP of §18.4: each node is visited once, so every reached node counts once.
        reached: dict[Term, None] = {start: None} if self.zero else {}
        if not self.unbounded:
            reached.update(dict.fromkeys(step(graph, start)))
            return Counter(dict.fromkeys(reached, 1))
        stack = [start]
        visited = {start} if self.zero else set()
        while stack:
            for target in step(graph, stack.pop()):
                if target not in visited:
                    visited.add(target)
                    reached[target] = None
                    stack.append(target)
        return Counter(dict.fromkeys(reached, 1))


def compile_path(path: ast.Path, term: Callable[[IRI], Term]) -> Step:
    """``path`` (the algebra's normal form or the parser's) as steps over the terms ``term(iri)`` gives."""
    match path:
        case IRI():
            return Link(term(path))
        case ast.PathInverse(inner):
            return Inverse(compile_path(inner, term))
        case ast.PathSequence(parts):
            return Sequence(tuple(compile_path(part, term) for part in parts))
        case ast.PathAlternative(parts):
            return Alternative(tuple(compile_path(part, term) for part in parts))
        case ast.PathMod(inner, modifier):
            return Repeat(compile_path(inner, term), zero=modifier in "*?", unbounded=modifier in "*+")
        case ast.PathNegatedSet(iris, inverse_iris):
            forward = NegatedSet(frozenset(term(iri) for iri in iris))
            if not inverse_iris:
                return forward
            inverse = Inverse(NegatedSet(frozenset(term(iri) for iri in inverse_iris)))
            return inverse if not iris else Alternative((forward, inverse))
    raise TypeError(f"not a property path: {path!r}")


def path_pairs(step: Step, graph: TripleGraph, subject: Term | None, obj: Term | None, same: bool = False) -> Counter:
    """The solutions of ``subject path obj`` over ``graph`` as a bag of (subject, object) pairs.

    ``subject``/``obj`` are a term or None for a variable; ``same`` when one variable stands at both
    ends (only pairs with equal ends are kept).
    """
    pairs: Counter = Counter()
    if subject is not None:
        for target, count in step.forward(graph, subject).items():
            if obj is None or target == obj:
                pairs[subject, target] += count
    elif obj is not None:
        for source, count in step.backward(graph, obj).items():
            pairs[source, obj] += count
    else:
        for node in graph.nodes:
            for target, count in step.forward(graph, node).items():
                if not same or target == node:
                    pairs[node, target] += count
    return pairs
