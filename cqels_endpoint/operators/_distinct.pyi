from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.base import Operator

class Distinct(Node, Operator):
    def __init__(self, schema: Sequence[str], label: str = "") -> None: ...
    def counters(self) -> dict[str, Any]: ...
