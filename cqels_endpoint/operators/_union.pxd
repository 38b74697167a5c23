# distutils: language = c++
"""C-level state of the compiled UNION (see _union.pyx; twin: reference/union.py)."""

from libcpp.vector cimport vector


cdef class _Aligner:
    cdef vector[vector[int]] positions  # per port: input position of each output column, -1 if absent
    cdef tuple branches                 # per port: the lineage prefix (port,)

    cdef list align(self, int port, list deltas)
