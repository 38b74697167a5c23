"""What a rebuild changes in a static cache, computed on terms, off the engine's lock.

A rebuild produces the complete new rows of a cache; the cache holds the rows of the build
installed before it. ``bag_delta`` diffs the two as bags of pyoxigraph terms, so that the engine
only has to encode and apply the rows that changed (``Engine._swap_caches``), a few at a time.

Why on terms: the engine's term dictionary is shared and not thread-safe, so encoding the whole new
build to ids would have to run under the engine's lock. Terms need no dictionary, and encoding is
a bijection (``decode(encode(t)) == t``; distinct terms get distinct ids), so the difference of
the term bags is exactly the difference of their encodings.

A build written as Parquet (``caches.engines.ParquetRows``) is never held whole: its rows are in
the order of their keys (``row_key``: per column the term's ``term_key``, a snapshot-independent
int64), so ``bag_delta`` against it is a ``MergedDelta`` that merges the two sides in key order
while it is staged, one key's rows at a time (a list side is sorted by key first: it is in memory
already). Rows with one key are diffed as bags, so two terms whose hashes collide still compare
exactly. Only a snapshot whose own ids collided (``ParquetRows.sorted_by_key`` False: with 10M
terms, about one graph in 10^5) falls back to counting every row, O(rows) on the driver.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyoxigraph as ox

from cqels_endpoint.caches.engines import NULL_KEY, ParquetRows, Rows
from cqels_endpoint.runtime.encoding import inline_id

# Dictionary keys are positive 62-bit hashes: 0 is the default graph's id in a Spark snapshot and
# negative ids are the inline literals of ``runtime.encoding``.
KEY_MASK = (1 << 62) - 1


@dataclass(frozen=True)
class CacheDelta:
    """Rows of terms (None for unbound) that enter (``added``) and leave (``removed``) a cache,
    one entry per occurrence; no row is in both."""

    added: Rows
    removed: Rows

    def __len__(self) -> int:
        return len(self.added) + len(self.removed)

    def steps(self, size: int) -> Iterator[tuple[list[tuple], list[tuple]]]:
        """The delta cut into ``(added, removed)`` parts of at most ``size`` rows each."""
        for part in chunks(self.added, size):
            yield part, []
        for part in chunks(self.removed, size):
            yield [], part

# Rows read per part: a part of a Parquet build is decoded in one go, and a slice of a list is one
# C call; a million at once would hold the GIL (a pause of every push) for its whole duration.
CHUNK_ROWS = 10_000


def bag_delta(old: Rows, new: Rows) -> CacheDelta | MergedDelta:
    """What turns the bag ``old`` into the bag ``new`` (a ``MergedDelta`` when a side is Parquet)."""
    parquet = [rows for rows in (old, new) if isinstance(rows, ParquetRows)]
    if parquet and all(rows.sorted_by_key for rows in parquet):
        return MergedDelta(old, new)
    # A plain dict, not a Counter (a Counter is always GC-tracked): with keys the untracked rows of
    # a build and int values, CPython leaves it untracked, and a young collection does not visit
    # its million entries while it is being filled.
    counts: dict[tuple, int] = {}
    get = counts.get
    for part in chunks(new, CHUNK_ROWS):
        for row in map(tuple, part):
            counts[row] = get(row, 0) + 1
    for part in chunks(old, CHUNK_ROWS):
        for row in map(tuple, part):
            counts[row] = get(row, 0) - 1
    added = [row for row, count in counts.items() for _ in range(count) if count > 0]
    removed = [row for row, count in counts.items() for _ in range(-count) if count < 0]
    return CacheDelta(added, removed)


def chunks(rows: Rows, size: int) -> Iterator[Sequence[tuple]]:
    """``rows`` in consecutive parts of at most ``size`` rows (a Parquet build read part by part)."""
    if isinstance(rows, ParquetRows):
        yield from rows.chunks(size)
        return
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def term_key(term) -> int:
    """The int64 a Spark snapshot's dictionary gives ``term`` unless two of its terms collide
    (``spark.export.SnapshotDictionary``): its inline id, else a positive 62-bit hash of the term
    (pyoxigraph hashes a term's content, the same in every snapshot of this process)."""
    if type(term) is ox.Literal:
        inline = inline_id(term)
        if inline is not None:
            return inline
    return (hash(term) & KEY_MASK) or 1


def row_key(row: tuple) -> tuple[int, ...]:
    """The order of rows in a sorted Parquet build: ``term_key`` per column, unbound first."""
    return tuple(NULL_KEY if term is None else term_key(term) for term in row)


class MergedDelta:
    """The difference of two bags at least one of which is a ``ParquetRows``, computed part by part
    as ``steps`` is iterated: the two sides are merged in key order, and the rows of one key are
    diffed as bags. The driver holds a part, one key's rows and a list side, never a Parquet side."""

    def __init__(self, old: Rows, new: Rows):
        self.old = old
        self.new = new

    def steps(self, size: int) -> Iterator[tuple[list[tuple], list[tuple]]]:
        """``(added, removed)`` parts of at most ``size`` rows together, in key order."""
        added: list[tuple] = []
        removed: list[tuple] = []
        for old_rows, new_rows in _merge(_keyed(self.old), _keyed(self.new)):
            counts = Counter(new_rows)
            counts.subtract(old_rows)
            for row, count in counts.items():
                if count > 0:
                    added.extend([row] * count)
                elif count < 0:
                    removed.extend([row] * -count)
            while len(added) + len(removed) >= size:
                take = min(size, len(added))
                yield added[:take], removed[: size - take]
                added, removed = added[take:], removed[size - take :]
        if added or removed:
            yield added, removed


def _keyed(rows: Rows) -> Iterator[tuple[tuple, tuple]]:
    """``(key, row)`` for every row of ``rows`` in key order."""
    if isinstance(rows, ParquetRows):
        for keys, part in rows.keyed(CHUNK_ROWS):
            yield from zip(keys, part, strict=True)
    else:
        # Sorted in runs merged in Python: one sort of a million rows would hold the GIL throughout.
        pairs = [(row_key(row), tuple(row)) for row in rows]
        runs = [sorted(pairs[start : start + CHUNK_ROWS], key=_first) for start in range(0, len(pairs), CHUNK_ROWS)]
        del pairs
        yield from heapq.merge(*runs, key=_first)


def _first(pair: tuple) -> tuple:
    return pair[0]


def _groups(pairs: Iterable[tuple[tuple, tuple]]) -> Iterator[tuple[tuple, list[tuple]]]:
    """The rows of each key, checking that the keys ascend (a merge of unsorted input is wrong)."""
    previous = None
    for key, group in itertools.groupby(pairs, key=_first):
        if previous is not None and key < previous:
            msg = f"cache rows are not in key order: {key} after {previous}"
            raise ValueError(msg)
        previous = key
        yield key, [row for _, row in group]


_END = (None, [])


def _merge(old: Iterator, new: Iterator) -> Iterator[tuple[list[tuple], list[tuple]]]:
    """``(old rows, new rows)`` of each key either side has, in key order."""
    old_groups, new_groups = _groups(old), _groups(new)
    old_key, old_rows = next(old_groups, _END)
    new_key, new_rows = next(new_groups, _END)
    while old_key is not None or new_key is not None:
        if new_key is None or (old_key is not None and old_key < new_key):
            yield old_rows, []
            old_key, old_rows = next(old_groups, _END)
        elif old_key is None or new_key < old_key:
            yield [], new_rows
            new_key, new_rows = next(new_groups, _END)
        else:
            yield old_rows, new_rows
            old_key, old_rows = next(old_groups, _END)
            new_key, new_rows = next(new_groups, _END)
