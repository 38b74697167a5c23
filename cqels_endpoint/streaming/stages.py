"""The two stages of a Spark job, as plain Python objects that the Spark processors drive
(``streaming.job``) and the tests drive directly.

``PartitionRunner`` is one partition: an ``Engine`` with the plan's ``partition_algebra``
registered, fed its share of each event in ``(time, file, line)`` order. A tick (an event with no
triples for this partition) at a later time advances its clock, so its windows expire exactly when
the single-process engine's would; a tick at the partition's own time changes none of its windows
(a ``NOW`` window holds every triple of the current instant, not only the current event's). It
hands on, per event, the signed changes of its results — only the rows whose key value it owns —
or, when the query has no key, the query's own emissions. Partition 0 also marks every event, so
that the global stage evaluates at each of them.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.caches.delta import bag_delta
from cqels_endpoint.caches.engines import parse_terms
from cqels_endpoint.engine.continuous import ContinuousQuery
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.engine.evaluator import Mode
from cqels_endpoint.engine.incremental import IncrementalEvaluator
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.spark.export import parse_term
from cqels_endpoint.streaming.caches import BroadcastCaches, CacheRows, cache_key, row_partitions, shards
from cqels_endpoint.streaming.events import LineError, ntriples, owner, parse_line, route
from cqels_endpoint.streaming.follow import apply_delta, parse_delta
from cqels_endpoint.streaming.plan import JobPlan
from static_store import StaticStore

EVENT, MARK, CHANGES, EMISSION, LATE, REJECTED = "event", "mark", "changes", "emission", "late", "rejected"
# A row of step 1 carrying one cache's change of the static data (``streaming.follow``).
STATIC = "static"


class Event(NamedTuple):
    """A partition's share of one event: ``data`` N-Triples, empty for a tick."""

    time: int
    file: str
    line: int
    stream: str
    data: str


class Routed(NamedTuple):
    """A row of step 1 (streaming/job.py): partition ``part``'s share of the event (or a tick), or
    a rejected line (``kind`` REJECTED, ``data`` its JSON line), for partition 0."""

    part: int
    time: int
    file: str
    line: int
    stream: str
    data: str
    kind: str


def route_lines(plan: JobPlan, lines: Iterable[tuple[str, str, int]], default_stream: str | None = None) -> list[Routed]:
    """Step 1 on ``(text, file, line number)`` input lines: every partition's share of each event
    of a stream the query reads, a REJECTED row for a line that is not an event."""
    tasks, routed = plan.tasks, []
    for text, file, number in lines:
        if not text.strip():
            continue
        try:
            stream, time, triples = parse_line(text, default_stream)
            if time < 0:
                raise LineError(f"the time {time} is before 1970: Spark's event-time watermark counts ms from the epoch")
        except LineError as error:
            rejected = {"rejected": {"file": file, "line": number, "text": text, "error": str(error)}}
            routed.append(Routed(0, -1, file, number, "", json.dumps(rejected, ensure_ascii=False), REJECTED))
            continue
        if plan.streams is not None and stream not in plan.streams:
            continue
        shares = route(triples, plan.split.positions.get(stream, ()), tasks) if plan.partitioned else [ntriples(triples)]
        routed.extend(Routed(part, time, file, number, stream, share, EVENT) for part, share in enumerate(shares))
    return routed


def route_changes(plan: JobPlan, lines: Iterable[tuple[str, str, int]]) -> list[Routed]:
    """Step 1 on the lines of change files (``streaming.follow``): each, a cache's change, for
    every partition."""
    routed = []
    for text, file, number in lines:
        if text.strip():
            change = json.dumps(json.loads(text)[STATIC], ensure_ascii=False)
            routed.extend(Routed(part, -1, file, number, "", change, STATIC) for part in range(plan.tasks))
    return routed


class Output(NamedTuple):
    """What a partition hands the global stage about the event at ``(time, file, line)``."""

    time: int
    file: str
    line: int
    kind: str
    payload: str


