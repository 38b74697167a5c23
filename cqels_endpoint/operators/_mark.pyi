from collections.abc import Callable, Sequence

from cqels_endpoint.operators._negation import Negation
from cqels_endpoint.plan.nodes import NegationKind

class Mark(Negation):
    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        kind: NegationKind | str,
        condition: Callable[[tuple], bool] | None = None,
        label: str = "",
        keys: Sequence[str] | None = None,
        column: str = "",
    ) -> None: ...
