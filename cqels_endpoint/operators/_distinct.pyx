# distutils: language = c++
"""Compiled DISTINCT / REDUCED: the twin of ``reference/distinct.py``, same output rows, lineages
and order; read the reference for the semantics.

The per-row counters live in a C++ table keyed by the row's ids (``_idkeys.Table``): one entry per
distinct input row, holding its multiplicity and its output handle, so a delta costs one hash of the
row and one O(1) table update, and an entry is about a hundred bytes instead of the twin's row
tuple, its integers and two dict slots. The tick's touched rows are a vector of entry pointers
(entries do not move) beside the list of their row tuples, which the output reuses.
"""

from libc.stdint cimport int64_t

from cqels_endpoint.operators._idkeys cimport as_delta, row_key

from cqels_endpoint.operators.base import Delta, Operator

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__


cdef class _Counts:
    def __init__(self):
        self.touched_rows = []
        self.next_handle = 0
        self.input_rows = 0
        self.distinct_rows = 0

    cdef int add(self, list deltas) except -1:
        cdef int64_t sign
        cdef RowCount* entry
        cdef tuple item
        for delta in deltas:
            item = as_delta(delta)
            row = item[0]
            sign = item[1]
            row_key(row, self.probe)
            entry = self.rows.find(self.probe)
            if entry == NULL:
                entry = self.rows.add(self.probe)
            entry.count += sign
            self.input_rows += sign
            if not entry.touched:
                entry.touched = True
                self.touched.push_back(entry)
                self.touched_rows.append(row)
        return 0

    cdef list flush(self):
        cdef list out = []
        cdef list rows = self.touched_rows
        cdef RowCount* entry
        cdef size_t i
        for i in range(self.touched.size()):
            entry = self.touched[i]
            entry.touched = False
            row = rows[i]
            if entry.count > 0 and not entry.shown:
                entry.shown = True
                entry.handle = self.next_handle
                self.next_handle += 1
                self.distinct_rows += 1
                out.append(_new_tuple(Delta, (row, 1, (entry.handle,))))
            elif entry.count <= 0 and entry.shown:
                entry.shown = False
                self.distinct_rows -= 1
                out.append(_new_tuple(Delta, (row, -1, (entry.handle,))))
            if entry.count == 0 and not entry.shown:
                self.rows.erase(entry)
        self.touched.clear()
        self.touched_rows = []
        return out


class Distinct(Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.distinct.Distinct`."""

    def __init__(self, schema, label=""):
        super().__init__(tuple(schema), label or "distinct")
        self._counts = _Counts()

    def on_batch(self, port, list deltas):
        self.inputs_seen += len(deltas)
        (<_Counts>self._counts).add(deltas)

    def on_tick_end(self, tau):
        self.emit((<_Counts>self._counts).flush())

    def counters(self):
        cdef _Counts counts = <_Counts>self._counts
        return {
            **Operator.counters(self),
            "distinct_rows": counts.distinct_rows,
            "duplicates": counts.input_rows - counts.distinct_rows,
        }