class PartitionRunner:
    """Partition ``partition`` of a job (see the module docstring). ``origin_ms``: the time of the
    job's first event (a periodic window's closes count from it); ``shard``: its part of the
    caches too large to ship with the plan (``streaming.caches``)."""

    def __init__(self, plan: JobPlan, partition: int, origin_ms: int, shard: CacheRows | None = None, changes: Iterable[str] = ()):
        self.plan = plan
        self.partition = partition
        self.sharded = frozenset(shard or ())
        rows = {**plan.caches, **(shard or {})}
        for change in changes:  # the static changes applied so far (``apply_static``), in order
            key, added, removed = self._own(change)
            rows[key] = apply_delta(list(rows.get(key, [])), added, removed)
        caches = BroadcastCaches(rows) if rows else "local"
        self.engine = Engine(static_store(plan), lateness_ms=0, cache_engine=caches)
        query = self.engine.register_algebra(plan.partition_algebra, plan.text, name=plan.name, r2s=plan.r2s, origin_ms=origin_ms)
        self.evaluator = query.evaluator
        self._changed = False  # a static change is staged: the next event evaluates, even a tick
        if plan.partitioned:
            query.on_changes = self._on_changes
        else:
            query.subscribe(self._on_emission)
        # The partial aggregation over the solutions this partition owns (``JobPlan.partial``): the
        # owned solutions' changes of an event go into its relation, its changes to the global stage.
        self.partial = RelationStage(plan, plan.partial_algebra, self._on_partial_changes) if plan.partial is not None else None
        self._owned: tuple[list, list] = ([], [])
        self._partial_started = False
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
            elif self.clock is not None and (event.time > self.clock or self._changed):
                self.engine.advance(max(event.time, self.clock))
            self._changed = False
            self._aggregate_in_part(event.time)
            self.clock = event.time if self.clock is None else max(self.clock, event.time)
            if self.partition == 0 and self.plan.partitioned:
                self._out.append(Output(event.time, event.file, event.line, MARK, ""))
        out, self._out = self._out, []
        return out if emit else []

    def advance(self, time: int) -> None:
        """Moves the clock to ``time`` without an event (a rebuild catching up with the clock)."""
        if self.clock is None or time > self.clock:
            self.engine.advance(time)
            self._aggregate_in_part(time)
            self.clock = time

    def close(self) -> None:
        self.engine.close()

    def _aggregate_in_part(self, time: int) -> None:
        """The partial aggregation (``JobPlan.partial``) takes the owned solutions' changes of the
        evaluation at ``time``; its own changes go to the global stage."""
        if self.partial is not None and (self._owned[0] or self._owned[1] or not self._partial_started):
            self.partial.change(*self._owned)
            self._owned = ([], [])
            self._partial_started = True
            self.partial.evaluate_at(time)

    def apply_static(self, change: str) -> None:
        """A cache's change of the static data (``streaming.follow``): it enters the plan with the
        next evaluation, as the single engine's rebuilt caches do."""
        key, added, removed = self._own(change)
        operators = [operator for node, operator in self.evaluator.caches if cache_key(node) == key]
        terms = [[tuple(None if text is None else parse_term(text) for text in row) for row in rows] for rows in (added, removed)]
        for operator in operators:
            self.evaluator.stage_cache(operator, *terms)
        self.evaluator.release_caches(operators)
        self._changed = True

    def _own(self, change: str) -> tuple[tuple, list[tuple], list[tuple]]:
        """A change's cache and rows, of a cache cut by partition only the rows this one holds."""
        key, added, removed = parse_delta(json.loads(change))
        if key in self.sharded:
            added, removed = ([row for row in rows if self.partition in row_partitions(self.plan, key[1], row)] for rows in (added, removed))
        return key, added, removed

    def _on_changes(self, tau: int, changes: list[tuple[dict, int]]) -> None:
        schema = [var.name for var in self.plan.split.schema]
        key, partitions = schema[self._key], self.plan.partitions
        rows = [[sign, _texts(row, schema)] for row, sign in changes if owner(row[key], partitions) == self.partition]
        if self.partial is not None:
            for sign, row in rows:
                self._owned[sign < 0].append(tuple(row))
        elif rows:
            self._hand_on(rows)

    def _on_partial_changes(self, tau: int, changes: list[tuple[dict, int]]) -> None:
        schema = [var.name for var in self.plan.partial.schema]
        rows = [[sign, _texts(row, schema)] for row, sign in changes]
        if rows:
            self._hand_on(rows)

    def _hand_on(self, rows: list) -> None:
        event = self._event
        if event is None:  # a rebuild catching up before any event: nothing it makes is handed on
            return
        self._out.append(Output(event.time, event.file, event.line, CHANGES, json.dumps(rows, ensure_ascii=False)))

    def _on_emission(self, emission) -> None:
        event = self._event
        self._out.append(Output(event.time, event.file, event.line, EMISSION, emission.json_text()))


