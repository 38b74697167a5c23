# distutils: language = c++
"""Compiled OPTIONAL (LeftJoin with its filter): the twin of ``reference/optional.py``, same output
rows, lineages, order and counters; read the reference for the semantics.

The state is in C++ containers: per side, a table lineage → row (``_idkeys.Table``, the row as
``_idkeys.Ids``), an index key → the rows with that key, a list of the rows whose key has an unbound
column, and every row in arrival order (the twin's dict orders, which fix the output order); each
match is a node linked into its left row's and its right row's lists (``_links``), so a retraction
visits exactly the matches of the row that left, in the order the twin stores them, and rebuilds
each joined row from the two rows (the filter is never evaluated again). A delta costs O(1) plus its
candidates, as in the twin. A filtered OPTIONAL still pays its filter on decoded terms per candidate
pair. A ``Node`` (``_base``): batches come in through C, each row read as a tuple by the core.
"""

from cpython.long cimport PyLong_FromLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cython.operator cimport dereference as deref
from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node

from cqels_endpoint.operators._idkeys cimport UNBOUND, as_delta, hash_key, ids_tuple, lineage_key, row_ids
from cqels_endpoint.operators._links cimport free_right_list, link, unlink

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.shared.optional import JOINED, PADDED
from cqels_endpoint.operators.shared.schemas import union_schema
from cqels_endpoint.runtime.decoding import DecodedRow
from cqels_endpoint.runtime.expressions import compile_filter

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__


