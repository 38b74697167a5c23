"""The text forms the R2S writers give terms: SPARQL 1.1 JSON bindings and N-Triples, and what a
CONSTRUCT template position is. Shared by ``engine.emission`` and its compiled twins
(``runtime/_r2s.pyx``), so neither imports the other."""

from __future__ import annotations

from collections.abc import Mapping

import pyoxigraph as ox

from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.runtime.term_kinds import TermKind
from cqels_endpoint.terms import BlankNode, Var

Term = ox.NamedNode | ox.BlankNode | ox.Literal
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

# What a CONSTRUCT template position is (``template_part``).
VARIABLE, BLANK, CONSTANT = range(3)


def term_json(term: Term | ox.Triple) -> dict:
    """A term as a SPARQL 1.1 JSON results binding (RDF 1.2 triple terms as ``"triple"``)."""
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        result = {"type": "literal", "value": term.value}
        if term.language:
            result["xml:lang"] = term.language
        elif term.datatype.value not in (XSD_STRING, RDF_LANG_STRING):
            result["datatype"] = term.datatype.value
        return result
    if isinstance(term, ox.Triple):
        parts = {"subject": term.subject, "predicate": term.predicate, "object": term.object}
        return {"type": "triple", "value": {k: term_json(v) for k, v in parts.items()}}
    raise TypeError(f"not an RDF term: {term!r}")


def ntriples_term(term: Term | ox.Triple) -> str:
    # str() of a Triple is "s p o", of a triple term in a triple "<<( s p o )>>".
    return f"<<( {term} )>>" if isinstance(term, ox.Triple) else str(term)


def template_part(term, positions: Mapping[str, int]) -> tuple[int, object, object]:
    """``(what, value, kind)`` of one template position: a variable's column (kind read per row), a
    blank node's label, or a constant's N-Triples text and kind (text None: no term)."""
    if isinstance(term, Var):
        column = positions.get(term.name)
        return (CONSTANT, None, None) if column is None else (VARIABLE, column, None)
    if isinstance(term, BlankNode):
        return BLANK, term.label, TermKind.BLANK_NODE
    try:
        constant = constant_term(term)
    except (TypeError, ValueError):
        return CONSTANT, None, None
    return CONSTANT, str(constant), TermKind.IRI if isinstance(constant, ox.NamedNode) else TermKind.LITERAL
