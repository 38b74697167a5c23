"""What both EXISTS-marking operators share (the compiled ``_mark`` and its twin): the checks, the
output schema and the two term ids a mark takes.

A mark operator is a (NOT) EXISTS that keeps every left row and appends the value of the EXISTS to
it, so that an expression around it (``FILTER (?x = 1 || NOT EXISTS { … })``, ``BIND (EXISTS { … }
AS ?b)``) reads a column instead of evaluating a pattern.
"""

from __future__ import annotations

import pyoxigraph as ox

from cqels_endpoint.plan.nodes import NegationKind
from cqels_endpoint.runtime.encoding import XSD, inline_id

TRUE_ID: int = inline_id(ox.Literal("true", datatype=ox.NamedNode(XSD + "boolean")))
FALSE_ID: int = inline_id(ox.Literal("false", datatype=ox.NamedNode(XSD + "boolean")))


def marked_schema(operator, column: str) -> tuple[str, ...]:
    """The output schema of a mark operator built as a negation ``operator`` of the left schema:
    the left columns and ``column``. A MINUS has no boolean value to mark."""
    if operator.kind is NegationKind.MINUS:
        msg = f"{operator.label}: MINUS has no value to mark; a mark is an EXISTS or a NOT EXISTS"
        raise ValueError(msg)
    if not column or column in operator.schema:
        msg = f"{operator.label}: the mark column {column!r} must be a new column of {operator.schema}"
        raise ValueError(msg)
    return (*operator.schema, column)
