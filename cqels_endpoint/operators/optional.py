"""OPTIONAL (left outer join with filter), incremental on both inputs: the compiled ``_optional``
or, with ``CQELS_PURE_PYTHON=1``, the twin of ``reference/optional.py`` (same behaviour, same output
order; tests/test_operators_distinct_union_optional.py checks it). ``COMPILED`` says which one is in
use."""

from cqels_endpoint.operators import compiled_module

_compiled = compiled_module("cqels_endpoint.operators._optional", "OPTIONAL operator")
if _compiled is None:
    from cqels_endpoint.operators.reference.optional import OptionalJoin
else:
    OptionalJoin = _compiled.OptionalJoin
COMPILED = _compiled is not None

__all__ = ["COMPILED", "OptionalJoin"]
