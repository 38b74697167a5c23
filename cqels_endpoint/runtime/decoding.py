"""Decoding rows of term ids for the operators that evaluate expressions (FILTER, BIND, GROUP BY).

Dictionary serial numbers are never reused (``runtime.encoding``), so a decoded term cached under
its id stays right forever; the cache is only bounded, not invalidated.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from cqels_endpoint.runtime.encoding import TermDictionary


class TermDecoder:
    """``decode(id)`` through a bounded per-id cache in front of a :class:`TermDictionary`."""

    __slots__ = ("_cache", "_capacity", "dictionary", "hits", "misses")

    def __init__(self, dictionary: TermDictionary, capacity: int = 1 << 16) -> None:
        self.dictionary = dictionary
        self._cache: dict[int, object] = {}
        self._capacity = capacity
        self.hits = 0
        self.misses = 0

    def decode(self, term_id: int):
        term = self._cache.get(term_id)
        if term is not None:
            self.hits += 1
            return term
        self.misses += 1
        term = self.dictionary.decode(term_id)
        if len(self._cache) >= self._capacity:
            # Dropping everything is cheaper than LRU bookkeeping and the hot ids come back at once.
            self._cache.clear()
        self._cache[term_id] = term
        return term


class DecodedRow(Mapping):
    """A row of ids seen as the ``{variable: term}`` mapping the expression evaluator reads.

    Terms are decoded on first access only, so a FILTER on one variable of a wide row decodes one
    id. An unbound variable (None) reads as absent.
    """

    __slots__ = ("_decoder", "_positions", "_row", "_terms")

    def __init__(self, positions: Mapping[str, int], row: Sequence, decoder: TermDecoder) -> None:
        self._positions = positions
        self._row = row
        self._decoder = decoder
        self._terms: dict[str, object] = {}

    def get(self, name: str, default=None):
        term = self._terms.get(name)
        if term is not None:
            return term
        position = self._positions.get(name)
        if position is None:
            return default
        term_id = self._row[position]
        if term_id is None:
            return default
        term = self._terms[name] = self._decoder.decode(term_id)
        return term

    def __getitem__(self, name: str):
        term = self.get(name)
        if term is None:
            raise KeyError(name)
        return term

    def __iter__(self) -> Iterator[str]:
        return (name for name, position in self._positions.items() if self._row[position] is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)
