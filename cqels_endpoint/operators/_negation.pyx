# distutils: language = c++
"""Compiled FILTER NOT EXISTS / FILTER EXISTS / MINUS, with its state in C++ containers.

The semantics, in short (``reference/negation.py`` states the definition): port 0 is the left
input (the rows kept or dropped, and the output schema), port 1 the right input (the inner pattern
of (NOT) EXISTS, or the right side of MINUS). Every live left row carries the live right rows
*matching* it — agreeing on the shared columns and, for (NOT) EXISTS, passing the optional inner
``condition`` on the merged row (§18.6 ``substitute``); for MINUS sharing at least one bound column
(§18.5). A left row is in the output iff it has no match (NOT EXISTS, MINUS) or some (EXISTS).
Output changes are collected per left lineage and emitted once per tick, at the punctuation (for
each changed lineage in the order it first changed: -1 of the row shown before, then +1 of the row
kept), so a row that flips twice inside a tick emits nothing. Both inputs are bucketed on ``keys``
(shared columns bound in every row, the planner knows which); the other shared columns may be
unbound and are checked per candidate.

Two modes, picked once from the schemas:

- **by key** (every shared column is a key and there is no condition: a match is an equal key, the
  common case): right rows are not kept at all, only counted per key. A right delta is one hash
  update, O(1); only a count crossing 0 touches the left rows of its key (their output flips). A
  left delta is O(1). Nothing per right row is stored, so a large right side costs a counter per key.
- **pairwise** (unbound shared columns, or an inner condition): right rows are kept per key, and
  each match is a node linked into both its rows' lists, so a right -1 visits exactly the left rows
  it matched and a left -1 unlinks exactly its matches — nothing is re-evaluated to retract. A left
  +1 tests the right rows of its key, a right +1 the left rows of its key (the condition is a Python
  call per candidate pair, on decoded terms in the engine).

Rows and lineages are ``_idkeys.Ids`` (ids inline, hashed once); buckets, left rows and right rows
are entries of ``_idkeys.Table``s, which never move them, so the bucket lists, the matches and the
tick's dirty list point to them. A left lineage that left the input stays until the flush that
retracts it.
"""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node

from cqels_endpoint.operators._idkeys cimport (
    UNBOUND,
    as_delta,
    hash_key,
    ids_tuple,
    lineage_key,
    lineage_tuple,
    row_ids,
)
from cqels_endpoint.operators._links cimport free_right_list, link, unlink

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.shared.negation import NegationBase
from cqels_endpoint.plan.nodes import NegationKind

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__


