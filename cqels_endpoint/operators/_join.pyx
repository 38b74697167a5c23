# distutils: language = c++
"""Compiled window buffer and multiway join: the twins of ``reference/join.py``, same algorithm,
same output order and counters; read the reference for the semantics.

The join's state lives in :class:`_JoinCore` (a cdef class): the partial mapping being extended is
a pair of C vectors (values, bound flags), the remaining inputs a bit mask, and each join column is
indexed by the compiled :class:`RingIndex` (C++ hash map of buckets) probed through its C API.
The operators themselves stay Python subclasses of ``base.Operator`` (the window buffer of
``shared.join.WindowBufferBase``, its twin's base) so the punctuation barrier and the counters are
shared with every other operator.
"""

from collections import Counter

from libc.stdint cimport int64_t, uint64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._indexes cimport RingIndex

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.join import MultiwayJoinBase, WindowBufferBase

_MAX_INPUTS = 64  # the remaining inputs are a 64-bit mask
_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__ (2× faster)


cdef class _JoinCore:
    def __init__(self, owner, tuple schema, tuple input_schemas):
        cdef int i, column
        cdef vector[int] positions, join_columns, join_positions
        self.owner = owner
        self.n = len(input_schemas)
        self.width = len(schema)
        occurrences = Counter(name for s in input_schemas for name in s)
        self.index = []
        self.unbound = []
        self.rows = []
        self.handles = []
        self.derived = []
        for i in range(self.n):
            positions.clear()
            join_columns.clear()
            join_positions.clear()
            for column, name in enumerate(input_schemas[i]):
                positions.push_back(schema.index(name))
                if occurrences[name] > 1:
                    join_columns.push_back(column)
                    join_positions.push_back(schema.index(name))
            self.positions.push_back(positions)
            self.join_columns.push_back(join_columns)
            self.join_positions.push_back(join_positions)
            self.index.append([RingIndex() for _ in range(join_columns.size())])
            self.unbound.append([RingIndex() for _ in range(join_columns.size())])
            self.rows.append({})
            self.handles.append({})
            self.derived.append({})
            self.next_handle.push_back(0)
        self.outputs = {}
        self.values.resize(self.width)
        self.bound.resize(self.width)
        self.parts = [None] * self.n
        self.probes = 0
        self.pruned = 0
        self.probe_orders = Counter()

    def apply(self, int port, list deltas, list out):
        for row, sign, lineage in deltas:
            if sign > 0:
                self._insert(port, tuple(row), lineage, out)
            else:
                self._delete(port, lineage, out)

    cdef int _insert(self, int port, tuple row, object lineage, list out) except -1:
        cdef dict handles = <dict>self.handles[port]
        cdef int64_t handle
        cdef int slot, column, position
        cdef object value
        if lineage in handles:
            msg = f"{self.owner.label}: lineage {lineage} entered input {port} twice"
            raise OperatorError(msg)
        handle = self.next_handle[port]
        self.next_handle[port] = handle + 1
        handles[lineage] = handle
        (<dict>self.rows[port])[handle] = (row, lineage)
        for slot in range(<int>self.join_columns[port].size()):
            value = row[self.join_columns[port][slot]]
            if value is None:
                (<RingIndex>(<list>self.unbound[port])[slot]).insert_c(0, handle)
            else:
                (<RingIndex>(<list>self.index[port])[slot]).insert_c(<int64_t>value, handle)
        for position in range(self.width):
            self.bound[position] = 0
        for column in range(<int>self.positions[port].size()):
            value = row[column]
            if value is not None:
                position = self.positions[port][column]
                self.values[position] = <int64_t>value
                self.bound[position] = 1
        for slot in range(self.n):
            self.parts[slot] = None
        self.parts[port] = lineage
        order = [port]
        cdef uint64_t remaining = ((<uint64_t>1 << self.n) - 1) if self.n < 64 else ~(<uint64_t>0)
        remaining &= ~(<uint64_t>1 << port)
        self._extend(remaining, order, 1, out)
        self.probe_orders[tuple(order)] += 1
        return 0

    cdef int _extend(self, uint64_t remaining, list order, int depth, list out) except -1:
        cdef int j, s, slot, position, column, best_input = -1, best_slot = -1, cross_input = -1
        cdef int slot_found
        cdef int64_t count, slot_count, size, best_count = -1, cross_count = -1, v
        cdef list slots, unbound_slots
        cdef dict rows
        cdef tuple entry, row
        cdef object value
        cdef vector[int64_t] candidates
        cdef vector[int] filled
        cdef size_t c, k
        cdef bint compatible
        if remaining == 0:
            return self._register(out)
        for j in range(self.n):
            if not (remaining >> j) & 1:
                continue
            slot_found = -1
            slot_count = -1
            slots = <list>self.index[j]
            unbound_slots = <list>self.unbound[j]
            for s in range(<int>self.join_columns[j].size()):
                position = self.join_positions[j][s]
                if not self.bound[position]:
                    continue
                count = (<RingIndex>slots[s]).count_c(self.values[position]) + (
                    <RingIndex>unbound_slots[s]
                ).count_c(0)
                if slot_count < 0 or count < slot_count:
                    slot_found = s
                    slot_count = count
            if slot_found >= 0:
                if best_count < 0 or slot_count < best_count:
                    best_input = j
                    best_slot = slot_found
                    best_count = slot_count
            else:
                size = len(<dict>self.rows[j])
                if cross_count < 0 or size < cross_count:
                    cross_input = j
                    cross_count = size
        if best_input >= 0:
            j, slot, count = best_input, best_slot, best_count
        else:
            j, slot, count = cross_input, -1, cross_count
        if len(order) == depth:
            order.append(j)
        if count == 0:
            self.pruned += 1
            return 0
        self.probes += 1
        rows = <dict>self.rows[j]
        if slot < 0:
            for handle in rows:
                candidates.push_back(<int64_t>handle)
        else:
            position = self.join_positions[j][slot]
            (<RingIndex>(<list>self.index[j])[slot]).probe_into(self.values[position], candidates)
            (<RingIndex>(<list>self.unbound[j])[slot]).probe_into(0, candidates)
        cdef uint64_t rest = remaining & ~(<uint64_t>1 << j)
        cdef int width = <int>self.positions[j].size()
        for c in range(candidates.size()):
            entry = <tuple>rows[candidates[c]]
            row = <tuple>entry[0]
            filled.clear()
            compatible = True
            for column in range(width):
                value = row[column]
                if value is None:
                    continue
                v = <int64_t>value
                position = self.positions[j][column]
                if self.bound[position]:
                    if self.values[position] != v:
                        compatible = False
                        break
                else:
                    self.values[position] = v
                    self.bound[position] = 1
                    filled.push_back(position)
            if compatible:
                self.parts[j] = entry[1]
                self._extend(rest, order, depth + 1, out)
            for k in range(filled.size()):
                self.bound[filled[k]] = 0
        self.parts[j] = None
        return 0

    cdef int _register(self, list out) except -1:
        cdef int position, port
        row = tuple([self.values[position] if self.bound[position] else None for position in range(self.width)])
        parts = tuple(self.parts)
        lineage = tuple([leaf for part in parts for leaf in part])
        self.outputs[lineage] = (row, parts)
        for port in range(self.n):
            derived = <dict>self.derived[port]
            registered = derived.get(parts[port])
            if registered is None:
                registered = derived[parts[port]] = {}
            registered[lineage] = None
        out.append(_new_tuple(Delta, (row, 1, lineage)))
        return 0

    cdef int _delete(self, int port, object lineage, list out) except -1:
        cdef int slot, other
        handle = (<dict>self.handles[port]).pop(lineage, None)
        if handle is None:
            msg = f"{self.owner.label}: lineage {lineage} left input {port} without having entered it"
            raise OperatorError(msg)
        row = (<dict>self.rows[port]).pop(handle)[0]
        for slot in range(<int>self.join_columns[port].size()):
            value = row[self.join_columns[port][slot]]
            if value is None:
                (<RingIndex>(<list>self.unbound[port])[slot]).remove_c(0, <int64_t>handle)
            else:
                (<RingIndex>(<list>self.index[port])[slot]).remove_c(<int64_t>value, <int64_t>handle)
        derived = (<dict>self.derived[port]).pop(lineage, None)
        if not derived:
            return 0
        for output_lineage in derived:
            output_row, parts = self.outputs.pop(output_lineage)
            for other in range(self.n):
                if other == port:
                    continue
                registered = (<dict>self.derived[other])[parts[other]]
                del registered[output_lineage]
                if not registered:
                    del (<dict>self.derived[other])[parts[other]]
            out.append(_new_tuple(Delta, (output_row, -1, output_lineage)))
        return 0

    def index_sizes(self):
        return [len(rows) for rows in self.rows]

    def live_outputs(self):
        return len(self.outputs)


