# distutils: language = c++
"""Compiled window buffer and multiway join: the twins of ``reference/join.py``, same algorithm,
same output order and counters; read the reference for the semantics.

Both are nodes of ``_base`` (``Node``): the window buffer queues the tick's
deltas in a batch and flushes it at the punctuation, the join takes and emits batches through C. The
join's rows live in C++: per input, a table of its live rows by lineage (each with its ids and the
serials of the outputs made with it, linked in arrival order for the cross products), and the
outputs by serial (row, lineage, the input rows joined); the partial mapping being extended is a
pair of C vectors (values, bound flags), the remaining inputs a bit mask, and each join column is
indexed by the compiled :class:`RingIndex` (C++ hash map of buckets) probed through its C API. An
output retracted through one input leaves its serial in the lists of the other inputs' rows, which
drop such serials once they are half of the list. The Python classes add the shared bases of the
twins (``shared.join``): counters, the window buffer's contract.
"""

from collections import Counter

from cython.operator cimport dereference as deref
from libcpp.deque cimport deque
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport UNBOUND, Ids, Table, hash_key
from cqels_endpoint.operators._indexes cimport RingIndex, key_of_c
from cqels_endpoint.runtime._slots cimport GOLDEN, slot_distance, slot_home, slot_next

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.shared.join import COLLECT_ROWS_PER_TICK, MultiwayJoinBase, WindowBufferBase, join_components

_MAX_INPUTS = 64  # the remaining inputs are a 64-bit mask
DEF ALIVE = 0xFFFFFFFF  # the generation a row that is not leaving dies in


cdef inline void _key_of(Ids& key, const int64_t* leaves, Py_ssize_t count) noexcept:
    cdef Py_ssize_t k
    key.clear()
    for k in range(count):
        key.push_back(leaves[k])
    hash_key(key)


cdef inline JoinRow* _row_at(Table[JoinRow]& rows, int64_t handle) noexcept:
    return rows.at(<size_t>handle)


cdef inline bint _visible(const JoinRow* entry, uint32_t epoch) noexcept:
    return entry.born <= epoch and epoch < entry.dies


cdef inline Py_ssize_t _prefix(const vector[int64_t]& handles, Table[JoinRow]& rows, uint32_t upto, bint by_death) noexcept:
    """How many of ``handles`` (in generation order) have their generation (of birth, or of death
    ``by_death``) at most ``upto``: a binary search."""
    cdef Py_ssize_t low = 0, high = <Py_ssize_t>handles.size(), middle
    cdef JoinRow* entry
    while low < high:
        middle = (low + high) // 2
        entry = rows.at(<size_t>handles[middle])
        if (entry.dies if by_death else entry.born) <= upto:
            low = middle + 1
        else:
            high = middle
    return low


