"""Continuous top-k (``ORDER BY … LIMIT k OFFSET m``): the compiled ``_topk`` (rows kept sorted, an
influence region, see its docstring) or, with ``CQELS_PURE_PYTHON=1``, the twin of
``reference/topk.py``, which re-sorts every row at each changed tick (same output deltas;
tests/test_topk_operator.py compares them tick by tick). ``COMPILED`` says which one is in use.
``Order`` (the emission order of a top-level ORDER BY), ``TopKBase`` and ``row_order_key`` live in
the reference module and are the same in both modes."""

from cqels_endpoint.operators import compiled_module
from cqels_endpoint.operators.reference.topk import Order, TopKBase, row_order_key

_compiled = compiled_module("cqels_endpoint.operators._topk", "top-k operator")
if _compiled is None:
    from cqels_endpoint.operators.reference.topk import TopK
else:
    TopK = _compiled.TopK
COMPILED = _compiled is not None

__all__ = ["COMPILED", "Order", "TopK", "TopKBase", "row_order_key"]
