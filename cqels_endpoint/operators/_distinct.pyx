# distutils: language = c++
"""Compiled DISTINCT / REDUCED: the twin of ``reference/distinct.py``, same output rows, lineages
and order; read the reference for the semantics.

The per-row counters live in a C++ table keyed by the row's ids (``_idkeys.Table``): one entry per
distinct input row, holding its multiplicity and its output handle, so a delta costs one hash of the
row and one O(1) table update, and an entry is about a hundred bytes instead of the twin's row
tuple, its integers and two dict slots. The tick's touched rows are a vector of entry pointers
(entries do not move), whose keys are the rows the output batch takes. A ``Node`` (``_base``): batches
in and out through C.
"""

from libc.stdint cimport int64_t

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport hash_key

from cqels_endpoint.operators.base import Operator


cdef class _DistinctNode(Node):
    def _setup(self, Py_ssize_t width):
        self.out = Batch(width)

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, k, count = batch.count()
        cdef const int64_t* row
        cdef RowCount* entry
        self.inputs_seen += count
        for i in range(count):
            row = batch.row(i)
            self.probe.clear()
            for k in range(batch.width):
                self.probe.push_back(row[k])
            hash_key(self.probe)
            entry = self.rows.find(self.probe)
            if entry == NULL:
                entry = self.rows.add(self.probe)
            entry.count += batch.signs[i]
            self.input_rows += batch.signs[i]
            if not entry.touched:
                entry.touched = True
                self.touched.push_back(entry)
        return 0

    cdef int tick_end(self, int64_t tau) except -1:
        cdef RowCount* entry
        cdef size_t i
        cdef int64_t lineage
        self.out.clear()
        for i in range(self.touched.size()):
            entry = self.touched[i]
            entry.touched = False
            if entry.count > 0 and not entry.shown:
                entry.shown = True
                entry.handle = self.next_handle
                self.next_handle += 1
                self.distinct_rows += 1
                lineage = entry.handle
                self.out.add(entry.key.data(), 1, &lineage, 1)
            elif entry.count <= 0 and entry.shown:
                entry.shown = False
                self.distinct_rows -= 1
                lineage = entry.handle
                self.out.add(entry.key.data(), -1, &lineage, 1)
            if entry.count == 0 and not entry.shown:
                self.rows.erase(entry)
        self.touched.clear()
        self.emit_batch(self.out)
        return 0


class Distinct(_DistinctNode, Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.distinct.Distinct`."""

    def __init__(self, schema, label=""):
        Operator.__init__(self, tuple(schema), label or "distinct")
        self._setup(len(self.schema))

    def counters(self):
        return {
            **Operator.counters(self),
            "distinct_rows": self.distinct_rows,
            "duplicates": self.input_rows - self.distinct_rows,
        }
