"""UNION (bag union with schema alignment): the compiled ``_union`` or, with
``CQELS_PURE_PYTHON=1``, the twin of ``reference/union.py`` (same behaviour, same output order;
tests/test_operators_distinct_union_optional.py checks it). ``COMPILED`` says which one is in use."""

from cqels_endpoint.operators import compiled_module
from cqels_endpoint.operators.reference.union import union_schema

_compiled = compiled_module("cqels_endpoint.operators._union", "UNION operator")
if _compiled is None:
    from cqels_endpoint.operators.reference.union import Union
else:
    Union = _compiled.Union
COMPILED = _compiled is not None

__all__ = ["COMPILED", "Union", "union_schema"]
