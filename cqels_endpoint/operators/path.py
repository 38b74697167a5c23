"""The path window: a stream triple pattern whose predicate is a property path with ``*``, ``+``,
``?`` or ``!`` (``?a :p+ ?b``, ``?a (:p/:q)* ?b``, ``:e !(:p|^:q) ?b``), evaluated over its window.

A ``PathWindow`` is a source, fed like a window buffer (``insert(seq, ids)`` / ``expire(seq)``) with
the triples that enter and leave its window — a set of triples, the window graph, holding every
triple that can take part in the path (``plan.patterns``). At the punctuation of a tick in which
its window changed (and at its first tick), it evaluates the path over the whole window graph with ``runtime.paths``
(SPARQL 1.1 §18.4), binds the subject and object columns (a constant end restricts the evaluation
to paths from or to it), and emits the difference with the rows it emitted before; a tick that left
the window unchanged costs nothing. Its graph index (``TripleGraph``) is maintained as triples come
and go; the path itself is **re-evaluated at every changed tick, not maintained incrementally**:
the closure of ``*`` and ``+`` under deletion would need, for every reachable pair, the set of its
derivations (or a re-derivation of everything the deleted triple supported, DRed-style), and a
negated set or a zero-length path depends on the whole graph, so the evaluation cost is bounded by
the window's size either way. ``counters()`` reports the evaluations and the ticks skipped.

Output rows are a bag (a sequence or an alternative counts each way of matching, ``*``/``+``/``?``
are sets). A row occurrence keeps its lineage while it stays: each new occurrence gets the next
serial ``(n,)``, and an occurrence that goes retracts the most recent serial of its row. Rows are
diffed in sorted order, so the twin (``reference/path.py``) assigns the same lineages.

Dictionary references: the operator takes over the references of each inserted triple and releases
them one tick after the triple left (the ``Source`` contract), and holds one reference to each
constant of the pattern — the path's IRIs and constant ends, which a zero-length path can output
(``:a :p* ?x`` binds ``?x`` to ``:a`` even in an empty window) — until ``close()``. Rows are made of
those ids only, so a row stays decodable one tick after it left.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Source
from cqels_endpoint.operators.shared.schemas import pattern_schema
from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.paths import TripleGraph, compile_path, path_pairs
from cqels_endpoint.terms import BlankNode, Var


class PathWindowBase(Source):
    """What the path window and its twin share: the pattern, the window's triples, the diff.

    ``positions`` names the subject and object columns as a window buffer's do (None for a
    constant; the predicate position is None), ``triple`` is the pattern (its predicate the path)
    and ``dictionary`` the engine's ``TermDictionary``, which encodes the pattern's constants.
    Subclasses say how the current solutions are found (``_solutions``) and when (``_changed``).
    """

    fed_by = "insert()/expire()"

    def __init__(
        self,
        positions: Sequence[str | None],
        triple: ast.TriplePattern,
        dictionary,
        label: str = "",
        on_release: Callable[[tuple], None] | None = None,
    ) -> None:
        super().__init__(pattern_schema(positions), label or "path", on_release)
        self._dictionary = dictionary
        self._constants: list[int] = []
        self._step = compile_path(triple.predicate, self._constant)
        subject_column, _, object_column = positions
        self._subject = None if subject_column is not None else self._constant(triple.subject)
        self._object = None if object_column is not None else self._constant(triple.object)
        self._same = subject_column is not None and subject_column == object_column
        # Which ends make the row: subject and object, one of them, or none (both constant).
        self._ends = tuple(i for i, name in enumerate((subject_column, object_column)) if name is not None)
        if self._same:
            self._ends = (0,)
        self._triples: dict[int, tuple] = {}  # seq -> (s, p, o) ids
        self._output: dict[tuple, list[int]] = {}  # row -> lineage serials of its occurrences
        self._serials = itertools.count(1)
        # The first tick evaluates even an empty window: ``:a :p* ?x`` has a solution there.
        self._changed = True
        self.evaluations = 0

    def _constant(self, term) -> int:
        if isinstance(term, (Var, BlankNode)):
            raise TypeError(f"not a constant of a path pattern: {term!r}")
        term_id = self._dictionary.encode(constant_term(term))
        self._constants.append(term_id)
        return term_id

    # ------------------------------------------------------------------ fed by the evaluator

    def insert(self, seq: int, ids: tuple[int, int, int]) -> None:
        """The encoded triple ``ids`` enters the window as leaf ``seq``."""
        self.inputs_seen += 1
        self._triples[seq] = tuple(ids)
        self._changed = True

    def expire(self, seq: int) -> None:
        """Leaf ``seq`` leaves the window."""
        ids = self._triples.pop(seq)
        self._changed = True
        if self._on_release is not None:
            self._released.append(ids)

    def on_punctuation(self, tau: int) -> None:
        if self._changed:
            self._changed = False
            self.evaluations += 1
            self._pending = self._diff(self._solutions())
        super().on_punctuation(tau)

    # ------------------------------------------------------------------ evaluation

    def _solutions(self) -> Counter:
        raise NotImplementedError

    def _rows(self, graph: TripleGraph) -> Counter:
        """The path's solutions over ``graph`` as a bag of rows of the schema."""
        rows: Counter = Counter()
        for pair, count in path_pairs(self._step, graph, self._subject, self._object, self._same).items():
            rows[tuple(pair[i] for i in self._ends)] += count
        return rows

    def _diff(self, current: Counter) -> list[Delta]:
        """-1 for the occurrences that left (most recent serial first), then +1 for the new ones."""
        gone: list[Delta] = []
        new: list[Delta] = []
        for row in sorted(self._output.keys() | current.keys()):
            serials = self._output.setdefault(row, [])
            wanted = current.get(row, 0)
            while len(serials) > wanted:
                gone.append(Delta(row, -1, (serials.pop(),)))
            while len(serials) < wanted:
                serial = next(self._serials)
                serials.append(serial)
                new.append(Delta(row, 1, (serial,)))
            if not serials:
                del self._output[row]
        return gone + new

    # ------------------------------------------------------------------ references and counters

    def held(self) -> list[tuple]:
        return [*self._triples.values(), tuple(self._constants)]

    def close(self) -> None:
        super().close()
        self._triples = {}
        self._constants = []

    def __len__(self) -> int:
        return len(self._triples)

    def counters(self) -> dict[str, Any]:
        return {
            **super().counters(),
            "size": len(self._triples),
            "rows": sum(len(serials) for serials in self._output.values()),
            "evaluations": self.evaluations,
        }


class PathWindow(PathWindowBase):
    """The path window of the engine: its graph index follows the window, and the path is
    evaluated only at the ticks that changed the window."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._graph = TripleGraph()
        self.skipped = 0

    def insert(self, seq: int, ids: tuple[int, int, int]) -> None:
        super().insert(seq, ids)
        self._graph.add(self._triples[seq])

    def expire(self, seq: int) -> None:
        self._graph.remove(self._triples[seq])
        super().expire(seq)

    def on_punctuation(self, tau: int) -> None:
        if not self._changed:
            self.skipped += 1
        super().on_punctuation(tau)

    def _solutions(self) -> Counter:
        return self._rows(self._graph)

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "skipped": self.skipped}
