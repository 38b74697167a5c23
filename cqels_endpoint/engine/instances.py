"""The instances of one stored template evaluated by one operator graph.

A template (``algebra.parameters``) is a continuous query with parameters; an instance binds them
with a one-row table first in the template's WHERE. Registered one by one, a thousand
instances would keep a thousand copies of every window buffer, join index and operator state. The
engine instead registers the instances made at one *epoch* (no event or advance in between, so
they start from the same window history, as ``runtime.sharing`` requires) as one **instance
group**: the template's algebra with an ``InstanceTable`` — ``VALUES (?.instance ?param…)`` with
one row per instance — at the top of its WHERE, compiled once. The table is a join input like a
static cache: a stream triple probes it on the parameters the triple binds, so an event costs the
work of the instances it concerns. Every operator above the table carries ``?.instance`` (the top
projection keeps it, GROUP BY groups by it), so the group's Γ is the disjoint union of the
instances' Γs and each instance reads its own part; the operators below it (window buffers, the
joins of stream patterns that do not read a parameter, sub-queries, static caches) are shared.

A group is driven once per engine step (event dispatch or advance) by its ``GroupDriver``, a
continuous query the engine does not list: it holds the group's window readers and clock, feeds
the plan and records each evaluation's changes by instance. Every instance is an ``InstanceQuery``
(its own name, R2S, subscribers, counters): when the engine steps it, the first instance of the
group to be stepped runs the driver, and each takes its part of the recorded evaluations — so an
event costs one plan evaluation plus a dictionary lookup per instance. Adding an instance to a
group adds a row to the table, removing one removes it; the group's plan, windows and caches go
when its last instance goes.

Where one plan cannot give every instance its own answer, the compiler raises ``SharingError`` and
each instance runs a plan of its own (``explain`` says why): a LIMIT/OFFSET over the parameters
(top-k per instance), an aggregate without GROUP BY (an instance nothing matches still has its one
group), a FILTER that reads only parameters (it lands inside the table's cache).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.engine.continuous import ContinuousQuery
from cqels_endpoint.engine.emission import EmittedRows, Row
from cqels_endpoint.query.kinds import R2S
from cqels_endpoint.terms import XSD_INTEGER

Term = ox.NamedNode | ox.BlankNode | ox.Literal
INSTANCE = n.INSTANCE.name


@dataclass(eq=False)
class GroupDriver(ContinuousQuery):
    """The continuous query that drives a group's plan (not listed by the engine): its windows,
    clock and schedule are the instances'; each evaluation is recorded in ``evaluations_of_step``
    as ``(tau, changes by instance, Γ by instance or None)`` instead of emitting."""

    group: InstanceGroup | None = None
    step: int | None = None
    evaluations_of_step: list = field(default_factory=list)

    def run(self, step: int, drive: Callable[[], None]) -> list:
        """The evaluations of engine step ``step``, made by ``drive()`` on the first call of the step."""
        if step != self.step:
            self.step = step
            self.evaluations_of_step = []
            drive()
        return self.evaluations_of_step

    def _evaluate(self, tau: int) -> None:
        for st, window in zip(self.patterns, self.windows):
            for gone in window.expire(tau):
                self.evaluator.on_expire(st.id, gone)
        self.evaluations_of_step.append((tau, *self.group.evaluate(tau)))
        self.clock = tau
        self.evaluations += 1


@dataclass(eq=False)
class InstanceQuery(ContinuousQuery):
    """An instance of a template: a continuous query whose evaluations are its part of its group's."""

    view: InstanceView | None = None
    _joined: int = field(init=False, default=0, repr=False)  # the driver's evaluations when it joined

    @classmethod
    def of(cls, driver: GroupDriver, name: str, text: str, view: InstanceView) -> InstanceQuery:
        # The driver's window readers and close schedule, used by the driver only: the instance
        # shows them but never advances or closes them.
        query = cls(name, text, driver.algebra, driver.r2s, driver.mode, driver.patterns, view, driver.origin_ms,
                    driver.windows, view=view)
        query.schedule = driver.schedule
        view.query = query
        # Its evaluations are the driver's since it joined, its clock the driver's once it has one.
        query._joined = driver.evaluations
        query._behind = query._follow
        return query

    def _follow(self) -> None:
        driver = self.view.group.driver
        self._evaluations = driver.evaluations - self._joined
        self._clock = driver.clock if self._evaluations else None

    def _on_event(self, event, seqs, step: int) -> None:
        """The engine hands an event to one instance of the group (``engine.fanout``): it runs the
        driver, and the instances the evaluations concern take their part (``InstanceGroup.hand``)."""
        group = self.view.group
        driver = group.driver
        evaluations = driver.run(step, lambda: driver._on_event(event, seqs, step))
        if group.handed != step:  # once a step, whichever instance the engine calls first
            group.handed = step
            group.hand(evaluations, event.received)

    def _on_advance(self, time: int, step: int) -> None:
        driver = self.view.group.driver
        self._received = None
        self._take(driver.run(step, lambda: driver._on_advance(time, step)))

    def _take(self, evaluations: list) -> None:
        # ``_emit`` counts each evaluation and moves the clock; ``_follow`` says the same after.
        key = self.view.key
        sign = 1 if self.r2s is R2S.ISTREAM else -1
        for tau, changes, snapshots in evaluations:
            if snapshots is None:
                rows = [row for row, s in changes.get(key, []) if s == sign]
            else:
                rows = snapshots.get(key, [])
            self._emit(tau, EmittedRows(rows))

    def _readers(self, window) -> str:
        count = len(self.view.group)
        return f"read once for the {count} instance{'' if count == 1 else 's'} of the shared plan"

    def _close(self) -> None:
        self.view.close()


