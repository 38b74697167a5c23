# distutils: language = c++
"""C-level state of the compiled multiway join (see _join.pyx; twin: reference/join.py)."""

from libc.stdint cimport int64_t, uint64_t
from libcpp.vector cimport vector


cdef class _JoinCore:
    cdef object owner                       # the MultiwayJoin, for its label in error messages
    cdef int n
    cdef int width
    cdef vector[vector[int]] positions      # per input: output position of each column
    cdef vector[vector[int]] join_columns   # per input: its columns shared with another input
    cdef vector[vector[int]] join_positions # per input: output position of each join column
    cdef list index                         # per input, per join column: RingIndex value → handles
    cdef list unbound                       # per input, per join column: RingIndex 0 → unbound handles
    cdef list rows                          # per input: dict handle → (row, lineage)
    cdef list handles                       # per input: dict lineage → handle
    cdef vector[int64_t] next_handle
    cdef list derived                       # per input: dict lineage → {output lineage: None}
    cdef dict outputs                       # output lineage → (row, input lineages)
    cdef vector[int64_t] values             # the partial mapping being extended
    cdef vector[char] bound
    cdef list parts                         # the input lineages of the partial mapping
    cdef readonly int64_t probes
    cdef readonly int64_t pruned
    cdef readonly object probe_orders

    cdef int _insert(self, int port, tuple row, object lineage, list out) except -1
    cdef int _delete(self, int port, object lineage, list out) except -1
    cdef int _extend(self, uint64_t remaining, list order, int depth, list out) except -1
    cdef int _register(self, list out) except -1
