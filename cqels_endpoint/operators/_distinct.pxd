# distutils: language = c++
"""C-level state of the compiled DISTINCT (see _distinct.pyx; twin: reference/distinct.py)."""

from libc.stdint cimport int64_t


cdef class _Counts:
    cdef dict counts         # input row → multiplicity (rows are tuples: a Python dict)
    cdef dict emitted        # output row → its lineage
    cdef dict touched        # rows whose count changed this tick, in arrival order
    cdef int64_t next_handle
    cdef readonly int64_t input_rows

    cdef int add(self, list deltas) except -1
    cdef list flush(self)
