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

from cython.operator cimport dereference as deref
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from cqels_endpoint.operators._indexes cimport RingIndex, key_of_c
from cqels_endpoint.runtime._slots cimport GOLDEN, slot_distance, slot_home, slot_next

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


DEF MIN_SLOTS = 16


cdef class _Leaves:
    """The set of triples of one window (``shared.join.WindowCopies``, in C++): each triple named
    by its leaf, with the copies beyond the first counted aside.

    The leaves sit in a deque of 32-byte records (seq, s, p, o), kept dense by moving the last
    record into a hole; two open-addressing tables of 32-bit record numbers (linear probing,
    ``runtime/_slots``: grown by half when 3/4 full; backward-shift deletion) find a record by its
    seq and by its triple.
    """

    def __cinit__(self, columns):
        self._allocate(MIN_SLOTS)
        cdef vector[int] positions
        for column in columns:
            positions.clear()
            for position in column:
                positions.push_back(position)
            self.columns.push_back(positions)

    def __dealloc__(self):
        free(self.by_seq)
        free(self.by_triple)

    cdef object row(self, const int64_t* ids):
        """The row a triple binds (its value for each column), or None when it does not bind a
        repeated variable consistently."""
        cdef size_t column, k
        cdef list row = []
        cdef int64_t value
        for column in range(self.columns.size()):
            value = ids[self.columns[column][0]]
            for k in range(1, self.columns[column].size()):
                if ids[self.columns[column][k]] != value:
                    return None
            row.append(value)
        return tuple(row)

    cdef int _allocate(self, size_t slots) except -1:
        self.by_seq = <uint32_t*>calloc(slots, sizeof(uint32_t))
        self.by_triple = <uint32_t*>calloc(slots, sizeof(uint32_t))
        if self.by_seq == NULL or self.by_triple == NULL:
            raise MemoryError()
        self.slots = slots
        return 0

    cdef size_t _seq_home(self, int64_t seq) noexcept:
        return slot_home(<uint64_t>seq * GOLDEN, self.slots)

    cdef size_t _triple_home(self, const int64_t* ids) noexcept:
        return slot_home(<uint64_t>key_of_c(ids, 3) * GOLDEN, self.slots)

    cdef Py_ssize_t find_seq(self, int64_t seq) noexcept:
        """The record of the leaf ``seq``, or -1."""
        cdef size_t i = self._seq_home(seq)
        cdef uint32_t slot
        while True:
            slot = self.by_seq[i]
            if slot == 0:
                return -1
            if self.leaves[slot - 1].seq == seq:
                return slot - 1
            i = slot_next(i, self.slots)

    cdef Py_ssize_t find_triple(self, const int64_t* ids) noexcept:
        """The record of the triple ``ids``, or -1."""
        cdef size_t i = self._triple_home(ids)
        cdef uint32_t slot
        cdef Leaf* leaf
        while True:
            slot = self.by_triple[i]
            if slot == 0:
                return -1
            leaf = &self.leaves[slot - 1]
            if leaf.ids[0] == ids[0] and leaf.ids[1] == ids[1] and leaf.ids[2] == ids[2]:
                return slot - 1
            i = slot_next(i, self.slots)

    cdef void _index(self, size_t record) noexcept:
        cdef size_t i = self._seq_home(self.leaves[record].seq)
        while self.by_seq[i] != 0:
            i = slot_next(i, self.slots)
        self.by_seq[i] = <uint32_t>(record + 1)
        i = self._triple_home(self.leaves[record].ids)
        while self.by_triple[i] != 0:
            i = slot_next(i, self.slots)
        self.by_triple[i] = <uint32_t>(record + 1)

    cdef int _resize(self, size_t slots) except -1:
        cdef uint32_t* old_seq = self.by_seq
        cdef uint32_t* old_triple = self.by_triple
        cdef size_t record
        self._allocate(slots)
        free(old_seq)
        free(old_triple)
        for record in range(self.leaves.size()):
            self._index(record)
        return 0

    cdef int add(self, int64_t seq, const int64_t* ids) except -1:
        """A new leaf (the caller checked that its triple is not held)."""
        if self.leaves.size() >= 0xFFFFFFFE:
            raise OverflowError("a window holds at most 2**32 - 2 distinct triples")
        if (self.leaves.size() + 1) * 4 > self.slots * 3:
            self._resize(self.slots + self.slots // 2)
        cdef Leaf leaf
        leaf.seq = seq
        leaf.ids[0], leaf.ids[1], leaf.ids[2] = ids[0], ids[1], ids[2]
        self.leaves.push_back(leaf)
        self._index(self.leaves.size() - 1)
        return 0

    cdef void _unindex(self, uint32_t* table, size_t hole, bint by_seq) noexcept:
        # Backward-shift deletion: later slots of the run move back when their home allows it.
        cdef size_t j = hole, home
        cdef uint32_t slot
        while True:
            j = slot_next(j, self.slots)
            slot = table[j]
            if slot == 0:
                break
            if by_seq:
                home = self._seq_home(self.leaves[slot - 1].seq)
            else:
                home = self._triple_home(self.leaves[slot - 1].ids)
            if slot_distance(home, j, self.slots) >= slot_distance(hole, j, self.slots):
                table[hole] = slot
                hole = j
        table[hole] = 0

    cdef size_t _slot_of(self, uint32_t* table, size_t home, uint32_t value) noexcept:
        while table[home] != value:
            home = slot_next(home, self.slots)
        return home

    cdef int remove(self, Py_ssize_t record) except -1:
        """Drops a leaf; the last record moves into its place."""
        cdef uint32_t value = <uint32_t>(record + 1)
        cdef size_t last = self.leaves.size() - 1
        self._unindex(self.by_seq, self._slot_of(self.by_seq, self._seq_home(self.leaves[record].seq), value), True)
        self._unindex(
            self.by_triple, self._slot_of(self.by_triple, self._triple_home(self.leaves[record].ids), value), False
        )
        if <size_t>record != last:
            value = <uint32_t>(last + 1)
            self.by_seq[self._slot_of(self.by_seq, self._seq_home(self.leaves[last].seq), value)] = record + 1
            self.by_triple[self._slot_of(self.by_triple, self._triple_home(self.leaves[last].ids), value)] = record + 1
            self.leaves[record] = self.leaves[last]
        self.leaves.pop_back()
        if self.slots > MIN_SLOTS and self.leaves.size() * 8 < self.slots:
            self._resize(self.slots // 4 if self.slots >= 4 * MIN_SLOTS else MIN_SLOTS)
        return 0


class WindowBuffer(WindowBufferBase):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.join.WindowBuffer`: the window's
    set of triples in a :class:`_Leaves`, no Python object per triple."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._leaves = _Leaves(self._columns)

    def insert(self, int64_t seq, ids):
        """Copy ``seq`` of the encoded triple ``ids`` enters the window."""
        cdef _Leaves leaves = <_Leaves>self._leaves
        cdef int64_t triple[3]
        cdef Py_ssize_t record
        triple[0], triple[1], triple[2] = ids
        row = leaves.row(triple)
        if row is None:
            self.inputs_seen += 1
            self.rejected += 1
        else:
            if leaves.find_seq(seq) >= 0 or leaves.leaf_of_copy.count(seq):
                raise OperatorError(f"copy {seq} entered the window twice")
            record = leaves.find_triple(triple)
            if record < 0:
                leaves.add(seq, triple)
                self.inputs_seen += 1
                self._pending.append(_new_tuple(Delta, (row, 1, (seq,))))
                return
            leaf = leaves.leaves[record].seq
            leaves.copies[leaf] = leaves.copies[leaf] + 1
            leaves.leaf_of_copy[seq] = leaf
        if self._on_release is not None:
            self._released.append((triple[0], triple[1], triple[2]))

    def expire(self, int64_t seq):
        """Copy ``seq`` leaves the window (ignored if its triple was never kept)."""
        cdef _Leaves leaves = <_Leaves>self._leaves
        cdef int64_t leaf = seq
        cdef unordered_map[int64_t, int64_t].iterator found = leaves.leaf_of_copy.find(seq)
        if found != leaves.leaf_of_copy.end():
            leaf = deref(found).second
            leaves.leaf_of_copy.erase(found)
        found = leaves.copies.find(leaf)
        if found != leaves.copies.end():
            if deref(found).second > 1:
                deref(found).second = deref(found).second - 1
            else:
                leaves.copies.erase(found)
            return
        cdef Py_ssize_t record = leaves.find_seq(leaf)
        if record < 0:
            return
        cdef Leaf held = leaves.leaves[record]
        leaves.remove(record)
        self.expired += 1
        self._pending.append(_new_tuple(Delta, (leaves.row(held.ids), -1, (leaf,))))
        if self._on_release is not None:
            self._released.append((held.ids[0], held.ids[1], held.ids[2]))

    def held(self):
        cdef _Leaves leaves = <_Leaves>self._leaves
        return [(leaf.ids[0], leaf.ids[1], leaf.ids[2]) for leaf in leaves.leaves]

    def close(self):
        super().close()
        self._leaves = _Leaves(self._columns)

    def __len__(self):
        return (<_Leaves>self._leaves).leaves.size()