cdef class _JoinNode(Node):
    """The compiled join's state and algorithm (the twin's, with rows in C++: module docstring)."""

    def _setup(self, tuple schema, tuple input_schemas):
        cdef int i, j, column
        cdef vector[int] positions, join_columns, join_positions
        self.n = len(input_schemas)
        self.width = len(schema)
        occurrences = Counter(name for s in input_schemas for name in s)
        self.index = []
        self.unbound = []
        self.rows.resize(self.n)
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
            self.first.push_back(-1)
            self.last.push_back(-1)
            self.epoch.push_back(0)
            self.released.push_back(0)
            self.live.push_back(0)
        self.entering.resize(self.n)
        self.leaving.resize(self.n)
        self.shifts.resize(self.n)
        self.garbage.resize(self.n)
        for i, part in enumerate(join_components(input_schemas)):
            self.component.push_back(part)
        self.restrict_port = -1
        self.collect_per_tick = COLLECT_ROWS_PER_TICK
        self.values.resize(self.width)
        self.bound.resize(self.width)
        self.parts.resize(self.n)
        self.out = Batch(self.width)

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, count = batch.count()
        if batch.width != <Py_ssize_t>self.positions[port].size():
            raise ValueError(f"{self.label}: rows of {batch.width} columns on input {port} of {self.positions[port].size()}")
        self.inputs_seen += count
        self.per_port[port] += count
        self.out.clear()
        for i in range(count):
            if batch.signs[i] > 0:
                self._insert(port, batch, i)
            else:
                self._delete(port, batch, i)
        self.emit_batch(self.out)
        return 0

    cdef JoinRow* _store(self, int port, const int64_t* row, const int64_t* lineage, Py_ssize_t size, uint32_t born) except NULL:
        """Adds a row (visible from generation ``born`` on) to the table, the arrival list and the
        indexes of ``port``."""
        cdef Table[JoinRow]* rows = &self.rows[port]
        cdef JoinRow* entry
        cdef int64_t handle, value
        cdef int slot, column
        cdef Py_ssize_t k
        _key_of(self.probe, lineage, size)
        if rows.find(self.probe) != NULL:
            msg = f"{self.label}: lineage {tuple([lineage[k] for k in range(size)])} entered input {port} twice"
            raise OperatorError(msg)
        entry = rows.add(self.probe)
        for column in range(<int>self.positions[port].size()):
            entry.row.push_back(row[column])
        entry.born = born
        entry.dies = ALIVE
        handle = entry.index
        entry.before = self.last[port]
        entry.after = -1
        if self.last[port] >= 0:
            _row_at(rows[0], self.last[port]).after = handle
        else:
            self.first[port] = handle
        self.last[port] = handle
        for slot in range(<int>self.join_columns[port].size()):
            value = row[self.join_columns[port][slot]]
            if value == UNBOUND:
                (<RingIndex>(<list>self.unbound[port])[slot]).insert_c(0, handle)
            else:
                (<RingIndex>(<list>self.index[port])[slot]).insert_c(value, handle)
        return entry

    cdef int _insert(self, int port, Batch batch, Py_ssize_t i) except -1:
        cdef JoinRow* entry = self._store(port, batch.row(i), batch.lineage(i), batch.lineage_size(i), 0)
        self.live[port] += 1
        return self._extend_from(port, entry.index)

    cdef int _extend_from(self, int port, int64_t handle) except -1:
        """Extends the row ``handle`` of ``port`` over the other inputs (depth first) and notes the
        probe order."""
        cdef int position, column
        cdef int64_t value
        cdef JoinRow* entry = _row_at(self.rows[port], handle)
        for position in range(self.width):
            self.bound[position] = 0
        for column in range(<int>self.positions[port].size()):
            value = entry.row[column]
            if value != UNBOUND:
                position = self.positions[port][column]
                self.values[position] = value
                self.bound[position] = 1
        self.parts[port] = handle
        cdef string order
        order.push_back(<char>port)
        cdef uint64_t remaining = ((<uint64_t>1 << self.n) - 1) if self.n < 64 else ~(<uint64_t>0)
        remaining &= ~(<uint64_t>1 << port)
        self._extend(remaining, order, 1)
        cdef unordered_map[string, size_t].iterator seen = self.order_numbers.find(order)
        if seen == self.order_numbers.end():
            self.order_numbers[order] = self.orders.size()
            self.orders.push_back(order)
            self.order_counts.push_back(1)
        else:
            self.order_counts[deref(seen).second] += 1
        return 0

    cdef int _extend(self, uint64_t remaining, string& order, int depth) except -1:
        cdef int j, s, slot, position, column, best_input = -1, best_slot = -1, cross_input = -1
        cdef int slot_found
        cdef int64_t count, slot_count, size, best_count = -1, cross_count = -1, v, handle
        cdef list slots, unbound_slots
        cdef vector[int64_t] candidates
        cdef vector[int] filled
        cdef size_t c, k
        cdef bint compatible
        cdef JoinRow* entry
        cdef const int64_t* row
        if remaining == 0:
            return self._register()
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
                size = self.live[j]
                if cross_count < 0 or size < cross_count:
                    cross_input = j
                    cross_count = size
        if best_input >= 0:
            j, slot, count = best_input, best_slot, best_count
        else:
            j, slot, count = cross_input, -1, cross_count
        if <int>order.size() == depth:
            order.push_back(<char>j)
        if count == 0:
            self.pruned += 1
            return 0
        self.probes += 1
        cdef Table[JoinRow]* rows = &self.rows[j]
        if slot < 0:
            handle = self.first[j]
            while handle >= 0:
                candidates.push_back(handle)
                handle = _row_at(rows[0], handle).after
        else:
            position = self.join_positions[j][slot]
            (<RingIndex>(<list>self.index[j])[slot]).probe_into(self.values[position], candidates)
            (<RingIndex>(<list>self.unbound[j])[slot]).probe_into(0, candidates)
        cdef uint64_t rest = remaining & ~(<uint64_t>1 << j)
        cdef int width = <int>self.positions[j].size()
        cdef uint32_t epoch = self.epoch[j]
        cdef bint restricted = j == self.restrict_port
        for c in range(candidates.size()):
            entry = _row_at(rows[0], candidates[c])
            # Rows of a staged change, or left with a released one, are in the indexes but not seen.
            if not _visible(entry, epoch) or (restricted and entry.born <= self.restrict_after):
                continue
            row = entry.row.data()
            filled.clear()
            compatible = True
            for column in range(width):
                v = row[column]
                if v == UNBOUND:
                    continue
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
                self.parts[j] = candidates[c]
                self._extend(rest, order, depth + 1)
            for k in range(filled.size()):
                self.bound[filled[k]] = 0
        return 0

    cdef int _register(self) except -1:
        cdef int position, port
        cdef int64_t serial = self.next_serial
        cdef JoinOutput* output
        cdef JoinRow* entry
        cdef size_t k
        self.next_serial += 1
        output = &self.outputs[serial]
        for position in range(self.width):
            if self.bound[position]:
                output.row.push_back(self.values[position])
            else:
                output.row.push_back(UNBOUND)
        for port in range(self.n):
            entry = _row_at(self.rows[port], self.parts[port])
            for k in range(entry.key.size()):
                output.lineage.push_back(entry.key[k])
            entry.derived.push_back(serial)
            output.handles.push_back(self.parts[port])
        self.out.add(output.row.data(), 1, output.lineage.data(), <Py_ssize_t>output.lineage.size())
        return 0

    cdef int _delete(self, int port, Batch batch, Py_ssize_t i) except -1:
        cdef JoinRow* entry
        _key_of(self.probe, batch.lineage(i), batch.lineage_size(i))
        entry = self.rows[port].find(self.probe)
        if entry == NULL:
            msg = f"{self.label}: lineage {batch.lineage_tuple(i)} left input {port} without having entered it"
            raise OperatorError(msg)
        if not _visible(entry, self.epoch[port]) or entry.dies != ALIVE:
            msg = f"{self.label}: lineage {batch.lineage_tuple(i)} left input {port} while a staged change holds it"
            raise OperatorError(msg)
        self._retract(port, entry)
        self.live[port] -= 1
        return self._unstore(port, entry)

    cdef int _retract(self, int port, JoinRow* entry) except -1:
        """Emits -1 for every live output made with ``entry`` (a row of ``port``)."""
        cdef int other
        cdef size_t k
        cdef unordered_map[int64_t, JoinOutput].iterator found
        cdef JoinOutput* output
        cdef vector[int64_t] derived
        derived.swap(entry.derived)
        entry.stale = 0
        for k in range(derived.size()):
            found = self.outputs.find(derived[k])
            if found == self.outputs.end():
                continue  # retracted through another input
            output = &deref(found).second
            self.out.add(output.row.data(), -1, output.lineage.data(), <Py_ssize_t>output.lineage.size())
            for other in range(self.n):
                if other != port:
                    self._forget(other, output.handles[other])
            self.outputs.erase(found)
        return 0

    cdef int _unstore(self, int port, JoinRow* entry) except -1:
        """Drops ``entry`` from the indexes, the arrival list and the table of ``port``."""
        cdef Table[JoinRow]* rows = &self.rows[port]
        cdef int slot
        cdef int64_t value, handle = entry.index
        for slot in range(<int>self.join_columns[port].size()):
            value = entry.row[self.join_columns[port][slot]]
            if value == UNBOUND:
                (<RingIndex>(<list>self.unbound[port])[slot]).remove_c(0, handle)
            else:
                (<RingIndex>(<list>self.index[port])[slot]).remove_c(value, handle)
        if entry.before >= 0:
            _row_at(rows[0], entry.before).after = entry.after
        else:
            self.first[port] = entry.after
        if entry.after >= 0:
            _row_at(rows[0], entry.after).before = entry.before
        else:
            self.last[port] = entry.before
        rows.erase(entry)
        return 0

    cdef int _forget(self, int port, int64_t handle) except -1:
        """One output made with the row ``handle`` of ``port`` was retracted: its serial stays in the
        row's list until half of the list is such serials, then the list drops them."""
        cdef JoinRow* entry = _row_at(self.rows[port], handle)
        cdef size_t k, kept = 0
        entry.stale += 1
        if entry.stale * 2 < entry.derived.size():
            return 0
        for k in range(entry.derived.size()):
            if self.outputs.count(entry.derived[k]):
                entry.derived[kept] = entry.derived[k]
                kept += 1
        entry.derived.resize(kept)
        entry.stale = 0
        return 0

    # ---- a staged change (the twin's docstrings say what each step does) -------------------------

    def stage_rows(self, int port, list added, int64_t first_leaf, removed):
        cdef uint32_t generation = self.released[port] + 1
        cdef Py_ssize_t width = <Py_ssize_t>self.positions[port].size(), column, k = 0
        cdef vector[int64_t] row
        cdef int64_t leaf
        cdef JoinRow* entry
        self._collect(len(added) + len(removed))
        while <uint32_t>self.shifts[port].size() < generation - self.epoch[port]:
            self.shifts[port].push_back(0)
        cdef int64_t* shift = &self.shifts[port][generation - self.epoch[port] - 1]
        for values in added:
            if len(values) != width:
                raise ValueError(f"{self.label}: a row of {len(values)} columns on input {port} of {width}: {values}")
            row.clear()
            for value in values:
                if value is not None and value == UNBOUND:
                    raise ValueError(f"term id {UNBOUND} is reserved for unbound columns (row {values})")
                row.push_back(UNBOUND if value is None else <int64_t>value)
            leaf = first_leaf - k
            k += 1
            entry = self._store(port, row.data(), &leaf, 1, generation)
            self.entering[port].push_back(entry.index)
            shift[0] += 1
        for value in removed:
            leaf = value
            _key_of(self.probe, &leaf, 1)
            entry = self.rows[port].find(self.probe)
            if entry == NULL or entry.dies != ALIVE:
                raise OperatorError(f"{self.label}: lineage {(leaf,)} leaves input {port} but is not in it")
            entry.dies = generation
            self.leaving[port].push_back(entry.index)
            shift[0] -= 1

    def release_rows(self, int port):
        self.released[port] += 1

    def discard_rows(self, int port):
        cdef uint32_t generation = self.released[port] + 1
        cdef JoinRow* entry
        cdef vector[int64_t]* leaving = &self.leaving[port]
        cdef vector[int64_t]* entering = &self.entering[port]
        while not leaving.empty():
            entry = _row_at(self.rows[port], leaving.back())
            if entry.dies != generation:
                break
            entry.dies = ALIVE
            leaving.pop_back()
        while not entering.empty():
            entry = _row_at(self.rows[port], entering.back())
            if entry.born != generation:
                break
            entering.pop_back()
            self._unstore(port, entry)
        if <uint32_t>self.shifts[port].size() >= generation - self.epoch[port]:
            self.shifts[port][generation - self.epoch[port] - 1] = 0

    def flip_rows(self, int port):
        cdef uint32_t old = self.epoch[port], new = self.released[port], generation
        cdef Table[JoinRow]* rows = &self.rows[port]
        cdef vector[int64_t]* entering = &self.entering[port]
        cdef vector[int64_t]* leaving = &self.leaving[port]
        cdef Py_ssize_t entered, left, k, other, start = -1
        cdef int64_t handle, cost
        cdef JoinRow* entry
        cdef JoinOutput* output
        cdef vector[int64_t] derived
        cdef unordered_map[int64_t, JoinOutput].iterator found
        if old == new:
            return
        entered = _prefix(entering[0], rows[0], new, False)
        left = _prefix(leaving[0], rows[0], new, True)
        self.epoch[port] = new
        for generation in range(old, new):
            if not self.shifts[port].empty():
                self.live[port] += self.shifts[port].front()
                self.shifts[port].pop_front()
        self.inputs_seen += entered + left
        self.per_port[port] += entered + left
        self.out.clear()
        # Leaving rows: from their own outputs, or from the outputs of the smallest other input
        # when that is less work (every output has one row of each input).
        for other in range(self.n):
            if other != port and (start < 0 or self.live[other] < self.live[start]):
                start = other
        cost = self.live[start] + <int64_t>self.outputs.size()
        if left <= cost:
            for k in range(left):
                entry = _row_at(rows[0], leaving[0][k])
                if entry.born <= old:
                    self._retract(port, entry)
        else:
            handle = self.first[start]
            while handle >= 0:
                entry = _row_at(self.rows[start], handle)
                derived = entry.derived
                for k in range(<Py_ssize_t>derived.size()):
                    found = self.outputs.find(derived[k])
                    if found == self.outputs.end():
                        continue
                    output = &deref(found).second
                    if _row_at(rows[0], output.handles[port]).dies > new:
                        continue
                    self.out.add(output.row.data(), -1, output.lineage.data(), <Py_ssize_t>output.lineage.size())
                    for other in range(self.n):
                        if other != port:
                            self._forget(other, output.handles[other])
                    self.outputs.erase(found)
                handle = _row_at(self.rows[start], handle).after
        for k in range(left):
            self.garbage[port].push_back(leaving[0][k])
        leaving.erase(leaving.begin(), leaving.begin() + left)
        # Entering rows: extended one by one, or the rows of the smallest other input connected to
        # this one extended over the entering rows only, when that is less work.
        start = -1
        for other in range(self.n):
            if other != port and self.component[other] == self.component[port]:
                if start < 0 or self.live[other] < self.live[start]:
                    start = other
        if start < 0 or entered <= self.live[start] + <int64_t>self.outputs.size():
            for k in range(entered):
                entry = _row_at(rows[0], entering[0][k])
                if entry.dies > new:
                    self._extend_from(port, entering[0][k])
        else:
            self.restrict_port, self.restrict_after = port, old
            try:
                handle = self.first[start]
                while handle >= 0:
                    if _visible(_row_at(self.rows[start], handle), self.epoch[start]):
                        self._extend_from(start, handle)
                    handle = _row_at(self.rows[start], handle).after
            finally:
                self.restrict_port = -1
        entering.erase(entering.begin(), entering.begin() + entered)
        self.emit_batch(self.out)

    cdef Py_ssize_t _collect(self, Py_ssize_t limit) except -1:
        """Deletes up to ``limit`` rows that left with a flipped change, oldest first, input by input."""
        cdef Py_ssize_t done = 0
        cdef int port
        for port in range(self.n):
            while done < limit and not self.garbage[port].empty():
                self._unstore(port, _row_at(self.rows[port], self.garbage[port].front()))
                self.garbage[port].pop_front()
                done += 1
        return done

    cdef int tick_end(self, int64_t tau) except -1:
        self._collect(self.collect_per_tick)
        return Node.tick_end(self, tau)

    def index_sizes(self):
        """Live rows per input."""
        return list(self.live)

    def live_outputs(self):
        return self.outputs.size()

    @property
    def inputs_per_port(self):
        return list(self.per_port)

    @inputs_per_port.setter
    def inputs_per_port(self, counts):
        self.per_port = counts

    @property
    def probe_orders(self):
        """How often each input order was probed (a Counter of tuples of ports, first seen first)."""
        orders = Counter()
        cdef size_t k
        cdef bytes ports
        for k in range(self.orders.size()):
            ports = self.orders[k]
            orders[tuple(ports)] = self.order_counts[k]
        return orders


