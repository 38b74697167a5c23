from typing import Any

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.shared.aggregate import GroupAggregateBase

class GroupAggregate(Node, GroupAggregateBase):
    def close(self) -> None: ...
    def counters(self) -> dict[str, Any]: ...