@dataclass
class PartitionState:
    """What the job keeps of a partition between micro-batches (Spark state): ``retained`` the
    events still inside a window at ``clock``, ``pending`` those held for lateness, ``origin`` the
    job's first event time, ``version`` the number of micro-batches done (a live runner of the
    same version is the state's). The watermark is Spark's, which keeps it with the checkpoint."""

    version: int = 0
    clock: int | None = None
    origin: int | None = None
    retained: list[Event] = field(default_factory=list)
    pending: list[Event] = field(default_factory=list)
    # The changes of the static data applied so far (``streaming.follow``), in order; the last
    # ``unevaluated`` of them came in a micro-batch without events and wait for the next event.
    static: list[str] = field(default_factory=list)
    unevaluated: int = 0


def next_watermark(plan: JobPlan, watermark: int, rows: Iterable[Routed]) -> int:
    """Spark's event-time watermark after a micro-batch of ``rows`` (``withWatermark`` on their
    time with the job's lateness as delay): the latest time seen minus the delay, never lower
    than before, 0 at the start."""
    latest = max((row.time for row in rows), default=None)
    return watermark if latest is None else max(watermark, latest - plan.lateness_ms)


def partition_step(
    plan: JobPlan,
    partition: int,
    state: PartitionState,
    rows: Iterable[Routed],
    live: dict,
    watermark: int = 0,
    shard: Callable[[], CacheRows] = dict,
) -> list[Output]:
    """Step 2 for one micro-batch of partition ``partition`` (streaming/job.py): updates ``state``
    and returns the outputs. ``watermark``: Spark's event-time watermark for this micro-batch
    (``next_watermark`` of the ones before). ``live`` keeps the runners of this process by
    partition: one of the state's version goes on, else one is rebuilt from the state and
    ``shard()``, the partition's part of the large caches."""
    rows = list(rows)
    outputs: list[Output] = []
    arrived: list[Event] = []
    changes = sorted((row for row in rows if row.kind == STATIC), key=lambda row: (row.file, row.line))
    for row in rows:
        if row.kind == STATIC:
            continue
        if row.kind == REJECTED:
            outputs.append(Output(row.time, row.file, row.line, REJECTED, row.data))
            continue
        if row.time < watermark:
            if partition == 0:
                late = {"late": {"stream": row.stream, "time": row.time, "file": row.file, "line": row.line, "watermark": watermark}}
                outputs.append(Output(row.time, row.file, row.line, LATE, json.dumps(late)))
            continue
        arrived.append(Event(row.time, row.file, row.line, row.stream, row.data))
    if state.origin is None and arrived:
        state.origin = min(event.time for event in arrived)
    # Every partition has a row (an event or a tick) for every event, so each sees the batch's
    # latest time: what the watermark will be after this batch can be released now, since a
    # later event older than it will be late.
    bound = next_watermark(plan, watermark, rows)
    waiting = sorted([*state.pending, *arrived], key=_order)
    release = [e for e in waiting if e.time <= bound]
    state.pending = [e for e in waiting if e.time > bound]
    runner = _live_runner(plan, partition, state, live, shard)
    # A micro-batch's static changes come before its events (streaming.follow).
    for change in changes:
        runner.apply_static(change.data)
        state.static.append(change.data)
    outputs.extend(runner.feed(release))
    state.unevaluated = 0 if release and runner.clock is not None else state.unevaluated + len(changes)
    kept = [e for e in [*state.retained, *release] if e.data]
    if plan.horizon_ms is not None and runner.clock is not None:
        kept = [e for e in kept if e.time >= runner.clock - plan.horizon_ms]
    state.retained, state.clock = kept, runner.clock
    state.version += 1
    live[partition] = (state.version, runner)
    return outputs


