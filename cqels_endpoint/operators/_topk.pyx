# distutils: language = c++
"""Compiled continuous top-k: the twin of ``reference/topk.py``, same output rows, lineages, order
and counters. The twin re-sorts every row at every changed tick and compares the slice with the one
it emitted; this one keeps the rows sorted and follows the slice's edges, so that a delta costs
O(log n) order-key comparisons and a tick O(c log c) for its c changed rows, whatever the window
and the slice sizes.

Every input row is kept, by lineage (an ``_idkeys.Table``), with its order key computed
once when it arrives (``TopKBase._key``, a ``RowOrderKey`` that keeps each id's key part, then the
lineage: a Python tuple, compared in Python) and
its node in a ``std::set`` ordered by that key. Two iterators mark the slice ``[m, m + k)`` of
``ORDER BY … LIMIT k OFFSET m``: ``first`` at position m and ``last`` at m + k - 1. An insertion or
a removal before one of them moves it by one step, and the one row that crosses the edge enters
or leaves the slice; the delta's own row is placed by one comparison with each edge. The rows that
entered or left, and the rows replaced under their lineage, are noted; at the end of the tick they
are compared with the slice emitted before: -1 for the rows that left it (in their previous order),
then +1 for the rows that entered (in their new order), exactly the twin's deltas.

The operator is a ``Node`` (``_base``): batches come in through C, each row read as the tuple its
order key is computed from, and the tick's deltas leave as one batch.

A change can only alter the slice if it happens in the influence region, the first m + k positions
(an insertion there shifts the slice; a removal there pulls the next row in, or shrinks the relation
below m + k). ``counters()`` reports ticks with such a change as ``recomputations`` and the other
changed ticks as ``skipped_ticks`` (the twin recomputes at every changed tick). Without LIMIT
(``OFFSET`` alone) the region is unbounded; with ``LIMIT 0`` it is empty and nothing is tracked.
"""

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cython.operator cimport dereference as deref, preincrement as inc, predecrement as dec

from libc.stdint cimport int64_t

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport as_delta, lineage_key
from cqels_endpoint.runtime._expressions cimport RowOrderKey

from operator import itemgetter

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.topk import TopKBase

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__
_by_key = itemgetter(0)


cdef inline object _lineage_of(object key):
    return key[len(key) - 1]  # the order key ends with the lineage (built without wraparound)


