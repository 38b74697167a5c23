"""What the compiled top-k (``operators/_topk.pyx``) and its twin (``operators/reference/topk.py``)
share: the order key, the slice bounds and the counters.

Every top-k operator keeps each input row, by lineage, with its order key (``order.row_order_key``,
then the lineage). The output is the slice of positions ``[m, m + k)`` of ``ORDER BY … LIMIT k
OFFSET m``. At the end of a tick in which the slice may have changed, both emit its difference with
the slice emitted before: -1 for the rows that left it (in their previous order), then +1 for the
rows that entered (in their new order); the twin finds it by re-sorting, the compiled operator by
following the slice's edges. Output lineages are the input's (unique, stable per row). Neither
operator holds dictionary references: a row they hold is still held by the operator that produced it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators.base import Operator
from cqels_endpoint.operators.order import row_order_key
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.decoding import TermDecoder


class TopKBase(Operator):
    """What the top-k operator and its twin share: the order key, the slice bounds and the counters.

    Subclasses keep the input rows, set ``_changed`` when a tick brings deltas, emit the slice's
    difference at the end of such a tick (counting it in ``recomputations``, or in ``skipped_ticks``
    when they can tell the slice did not change) and answer ``_slice_size()``.
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
        self._changed = False
        self.recomputations = 0
        self.skipped_ticks = 0

    def _slice_size(self) -> int:
        """How many rows the slice emitted last holds."""
        raise NotImplementedError

    def counters(self) -> dict[str, Any]:
        return {
            **super().counters(),
            "slice_rows": self._slice_size(),
            "recomputations": self.recomputations,
            "skipped_ticks": self.skipped_ticks,
        }
