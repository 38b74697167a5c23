"""Cached mappings of a static sub-pattern, as a source of leaf deltas for the multiway join.

The planner computes the mappings of a maximal static sub-pattern (pyoxigraph at registration; the
Spark rebuild later), encodes them and hands them to :meth:`StaticCache.replace`. The cache
diffs them against what it holds, as bags, and queues the difference as +1/-1 leaf deltas that go
downstream with the next punctuation, so a swap alone emits nothing
(docs/ARCHITECTURE.md, "Static data and caches"). The join downstream indexes the rows on its join
columns, so stream rows probe the cache by index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta, Source


class StaticCache(Source):
    """Source of the cached mappings of one static sub-pattern (rows aligned with ``schema``).

    Leaf ids are negative (-1, -2, …) so they never collide with the engine's stream ``seq``
    numbers. ``replace(rows)`` takes over one reference to every id of every row it is given:
    references of rows it already held are handed back through ``on_release`` at once, those of
    rows that left the cache when the tick after the one that retracted them punctuates (the
    evaluator may decode the -1 rows after their tick's punctuation returned).
    """

    fed_by = "replace()"

    def __init__(
        self,
        schema: tuple[str, ...],
        label: str = "",
        on_release: Callable[[tuple], None] | None = None,
    ) -> None:
        super().__init__(schema, label or "static cache", on_release)
        self._ids_of_row: dict[tuple, list[int]] = {}
        self._next_leaf = -1
        self.replacements = 0

    def replace(self, rows: Iterable[tuple]) -> None:
        """Make ``rows`` (a bag) the cache's content; the difference goes downstream at the next tick."""
        width = len(self.schema)
        wanted: dict[tuple, int] = {}
        for row in rows:
            row = tuple(row)
            if len(row) != width:
                msg = f"{self.label}: row {row} does not match the schema {self.schema}"
                raise OperatorError(msg)
            wanted[row] = wanted.get(row, 0) + 1
        self.replacements += 1
        self.inputs_seen += sum(wanted.values())
        released_now: list[tuple] = []
        for row, leaf_ids in list(self._ids_of_row.items()):
            keep = wanted.pop(row, 0)
            surplus = len(leaf_ids) - keep
            if surplus > 0:
                for leaf in leaf_ids[keep:]:
                    self._pending.append(Delta(row, -1, (leaf,)))
                    self._released.append(row)
                del leaf_ids[keep:]
                released_now.extend([row] * keep)
            else:
                released_now.extend([row] * len(leaf_ids))
                for _ in range(-surplus):
                    leaf_ids.append(self._add(row))
            if not leaf_ids:
                del self._ids_of_row[row]
        for row, count in wanted.items():
            self._ids_of_row[row] = [self._add(row) for _ in range(count)]
        if self._on_release is not None:
            for row in released_now:
                self._on_release(row)

    def _add(self, row: tuple) -> int:
        leaf = self._next_leaf
        self._next_leaf -= 1
        self._pending.append(Delta(row, 1, (leaf,)))
        return leaf

    def rows(self) -> list[tuple]:
        """The cached mappings (a bag, as a list)."""
        return [row for row, leaf_ids in self._ids_of_row.items() for _ in leaf_ids]

    def held(self) -> list[tuple]:
        return self.rows()

    def close(self) -> None:
        super().close()
        self._ids_of_row = {}

    def __len__(self) -> int:
        return sum(len(leaf_ids) for leaf_ids in self._ids_of_row.values())

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "size": len(self), "replacements": self.replacements}
