# distutils: language = c++
"""Compiled sink: the twin of ``base.Sink`` (read it for the semantics), a ``Node`` (``_base``).

The root of every plan: a compiled top operator pushes its batches to it through C, and each row
goes into Γ (``relation``) and the changes since the last ``take()`` (``_pending``) as a tuple of
ids, without a Delta or a lineage tuple. A Python operator's Deltas are counted as the twin counts
them.

Γ is a plain dict (row → multiplicity, read as the twin's Counter is) whose rows are tuples of ints
and None, untracked by the cyclic GC as they enter: a dict that only ever held untracked keys and
int values stays untracked itself, so a full collection does not walk the rows of every query's Γ
(hundreds of thousands with many queries over long windows). The sinks share the tuple of the row
pushed last (``_row_tuple``): where many plans read one window buffer (``engine.shared_plan``), the
row that enters or leaves reaches every sink in turn, which then keeps one tuple, not one each.
"""

from cpython.object cimport PyObject
from libc.stdint cimport int64_t
from libc.string cimport memcmp
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch
from cqels_endpoint.operators._idkeys cimport ids_tuple

from cqels_endpoint.operators.base import Sink as PythonSink

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(PyObject*)


cdef tuple _last_row = None         # the tuple of the row a sink pushed last, untracked
cdef vector[int64_t] _last_ids       # its ids


cdef tuple _row_tuple(const int64_t* ids, Py_ssize_t width):
    """The untracked tuple of a row's ids: the last one made when it has the same ids (tuples
    are immutable: the sinks holding it share it)."""
    global _last_row
    if (_last_row is not None and <Py_ssize_t>_last_ids.size() == width
            and (width == 0 or memcmp(_last_ids.data(), ids, width * sizeof(int64_t)) == 0)):
        return _last_row
    row = ids_tuple(ids, width)
    PyObject_GC_UnTrack(<PyObject*>row)  # ints and None: no cycle goes through it
    _last_ids.assign(ids, ids + width)
    _last_row = row
    return row


cdef class _SinkNode(Node):
    def __cinit__(self, *args, **kwargs):
        self.relation = {}
        self._pending = {}

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, count = batch.count()
        # Counters are dicts: their entries are set and deleted as a dict's.
        cdef dict relation = <dict>self.relation, pending = <dict>self._pending
        cdef tuple row
        cdef int sign
        self.inputs_seen += count
        for i in range(count):
            row = _row_tuple(batch.row(i), batch.width)
            sign = batch.signs[i]
            _add(relation, row, sign)
            _add(pending, row, sign)
        return 0

    def rows(self):
        """Γ now (``base.Sink.rows``: each row as often as its multiplicity, as ``elements()``
        lists them), without an iterator object per row."""
        cdef list rows = []
        cdef Py_ssize_t k
        for row, count in (<dict>self.relation).items():
            for k in range(<Py_ssize_t>count):
                rows.append(row)
        return rows

    def on_batch(self, port, deltas):
        """A Python edge (ORDER BY, a twin): its Deltas counted as the twin counts them."""
        cdef dict relation = <dict>self.relation, pending = <dict>self._pending
        cdef tuple row
        self.inputs_seen += len(deltas)
        for delta in deltas:
            row = delta[0]
            if all(value is None or type(value) is int for value in row):
                PyObject_GC_UnTrack(<PyObject*>row)
            _add(relation, row, delta[1])
            _add(pending, row, delta[1])

    def take(self):
        """``base.Sink.take``, the next changes counted in a new dict."""
        if not self._pending:
            return []
        changes = list((<dict>self._pending).items())
        self._pending = {}
        return changes

    cdef int tick_end(self, int64_t tau) except -1:
        self.last_tau = tau
        return 0


cdef inline int _add(dict counts, tuple row, int sign) except -1:
    cdef object count = counts.get(row)
    cdef int64_t now = (0 if count is None else <int64_t>count) + sign
    if now:
        counts[row] = now
    elif count is not None:
        del counts[row]
    return 0


class Sink(_SinkNode, PythonSink):
    """Compiled twin of :class:`cqels_endpoint.operators.base.Sink`."""

    def __init__(self, schema, label="sink"):
        PythonSink.__init__(self, schema, label)
        self.relation, self._pending = {}, {}  # the twin's Counters, as plain dicts (module docstring)
