"""RDF terms and variables as they appear in queries: shared by the AST, the algebra and the planner.

Every node may carry a source ``span``; spans never take part in equality or hashing, so two
parses of the same text (or a parse of its serialisation) compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cqels_endpoint.errors import Span

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD_STRING = XSD + "string"
XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_DOUBLE = XSD + "double"
XSD_BOOLEAN = XSD + "boolean"
RDF_LANG_STRING = RDF + "langString"
RDF_TYPE = RDF + "type"
RDF_FIRST = RDF + "first"
RDF_REST = RDF + "rest"
RDF_NIL = RDF + "nil"


@dataclass(frozen=True)
class Node:
    """Base of every AST and algebra node: only the optional source span."""

    span: Span | None = field(default=None, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class IRI(Node):
    """An IRI, absolute once resolved; kept relative when the query has no base."""

    value: str

    def __str__(self) -> str:
        return f"<{self.value}>"


@dataclass(frozen=True)
class Literal(Node):
    """An RDF literal. ``datatype`` None and ``language`` None is a simple literal (xsd:string)."""

    value: str
    datatype: str | None = None
    language: str | None = None

    @property
    def effective_datatype(self) -> str:
        if self.language is not None:
            return RDF_LANG_STRING
        return self.datatype or XSD_STRING


@dataclass(frozen=True)
class BlankNode(Node):
    """A blank node in a pattern or template. ``generated`` marks ``[]``/collection nodes the parser made."""

    label: str
    generated: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Var(Node):
    """A query variable, named without its ``?``/``$`` sigil."""

    name: str

    def __str__(self) -> str:
        return f"?{self.name}"


Term = IRI | Literal | BlankNode
VarOrTerm = IRI | Literal | BlankNode | Var
