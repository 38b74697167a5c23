from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator

COMPILED: bool
NOT_EXISTS: str
EXISTS: str
MINUS: str
KINDS: tuple[str, str, str]

def merged_schema(left: Sequence[str], right: Sequence[str]) -> tuple[str, ...]: ...
def shared_columns(left: Sequence[str], right: Sequence[str]) -> tuple[str, ...]: ...

class NegationBase(Operator):
    arity: int
    kind: str
    right_schema: tuple[str, ...]
    shared: tuple[str, ...]
    keys: tuple[str, ...]

class Negation(NegationBase):
    inputs_per_port: list[int]
    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        kind: str,
        condition: Callable[[tuple], bool] | None = None,
        label: str = "",
        keys: Sequence[str] | None = None,
    ) -> None: ...
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
    def on_tick_end(self, tau: int) -> None: ...
    def counters(self) -> dict[str, Any]: ...
