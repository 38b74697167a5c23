"""The evaluator of ``mode="incremental"``: the physical plan run as push operators on signed deltas.

The engine (``core.py``) owns time and windows and drives one evaluator per registered query
through the ``Evaluator`` protocol: ``on_insert``/``on_expire`` when a stream triple enters or
leaves the window of one stream triple pattern, ``evaluate(tau)`` at each evaluation time. Here
those calls become leaf deltas of the plan's window buffers, and ``evaluate`` is the punctuation
that closes the tick: every source flushes its pending deltas, the operators push the derived
deltas up to the sink, and the net change of Γ since the previous evaluation comes back decoded.

With a top-level ORDER BY (or LIMIT/OFFSET), the plan's ``OrderNode`` operator keeps Γ sorted:
``evaluate`` lists the rows that entered in ORDER BY order then those that left in their previous
order, and ``snapshot`` lists Γ in order — what the recompute oracle's SPARQL returns.

Static caches are built by the engine's cache engine and rebuilt on the store's change events by
``caches.rebuild``; the engine installs each build with ``install_caches`` between evaluations.

Term ids: each stream triple is encoded when it is inserted (one dictionary reference per
position) and each cached mapping when its cache is installed; the references are dropped when the
triple expires or the mapping leaves the cache — but only after the ``evaluate`` that reports the
retraction has decoded it, so a -1 row can always be decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.operators.base import Operator, Sink
from cqels_endpoint.operators.build import BuiltPlan, build_operators
from cqels_endpoint.operators.order import Order
from cqels_endpoint.plan.compile import compile_plan
from cqels_endpoint.plan.explain import explain_plan
from cqels_endpoint.plan.nodes import PlanNode, StaticCache
from cqels_endpoint.plan.patterns import StreamTriple

Term = ox.NamedNode | ox.BlankNode | ox.Literal


@dataclass
class _WindowSet:
    """The set view of one window: each distinct triple is one leaf, named by its first copy's seq."""

    leaf_of_triple: dict[tuple, int] = field(default_factory=dict)
    triple_of_leaf: dict[int, tuple] = field(default_factory=dict)
    copies: dict[int, int] = field(default_factory=dict)
    leaf_of_copy: dict[int, int] = field(default_factory=dict)


