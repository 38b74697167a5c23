# distutils: language = c++
"""C-level state of the compiled negation (see _negation.pyx; twin: reference/negation.py)."""

from libc.stdint cimport int64_t, uint32_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node

from cqels_endpoint.operators._idkeys cimport Ids, Table
from cqels_endpoint.operators._links cimport Links

cdef struct Bucket
cdef struct Left
cdef struct Right


cdef struct Bucket:               # the rows of one key (the hashed shared columns)
    Ids key
    uint32_t index
    int64_t right_count           # live right rows with this key
    Left* left_head               # live left rows, oldest first
    Left* left_tail
    Right* right_head             # live right rows, oldest first (pairwise mode only)
    Right* right_tail


cdef struct Left:                 # one left lineage: live, or still shown / changed this tick
    Ids key                       # the lineage
    uint32_t index
    Ids row                       # its row (kept after expiry until the tick's flush)
    uint32_t replaced             # with has_shown: where the row shown before is in _NegationCore.replaced
    Bucket* bucket                # NULL while not live
    Left* prev                    # in the bucket
    Left* next
    Links matches                 # its matching right rows (pairwise mode; by key: the bucket's count)
    bint live
    bint emitted                  # it has a row in the output…
    bint emitted_matched          # …made when it had matches or not (the row is _output's)
    bint dirty
    bint has_shown                # the lineage came back this tick with another row while shown


cdef struct Right:                # one live right row (pairwise mode)
    Ids key                       # the lineage
    uint32_t index
    Ids row
    Bucket* bucket
    Right* prev
    Right* next
    Links matches                 # the left rows it matches


cdef class _NegationCore:
    cdef object owner                # the Negation, for its label in error messages
    cdef vector[int] left_key        # left positions of the hashed key columns
    cdef vector[int] right_key       # right positions of the hashed key columns
    cdef vector[int] checked_left    # shared columns that may be unbound: left position…
    cdef vector[int] checked_right   # …and right position, checked per candidate
    cdef vector[int] right_extra     # right columns appended to a left row to form the merged row
    cdef object condition            # merged row → bool, or None
    cdef bint needs_common
    cdef bint wanted_matches         # EXISTS keeps rows with matches, the others rows without
    cdef bint by_key                 # a match is an equal key: right rows are only counted
    cdef Table[Bucket] buckets
    cdef Table[Left] lefts
    cdef Table[Right] rights         # pairwise mode only
    cdef vector[Left*] dirty         # left lineages whose output may change this tick, in order
    cdef vector[Ids] replaced        # rows shown before by lineages that came back this tick
    cdef Ids probe                   # scratch: a lineage
    cdef Ids key                     # scratch: a bucket key
    cdef Ids ids                     # scratch: a row
    cdef readonly int64_t evaluations
    cdef readonly int64_t live_left
    cdef readonly int64_t live_right
    cdef readonly int64_t kept

    cdef Bucket* _bucket(self, Ids& row, vector[int]& positions, object original, bint create) except? NULL
    cdef int _drop_bucket(self, Bucket* bucket) except -1
    cdef bint _matches(self, Left* left, Right* right) except -1
    cdef void _touch(self, Left* left) noexcept
    cdef void _touch_bucket(self, Bucket* bucket) noexcept
    cdef int left_insert(self, object row, object lineage) except -1
    cdef int left_expire(self, object lineage) except -1
    cdef int right_insert(self, object row, object lineage) except -1
    cdef int right_expire(self, object row, object lineage) except -1
    cdef int feed(self, int port, list deltas) except -1
    # What a live left row puts in the output (None: nothing) given whether it has matches; the
    # EXISTS mark (_mark.pyx) overrides it to append the truth value instead of dropping the row.
    cdef object _output(self, tuple row, bint matched)
    cdef list flush(self)


cdef class _NegationNode(Node):
    cdef public _NegationCore _core
    cdef public bint _inert           # MINUS between inputs sharing no column: the right is ignored
    cdef public Batch out
    cdef vector[int64_t] per_port     # deltas received per input
