# distutils: language = c++
"""C-level state of the compiled DISTINCT (see _distinct.pyx; twin: reference/distinct.py)."""

from libc.stdint cimport int64_t, uint32_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport Ids, Table


cdef struct RowCount:            # one distinct input row
    Ids key                      # its ids
    uint32_t index               # its place in the table's pool
    int64_t count                # its multiplicity in the input bag
    int64_t handle               # its output lineage is (handle,), while shown
    bint shown                   # the row is in the output
    bint touched                 # its count changed this tick


cdef class _DistinctNode(Node):
    cdef Table[RowCount] rows           # rows with a count or shown
    cdef vector[RowCount*] touched      # rows whose count changed this tick, in arrival order
    cdef Ids probe
    cdef Batch out
    cdef int64_t next_handle
    cdef readonly int64_t input_rows
    cdef readonly int64_t distinct_rows