def _live_runner(plan: JobPlan, partition: int, state: PartitionState, live: dict, shard: Callable[[], CacheRows]) -> PartitionRunner:
    found = live.get(partition)
    if found is not None and found[0] == state.version:
        return found[1]
    if found is not None:
        found[1].close()
    # The changes evaluated before are in the caches the retained events are replayed with; those
    # not yet evaluated are staged after, as the runner this one replaces had them.
    evaluated = len(state.static) - state.unevaluated
    runner = PartitionRunner(plan, partition, state.origin if state.origin is not None else 0, shard(), state.static[:evaluated])
    runner.feed(sorted(state.retained, key=_order), emit=False)
    if state.clock is not None:
        runner.advance(state.clock)
    for change in state.static[evaluated:]:
        runner.apply_static(change)
    return runner


def _order(event: Event) -> tuple:
    return (event.time, event.file, event.line)


@dataclass
class GlobalState:
    """What the job keeps of its global stage: the relation (``GlobalMerger.relation``) as
    ``(row, count)`` pairs, the time of its last evaluation and the version."""

    version: int = 0
    time: int | None = None
    relation: list[tuple[tuple, int]] = field(default_factory=list)


def global_step(plan: JobPlan, state: GlobalState, outputs: Iterable[Output], live: dict) -> list[str]:
    """Step 3 for one micro-batch: the lines for the sink; updates ``state``."""
    outputs = list(outputs)
    found = live.get("global")
    if found is not None and found[0] == state.version:
        merger = found[1]
    else:
        merger = GlobalMerger(plan, state.relation, state.time)
    lines = merger.feed(outputs)
    if plan.partitioned:
        state.relation = list(merger.relation.items())
    # The last evaluation's time (a mark's): a rebuilt merger evaluates there once (GlobalMerger).
    state.time = max((o.time for o in outputs if o.kind == MARK), default=state.time)
    state.version += 1
    live["global"] = (state.version, merger)
    return lines


def run_locally(
    plan: JobPlan,
    batches: Iterable[Iterable[tuple[str, str, int]]],
    default_stream: str | None = None,
    large: CacheRows | None = None,
    changes: Sequence[Sequence[tuple[str, str, int]]] = (),
    fresh_workers: bool = False,
    on_outputs: Callable[[list[Output]], None] | None = None,
) -> list[str]:
    """The job's three steps in this process, one micro-batch per item of ``batches`` (each the
    ``(text, file, line number)`` of its input lines): the lines its sink would receive. The tests
    run it beside the Spark job and the single-process engine. ``large``: caches given to the
    partitions as the job gives those too large to ship, each partition its shard. ``changes``:
    the lines of the change files (``streaming.follow``) each micro-batch reads, by batch.
    ``fresh_workers``: every micro-batch finds no live stage, as on a new Python worker, and
    rebuilds each from its state. ``on_outputs``: given what the partitions hand the global stage,
    each micro-batch (the benchmarks count it)."""
    parts = shards(plan, large or {})
    states = [PartitionState() for _ in range(plan.tasks)]
    global_state, live, lines, watermark = GlobalState(), {}, [], 0
    for number, batch in enumerate(batches):
        if fresh_workers:
            for _version, stage in live.values():
                if isinstance(stage, PartitionRunner):
                    stage.close()
            live = {}
        routed = route_changes(plan, changes[number] if number < len(changes) else ()) + route_lines(plan, batch, default_stream)
        outputs: list[Output] = []
        for part in {row.part for row in routed}:
            rows = [row for row in routed if row.part == part]
            outputs.extend(partition_step(plan, part, states[part], rows, live, watermark, lambda part=part: parts[part]))
        if on_outputs is not None:
            on_outputs(outputs)
        if outputs:
            lines.extend(global_step(plan, global_state, outputs, live))
        watermark = next_watermark(plan, watermark, routed)
    return lines


