"""Ring and one-way indexes: the compiled ones, or their pure-Python twins under CQELS_PURE_PYTHON=1.

Both implementations behave identically (tests/test_indexes.py checks it); the semantics are
documented in ``reference/indexes.py``. ``COMPILED`` says which one this process uses.
"""

from cqels_endpoint.operators import compiled_module

_compiled = compiled_module("cqels_endpoint.operators._indexes", "indexes")
if _compiled is None:
    from cqels_endpoint.operators.reference.indexes import OneWayIndex, RingIndex, key_of
else:
    OneWayIndex, RingIndex, key_of = _compiled.OneWayIndex, _compiled.RingIndex, _compiled.key_of
COMPILED = _compiled is not None

__all__ = ["COMPILED", "OneWayIndex", "RingIndex", "key_of"]
