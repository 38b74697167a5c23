# distutils: language = c++
"""Compiled FILTER NOT EXISTS / FILTER EXISTS / MINUS: the four incremental cases of the former
pure-Python operator, unchanged, with the state in :class:`_NegationCore` (a cdef class; lineages
and keys are tuples, so the indexes stay Python dicts) and the column positions in C vectors.

The semantics, in short (``reference/negation.py`` states the definition): port 0 is the left
input (the rows kept or dropped, and the output schema), port 1 the right input (the inner pattern
of (NOT) EXISTS, or the right side of MINUS). Every live left row carries the set of live right
rows *matching* it — agreeing on the shared columns and, for (NOT) EXISTS, passing the optional
inner ``condition`` on the merged row (§18.6 ``substitute``); for MINUS sharing at least one bound
column (§18.5). A left row is in the output iff that set is empty (NOT EXISTS, MINUS) or not
(EXISTS). A left +1 probes the right index on its key; a left -1 drops the row and its matches;
a right +1 probes the left index and adds itself to the rows it matches; a right -1 removes itself
from exactly those rows (remembered by lineage, never re-evaluated). Output changes are collected
per left lineage and emitted once per tick, at the punctuation, so a row that flips twice inside a
tick emits nothing. Both indexes are hashed on ``keys`` (shared columns bound in every row, the
planner knows which); the other shared columns may be unbound and are checked per candidate.
The per-match cost with a condition is the condition itself (decoded terms in the engine).
"""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

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
        self.left = {}
        self.left_index = {}
        self.right = {}
        self.right_index = {}
        self.matched = {}
        self.emitted = {}
        self.dirty = {}
        self.evaluations = 0

    cdef tuple _key(self, tuple row, vector[int]& positions):
        cdef size_t k
        cdef list key = []
        for k in range(positions.size()):
            value = row[positions[k]]
            if value is None:
                msg = f"{self.owner.label}: a shared column is unbound in {row}; the planner must refuse this input"
                raise OperatorError(msg)
            key.append(value)
        return tuple(key)

    cdef bint _matches(self, tuple left_row, tuple right_row) except -1:
        cdef bint common = False
        cdef tuple merged = left_row
        cdef size_t k
        cdef int left_position
        for k in range(self.checked_left.size()):
            left_position = self.checked_left[k]
            left_value, right_value = left_row[left_position], right_row[self.checked_right[k]]
            if left_value is None:
                if right_value is not None and self.condition is not None:
                    # The inner FILTER reads the value the inner pattern bound (substitution left it free).
                    merged = merged[:left_position] + (right_value,) + merged[left_position + 1 :]
            elif right_value is not None:
                if left_value != right_value:
                    return False
                common = True
        if self.needs_common and not common:
            return False
        if self.condition is None:
            return True
        self.evaluations += 1
        return bool(self.condition(merged + tuple([right_row[self.right_extra[k]] for k in range(self.right_extra.size())])))

    cdef int left_insert(self, tuple row, object lineage) except -1:
        cdef dict matching = {}
        cdef dict bucket
        if lineage in self.left:
            msg = f"{self.owner.label}: lineage {lineage} entered the left input twice"
            raise OperatorError(msg)
        key = self._key(row, self.left_key)
        right = self.right
        for right_lineage in self.right_index.get(key, ()):
            if self._matches(row, <tuple>(<tuple>right[right_lineage])[0]):
                matching[right_lineage] = None
                (<dict>self.matched[right_lineage])[lineage] = None
        self.left[lineage] = [row, key, matching]
        bucket = self.left_index.get(key)
        if bucket is None:
            bucket = self.left_index[key] = {}
        bucket[lineage] = None
        self.dirty[lineage] = row
        return 0

    cdef int left_expire(self, object lineage) except -1:
        cdef list entry = self.left.pop(lineage, None)
        cdef dict bucket
        if entry is None:
            msg = f"{self.owner.label}: lineage {lineage} left the left input without entering it"
            raise OperatorError(msg)
        row, key, matching = entry
        bucket = <dict>self.left_index[key]
        del bucket[lineage]
        if not bucket:
            del self.left_index[key]
        for right_lineage in <dict>matching:
            del (<dict>self.matched[right_lineage])[lineage]
        self.dirty[lineage] = row
        return 0

    cdef int right_insert(self, tuple row, object lineage) except -1:
        cdef dict matched = {}
        cdef dict bucket
        cdef list entry
        if lineage in self.right:
            msg = f"{self.owner.label}: lineage {lineage} entered the right input twice"
            raise OperatorError(msg)
        key = self._key(row, self.right_key)
        self.right[lineage] = (row, key)
        bucket = self.right_index.get(key)
        if bucket is None:
            bucket = self.right_index[key] = {}
        bucket[lineage] = None
        for left_lineage in self.left_index.get(key, ()):
            entry = <list>self.left[left_lineage]
            if self._matches(<tuple>entry[0], row):
                (<dict>entry[2])[lineage] = None
                matched[left_lineage] = None
                self.dirty[left_lineage] = entry[0]
        self.matched[lineage] = matched
        return 0

    cdef int right_expire(self, object lineage) except -1:
        cdef tuple found = self.right.pop(lineage, None)
        cdef dict bucket
        cdef list entry
        if found is None:
            msg = f"{self.owner.label}: lineage {lineage} left the right input without entering it"
            raise OperatorError(msg)
        bucket = <dict>self.right_index[found[1]]
        del bucket[lineage]
        if not bucket:
            del self.right_index[found[1]]
        for left_lineage in <dict>self.matched.pop(lineage):
            entry = <list>self.left[left_lineage]
            del (<dict>entry[2])[lineage]
            self.dirty[left_lineage] = entry[0]
        return 0

    cdef list flush(self):
        cdef dict dirty = self.dirty
        cdef list out = []
        cdef list entry
        cdef bint keep
        self.dirty = {}
        for lineage, row in dirty.items():
            entry = self.left.get(lineage)
            keep = entry is not None and bool(entry[2]) == self.wanted_matches
            # An upstream group keeps its row's lineage when its aggregates change: the row kept
            # under a lineage may differ from the one emitted before under it.
            before = self.emitted.get(lineage)
            if before is not None and (not keep or before != row):
                del self.emitted[lineage]
                out.append(_new_tuple(Delta, (before, -1, lineage)))
            if keep and lineage not in self.emitted:
                self.emitted[lineage] = row
                out.append(_new_tuple(Delta, (row, 1, lineage)))
        return out

    def sizes(self):
        return len(self.left), len(self.right), len(self.emitted)


