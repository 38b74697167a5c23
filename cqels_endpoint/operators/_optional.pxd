# distutils: language = c++
"""C-level state of the compiled OPTIONAL (see _optional.pyx; twin: reference/optional.py)."""

from libc.stdint cimport int64_t, uint32_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node

from cqels_endpoint.operators._idkeys cimport Ids, Table
from cqels_endpoint.operators._links cimport Links

cdef struct Bucket
cdef struct Row


cdef struct Bucket:               # the rows of one side with one key (all shared columns bound)
    Ids key
    uint32_t index
    Row* head                     # oldest first
    Row* tail


cdef struct Row:                  # one live row of one side
    Ids key                       # the lineage
    uint32_t index
    Ids row
    Bucket* bucket                # NULL: loose (a shared column unbound)
    Row* prev                     # in its bucket, or in the side's loose list
    Row* next
    Row* older                    # in the side's arrival order
    Row* newer
    Links matches                 # its matches with the other side's rows, oldest first


ctypedef Table[Row] RowMap
ctypedef Table[Bucket] BucketMap


cdef class _OptionalCore:
    cdef object owner                # the OptionalJoin, for its label in error messages
    cdef int width                   # output columns
    cdef int left_width
    cdef vector[vector[int]] keys    # per side: positions of the shared columns
    cdef vector[int] right_positions # output position of each right column
    cdef object passes               # the compiled filter, or None
    cdef object decoder
    cdef dict names                  # output column → position, for DecodedRow
    cdef RowMap left_rows            # per side: lineage → its row…
    cdef RowMap right_rows
    cdef BucketMap left_index        # …key → its rows with that key
    cdef BucketMap right_index
    cdef Row* loose_head[2]          # per side: rows with an unbound shared column, oldest first
    cdef Row* loose_tail[2]
    cdef Row* oldest[2]              # per side: every row, oldest first
    cdef Row* newest[2]
    cdef vector[Row*] candidates     # scratch
    cdef Ids probe                   # scratch: a lineage
    cdef Ids key                     # scratch: a bucket key
    cdef Ids ids                     # scratch: a row
    cdef Ids merged                  # scratch: a joined row
    cdef readonly int64_t rejected
    cdef readonly int64_t unmatched_left

    cdef RowMap* _rows(self, int side) noexcept
    cdef BucketMap* _index(self, int side) noexcept
    cdef bint _key(self, int side, Ids& row) noexcept
    cdef Row* _store(self, int side, object row, object lineage) except NULL
    cdef Row* _find(self, int side, object lineage) except NULL
    cdef int _drop(self, int side, Row* entry) except -1
    cdef int _collect(self, int side, Ids& row) except -1
    cdef object _merge(self, Row* left, Row* right, bint check)
    cdef tuple _padded(self, Row* left)
    cdef tuple _lineage(self, int tag, Row* left, Row* right)
    cdef int left_insert(self, object row, object lineage, list out) except -1
    cdef int left_delete(self, object lineage, list out) except -1
    cdef int right_insert(self, object row, object lineage, list out) except -1
    cdef int right_delete(self, object lineage, list out) except -1
    cdef list feed(self, int port, list deltas)


cdef class _OptionalNode(Node):
    cdef public _OptionalCore _core
    cdef public Batch out
    cdef vector[int64_t] per_port       # deltas received per input
