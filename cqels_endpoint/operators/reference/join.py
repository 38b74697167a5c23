"""Pure-Python twins of the compiled window buffer and multiway join (``operators/_join.pyx``).

Same constructor signatures, same counters, same output deltas in the same order; the compiled
versions only store their state in typed containers. ``CQELS_PURE_PYTHON=1`` selects these.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.reference.indexes import RingIndex
from cqels_endpoint.operators.shared.join import MultiwayJoinBase, WindowBufferBase, WindowCopies


class WindowBuffer(WindowBufferBase):
    """Leaf source of one stream triple pattern (``shared.join.WindowBufferBase``), its set of
    triples kept in a ``WindowCopies``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._copies = WindowCopies()

    def _row(self, ids: tuple[int, int, int]) -> tuple | None:
        row = []
        for positions in self._columns:
            value = ids[positions[0]]
            for position in positions[1:]:
                if ids[position] != value:
                    return None
            row.append(value)
        return tuple(row)

    def insert(self, seq: int, ids: tuple[int, int, int]) -> None:
        """Copy ``seq`` of the encoded triple ``ids`` enters the window."""
        ids = tuple(ids)
        row = self._row(ids)
        if row is None:
            self.inputs_seen += 1
            self.rejected += 1
        elif self._copies.add(seq, ids):
            self.inputs_seen += 1
            self._pending.append(Delta(row, 1, (seq,)))
            return
        if self._on_release is not None:
            self._released.append(ids)

    def expire(self, seq: int) -> None:
        """Copy ``seq`` leaves the window (ignored if its triple was never kept)."""
        left = self._copies.remove(seq)
        if left is None:
            return
        leaf, ids = left
        self.expired += 1
        self._pending.append(Delta(self._row(ids), -1, (leaf,)))
        if self._on_release is not None:
            self._released.append(ids)

    def held(self) -> list[tuple[int, int, int]]:
        return list(self._copies.triples.values())

    def close(self) -> None:
        super().close()
        self._copies = WindowCopies()

    def __len__(self) -> int:
        return len(self._copies)


