from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.base import Operator
from cqels_endpoint.runtime.decoding import TermDecoder

class Filter(Node, Operator):
    rejected: int
    def __init__(
        self, schema: Sequence[str], expressions: Sequence[object], decoder: TermDecoder, label: str = "", **context: Any
    ) -> None: ...
    def counters(self) -> dict[str, Any]: ...
