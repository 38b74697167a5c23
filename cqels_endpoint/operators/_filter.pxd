# distutils: language = c++
"""C-level state of the compiled FILTER (see _filter.pyx; twin: filter.py)."""

from libc.stdint cimport int64_t, uint32_t

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport Ids, Table
from cqels_endpoint.runtime._expressions cimport RowFilter


cdef struct Passed:                  # the lineage of a row that passed
    Ids key
    uint32_t index


cdef class _FilterNode(Node):
    cdef object passes                # row of ids → bool (runtime.expressions.compile_row_filter)
    cdef RowFilter row_filter         # passes when compiled (tested in C), else None
    cdef Table[Passed] passed
    cdef Ids probe
    cdef Batch out
    cdef public int64_t rejected
