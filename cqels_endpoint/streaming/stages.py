"""The two stages of a Spark job, as plain Python objects that the Spark processors drive
(``streaming.job``) and the tests drive directly.

``PartitionRunner`` is one partition: an ``Engine`` with the plan's ``partition_algebra``
registered, fed its share of each event in ``(time, file, line)`` order. A tick (an event with no
triples for this partition) advances its clock, so its windows expire exactly when the
single-process engine's would. It hands on, per event, the signed changes of its results — only
the rows whose key value it owns — or, when the query has no key, the query's own emissions.
Partition 0 also marks every event, so that the global stage evaluates at each of them.

``GlobalMerger`` is the global stage: the union of the partitions' results is a relation it keeps
as the content of the ``InstanceTable`` cache of ``global_algebra``, whose plan (the engine's
incremental operators: aggregation, DISTINCT, top-k, ORDER BY) it evaluates at each marked event
with the query's R2S, making the same emissions the single-process engine makes at that event.

Both are rebuilt from what the job keeps in Spark's state when a task finds no live copy (a new
worker, a restart from a checkpoint): the partition from the events still inside its windows, the
merger from its relation, evaluated once without emitting.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

import pyoxigraph as ox

from cqels_endpoint.engine.continuous import ContinuousQuery
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.engine.evaluator import Mode
from cqels_endpoint.engine.incremental import IncrementalEvaluator
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.spark.export import parse_term
from cqels_endpoint.streaming.events import owner
from cqels_endpoint.streaming.plan import JobPlan

MARK, CHANGES, EMISSION, LATE, REJECTED = "mark", "changes", "emission", "late", "rejected"


class Event(NamedTuple):
    """A partition's share of one event: ``data`` N-Triples, empty for a tick."""

    time: int
    file: str
    line: int
    stream: str
    data: str


class Output(NamedTuple):
    """What a partition hands the global stage about the event at ``(time, file, line)``."""

    time: int
    file: str
    line: int
    kind: str
    payload: str


class PartitionRunner:
    """Partition ``partition`` of a job (see the module docstring). ``origin_ms``: the time of the
    job's first event (a periodic window's closes count from it)."""

    def __init__(self, plan: JobPlan, partition: int, origin_ms: int):
        self.plan = plan
        self.partition = partition
        store = None
        if plan.static_nquads:
            store = ox.Store()
            store.load(plan.static_nquads.encode(), format=ox.RdfFormat.N_QUADS)
        self.engine = Engine(store, lateness_ms=0)
        query = self.engine.register_algebra(plan.partition_algebra, plan.text, name=plan.name, r2s=plan.r2s, origin_ms=origin_ms)
        if plan.partitioned:
            query.on_changes = self._on_changes
        else:
            query.subscribe(self._on_emission)
        self.clock: int | None = None
        self._event: Event | None = None
        self._out: list[Output] = []
        self._key = plan.key_column if plan.partitioned else None

    def feed(self, events: Iterable[Event], emit: bool = True) -> list[Output]:
        """Processes ``events`` (in order) and returns what they made (nothing when ``emit`` is
        false: a rebuild replaying events whose outputs were handed on before)."""
        self._out = []
        for event in events:
            self._event = event
            if event.data:
                self.engine.push(event.stream, event.data, event.time)
            elif self.clock is not None and event.time > self.clock:
                self.engine.advance(event.time)
            self.clock = event.time if self.clock is None else max(self.clock, event.time)
            if self.partition == 0 and self.plan.partitioned:
                self._out.append(Output(event.time, event.file, event.line, MARK, ""))
        out, self._out = self._out, []
        return out if emit else []

    def advance(self, time: int) -> None:
        """Moves the clock to ``time`` without an event (a rebuild catching up with the clock)."""
        if self.clock is None or time > self.clock:
            self.engine.advance(time)
            self.clock = time

    def close(self) -> None:
        self.engine.close()

    def _on_changes(self, tau: int, changes: list[tuple[dict, int]]) -> None:
        schema = [var.name for var in self.plan.split.schema]
        key, partitions = schema[self._key], self.plan.partitions
        rows = [
            [sign, [None if (term := row.get(var)) is None else str(term) for var in schema]]
            for row, sign in changes
            if owner(row[key], partitions) == self.partition
        ]
        if rows:
            event = self._event
            self._out.append(Output(event.time, event.file, event.line, CHANGES, json.dumps(rows, ensure_ascii=False)))

    def _on_emission(self, emission) -> None:
        event = self._event
        self._out.append(Output(event.time, event.file, event.line, EMISSION, emission.json_text()))


class GlobalMerger:
    """The global stage of a job (see the module docstring). ``relation`` is its state: each row
    (the terms' N-Triples forms, None unbound) of the union of the partitions' results, with its
    multiplicity."""

    def __init__(self, plan: JobPlan, relation: Iterable[tuple[tuple, int]] = (), time: int | None = None):
        self.plan = plan
        self.relation: Counter[tuple] = Counter()
        self.query: ContinuousQuery | None = None
        if plan.partitioned:
            algebra = plan.global_algebra
            evaluator = IncrementalEvaluator(algebra, [], None, TermDictionary())
            ((_node, self._cache),) = evaluator.built.caches
            self._evaluator = evaluator
            self.query = ContinuousQuery(plan.name, plan.text, algebra, plan.r2s, Mode.INCREMENTAL, [], evaluator)
            rows = [(tuple(row), count) for row, count in relation]
            if rows:
                self._change([row for row, count in rows for _ in range(count)], [])
                self.query.evaluate_at(time)

    def feed(self, outputs: Iterable[Output]) -> list[str]:
        """The lines (JSON) of the emissions, late and rejected events of ``outputs``, in event order."""
        lines: list[str] = []
        added: list[tuple] = []
        removed: list[tuple] = []
        for output in sorted(outputs, key=lambda o: (o.time, o.file, o.line, o.kind != CHANGES)):
            if output.kind == CHANGES:
                for sign, row in json.loads(output.payload):
                    (added if sign > 0 else removed).append(tuple(row))
            elif output.kind == MARK:
                self._change(added, removed)
                added, removed = [], []
                lines.extend(emission.json_text() for emission in self.query.evaluate_at(output.time))
            else:
                lines.append(output.payload)
        if added or removed:
            msg = "changes without the mark of their event (partition 0 marks every event)"
            raise RuntimeError(msg)
        return lines

    def _change(self, added: list[tuple], removed: list[tuple]) -> None:
        if not added and not removed:
            return
        relation = self.relation
        # A row that enters and leaves at one event (two partitions, or one rebuild) nets out.
        net = Counter(added)
        net.subtract(removed)
        enter = [row for row, count in net.items() for _ in range(max(count, 0))]
        leave = [row for row, count in net.items() for _ in range(max(-count, 0))]
        for row in enter:
            relation[row] += 1
        for row in leave:
            relation[row] -= 1
            if relation[row] <= 0:
                del relation[row]
        self._evaluator.stage_cache(self._cache, [_terms(row) for row in enter], [_terms(row) for row in leave])
        self._evaluator.release_caches([self._cache])


def _terms(row: tuple) -> tuple:
    return tuple(None if text is None else parse_term(text) for text in row)