class MultiwayJoin(MultiwayJoinBase):
    """n-ary natural join, maintained incrementally with adaptive probing and lineage invalidation.

    Each input keeps its live rows under never-reused int handles and one :class:`RingIndex` per
    *join column* (a variable the input shares with another input): value → handles, newest first,
    plus one for the handles whose value is unbound (compatible with any value).

    A +1 row on input i is stored, then extended depth first: at each step the next input is the
    remaining one with the smallest candidate count for the values bound so far (the size of the
    smallest matching index bucket, among inputs that share a bound variable; inputs sharing none —
    cross products — come last, by size). A zero count prunes the branch without probing. Every
    completed combination is emitted with the concatenated lineage and registered under each of
    its parts. A -1 row on input i drops the row from its indexes and emits -1 for every derived row
    registered under its lineage, unregistering them from the other parts: no probe, no re-join.
    """

    def __init__(self, input_schemas: Sequence[Sequence[str]], label: str = "") -> None:
        super().__init__(input_schemas, label)
        schema = self.schema
        # Output position of every column of every input.
        self._positions = tuple(tuple(schema.index(name) for name in s) for s in self.input_schemas)
        occurrences = Counter(name for s in self.input_schemas for name in s)
        # Per input: (column, output position) of its join columns.
        self._join_columns = tuple(
            tuple((column, schema.index(name)) for column, name in enumerate(s) if occurrences[name] > 1)
            for s in self.input_schemas
        )
        n = self.arity
        # Live rows per input: handle → (row, lineage), and lineage → handle. Handles are never
        # reused, so an index entry can only ever name the row it was made for.
        self._rows: list[dict[int, tuple[tuple, tuple]]] = [{} for _ in range(n)]
        self._handles: list[dict[tuple, int]] = [{} for _ in range(n)]
        self._next_handle = [0] * n
        # Per input and join column: value → handles, and the handles whose value is unbound (key 0).
        self._index = [[RingIndex() for _ in columns] for columns in self._join_columns]
        self._unbound = [[RingIndex() for _ in columns] for columns in self._join_columns]
        self._derived: list[dict[tuple, dict[tuple, None]]] = [{} for _ in range(n)]
        self._outputs: dict[tuple, tuple[tuple, tuple]] = {}  # output lineage → (row, input lineages)
        self.probes = 0
        self.pruned = 0
        self.probe_orders: Counter = Counter()

    # ---- +1 -------------------------------------------------------------------------------------

    def _store(self, port: int, row: tuple, lineage: tuple) -> None:
        handles = self._handles[port]
        if lineage in handles:
            msg = f"{self.label}: lineage {lineage} entered input {port} twice"
            raise OperatorError(msg)
        handle = self._next_handle[port]
        self._next_handle[port] = handle + 1
        handles[lineage] = handle
        self._rows[port][handle] = (row, lineage)
        for slot, (column, _position) in enumerate(self._join_columns[port]):
            value = row[column]
            if value is None:
                self._unbound[port][slot].insert(0, handle)
            else:
                self._index[port][slot].insert(value, handle)

    def _choose(self, partial: list, remaining: list[int]) -> tuple[int, int, int]:
        """(input, join-column slot or -1 for a full scan, candidate count) of the cheapest next probe."""
        best_input, best_slot, best_count = -1, -1, -1
        cross_input, cross_count = -1, -1
        for j in remaining:
            slot_found = -1
            count_found = -1
            for slot, (_column, position) in enumerate(self._join_columns[j]):
                value = partial[position]
                if value is None:
                    continue
                count = self._index[j][slot].count(value) + self._unbound[j][slot].count(0)
                if count_found < 0 or count < count_found:
                    slot_found, count_found = slot, count
            if slot_found >= 0:
                if best_count < 0 or count_found < best_count:
                    best_input, best_slot, best_count = j, slot_found, count_found
            else:
                size = len(self._rows[j])
                if cross_count < 0 or size < cross_count:
                    cross_input, cross_count = j, size
        if best_input >= 0:
            return best_input, best_slot, best_count
        return cross_input, -1, cross_count

    def _extend(
        self,
        partial: list,
        parts: list,
        remaining: list[int],
        order: list[int],
        depth: int,
        out: list[Delta],
    ) -> None:
        if not remaining:
            self._register(tuple(partial), tuple(parts), out)
            return
        j, slot, count = self._choose(partial, remaining)
        if len(order) == depth:
            order.append(j)
        if count == 0:
            self.pruned += 1
            return
        self.probes += 1
        if slot < 0:
            candidates = list(self._rows[j])
        else:
            value = partial[self._join_columns[j][slot][1]]
            candidates = self._index[j][slot].probe(value) + self._unbound[j][slot].probe(0)
        rows = self._rows[j]
        positions = self._positions[j]
        rest = [k for k in remaining if k != j]
        for handle in candidates:
            row, lineage = rows[handle]
            filled = []
            compatible = True
            for column, position in enumerate(positions):
                value = row[column]
                if value is None:
                    continue
                bound = partial[position]
                if bound is None:
                    partial[position] = value
                    filled.append(position)
                elif bound != value:
                    compatible = False
                    break
            if compatible:
                parts[j] = lineage
                self._extend(partial, parts, rest, order, depth + 1, out)
            for position in filled:
                partial[position] = None
        parts[j] = None

    def _register(self, row: tuple, parts: tuple, out: list[Delta]) -> None:
        lineage = tuple(leaf for part in parts for leaf in part)
        self._outputs[lineage] = (row, parts)
        for port, part in enumerate(parts):
            self._derived[port].setdefault(part, {})[lineage] = None
        out.append(Delta(row, 1, lineage))

    def _insert(self, port: int, row: tuple, lineage: tuple, out: list[Delta]) -> None:
        self._store(port, row, lineage)
        partial: list = [None] * len(self.schema)
        for column, position in enumerate(self._positions[port]):
            partial[position] = row[column]
        parts: list = [None] * self.arity
        parts[port] = lineage
        order = [port]
        self._extend(partial, parts, [k for k in range(self.arity) if k != port], order, 1, out)
        self.probe_orders[tuple(order)] += 1

    # ---- -1 -------------------------------------------------------------------------------------

    def _delete(self, port: int, lineage: tuple, out: list[Delta]) -> None:
        handle = self._handles[port].pop(lineage, None)
        if handle is None:
            msg = f"{self.label}: lineage {lineage} left input {port} without having entered it"
            raise OperatorError(msg)
        row, _lineage = self._rows[port].pop(handle)
        for slot, (column, _position) in enumerate(self._join_columns[port]):
            value = row[column]
            if value is None:
                self._unbound[port][slot].remove(0, handle)
            else:
                self._index[port][slot].remove(value, handle)
        derived = self._derived[port].pop(lineage, None)
        if not derived:
            return
        for output_lineage in derived:
            output_row, parts = self._outputs.pop(output_lineage)
            for other, part in enumerate(parts):
                if other == port:
                    continue
                registered = self._derived[other][part]
                del registered[output_lineage]
                if not registered:
                    del self._derived[other][part]
            out.append(Delta(output_row, -1, output_lineage))

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        out: list[Delta] = []
        for row, sign, lineage in deltas:
            if sign > 0:
                self._insert(port, row, lineage, out)
            else:
                self._delete(port, lineage, out)
        self.emit(out)

    # ---- explain --------------------------------------------------------------------------------

    def index_sizes(self) -> list[int]:
        """Live rows per input."""
        return [len(rows) for rows in self._rows]

    def live_outputs(self) -> int:
        return len(self._outputs)
