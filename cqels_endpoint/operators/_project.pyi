from collections.abc import Sequence

from cqels_endpoint.operators._base import Node
from cqels_endpoint.operators.base import Operator

class Project(Node, Operator):
    def __init__(self, input_schema: Sequence[str], variables: Sequence[str], label: str = "") -> None: ...
