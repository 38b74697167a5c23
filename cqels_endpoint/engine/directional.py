"""Queries with a LARS directional window (CQELS-QL 2.0): exact results per anchor at window close.

A query with a directional window (``[PAST p FUTURE f]``, ``[FUTURE f]``, ``[TRIPLES PAST n FUTURE
m]``, each with an optional ``STEP s``) is evaluated at *anchors* ``a``: ``origin + k·s`` (``k ≥ 0``,
the origin the first event's time unless given at registration) with a STEP, else every distinct
event time of its streams. At an anchor every window of the query is read as
``runtime/anchors.py`` tabulates (``[PAST p FUTURE f]``: ``a − p < t ≤ a + f``; a backward
``[RANGE T]`` beside it: ``a − T < t ≤ a``).

- **Final result.** The query over the windows at ``a``, emitted once the content can no longer
  change: when the query's clock passes ``a + F`` (``F`` the largest time extent ahead; an event
  with ``t > a + F`` is released, or an ``advance`` past it) and every count-directional window
  has its ``m`` triples after ``a``. Streams release events in timestamp order, ``LATENESS d``
  later (engine/core.py), so the result is exact for every event up to ``d`` late. It is marked
  ``final`` and carries ``anchor = a``, which is also its evaluation time (``NOW()``).
- **Early results** (``EMIT EARLY_AND_FINAL``, ``EMIT ON_UPDATE``). After each event at ``τ``, the
  newest anchor ``a ≤ τ`` is evaluated over what has arrived: the windows cut at ``τ``. Marked
  ``final = False``, ``anchor = a``.
- ``EMIT ON_CLOSE`` (the default) emits final results only, ``ON_UPDATE`` early ones only,
  ``EARLY_AND_FINAL`` both.

The final and the early results are two sequences of evaluations, each by its own evaluator of
the query's plan (``AnchoredEvaluators``) reading its own view of the windows, so each is a
continuous query of its own under the query's R2S: ISTREAM emits what entered since the previous
anchor's final (or the previous early) result. Both evaluators are ordinary ``Evaluator``s
(incremental operators or re-evaluation): moving from one anchor to the next inserts the triples
that enter the windows and expires those that leave, so the incremental plan works on deltas.

The dialects differ in what an evaluation emits (``query_r2s``). ``cqels``: as any continuous
query, by its R2S (ISTREAM by default: an anchor whose result entered nothing emits nothing).
``cqels2`` (CQELS-QL 2.0 §3.2, "one result per anchor"): every evaluation emits, changed or not,
zero rows included; its R2S defaults to RSTREAM, so each emission is the anchor's result, and an
explicit ISTREAM or DSTREAM gives that evaluation's difference from the previous one.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.engine.continuous import ContinuousQuery, declared_windows
from cqels_endpoint.engine.evaluator import Evaluator, Row
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan.patterns import StreamTriple
from cqels_endpoint.query.dialects import Dialect
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.query.windows import DirectionalWindow, window_extent
from cqels_endpoint.runtime.anchors import AnchoredWindow, Anchors, Extent, StatementCount
from cqels_endpoint.runtime.limits import LimitExceeded, Limits
from cqels_endpoint.runtime.streams import Event

ON_CLOSE, ON_UPDATE, EARLY_AND_FINAL = "ON_CLOSE", "ON_UPDATE", "EARLY_AND_FINAL"


def directional_windows(algebra: n.AlgebraQuery, patterns: Sequence[StreamTriple]) -> list[DirectionalWindow]:
    """The directional windows of a query (its patterns' and its declared ones)."""
    windows = [st.window for st in patterns] + [window for _stream, window in declared_windows(algebra)]
    return [window for window in map(window_extent, windows) if isinstance(window, DirectionalWindow)]


def query_r2s(r2s: str | None, algebra: n.AlgebraQuery, patterns: Sequence[StreamTriple]) -> R2S:
    """The R2S of a query: ``r2s``, else its REGISTER keyword, else ISTREAM, but RSTREAM for a
    directional query in the cqels2 dialect, whose emission at an anchor is the anchor's result
    (CQELS-QL 2.0 §3.2). ``ArgumentError`` for an unknown R2S; ``PlanError`` for ISTREAM or
    DSTREAM on a cqels2 directional ASK."""
    per_anchor = algebra.dialect == Dialect.CQELS2 and bool(directional_windows(algebra, patterns))
    register = algebra.register
    if r2s is None and register is not None and register.kind in R2S.__members__:
        r2s = register.kind
    if r2s is None:
        return R2S.RSTREAM if per_anchor else R2S.ISTREAM
    chosen = R2S.choose(r2s.upper(), "r2s")
    if per_anchor and algebra.form == QueryForm.ASK and chosen is not R2S.RSTREAM:
        # An ASK's answer is a boolean, and ISTREAM's true (DSTREAM's false) says it changed: no
        # answer says "unchanged", which every anchor of a cqels2 query would have to emit.
        msg = (
            f"{chosen} on a directional ASK in the cqels2 dialect: every anchor emits its answer (CQELS-QL 2.0 §3.2), "
            "RSTREAM; register it with dialect=cqels to be told only when the answer turns true (ISTREAM) or false (DSTREAM)"
        )
        raise PlanError(msg)
    return chosen


class AnchoredEvaluators:
    """The evaluators of a directional query behind the engine's side of the ``Evaluator``
    protocol (static caches, static changes, explain, close): ``final`` evaluates the anchors at
    their close, ``early`` the newest anchor after each event; either is None when the EMIT
    policy does not ask for it."""

    def __init__(self, final: Evaluator | None, early: Evaluator | None) -> None:
        self.final, self.early = final, early
        self.parts = [e for e in (final, early) if e is not None]
        self.dictionary = self.parts[0].dictionary

    @property
    def describe_cache(self):
        return self.parts[0].describe_cache

    @describe_cache.setter
    def describe_cache(self, describe) -> None:
        for part in self.parts:
            part.describe_cache = describe

    @property
    def caches(self) -> Sequence[tuple]:
        return [cache for part in self.parts for cache in part.caches]

    def _owner(self, operator: Any) -> Evaluator:
        return next(part for part in self.parts if any(op is operator for _node, op in part.caches))

    def stage_cache(self, operator: Any, added: Sequence[tuple], removed: Sequence[tuple]) -> None:
        self._owner(operator).stage_cache(operator, added, removed)

    def _by_owner(self, operators: Sequence[Any]) -> list[tuple[Evaluator, list]]:
        return [(part, [op for op in operators if self._owner(op) is part]) for part in self.parts]

    def release_caches(self, operators: Sequence[Any]) -> None:
        for part, owned in self._by_owner(operators):
            if owned:
                part.release_caches(owned)

    def discard_caches(self, operators: Sequence[Any]) -> None:
        for part, owned in self._by_owner(operators):
            if owned:
                part.discard_caches(owned)

    def on_static_change(self) -> None:
        for part in self.parts:
            part.on_static_change()

    def snapshot(self) -> list[Row]:
        """Γ of the last final result (of the last early one with ``EMIT ON_UPDATE``)."""
        return self.parts[0].snapshot()

    def explain(self) -> str:
        if len(self.parts) == 1:
            return self.parts[0].explain()
        return f"final results:\n{self.final.explain()}\nearly results:\n{self.early.explain()}"

    def explain_tree(self) -> dict:
        if len(self.parts) == 1:
            return self.parts[0].explain_tree()
        trees = [self.final.explain_tree(), self.early.explain_tree()]
        for tree, kind in zip(trees, ("final results", "early results")):
            tree["what"] = f"{kind}: {tree['what']}"
        return {"id": "", "what": "two evaluators of the plan", "line": None, "counters": {}, "details": [], "children": trees}

    def close(self) -> None:
        for part in self.parts:
            part.close()


@dataclass(eq=False)
class DirectionalQuery(ContinuousQuery):
    """A continuous query with a directional window; build it with ``Engine.register``."""

    limits: Limits = field(default_factory=Limits)
    emit: str = field(init=False)
    anchors: Anchors = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        evaluators: AnchoredEvaluators = self.evaluator  # type: ignore[assignment]
        self.emit = self.algebra.emit or ON_CLOSE
        steps = {window.step_ms for window in directional_windows(self.algebra, self.patterns)}
        self.anchors = Anchors(steps.pop(), self.origin_ms)
        extents = [Extent.of(window_extent(st.window)) for st in self.patterns]
        # The largest time extent ahead of an anchor: its result is complete once the clock passes a + F.
        self.ahead = max((e.future for e in extents if not e.count), default=0)
        self._final, self._early = evaluators.final, evaluators.early
        # One view per evaluator: 0 the final results', 1 the early results'.
        self._views = {evaluator: i for i, evaluator in enumerate(e for e in (self._final, self._early) if e is not None)}
        # The statements of each stream a stream-wide count window (cqels2 [TRIPLES n]) reads.
        self._statements = {st.stream.value: StatementCount() for st, e in zip(self.patterns, extents) if e.stream_wide}
        self._anchored = [
            AnchoredWindow(extent, evaluators.dictionary, len(self._views), self._statements.get(st.stream.value) if extent.stream_wide else None)
            for st, extent in zip(self.patterns, extents)
        ]
        # The anchor each view read last: no view reads an earlier one again.
        self._read_at: dict[int, int] = {}
        self._by_id = {st.id: window for st, window in zip(self.patterns, self._anchored)}
        self._count_windows = [w for w in self._anchored if w.extent.count and w.extent.future]
        # CQELS-QL 2.0 §3.2: one result per anchor (and per early evaluation), changed or not.
        self._emits_empty = self._emits_empty or self.dialect == Dialect.CQELS2
        self._shed = 0
        # Copy numbers of this query's own evaluators (the engine's count numbers shared windows).
        self._seqs = itertools.count()

    @property
    def shed(self) -> int:
        return self._shed

    def _schedule_text(self) -> str:
        step = self.anchors.step_ms
        anchors = f"anchors every {step} ms from {self.anchors.origin}" if step is not None else "an anchor at each event time"
        return f"directional: {anchors}, closed {self.ahead} ms after; EMIT {self.emit}; next anchor to close {self.anchors.first()}"

    def _window_lines(self) -> list[str]:
        lines = []
        for st, window in zip(self.patterns, self._anchored):
            extent = window.extent
            unit = " statements" if extent.stream_wide else " triples" if extent.count else " ms"
            past = "unbounded" if extent.past is None else f"{extent.past}{unit}"
            lines.append(f"window {st.id} on <{st.stream.value}> past {past}, future {extent.future}{unit}: {len(window)} triple(s) kept")
        return lines

    # ------------------------------------------------------------------ driven by the engine

    def _on_event(self, event: Event, _seqs: itertools.count, step: int) -> None:
        time, seqs = event.time, self._seqs
        self._received = event.received
        self._close_through(time, seqs)
        self.anchors.note(time)
        bound = self.limits.max_window_triples
        statements = self._statements.get(event.stream)
        before = 0 if statements is None else statements.total
        for pattern_id, ids, index in self._route(event):
            window = self._by_id[pattern_id]
            if bound is not None and len(window) >= bound:
                if not self.limits.sheds:
                    msg = f"window {pattern_id} of {self.name} is full: it holds {len(window)} triples, the limit max_window_triples={bound}"
                    raise LimitExceeded(msg)
                self._shed += 1
                continue
            window.append(time, ids, before + index)
        if statements is not None:
            statements.add(time, len(event.ids) // 3)
        if self._count_windows:  # the event may complete the triples after an anchor
            self._close_through(time, seqs)
        if self._early is not None:
            anchor = self.anchors.newest(time)
            if anchor is not None:
                self._read(self._early, anchor, time, seqs)
                self._evaluate_at(self._early, anchor, final=False)
        self.clock = time if self.clock is None else max(self.clock, time)

    def _on_advance(self, time: int, step: int) -> None:
        self._received = None
        self._close_through(time, self._seqs)
        self.clock = time if self.clock is None else max(self.clock, time)

    def _close_through(self, clock: int, seqs: itertools.count) -> None:
        """Emits the final result of every anchor complete at ``clock``, in order."""
        while (anchor := self.anchors.first()) is not None and anchor + self.ahead < clock:
            if not all(window.complete(anchor) for window in self._count_windows):
                return
            if self._final is not None:
                self._read(self._final, anchor, None, seqs)
                self._evaluate_at(self._final, anchor, final=True)
            self.anchors.pop()

    def _read(self, evaluator: Evaluator, anchor: int, cap: int | None, seqs) -> None:
        """Moves ``evaluator``'s view of every window to ``anchor`` (cut at ``cap``, None: whole)."""
        view = self._views[evaluator]
        for st, window in zip(self.patterns, self._anchored):
            entered, left = window.move(view, *window.bounds(anchor, cap), seqs)
            for seq in left:
                evaluator.on_expire(st.id, seq)
            for seq, ids, t in entered:
                evaluator.on_insert(st.id, ids, t, seq)
        self._read_at[view] = anchor
        if len(self._read_at) == len(self._views):
            floor = min(self._read_at.values())
            for statements in self._statements.values():
                statements.forget(floor)

    def _evaluate_at(self, evaluator: Evaluator, anchor: int, *, final: bool) -> None:
        clock = self.clock
        with evaluator.emitted(anchor, self.r2s) as rows:
            self._emit(anchor, rows, anchor=anchor, final=final)
        self.clock = clock

    def _close(self) -> None:
        for window in self._anchored:
            window.close()
        super()._close()
