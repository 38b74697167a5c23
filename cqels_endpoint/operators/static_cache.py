"""Cached mappings of a static sub-pattern, as a source of leaf deltas for the multiway join.

The planner computes the mappings of a maximal static sub-pattern (pyoxigraph at registration; the
Spark rebuild later), encodes them and hands them to :meth:`StaticCache.replace`. The cache
diffs them against what it holds, as bags, and queues the difference as +1/-1 leaf deltas that go
downstream with the next punctuation, so a swap alone emits nothing
(docs/ARCHITECTURE.md, "Static data and caches"). A rebuild is applied instead as a difference
already computed, in parts (:meth:`StaticCache.stage`, each part under one short hold of the
engine's lock) released downstream as one change by :meth:`StaticCache.release_staged`: an
evaluation between two parts still sees the content from before the rebuild. A multiway join
downstream (the usual case) takes each part into its own tables as it is staged, invisible to its
probes, and the releasing evaluation only flips it visible and emits what it changes in the join's
output (``MultiwayJoin.stage_rows``/``flip_rows``); any other operator downstream gets the change
as deltas at the release (batches made part by part for a compiled one). The join downstream
indexes the rows on its join columns, so stream rows probe the cache by index.
"""

from __future__ import annotations

from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators import COMPILED
from cqels_endpoint.operators.base import Delta, Source
from cqels_endpoint.operators.shared.join import MultiwayJoinBase

if COMPILED:
    from cqels_endpoint.operators._base import Batch, Node
else:
    Batch = Node = ()  # no compiled node: every downstream gets Deltas


# How many rows that left with a released change give their dictionary references back per tick.
RELEASE_ROWS_PER_TICK = 1024


