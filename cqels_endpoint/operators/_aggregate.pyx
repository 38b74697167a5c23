# distutils: language = c++
"""Compiled incremental GROUP BY / aggregates (algebra ``Group``), one output per changed group per
tick. Key and argument evaluation, emission and dictionary references are those of
``shared.aggregate.GroupAggregateBase`` (read it for the contract); this module keeps the groups.

Per group and aggregate the operator keeps (:class:`_Values`, a cdef class) the counts of each
distinct argument value, the number of errors and — for every aggregate but COUNT — the values in
``runtime.aggregates.value_key`` order in a sorted list maintained with ``bisect`` (each value once
for DISTINCT, with its multiplicity otherwise). MIN, MAX, SAMPLE and MEDIAN read that list by
position, so an expiring row never makes the operator re-scan its group; SUM, AVG and GROUP_CONCAT
fold the list of the groups that changed (``runtime.aggregates`` documents the results, error rules
and orders). Values are RDF terms ordered by a tuple key, not int64 ids, so the order-statistics
list stays a pair of Python lists searched by the C ``bisect``. The twin (``reference/aggregate.py``)
recomputes each changed group from its members instead.
"""

from bisect import bisect_left, bisect_right

from libc.stdint cimport int64_t

from cqels_endpoint.operators.shared.aggregate import AggregateSpec, GroupAggregateBase
from cqels_endpoint.runtime.aggregates import finish, value_key
from cqels_endpoint.runtime.functions import integer_literal


cdef class _Values:
    def __init__(self):
        self.counts = {}
        self.total = 0
        self.errors = 0
        self.keys = []
        self.terms = []


cdef class _Group:
    pass


cdef class _Groups:
    def __init__(self, specs, implicit):
        self.groups = {}
        self.n = len(specs)
        self.names = [spec.name for spec in specs]
        self.separators = [spec.separator for spec in specs]
        for spec in specs:
            self.ordered.push_back(spec.ordered)
            self.distinct.push_back(spec.distinct)
        self.implicit = implicit
        if implicit is not None:
            self.groups[implicit] = self._new_group()

    cdef _Group _new_group(self):
        cdef _Group group = _Group.__new__(_Group)
        group.rows = 0
        group.values = [_Values() for _ in range(self.n)]
        return group

    cpdef add(self, tuple key, tuple arguments):
        cdef _Group group = self.groups.get(key)
        cdef _Values state
        cdef int i
        cdef int64_t seen
        cdef Py_ssize_t position
        if group is None:
            group = self.groups[key] = self._new_group()
        group.rows += 1
        for i in range(self.n):
            state = <_Values>group.values[i]
            value = arguments[i]
            if value is None:
                state.errors += 1
                continue
            seen = state.counts.get(value, 0)
            state.counts[value] = seen + 1
            state.total += 1
            if self.ordered[i] and (seen == 0 or not self.distinct[i]):
                sort_key = value_key(value)
                position = bisect_right(state.keys, sort_key)
                state.keys.insert(position, sort_key)
                state.terms.insert(position, value)

    cpdef remove(self, tuple key, tuple arguments):
        cdef _Group group = <_Group>self.groups[key]
        cdef _Values state
        cdef int i
        cdef int64_t seen
        cdef Py_ssize_t position
        group.rows -= 1
        for i in range(self.n):
            state = <_Values>group.values[i]
            value = arguments[i]
            if value is None:
                state.errors -= 1
                continue
            seen = state.counts[value]
            if seen == 1:
                del state.counts[value]
            else:
                state.counts[value] = seen - 1
            state.total -= 1
            if self.ordered[i] and (seen == 1 or not self.distinct[i]):
                position = bisect_left(state.keys, value_key(value))
                del state.keys[position]
                del state.terms[position]

    cpdef tuple result(self, tuple key):
        cdef _Group group = self.groups.get(key)
        cdef _Values state
        cdef int i
        if group is None:
            return None
        if group.rows == 0 and key != self.implicit:
            del self.groups[key]
            return None
        results = []
        for i in range(self.n):
            state = <_Values>group.values[i]
            if not self.ordered[i]:  # COUNT
                results.append(integer_literal(len(state.counts) if self.distinct[i] else state.total))
            else:
                results.append(finish(self.names[i], state.terms, state.errors, self.separators[i]))
        return tuple(results)


class GroupAggregate(GroupAggregateBase):
    """The incremental aggregation operator (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._groups = _Groups(self._specs, self._implicit)

    def _add(self, key, arguments, lineage):
        (<_Groups>self._groups).add(key, arguments)

    def _remove(self, key, arguments, lineage):
        (<_Groups>self._groups).remove(key, arguments)

    def _result(self, key):
        return (<_Groups>self._groups).result(key)

    def counters(self):
        return {**GroupAggregateBase.counters(self), "live_rows": len(self._rows)}
