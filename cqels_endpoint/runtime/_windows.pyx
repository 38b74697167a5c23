# distutils: language = c++
"""Compiled window states: the twins of ``windows.py``'s (same admissions, same expiries, same
order), each window's ``(t, seq)`` entries in a C++ deque of int64 pairs, 16 bytes a triple."""

from libc.stdint cimport int64_t


cdef class WindowState:
    """The triples (as ``(t, seq)``) one window holds (see windows.WindowState)."""

    def admits(self, int64_t t, int64_t tau):
        return True

    def insert(self, int64_t t, int64_t seq):
        self._append(t, seq)
        return []

    def expire(self, int64_t tau):
        return []

    cdef void _append(self, int64_t t, int64_t seq):
        cdef Entry entry
        entry.t = t
        entry.seq = seq
        self._entries.push_back(entry)

    cdef list _pop_before(self, int64_t bound, bint inclusive):
        """Pops (oldest first) the entries with ``t < bound`` (``t <= bound`` if inclusive)."""
        cdef list gone = []
        while not self._entries.empty() and (
            self._entries.front().t < bound or (inclusive and self._entries.front().t == bound)
        ):
            gone.append(self._entries.front().seq)
            self._entries.pop_front()
        return gone

    def contents(self):
        """The sequence numbers in the window, oldest first."""
        return [entry.seq for entry in self._entries]

    def times(self):
        """The timestamps in the window, oldest first."""
        return [entry.t for entry in self._entries]

    def __len__(self):
        return self._entries.size()


cdef class EagerRangeState(WindowState):
    """``RANGE T``: holds ``τ − T < t' ≤ τ``."""

    def __init__(self, int64_t range_ms):
        self.range_ms = range_ms

    def admits(self, int64_t t, int64_t tau):
        return t > tau - self.range_ms

    def expire(self, int64_t tau):
        return self._pop_before(tau - self.range_ms, True)


cdef class PeriodicRangeState(WindowState):
    """``RANGE T SLIDE β`` (and ``TUMBLING``, β = T): at a close ``c`` holds ``c − T ≤ t' < c``."""

    def __init__(self, int64_t range_ms, int64_t slide_ms):
        self.range_ms = range_ms
        self.slide_ms = slide_ms

    def admits(self, int64_t t, int64_t tau):
        return t >= tau - self.range_ms

    def expire(self, int64_t tau):
        return self._pop_before(tau - self.range_ms, False)


cdef class NowState(WindowState):
    """``NOW``: the triples at the current instant, ``t' = τ``."""

    def admits(self, int64_t t, int64_t tau):
        return t >= tau

    def expire(self, int64_t tau):
        return self._pop_before(tau, False)


cdef class AllState(WindowState):
    """``ALL``: nothing ever leaves."""


cdef class TriplesState(WindowState):
    """``TRIPLES n`` / ``COUNT n``: the last ``n`` triples; the oldest leaves when one more arrives."""

    def __init__(self, int64_t count):
        self.count = count

    def insert(self, int64_t t, int64_t seq):
        self._append(t, seq)
        cdef list gone = []
        while <int64_t>self._entries.size() > self.count:
            gone.append(self._entries.front().seq)
            self._entries.pop_front()
        return gone
