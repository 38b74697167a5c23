"""Ring and one-way indexes: the compiled ones, or their pure-Python twins under CQELS_PURE_PYTHON=1.

Both implementations behave identically (tests/test_indexes.py checks it); the semantics are
documented in ``reference/indexes.py``. ``COMPILED`` says which one this process uses.
"""

from cqels_endpoint.operators import use_pure_python

if use_pure_python():
    from cqels_endpoint.operators.reference.indexes import OneWayIndex, RingIndex, key_of

    COMPILED = False
else:
    try:
        from cqels_endpoint.operators._indexes import OneWayIndex, RingIndex, key_of
    except ImportError as error:
        msg = (
            "the compiled indexes are not built: run `pip install -e .` (or `python setup.py "
            "build_ext --inplace`) in the checkout, or set CQELS_PURE_PYTHON=1 for the pure-Python twins"
        )
        raise ImportError(msg) from error

    COMPILED = True

__all__ = ["COMPILED", "OneWayIndex", "RingIndex", "key_of"]
