"""Between the public graph names (``str | None``) and pyoxigraph's graph names.

The public API names graphs by IRI string, ``None`` (``DEFAULT_GRAPH``) being the default graph;
a blank-node graph name (only N-Quads/TriG loads can make one) is written ``_:id``.
"""

from __future__ import annotations

import pyoxigraph as ox

DEFAULT_GRAPH: None = None

GraphTerm = ox.NamedNode | ox.BlankNode | ox.DefaultGraph


def graph_term(graph: str | None) -> GraphTerm:
    """The pyoxigraph graph name of a public graph name; ``ValueError`` for an invalid IRI."""
    if graph is None:
        return ox.DefaultGraph()
    if graph.startswith("_:"):
        return ox.BlankNode(graph[2:])
    return ox.NamedNode(graph)


def graph_name(term: GraphTerm) -> str | None:
    """The public name of a pyoxigraph graph name."""
    if isinstance(term, ox.DefaultGraph):
        return None
    if isinstance(term, ox.BlankNode):
        return "_:" + term.value
    return term.value