class MultiwayJoin(MultiwayJoinBase):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.join.MultiwayJoin`."""

    max_inputs = _MAX_INPUTS

    def __init__(self, input_schemas, label=""):
        super().__init__(input_schemas, label)
        self._core = _JoinCore(self, self.schema, self.input_schemas)

    def on_batch(self, port, deltas):
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        out = []
        self._core.apply(port, deltas, out)
        self.emit(out)

    def index_sizes(self):
        """Live rows per input."""
        return self._core.index_sizes()

    @property
    def probes(self):
        return self._core.probes

    @property
    def pruned(self):
        return self._core.pruned

    @property
    def probe_orders(self):
        return self._core.probe_orders

    def live_outputs(self):
        return self._core.live_outputs()


class WindowBuffer(WindowBufferBase):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.join.WindowBuffer`."""

    def _row(self, tuple ids):
        cdef tuple positions
        cdef list row = []
        cdef Py_ssize_t k
        for positions in self._columns:
            value = ids[positions[0]]
            for k in range(1, len(positions)):
                if ids[positions[k]] != value:
                    return None
            row.append(value)
        return tuple(row)

    def insert(self, int64_t seq, ids):
        """The encoded triple ``ids`` enters the window as leaf ``seq``."""
        self.inputs_seen += 1
        ids = tuple(ids)
        row = self._row(ids)
        if row is None:
            self.rejected += 1
            if self._on_release is not None:
                self._released.append(ids)
            return
        if seq in self._triples:
            msg = f"{self.label}: leaf {seq} inserted twice"
            raise OperatorError(msg)
        self._triples[seq] = ids
        self._pending.append(_new_tuple(Delta, (row, 1, (seq,))))

    def expire(self, int64_t seq):
        """Leaf ``seq`` leaves the window (ignored if it was never kept)."""
        ids = self._triples.pop(seq, None)
        if ids is None:
            return
        self.expired += 1
        self._pending.append(_new_tuple(Delta, (self._row(ids), -1, (seq,))))
        if self._on_release is not None:
            self._released.append(ids)
