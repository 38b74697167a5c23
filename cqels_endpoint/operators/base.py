"""The push contract every incremental operator follows, and the two operators every plan needs.

Call order, per tick (one stream event or one clock advance):

1. On each input port, any number of ``on_batch(port, deltas)`` calls, in any order across ports.
2. Then exactly one ``on_punctuation(tau)`` per input port. An operator with ``arity`` n acts on the
   punctuation when the n-th one of the tick arrives (a barrier): it emits whatever output it held
   back, then forwards the punctuation to its downstream, once. Sources (``arity`` 0: window buffers,
   static caches) receive ``on_punctuation(tau)`` once per tick from the evaluator and flush their
   pending deltas as one batch before forwarding it.

Operators that can answer a delta on its own (join, filter, extend, project) emit during ``on_batch``;
upper operators that must see the whole tick (aggregation, distinct — issue 5) emit once per tick,
after the last punctuation arrived and before forwarding it.

A :class:`Delta` is ``(row, sign, lineage)``:

- ``row`` is a tuple of int64 term ids (``runtime.encoding.TermDictionary``) aligned with the
  producing operator's ``schema`` (a tuple of variable names); ``None`` marks an unbound variable
  (a BIND whose expression raised an error; OPTIONAL later).
- ``sign`` is +1 (the row enters the relation) or -1 (it leaves it). The relation an operator
  outputs is the bag sum of every delta it emitted so far.
- ``lineage`` is the row's identity among the rows of one operator's output: a tuple of leaf ids.
  A leaf row (one stream triple matched by a window buffer, one cached static mapping) has an int id
  unique in its source — the engine's ``seq`` for stream triples, -1, -2, … for the mappings of a
  static cache — and lineage ``(id,)``. A join row carries the concatenation of its inputs'
  lineages, in input order; every input of an operator has lineages of one fixed length, so the
  concatenation is unique. Filter, extend and project pass lineage through unchanged. An operator
  that merges row streams (UNION, issue 5) must keep lineages unique, e.g. by prefixing the branch.
  A -1 delta carries the same row and lineage as the +1 delta it cancels.

Dictionary references: an operator that keeps term ids (window buffers, static caches, extend)
holds one reference per id and releases the ids of rows that left in tick k when tick k+1
punctuates, so the evaluator can decode the -1 rows of tick k after its punctuation returned.
``close()`` releases everything when the query is unregistered.

Expiry is a -1 leaf delta. Stateful operators keep an index input lineage → derived lineages and
invalidate exactly those derived rows: nothing is ever re-joined or re-scanned to retract a row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from cqels_endpoint.errors import OperatorError

Row = tuple  # tuple[int | None, ...]: term ids aligned with a schema
Lineage = tuple  # tuple[int, ...]: leaf ids


class Delta(NamedTuple):
    """One signed row: ``row`` aligned with the emitting operator's schema, ``sign`` ±1, ``lineage``."""

    row: Row
    sign: int
    lineage: Lineage


class Operator:
    """Base of every push operator: wiring, the punctuation barrier and counters.

    Subclasses set ``schema`` and ``arity`` and override :meth:`on_batch`; those that hold output
    back until the tick ends override :meth:`on_tick_end`. ``label`` names the operator in
    ``explain`` and in error messages (the planner sets it, e.g. ``join J2 (line 4: ?s :p ?o)``).
    """

    arity = 1

    def __init__(self, schema: tuple[str, ...], label: str = "") -> None:
        self.schema = tuple(schema)
        self.label = label or type(self).__name__
        self.downstream: Operator | None = None
        self.downstream_port = 0
        self.inputs_seen = 0  # deltas received
        self.outputs_emitted = 0  # deltas emitted
        self._punctuations = 0

    def connect(self, downstream: Operator, port: int = 0) -> Operator:
        """Send this operator's output to ``downstream``'s input ``port``; returns ``downstream``."""
        self.downstream = downstream
        self.downstream_port = port
        return downstream

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        raise NotImplementedError

    def on_punctuation(self, tau: int) -> None:
        """Close the tick on one input port; act once all ``arity`` ports have punctuated."""
        self._punctuations += 1
        if self._punctuations < self.arity:  # sources (arity 0) act on their single punctuation
            return
        self._punctuations = 0
        self.on_tick_end(tau)
        if self.downstream is not None:
            self.downstream.on_punctuation(tau)

    def on_tick_end(self, tau: int) -> None:
        """Hook run after the tick's last punctuation, before forwarding it (emit held-back output)."""

    def close(self) -> None:
        """Drop every dictionary reference the operator holds (its query is unregistered)."""

    def emit(self, deltas: list[Delta]) -> None:
        if not deltas:
            return
        self.outputs_emitted += len(deltas)
        if self.downstream is not None:
            self.downstream.on_batch(self.downstream_port, deltas)

    def counters(self) -> dict[str, Any]:
        """Live counters for ``explain``: at least ``inputs`` and ``outputs``."""
        return {"inputs": self.inputs_seen, "outputs": self.outputs_emitted}

    def describe(self) -> str:
        """One line for ``explain``: label, schema and counters."""
        counters = " ".join(f"{key}={_format_counter(value)}" for key, value in self.counters().items())
        variables = " ".join("?" + name for name in self.schema)
        return f"{self.label} [{variables}] {counters}"


