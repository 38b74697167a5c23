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
from cqels_endpoint.operators.shared.join import COLLECT_ROWS_PER_TICK, MultiwayJoinBase, WindowBufferBase, WindowCopies, join_components

ALIVE = float("inf")  # the generation a row that is not leaving dies in


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

    A *staged change* of one input (a static cache being rebuilt) enters its tables while it is
    staged, so that the evaluation that releases it does work in proportion to what it changes in
    the output, not to its size. Each row has a generation from which it is visible (``born``, 0 for
    a pushed row) and one from which it no longer is (``dies``); probes see a row only when the
    input's current generation (``epoch``) is in between, and skip the others. ``stage_rows(port,
    added, first_leaf, removed)`` adds rows (leaves ``first_leaf``, ``first_leaf - 1``, …) born in
    the generation being staged and marks rows (by leaf) to die in it; ``discard_rows`` undoes
    that generation; ``release_rows`` closes it (the next staged rows make another);
    ``flip_rows(port)``, at the next evaluation, makes the released generations current and emits
    the difference: -1 for the outputs of the rows that left, +1 for those of the rows that
    entered. Each half is computed from the changed rows (their own outputs; each one extended as
    a +1) or, when that is less work, from the rows of the smallest other input (its outputs
    holding a row that left; each of its rows extended over the entering rows only, when the two
    inputs are connected), so a change of 200,000 cache rows against a window of 200 rows costs
    the window's probes. The rows that left are deleted afterwards, ``COLLECT_ROWS_PER_TICK`` at
    each tick's end and as many as are staged in each ``stage_rows``.
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
        # A staged change (class docstring), per input: the generation probes see, the last one
        # released, the generations of the staged rows (handle → born / dies; absent: 0 / ALIVE),
        # the rows entering and leaving with the generations after the current one, the change of
        # the visible rows each of those generations makes, the visible rows, the rows to delete.
        self._epoch = [0] * n
        self._released = [0] * n
        self._born: list[dict[int, int]] = [{} for _ in range(n)]
        self._dies: list[dict[int, int]] = [{} for _ in range(n)]
        self._entering: list[list[int]] = [[] for _ in range(n)]
        self._leaving: list[list[int]] = [[] for _ in range(n)]
        self._shifts: list[list[int]] = [[] for _ in range(n)]
        self._live = [0] * n
        self._garbage: list[list[int]] = [[] for _ in range(n)]
        self._component = join_components(self.input_schemas)
        self._restrict: tuple[int, int] | None = None  # (input, generation): only its rows born after
        self.collect_per_tick = COLLECT_ROWS_PER_TICK
        self.probes = 0
        self.pruned = 0
        self.probe_orders: Counter = Counter()

    # ---- +1 -------------------------------------------------------------------------------------

    def _store(self, port: int, row: tuple, lineage: tuple) -> int:
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
        return handle

    def _visible(self, port: int, handle: int) -> bool:
        return self._born[port].get(handle, 0) <= self._epoch[port] < self._dies[port].get(handle, ALIVE)

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
                size = self._live[j]
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
        restrict = self._restrict
        for handle in candidates:
            # Rows of a staged change, or left with a released one, are in the indexes but not seen.
            if not self._visible(j, handle) or (
                restrict is not None and restrict[0] == j and self._born[j].get(handle, 0) <= restrict[1]
            ):
                continue
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
        handle = self._store(port, row, lineage)
        self._live[port] += 1
        self._extend_from(port, handle, out)

    def _extend_from(self, port: int, handle: int, out: list[Delta]) -> None:
        row, lineage = self._rows[port][handle]
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
        handle = self._handles[port].get(lineage)
        if handle is None:
            msg = f"{self.label}: lineage {lineage} left input {port} without having entered it"
            raise OperatorError(msg)
        if not self._visible(port, handle) or handle in self._dies[port]:
            msg = f"{self.label}: lineage {lineage} left input {port} while a staged change holds it"
            raise OperatorError(msg)
        self._retract(port, lineage, out)
        self._live[port] -= 1
        self._unstore(port, handle)

    def _retract(self, port: int, lineage: tuple, out: list[Delta]) -> None:
        """-1 for every output made with the row ``lineage`` of ``port``."""
        for output_lineage in self._derived[port].pop(lineage, {}):
            self._retract_output(output_lineage, port, out)

    def _retract_output(self, output_lineage: tuple, port: int, out: list[Delta]) -> None:
        """-1 for one output, unregistered from its parts on the inputs other than ``port``."""
        output_row, parts = self._outputs.pop(output_lineage)
        for other, part in enumerate(parts):
            if other == port:
                continue
            registered = self._derived[other][part]
            del registered[output_lineage]
            if not registered:
                del self._derived[other][part]
        out.append(Delta(output_row, -1, output_lineage))

    def _unstore(self, port: int, handle: int) -> None:
        row, lineage = self._rows[port].pop(handle)
        del self._handles[port][lineage]
        self._born[port].pop(handle, None)
        self._dies[port].pop(handle, None)
        self._derived[port].pop(lineage, None)
        for slot, (column, _position) in enumerate(self._join_columns[port]):
            value = row[column]
            if value is None:
                self._unbound[port][slot].remove(0, handle)
            else:
                self._index[port][slot].remove(value, handle)

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

    # ---- a staged change (class docstring) --------------------------------------------------------

    def stage_rows(self, port: int, added: list[tuple], first_leaf: int, removed: Sequence[int]) -> None:
        """Rows ``added`` (leaves ``first_leaf``, ``first_leaf - 1``, …) enter ``port`` with the
        generation being staged, the rows of the leaves ``removed`` leave with it; neither is seen
        before ``flip_rows``."""
        generation = self._released[port] + 1
        self._collect(len(added) + len(removed))
        shifts = self._shifts[port]
        shifts.extend([0] * (generation - self._epoch[port] - len(shifts)))
        width = len(self.input_schemas[port])
        for k, row in enumerate(added):
            if len(row) != width:
                msg = f"{self.label}: a row of {len(row)} columns on input {port} of {width}: {row}"
                raise ValueError(msg)
            handle = self._store(port, tuple(row), (first_leaf - k,))
            self._born[port][handle] = generation
            self._entering[port].append(handle)
            shifts[generation - self._epoch[port] - 1] += 1
        for leaf in removed:
            handle = self._handles[port].get((leaf,))
            if handle is None or handle in self._dies[port]:
                msg = f"{self.label}: lineage {(leaf,)} leaves input {port} but is not in it"
                raise OperatorError(msg)
            self._dies[port][handle] = generation
            self._leaving[port].append(handle)
            shifts[generation - self._epoch[port] - 1] -= 1

    def release_rows(self, port: int) -> None:
        """Closes the generation being staged: ``flip_rows`` makes it current."""
        self._released[port] += 1

    def discard_rows(self, port: int) -> None:
        """Undoes the generation being staged."""
        generation = self._released[port] + 1
        born, dies = self._born[port], self._dies[port]
        leaving, entering = self._leaving[port], self._entering[port]
        while leaving and dies[leaving[-1]] == generation:
            del dies[leaving.pop()]
        while entering and born[entering[-1]] == generation:
            self._unstore(port, entering.pop())
        if len(self._shifts[port]) >= generation - self._epoch[port]:
            self._shifts[port][generation - self._epoch[port] - 1] = 0

    def flip_rows(self, port: int) -> None:
        """Makes the released generations of ``port`` current and emits the difference."""
        old, new = self._epoch[port], self._released[port]
        if old == new:
            return
        born, dies = self._born[port], self._dies[port]
        entering = [handle for handle in self._entering[port] if born[handle] <= new]
        leaving = [handle for handle in self._leaving[port] if dies[handle] <= new]
        del self._entering[port][: len(entering)], self._leaving[port][: len(leaving)]
        self._epoch[port] = new
        shifts = self._shifts[port]
        self._live[port] += sum(shifts[: new - old])
        del shifts[: new - old]
        self.inputs_seen += len(entering) + len(leaving)
        self.inputs_per_port[port] += len(entering) + len(leaving)
        out: list[Delta] = []
        others = [other for other in range(self.arity) if other != port]
        start = min(others, key=lambda other: self._live[other])
        if len(leaving) <= self._live[start] + len(self._outputs):
            for handle in leaving:
                if born.get(handle, 0) <= old:
                    self._retract(port, self._rows[port][handle][1], out)
        else:
            for _row, lineage in list(self._rows[start].values()):
                for output_lineage in list(self._derived[start].get(lineage, {})):
                    part = self._outputs[output_lineage][1][port]
                    if dies.get(self._handles[port][part], ALIVE) <= new:
                        self._derived[port][part].pop(output_lineage)
                        self._retract_output(output_lineage, port, out)
        self._garbage[port].extend(leaving)
        connected = [other for other in others if self._component[other] == self._component[port]]
        start = min(connected, key=lambda other: self._live[other], default=None)
        if start is None or len(entering) <= self._live[start] + len(self._outputs):
            for handle in entering:
                if dies.get(handle, ALIVE) > new:
                    self._extend_from(port, handle, out)
        else:
            self._restrict = (port, old)
            try:
                for handle in list(self._rows[start]):
                    if self._visible(start, handle):
                        self._extend_from(start, handle, out)
            finally:
                self._restrict = None
        self.emit(out)

    def _collect(self, limit: int) -> None:
        """Deletes up to ``limit`` rows that left with a flipped change, oldest first, input by input."""
        for port, garbage in enumerate(self._garbage):
            taken = garbage[:limit]
            del garbage[: len(taken)]
            for handle in taken:
                self._unstore(port, handle)
            limit -= len(taken)

    def on_tick_end(self, tau: int) -> None:
        self._collect(self.collect_per_tick)

    # ---- explain --------------------------------------------------------------------------------

    def index_sizes(self) -> list[int]:
        """Live rows per input."""
        return list(self._live)

    def live_outputs(self) -> int:
        return len(self._outputs)
