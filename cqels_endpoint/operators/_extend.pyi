from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.base import Operator
from cqels_endpoint.runtime.decoding import TermDecoder

class Extend(Node, Operator):
    errors: int
    def __init__(
        self,
        input_schema: Sequence[str],
        variable: str,
        expression: object,
        decoder: TermDecoder,
        label: str = "",
        **context: Any,
    ) -> None: ...
    def close(self) -> None: ...
    def counters(self) -> dict[str, Any]: ...
