"""CONSTRUCT templates instantiated on solution mappings (the rows R2S streams as triples).

Kept in pure Python: it works on decoded pyoxigraph terms, after R2S, where term construction by
pyoxigraph dominates and a compiled loop would not pay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pyoxigraph as ox

from cqels_endpoint.query.ast import TriplePattern
from cqels_endpoint.terms import IRI, BlankNode, Literal, Var
from cqels_endpoint.static_store.convert import constant_term

Term = ox.NamedNode | ox.BlankNode | ox.Literal


class ConstructTemplate:
    """The template of a CONSTRUCT query, ready to instantiate (SPARQL 1.1 §16.2).

    For every solution, each template triple is instantiated; a triple with an unbound variable or
    that would not be RDF (a literal subject, a non-IRI predicate) is left out, and each template
    blank node becomes a fresh blank node per solution. One call returns a set of triples (a graph),
    in first-instantiation order.

    >>> from cqels_endpoint.terms import IRI, Var
    >>> template = ConstructTemplate([TriplePattern(Var("s"), IRI("http://ex.org/p"), Var("o"))])
    >>> template.instantiate([{"s": ox.NamedNode("http://ex.org/a"), "o": ox.Literal("x")}])
    [<Triple subject=<NamedNode value=http://ex.org/a> predicate=<NamedNode value=http://ex.org/p> object=<Literal value=x datatype=<NamedNode value=http://www.w3.org/2001/XMLSchema#string>>>]
    """

    def __init__(self, template: Sequence[TriplePattern]) -> None:
        self.template = tuple(template)
        # Constants converted once; variables and blank nodes stay symbolic.
        self._compiled = tuple(
            tuple(self._compile(position) for position in (triple.subject, triple.predicate, triple.object))
            for triple in self.template
        )
        self.instantiated = 0

    @staticmethod
    def _compile(position: object) -> tuple[str, object]:
        if isinstance(position, Var):
            return ("var", position.name)
        if isinstance(position, BlankNode):
            return ("bnode", position.label)
        if isinstance(position, (IRI, Literal)):
            return ("const", constant_term(position))
        msg = f"a CONSTRUCT template position must be a variable, IRI, literal or blank node, not {position!r}"
        raise TypeError(msg)

    def instantiate(self, solutions: Iterable[Mapping[str, Term]]) -> list[ox.Triple]:
        """The triples of the template over ``solutions`` (dicts var name → pyoxigraph term)."""
        triples: dict[ox.Triple, None] = {}
        for solution in solutions:
            fresh: dict[str, ox.BlankNode] = {}
            for compiled in self._compiled:
                terms = []
                for kind, value in compiled:
                    if kind == "var":
                        term = solution.get(value)
                        if term is None:
                            break
                    elif kind == "bnode":
                        term = fresh.get(value)
                        if term is None:
                            term = fresh[value] = ox.BlankNode()
                    else:
                        term = value
                    terms.append(term)
                else:
                    subject, predicate, obj = terms
                    if isinstance(subject, ox.Literal) or not isinstance(predicate, ox.NamedNode):
                        continue
                    triples[ox.Triple(subject, predicate, obj)] = None
        self.instantiated += len(triples)
        return list(triples)
