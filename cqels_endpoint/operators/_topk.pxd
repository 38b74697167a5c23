# distutils: language = c++
"""C-level state of the compiled top-k (see _topk.pyx; twin: reference/topk.py)."""


cdef class _SortedRows:
    cdef object key           # row -> order key (ORDER BY conditions, then the tie-break)
    cdef list keys            # (*order key, lineage) of every live row, sorted (keys are unique)
    cdef dict rows            # lineage -> (key, row)
    cdef Py_ssize_t region    # positions below it are the influence region; -1: unbounded
    cdef bint dirty           # a change fell in the influence region since the last slice

    cdef int add(self, list deltas) except -1
    cdef dict between(self, Py_ssize_t start, Py_ssize_t stop)
