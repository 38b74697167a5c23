"""Reference twin of the compiled negation (``operators/_negation.pyx``), computed by re-evaluation.

Same constructor and output relation, reached the slow, obviously correct way: it keeps both
inputs as plain lineage → row maps and, at every punctuation, recomputes which left rows are
kept by testing every (left, right) pair, then emits the difference with the previous tick
(−1 rows first, then +1 rows, each in lineage order). ``keys`` only states the same input
contract as the compiled operator (those columns are bound in every row; an unbound one is an
OperatorError); the definition does not depend on which columns are hashed. Tests compare the incremental
operator with it tick by tick; the engine uses it only under ``CQELS_PURE_PYTHON=1``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.negation import NegationBase
from cqels_endpoint.plan.nodes import NegationKind


class Negation(NegationBase):
    """Left rows kept according to the right rows matching them, recomputed from scratch per tick."""

    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        kind: NegationKind | str,
        condition: Callable[[tuple], bool] | None = None,
        label: str = "",
        keys: Sequence[str] | None = None,
    ) -> None:
        super().__init__(left_schema, right_schema, kind, label, keys)
        self._extra = tuple(i for i, c in enumerate(self.right_schema) if c not in self.schema)
        self._keys = (
            tuple(self.schema.index(c) for c in self.keys),
            tuple(self.right_schema.index(c) for c in self.keys),
        )
        self._condition = condition
        self._inputs: tuple[dict, dict] = ({}, {})
        self._output: dict[tuple, tuple] = {}

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        rows = self._inputs[port]
        for row, sign, lineage in deltas:
            if sign > 0:
                if any(row[i] is None for i in self._keys[port]):
                    msg = f"{self.label}: a shared column is unbound in {row}; the planner must refuse this input"
                    raise OperatorError(msg)
                rows[lineage] = row
            else:
                del rows[lineage]

    def _match(self, left: tuple, right: tuple) -> bool:
        """Compatible (an unbound value agrees with anything) and, for MINUS, one common bound column."""
        merged = list(left)
        common = False
        for column in self.shared:
            mine, theirs = left[self.schema.index(column)], right[self.right_schema.index(column)]
            if mine is not None and theirs is not None:
                if mine != theirs:
                    return False
                common = True
            elif mine is None:
                merged[self.schema.index(column)] = theirs
        if self.kind is NegationKind.MINUS:
            return common
        return self._condition is None or bool(self._condition(tuple(merged) + tuple(right[i] for i in self._extra)))

    def _output_row(self, row: tuple, matched: bool) -> tuple | None:
        """The row a live left row puts in the output (None: none), given whether a right row matches it."""
        return row if matched == (self.kind is NegationKind.EXISTS) else None

    def on_tick_end(self, tau: int) -> None:
        left, right = self._inputs
        output = {}
        for lineage, row in left.items():
            out = self._output_row(row, any(self._match(row, other) for other in right.values()))
            if out is not None:
                output[lineage] = out
        # A lineage may come back with another row (an upstream group's changed aggregates).
        gone = [Delta(row, -1, lineage) for lineage, row in sorted(self._output.items()) if output.get(lineage) != row]
        new = [Delta(row, 1, lineage) for lineage, row in sorted(output.items()) if self._output.get(lineage) != row]
        self._output = output
        self.emit(gone + new)

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "left": len(self._inputs[0]), "right": len(self._inputs[1]), "kept": len(self._output)}