cdef class _NegationCore:
    def __init__(self, owner, tuple left_schema, tuple right_schema, tuple shared, tuple keys, kind, condition):
        self.owner = owner
        for c in keys:
            self.left_key.push_back(left_schema.index(c))
            self.right_key.push_back(right_schema.index(c))
        for c in shared:
            if c not in keys:
                self.checked_left.push_back(left_schema.index(c))
                self.checked_right.push_back(right_schema.index(c))
        for i, c in enumerate(right_schema):
            if c not in left_schema:
                self.right_extra.push_back(i)
        self.condition = condition
        # MINUS needs one shared column bound on both sides; a bound key column guarantees it.
        self.needs_common = kind is NegationKind.MINUS and not keys
        self.wanted_matches = kind is NegationKind.EXISTS
        self.by_key = self.checked_left.empty() and condition is None and not self.needs_common
        self.evaluations = 0
        self.live_left = 0
        self.live_right = 0
        self.kept = 0

    def __dealloc__(self):
        # Every match is in one right row's list: free them from there (the maps go next).
        cdef size_t i
        for i in range(self.rights.pool_size()):  # erased entries are reset: no matches
            free_right_list(&self.rights.at(i).matches)

    # ---- buckets and matches ----------------------------------------------------------------

    cdef Bucket* _bucket(self, Ids& row, vector[int]& positions, object original, bint create) except? NULL:
        """The bucket of ``row``'s key (created when ``create``; else NULL if there is none)."""
        cdef size_t k
        cdef int64_t value
        cdef Bucket* bucket
        self.key.clear()
        for k in range(positions.size()):
            value = row[positions[k]]
            if value == UNBOUND:
                msg = f"{self.owner.label}: a shared column is unbound in {original}; the planner must refuse this input"
                raise OperatorError(msg)
            self.key.push_back(value)
        hash_key(self.key)
        bucket = self.buckets.find(self.key)
        if bucket == NULL and create:
            bucket = self.buckets.add(self.key)
        return bucket

    cdef int _drop_bucket(self, Bucket* bucket) except -1:
        if bucket.left_head == NULL and bucket.right_head == NULL and bucket.right_count == 0:
            self.buckets.erase(bucket)
        return 0

    cdef bint _matches(self, Left* left, Right* right) except -1:
        cdef bint common = False
        cdef size_t k
        cdef int64_t left_value, right_value
        for k in range(self.checked_left.size()):
            left_value, right_value = left.row[self.checked_left[k]], right.row[self.checked_right[k]]
            if left_value != UNBOUND and right_value != UNBOUND:
                if left_value != right_value:
                    return False
                common = True
        if self.needs_common and not common:
            return False
        if self.condition is None:
            return True
        # The inner FILTER reads the value the inner pattern bound where substitution left a left
        # column free, then the right columns the left lacks.
        self.ids = left.row
        for k in range(self.checked_left.size()):
            if self.ids[self.checked_left[k]] == UNBOUND:
                self.ids[self.checked_left[k]] = right.row[self.checked_right[k]]
        for k in range(self.right_extra.size()):
            self.ids.push_back(right.row[self.right_extra[k]])
        self.evaluations += 1
        return bool(self.condition(ids_tuple(self.ids.data(), <Py_ssize_t>self.ids.size())))

    cdef void _touch(self, Left* left) noexcept:
        if not left.dirty:
            left.dirty = True
            self.dirty.push_back(left)

    cdef void _touch_bucket(self, Bucket* bucket) noexcept:
        cdef Left* left = bucket.left_head
        while left != NULL:
            self._touch(left)
            left = left.next

    # ---- deltas -------------------------------------------------------------------------------

    cdef int left_insert(self, object row, object lineage) except -1:
        cdef Left* left
        cdef Bucket* bucket
        cdef Right* right
        row_ids(row, self.ids)
        bucket = self._bucket(self.ids, self.left_key, row, True)
        lineage_key(lineage, self.probe)
        left = self.lefts.find(self.probe)
        if left == NULL:
            left = self.lefts.add(self.probe)
            left.matches.owner = left
        else:
            if left.live:
                msg = f"{self.owner.label}: lineage {lineage} entered the left input twice"
                raise OperatorError(msg)
            if left.emitted and not left.has_shown:
                # Back with another row in the tick that retracts the old one: keep the old to retract.
                left.replaced = <uint32_t>self.replaced.size()
                self.replaced.push_back(left.row)
                left.has_shown = True
        left.row = self.ids
        left.live = True
        left.bucket = bucket
        left.prev = bucket.left_tail
        left.next = NULL
        if bucket.left_tail != NULL:
            bucket.left_tail.next = left
        else:
            bucket.left_head = left
        bucket.left_tail = left
        self.live_left += 1
        if not self.by_key:
            right = bucket.right_head
            while right != NULL:
                if self._matches(left, right):
                    link(&left.matches, &right.matches)
                right = right.next
        self._touch(left)
        return 0

    cdef int left_expire(self, object lineage) except -1:
        cdef Left* left
        cdef Bucket* bucket
        lineage_key(lineage, self.probe)
        left = self.lefts.find(self.probe)
        if left == NULL or not left.live:
            msg = f"{self.owner.label}: lineage {lineage} left the left input without entering it"
            raise OperatorError(msg)
        while left.matches.first != NULL:
            unlink(left.matches.first)
        bucket = left.bucket
        if left.prev != NULL:
            left.prev.next = left.next
        else:
            bucket.left_head = left.next
        if left.next != NULL:
            left.next.prev = left.prev
        else:
            bucket.left_tail = left.prev
        left.prev = left.next = NULL
        left.bucket = NULL
        left.live = False
        self.live_left -= 1
        self._drop_bucket(bucket)
        self._touch(left)
        return 0

    cdef int right_insert(self, object row, object lineage) except -1:
        cdef Bucket* bucket
        cdef Right* right
        cdef Left* left
        row_ids(row, self.ids)
        bucket = self._bucket(self.ids, self.right_key, row, True)
        self.live_right += 1
        bucket.right_count += 1
        if self.by_key:
            if bucket.right_count == 1:
                self._touch_bucket(bucket)
            return 0
        lineage_key(lineage, self.probe)
        if self.rights.find(self.probe) != NULL:
            bucket.right_count -= 1
            self.live_right -= 1
            self._drop_bucket(bucket)
            msg = f"{self.owner.label}: lineage {lineage} entered the right input twice"
            raise OperatorError(msg)
        right = self.rights.add(self.probe)
        right.matches.owner = right
        right.row = self.ids
        right.bucket = bucket
        right.prev = bucket.right_tail
        right.next = NULL
        if bucket.right_tail != NULL:
            bucket.right_tail.next = right
        else:
            bucket.right_head = right
        bucket.right_tail = right
        left = bucket.left_head
        while left != NULL:
            if self._matches(left, right):
                link(&left.matches, &right.matches)
                if left.matches.count == 1:
                    self._touch(left)
            left = left.next
        return 0

    cdef int right_expire(self, object row, object lineage) except -1:
        cdef Bucket* bucket
        cdef Right* right
        cdef Left* left
        if self.by_key:
            # The -1 carries the row of the +1 it cancels (operators/base.py): its key finds the count.
            row_ids(row, self.ids)
            bucket = self._bucket(self.ids, self.right_key, row, False)
            if bucket == NULL or bucket.right_count == 0:
                msg = f"{self.owner.label}: lineage {lineage} left the right input without entering it"
                raise OperatorError(msg)
            bucket.right_count -= 1
            self.live_right -= 1
            if bucket.right_count == 0:
                self._touch_bucket(bucket)
                self._drop_bucket(bucket)
            return 0
        lineage_key(lineage, self.probe)
        right = self.rights.find(self.probe)
        if right == NULL:
            msg = f"{self.owner.label}: lineage {lineage} left the right input without entering it"
            raise OperatorError(msg)
        while right.matches.first != NULL:
            left = <Left*>right.matches.first.left.owner
            unlink(right.matches.first)
            if left.matches.count == 0:
                self._touch(left)
        bucket = right.bucket
        if right.prev != NULL:
            right.prev.next = right.next
        else:
            bucket.right_head = right.next
        if right.next != NULL:
            right.next.prev = right.prev
        else:
            bucket.right_tail = right.prev
        bucket.right_count -= 1
        self.live_right -= 1
        self.rights.erase(right)
        self._drop_bucket(bucket)
        return 0

    cdef int feed(self, int port, list deltas) except -1:
        cdef tuple entry
        if port == 0:
            for delta in deltas:
                entry = as_delta(delta)
                row, sign, lineage = entry[0], entry[1], entry[2]
                if sign > 0:
                    self.left_insert(row, lineage)
                else:
                    self.left_expire(lineage)
        else:
            for delta in deltas:
                entry = as_delta(delta)
                row, sign, lineage = entry[0], entry[1], entry[2]
                if sign > 0:
                    self.right_insert(row, lineage)
                else:
                    self.right_expire(row, lineage)
        return 0

    cdef object _output(self, tuple row, bint matched):
        """The row a live left row puts in the output (None: none), given whether it has matches."""
        return row if matched == self.wanted_matches else None

    cdef list flush(self):
        cdef list out = []
        cdef Left* left
        cdef Ids* shown
        cdef bint matched
        cdef size_t i
        for i in range(self.dirty.size()):
            left = self.dirty[i]
            left.dirty = False
            matched = left.live and (left.bucket.right_count if self.by_key else left.matches.count) > 0
            # Unchanged row and match state: the same output (most flips that came back in the tick).
            if left.live and left.emitted and not left.has_shown and matched == left.emitted_matched:
                continue
            new = self._output(ids_tuple(left.row.data(), <Py_ssize_t>left.row.size()), matched) if left.live else None
            lineage = None
            if left.emitted:
                # An upstream group keeps its row's lineage when its aggregates change: the row
                # shown under a lineage may differ from the one it holds now.
                shown = &self.replaced[left.replaced] if left.has_shown else &left.row
                before = self._output(ids_tuple(shown.data(), <Py_ssize_t>shown.size()), left.emitted_matched)
                if before != new:
                    lineage = lineage_tuple(left.key)
                    out.append(_new_tuple(Delta, (before, -1, lineage)))
                    left.emitted = False
                    self.kept -= 1
            if new is not None and not left.emitted:
                if lineage is None:
                    lineage = lineage_tuple(left.key)
                out.append(_new_tuple(Delta, (new, 1, lineage)))
                left.emitted = True
                left.emitted_matched = matched
                self.kept += 1
            left.has_shown = False
            if not left.live and not left.emitted:
                self.lefts.erase(left)
        self.dirty.clear()
        self.replaced.clear()
        return out


