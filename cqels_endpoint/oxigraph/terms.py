"""Between the query AST's terms and pyoxigraph's terms."""

from __future__ import annotations

import pyoxigraph as ox

from cqels_endpoint.terms import IRI, XSD_STRING, Literal


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
