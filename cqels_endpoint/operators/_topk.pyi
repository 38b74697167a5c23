from typing import Any

from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.topk import TopKBase

class TopK(TopKBase):
    def on_batch(self, port: int, deltas: list[Delta]) -> None: ...
    def counters(self) -> dict[str, Any]: ...
