# distutils: language = c++
"""C-level state of the compiled EXISTS mark (see _mark.pyx; twin: reference/mark.py)."""

from cqels_endpoint.operators._negation cimport _NegationCore


cdef class _MarkCore(_NegationCore):
    cdef object true_id              # the term id of "true"^^xsd:boolean (an inline id)
    cdef object false_id
