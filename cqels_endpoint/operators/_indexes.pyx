# distutils: language = c++
"""Compiled ring and one-way indexes over C++ hash maps; reference/indexes.py is the twin.

The semantics are documented once, in the twin; this file only changes the containers.
"""

from cython.operator cimport dereference as deref
from libc.stdint cimport INT64_MAX, int64_t, uint64_t, uint8_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

import sys

cdef uint64_t _GOLDEN = 0x9E3779B97F4A7C15ULL


cdef inline uint64_t _mix(uint64_t z) noexcept:
    # splitmix64's finaliser, exactly as reference/indexes.py computes it with masks.
    z += _GOLDEN
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef int64_t key_of_c(const int64_t* ids, Py_ssize_t n) noexcept:
    if n == 1:
        return ids[0]
    cdef uint64_t h = _GOLDEN ^ <uint64_t>n
    cdef Py_ssize_t i
    for i in range(n):
        h = _mix(h ^ <uint64_t>ids[i])
    return <int64_t>h


def key_of(ids):
    """One int64 index key for a sequence of term ids (see reference/indexes.py)."""
    cdef Py_ssize_t n = len(ids)
    cdef vector[int64_t] values
    values.reserve(n)
    for term_id in ids:
        values.push_back(term_id)
    return key_of_c(values.data(), n)


cdef class RingIndex:
    """key → all its entries, newest first, with lazy deletion (see reference/indexes.py)."""

    def __cinit__(self):
        self._size = 0

    cdef void insert_c(self, int64_t key, int64_t entry):
        cdef Bucket* bucket = &self._buckets[key]  # value-initialised (zeroed) on first use
        bucket.entries.push_back(entry)
        if not bucket.dead.empty():
            bucket.dead.push_back(0)
        bucket.live += 1
        self._size += 1

    cdef bint remove_c(self, int64_t key, int64_t entry):
        cdef unordered_map[int64_t, Bucket].iterator found = self._buckets.find(key)
        if found == self._buckets.end():
            return False
        cdef Bucket* bucket = &deref(found).second
        cdef size_t n = bucket.entries.size()
        cdef size_t position = bucket.head
        cdef bint marked = not bucket.dead.empty()
        while position < n:
            if bucket.entries[position] == entry and not (marked and bucket.dead[position]):
                break
            position += 1
        if position == n:
            return False
        bucket.live -= 1
        bucket.dead_count += 1
        self._size -= 1
        if bucket.live == 0:
            self._buckets.erase(found)
            return True
        if position == bucket.head:
            bucket.head += 1
            while marked and bucket.dead[bucket.head]:  # a live slot remains: stops inside
                bucket.head += 1
        else:
            if not marked:
                bucket.dead.assign(n, 0)
            bucket.dead[position] = 1
        if bucket.dead_count > bucket.live:
            _compact(bucket)
        return True

    cdef int64_t count_c(self, int64_t key) noexcept:
        cdef unordered_map[int64_t, Bucket].iterator found = self._buckets.find(key)
        if found == self._buckets.end():
            return 0
        return deref(found).second.live

    cdef void probe_into(self, int64_t key, vector[int64_t]& out):
        cdef unordered_map[int64_t, Bucket].iterator found = self._buckets.find(key)
        if found == self._buckets.end():
            return
        cdef Bucket* bucket = &deref(found).second
        cdef int64_t wanted = bucket.live
        cdef size_t position = bucket.entries.size()
        cdef bint marked = not bucket.dead.empty()
        while wanted:  # the counter is the stop condition
            position -= 1
            if not (marked and bucket.dead[position]):
                out.push_back(bucket.entries[position])
                wanted -= 1

    def insert(self, int64_t key, int64_t entry):
        self.insert_c(key, entry)

    def remove(self, int64_t key, int64_t entry):
        """Remove the oldest live occurrence of ``entry`` under ``key``; False if there is none."""
        return self.remove_c(key, entry)

    def probe(self, int64_t key):
        """The live entries of ``key``, newest first (empty if none)."""
        cdef unordered_map[int64_t, Bucket].iterator found = self._buckets.find(key)
        if found == self._buckets.end():
            return []
        cdef Bucket* bucket = &deref(found).second
        cdef list result = []
        cdef int64_t wanted = bucket.live
        cdef size_t position = bucket.entries.size()
        cdef bint marked = not bucket.dead.empty()
        while wanted:
            position -= 1
            if not (marked and bucket.dead[position]):
                result.append(bucket.entries[position])
                wanted -= 1
        return result

    def count(self, int64_t key):
        """Live entries under ``key``: the counter the adaptive join orders its probes by."""
        return self.count_c(key)

    def __len__(self):
        return self._size

    def __contains__(self, int64_t key):
        return self._buckets.count(key) != 0

    def key_count(self):
        """Keys with at least one live entry."""
        return self._buckets.size()

    def keys(self):
        """The keys with live entries, in no particular order."""
        return [item.first for item in self._buckets]

    def items(self):
        """(key, live entries newest first) for every key, keys in no particular order."""
        return [(key, self.probe(key)) for key in self.keys()]

    def clear(self):
        self._buckets.clear()
        self._size = 0

    def memory_bytes(self):
        """Rough bytes held by the C++ containers: table, nodes and the vectors' capacity."""
        cdef size_t total = sys.getsizeof(self) + self._buckets.bucket_count() * sizeof(void*)
        for item in self._buckets:
            # node: next pointer, cached hash, key and bucket header
            total += 2 * sizeof(void*) + sizeof(int64_t) + sizeof(Bucket)
            total += item.second.entries.capacity() * sizeof(int64_t) + item.second.dead.capacity()
        return total


