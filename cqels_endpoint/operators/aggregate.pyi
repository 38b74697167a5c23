from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.decoding import TermDecoder
from cqels_endpoint.query import ast

COMPILED: bool

class AggregateSpec:
    name: str
    distinct: bool
    separator: str | None
    star: bool
    argument: Any
    ordered: bool
    def __init__(self, aggregate: ast.Aggregate, **context: Any) -> None: ...

class GroupAggregateBase(Operator):
    errors: int
    def __init__(
        self,
        input_schema: Sequence[str],
        keys: Sequence[tuple[str | None, object]],
        aggregates: Sequence[tuple[str, ast.Aggregate]],
        decoder: TermDecoder,
        label: str = "",
        **context: Any,
    ) -> None: ...
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
    def on_tick_end(self, tau: int) -> None: ...
    def close(self) -> None: ...
    def counters(self) -> dict[str, Any]: ...

class GroupAggregate(GroupAggregateBase): ...
