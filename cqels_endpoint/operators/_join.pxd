# distutils: language = c++
"""C-level state of the compiled multiway join (see _join.pyx; twin: reference/join.py)."""

from libc.stdint cimport int64_t, uint32_t, uint64_t
from libcpp.deque cimport deque
from libcpp.unordered_map cimport unordered_map
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


cdef struct Leaf:
    int64_t seq
    int64_t ids[3]


cdef class _Leaves:
    cdef deque[Leaf] leaves  # dense: a removed record's place takes the last record
    cdef uint32_t* by_seq  # record number + 1 by the leaf's seq; 0 = empty
    cdef uint32_t* by_triple  # record number + 1 by the triple
    cdef size_t slots  # of both tables: grows by half when 3/4 full
    cdef unordered_map[int64_t, int64_t] copies  # leaf → copies beyond the first, when any
    cdef unordered_map[int64_t, int64_t] leaf_of_copy  # a later copy's seq → its triple's leaf
    cdef vector[vector[int]] columns  # for each column of a row, the triple positions holding it

    cdef object row(self, const int64_t* ids)

    cdef int _allocate(self, size_t slots) except -1
    cdef size_t _seq_home(self, int64_t seq) noexcept
    cdef size_t _triple_home(self, const int64_t* ids) noexcept
    cdef Py_ssize_t find_seq(self, int64_t seq) noexcept
    cdef Py_ssize_t find_triple(self, const int64_t* ids) noexcept
    cdef void _index(self, size_t record) noexcept
    cdef int _resize(self, size_t slots) except -1
    cdef int add(self, int64_t seq, const int64_t* ids) except -1
    cdef void _unindex(self, uint32_t* table, size_t hole, bint by_seq) noexcept
    cdef size_t _slot_of(self, uint32_t* table, size_t home, uint32_t value) noexcept
    cdef int remove(self, Py_ssize_t record) except -1
