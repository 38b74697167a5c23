# distutils: language = c++
"""C-level state of the compiled aggregation (see _aggregate.pyx; twin: reference/aggregate.py)."""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector


cdef class _Values:
    cdef dict counts      # argument term → multiplicity (terms are Python objects: a dict)
    cdef int64_t total    # arguments counted (errors excluded)
    cdef int64_t errors   # arguments that were an error or unbound
    cdef list keys        # value_key of each kept value, ascending (the order-statistics list)
    cdef list terms       # the kept values, aligned with keys


cdef class _Group:
    cdef int64_t rows     # live input rows in the group
    cdef list values      # one _Values per aggregate


cdef class _Groups:
    cdef dict groups                 # group key → _Group
    cdef int n                       # aggregates per group
    cdef vector[char] ordered        # per aggregate: keeps the values in order (all but COUNT)
    cdef vector[char] distinct       # per aggregate: DISTINCT
    cdef list names                  # per aggregate: its name
    cdef list separators             # per aggregate: the GROUP_CONCAT separator
    cdef object implicit             # () without GROUP BY (the group that never disappears), else None

    cdef _Group _new_group(self)
    cpdef add(self, tuple key, tuple arguments)
    cpdef remove(self, tuple key, tuple arguments)
    cpdef tuple result(self, tuple key)
