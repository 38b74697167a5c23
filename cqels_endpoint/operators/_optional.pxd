# distutils: language = c++
"""C-level state of the compiled OPTIONAL (see _optional.pyx; twin: reference/optional.py)."""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector


cdef class _OptionalCore:
    cdef object owner                # the OptionalJoin, for its label in error messages
    cdef int width                   # output columns
    cdef int left_width
    cdef vector[vector[int]] keys    # per side: positions of the shared columns
    cdef vector[int] right_positions # output position of each right column
    cdef object passes               # the compiled filter, or None
    cdef object decoder
    cdef dict names                  # output column → position, for DecodedRow
    cdef tuple rows                  # per side: dict lineage → row
    cdef tuple index                 # per side: dict key → {lineage: None}
    cdef tuple loose                 # per side: dict of lineages whose key has an unbound column
    cdef dict matches                # left lineage → {right lineage: joined row}
    cdef dict matched_by             # right lineage → {left lineage: None}
    cdef readonly int64_t rejected

    cdef tuple _key(self, int side, tuple row)
    cdef int _store(self, int side, tuple row, object lineage) except -1
    cdef tuple _drop(self, int side, object lineage)
    cdef list _candidates(self, int side, tuple row)
    cdef tuple _merge(self, tuple left, tuple right)
    cdef tuple _padded(self, tuple left)
    cdef int left_insert(self, tuple row, object lineage, list out) except -1
    cdef int left_delete(self, object lineage, list out) except -1
    cdef int right_insert(self, tuple row, object lineage, list out) except -1
    cdef int right_delete(self, object lineage, list out) except -1
