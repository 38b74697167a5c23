# distutils: language = c++
"""The compiled sink's C half (see _sink.pyx), read in C by a shared plan's round (engine._shared_round)."""

from cqels_endpoint.operators._base cimport Node


cdef class _SinkNode(Node):
    cdef public object relation      # Γ: row → multiplicity (a dict, _sink.pyx's docstring)
    cdef public object _pending      # the net changes since the last take()
    cdef public object last_tau
