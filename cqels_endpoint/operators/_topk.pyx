# distutils: language = c++
"""Compiled continuous top-k: the twin of ``reference/topk.py``, same output rows, lineages, order
and counters (the twin re-sorts everything at every changed tick; this one keeps the rows sorted).
The order key and the emission of the slice are ``TopKBase``'s (shared/topk.py).

Every input row is kept, by lineage, with its order key computed once when it arrives, in a sorted
list (:class:`_SortedRows`, a cdef class; keys are Python tuples, so the list is a Python list kept
with ``bisect``): a row enters or leaves in O(log n) comparisons plus an O(n) memmove of the list,
which is cheap next to the comparisons for the window sizes a query holds.

The output is the slice of positions ``[m, m + k)``. A change can only alter it if it happens in the
influence region, the first ``m + k`` positions at the moment it happens (an insertion there shifts
the slice; a removal there pulls the next row in, or shrinks the relation below ``m + k``). So the
operator only notes, per delta, whether its position fell in that region; at the end of a tick in
which one did, it re-reads the slice (O(m + k)) and ``TopKBase`` emits its difference with the slice
emitted before; in every other tick it emits nothing. ``counters()`` reports both kinds of tick.
Without LIMIT (``OFFSET`` alone) the region is unbounded and every change re-reads the slice; with
``LIMIT 0`` the region is empty.
"""

from bisect import bisect_left, bisect_right

from cqels_endpoint.operators.shared.topk import TopKBase


cdef class _SortedRows:
    def __init__(self, key, region):
        self.key = key
        self.keys = []
        self.rows = {}
        self.region = -1 if region is None else region
        self.dirty = False

    cdef int add(self, list deltas) except -1:
        cdef list keys = self.keys
        cdef dict rows = self.rows
        cdef Py_ssize_t position, region = self.region
        cdef tuple key
        key_of = self.key
        for delta in deltas:
            row = delta[0]
            lineage = delta[2]
            if <long>delta[1] > 0:
                key = tuple(key_of(row)) + (lineage,)
                position = bisect_right(keys, key)
                keys.insert(position, key)
                rows[lineage] = (key, row)
            else:
                key = <tuple>(<tuple>rows.pop(lineage))[0]
                position = bisect_left(keys, key)
                del keys[position]
            if region < 0 or position < region:
                self.dirty = True
        return 0

    cdef dict between(self, Py_ssize_t start, Py_ssize_t stop):
        """The rows at positions ``[start, stop)`` (``stop`` -1: to the end), lineage -> row, in order."""
        cdef dict rows = self.rows, out = {}
        cdef tuple key
        for key in (self.keys[start:] if stop < 0 else self.keys[start:stop]):
            lineage = key[len(key) - 1]  # built without wraparound: no negative index
            out[lineage] = (<tuple>rows[lineage])[1]
        return out


class TopK(TopKBase):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.topk.TopK` (module docstring)."""

    def __init__(self, *args, **kwargs):
        TopKBase.__init__(self, *args, **kwargs)
        self._rows = _SortedRows(self._key, 0 if self.limit == 0 else self._stop)

    def on_batch(self, port, list deltas):
        self.inputs_seen += len(deltas)
        (<_SortedRows>self._rows).add(deltas)
        if deltas:
            self._changed = True

    def _slice(self):
        cdef _SortedRows rows = <_SortedRows>self._rows
        if not rows.dirty:
            return None
        rows.dirty = False
        return rows.between(self.offset, -1 if self._stop is None else self._stop)

    def counters(self):
        return {**TopKBase.counters(self), "live_rows": len((<_SortedRows>self._rows).keys)}
