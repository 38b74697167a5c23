"""FILTER over rows of term ids, with SPARQL 1.1 expression semantics (``runtime.expressions``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.expressions import compile_filter


class Filter(Operator):
    """Passes the rows whose expressions all have effective boolean value true (an error is false).

    The decision is taken once, when a row enters, and remembered by lineage: its -1 passes iff
    its +1 did, without evaluating again. That keeps retractions exact for expressions whose value
    is not a function of the row alone (RAND(), NOW() — NOW() is the time of the tick the row
    entered) and makes a retraction a set lookup. Kept in pure Python: the cost is the expression
    evaluation on decoded terms, which a compiled loop around it would not reduce.
    """

    def __init__(
        self,
        schema: Sequence[str],
        expressions: Sequence[object],
        decoder: TermDecoder,
        label: str = "",
        **context: Any,
    ) -> None:
        super().__init__(tuple(schema), label or "filter")
        self._passes = compile_filter(tuple(expressions), **context)
        self._positions = {name: position for position, name in enumerate(self.schema)}
        self._decoder = decoder
        self._passed: set[tuple] = set()
        self.rejected = 0

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        passes, positions, decoder, passed = self._passes, self._positions, self._decoder, self._passed
        out: list[Delta] = []
        for delta in deltas:
            lineage = delta.lineage
            if delta.sign > 0:
                if passes(DecodedRow(positions, delta.row, decoder)):
                    passed.add(lineage)
                    out.append(delta)
                else:
                    self.rejected += 1
            elif lineage in passed:
                passed.remove(lineage)
                out.append(delta)
        self.emit(out)

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "rejected": self.rejected, "live": len(self._passed)}
