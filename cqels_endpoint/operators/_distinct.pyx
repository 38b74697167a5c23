# distutils: language = c++
"""Compiled DISTINCT / REDUCED: the twin of ``reference/distinct.py``, same output rows, lineages
and order; read the reference for the semantics. The per-row counters live in :class:`_Counts`
(a cdef class; rows are tuples, so the counters stay a Python dict)."""

from libc.stdint cimport int64_t

from cqels_endpoint.operators.base import Delta, Operator

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__


cdef class _Counts:
    def __init__(self):
        self.counts = {}
        self.emitted = {}
        self.touched = {}
        self.next_handle = 0
        self.input_rows = 0

    cdef int add(self, list deltas) except -1:
        cdef int64_t sign, count
        cdef dict counts = self.counts, touched = self.touched
        for delta in deltas:
            row = delta[0]
            sign = delta[1]
            self.input_rows += sign
            count = <int64_t>counts.get(row, 0) + sign
            if count:
                counts[row] = count
            else:
                del counts[row]
            touched[row] = None
        return 0

    cdef list flush(self):
        cdef dict counts = self.counts, emitted = self.emitted
        cdef list out = []
        cdef bint live
        for row in self.touched:
            live = <int64_t>counts.get(row, 0) > 0
            if live and row not in emitted:
                lineage = (self.next_handle,)
                self.next_handle += 1
                emitted[row] = lineage
                out.append(_new_tuple(Delta, (row, 1, lineage)))
            elif not live and row in emitted:
                out.append(_new_tuple(Delta, (row, -1, emitted.pop(row))))
        self.touched = {}
        return out

    def distinct_rows(self):
        return len(self.emitted)


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
        distinct_rows = counts.distinct_rows()
        return {**Operator.counters(self), "distinct_rows": distinct_rows, "duplicates": counts.input_rows - distinct_rows}
