from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.shared.negation import NegationBase
from cqels_endpoint.plan.nodes import NegationKind

class Negation(Node, NegationBase):
    inputs_per_port: list[int]
    evaluations: int
    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        kind: NegationKind | str,
        condition: Callable[[tuple], bool] | None = None,
        label: str = "",
        keys: Sequence[str] | None = None,
    ) -> None: ...
    def counters(self) -> dict[str, Any]: ...
