from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.shared.topk import TopKBase

class TopK(Node, TopKBase):
    def counters(self) -> dict[str, Any]: ...
