from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.runtime.decoding import TermDecoder

class OptionalJoin(Node, Operator):
    arity: int
    left_schema: tuple[str, ...]
    right_schema: tuple[str, ...]
    inputs_per_port: list[int]
    rejected: int
    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        exprs: Sequence[object] = (),
        decoder: TermDecoder | None = None,
        label: str = "",
        **context: Any,
    ) -> None: ...
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
    def counters(self) -> dict[str, Any]: ...
