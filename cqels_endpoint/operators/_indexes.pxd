# distutils: language = c++
"""C-level interface of the compiled indexes, for operators written in Cython (cimport this)."""

from libc.stdint cimport int64_t, uint8_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector


cdef struct Bucket:
    # The entries of one key, oldest first. Slots before head are dead (window expiry removes the
    # oldest, which only moves head). dead marks slots removed out of order; it stays empty (no
    # allocation) until the first such removal and is dropped again by compaction. live counts
    # the live slots: probes stop after yielding that many.
    vector[int64_t] entries
    vector[uint8_t] dead
    size_t head
    int64_t live
    int64_t dead_count


cdef class RingIndex:
    cdef unordered_map[int64_t, Bucket] _buckets
    cdef int64_t _size

    cdef void insert_c(self, int64_t key, int64_t entry)
    cdef bint remove_c(self, int64_t key, int64_t entry)
    cdef int64_t count_c(self, int64_t key) noexcept
    # Appends the live entries of key to out, newest first.
    cdef void probe_into(self, int64_t key, vector[int64_t]& out)


cdef class OneWayIndex:
    cdef unordered_map[int64_t, int64_t] _counts
    cdef dict _states

    cdef int64_t add_c(self, int64_t key, int64_t delta) except -1
    cdef int64_t count_c(self, int64_t key) noexcept


cdef int64_t key_of_c(const int64_t* ids, Py_ssize_t n) noexcept
