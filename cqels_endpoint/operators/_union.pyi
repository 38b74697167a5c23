from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.base import Delta, Operator

class Union(Node, Operator):
    arity: int
    inputs_per_port: list[int]
    def __init__(self, left_schema: Sequence[str], right_schema: Sequence[str], label: str = "") -> None: ...
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
    def counters(self) -> dict[str, Any]: ...
