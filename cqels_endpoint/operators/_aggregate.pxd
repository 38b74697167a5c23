# distutils: language = c++
"""C-level state of the compiled aggregation (see _aggregate.pyx; twin: reference/aggregate.py)."""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._rowrecords cimport RowRecords
from cqels_endpoint.runtime._expressions cimport RowTerms


cdef class _Aggregate:
    """One aggregate of one group, kept up to date per argument value (None: an error/unbound).
    ``add`` returns a handle, which ``remove`` takes back when that row leaves."""
    cdef int64_t errors               # arguments that were an error or unbound

    cdef object add(self, object value)
    cdef int remove(self, object handle) except -1
    cdef object result(self)


cdef class _Count(_Aggregate):
    cdef int64_t total                # values counted


cdef class _CountDistinct(_Aggregate):
    cdef dict counts                  # value → multiplicity


cdef class _Summand:
    """A value as added to a sum (runtime.aggregates.summand)."""
    cdef object value
    cdef int rank                     # numeric rank
    cdef int slot                     # SLOT_*, or -1 for a value that is not numeric
    cdef object amount
    cdef int64_t count                # DISTINCT: copies of the value


cdef class _Sum(_Aggregate):
    cdef dict counts                  # DISTINCT: value → its _Summand; otherwise None
    cdef int64_t ranks[4]             # values per numeric rank (integer, decimal, float, double)
    cdef int64_t slots[6]             # values per summand slot
    cdef int64_t invalid              # values that are not numeric (the sum is an error)
    cdef object integers              # exact totals of the integer, decimal and binary slots
    cdef object decimals
    cdef object binary

    cdef int _apply(self, _Summand summand, int sign) except -1
    cdef int _rank(self)
    cdef object _total(self)


cdef class _Avg(_Sum):
    pass


cdef class _ExactSum(_Sum):
    """EXACT_SUM: the exact state of a partition's SUM or AVG (runtime.aggregates)."""
    pass


cdef class _MergedSums(_Aggregate):
    cdef bint average                 # AVG_OF_EXACT (else SUM_OF_EXACT)
    cdef dict states                  # exact_sum_state tuple → multiplicity
    cdef int64_t invalid              # values that are not exact-sum states


cdef class _Entry:
    """A distinct value of an ordered bag."""
    cdef object term
    cdef object key                   # runtime.aggregates.value_key(term), computed when first needed
    cdef bint numeric                 # a number other than NaN: ``approx`` orders it
    cdef double approx                # the value rounded to a double (monotone, so it orders numbers)
    cdef object text                  # GROUP_CONCAT: its string, None if it has none
    cdef int64_t count                # multiplicity


cdef class _Bag(_Aggregate):
    """MIN, MAX, SAMPLE, MEDIAN, GROUP_CONCAT: the values as an ordered multiset (buckets)."""
    cdef int kind
    cdef bint distinct
    cdef object separator
    cdef dict entries                 # term → _Entry
    cdef list buckets                 # lists of _Entry in value_key order, each non-empty
    cdef list maxes                   # the last _Entry of each bucket
    cdef vector[double] max_approx    # their approx and numeric, as C arrays for the bisection
    cdef vector[char] max_numeric
    cdef list texts                   # GROUP_CONCAT: each bucket's joined string, None when stale
    cdef vector[int64_t] weights      # each bucket's weight (entries, or their counts without DISTINCT)
    cdef vector[int64_t] tree         # Fenwick tree over weights (1-based)
    cdef int64_t size                 # the total weight
    cdef int64_t textless             # GROUP_CONCAT: entries that are not strings (an error)

    cdef Py_ssize_t _bucket(self, _Entry entry) except -1
    cdef int _set_max(self, Py_ssize_t index, _Entry entry, bint new) except -1
    cdef int _drop_max(self, Py_ssize_t index) except -1
    cdef int _insert(self, _Entry entry) except -1
    cdef int _delete(self, _Entry entry) except -1
    cdef int _split(self, Py_ssize_t index) except -1
    cdef int64_t _weight(self, list bucket) except -1
    cdef int _reweigh(self, Py_ssize_t index, int64_t delta) except -1
    cdef int _rebuild(self) except -1
    cdef _Entry _select(self, int64_t rank)
    cdef object _concat(self)


cdef class _Group:
    cdef tuple key
    cdef tuple key_ids                # the ids of the named key terms (one reference each, held from the first emission), or None
    cdef int64_t rows                 # live input rows
    cdef list aggregates              # one _Aggregate per spec
    cdef bint changed                 # listed in the tick's changed groups
    cdef tuple results                # the aggregate terms last emitted (COUNT totals when counting; None: nothing emitted)
    cdef tuple row                    # the row of ids last emitted
    cdef tuple lineage


cdef class _GroupCore:
    cdef RowTerms keys_of             # row of ids → the key (shared._evaluate's, its twin)
    cdef RowTerms arguments_of        # row of ids → the arguments, a bound test where only that counts
    cdef readonly int64_t errors      # arguments that were an error (the counters' ``errors``)
    cdef object encode                # the dictionary's encode
    cdef object dictionary
    cdef dict groups                  # key → _Group
    cdef RowRecords* leaf_rows        # rows whose lineage is one leaf: leaf → _Group, handles
    cdef dict rows                    # other rows: input lineage → (_Group, the handles its arguments got)
    cdef bint counting                # every aggregate a plain COUNT: handles are bits, results the totals
    cdef dict count_ids               # COUNT total -> its inline id
    cdef list changed                 # groups changed this tick, in order
    cdef vector[int] kinds            # per aggregate: its kind (_COUNT …)
    cdef vector[char] distinct
    cdef list separators
    cdef list named                   # positions of the named key components
    cdef _Group implicit              # without GROUP BY, the one group; else None
    cdef int64_t serial
    cdef readonly int64_t emitted     # groups with a row emitted
    cdef list to_release              # ids retracted this tick
    cdef list releasing               # ids retracted last tick

    cdef _Group _new_group(self, tuple key)
    cdef int on_batch(self, list deltas) except -1
    cdef int add(self, tuple row, int64_t sign, object lineage) except -1
    cdef void _forget_leaf_rows(self) noexcept
    cdef int _keep(self, object lineage, _Group group, list handles) except -1
    cdef tuple _take(self, object lineage)
    cdef list on_tick_end(self)
    cdef object _count_id(self, int64_t total)
    cdef int _release(self, tuple row) except -1
    cdef int _forget(self, _Group group, list out) except -1
    cdef int close(self) except -1


cdef class _GroupNode(Node):
    cdef public _GroupCore _core
    cdef public Batch out
