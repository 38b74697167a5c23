from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.decoding import TermDecoder
from cqels_endpoint.operators.reference.topk import Order as Order
from cqels_endpoint.operators.reference.topk import TopKBase as TopKBase
from cqels_endpoint.query import ast

COMPILED: bool

def row_order_key(
    schema: Sequence[str],
    conditions: Sequence[ast.OrderCondition],
    ties: Sequence[str],
    decoder: TermDecoder,
    **context: Any,
) -> Callable[[tuple], tuple]: ...

class TopK(TopKBase):
    def __init__(
        self,
        schema: Sequence[str],
        conditions: Sequence[ast.OrderCondition],
        ties: Sequence[str],
        decoder: TermDecoder,
        offset: int = 0,
        limit: int | None = None,
        label: str = "",
        **context: Any,
    ) -> None: ...
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
    def counters(self) -> dict[str, Any]: ...