class InstanceGroup:
    """One incremental plan for the instances of a template registered at one epoch.

    ``driver`` runs the plan (its evaluator: the template with its instance table);
    ``on_empty(group)`` is called when the last instance leaves (the engine then forgets the
    group's caches).
    """

    def __init__(self, driver: GroupDriver, on_empty: Callable[[InstanceGroup], None]) -> None:
        self.driver = driver
        driver.group = self
        self.name = driver.name
        self.evaluator = driver.evaluator
        self.dictionary = self.evaluator.dictionary
        self.table_node, self._table = next((node, op) for node, op in self.evaluator.built.caches if node.instances)
        self.params = self.table_node.schema[1:]
        self.snapshots = driver.r2s == "RSTREAM"  # RSTREAM instances read Γ after every evaluation
        self._column = self.evaluator.sink.schema.index(INSTANCE)
        self._views: dict[int, InstanceView] = {}  # by the term id of the instance's ?.instance
        self._numbers = itertools.count(1)
        self._on_empty = on_empty
        # Told the instances that took an event's evaluations (the engine delivers their emissions).
        self.on_taken: Callable[[list[InstanceQuery]], None] = lambda queries: None
        self.handed: int | None = None  # the engine step whose evaluations were handed out last

    @property
    def caches(self) -> list[tuple]:
        """The ``(node, operator)`` of the static caches the cache engine builds (not the table)."""
        return [(node, op) for node, op in self.evaluator.built.caches if not node.instances]

    def __len__(self) -> int:
        return len(self._views)

    def add(self, instances: Iterable[Mapping[str, Term]]) -> list[InstanceView]:
        """One view per mapping parameter → term; their rows enter the plan at its next evaluation."""
        views = []
        for bindings in instances:
            term = ox.Literal(str(next(self._numbers)), datatype=ox.NamedNode(XSD_INTEGER))
            key = self.dictionary.encode(term)
            view = InstanceView(self, key, (term, *(bindings[p] for p in self.params)))
            view.number = int(term.value)
            self._views[key] = view
            views.append(view)
        self._install_table()
        return views

    def remove(self, view: InstanceView) -> None:
        """``view``'s instance is gone: its row leaves the table (what it derived leaves Γ unseen)."""
        del self._views[view.key]
        self.dictionary.decref(view.key)
        if self._views:
            self._install_table()
            return
        self.close()
        self._on_empty(self)

    def close(self) -> None:
        """Releases the plan and the windows."""
        self.driver._close()

    def hand(self, evaluations: list, received: float | None) -> None:
        """The evaluations of an event go to the instances they concern: every instance for
        RSTREAM (each emits Γ's part at every evaluation), else those with changes, in the order
        they were added; the others emit nothing, and their clocks and counts follow the driver."""
        if self.snapshots:
            views = list(self._views.values())
        else:
            keys = {key for _tau, changes, _snapshots in evaluations for key in changes}
            views = sorted((self._views[key] for key in keys if key in self._views), key=lambda view: view.number)
        taken = []
        for view in views:
            query = view.query
            query._received = received
            query._take(evaluations)
            taken.append(query)
        self.on_taken(taken)

    def _install_table(self) -> None:
        self.evaluator.install_caches([(self._table, [view.row for view in self._views.values()])])

    def evaluate(self, tau: int) -> tuple[dict[int, list[tuple[Row, int]]], dict[int, list[Row]] | None]:
        """The evaluator's changes at ``tau`` by instance, decoded without ``?.instance``, and with
        ``snapshots`` each instance's part of Γ after it (in the plan's order)."""
        column = self._column
        changes: dict[int, list] = {}
        for row, sign in self.evaluator.evaluate_rows(tau):
            key = row[column]
            if key in self._views:  # rows of a removed instance leave with nobody to tell
                changes.setdefault(key, []).append((self._decode(row), sign))
        self.evaluator.release_decoded()
        if not self.snapshots:
            return changes, None
        rows: dict[int, list] = {}
        for row in self.evaluator.snapshot_rows():
            rows.setdefault(row[column], []).append(self._decode(row))
        return changes, rows

    def _decode(self, row: tuple) -> Row:
        decoded = self.evaluator.decode(row)
        del decoded[INSTANCE]
        return decoded


class InstanceView:
    """An instance's handle on its group: its row of the instance table, its part of Γ."""

    # The group's caches belong to its driver's evaluator: an instance has none of its own.
    caches: tuple = ()
    describe_cache = None

    def __init__(self, group: InstanceGroup, key: int, row: tuple) -> None:
        self.group = group
        self.key = key
        self.row = row
        self.number = 0  # its place among the group's instances (``InstanceGroup.hand``)
        self.query: InstanceQuery | None = None
        self._closed = False

    def snapshot(self) -> list[Row]:
        """The instance's part of Γ now."""
        group = self.group
        column = group._column
        return [group._decode(row) for row in group.evaluator.snapshot_rows() if row[column] == self.key]

    def on_static_change(self) -> None:
        """Nothing to do: the group's caches are rebuilt and installed like a query's."""

    def streams_read(self, pattern_id: int) -> frozenset[str] | None:
        """The group's: every instance reads what the group's driver reads."""
        return self.group.evaluator.streams_read(pattern_id)

    def explain(self) -> str:
        group = self.group
        count = len(group)
        head = (
            f"shared plan {group.name}: one operator graph for {count} instance{'' if count == 1 else 's'} "
            f"of the template (this one is ?.instance {self.row[0].value} in {group.table_node.id})"
        )
        return head + "\n" + group.evaluator.explain()

    def explain_tree(self) -> dict:
        tree = self.group.evaluator.explain_tree()
        tree["what"] = f"shared plan {self.group.name} ({len(self.group)} instances): {tree['what']}"
        return tree

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.group.remove(self)