class StaticCache(Source):
    """Source of the cached mappings of one static sub-pattern (rows aligned with ``schema``).

    Leaf ids are negative (-1, -2, …) so they never collide with the engine's stream ``seq``
    numbers. ``replace(rows)`` takes over one reference to every id of every row it is given:
    references of rows it already held are handed back through ``on_release`` at once, those of
    rows that left the cache when the tick after the one that retracted them punctuates (the
    evaluator may decode the -1 rows after their tick's punctuation returned); of the rows a
    released change removed, ``RELEASE_ROWS_PER_TICK`` in each tick from then on.
    """

    fed_by = "replace()"

    def __init__(
        self,
        schema: tuple[str, ...],
        label: str = "",
        on_release: Callable[[tuple], None] | None = None,
    ) -> None:
        super().__init__(schema, label or "static cache", on_release)
        self._ids_of_row = LeafIds()
        self._next_leaf = -1
        self.replacements = 0
        # A change being staged, part by part: the rows added (leaves ``first``, ``first - 1``, …),
        # the rows removed and their leaves (an int64 array: no object per leaf). The removed rows'
        # references are kept until the tick after the one that sends their -1 downstream, as for
        # replace(). No Delta per row: a Delta (a tuple subclass) stays tracked by the collector,
        # and the 200,000 of a large change triggered full collections while it was staged.
        self._staged: list[tuple[list[tuple], int, list[tuple], array]] = []
        self._staged_removed: list[tuple] = []
        # For a compiled downstream other than a join (a ``Node``), the staged deltas as batches, one
        # per part; in ``_pending`` from the release on (``_batches_pending``).
        self._staged_batches: list = []
        self._batches_pending = False
        # Whether the change being staged goes into the multiway join downstream (decided at its
        # first part: only when the join has seen every row held, none pending from replace());
        # the rows released into the join, flipped visible at the next punctuation, and where in
        # ``_pending`` the first of those releases came.
        self._into_join = False
        self._flipping = 0
        self._flip_at = 0
        # Rows that left with a released change, not yet handed to ``_released`` (at most
        # ``RELEASE_ROWS_PER_TICK`` a tick).
        self._retired: deque[tuple] = deque()

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
        ids_of_row = self._ids_of_row
        for row, leaf_ids in list(ids_of_row.items()):
            keep = wanted.pop(row, 0)
            surplus = len(leaf_ids) - keep
            if surplus > 0:
                # The ids beyond the first ``keep`` leave, in the order they were added.
                leaving = [ids_of_row.pop(row) for _ in range(surplus)]
                for leaf in reversed(leaving):
                    self._pending.append(Delta(row, -1, (leaf,)))
                    self._released.append(row)
                released_now.extend([row] * keep)
            else:
                released_now.extend([row] * len(leaf_ids))
                for _ in range(-surplus):
                    ids_of_row.add(row, self._add(row))
        for row, count in wanted.items():
            for _ in range(count):
                ids_of_row.add(row, self._add(row))
        if self._on_release is not None:
            for row in released_now:
                self._on_release(row)

    def stage(self, added: Sequence[tuple], removed: Sequence[tuple]) -> None:
        """One part of a change: ``added`` rows enter (taking over one reference per id, as
        ``replace`` does), ``removed`` rows, held now, leave. Nothing goes downstream before
        ``release_staged``."""
        width = len(self.schema)
        wrong = next((row for row in added if len(row) != width), None)
        if wrong is not None:
            msg = f"{self.label}: row {wrong} does not match the schema {self.schema}"
            raise OperatorError(msg)
        downstream = self.downstream
        if not self._staged:
            self._into_join = isinstance(downstream, MultiwayJoinBase) and not self._pending
        added, removed = list(added), list(removed)
        ids_of_row, first = self._ids_of_row, self._next_leaf
        for k, row in enumerate(added):
            ids_of_row.add(row, first - k)
        self._next_leaf = first - len(added)
        leaves = array("q")
        self._staged.append((added, first, removed, leaves))
        for row in removed:
            if row not in ids_of_row:
                del removed[len(leaves) :]  # what was staged of this part stays undoable
                msg = f"{self.label}: row {row} leaves the cache but is not in it"
                raise OperatorError(msg)
            leaves.append(ids_of_row.pop(row))
        self._staged_removed.extend(removed)
        self.inputs_seen += len(added) + len(removed)
        if self._into_join:
            # Into the join's tables now, a part at a time under the engine's short holds of its
            # lock, so that the evaluation that releases the change only flips it visible.
            downstream.stage_rows(self.downstream_port, added, first, leaves)
        elif isinstance(downstream, Node) and (added or removed):
            self._staged_batches.append(Batch.of(width, _part_deltas(added, first, removed, leaves)))

    def discard_staged(self) -> None:
        """Undoes the change staged so far (its install failed): the cache holds what it held
        before; the references of the rows it added, never sent downstream, are handed back."""
        for added, first, removed, leaves in reversed(self._staged):
            for row, leaf in zip(reversed(removed), reversed(leaves)):
                self._ids_of_row.add(row, leaf)
            for k in reversed(range(len(added))):
                self._ids_of_row.remove(added[k], first - k)
                if self._on_release is not None:
                    self._on_release(added[k])
        if self._into_join:
            self.downstream.discard_rows(self.downstream_port)
        self._staged, self._staged_removed, self._staged_batches = [], [], []

    def release_staged(self) -> None:
        """The change staged so far goes downstream with the next tick, as one change."""
        self.replacements += 1
        downstream = self.downstream
        if self._into_join:
            downstream.release_rows(self.downstream_port)
            if not self._flipping:
                self._flip_at = len(self._pending)
            self._flipping += sum(len(added) + len(removed) for added, _first, removed, _leaves in self._staged)
        elif isinstance(downstream, Node):
            self._pending.extend(self._staged_batches)
            self._batches_pending = self._batches_pending or bool(self._staged_batches)
        else:
            for part in self._staged:
                self._pending.extend(map(Delta._make, _part_deltas(*part)))
        self._retired.extend(self._staged_removed)
        self._staged, self._staged_removed, self._staged_batches = [], [], []

    def on_punctuation(self, tau: int) -> None:
        # The references of the rows a large change removed are handed back over the following
        # ticks, a bounded number each: all at once, a tenth of a million-row cache is 300,000
        # dictionary releases (0.2–0.3 s) inside one push. They stay valid meanwhile; only the
        # dictionary's entries live a few ticks longer.
        retired = self._retired
        if retired:
            self._released.extend(retired.popleft() for _ in range(min(len(retired), RELEASE_ROWS_PER_TICK)))
        if self._flipping:
            # What was pending before the release goes first, then the join flips the change
            # visible and emits what it changes, then what came after.
            pending, self._pending = self._pending, []
            self._emit_in_order(pending[: self._flip_at])
            self.outputs_emitted += self._flipping
            self._flipping = 0
            self.downstream.flip_rows(self.downstream_port)
            self._emit_in_order(pending[self._flip_at :])
            self._batches_pending = False
        elif self._batches_pending:
            self._batches_pending = False
            pending, self._pending = self._pending, []
            self._emit_in_order(pending)
        super().on_punctuation(tau)

    def _emit_in_order(self, pending: list) -> None:
        """Sends ``pending`` (Deltas and the batches of a released change) downstream in order."""
        run: list[Delta] = []
        for item in pending:
            if isinstance(item, Batch):
                self.emit(run)
                run = []
                self.outputs_emitted += len(item)
                self.downstream.push_batch(self.downstream_port, item)
            else:
                run.append(item)
        self.emit(run)

    def _add(self, row: tuple) -> int:
        leaf = self._next_leaf
        self._next_leaf -= 1
        self._pending.append(Delta(row, 1, (leaf,)))
        return leaf

    def released_values(self, column: int) -> set[int]:
        """The ids in ``column`` of the cached mappings the next evaluation sees: without the part
        of a change staged so far. They change only with ``replacements``."""
        counts: Counter = Counter()
        for row, leaf_ids in self._ids_of_row.items():
            counts[row[column]] += len(leaf_ids)
        for added, _first, removed, _leaves in self._staged:
            for row in added:
                counts[row[column]] -= 1
            for row in removed:
                counts[row[column]] += 1
        return {value for value, count in counts.items() if count > 0 and value is not None}

    def rows(self) -> list[tuple]:
        """The cached mappings (a bag, as a list), with the part of a change staged so far."""
        return [row for row, leaf_ids in self._ids_of_row.items() for _ in leaf_ids]

    def held(self) -> list[tuple]:
        return [*self.rows(), *self._staged_removed, *self._retired]

    def close(self) -> None:
        super().close()
        self._ids_of_row = LeafIds()
        self._staged, self._staged_removed, self._staged_batches = [], [], []
        self._batches_pending = self._into_join = False
        self._flipping = 0
        self._retired.clear()

    def __len__(self) -> int:
        return len(self._ids_of_row)

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "size": len(self), "replacements": self.replacements}


