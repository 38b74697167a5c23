"""Top-k by re-sorting, and what the compiled top-k shares with it: the order key, the emission of
the slice, and ``Order`` (the emission order of a top-level ORDER BY).

Every top-k operator keeps each input row, by lineage, with its order key: the query's ORDER BY
conditions (``runtime.expressions.compile_order_key``), then the tie-break of ``algebra.ties`` (the
projected variables, ascending), then the lineage, so that no two rows tie and the order is a total
order both evaluation modes agree on (rows that tie up to the lineage project identically). The
output is the slice of positions ``[m, m + k)`` of ``ORDER BY … LIMIT k OFFSET m``. ``TopKBase``
emits, at the end of a tick in which the slice may have changed, its difference with the slice
emitted before: -1 for the rows that left it (in their previous order), then +1 for the rows that
entered (in their new order). Output lineages are the input's (unique, stable per row).

``TopK`` here is the twin of the compiled operator (``operators/_topk.pyx``, which keeps the rows
sorted and tracks an influence region): it keeps the input rows by lineage, unsorted, and at the end
of every tick with input deltas sorts all of them (keys computed afresh) and takes the slice. The two
differ exactly in how the slice is found; tests/test_topk_operator.py compares them tick by tick.

``Order`` sits at the root of a query with a top-level ORDER BY (or LIMIT/OFFSET): it passes its
input through unchanged and keeps the order key of every row it passed, so that the evaluator can
list Γ (RSTREAM) and the rows that entered or left it (ISTREAM, DSTREAM) in ORDER BY order — the
order the recompute oracle's SPARQL returns them in. Both modes use this one (``operators.topk``
re-exports it): its state is sorted Python lists maintained with ``bisect`` (C already) and its
per-row cost is the order key, which is Python in any case. None of these operators holds dictionary
references: a row they hold is still held by the operator that produced it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.algebra.ties import tie_break
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.decoding import DecodedRow, TermDecoder
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.expressions import compile_order_key
from cqels_endpoint.terms import Var


def row_order_key(
    schema: Sequence[str],
    conditions: Sequence[ast.OrderCondition],
    ties: Sequence[str],
    decoder: TermDecoder,
    **context: Any,
) -> Callable[[tuple], tuple]:
    """``row of ids -> key``: the ORDER BY conditions, then the tie-break columns ascending."""
    positions = {name: position for position, name in enumerate(schema)}
    key = compile_order_key((*conditions, *tie_break(tuple(Var(name) for name in ties))), **context)
    return lambda row: key(DecodedRow(positions, row, decoder))


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


class Order(Operator):
    """Passes rows through and keeps them in ORDER BY order for the evaluator (module docstring).

    ``projection`` are the columns the evaluator reports (the query's projection, which is also the
    tie-break); the input may carry more columns, those the ORDER BY conditions read. Per projected
    row the operator keeps the sorted keys of its occurrences, and all occurrences in one sorted list.
    """

    def __init__(
        self,
        schema: Sequence[str],
        conditions: Sequence[ast.OrderCondition],
        projection: Sequence[str],
        decoder: TermDecoder,
        label: str = "",
        **context: Any,
    ) -> None:
        super().__init__(tuple(schema), label or "order")
        self._key = row_order_key(self.schema, conditions, projection, decoder, **context)
        positions = {name: position for position, name in enumerate(self.schema)}
        self._projected = tuple(positions.get(name, -1) for name in projection)
        self._key_of: dict[tuple, tuple] = {}  # input lineage -> (key, projected row)
        self._keys: dict[tuple, list[tuple]] = {}  # projected row -> sorted keys of its occurrences
        self._order: list[tuple] = []  # sorted (key, projected row) of every occurrence
        self._before: dict[tuple, list[tuple]] = {}  # keys of the rows changed since arrange()

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        for row, sign, lineage in deltas:
            if sign > 0:
                projected = tuple(None if p < 0 else row[p] for p in self._projected)
                key = self._key(row)
                self._key_of[lineage] = (key, projected)
            else:
                key, projected = self._key_of.pop(lineage)
            keys = self._keys.get(projected)
            if keys is None:
                keys = self._keys[projected] = []
            if projected not in self._before:
                self._before[projected] = list(keys)
            # Equal keys belong to equal projected rows (the key ends with the projected columns).
            entry = (key, projected)
            if sign > 0:
                keys.insert(bisect_right(keys, key), key)
                self._order.insert(bisect_right(self._order, entry), entry)
            else:
                del keys[bisect_left(keys, key)]
                del self._order[bisect_left(self._order, entry)]
                if not keys:
                    del self._keys[projected]
        self.emit(deltas)

    def arrange(self, changes: list[tuple[tuple, int]]) -> list[tuple[tuple, int]]:
        """The net changes of Γ since the previous call (``Sink.take()``: projected row, count) as
        one ``(row, ±1)`` per occurrence: the rows that entered in their new order, then those that
        left in their previous order — where SPARQL's order puts the first occurrences of each."""
        before, self._before = self._before, {}
        entered: list[tuple] = []
        left: list[tuple] = []
        for row, count in changes:
            if count > 0:
                entered.extend((key, row) for key in self._keys[row][:count])
            else:
                left.extend((key, row) for key in before[row][:-count])
        entered.sort()
        left.sort()
        return [(row, 1) for _key, row in entered] + [(row, -1) for _key, row in left]

    def rows(self) -> list[tuple]:
        """Every occurrence of the projected rows, in order."""
        return [row for _key, row in self._order]

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "ordered_rows": len(self._order)}