cdef class _OptionalCore:
    def __init__(self, owner, tuple schema, tuple left_schema, tuple right_schema, passes, decoder):
        cdef vector[int] left_keys, right_keys
        self.owner = owner
        self.width = len(schema)
        self.left_width = len(left_schema)
        for name in left_schema:
            if name in right_schema:
                left_keys.push_back(left_schema.index(name))
                right_keys.push_back(right_schema.index(name))
        self.keys.push_back(left_keys)
        self.keys.push_back(right_keys)
        for name in right_schema:
            self.right_positions.push_back(schema.index(name))
        self.passes = passes
        self.decoder = decoder
        self.names = {name: i for i, name in enumerate(schema)}
        self.rejected = 0
        self.unmatched_left = 0

    def __dealloc__(self):
        # Every match is in one right row's list: free them from there (the maps go next).
        cdef size_t i
        for i in range(self.right_rows.pool_size()):  # erased entries are reset: no matches
            free_right_list(&self.right_rows.at(i).matches)

    # ---- state ----------------------------------------------------------------------------------

    cdef RowMap* _rows(self, int side) noexcept:
        return &self.left_rows if side == 0 else &self.right_rows

    cdef BucketMap* _index(self, int side) noexcept:
        return &self.left_index if side == 0 else &self.right_index

    cdef bint _key(self, int side, Ids& row) noexcept:
        """``self.key`` := ``row``'s key on the shared columns; False when one of them is unbound."""
        cdef vector[int]* positions = &self.keys[side]
        cdef size_t k
        cdef int64_t value
        self.key.clear()
        for k in range(positions.size()):
            value = row[deref(positions)[k]]
            if value == UNBOUND:
                return False
            self.key.push_back(value)
        hash_key(self.key)
        return True

    cdef Row* _store(self, int side, object row, object lineage) except NULL:
        cdef RowMap* rows = self._rows(side)
        cdef BucketMap* index
        cdef Row* entry
        cdef Bucket* bucket
        lineage_key(lineage, self.probe)
        if rows.find(self.probe) != NULL:
            raise OperatorError(f"{self.owner.label}: lineage {lineage} entered input {side} twice")
        row_ids(row, self.ids)
        entry = rows.add(self.probe)
        entry.matches.owner = entry
        entry.row.swap(self.ids)
        if self._key(side, entry.row):
            index = self._index(side)
            bucket = index.find(self.key)
            if bucket == NULL:
                bucket = index.add(self.key)
            entry.bucket = bucket
            entry.prev = bucket.tail
            if bucket.tail != NULL:
                bucket.tail.next = entry
            else:
                bucket.head = entry
            bucket.tail = entry
        else:
            entry.prev = self.loose_tail[side]
            if self.loose_tail[side] != NULL:
                self.loose_tail[side].next = entry
            else:
                self.loose_head[side] = entry
            self.loose_tail[side] = entry
        entry.older = self.newest[side]
        if self.newest[side] != NULL:
            self.newest[side].newer = entry
        else:
            self.oldest[side] = entry
        self.newest[side] = entry
        return entry

    cdef Row* _find(self, int side, object lineage) except NULL:
        cdef Row* entry
        lineage_key(lineage, self.probe)
        entry = self._rows(side).find(self.probe)
        if entry == NULL:
            raise OperatorError(f"{self.owner.label}: lineage {lineage} left input {side} without having entered it")
        return entry

    cdef int _drop(self, int side, Row* entry) except -1:
        """Unlinks ``entry`` (its matches already gone) and erases it."""
        cdef Bucket* bucket = entry.bucket
        if entry.prev != NULL:
            entry.prev.next = entry.next
        elif bucket != NULL:
            bucket.head = entry.next
        else:
            self.loose_head[side] = entry.next
        if entry.next != NULL:
            entry.next.prev = entry.prev
        elif bucket != NULL:
            bucket.tail = entry.prev
        else:
            self.loose_tail[side] = entry.prev
        if entry.older != NULL:
            entry.older.newer = entry.newer
        else:
            self.oldest[side] = entry.newer
        if entry.newer != NULL:
            entry.newer.older = entry.older
        else:
            self.newest[side] = entry.older
        if bucket != NULL and bucket.head == NULL:
            self._index(side).erase(bucket)
        self._rows(side).erase(entry)
        return 0

    cdef int _collect(self, int side, Ids& row) except -1:
        """``self.candidates`` := the ``side`` rows that may be compatible with ``row`` of the other
        side: the loose ones, then those of its key — or, when ``row``'s key has an unbound column
        and cannot use the index, every other row in arrival order."""
        cdef Row* entry = self.loose_head[side]
        cdef Bucket* bucket
        self.candidates.clear()
        while entry != NULL:
            self.candidates.push_back(entry)
            entry = entry.next
        if not self._key(1 - side, row):
            entry = self.oldest[side]
            while entry != NULL:
                if entry.bucket != NULL:
                    self.candidates.push_back(entry)
                entry = entry.newer
            return 0
        bucket = self._index(side).find(self.key)
        if bucket != NULL:
            entry = bucket.head
            while entry != NULL:
                self.candidates.push_back(entry)
                entry = entry.next
        return 0

    cdef object _merge(self, Row* left, Row* right, bint check):
        """The merged output row, or None when incompatible or (``check``) rejected by the filter."""
        cdef size_t column
        cdef int position
        cdef int64_t value, bound
        self.merged = left.row
        self.merged.resize(self.width, UNBOUND)
        for column in range(self.right_positions.size()):
            value = right.row[column]
            if value == UNBOUND:
                continue
            position = self.right_positions[column]
            bound = self.merged[position]
            if bound == UNBOUND:
                self.merged[position] = value
            elif bound != value:
                return None
        row = ids_tuple(self.merged.data(), self.width)
        if check and self.passes is not None and not self.passes(DecodedRow(self.names, row, self.decoder)):
            self.rejected += 1
            return None
        return row

    cdef tuple _padded(self, Row* left):
        self.merged = left.row
        self.merged.resize(self.width, UNBOUND)
        return ids_tuple(self.merged.data(), self.width)

    cdef tuple _lineage(self, int tag, Row* left, Row* right):
        """``(tag, *left lineage, *right lineage)`` (no right part when ``right`` is NULL)."""
        cdef const int64_t* left_ids = left.key.data()
        cdef const int64_t* right_ids = NULL
        cdef Py_ssize_t n = left.key.size(), m = 0, i
        if right != NULL:
            right_ids = right.key.data()
            m = right.key.size()
        cdef tuple out = PyTuple_New(1 + n + m)
        cdef object item = PyLong_FromLongLong(tag)
        Py_INCREF(item)
        PyTuple_SET_ITEM(out, 0, item)
        for i in range(n):
            item = PyLong_FromLongLong(left_ids[i])
            Py_INCREF(item)
            PyTuple_SET_ITEM(out, 1 + i, item)
        for i in range(m):
            item = PyLong_FromLongLong(right_ids[i])
            Py_INCREF(item)
            PyTuple_SET_ITEM(out, 1 + n + i, item)
        return out

    # ---- deltas ---------------------------------------------------------------------------------

    cdef int left_insert(self, object row, object lineage, list out) except -1:
        cdef Row* entry = self._store(0, row, lineage)
        cdef Row* right
        cdef size_t i
        self._collect(1, entry.row)
        for i in range(self.candidates.size()):
            right = self.candidates[i]
            joined = self._merge(entry, right, True)
            if joined is not None:
                link(&entry.matches, &right.matches)
                out.append(_new_tuple(Delta, (joined, 1, self._lineage(JOINED, entry, right))))
        if entry.matches.count == 0:
            self.unmatched_left += 1
            out.append(_new_tuple(Delta, (self._padded(entry), 1, self._lineage(PADDED, entry, NULL))))
        return 0

    cdef int left_delete(self, object lineage, list out) except -1:
        cdef Row* entry = self._find(0, lineage)
        cdef Row* right
        if entry.matches.count == 0:
            self.unmatched_left -= 1
            out.append(_new_tuple(Delta, (self._padded(entry), -1, self._lineage(PADDED, entry, NULL))))
        while entry.matches.first != NULL:
            right = <Row*>entry.matches.first.right.owner
            joined = self._merge(entry, right, False)
            out.append(_new_tuple(Delta, (joined, -1, self._lineage(JOINED, entry, right))))
            unlink(entry.matches.first)
        self._drop(0, entry)
        return 0

    cdef int right_insert(self, object row, object lineage, list out) except -1:
        cdef Row* entry = self._store(1, row, lineage)
        cdef Row* left
        cdef size_t i
        self._collect(0, entry.row)
        for i in range(self.candidates.size()):
            left = self.candidates[i]
            joined = self._merge(left, entry, True)
            if joined is None:
                continue
            if left.matches.count == 0:
                self.unmatched_left -= 1
                out.append(_new_tuple(Delta, (self._padded(left), -1, self._lineage(PADDED, left, NULL))))
            link(&left.matches, &entry.matches)
            out.append(_new_tuple(Delta, (joined, 1, self._lineage(JOINED, left, entry))))
        return 0

    cdef int right_delete(self, object lineage, list out) except -1:
        cdef Row* entry = self._find(1, lineage)
        cdef Row* left
        while entry.matches.first != NULL:
            left = <Row*>entry.matches.first.left.owner
            joined = self._merge(left, entry, False)
            out.append(_new_tuple(Delta, (joined, -1, self._lineage(JOINED, left, entry))))
            unlink(entry.matches.first)
            if left.matches.count == 0:
                self.unmatched_left += 1
                out.append(_new_tuple(Delta, (self._padded(left), 1, self._lineage(PADDED, left, NULL))))
        self._drop(1, entry)
        return 0

    cdef list feed(self, int port, list deltas):
        cdef list out = []
        cdef tuple entry
        if port == 0:
            for delta in deltas:
                entry = as_delta(delta)
                row, sign, lineage = entry[0], entry[1], entry[2]
                if sign > 0:
                    self.left_insert(row, lineage, out)
                else:
                    self.left_delete(lineage, out)
        else:
            for delta in deltas:
                entry = as_delta(delta)
                row, sign, lineage = entry[0], entry[1], entry[2]
                if sign > 0:
                    self.right_insert(row, lineage, out)
                else:
                    self.right_delete(lineage, out)
        return out


