"""Top-k by re-sorting: the twin of the compiled ``operators/_topk.pyx``.

The compiled operator keeps the rows sorted and tracks an influence region; this one keeps the input
rows by lineage, unsorted, and at the end of every tick with input deltas sorts all of them (keys
computed afresh) and takes the slice. The order key and the emission of the slice are
``shared.topk.TopKBase``'s, so the two differ exactly in how the slice is found;
tests/operators/test_topk_operator.py compares them tick by tick.
"""

from __future__ import annotations

from typing import Any

from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.topk import TopKBase


class TopK(TopKBase):
    """Top-k by sorting everything at every changed tick (the twin of the incremental operator)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._live: dict[tuple, tuple] = {}  # lineage -> row

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        for row, sign, lineage in deltas:
            if sign > 0:
                self._live[lineage] = row
            else:
                del self._live[lineage]
        self._changed = self._changed or bool(deltas)

    def _slice(self) -> dict[tuple, tuple]:
        ordered = sorted(self._live.items(), key=lambda item: (*self._key(item[1]), item[0]))
        return dict(ordered[self.offset : self._stop])

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "live_rows": len(self._live)}
