"""FILTER NOT EXISTS, FILTER EXISTS and MINUS, maintained incrementally on both inputs: the
compiled ``_negation`` (the four incremental cases, see its docstring) or, with
``CQELS_PURE_PYTHON=1``, the twin of ``reference/negation.py``, which recomputes the kept left rows
from every (left, right) pair at each punctuation (same output relation; tests/test_negation_operator.py
compares them tick by tick). ``COMPILED`` says which one is in use."""

from cqels_endpoint.operators import compiled_module
from cqels_endpoint.operators.reference.negation import (
    EXISTS,
    KINDS,
    MINUS,
    NOT_EXISTS,
    NegationBase,
    merged_schema,
    shared_columns,
)

_compiled = compiled_module("cqels_endpoint.operators._negation", "negation")
if _compiled is None:
    from cqels_endpoint.operators.reference.negation import Negation
else:
    Negation = _compiled.Negation
COMPILED = _compiled is not None

__all__ = [
    "COMPILED",
    "EXISTS",
    "KINDS",
    "MINUS",
    "NOT_EXISTS",
    "Negation",
    "NegationBase",
    "merged_schema",
    "shared_columns",
]
