# distutils: language = c++
"""Compiled router: the twin of ``routing.RouterPython`` (same matches, same order), with the
patterns of each predicate id in a C++ hash map and the constants checked on int64 ids."""

from cython.operator cimport dereference as deref
from libc.stdint cimport int64_t
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector


cdef class Router:
    """Routes triples of ids to the patterns they match (see runtime/routing.py)."""

    def __init__(self, specs):
        cdef int index
        cdef vector[pair[int, int64_t]] constants
        cdef vector[pair[int, int]] repeats
        predicates = set()
        for index, spec in enumerate(specs):
            self.pattern_ids.push_back(spec.pattern_id)
            constants.clear()
            for position, constant in spec.constants:
                constants.push_back(pair[int, int64_t](position, constant))
            self.constants.push_back(constants)
            repeats.clear()
            for a, b in spec.repeats:
                repeats.push_back(pair[int, int](a, b))
            self.repeats.push_back(repeats)
            if spec.predicates is None:
                self.any_predicate.push_back(index)
            else:
                predicates.update(spec.predicates)
        for predicate in predicates:
            for index, spec in enumerate(specs):
                if spec.predicates is None or predicate in spec.predicates:
                    self.by_predicate[predicate].push_back(index)

    def route(self, ids):
        """Every ``(pattern id, (s, p, o), index in the event)`` a triple of ``ids`` matches, in order."""
        cdef const long long[:] view = ids
        cdef Py_ssize_t start
        cdef int64_t triple[3]
        cdef const vector[int]* candidates
        cdef unordered_map[int64_t, vector[int]].iterator found
        cdef size_t k
        cdef int index
        cdef bint matches
        cdef list matched = []
        for start in range(0, view.shape[0] - 2, 3):
            triple[0], triple[1], triple[2] = view[start], view[start + 1], view[start + 2]
            found = self.by_predicate.find(triple[1])
            if found == self.by_predicate.end():
                candidates = &self.any_predicate
            else:
                candidates = &deref(found).second
            for k in range(candidates.size()):
                index = candidates[0][k]
                matches = pattern_matches(self, index, triple)
                if matches:
                    matched.append((self.pattern_ids[index], (triple[0], triple[1], triple[2]), start // 3))
        return matched