def single_process_lines(
    plan: JobPlan,
    lines: Iterable[tuple[str, str, int]],
    default_stream: str | None = None,
    changes: Sequence[tuple[tuple[int, str, int], str]] = (),
) -> list[str]:
    """What the single-process engine emits for the same input lines, fed in the job's event order
    ``(time, file, line)``: the answers the job must give (``cqels spark-job --verify``, the tests).
    ``changes``: ``((time, file, line), N-Quads)``, the static data replaced before the first event
    at or after that place in the event order."""
    # Step 1 on one partition: each event's triples whole, the lines that are not events left out.
    events = [row for row in route_lines(replace(plan, partitions=1), lines, default_stream) if row.kind == EVENT]
    store = open_store()
    if plan.static_nquads:
        store.load(plan.static_nquads.encode(), media_type="application/n-quads")
    engine = Engine(store, lateness_ms=0, rebuild_debounce_ms=1)
    try:
        query = engine.register(plan.text, name=plan.name, r2s=plan.r2s, dialect=plan.dialect)
        emitted: list[str] = []
        query.subscribe(lambda emission: emitted.append(emission.json_text()))
        pending = sorted(changes)
        for event in sorted(events, key=lambda row: (row.time, row.file, row.line)):
            while pending and pending[0][0] <= (event.time, event.file, event.line):
                _replace_static(engine, store, pending.pop(0)[1])
            engine.push(event.stream, event.data, event.time)
        return emitted
    finally:
        engine.close()


def _replace_static(engine: Engine, store: StaticStore, nquads: str) -> None:
    store.update("CLEAR ALL")
    if nquads:
        store.load(nquads.encode(), media_type="application/n-quads")
    if not engine.wait_for_caches(60):
        raise RuntimeError("the single engine did not rebuild its caches within 60 s")


def comparable(lines: Iterable[str], ordered: bool) -> list:
    """The emission lines among ``lines`` as compared with the engine's: SPARQL leaves the order of solutions (and of
    constructed triples) to the engine unless the query orders them, and a partitioned job meets
    them in another order than one process, so without ORDER BY each emission's rows are a bag."""
    found = []
    for line in lines:
        item = json.loads(line)
        if "query" not in item:  # a rejected or late event's line, not an emission
            continue
        if not ordered and "results" in item:
            item["results"]["bindings"].sort(key=lambda row: json.dumps(row, sort_keys=True))
        if not ordered and "triples" in item:
            item["triples"] = sorted(item["triples"].splitlines())
        found.append(item)
    return found


def static_store(plan: JobPlan) -> ox.Store | None:
    """The static data of ``plan`` in a store of its own (None: no static data)."""
    if not plan.static_nquads:
        return None
    store = ox.Store()
    store.load(plan.static_nquads.encode(), format=ox.RdfFormat.N_QUADS)
    return store


