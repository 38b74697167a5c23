# distutils: language = c++
"""C-level state of the compiled BIND (see _extend.pyx; twin: extend.py)."""

from libc.stdint cimport int64_t, uint32_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport Ids, Table


cdef struct Bound:                   # the value a live row got, by its lineage
    Ids key
    uint32_t index
    int64_t value                    # UNBOUND: the expression raised an error


cdef class _ExtendNode(Node):
    cdef object compute               # row mapping → term (runtime.expressions.compile_expression)
    cdef object positions             # variable → column, for DecodedRow
    cdef int copied                   # BIND(?x AS ?y): the column of ?x; -1 otherwise
    cdef object decoder
    cdef object dictionary
    cdef Table[Bound] values
    cdef vector[int64_t] to_release   # values of rows that left this tick…
    cdef vector[int64_t] releasing    # …and the last one
    cdef Ids probe
    cdef Batch out
    cdef public int64_t errors

    cdef int _release(self, vector[int64_t]& ids) except -1