class MultiwayJoin(_JoinNode, MultiwayJoinBase):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.join.MultiwayJoin`."""

    max_inputs = _MAX_INPUTS

    def __init__(self, input_schemas, label=""):
        MultiwayJoinBase.__init__(self, input_schemas, label)
        self._setup(self.schema, self.input_schemas)


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


cdef class _WindowNode(Node):
    """The compiled window buffer's state: the window's set of triples in a :class:`_Leaves`, the
    tick's deltas in a batch, no Python object per triple."""

    def _setup(self, columns, on_release):
        cdef vector[int] positions
        self.arity = 0
        self.leaves = _Leaves(columns)
        for column in columns:
            positions.clear()
            for position in column:
                positions.push_back(position)
            self.columns.push_back(positions)
        self.pending = Batch(len(columns))
        self.flushing = Batch(len(columns))
        self.on_release = on_release

    cdef bint _consistent(self, const int64_t* ids) noexcept:
        """Whether a triple binds every repeated variable of the pattern to one value."""
        cdef size_t column, k
        for column in range(self.columns.size()):
            for k in range(1, self.columns[column].size()):
                if ids[self.columns[column][k]] != ids[self.columns[column][0]]:
                    return False
        return True

    cdef int _row_into(self, const int64_t* ids, int sign, int64_t leaf) except -1:
        """Queues the delta of the row a (consistent) triple binds."""
        cdef size_t column
        for column in range(self.columns.size()):
            self.pending.push_value(ids[self.columns[column][0]])
        return self.pending.close_row(sign, &leaf, 1)

    cdef int push(self, int port, Batch batch) except -1:
        raise OperatorError(f"{self.label} is a source: feed it with insert()/expire()")

    cdef int punctuate(self, int64_t tau) except -1:
        cdef size_t k
        self.pending.swap(self.flushing)
        try:
            self.emit_batch(self.flushing)
        finally:
            self.flushing.clear()
        Node.punctuate(self, tau)
        # What left in the previous tick goes back now; what left in this one, at the next.
        cdef vector[int64_t] releasing
        releasing.swap(self.releasing)
        self.releasing.swap(self.released)
        if self.on_release is not None:
            for k in range(0, releasing.size(), 3):
                self.on_release((releasing[k], releasing[k + 1], releasing[k + 2]))
        return 0

    def insert(self, int64_t seq, ids):
        """Copy ``seq`` of the encoded triple ``ids`` enters the window."""
        cdef _Leaves leaves = self.leaves
        cdef int64_t triple[3]
        cdef Py_ssize_t record
        triple[0], triple[1], triple[2] = ids
        if not self._consistent(triple):
            self.inputs_seen += 1
            self.rejected += 1
        else:
            if leaves.find_seq(seq) >= 0 or leaves.leaf_of_copy.count(seq):
                raise OperatorError(f"copy {seq} entered the window twice")
            record = leaves.find_triple(triple)
            if record < 0:
                leaves.add(seq, triple)
                self.inputs_seen += 1
                self._row_into(triple, 1, seq)
                return
            leaf = leaves.leaves[record].seq
            leaves.copies[leaf] = leaves.copies[leaf] + 1
            leaves.leaf_of_copy[seq] = leaf
        if self.on_release is not None:
            self.released.push_back(triple[0])
            self.released.push_back(triple[1])
            self.released.push_back(triple[2])

    def expire(self, int64_t seq):
        """Copy ``seq`` leaves the window (ignored if its triple was never kept)."""
        cdef _Leaves leaves = self.leaves
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
        self._row_into(held.ids, -1, leaf)
        if self.on_release is not None:
            self.released.push_back(held.ids[0])
            self.released.push_back(held.ids[1])
            self.released.push_back(held.ids[2])

    def held(self):
        return [(leaf.ids[0], leaf.ids[1], leaf.ids[2]) for leaf in self.leaves.leaves]

    def close(self):
        """Release everything still held (the query is unregistered)."""
        cdef size_t k
        if self.on_release is not None:
            for k in range(0, self.releasing.size(), 3):
                self.on_release((self.releasing[k], self.releasing[k + 1], self.releasing[k + 2]))
            for k in range(0, self.released.size(), 3):
                self.on_release((self.released[k], self.released[k + 1], self.released[k + 2]))
            for triple in self.held():
                self.on_release(triple)
        self.releasing.clear()
        self.released.clear()
        self.pending.clear()
        self.leaves = _Leaves(self._columns)

    def __len__(self):
        return self.leaves.leaves.size()


class WindowBuffer(_WindowNode, WindowBufferBase):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.join.WindowBuffer`."""

    def __init__(self, *args, **kwargs):
        WindowBufferBase.__init__(self, *args, **kwargs)
        self._setup(self._columns, self._on_release)