class RelationStage:
    """A plan over a relation its driver keeps, read as the content of an ``InstanceTable`` cache:
    the global stage's (``GlobalMerger``) and a partition's partial aggregation. ``relation`` is
    each row (the terms' N-Triples forms, None unbound) with its multiplicity; ``on_changes``, when
    given, takes Γ's signed changes at each evaluation instead of R2S emissions."""

    def __init__(self, plan: JobPlan, algebra: n.AlgebraQuery, on_changes: Callable | None = None):
        self.relation: Counter[tuple] = Counter()
        self.evaluator = IncrementalEvaluator(algebra, [], None, TermDictionary())
        ((_node, self._cache),) = self.evaluator.built.caches
        self.query = ContinuousQuery(plan.name, plan.text, algebra, plan.r2s, Mode.INCREMENTAL, [], self.evaluator)
        if on_changes is not None:
            self.query.on_changes = on_changes

    def change(self, added: list[tuple], removed: list[tuple]) -> None:
        """Rows enter and leave the relation, at the next ``evaluate_at``."""
        if not added and not removed:
            return
        relation = self.relation
        # A row that enters and leaves at one event (two partitions, or one rebuild) nets out.
        net = bag_delta(removed, added)
        enter, leave = net.added, net.removed
        for row in enter:
            relation[row] += 1
        for row in leave:
            relation[row] -= 1
            if relation[row] <= 0:
                del relation[row]
        self.evaluator.stage_cache(self._cache, *_terms(enter, leave))
        self.evaluator.release_caches([self._cache])

    def evaluate_at(self, time: int) -> list:
        return self.query.evaluate_at(time)


class GlobalMerger:
    """The global stage of a job (see the module docstring). ``relation`` is its state: the union
    of the partitions' results (``RelationStage.relation``)."""

    def __init__(self, plan: JobPlan, relation: Iterable[tuple[tuple, int]] = (), time: int | None = None):
        self.plan = plan
        self.stage: RelationStage | None = None
        if plan.partitioned:
            self.stage = RelationStage(plan, plan.global_algebra)
            # Evaluated once as the merger it replaces last was, even over no rows: Γ of an implicit
            # group (COUNT over nothing) is not new at the next event.
            if time is not None:
                self.stage.change([tuple(row) for row, count in relation for _ in range(count)], [])
                self.stage.evaluate_at(time)

    @property
    def relation(self) -> Counter:
        return self.stage.relation

    def feed(self, outputs: Iterable[Output]) -> list[str]:
        """The lines (JSON) of the emissions, late and rejected events of ``outputs``, in event order."""
        if self.stage is None:  # the partition's own emissions
            return [o.payload for o in sorted(outputs, key=lambda o: (o.time, o.file, o.line))]
        lines: list[str] = []
        added: list[tuple] = []
        removed: list[tuple] = []
        for output in sorted(outputs, key=lambda o: (o.time, o.file, o.line, o.kind != CHANGES)):
            if output.kind == CHANGES:
                for sign, row in json.loads(output.payload):
                    (added if sign > 0 else removed).append(tuple(row))
            elif output.kind == MARK:
                self.stage.change(added, removed)
                added, removed = [], []
                lines.extend(emission.json_text() for emission in self.stage.evaluate_at(output.time))
            else:
                lines.append(output.payload)
        if added or removed:
            msg = "changes without the mark of their event (partition 0 marks every event)"
            raise RuntimeError(msg)
        return lines


def _texts(row: dict, names: list[str]) -> list[str | None]:
    """A solution's terms as N-Triples forms in the order of ``names`` (None unbound)."""
    return [None if (term := row.get(name)) is None else str(term) for name in names]


def _terms(*groups: list[tuple]) -> list[list[tuple]]:
    """Rows of N-Triples forms as rows of terms, every distinct form parsed once in one call."""
    texts = list({text for rows in groups for row in rows for text in row if text is not None})
    terms = dict(zip(texts, parse_terms(texts)))
    return [[tuple(None if text is None else terms[text] for text in row) for row in rows] for rows in groups]
