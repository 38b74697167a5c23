# distutils: language = c++
"""C-level state of the compiled UNION (see _union.pyx; twin: reference/union.py)."""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node


cdef class _Aligner:
    cdef vector[vector[int]] positions  # per port: input position of each output column, -1 if absent
    cdef tuple branches                 # per port: the lineage prefix (port,)

    cdef list align(self, int port, list deltas)


cdef class _UnionNode(Node):
    cdef public _Aligner _aligner
    cdef public Batch out
    cdef vector[int64_t] per_port       # deltas received per input
    cdef vector[int64_t] lineage        # scratch: a lineage with its branch