class Source(Operator):
    """A leaf fed from outside the operator graph (a window buffer, a static cache).

    Subclasses queue the tick's deltas in ``_pending`` and hand what left them to ``_released``; the
    punctuation sends the pending deltas downstream as one batch, and what left is given back to
    ``on_release`` one tick later, so the evaluator can still decode the -1 rows of the tick that just
    closed. ``held()`` is what the source still holds, released by ``close()``.
    """

    arity = 0
    fed_by = "its own methods"

    def __init__(self, schema: tuple[str, ...], label: str, on_release: Callable[[tuple], None] | None) -> None:
        super().__init__(schema, label)
        self._pending: list[Delta] = []
        self._released: list[tuple] = []
        self._releasing: list[tuple] = []
        self._on_release = on_release

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        msg = f"{self.label} is a source: feed it with {self.fed_by}"
        raise OperatorError(msg)

    def on_punctuation(self, tau: int) -> None:
        pending, self._pending = self._pending, []
        self.emit(pending)
        super().on_punctuation(tau)
        releasing, self._releasing, self._released = self._releasing, self._released, []
        if self._on_release is not None:
            for item in releasing:
                self._on_release(item)

    def held(self) -> Iterable[tuple]:
        """What the source holds now (each item is released once by ``close``)."""
        return ()

    def close(self) -> None:
        """Release everything still held (the query is unregistered)."""
        if self._on_release is not None:
            for item in [*self._releasing, *self._released, *self.held()]:
                self._on_release(item)
        self._releasing, self._released, self._pending = [], [], []


def punctuate_all(sources: list[Operator], tau: int) -> None:
    """Closes tick ``tau`` on every source of a plan, in order (twin of ``_base.punctuate_all``)."""
    for source in sources:
        source.on_punctuation(tau)


def emitted_total(operators: list[Operator]) -> int:
    """The sum of the operators' ``outputs_emitted`` counters (twin of ``_base.emitted_total``)."""
    return sum([operator.outputs_emitted for operator in operators])


def _format_counter(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {count}" for key, count in value.items()) + "}"
    return str(value)


class Sink(Operator):
    """The root of a plan: collects the signed deltas of Γ and maintains Γ as a bag of rows.

    ``take()`` returns (and forgets) the deltas received since the previous ``take()``, with
    deltas that cancel inside that interval removed; ``relation`` is Γ now (row → multiplicity).
    """

    def __init__(self, schema: tuple[str, ...], label: str = "sink") -> None:
        super().__init__(schema, label)
        self.relation: Counter = Counter()
        self._pending: Counter = Counter()
        self.last_tau: int | None = None

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        relation = self.relation
        pending = self._pending
        for row, sign, _lineage in deltas:
            relation[row] += sign
            if not relation[row]:
                del relation[row]
            pending[row] += sign
            if not pending[row]:
                del pending[row]

    def on_tick_end(self, tau: int) -> None:
        self.last_tau = tau

    def take(self) -> list[tuple[Row, int]]:
        """The net (row, signed multiplicity) changes of Γ since the previous call."""
        if not self._pending:
            return []
        changes = list(self._pending.items())
        self._pending = Counter()
        return changes

    def rows(self) -> list[Row]:
        """Γ now as a list of rows (a bag: a row appears as often as its multiplicity)."""
        return list(self.relation.elements())

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "rows": sum(self.relation.values())}
