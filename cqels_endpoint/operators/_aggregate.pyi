from typing import Any

from cqels_endpoint.operators.shared.aggregate import GroupAggregateBase

class GroupAggregate(GroupAggregateBase):
    def counters(self) -> dict[str, Any]: ...