class IncrementalEvaluator:
    """Γ of one continuous query maintained incrementally, behind the Evaluator protocol.

    ``query`` is the optimised algebra, ``patterns`` the engine's ``plan.patterns.stream_triples``
    of it, ``static`` the static store (a ``StaticStore``, a ``pyoxigraph.Store`` or None) and
    ``dictionary`` the engine's shared ``TermDictionary``. Construction compiles the plan
    (``PlanError`` for constructs without incremental operators yet); the static caches
    (``built.caches``) start empty until the engine installs their first build, before the query's
    first evaluation. ``describe_cache(node)``, set by the engine, gives the lines ``explain``
    shows under a cache (its size, version, engine, rebuild history).
    """

    def __init__(self, query: n.AlgebraQuery, patterns: Sequence[StreamTriple], static: object, dictionary) -> None:
        self.query = query
        self.static = static
        self.dictionary = dictionary
        self.plan = compile_plan(query, patterns)
        # Rows whose references are dropped once the current evaluation has decoded its deltas.
        self._releasing: list[tuple] = []
        # NOW() is the evaluation time: rows enter the operators during evaluate(tau).
        self._tau = 0
        self.built: BuiltPlan = build_operators(
            self.plan, dictionary, self._release_later, query.source, base_iri=query.base, now=lambda: self._tau
        )
        self._windows = {pattern_id: _WindowSet() for pattern_id in self.built.buffers}
        self.sink: Sink = self.built.sink
        self._order: Order | None = None if self.plan.order is None else self.built.operators[self.plan.order.id]
        self.evaluations = 0
        self._closed = False
        self._snapshot_mappings: dict[tuple, dict[str, Term]] = {}  # the last snapshot's rows, decoded
        self.describe_cache: Callable[[StaticCache], list[str]] | None = None

    # ------------------------------------------------------------------ the Evaluator protocol

    def on_insert(self, pattern_id: int, triple: ox.Triple, t: int, seq: int) -> None:
        """``triple`` (timestamp ``t``) enters the window of stream triple pattern ``pattern_id``.

        A window is a graph, a *set* of triples (Γ is SPARQL over the windows as named graphs:
        docs/ARCHITECTURE.md, "Windows and time"): a triple already in the window does not enter
        it again, and stays until its last copy has left. Only its first copy becomes a leaf of
        the plan.
        """
        encode = self.dictionary.encode
        ids = (encode(triple.subject), encode(triple.predicate), encode(triple.object))
        window = self._windows[pattern_id]
        leaf = window.leaf_of_triple.get(ids)
        if leaf is None:
            window.leaf_of_triple[ids] = seq
            window.triple_of_leaf[seq] = ids
            window.copies[seq] = 1
            window.leaf_of_copy[seq] = seq
            self.built.buffers[pattern_id].insert(seq, ids)
            return
        # The copy already in the window holds references to these ids.
        self._releasing.append(ids)
        window.copies[leaf] += 1
        window.leaf_of_copy[seq] = leaf

    def on_expire(self, pattern_id: int, seq: int) -> None:
        """The triple inserted as ``seq`` leaves the window of pattern ``pattern_id``."""
        window = self._windows[pattern_id]
        leaf = window.leaf_of_copy.pop(seq)
        window.copies[leaf] -= 1
        if not window.copies[leaf]:
            del window.copies[leaf]
            del window.leaf_of_triple[window.triple_of_leaf.pop(leaf)]
            self.built.buffers[pattern_id].expire(leaf)

    def evaluate(self, tau: int, signs: tuple[int, ...] = (1, -1)) -> list[tuple[dict[str, Term], int]]:
        """Closes the tick at ``tau``: the changes of Γ since the previous evaluation whose sign is
        in ``signs``, one entry per row occurrence with its sign (+1 entered, -1 left), decoded;
        cancelling changes are not reported. With an ORDER BY, the entries are in its order (see
        the module docstring)."""
        changes = [(self.decode(row), sign) for row, sign in self.evaluate_rows(tau) if sign in signs]
        self.release_decoded()
        return changes

    def evaluate_rows(self, tau: int) -> list[tuple[tuple, int]]:
        """``evaluate`` before decoding: rows of term ids aligned with ``sink.schema``. The ids of
        rows that left stay decodable until ``release_decoded()``."""
        self._tau = tau
        for source in self.built.sources:
            source.on_punctuation(tau)
        self.evaluations += 1
        taken = self.sink.take()
        if self._order is not None:
            return self._order.arrange(taken)
        changes = []
        for row, count in taken:
            sign = 1 if count > 0 else -1
            changes.extend((row, sign) for _ in range(abs(count)))
        return changes

    def snapshot(self) -> list[dict[str, Term]]:
        """Γ at the last evaluation, a bag of solution mappings (in ORDER BY order if the query has one).

        RSTREAM asks for Γ at every evaluation, and a row usually stays in Γ for many of them: each
        distinct row of ids is decoded once while it stays, and the mapping is shared by the
        snapshots that list it (callers treat mappings as read-only)."""
        previous, current = self._snapshot_mappings, {}
        decode = self.decode
        mappings = []
        for row in self.snapshot_rows():
            mapping = current.get(row)
            if mapping is None:
                mapping = previous.get(row)
                if mapping is None:
                    mapping = decode(row)
                current[row] = mapping
            mappings.append(mapping)
        self._snapshot_mappings = current
        return mappings

    def snapshot_rows(self) -> list[tuple]:
        """``snapshot`` before decoding."""
        return self.sink.rows() if self._order is None else self._order.rows()

    def on_static_change(self) -> None:
        """Nothing to do now: the engine's rebuild manager rebuilds the caches that read the
        changed graphs in the background and installs them (``install_caches``)."""

    @property
    def caches(self) -> Sequence[tuple]:
        """The ``(StaticCache node, operator)`` of each static cache of the plan."""
        return self.built.caches

    def install_caches(self, builds: Sequence[tuple[Any, Sequence[tuple]]]) -> None:
        """Makes each ``(operator, rows)`` the content of that static cache operator (rows of
        pyoxigraph terms or None); the differences enter the plan with the next evaluation."""
        encode = self.dictionary.encode
        encoded = [
            (operator, [tuple(None if term is None else encode(term) for term in row) for row in rows])
            for operator, rows in builds
        ]
        for operator, rows in encoded:
            # replace() takes over the reference each encode() returned.
            operator.replace(rows)

    def explain(self) -> str:
        """The physical plan with each operator's live counters, and the size of Γ."""
        size = self.sink.counters()["rows"]
        text = explain_plan(self.plan, self._counters, self.describe_cache)
        return text + f"\n  Γ: {size} rows after {self.evaluations} evaluations"

    def close(self) -> None:
        """Drops every dictionary reference the plan holds (the query was unregistered)."""
        if self._closed:
            return
        self._closed = True
        for operator in self.built.operators.values():
            operator.close()
        self.release_decoded()

    # ------------------------------------------------------------------ helpers

    def decode(self, row: tuple) -> dict[str, Term]:
        """A row of ``sink.schema`` as a solution mapping."""
        decode = self.dictionary.decode
        return {name: decode(value) for name, value in zip(self.sink.schema, row) if value is not None}

    def _release_later(self, ids: tuple) -> None:
        self._releasing.append(ids)

    def release_decoded(self) -> None:
        """Drops the references of the rows that left with the last evaluation (decoded by now)."""
        releasing, self._releasing = self._releasing, []
        decref = self.dictionary.decref
        for ids in releasing:
            for value in ids:
                if value is not None:
                    decref(value)

    def _counters(self, node: PlanNode) -> dict[str, Any]:
        operator: Operator | None = self.built.operators.get(node.id)
        return {} if operator is None else operator.counters()
