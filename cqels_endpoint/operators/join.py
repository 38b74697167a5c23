"""Window buffers and the adaptive multiway join: the compiled ``_join`` or, with
``CQELS_PURE_PYTHON=1``, the pure-Python twins of ``reference/join.py`` (same behaviour, same
output order; tests/test_operators_join.py checks it). ``COMPILED`` says which one is in use."""

from cqels_endpoint.operators import use_pure_python
from cqels_endpoint.operators.reference.join import join_schema, pattern_schema

if use_pure_python():
    from cqels_endpoint.operators.reference.join import MultiwayJoin, WindowBuffer

    COMPILED = False
else:
    try:
        from cqels_endpoint.operators._join import MultiwayJoin, WindowBuffer
    except ImportError as error:
        msg = (
            "the compiled join is not built: run `pip install -e .` (or `python setup.py "
            "build_ext --inplace`) in the checkout, or set CQELS_PURE_PYTHON=1 for the pure-Python twins"
        )
        raise ImportError(msg) from error

    COMPILED = True

__all__ = ["COMPILED", "MultiwayJoin", "WindowBuffer", "join_schema", "pattern_schema"]
