"""Routing the triples of a stream event, as term ids, to the stream triple patterns they match.

A ``Router`` holds the stream triple patterns of one query on one stream, each given by its
``PatternSpec``: the ids of the predicates a matching triple may have (None: any), the constants it
must have at other positions, and the positions that must hold the same term (a pattern repeating
a variable or blank node, ``?x :p ?x``). ``route(ids)`` takes the ids of an event's triples, three
per triple (``TermDictionary.encode_triples``), and lists every ``(pattern id, (s, p, o), index)``
such that the triple, the ``index``-th of the event, matches the pattern: triples in event order,
and for each triple its patterns in pattern order — the order the windows are offered a triple in,
which numbers their entries (a stream-wide count window also reads the index). It looks
a triple up by its predicate id, then checks the constants of the few patterns found there, so the
cost does not grow with the patterns of other predicates.

The ids of the constants must stay those of their terms for as long as the router is used: whoever
builds the specs holds a dictionary reference on each (``engine.continuous`` does).

``Router`` is compiled (``_routing.pyx``) unless ``CQELS_PURE_PYTHON=1`` selects ``RouterPython``,
the reference version below; both route the same (tests/runtime/test_routing.py).

>>> from array import array
>>> router = Router([PatternSpec(0, (7,), ((2, 9),), ()), PatternSpec(1, None, (), ((0, 2),))])
>>> router.route(array("q", [1, 7, 9, 1, 7, 2, 3, 8, 3]))
[(0, (1, 7, 9), 0), (1, (3, 8, 3), 2)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python

__all__ = ["PatternSpec", "Router", "RouterPython"]


class PatternSpec(NamedTuple):
    """What a triple must be to match one stream triple pattern, in term ids."""

    pattern_id: int
    predicates: tuple[int, ...] | None  # the predicate ids it accepts; None: any predicate
    constants: tuple[tuple[int, int], ...]  # (position 0–2, id) the triple must hold
    repeats: tuple[tuple[int, int], ...]  # pairs of positions that must hold the same id


class RouterPython:
    """Routes triples of ids to the patterns they match (module docstring)."""

    def __init__(self, specs: Sequence[PatternSpec]) -> None:
        self._any = tuple(spec for spec in specs if spec.predicates is None)
        predicates = {p for spec in specs if spec.predicates is not None for p in spec.predicates}
        self._by_predicate = {
            p: tuple(spec for spec in specs if spec.predicates is None or p in spec.predicates) for p in predicates
        }

    def route(self, ids: Sequence[int]) -> list[tuple[int, tuple[int, int, int], int]]:
        """Every ``(pattern id, (s, p, o), index in the event)`` a triple of ``ids`` matches, in order."""
        matched = []
        for start in range(0, len(ids), 3):
            triple = (ids[start], ids[start + 1], ids[start + 2])
            for spec in self._by_predicate.get(triple[1], self._any):
                if all(triple[position] == constant for position, constant in spec.constants) and all(
                    triple[a] == triple[b] for a, b in spec.repeats
                ):
                    matched.append((spec.pattern_id, triple, start // 3))
        return matched


if use_pure_python():
    Router = RouterPython
else:
    with compiled_imports("router"):
        from cqels_endpoint.runtime._routing import Router
