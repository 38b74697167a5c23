"""What the compiled join module (``operators/_join.pyx``) and its twin (``operators/reference/join.py``)
share: the window buffer's contract and counters (the two differ in how they keep the window's set
of triples), the set view of a window's copies the twin keeps (``WindowCopies``), and the multiway
join's inputs and counters (the two differ in how they keep rows and indexes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Operator, Source
from cqels_endpoint.operators.shared.schemas import join_schema, pattern_schema

# How many rows that left with a flipped staged change a join deletes per tick (and, while a change
# is staged, per row staged): their indexes' entries and table slots, a bounded amount per push.
COLLECT_ROWS_PER_TICK = 2048


def join_components(input_schemas: Sequence[Sequence[str]]) -> list[int]:
    """Per input, the number of its connected part of the join graph (inputs sharing a variable
    are connected): a flip extends from another input over a changed one only within one part.

    >>> join_components([("a",), ("a", "b"), ("c",), ("b",)])
    [0, 0, 2, 0]
    """
    parts = list(range(len(input_schemas)))

    def root(i: int) -> int:
        while parts[i] != i:
            i = parts[i]
        return i

    for i, schema in enumerate(input_schemas):
        for j in range(i):
            if set(schema) & set(input_schemas[j]):
                parts[root(i)] = root(j)
    return [min(k for k in range(len(parts)) if root(k) == root(i)) for i in range(len(parts))]


class WindowBufferBase(Source):
    """Leaf source of one stream triple pattern: the set of triples its window holds.

    ``pattern`` names the variable at subject, predicate and object (None where the pattern has a
    constant, which the engine already matched). A window is a graph, a *set* of triples
    (docs/ARCHITECTURE.md, "Windows and time"), and the buffer keeps it as one: ``insert(seq, ids)``
    takes every copy of a triple admitted to the window, ``expire(seq)`` the copy numbered ``seq``
    leaving it. The first copy of a triple the buffer does not hold makes it a *leaf* named by that
    ``seq``, queued as a +1 delta with lineage ``(seq,)``; a copy of a triple it already holds only
    counts, and the triple leaves (a -1 delta with its leaf's lineage) when its last copy has left.
    The tick's deltas go downstream as one batch at the punctuation. A triple that does not bind a
    repeated variable consistently (``?x :p ?x`` on ``:a :p :b``) is not kept and its later expiry
    is ignored.

    Each copy comes with one dictionary reference per id. The buffer keeps those of a leaf while it
    holds it; ``on_release(ids)`` gets the others back (another copy, a triple not kept, a leaf that
    left) when the *next* tick punctuates, so the evaluator can still decode the -1 rows of the tick
    it left in after that tick's punctuation returned; ``close()`` releases everything.

    Subclasses keep the set: ``insert``, ``expire``, ``held``, ``__len__`` (the leaves held) and
    ``close``.
    """

    fed_by = "insert()/expire()"

    def __init__(
        self,
        pattern: Sequence[str | None],
        label: str = "",
        on_release: Callable[[tuple[int, int, int]], None] | None = None,
    ) -> None:
        if len(pattern) != 3:
            msg = f"a window buffer needs a triple pattern of 3 positions, got {len(pattern)}"
            raise ValueError(msg)
        schema = pattern_schema(pattern)
        super().__init__(schema, label or "buffer", on_release)
        # For every schema column, the triple positions that must carry its value.
        self._columns = tuple(
            tuple(position for position, name in enumerate(pattern) if name == column) for column in schema
        )
        self.expired = 0
        self.rejected = 0

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "size": len(self), "expired": self.expired}


class WindowCopies:
    """The copies of the triples of one window (``seq`` → triple), seen as the set of its triples:
    each triple is named by its *leaf*, the ``seq`` of its first copy, and leaves with its last.

    The state of the twin window buffer, and of the evaluator's set view of a path window.

    >>> copies = WindowCopies()
    >>> copies.add(1, (7, 8, 9)), copies.add(2, (7, 8, 9)), copies.add(3, (7, 8, 0))
    (True, False, True)
    >>> copies.remove(1), copies.remove(2), len(copies)
    (None, (1, (7, 8, 9)), 1)
    """

    __slots__ = ("_copies", "_leaf_of_copy", "_leaf_of_triple", "triples")

    def __init__(self) -> None:
        self.triples: dict[int, tuple[int, int, int]] = {}  # leaf → its triple
        self._leaf_of_triple: dict[tuple[int, int, int], int] = {}
        self._copies: dict[int, int] = {}  # leaf → copies beyond the first, when there are any
        self._leaf_of_copy: dict[int, int] = {}  # a later copy's seq → its triple's leaf

    def add(self, seq: int, ids: tuple[int, int, int]) -> bool:
        """Copy ``seq`` of ``ids`` enters: True if it is the triple's first (``seq`` its leaf)."""
        if seq in self.triples or seq in self._leaf_of_copy:
            msg = f"copy {seq} entered the window twice"
            raise OperatorError(msg)
        leaf = self._leaf_of_triple.get(ids)
        if leaf is None:
            self.triples[seq] = ids
            self._leaf_of_triple[ids] = seq
            return True
        self._copies[leaf] = self._copies.get(leaf, 0) + 1
        self._leaf_of_copy[seq] = leaf
        return False

    def remove(self, seq: int) -> tuple[int, tuple[int, int, int]] | None:
        """Copy ``seq`` leaves: ``(leaf, ids)`` if it was its triple's last copy, else None (None
        too for a ``seq`` that never entered)."""
        leaf = self._leaf_of_copy.pop(seq, seq)
        if leaf not in self.triples:
            return None
        extra = self._copies.get(leaf)
        if extra is not None:
            if extra > 1:
                self._copies[leaf] = extra - 1
            else:
                del self._copies[leaf]
            return None
        ids = self.triples.pop(leaf)
        del self._leaf_of_triple[ids]
        return leaf, ids

    def __len__(self) -> int:
        return len(self.triples)


class MultiwayJoinBase(Operator):
    """The inputs of an n-ary join and the counters ``explain`` shows.

    Subclasses keep the rows and indexes and provide ``probes``, ``pruned``, ``probe_orders`` (a
    ``Counter`` of input orders), ``index_sizes()`` and ``live_outputs()``, and take a static cache's
    staged change into their tables (``stage_rows``, ``release_rows``, ``discard_rows``,
    ``flip_rows``: ``reference.join.MultiwayJoin`` says how), which ``StaticCache`` relies on for
    any join below it. ``max_inputs`` bounds the arity where an implementation has a limit.
    """

    max_inputs: int | None = None

    def __init__(self, input_schemas: Sequence[Sequence[str]], label: str = "") -> None:
        if len(input_schemas) < 2:
            msg = f"a multiway join needs at least 2 inputs, got {len(input_schemas)}"
            raise ValueError(msg)
        if self.max_inputs is not None and len(input_schemas) > self.max_inputs:
            msg = f"a multiway join takes at most {self.max_inputs} inputs, got {len(input_schemas)}: split it"
            raise ValueError(msg)
        super().__init__(join_schema(input_schemas), label or "join")
        self.arity = len(input_schemas)
        self.input_schemas = tuple(tuple(input_schema) for input_schema in input_schemas)
        self.inputs_per_port = [0] * self.arity

    def counters(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs_seen,
            "inputs_per_port": list(self.inputs_per_port),
            "outputs": self.outputs_emitted,
            "probes": self.probes,
            "pruned": self.pruned,
            # Inputs in the order they were probed, "0>2>1", most frequent first.
            "probe_orders": {">".join(map(str, order)): count for order, count in self.probe_orders.most_common()},
            "index_sizes": self.index_sizes(),
            "live_outputs": self.live_outputs(),
        }
