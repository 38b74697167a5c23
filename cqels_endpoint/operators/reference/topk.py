"""Top-k by re-sorting: the twin of the compiled ``operators/_topk.pyx``.

The compiled operator keeps the rows sorted and follows the slice's edges; this one keeps the input
rows by lineage, unsorted, and at the end of every tick with input deltas sorts all of them (keys
computed afresh), takes the slice and emits its difference with the slice it emitted before. The
order key and the slice bounds are ``shared.topk.TopKBase``'s, so the two differ exactly in how the
slice and its changes are found; tests/operators/test_topk_operator.py compares them tick by tick.
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
        self._emitted: dict[tuple, tuple] = {}  # lineage -> row of the slice emitted, in order

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        for row, sign, lineage in deltas:
            if sign > 0:
                self._live[lineage] = row
            else:
                del self._live[lineage]
        self._changed = self._changed or bool(deltas)

    def on_tick_end(self, tau: int) -> None:
        if not self._changed:
            return
        self._changed = False
        self.recomputations += 1
        ordered = sorted(self._live.items(), key=lambda item: (*self._key(item[1]), item[0]))
        current = dict(ordered[self.offset : self._stop])
        emitted = self._emitted
        out = [Delta(row, -1, lineage) for lineage, row in emitted.items() if current.get(lineage) != row]
        out.extend(Delta(row, 1, lineage) for lineage, row in current.items() if emitted.get(lineage) != row)
        self._emitted = current
        self.emit(out)

    def _slice_size(self) -> int:
        return len(self._emitted)

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "live_rows": len(self._live)}
