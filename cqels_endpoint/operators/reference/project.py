"""Pure-Python twin of the compiled projection (``operators/_project.pyx``)."""

from __future__ import annotations

from collections.abc import Sequence

from cqels_endpoint.operators.base import Delta, Operator


class Project(Operator):
    """Rows of ``input_schema`` narrowed to ``variables``; a variable the input lacks is unbound (None).

    Stateless and bag-preserving: two input rows that project to the same row stay two rows, each
    with its own lineage, so a later -1 retracts exactly one of them.
    """

    def __init__(self, input_schema: Sequence[str], variables: Sequence[str], label: str = "") -> None:
        super().__init__(tuple(variables), label or "project")
        positions = {name: index for index, name in enumerate(input_schema)}
        self._positions = tuple(positions.get(name, -1) for name in self.schema)

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        positions = self._positions
        self.emit(
            [
                Delta(tuple(None if position < 0 else row[position] for position in positions), sign, lineage)
                for row, sign, lineage in deltas
            ]
        )
