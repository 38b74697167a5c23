"""GROUP BY / aggregates (algebra ``Group``) maintained incrementally, one output per changed group
per tick: the compiled ``_aggregate`` (per-group counts and order-statistics lists, see its
docstring) or, with ``CQELS_PURE_PYTHON=1``, the twin of ``reference/aggregate.py``, which
recomputes each changed group (same output relation; tests/test_aggregate_operator.py compares
them tick by tick). ``COMPILED`` says which one is in use. ``AggregateSpec`` and
``GroupAggregateBase`` (evaluation, emission, dictionary references) are shared by both."""

from cqels_endpoint.operators import compiled_module
from cqels_endpoint.operators.reference.aggregate import AggregateSpec, GroupAggregateBase

_compiled = compiled_module("cqels_endpoint.operators._aggregate", "aggregation operator")
if _compiled is None:
    from cqels_endpoint.operators.reference.aggregate import GroupAggregate
else:
    GroupAggregate = _compiled.GroupAggregate
COMPILED = _compiled is not None

__all__ = ["COMPILED", "AggregateSpec", "GroupAggregate", "GroupAggregateBase"]
