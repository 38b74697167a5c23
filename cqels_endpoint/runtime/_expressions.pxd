# distutils: language = c++
"""The row evaluators other compiled modules call in C (see _expressions.pyx): FILTER conditions
(``RowFilter``), group keys and aggregate arguments (``RowTerms``) and ORDER BY keys
(``RowOrderKey``) on rows of term ids."""

from libc.stdint cimport int64_t


cdef class RowView:
    cdef tuple row            # the row being evaluated (None between rows)
    cdef dict positions       # column of each variable
    cdef object decoder
    cdef object decoded       # the row's DecodedRow, once something read it as a mapping

    cdef void start(self, tuple row) noexcept
    cdef void finish(self) noexcept
    cdef object mapping(self)


cdef class RowFilter:
    cdef list expressions     # compiled expressions or closures, tested in order
    cdef RowView view

    cdef bint passes(self, tuple row) except -1


cdef class RowTerms:
    cdef list modes           # per item: _TERM, _BOUND or _ROW
    cdef list items           # per item: the compiled expression (_TERM), the column or -1 (_BOUND), None
    cdef RowView view

    cdef tuple of(self, tuple row, int64_t* errors)
    cdef tuple _of(self, tuple row, int64_t* errors)


cdef class RowOrderKey:
    cdef list columns         # per condition: the column of a plain variable (-1: not in the row), or None
    cdef list expressions     # per condition: its compiled expression (None for a plain variable)
    cdef list descending      # per condition: DESC
    cdef list caches          # per condition: id -> its key part, for a plain variable (else None)
    cdef RowView view
    cdef object order_key     # term (None: unbound or error) -> key (runtime.expressions.order_key)
    cdef tuple unbound        # per condition: the key part of an unbound value or an error

    cdef object part(self, Py_ssize_t index, tuple row)
    cdef tuple key_of(self, tuple row, object lineage, bint with_lineage)