def _part_deltas(added: list[tuple], first: int, removed: list[tuple], leaves: array) -> list[tuple]:
    """A staged part as ``(row, sign, lineage)`` tuples: the rows added, then those removed."""
    return [
        *((row, 1, (first - k,)) for k, row in enumerate(added)),
        *((row, -1, (leaf,)) for row, leaf in zip(removed, leaves)),
    ]


class LeafIds:
    """The leaf ids of each cached row (a bag: a row held n times has n ids), kept out of the cyclic
    garbage collector for rows held once.

    A list per row would be a million GC-tracked objects in a cache of a million rows, walked by
    every full collection (``runtime.untracked``). Here a row held once costs one entry of ``_first``
    (row → id: a tuple of ints, which CPython untracks, and an int), and only the ids beyond the
    first of a row held several times are in a list (``_more``, never empty).
    """

    def __init__(self) -> None:
        self._first: dict[tuple, int] = {}
        self._more: dict[tuple, list[int]] = {}
        self._size = 0

    def __len__(self) -> int:
        """All ids: the size of the bag."""
        return self._size

    def __contains__(self, row: tuple) -> bool:
        return row in self._first

    def add(self, row: tuple, leaf: int) -> None:
        if row in self._first:
            self._more.setdefault(row, []).append(leaf)
        else:
            self._first[row] = leaf
        self._size += 1

    def pop(self, row: tuple) -> int:
        """One id of ``row`` (which must be held), the last added first; removed."""
        more = self._more.get(row)
        if more:
            leaf = more.pop()
            if not more:
                del self._more[row]
        else:
            leaf = self._first.pop(row)
        self._size -= 1
        return leaf

    def remove(self, row: tuple, leaf: int) -> None:
        """Removes the id ``leaf`` of ``row`` (both held)."""
        more = self._more.get(row)
        if self._first[row] == leaf:
            if more:
                self._first[row] = more.pop(0)
            else:
                del self._first[row]
        else:
            more.remove(leaf)
        if more is not None and not more:
            del self._more[row]
        self._size -= 1

    def items(self) -> Iterator[tuple[tuple, list[int]]]:
        """``(row, its ids)`` for every row held."""
        more = self._more
        for row, leaf in self._first.items():
            yield row, [leaf, *more[row]] if row in more else [leaf]