cdef void _compact(Bucket* bucket):
    # Drops the dead slots in place, keeping the oldest-first order of the live ones.
    cdef size_t n = bucket.entries.size()
    cdef size_t kept = 0
    cdef size_t position
    cdef bint marked = not bucket.dead.empty()
    for position in range(bucket.head, n):
        if not (marked and bucket.dead[position]):
            bucket.entries[kept] = bucket.entries[position]
            kept += 1
    bucket.entries.resize(kept)
    vector[uint8_t]().swap(bucket.dead)  # no marks left: free them
    bucket.head = 0
    bucket.dead_count = 0
    if bucket.entries.capacity() > 4 * kept + 16:  # give back memory after a burst expired
        bucket.entries.shrink_to_fit()


cdef class OneWayIndex:
    """key → counter, plus one Python object per key for operator state (see reference/indexes.py)."""

    def __cinit__(self):
        self._states = {}

    cdef int64_t add_c(self, int64_t key, int64_t delta) except -1:
        cdef unordered_map[int64_t, int64_t].iterator found = self._counts.find(key)
        cdef int64_t count = 0 if found == self._counts.end() else deref(found).second
        if delta > 0 and count > INT64_MAX - delta:
            raise OverflowError(f"counter of key {key} would overflow 64 bits")
        count += delta
        if count < 0:
            raise ValueError(
                f"counter of key {key} would drop to {count}: more removals than insertions"
            )
        if count:
            self._counts[key] = count
        elif found != self._counts.end():
            self._counts.erase(found)
            self._states.pop(key, None)
        return count

    cdef int64_t count_c(self, int64_t key) noexcept:
        cdef unordered_map[int64_t, int64_t].iterator found = self._counts.find(key)
        return 0 if found == self._counts.end() else deref(found).second

    def add(self, int64_t key, int64_t delta=1):
        """Change the counter of ``key`` by ``delta`` and return the new value."""
        return self.add_c(key, delta)

    def count(self, int64_t key):
        return self.count_c(key)

    def get_state(self, int64_t key, default=None):
        """The state object of ``key``, or ``default`` if it has none."""
        return self._states.get(key, default)

    def set_state(self, int64_t key, state):
        """Attach ``state`` to a key that exists (``KeyError`` otherwise: add it first)."""
        if self._counts.count(key) == 0:
            raise KeyError(f"key {key} is not in the index; add() it before giving it a state")
        self._states[key] = state

    def __len__(self):
        return self._counts.size()

    def __contains__(self, int64_t key):
        return self._counts.count(key) != 0

    def keys(self):
        """The keys, in no particular order."""
        return [item.first for item in self._counts]

    def items(self):
        """(key, counter) pairs, in no particular order."""
        return [(item.first, item.second) for item in self._counts]

    def clear(self):
        self._counts.clear()
        self._states.clear()

    def memory_bytes(self):
        """Rough bytes held by the C++ table and the state dict (states not included)."""
        return (
            sys.getsizeof(self)
            + sys.getsizeof(self._states)
            + self._counts.bucket_count() * sizeof(void*)
            + self._counts.size() * (2 * sizeof(void*) + 2 * sizeof(int64_t))
        )
