"""The ORDER BY order of rows, and ``Order``, the emission order of a top-level ORDER BY.

Every ordering operator (``Order``, the top-k operator and its twin) sorts rows by the same key: the
query's ORDER BY conditions (``runtime.expressions.compile_order_key``), then the tie-break of
``algebra.ties`` (the projected variables, ascending); the top-k operators add the lineage, so that
no two rows tie and the order is a total order both evaluation modes agree on (rows that tie up to
the lineage project identically).

``Order`` sits at the root of a query with a top-level ORDER BY (or LIMIT/OFFSET): it passes its
input through unchanged and keeps the order key of every row it passed, so that the evaluator can
list Γ (RSTREAM) and the rows that entered or left it (ISTREAM, DSTREAM) in ORDER BY order — the
order the recompute oracle's SPARQL returns them in. It has no compiled twin: its state is sorted
Python lists maintained with ``bisect`` (C already) and its per-row cost is the order key, which is
Python in any case. It holds no dictionary references: a row it holds is still held by the operator
that produced it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.algebra.ties import tie_break
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.decoding import TermDecoder
from cqels_endpoint.runtime.expressions import compile_row_order_key
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
    return compile_row_order_key((*conditions, *tie_break(tuple(Var(name) for name in ties))), positions, decoder, **context)


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
        if not changes:  # most ticks of a top-k query: nothing to order
            if self._before:
                self._before = {}
            return []
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