cdef class _OptionalNode(Node):
    """The operator's C half: each input batch goes to the core row by row, what it answers
    downstream as one batch."""

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, count = batch.count()
        cdef _OptionalCore core = self._core
        cdef list out = []
        self.inputs_seen += count
        self.per_port[port] += count
        for i in range(count):
            if port == 0:
                if batch.signs[i] > 0:
                    core.left_insert(batch.row_tuple(i), batch.lineage_tuple(i), out)
                else:
                    core.left_delete(batch.lineage_tuple(i), out)
            elif batch.signs[i] > 0:
                core.right_insert(batch.row_tuple(i), batch.lineage_tuple(i), out)
            else:
                core.right_delete(batch.lineage_tuple(i), out)
        return self.emit_deltas(out, self.out)

    def on_batch(self, int port, list deltas):
        self.inputs_seen += len(deltas)
        self.per_port[port] += len(deltas)
        self.emit(self._core.feed(port, deltas))

    @property
    def inputs_per_port(self):
        return list(self.per_port)

    @inputs_per_port.setter
    def inputs_per_port(self, counts):
        self.per_port = counts


class OptionalJoin(_OptionalNode, Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.optional.OptionalJoin`."""

    arity = 2

    def __init__(self, left_schema, right_schema, exprs=(), decoder=None, label="", **context):
        Operator.__init__(self, union_schema(left_schema, right_schema), label or "optional")
        self.left_schema, self.right_schema = tuple(left_schema), tuple(right_schema)
        if exprs and decoder is None:
            raise ValueError("an OPTIONAL with a filter needs a decoder")
        passes = compile_filter(tuple(exprs), **context) if exprs else None
        self._core = _OptionalCore(self, self.schema, self.left_schema, self.right_schema, passes, decoder)
        self.inputs_per_port = [0, 0]
        self.out = Batch(len(self.schema))

    @property
    def rejected(self):
        return (<_OptionalCore>self._core).rejected

    def counters(self):
        cdef _OptionalCore core = <_OptionalCore>self._core
        return {
            **Operator.counters(self),
            "inputs_per_port": list(self.inputs_per_port),
            "sizes": [core.left_rows.size(), core.right_rows.size()],
            "unmatched_left": core.unmatched_left,
            "rejected": core.rejected,
        }
