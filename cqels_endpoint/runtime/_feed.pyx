# distutils: language = c++
"""Compiled event feed: the twin of ``feed.EventFeedPython`` (same calls to the window states and the
evaluator, in the same order). One C loop per event routes its triples on their ids (the router's
tables, read through ``_routing.pxd``), offers each match to its pattern's window state and hands
what enters and leaves to the evaluator, with no list of matches in between."""

from cython.operator cimport dereference as deref
from libc.stdint cimport int64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from cqels_endpoint.runtime._routing cimport Router, pattern_matches
from cqels_endpoint.runtime._windows cimport WindowState


cdef class EventFeed:
    """One query's window states (one per stream pattern, by pattern id) and its evaluator's
    ``on_insert``/``on_expire`` (see feed.py)."""

    def __init__(self, states, on_insert, on_expire):
        self.states = list(states)
        self.on_insert = on_insert
        self.on_expire = on_expire

    def offer(self, Router router, ids, t, tau, seqs):
        """Routes the triples of ``ids`` with ``router`` and offers each match, in order, to its
        pattern's state at clock ``tau``: an admitted one goes to ``on_insert`` with the next
        number of ``seqs``, what its insertion pushes out to ``on_expire``. ``t`` goes on to
        ``on_insert`` as the Python int it is, with no int made per call; the states are called in C."""
        cdef const long long[:] view = ids
        cdef Py_ssize_t start
        cdef int64_t triple[3]
        cdef const vector[int]* candidates
        cdef unordered_map[int64_t, vector[int]].iterator found
        cdef size_t k
        cdef int index
        cdef bint matches
        cdef int64_t t_ms = t, tau_ms = tau
        cdef object pattern_id, seq
        cdef WindowState state
        for start in range(0, view.shape[0] - 2, 3):
            triple[0], triple[1], triple[2] = view[start], view[start + 1], view[start + 2]
            found = router.by_predicate.find(triple[1])
            if found == router.by_predicate.end():
                candidates = &router.any_predicate
            else:
                candidates = &deref(found).second
            for k in range(candidates.size()):
                index = candidates[0][k]
                matches = pattern_matches(router, index, triple)
                if not matches:
                    continue
                pattern_id = router.pattern_ids[index]
                state = self.states[router.pattern_ids[index]]
                if not state.admits(t_ms, tau_ms):
                    continue
                seq = next(seqs)
                expired = state.insert(t_ms, seq, start // 3)
                self.on_insert(pattern_id, (triple[0], triple[1], triple[2]), t, seq)
                for gone in expired:
                    self.on_expire(pattern_id, gone)

    def expire(self, tau):
        """Every state drops what is out of its window at ``tau``, pattern by pattern, oldest first,
        each through ``on_expire``."""
        cdef Py_ssize_t pattern_id
        for pattern_id in range(len(self.states)):
            for gone in self.states[pattern_id].expire(tau):
                self.on_expire(pattern_id, gone)
