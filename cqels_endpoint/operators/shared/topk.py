"""What the compiled top-k (``operators/_topk.pyx``) and its twin (``operators/reference/topk.py``)
share: the order key and the emission of the slice.

Every top-k operator keeps each input row, by lineage, with its order key (``order.row_order_key``,
then the lineage). The output is the slice of positions ``[m, m + k)`` of ``ORDER BY … LIMIT k
OFFSET m``. ``TopKBase`` emits, at the end of a tick in which the slice may have changed, its
difference with the slice emitted before: -1 for the rows that left it (in their previous order),
then +1 for the rows that entered (in their new order). Output lineages are the input's (unique,
stable per row). Neither operator holds dictionary references: a row they hold is still held by the
operator that produced it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.runtime.decoding import TermDecoder
from cqels_endpoint.operators.order import row_order_key
from cqels_endpoint.query import ast


class TopKBase(Operator):
    """What the top-k operator and its twin share: the order key, the slice and its emission.

    Subclasses keep the input rows and answer ``_slice()``: the rows of the slice now (lineage ->
    row, in order), or None when the tick cannot have changed it.
    """

    def __init__(
        self,
        schema: Sequence[str],
        conditions: Sequence[ast.OrderCondition],
        ties: Sequence[str],
        decoder: TermDecoder,
        offset: int = 0,
        limit: int | None = None,
        label: str = "",
        **context: Any,
    ) -> None:
        super().__init__(tuple(schema), label or "top-k")
        self._key = row_order_key(self.schema, conditions, ties, decoder, **context)
        self.offset = offset
        self.limit = limit
        self._stop = None if limit is None else offset + limit
        self._emitted: dict[tuple, tuple] = {}  # lineage -> row of the slice emitted, in order
        self._changed = False
        self.recomputations = 0
        self.skipped_ticks = 0

    def _slice(self) -> dict[tuple, tuple] | None:
        raise NotImplementedError

    def on_tick_end(self, tau: int) -> None:
        if not self._changed:
            return
        self._changed = False
        current = self._slice()
        if current is None:
            self.skipped_ticks += 1
            return
        self.recomputations += 1
        emitted = self._emitted
        out = [Delta(row, -1, lineage) for lineage, row in emitted.items() if current.get(lineage) != row]
        out.extend(Delta(row, 1, lineage) for lineage, row in current.items() if emitted.get(lineage) != row)
        self._emitted = current
        self.emit(out)

    def counters(self) -> dict[str, Any]:
        return {
            **super().counters(),
            "slice_rows": len(self._emitted),
            "recomputations": self.recomputations,
            "skipped_ticks": self.skipped_ticks,
        }