cdef class _TopRows:
    def __init__(self, key_of, Py_ssize_t offset, limit):
        self.key_of = key_of
        self.row_key = key_of if isinstance(key_of, RowOrderKey) else None
        self.offset = offset
        self.stop = -1 if limit is None else offset + limit
        self.empty = limit == 0
        self.first = self.order.end()
        self.last = self.order.end()
        self.dirty = False
        self.shown_rows = 0

    def __dealloc__(self):
        cdef TopEntry* entry
        cdef size_t i
        for i in range(self.entries.pool_size()):  # erased entries are reset: no references
            entry = self.entries.at(i)
            Py_XDECREF(entry.order)
            Py_XDECREF(entry.row)
            Py_XDECREF(entry.shown_order)
            Py_XDECREF(entry.shown_row)

    cdef void _touch(self, TopEntry* entry) noexcept:
        if not entry.touched:
            entry.touched = True
            self.touched.push_back(entry)

    cdef void _enter(self, TopEntry* entry) noexcept:
        if not entry.in_slice:
            entry.in_slice = True
            self._touch(entry)

    cdef void _leave(self, TopEntry* entry) noexcept:
        if entry.in_slice:
            entry.in_slice = False
            self._touch(entry)

    cdef int insert(self, object row, object lineage) except -1:
        cdef TopEntry* entry
        cdef size_t size = self.order.size()
        cdef bint first_was_set = False, before_first = False, last_was_set = False, behind = False, fresh = False
        if self.row_key is not None:
            key = self.row_key.key_of(row if type(row) is tuple else tuple(row), lineage, True)
        else:
            key = tuple(self.key_of(row)) + (lineage,)
        lineage_key(lineage, self.probe)
        entry = self.entries.find(self.probe)
        if entry != NULL and entry.live:
            raise OperatorError(f"top-k: lineage {lineage} entered twice")
        # Where the row goes against the slice's edges; these comparisons may raise: nothing has changed yet.
        if not self.empty:
            last_was_set = self.stop >= 0 and self.last != self.order.end()
            behind = last_was_set and not key < <object>deref(self.last).order
            if not behind:
                first_was_set = self.first != self.order.end()
                before_first = first_was_set and key < <object>deref(self.first).order
        if entry == NULL:
            entry = self.entries.add(self.probe)
            fresh = True
        entry.order = <PyObject*>key  # the order's comparisons read it
        try:
            entry.position = top_insert(self.order, entry)
        except BaseException:
            entry.order = NULL
            if fresh:
                self.entries.erase(entry)
            raise
        Py_INCREF(key)
        Py_INCREF(row)
        entry.row = <PyObject*>row
        entry.live = True
        if self.empty or behind:
            return 0  # behind the region (or no region): nothing moves
        self.dirty = True
        # The first edge: a row before it pushes the row at m - 1 (or the new row) to m.
        if before_first:
            dec(self.first)
            self._enter(deref(self.first))
        elif not first_was_set and <Py_ssize_t>size == self.offset:
            self.first = self.order.end()
            dec(self.first)
            self._enter(deref(self.first))
        # The last edge: a row before it pushes the row at m + k - 1 out of the slice.
        if last_was_set:
            self._leave(deref(self.last))
            dec(self.last)
        elif self.stop >= 0 and <Py_ssize_t>size == self.stop - 1:
            self.last = self.order.end()
            dec(self.last)
        # The new row itself is in the region; it is in the slice unless it went before position m.
        # (Replacing a row shown under this lineage, it finds the old one touched by its removal.)
        if (first_was_set and not before_first) or (self.first != self.order.end() and deref(self.first) == entry):
            self._enter(entry)
        return 0

    cdef int remove(self, object lineage) except -1:
        cdef TopEntry* entry
        lineage_key(lineage, self.probe)
        entry = self.entries.find(self.probe)
        if entry == NULL or not entry.live:
            raise OperatorError(f"top-k: lineage {lineage} left without entering")
        if not self.empty:
            if entry.in_slice:
                self.dirty = True
                if deref(self.first) == entry:
                    inc(self.first)
                    if self.first != self.order.end():
                        self._enter(deref(self.first))
                if self.stop >= 0 and self.last != self.order.end():
                    inc(self.last)  # the row after the slice (if any) moves into it
                    if self.last != self.order.end():
                        self._enter(deref(self.last))
                self._leave(entry)
            elif self.first == self.order.end():
                self.dirty = True  # at most m rows: all before the slice
            elif <object>entry.order < <object>deref(self.first).order:
                self.dirty = True  # before position m: the slice shifts by one
                self._leave(deref(self.first))
                inc(self.first)
                if self.first != self.order.end():
                    self._enter(deref(self.first))
                if self.stop >= 0 and self.last != self.order.end():
                    inc(self.last)
                    if self.last != self.order.end():
                        self._enter(deref(self.last))
        self.order.erase(entry.position)
        Py_XDECREF(entry.order)
        Py_XDECREF(entry.row)
        entry.order = entry.row = NULL
        entry.live = False
        if entry.shown_row != NULL:
            self._touch(entry)
        elif not entry.touched:
            self.entries.erase(entry)
        return 0

    cdef int feed(self, list deltas) except -1:
        cdef tuple entry
        for delta in deltas:
            entry = as_delta(delta)
            row, sign, lineage = entry[0], entry[1], entry[2]
            if sign > 0:
                self.insert(row, lineage)
            else:
                self.remove(lineage)
        return 0

    cdef list flush(self):
        """The tick's deltas (the twin's), or None when no change fell in the influence region."""
        cdef list left = [], entered = []
        cdef TopEntry* entry
        cdef size_t i
        cdef bint now, same
        if not self.dirty:
            return None
        self.dirty = False
        for i in range(self.touched.size()):
            entry = self.touched[i]
            entry.touched = False
            now = entry.live and entry.in_slice
            same = now and entry.shown_row != NULL and <object>entry.row == <object>entry.shown_row
            if entry.shown_row != NULL and not same:
                left.append((<object>entry.shown_order, <object>entry.shown_row))
            if now and not same:
                entered.append((<object>entry.order, <object>entry.row))
            if entry.shown_row != NULL:
                Py_XDECREF(entry.shown_order)
                Py_XDECREF(entry.shown_row)
                entry.shown_order = entry.shown_row = NULL
                self.shown_rows -= 1
            if now:
                Py_INCREF(<object>entry.order)
                Py_INCREF(<object>entry.row)
                entry.shown_order, entry.shown_row = entry.order, entry.row
                self.shown_rows += 1
            elif not entry.live:
                self.entries.erase(entry)
        self.touched.clear()
        left.sort(key=_by_key)
        entered.sort(key=_by_key)
        cdef list out = [_new_tuple(Delta, (row, -1, _lineage_of(key))) for key, row in left]
        out.extend([_new_tuple(Delta, (row, 1, _lineage_of(key))) for key, row in entered])
        return out


cdef class _TopKNode(Node):
    """The operator's C half: input batches go to the sorted rows row by row, the tick's deltas
    downstream as one batch."""

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, count = batch.count()
        self.inputs_seen += count
        for i in range(count):
            if batch.signs[i] > 0:
                self._rows.insert(batch.row_tuple(i), batch.lineage_tuple(i))
            else:
                self._rows.remove(batch.lineage_tuple(i))
        if count:
            self._changed = True
        return 0

    def _live_rows(self):
        return self._rows.order.size()

    def on_batch(self, port, list deltas):
        self.inputs_seen += len(deltas)
        self._rows.feed(deltas)
        if deltas:
            self._changed = True

    cdef int tick_end(self, int64_t tau) except -1:
        if not self._changed:
            return 0
        self._changed = False
        out = self._rows.flush()
        if out is None:
            self.skipped_ticks += 1
            return 0
        self.recomputations += 1
        return self.emit_deltas(out, self.out)


class TopK(_TopKNode, TopKBase):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.topk.TopK` (module docstring)."""

    def __init__(self, *args, **kwargs):
        TopKBase.__init__(self, *args, **kwargs)
        self._rows = _TopRows(self._key, self.offset, self.limit)
        self.out = Batch(len(self.schema))

    def _slice_size(self):
        return self._rows.shown_rows

    def counters(self):
        return {**TopKBase.counters(self), "live_rows": self._live_rows()}
