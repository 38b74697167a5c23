"""Pure-Python twin of ``operators/_indexes.pyx``: the same behaviour, plain lists and dicts.

Read this file for the semantics; the compiled module mirrors it line for line with C++
containers, and tests/operators/test_indexes.py drives both with random operation sequences and compares
every answer. The twin of the multiway join (``reference/join.py``) indexes its inputs with these.

Keys and entries are signed 64-bit integers (term ids, row handles, ``key_of`` hashes); anything
outside that range raises ``OverflowError`` as the compiled version's C conversion does.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _int64(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        msg = f"{value} does not fit a signed 64-bit index key or entry"
        raise OverflowError(msg)
    return value


def _mix(z: int) -> int:
    # splitmix64's finaliser: a bijection on 64-bit words with good avalanche.
    z = (z + _GOLDEN) & _UINT64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _UINT64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _UINT64
    return z ^ (z >> 31)


def key_of(ids: Sequence[int]) -> int:
    """One int64 index key for a tuple of term ids.

    One id is its own key (exact). Several are hashed (order matters), so different tuples may
    share a key: callers compare the actual ids of what a probe returns. No ids give a constant key.

    >>> key_of([7])
    7
    >>> key_of([1, 2]) == key_of([1, 2]) != key_of([2, 1])
    True
    """
    if len(ids) == 1:
        return _int64(ids[0])
    h = _GOLDEN ^ len(ids)
    for term_id in ids:
        h = _mix(h ^ (_int64(term_id) & _UINT64))
    return h - (1 << 64) if h >> 63 else h


class _Bucket:
    """The entries of one key, oldest first, with dead marks; ``head`` skips the dead prefix."""

    __slots__ = ("dead", "dead_count", "entries", "head", "live")

    def __init__(self) -> None:
        self.entries: list[int] = []
        self.dead: list[bool] = []
        self.head = 0
        self.live = 0
        self.dead_count = 0


class RingIndex:
    """key → all its entries, newest first, with lazy deletion.

    ``insert`` appends; ``remove`` marks the oldest live occurrence of the entry dead (window
    expiry removes the oldest, so it is found at once) and the whole bucket is compacted only when
    dead slots outnumber live ones. ``probe`` walks from the newest slot and stops once it has
    returned the key's live counter of entries, so the dead slots left behind expiry are never
    read. A key whose last entry is removed disappears. ``len()`` is the number of live entries.

    Costs: ``insert``, ``count`` O(1); ``probe`` O(live entries of the key); ``remove`` O(distance
    of the entry from the key's oldest live one) — O(1) for expiry in arrival order — plus an
    amortised O(1) for compaction.
    """

    __slots__ = ("_buckets", "_size")

    def __init__(self) -> None:
        self._buckets: dict[int, _Bucket] = {}
        self._size = 0

    def insert(self, key: int, entry: int) -> None:
        _int64(entry)
        bucket = self._buckets.get(_int64(key))
        if bucket is None:
            bucket = self._buckets[key] = _Bucket()
        bucket.entries.append(entry)
        bucket.dead.append(False)
        bucket.live += 1
        self._size += 1

    def remove(self, key: int, entry: int) -> bool:
        """Remove the oldest live occurrence of ``entry`` under ``key``; False if there is none."""
        bucket = self._buckets.get(_int64(key))
        _int64(entry)
        if bucket is None:
            return False
        entries, dead = bucket.entries, bucket.dead
        for position in range(bucket.head, len(entries)):
            if entries[position] == entry and not dead[position]:
                break
        else:
            return False
        dead[position] = True
        bucket.live -= 1
        bucket.dead_count += 1
        self._size -= 1
        if bucket.live == 0:
            del self._buckets[key]
            return True
        while dead[bucket.head]:  # a live slot remains, so this stops inside the list
            bucket.head += 1
        if bucket.dead_count > bucket.live:
            kept = [e for e, is_dead in zip(entries[bucket.head :], dead[bucket.head :]) if not is_dead]
            bucket.entries = kept
            bucket.dead = [False] * len(kept)
            bucket.head = 0
            bucket.dead_count = 0
        return True

    def probe(self, key: int) -> list[int]:
        """The live entries of ``key``, newest first (empty if none)."""
        bucket = self._buckets.get(_int64(key))
        if bucket is None:
            return []
        found: list[int] = []
        entries, dead = bucket.entries, bucket.dead
        position = len(entries) - 1
        while len(found) < bucket.live:  # the counter is the stop condition
            if not dead[position]:
                found.append(entries[position])
            position -= 1
        return found

    def count(self, key: int) -> int:
        """Live entries under ``key``: the counter the adaptive join orders its probes by."""
        bucket = self._buckets.get(_int64(key))
        return 0 if bucket is None else bucket.live

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: int) -> bool:
        return _int64(key) in self._buckets

    def key_count(self) -> int:
        """Keys with at least one live entry."""
        return len(self._buckets)

    def keys(self) -> list[int]:
        """The keys with live entries, in no particular order."""
        return list(self._buckets)

    def items(self) -> list[tuple[int, list[int]]]:
        """(key, live entries newest first) for every key, keys in no particular order."""
        return [(key, self.probe(key)) for key in self._buckets]

    def clear(self) -> None:
        self._buckets.clear()
        self._size = 0

    def memory_bytes(self) -> int:
        """Rough bytes held by the index's own containers (not the objects Python shares)."""
        total = sys.getsizeof(self._buckets)
        for bucket in self._buckets.values():
            total += sys.getsizeof(bucket) + sys.getsizeof(bucket.entries) + sys.getsizeof(bucket.dead)
        return total


class OneWayIndex:
    """key → counter, plus one Python object per key for operator state (aggregates).

    A key exists while its counter is positive: ``add`` creates it, and when the counter returns
    to 0 the key and its state go. ``len()`` is the number of keys.
    """

    __slots__ = ("_counts", "_states")

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self._states: dict[int, Any] = {}

    def add(self, key: int, delta: int = 1) -> int:
        """Change the counter of ``key`` by ``delta`` and return the new value.

        ``ValueError`` (and no change) if the counter would drop below 0.
        """
        count = self._counts.get(_int64(key), 0) + _int64(delta)
        if count < 0:
            msg = f"counter of key {key} would drop to {count}: more removals than insertions"
            raise ValueError(msg)
        if count > _INT64_MAX:
            msg = f"counter of key {key} would overflow 64 bits"
            raise OverflowError(msg)
        if count:
            self._counts[key] = count
        elif key in self._counts:
            del self._counts[key]
            self._states.pop(key, None)
        return count

    def count(self, key: int) -> int:
        return self._counts.get(_int64(key), 0)

    def get_state(self, key: int, default: Any = None) -> Any:
        """The state object of ``key``, or ``default`` if it has none."""
        return self._states.get(_int64(key), default)

    def set_state(self, key: int, state: Any) -> None:
        """Attach ``state`` to a key that exists (``KeyError`` otherwise: add it first)."""
        if _int64(key) not in self._counts:
            msg = f"key {key} is not in the index; add() it before giving it a state"
            raise KeyError(msg)
        self._states[key] = state

    def __len__(self) -> int:
        return len(self._counts)

    def __contains__(self, key: int) -> bool:
        return _int64(key) in self._counts

    def keys(self) -> list[int]:
        """The keys, in no particular order."""
        return list(self._counts)

    def items(self) -> list[tuple[int, int]]:
        """(key, counter) pairs, in no particular order."""
        return list(self._counts.items())

    def clear(self) -> None:
        self._counts.clear()
        self._states.clear()

    def memory_bytes(self) -> int:
        """Rough bytes held by the index's own containers (states not included)."""
        return sys.getsizeof(self._counts) + sys.getsizeof(self._states)
