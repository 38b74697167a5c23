"""Shared by the operator tests: random insert/expire scenarios, a recording sink, naive references.

A scenario is JSON-shaped so a failing hypothesis example can be kept as a regression file under
tests/regressions/: ``{"schemas": [["a", "b"], ["b"]], "ticks": [[["+", 0, [1, 2]], ["-", 3]]]}``.
``["+", port, row]`` inserts a leaf (ids 1, 2, … in insertion order), ``["-", k]`` expires the
live leaf at position ``k`` modulo the number of live leaves (sorted by id); no-op if none is live.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

from hypothesis import strategies as st

from cqels_endpoint.operators.base import Delta, Operator

REGRESSIONS = Path(__file__).parent / "regressions"

VARIABLES = ("a", "b", "c", "d")
# Skewed: 0 dominates, so buckets grow long and probe-order choices matter.
SKEWED_VALUES = st.sampled_from([0, 0, 0, 0, 0, 1, 1, 1, 2, 3, 4])


def load_regressions(name: str) -> list[dict]:
    return json.loads((REGRESSIONS / name).read_text())


class Recorder(Operator):
    """A sink that keeps every delta it receives, in order, and checks lineage consistency."""

    def __init__(self, schema: tuple[str, ...]) -> None:
        super().__init__(schema, "recorder")
        self.deltas: list[Delta] = []
        self.live: dict[tuple, tuple] = {}
        self.punctuations: list[int] = []

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        for delta in deltas:
            row, sign, lineage = delta
            assert sign in (1, -1)
            assert len(row) == len(self.schema)
            if sign > 0:
                assert lineage not in self.live, f"lineage {lineage} emitted twice"
                self.live[lineage] = row
            else:
                assert self.live.pop(lineage) == row, f"-1 of {lineage} carries another row"
            self.deltas.append(Delta(tuple(row), sign, tuple(lineage)))

    def on_tick_end(self, tau: int) -> None:
        self.punctuations.append(tau)

    def relation(self) -> Counter:
        return Counter(self.live.values())


class Recorded:
    """An operator whose output goes to a ``Recorder``."""

    def __init__(self, operator: Operator) -> None:
        self.operator = operator
        self.recorder = Recorder(operator.schema)
        operator.connect(self.recorder)

    def tick(self, deltas: list[Delta], tau: int) -> list[Delta]:
        """Feeds ``deltas`` on port 0 (if any), closes tick ``tau``; returns the deltas emitted in it."""
        start = len(self.recorder.deltas)
        if deltas:
            self.operator.on_batch(0, deltas)
        self.operator.on_punctuation(tau)
        return self.recorder.deltas[start:]


def compatible_merge(schema: tuple[str, ...], parts: list[tuple[tuple[str, ...], tuple]]) -> tuple | None:
    """SPARQL merge of solution mappings (None = unbound), or None if two bound values differ."""
    merged: dict[str, object] = {}
    for part_schema, row in parts:
        for name, value in zip(part_schema, row):
            if value is None:
                continue
            if merged.get(name, value) != value:
                return None
            merged[name] = value
    return tuple(merged.get(name) for name in schema)


def naive_join(schema: tuple[str, ...], schemas: list[tuple[str, ...]], live: list[list[tuple]]) -> Counter:
    """The join recomputed from scratch by a nested loop over the live rows of every input."""
    result: Counter = Counter()
    for combination in itertools.product(*live):
        merged = compatible_merge(schema, list(zip(schemas, combination)))
        if merged is not None:
            result[merged] += 1
    return result


@st.composite
def row_for(draw, width: int, unbound: bool) -> list:
    values = st.one_of(SKEWED_VALUES, st.none()) if unbound else SKEWED_VALUES
    return [draw(values) for _ in range(width)]


@st.composite
def join_scenarios(draw, unbound: bool = False, max_inputs: int = 4) -> dict:
    n = draw(st.integers(2, max_inputs))
    schemas = [
        draw(st.lists(st.sampled_from(VARIABLES), min_size=1, max_size=3, unique=True)) for _ in range(n)
    ]
    operation = st.one_of(
        st.integers(0, n - 1).flatmap(
            lambda port: row_for(len(schemas[port]), unbound).map(lambda row: ["+", port, row])
        ),
        st.integers(0, 50).map(lambda k: ["-", k]),
    )
    # Bursts: a tick may carry many operations; empty ticks are punctuation only.
    ticks = draw(st.lists(st.lists(operation, max_size=10), min_size=1, max_size=8))
    return {"schemas": schemas, "ticks": ticks}


def replay_window_ticks(source, ticks) -> Recorder:
    """Drives a window leaf (a ``WindowBuffer``, ``StreamWindows``) through ``ticks`` of
    ``("+", value)`` insertions (numbered 1, 2, … in order) and ``("-", seq)`` expiries, a
    punctuation after each tick; returns the recorder of its output."""
    recorder = Recorder(source.schema)
    source.connect(recorder)
    seq = 0
    for tau, tick in enumerate(ticks):
        for op, value in tick:
            if op == "+":
                seq += 1
                source.insert(seq, value)
            else:
                source.expire(value)
        source.on_punctuation(tau)
    return recorder


def drive_join(join_class, scenario: dict, *, expire_all: bool = True):
    """Feed a scenario to a join, checking the accumulated output against the naive join after
    every tick; returns (recorder, join, probes made by expiry-only ticks)."""
    schemas = [tuple(s) for s in scenario["schemas"]]
    join = join_class(schemas)
    recorder = Recorder(join.schema)
    join.connect(recorder)
    live: dict[int, tuple[int, tuple]] = {}
    next_leaf = 0
    ticks = [list(tick) for tick in scenario["ticks"]]
    if expire_all:
        ticks.append([["-", 0] for _ in range(sum(op[0] == "+" for tick in ticks for op in tick))])
    expiry_probes = 0
    for tau, tick in enumerate(ticks):
        probes_before = join.counters()["probes"]
        inserted = False
        batch: list[Delta] = []
        batch_port = -1
        for op in tick:
            if op[0] == "+":
                _, port, row = op
                next_leaf += 1
                live[next_leaf] = (port, tuple(row))
                delta = Delta(tuple(row), 1, (next_leaf,))
                inserted = True
            else:
                if not live:
                    continue
                leaf = sorted(live)[op[1] % len(live)]
                port, row = live.pop(leaf)
                delta = Delta(row, -1, (leaf,))
            if port != batch_port and batch:
                join.on_batch(batch_port, batch)
                batch = []
            batch_port = port
            batch.append(delta)
        if batch:
            join.on_batch(batch_port, batch)
        for _ in range(join.arity):
            join.on_punctuation(tau)
        assert recorder.punctuations[-1] == tau
        if not inserted:
            expiry_probes += join.counters()["probes"] - probes_before
        rows_per_port = [[row for port, row in live.values() if port == p] for p in range(len(schemas))]
        assert recorder.relation() == naive_join(join.schema, schemas, rows_per_port), f"after tick {tau}"
    return recorder, join, expiry_probes