cdef class _NegationNode(Node):
    """The operator's C half: each input batch goes to the core row by row, the tick's output
    downstream as one batch."""

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, count = batch.count()
        cdef _NegationCore core = self._core
        self.inputs_seen += count
        self.per_port[port] += count
        if port != 0 and self._inert:
            return 0
        for i in range(count):
            if port == 0:
                if batch.signs[i] > 0:
                    core.left_insert(batch.row_tuple(i), batch.lineage_tuple(i))
                else:
                    core.left_expire(batch.lineage_tuple(i))
            elif batch.signs[i] > 0:
                core.right_insert(batch.row_tuple(i), batch.lineage_tuple(i))
            else:
                core.right_expire(batch.row_tuple(i), batch.lineage_tuple(i))
        return 0

    def on_batch(self, int port, list deltas):
        self.inputs_seen += len(deltas)
        self.per_port[port] += len(deltas)
        if port == 0 or not self._inert:
            self._core.feed(port, deltas)

    cdef int tick_end(self, int64_t tau) except -1:
        return self.emit_deltas(self._core.flush(), self.out)

    @property
    def inputs_per_port(self):
        return list(self.per_port)

    @inputs_per_port.setter
    def inputs_per_port(self, counts):
        self.per_port = counts


class Negation(_NegationNode, NegationBase):
    """Left rows kept according to how many right rows match them (see the module docstring).

    ``condition(merged_row)`` gets the left row extended with the right row (term ids aligned
    with ``union_schema(left, right)``) and says whether they match; None means always.
    """

    def __init__(self, left_schema, right_schema, kind, condition=None, label="", keys=None):
        NegationBase.__init__(self, left_schema, right_schema, kind, label, keys)
        # MINUS between inputs sharing no column never removes anything (§18.5).
        self._inert = self.kind is NegationKind.MINUS and not self.shared
        self._core = _NegationCore(self, self.schema, self.right_schema, self.shared, self.keys, self.kind, condition)
        self.inputs_per_port = [0, 0]
        self.out = Batch(len(self.schema))

    @property
    def evaluations(self):
        return (<_NegationCore>self._core).evaluations

    def counters(self):
        cdef _NegationCore core = <_NegationCore>self._core
        return {
            **Operator.counters(self),
            "left": core.live_left,
            "right": core.live_right,
            "kept": core.kept,
            "evaluations": core.evaluations,
        }
