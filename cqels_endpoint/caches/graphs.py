"""Which graphs of the store a static sub-pattern reads, within its query's dataset (SPARQL §13.2).

Two users, one answer: the rebuild manager asks which change events touch a cache
(``GraphsRead.touches``), the Spark export asks which quads of the store a build reads and whether
they go into the query's default graph, a named graph, or both (``in_default`` / ``in_named``).
Graphs are named as the store's change events name them (``static_store.convert.graph_name``):
None for the store's default graph, the IRI, or ``_:label`` for a blank-node graph name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import children
from cqels_endpoint.terms import IRI, Var


@dataclass(frozen=True)
class GraphsRead:
    """What a sub-pattern reads: the query's default graph (``default``), named graphs by IRI
    (``named``, from ``GRAPH <iri>``), every named graph (``all_named``, from ``GRAPH ?g``); and the
    query's dataset: ``from_graphs`` (None: no FROM, the default graph is the store's; else the
    default graph is the merge of these) and ``from_named`` (None: every named graph of the store;
    else exactly these)."""

    default: bool = False
    named: frozenset[str] = frozenset()
    all_named: bool = False
    from_graphs: frozenset[str] | None = None
    from_named: frozenset[str] | None = None

    def in_default(self, graph: str | None) -> bool:
        """Whether the triples of the store's ``graph`` are in the default graph the pattern reads."""
        if not self.default:
            return False
        return graph is None if self.from_graphs is None else graph in self.from_graphs

    def is_named(self, graph: str | None) -> bool:
        """Whether ``graph`` is a named graph of the query's dataset (whether or not it is read)."""
        return graph is not None and (self.from_named is None or graph in self.from_named)

    def in_named(self, graph: str | None) -> bool:
        """Whether the pattern reads the store's ``graph`` as a named graph."""
        return self.is_named(graph) and (self.all_named or graph in self.named)

    def touches(self, changed: Iterable[str | None]) -> bool:
        """Whether a write that changed the store's graphs ``changed`` can change the pattern's mappings."""
        return any(self.in_default(g) or self.in_named(g) for g in changed)

    def describe(self) -> str:
        parts = []
        if self.default:
            parts.append(
                "default graph" if self.from_graphs is None
                else "default graph = merge of " + (" ".join(f"<{g}>" for g in sorted(self.from_graphs)) or "nothing")
            )
        if self.all_named:
            parts.append(
                "every named graph" if self.from_named is None
                else "named graphs " + (" ".join(f"<{g}>" for g in sorted(self.from_named)) or "none")
            )
        else:
            parts.extend(f"<{g}>" for g in sorted(self.named) if self.is_named(g))
        return ", ".join(parts) or "no graph"


def dataset_of(query: n.AlgebraQuery) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """(FROM graphs, FROM NAMED graphs) of ``query``; (None, None) without a dataset clause, i.e.
    the store's default graph and all its named graphs. A clause of either kind replaces the whole
    dataset: FROM alone leaves no named graph, FROM NAMED alone an empty default graph."""
    clauses = [d for d in query.datasets if isinstance(d, ast.DatasetClause)]
    if not clauses:
        return None, None
    return (
        frozenset(d.iri.value for d in clauses if not d.named),
        frozenset(d.iri.value for d in clauses if d.named),
    )


def graphs_read(pattern: n.Pattern, query: n.AlgebraQuery) -> GraphsRead:
    """The graphs ``pattern`` (a static sub-pattern of ``query``) reads in ``query``'s dataset.

    Triple patterns and paths outside any ``GRAPH`` read the default graph; ``GRAPH <iri>`` reads
    that graph (even when empty: it still asks whether the graph exists); ``GRAPH ?g`` enumerates
    the named graphs, even for ``GRAPH ?g {}``, and whatever it holds reads one of them. EXISTS
    patterns inside expressions are reached because ``children`` looks into every field.
    """
    default = all_named = False
    named: set[str] = set()
    stack: list[tuple[object, bool]] = [(pattern, False)]
    while stack:
        node, in_graph = stack.pop()
        match node:
            case n.Graph(Var()):
                all_named = True
                continue
            case n.Graph(IRI(value), inner):
                named.add(value)
                stack.append((inner, True))
                continue
            case n.BGP(triples) if triples:
                default = default or not in_graph
            case n.Path():
                default = default or not in_graph
        stack.extend((child, in_graph) for child in children(node))
    from_graphs, from_named = dataset_of(query)
    return GraphsRead(default, frozenset(named), all_named, from_graphs, from_named)
