# distutils: language = c++
"""C-level state of the compiled router (see _routing.pyx; twin: routing.RouterPython)."""

from libc.stdint cimport int64_t
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector


cdef class Router:
    cdef vector[int64_t] pattern_ids  # by pattern index, in pattern order
    cdef vector[vector[pair[int, int64_t]]] constants  # by pattern index: (position, id)
    cdef vector[vector[pair[int, int]]] repeats  # by pattern index: positions holding one id
    cdef unordered_map[int64_t, vector[int]] by_predicate  # predicate id → pattern indices, in order
    cdef vector[int] any_predicate  # the indices of the patterns that accept any predicate


cdef inline bint pattern_matches(Router router, int index, const int64_t* triple) noexcept:
    """Whether ``triple`` has pattern ``index``'s constants and its repeated variables' equal ids
    (the router and the compiled feed both test a candidate pattern this way)."""
    cdef size_t c
    for c in range(router.constants[index].size()):
        if triple[router.constants[index][c].first] != router.constants[index][c].second:
            return False
    for c in range(router.repeats[index].size()):
        if triple[router.repeats[index][c].first] != triple[router.repeats[index][c].second]:
            return False
    return True