class Negation(NegationBase):
    """Left rows kept according to how many right rows match them (see the module docstring).

    ``condition(merged_row)`` gets the left row extended with the right row (term ids aligned
    with ``union_schema(left, right)``) and says whether they match; None means always.
    """

    def __init__(self, left_schema, right_schema, kind, condition=None, label="", keys=None):
        super().__init__(left_schema, right_schema, kind, label, keys)
        # MINUS between inputs sharing no column never removes anything (§18.5).
        self._inert = self.kind is NegationKind.MINUS and not self.shared
        self._core = _NegationCore(self, self.schema, self.right_schema, self.shared, self.keys, self.kind, condition)
        self.inputs_per_port = [0, 0]

    def on_batch(self, int port, list deltas):
        cdef _NegationCore core = <_NegationCore>self._core
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        if port == 0:
            for row, sign, lineage in deltas:
                if sign > 0:
                    core.left_insert(tuple(row), lineage)
                else:
                    core.left_expire(lineage)
        elif not self._inert:
            for row, sign, lineage in deltas:
                if sign > 0:
                    core.right_insert(tuple(row), lineage)
                else:
                    core.right_expire(lineage)

    def on_tick_end(self, tau):
        self.emit((<_NegationCore>self._core).flush())

    @property
    def evaluations(self):
        return (<_NegationCore>self._core).evaluations

    def counters(self):
        left, right, kept = (<_NegationCore>self._core).sizes()
        return {**Operator.counters(self), "left": left, "right": right, "kept": kept, "evaluations": self.evaluations}
