# distutils: language = c++
"""Slot arithmetic for open-addressing tables of any size (linear probing), so that a table can
grow by half rather than double: the home of a 64-bit hash is its high bits scaled to the size
(multiply-shift: a Fibonacci hash ``key * 0x9E3779B97F4A7C15`` spreads serial keys evenly), the
next slot wraps at the size, and the distance from a home runs forward with the probe (for
backward-shift deletion). Used by the term dictionary, the window buffer's leaves and the
aggregate's row records.

Only declarations and inline code: cimporting this file adds no module to import.
"""

from libc.stdint cimport uint64_t

cdef extern from *:
    """
    #ifndef CQELS_SLOTS
    #define CQELS_SLOTS
    #include <cstddef>
    #include <cstdint>
    static inline size_t cqels_home(uint64_t h, size_t n) { return (size_t)(((unsigned __int128)h * n) >> 64); }
    static inline size_t cqels_next(size_t i, size_t n) { return i + 1 == n ? 0 : i + 1; }
    static inline size_t cqels_distance(size_t from, size_t to, size_t n) { return to >= from ? to - from : to + n - from; }
    static const uint64_t CQELS_GOLDEN = 0x9E3779B97F4A7C15ULL;
    #endif
    """
    size_t slot_home "cqels_home"(uint64_t h, size_t n) noexcept nogil
    size_t slot_next "cqels_next"(size_t i, size_t n) noexcept nogil
    size_t slot_distance "cqels_distance"(size_t start, size_t end, size_t n) noexcept nogil
    const uint64_t GOLDEN "CQELS_GOLDEN"
