# distutils: language = c++
"""C-level state of the compiled negation (see _negation.pyx; twin: reference/negation.py)."""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector


cdef class _NegationCore:
    cdef object owner                # the Negation, for its label in error messages
    cdef vector[int] left_key        # left positions of the hashed key columns
    cdef vector[int] right_key       # right positions of the hashed key columns
    cdef vector[int] checked_left    # shared columns that may be unbound: left position…
    cdef vector[int] checked_right   # …and right position, checked per candidate
    cdef vector[int] right_extra     # right columns appended to a left row to form the merged row
    cdef object condition            # merged row → bool, or None
    cdef bint needs_common
    cdef bint wanted_matches         # EXISTS keeps rows with matches, the others rows without
    cdef dict left                   # lineage → [row, key, matching right lineages]
    cdef dict left_index             # key → left lineages
    cdef dict right                  # lineage → (row, key)
    cdef dict right_index            # key → right lineages
    cdef dict matched                # right lineage → left lineages it matches
    cdef dict emitted                # left lineage → the row of it currently in the output
    cdef dict dirty                  # left lineage → row, whose output may change this tick
    cdef readonly int64_t evaluations

    cdef tuple _key(self, tuple row, vector[int]& positions)
    cdef bint _matches(self, tuple left_row, tuple right_row) except -1
    cdef int left_insert(self, tuple row, object lineage) except -1
    cdef int left_expire(self, object lineage) except -1
    cdef int right_insert(self, tuple row, object lineage) except -1
    cdef int right_expire(self, object lineage) except -1
    cdef list flush(self)
