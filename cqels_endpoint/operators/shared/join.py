"""What the compiled join module (``operators/_join.pyx``) and its twin (``operators/reference/join.py``)
share: the window buffer's state and contract (the two differ only in how they read a triple in),
and the multiway join's inputs and counters (the two differ in how they keep rows and indexes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators.base import Operator, Source
from cqels_endpoint.operators.shared.schemas import join_schema, pattern_schema


class WindowBufferBase(Source):
    """Leaf source of one stream triple pattern: the triples currently in its window, by ``seq``.

    ``pattern`` names the variable at subject, predicate and object (None where the pattern has a
    constant, which the engine already matched). ``insert(seq, ids)`` takes an encoded triple
    entering the window, ``expire(seq)`` the one leaving it; both queue a delta with lineage
    ``(seq,)`` and the tick's deltas go downstream as one batch at the punctuation. A triple that
    does not bind a repeated variable consistently (``?x :p ?x`` on ``:a :p :b``) is not kept and
    its later expiry is ignored. ``on_release(ids)`` runs for every triple that expired (or never
    matched) when the *next* tick punctuates, so the evaluator can still decode the -1 rows of the
    tick it left in after that tick's punctuation returned; ``close()`` releases everything.

    Subclasses read a triple in: ``insert(seq, ids)`` and ``expire(seq)``.
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
        self._triples: dict[int, tuple[int, int, int]] = {}
        self.expired = 0
        self.rejected = 0

    def held(self) -> list[tuple[int, int, int]]:
        return list(self._triples.values())

    def close(self) -> None:
        super().close()
        self._triples = {}

    def __len__(self) -> int:
        return len(self._triples)

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "size": len(self._triples), "expired": self.expired}


class MultiwayJoinBase(Operator):
    """The inputs of an n-ary join and the counters ``explain`` shows.

    Subclasses keep the rows and indexes and provide ``probes``, ``pruned``, ``probe_orders`` (a
    ``Counter`` of input orders), ``index_sizes()`` and ``live_outputs()``. ``max_inputs`` bounds the
    arity where an implementation has a limit.
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
