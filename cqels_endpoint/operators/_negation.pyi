from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.negation import NegationBase
from cqels_endpoint.plan.nodes import NegationKind

class Negation(NegationBase):
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
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
    def on_tick_end(self, tau: int) -> None: ...
    def counters(self) -> dict[str, Any]: ...
