"""The window buffer's state and contract, shared by the compiled one (``operators/_join.pyx``) and
its twin (``operators/reference/join.py``), which differ only in how they read a triple in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators.base import Source
from cqels_endpoint.operators.shared.schemas import pattern_schema


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
