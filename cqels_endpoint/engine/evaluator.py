"""What the engine asks of the part that computes Γ, and the modes that choose it.

The engine owns time and windows; an evaluator owns Γ. Both evaluators implement the whole
protocol: ``incremental.IncrementalEvaluator`` (the operator graph) and
``recompute.RecomputeEvaluator`` (re-evaluation on pyoxigraph, the oracle), and so does an
instance's view of its group's plan (``instances.InstanceView``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pyoxigraph as ox

from cqels_endpoint.engine.emission import EmittedRows
from cqels_endpoint.query.kinds import R2S, Named

Term = ox.NamedNode | ox.BlankNode | ox.Literal
Row = dict[str, Term]


class Mode(Named):
    """How a continuous query computes Γ."""

    INCREMENTAL = "incremental"  # the incremental operators
    RECOMPUTE = "recompute"  # re-evaluation of the whole query at every evaluation: the oracle


class Evaluator(Protocol):
    """How one registered query computes Γ; the engine calls, per evaluation time, any number of
    ``on_insert``/``on_expire`` (only for triples matching the pattern), then one ``evaluate``."""

    # Set by the engine: the lines ``explain`` shows under a static cache (size, version, rebuilds).
    describe_cache: Callable[[Any], list[str]] | None

    def on_insert(self, pattern_id: int, ids: tuple[int, ...], t: int, seq: int) -> None:
        """A stream triple, as the term ids of the engine's dictionary (valid during the call: keep
        a reference to keep them), enters the window of a stream pattern as copy ``seq``; the ids of
        a ``STREAM ?s`` pattern's triple are followed by its stream's id."""
        ...
    def on_expire(self, pattern_id: int, seq: int) -> None: ...
    def streams_read(self, pattern_id: int) -> frozenset[str] | None:
        """The streams (IRIs) the static data lets a ``STREAM ?s`` pattern read, as the next
        evaluation sees it (``plan.patterns``); None when it reads every stream. The engine routes
        by it, so it is cheap to ask again while the static data stays."""
        ...
    def evaluate(self, tau: int, signs: tuple[int, ...] = (1, -1)) -> list[tuple[Row, int]]:
        """Closes the evaluation at ``tau``: the changes of Γ whose sign is in ``signs`` (+1 entered,
        -1 left), decoded, in order. The engine asks only for what its R2S emits (none for
        RSTREAM, which reads ``snapshot``), so the other rows are never decoded."""
        ...

    def emitted(self, tau: int, r2s: R2S) -> EmittedRows:
        """``evaluate`` at ``tau`` handing over the rows ``r2s`` emits (Γ's changes of its sign, or Γ
        for RSTREAM) undecoded where the evaluator can: the engine decodes them only for the
        subscribers that want terms, and releases them once the emission is made."""
        ...

    def snapshot(self) -> list[Row]: ...
    def on_static_change(self) -> None: ...
    def explain(self) -> str: ...
    def explain_tree(self) -> dict:
        """``explain`` as JSON-ready nodes ``{id, what, line, counters, details, children}``
        (``plan.explain.plan_tree``), for the web console."""
        ...

    @property
    def caches(self) -> Sequence[tuple]:
        """The ``(plan node, operator)`` of each static cache the engine's cache engine builds."""
        ...

    # The engine changes the content of ``caches`` through these three, and only for an evaluator
    # that has caches (re-evaluation and an instance's view have none): see ``IncrementalEvaluator``.
    def stage_cache(self, operator: Any, added: Sequence[tuple], removed: Sequence[tuple]) -> None:
        """Stages one part of a cache's change (rows of pyoxigraph terms); evaluations do not see it yet."""
        ...

    def release_caches(self, operators: Sequence[Any]) -> None:
        """The staged changes of ``operators`` enter together with the next evaluation."""
        ...

    def discard_caches(self, operators: Sequence[Any]) -> None:
        """Undoes the staged changes of ``operators``."""
        ...

    def close(self) -> None:
        """Releases what the evaluator holds (dictionary references, temporary stores)."""
        ...
