"""DISTINCT (and REDUCED) maintained with a counter per row: the pure-Python twin of
``operators/_distinct.pyx``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator


class Distinct(Operator):
    """Keeps one copy of every row whose input multiplicity is positive.

    The input multiplicity of each row is counted; at the end of the tick a row whose count went
    from 0 to positive is emitted +1 and one whose count went back to 0 is emitted -1, once per
    tick whatever happened in between (a row that came and went inside one tick emits nothing).
    An output row's lineage is ``(handle,)`` with a handle never reused, so that a row retracted
    and re-added in a later tick is a new row for the operators above.

    REDUCED uses this operator too: SPARQL allows REDUCED to eliminate any number of duplicates,
    eliminating all of them is one of the allowed answers.
    """

    def __init__(self, schema: Sequence[str], label: str = "") -> None:
        super().__init__(tuple(schema), label or "distinct")
        self._counts: dict[tuple, int] = {}
        self._emitted: dict[tuple, tuple] = {}  # output row → its lineage
        self._touched: dict[tuple, None] = {}  # rows whose count changed this tick, in arrival order
        self._next_handle = 0
        self._input_rows = 0  # the input bag's size, kept so that counters() costs nothing

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        counts, touched = self._counts, self._touched
        for row, sign, _lineage in deltas:
            self._input_rows += sign
            count = counts.get(row, 0) + sign
            if count:
                counts[row] = count
            else:
                del counts[row]
            touched[row] = None

    def on_tick_end(self, tau: int) -> None:
        counts, emitted = self._counts, self._emitted
        out: list[Delta] = []
        for row in self._touched:
            live = counts.get(row, 0) > 0
            if live and row not in emitted:
                lineage = (self._next_handle,)
                self._next_handle += 1
                emitted[row] = lineage
                out.append(Delta(row, 1, lineage))
            elif not live and row in emitted:
                out.append(Delta(row, -1, emitted.pop(row)))
        self._touched = {}
        self.emit(out)

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "distinct_rows": len(self._emitted), "duplicates": self._input_rows - len(self._emitted)}
