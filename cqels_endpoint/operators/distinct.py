"""DISTINCT / REDUCED with per-row counters: the compiled ``_distinct`` or, with
``CQELS_PURE_PYTHON=1``, the twin of ``reference/distinct.py`` (same behaviour, same output order;
tests/test_operators_distinct_union_optional.py checks it). ``COMPILED`` says which one is in use."""

from cqels_endpoint.operators import compiled_module

_compiled = compiled_module("cqels_endpoint.operators._distinct", "DISTINCT operator")
if _compiled is None:
    from cqels_endpoint.operators.reference.distinct import Distinct
else:
    Distinct = _compiled.Distinct
COMPILED = _compiled is not None

__all__ = ["COMPILED", "Distinct"]
