"""Between the public graph names (``str | None``), the query AST's terms and pyoxigraph's terms.

The public API names graphs by IRI string, ``None`` (``DEFAULT_GRAPH``) being the default graph;
a blank-node graph name (only N-Quads/TriG loads can make one) is written ``_:id``.
"""

from __future__ import annotations

import pyoxigraph as ox

from cqels_endpoint.terms import IRI, XSD_STRING, Literal

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


def iri_term(iri: IRI) -> ox.NamedNode:
    """``ValueError`` when the IRI is relative (no base was given) or malformed."""
    return ox.NamedNode(iri.value)


def literal_term(literal: Literal) -> ox.Literal:
    if literal.language is not None:
        return ox.Literal(literal.value, language=literal.language)
    if literal.datatype is not None:
        return ox.Literal(literal.value, datatype=ox.NamedNode(literal.datatype))
    return ox.Literal(literal.value)


def constant_term(term: IRI | Literal) -> ox.NamedNode | ox.Literal:
    """An IRI or literal of the AST as a pyoxigraph term (blank nodes and variables need a context)."""
    return iri_term(term) if isinstance(term, IRI) else literal_term(term)


def ast_term(term: ox.NamedNode | ox.Literal) -> IRI | Literal:
    """A pyoxigraph IRI or literal as a term of the AST (``constant_term``'s inverse)."""
    if isinstance(term, ox.NamedNode):
        return IRI(term.value)
    if isinstance(term, ox.Literal):
        if term.language:
            return Literal(term.value, language=term.language)
        datatype = term.datatype.value
        # A simple literal is written without its datatype in the AST, as the parser makes it.
        return Literal(term.value, datatype=None if datatype == XSD_STRING else datatype)
    msg = f"only an IRI or a literal can be bound to a parameter, not {term!r}"
    raise TypeError(msg)
