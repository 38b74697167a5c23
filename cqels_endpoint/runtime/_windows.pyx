# distutils: language = c++
"""Compiled window states: the twins of ``windows.py``'s (same admissions, same expiries, same
order), each window's ``(t, seq)`` entries in a C++ deque of int64 pairs, 16 bytes a triple; a
stream-wide count window keeps the ordinal of each entry's statement in the stream beside them."""

from libc.stdint cimport int64_t


cdef class WindowState:
    """The triples (as ``(t, seq)``) one window holds (see windows.WindowState)."""

    cpdef bint admits(self, int64_t t, int64_t tau):
        return True

    cpdef list insert(self, int64_t t, int64_t seq, int64_t index=0):
        self._append(t, seq)
        return []

    def expire(self, int64_t tau):
        return []

    def expiry(self):
        """The earliest ``τ`` at which ``expire(τ)`` removes something, None if no time does."""
        return None

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

    cpdef bint admits(self, int64_t t, int64_t tau):
        return t > tau - self.range_ms

    def expire(self, int64_t tau):
        return self._pop_before(tau - self.range_ms, True)

    def expiry(self):
        return self._entries.front().t + self.range_ms if not self._entries.empty() else None


cdef class PeriodicRangeState(WindowState):
    """``RANGE T SLIDE β`` (and ``TUMBLING``, β = T): at a close ``c`` holds ``c − T ≤ t' < c``."""

    def __init__(self, int64_t range_ms, int64_t slide_ms):
        self.range_ms = range_ms
        self.slide_ms = slide_ms

    cpdef bint admits(self, int64_t t, int64_t tau):
        return t >= tau - self.range_ms

    def expire(self, int64_t tau):
        return self._pop_before(tau - self.range_ms, False)

    def expiry(self):
        return self._entries.front().t + self.range_ms + 1 if not self._entries.empty() else None


cdef class NowState(WindowState):
    """``NOW``: the triples at the current instant, ``t' = τ``."""

    cpdef bint admits(self, int64_t t, int64_t tau):
        return t >= tau

    def expire(self, int64_t tau):
        return self._pop_before(tau, False)

    def expiry(self):
        return self._entries.front().t + 1 if not self._entries.empty() else None


cdef class AllState(WindowState):
    """``ALL``: nothing ever leaves."""


cdef class TriplesState(WindowState):
    """``TRIPLES n`` / ``COUNT n``: the last ``n`` triples; the oldest leaves when one more arrives."""

    def __init__(self, int64_t count):
        self.count = count

    cpdef list insert(self, int64_t t, int64_t seq, int64_t index=0):
        self._append(t, seq)
        cdef list gone = []
        while <int64_t>self._entries.size() > self.count:
            gone.append(self._entries.front().seq)
            self._entries.pop_front()
        return gone


cdef class StreamTriplesState(WindowState):
    """``TRIPLES n`` in CQELS-QL 2.0: the pattern's triples among the last ``n`` statements of the
    stream (see windows.StreamTriplesState)."""

    def __init__(self, int64_t count):
        self.count = count
        self.seen = 0
        self._start = 0

    def statements(self, int64_t k):
        """An event of ``k`` statements begins: the sequence numbers now out of the last ``n``."""
        self._start = self.seen
        self.seen += k
        cdef int64_t first = self.seen - self.count
        cdef list gone = []
        while not self._ordinals.empty() and self._ordinals.front() < first:
            gone.append(self._entries.front().seq)
            self._entries.pop_front()
            self._ordinals.pop_front()
        return gone

    cpdef list insert(self, int64_t t, int64_t seq, int64_t index=0):
        cdef int64_t ordinal = self._start + index
        if ordinal < self.seen - self.count:
            return [seq]
        self._append(t, seq)
        self._ordinals.push_back(ordinal)
        return []
