from collections.abc import Sequence

from cqels_endpoint.operators.base import Delta, Operator

class Project(Operator):
    def __init__(self, input_schema: Sequence[str], variables: Sequence[str], label: str = "") -> None: ...
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
