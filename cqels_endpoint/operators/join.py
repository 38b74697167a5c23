"""Window buffers and the adaptive multiway join: the compiled ``_join`` or, with
``CQELS_PURE_PYTHON=1``, the pure-Python twins of ``reference/join.py`` (same behaviour, same
output order; tests/test_operators_join.py checks it). ``COMPILED`` says which one is in use."""

from cqels_endpoint.operators import compiled_module
from cqels_endpoint.operators.reference.join import join_schema, pattern_schema

_compiled = compiled_module("cqels_endpoint.operators._join", "join")
if _compiled is None:
    from cqels_endpoint.operators.reference.join import MultiwayJoin, WindowBuffer
else:
    MultiwayJoin, WindowBuffer = _compiled.MultiwayJoin, _compiled.WindowBuffer
COMPILED = _compiled is not None

__all__ = ["COMPILED", "MultiwayJoin", "WindowBuffer", "join_schema", "pattern_schema"]
