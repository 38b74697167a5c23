"""What a rebuild changes in a static cache, computed on terms, off the engine's lock.

A rebuild produces the complete new rows of a cache; the cache holds the rows of the build
installed before it. ``bag_delta`` diffs the two as bags of pyoxigraph terms, so that the engine
only has to encode and apply the rows that changed (``Engine._swap_caches``), a few at a time.

Why on terms: the engine's term dictionary is shared and not thread-safe, so encoding the whole new
build to ids would have to run under the engine's lock. Terms need no dictionary, and encoding is
a bijection (``decode(encode(t)) == t``; distinct terms get distinct ids), so the difference of
the term bags is exactly the difference of their encodings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CacheDelta:
    """Rows of terms (None for unbound) that enter (``added``) and leave (``removed``) a cache,
    one entry per occurrence; no row is in both."""

    added: list[tuple]
    removed: list[tuple]

    def __len__(self) -> int:
        return len(self.added) + len(self.removed)

    def steps(self, size: int) -> Iterator[tuple[list[tuple], list[tuple]]]:
        """The delta cut into ``(added, removed)`` parts of at most ``size`` rows each."""
        for start in range(0, len(self.added), size):
            yield self.added[start : start + size], []
        for start in range(0, len(self.removed), size):
            yield [], self.removed[start : start + size]

# Rows counted per call: one Counter call over a million rows runs in C without a chance for
# another thread to take the GIL, which would stall every push for its whole duration.
CHUNK_ROWS = 10_000


def bag_delta(old: Sequence[tuple], new: Sequence[tuple]) -> CacheDelta:
    """What turns the bag ``old`` into the bag ``new``."""
    counts: Counter = Counter()
    for start in range(0, len(new), CHUNK_ROWS):
        counts.update(map(tuple, new[start : start + CHUNK_ROWS]))
    for start in range(0, len(old), CHUNK_ROWS):
        counts.subtract(map(tuple, old[start : start + CHUNK_ROWS]))
    added = [row for row, count in counts.items() for _ in range(count) if count > 0]
    removed = [row for row, count in counts.items() for _ in range(-count) if count < 0]
    return CacheDelta(added, removed)
