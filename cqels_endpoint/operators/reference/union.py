"""UNION as a bag union of two inputs: the pure-Python twin of ``operators/_union.pyx``."""

from __future__ import annotations

from collections.abc import Sequence

from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.shared.schemas import union_schema


class Union(Operator):
    """Passes every delta of both inputs, aligned on the union schema (missing columns unbound).

    Stateless. An output lineage is the input lineage prefixed with the branch (0 left, 1 right):
    each branch's lineages have one fixed length, so the prefixed lineages stay unique and a join
    above can still concatenate them unambiguously.
    """

    arity = 2

    def __init__(self, left_schema: Sequence[str], right_schema: Sequence[str], label: str = "") -> None:
        super().__init__(union_schema(left_schema, right_schema), label or "union")
        self._positions = tuple(
            tuple({name: i for i, name in enumerate(side)}.get(name, -1) for name in self.schema)
            for side in (left_schema, right_schema)
        )
        self.inputs_per_port = [0, 0]

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        positions = self._positions[port]
        branch = (port,)
        self.emit(
            [
                Delta(tuple(None if p < 0 else row[p] for p in positions), sign, branch + lineage)
                for row, sign, lineage in deltas
            ]
        )

    def counters(self) -> dict:
        return {**super().counters(), "inputs_per_port": list(self.inputs_per_port)}
