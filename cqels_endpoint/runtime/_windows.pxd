# distutils: language = c++
"""C-level state of the compiled window states (see _windows.pyx; twins: windows.py)."""

from libc.stdint cimport int64_t
from libcpp.deque cimport deque as cdeque


cdef struct Entry:
    int64_t t
    int64_t seq


cdef class WindowState:
    cdef cdeque[Entry] _entries  # oldest first

    # C calls for the compiled event feed (_feed.pyx), Python methods for everyone else.
    cpdef bint admits(self, int64_t t, int64_t tau)
    cpdef list insert(self, int64_t t, int64_t seq, int64_t index=*)

    cdef void _append(self, int64_t t, int64_t seq)
    cdef list _pop_before(self, int64_t bound, bint inclusive)


cdef class EagerRangeState(WindowState):
    cdef readonly int64_t range_ms


cdef class PeriodicRangeState(WindowState):
    cdef readonly int64_t range_ms
    cdef readonly int64_t slide_ms


cdef class NowState(WindowState):
    pass


cdef class AllState(WindowState):
    pass


cdef class TriplesState(WindowState):
    cdef readonly int64_t count


cdef class StreamTriplesState(WindowState):
    cdef readonly int64_t count
    cdef readonly int64_t seen  # the stream's statements, the current event's included
    cdef int64_t _start  # the ordinal of the current event's first statement
    cdef cdeque[int64_t] _ordinals  # each entry's statement in the stream, in step with the entries
