"""The cdef operator base (``operators/_base.pyx``): batches, and the edges between compiled
operators (``Node``s, pushing batches through C) and Python ones (Delta lists).

The engine's plans put Python operators (ORDER BY, static caches, the sink, a twin) next to compiled
ones, so every edge kind occurs: Node → Node, Node → Python (the batch becomes Deltas), Python →
Node (the Deltas become a batch). Here each plan operator kind is taken compiled or from its twin
independently (by replacing the names ``operators.build`` builds from), and the emissions of the
engine must be those of the all-twin plan, emission for emission, and the recomputation's.
"""

from __future__ import annotations

import itertools
import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint import Engine
from cqels_endpoint.operators import _base, _distinct, _extend, _filter, _project, build
from cqels_endpoint.operators import extend as twin_extend
from cqels_endpoint.operators import filter as twin_filter
from cqels_endpoint.operators.base import Delta, Sink
from cqels_endpoint.operators.reference import aggregate, distinct, join, mark, negation, optional, project, topk, union

# The operator kinds with a compiled Node and a twin, as build.py names them.
TWINS = {
    "WindowBuffer": join.WindowBuffer,
    "MultiwayJoin": join.MultiwayJoin,
    "Filter": twin_filter.Filter,
    "Extend": twin_extend.Extend,
    "GroupAggregate": aggregate.GroupAggregate,
    "Project": project.Project,
    "Distinct": distinct.Distinct,
    "TopK": topk.TopK,
    "Union": union.Union,
    "OptionalJoin": optional.OptionalJoin,
    "Negation": negation.Negation,
    "Mark": mark.Mark,
    "Sink": Sink,
}
EX = "http://ex.org/"
QUERIES = {
    "join, FILTER, BIND, DISTINCT": f"""
        PREFIX : <{EX}>
        SELECT DISTINCT ?a ?d WHERE {{
          STREAM <{EX}s> [RANGE 5s] {{ ?a :p ?b . ?b :q ?c }}
          FILTER (?c != :e1)
          BIND (CONCAT(STR(?a), "/", STR(?c)) AS ?d)
        }}""",
    "GROUP BY, HAVING, ORDER BY LIMIT": f"""
        PREFIX : <{EX}>
        SELECT ?b (COUNT(?a) AS ?n) (SUM(?v) AS ?total) WHERE {{
          STREAM <{EX}s> [RANGE 6s] {{ ?a :p ?b . ?a :v ?v }}
        }}
        GROUP BY ?b HAVING (COUNT(?a) > 0) ORDER BY DESC(?n) ?b LIMIT 2""",
    "UNION, OPTIONAL, NOT EXISTS, EXISTS in an expression": f"""
        PREFIX : <{EX}>
        SELECT ?a ?b ?c WHERE {{
          {{ STREAM <{EX}s> [RANGE 5s] {{ ?a :p ?b }} }} UNION {{ STREAM <{EX}s> [RANGE 3s] {{ ?a :q ?b }} }}
          OPTIONAL {{ STREAM <{EX}s> [RANGE 4s] {{ ?b :q ?c }} }}
          FILTER NOT EXISTS {{ STREAM <{EX}s> [RANGE 3s] {{ ?a :v 0 }} }}
          FILTER (?b = :e1 || EXISTS {{ STREAM <{EX}s> [RANGE 2s] {{ ?b :v ?n }} }})
        }}""",
}
ENTITIES = [f"<{EX}e{i}>" for i in range(5)]


def events(seed: int, count: int) -> list[tuple[int, str]]:
    """``count`` events one second apart: a few triples each over a small vocabulary."""
    draw = random.Random(seed)
    out = []
    for second in range(count):
        lines = []
        for _ in range(draw.randint(1, 5)):
            a, b = draw.choice(ENTITIES), draw.choice(ENTITIES)
            kind = draw.choice(["p", "q", "v"])
            obj = str(draw.randint(0, 3)) if kind == "v" else b
            lines.append(f"{a} <{EX}{kind}> {obj} .")
        out.append((second * 1000, "\n".join(lines)))
    return out


def run(text: str, pushed: list[tuple[int, str]], mode: str = "incremental") -> list[tuple]:
    engine = Engine()
    emitted = []
    engine.register(text, mode=mode).subscribe(
        lambda e: emitted.append((e.time, sorted(tuple(sorted((k, str(v)) for k, v in row.items())) for row in e.rows)))
    )
    for at, triples in pushed:
        engine.push(f"{EX}s", triples, time=at)
    engine.close()
    return emitted


@pytest.fixture
def twins(monkeypatch):
    """Replaces the named operator kinds by their twins in the plan builder."""

    def use(names):
        for name in names:
            monkeypatch.setattr(build, name, TWINS[name])

    return use


def mixes() -> list[tuple[str, ...]]:
    """Every kind alone as a twin, every other kind as a twin (both parities), all twins."""
    names = sorted(TWINS)
    return [(name,) for name in names] + [tuple(names[0::2]), tuple(names[1::2]), tuple(names)]


@pytest.mark.parametrize("query", sorted(QUERIES))
@pytest.mark.parametrize("mix", mixes(), ids="+".join)
def test_compiled_and_twin_operators_mix_at_any_edge(query, mix, twins):
    pushed = events(zlib.crc32(f"{query} {mix}".encode()), 60)
    compiled = run(QUERIES[query], pushed)
    assert sum(len(rows) for _time, rows in compiled) > 20  # the events make rows come and go
    twins(mix)
    assert run(QUERIES[query], pushed) == compiled
    assert compiled == run(QUERIES[query], pushed, mode="recompute")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_random_mixes_agree_with_the_compiled_plan(seed):
    draw = random.Random(seed)
    query = draw.choice(sorted(QUERIES))
    pushed = events(seed, 30)
    compiled = run(QUERIES[query], pushed)
    mix = [name for name in TWINS if draw.random() < 0.5]
    with pytest.MonkeyPatch.context() as patch:
        for name in mix:
            patch.setattr(build, name, TWINS[name])
        assert run(QUERIES[query], pushed) == compiled, f"twins: {mix}"


# ---- batches and single edges -------------------------------------------------------------------

ROWS = st.tuples(st.one_of(st.none(), st.integers(0, 2**62)), st.one_of(st.none(), st.integers(-(2**62), -2)))
LINEAGES = st.lists(st.integers(-(2**63), 2**63 - 1), min_size=0, max_size=5).map(tuple)


@settings(max_examples=200, deadline=None)
@given(deltas=st.lists(st.tuples(ROWS, st.sampled_from([1, -1]), LINEAGES), max_size=20))
def test_a_batch_keeps_rows_signs_and_whole_lineages(deltas):
    deltas = [Delta(*delta) for delta in deltas]
    batch = _base.Batch.of(2, deltas)
    assert len(batch) == len(deltas)
    assert batch.to_deltas() == deltas


def test_a_batch_refuses_the_unbound_id_and_a_row_of_another_width():
    with pytest.raises(ValueError, match="reserved for unbound"):
        _base.Batch.of(1, [Delta((-1,), 1, (1,))])
    with pytest.raises(ValueError, match="2 columns where 1"):
        _base.Batch.of(1, [Delta((1, 2), 1, (1,))])


class Collect(Sink):
    """A Python operator downstream: what it receives, in order."""

    def __init__(self, schema):
        super().__init__(schema)
        self.received = []
        self.ticks = []

    def on_batch(self, port, deltas):
        self.received.extend(deltas)
        super().on_batch(port, deltas)

    def on_tick_end(self, tau):
        self.ticks.append(tau)


TICKS = st.lists(
    st.lists(st.tuples(st.sampled_from([(1, 2), (3, None), (1, 2), (5, 6)]), st.integers(0, 3)), max_size=6),
    min_size=1,
    max_size=6,
)


def replay(chain, ticks):
    """Feeds the chain's first operator rows (each entering with a new leaf, then some leaving) and
    punctuates; returns what the Python sink at its end received, tick by tick."""
    first, sink = chain[0], chain[-1]
    for upstream, downstream in itertools.pairwise(chain):
        upstream.connect(downstream)
    live, leaf = {}, 0
    for tau, tick in enumerate(ticks):
        deltas = []
        for row, leaving in tick:
            leaf += 1
            live[leaf] = row
            deltas.append(Delta(row, 1, (leaf, -leaf)))
            if leaving and live:
                gone = sorted(live)[leaving % len(live)]
                deltas.append(Delta(live.pop(gone), -1, (gone, -gone)))
        first.on_batch(0, deltas)
        first.on_punctuation(tau)
    return sink.received, sink.ticks


@settings(max_examples=100, deadline=None)
@given(ticks=TICKS)
def test_a_node_under_a_python_operator_and_over_one_gives_the_twins_deltas(ticks):
    schema = ("a", "b")
    # Python → Node → Node → Python → Node → Python, against the twins all the way.
    compiled = [
        project.Project(schema, ("b", "a")),
        _distinct.Distinct(("b", "a")),
        _project.Project(("b", "a"), ("a", "b", "c")),
        distinct.Distinct(("a", "b", "c")),
        _distinct.Distinct(("a", "b", "c")),
        Collect(("a", "b", "c")),
    ]
    twin = [
        project.Project(schema, ("b", "a")),
        distinct.Distinct(("b", "a")),
        project.Project(("b", "a"), ("a", "b", "c")),
        distinct.Distinct(("a", "b", "c")),
        distinct.Distinct(("a", "b", "c")),
        Collect(("a", "b", "c")),
    ]
    assert replay(compiled, ticks) == replay(twin, ticks)
    assert [op.counters() for op in compiled[:-1]] == [op.counters() for op in twin[:-1]]


def test_the_punctuation_crosses_every_edge_once_per_tick():
    sink = Collect(("a",))
    chain = [_project.Project(("a",), ("a",)), project.Project(("a",), ("a",)), _distinct.Distinct(("a",)), sink]
    for upstream, downstream in itertools.pairwise(chain):
        upstream.connect(downstream)
    for tau in range(3):
        chain[0].on_punctuation(tau)
    assert sink.ticks == [0, 1, 2]


def test_compiled_filter_and_extend_are_the_plan_builders():
    assert build.Filter is _filter.Filter and build.Extend is _extend.Extend


def test_a_fan_hands_each_batch_and_punctuation_to_every_target_and_keeps_a_failure_apart():
    # A window buffer's batch through a Fan to a compiled DISTINCT, a twin DISTINCT and a failing
    # Python operator: each gets what it would get alone, and the failure is kept, not raised.
    class Failing(Collect):
        def on_batch(self, port, deltas):
            raise RuntimeError("this plan broke")

    compiled, twin, failing = Collect(("a",)), Collect(("a",)), Failing(("a",))
    first, second = _distinct.Distinct(("a",)), distinct.Distinct(("a",))
    first.connect(compiled)
    second.connect(twin)
    fan = _base.Fan([(first, 0), (second, 0), (failing, 0)])
    buffer = _project.Project(("a",), ("a",))
    buffer.connect(fan)
    for tau, deltas in enumerate([[Delta((1,), 1, (1,)), Delta((1,), 1, (2,))], [Delta((1,), -1, (1,))], [Delta((1,), -1, (2,))]]):
        buffer.on_batch(0, deltas)
        buffer.on_punctuation(tau)
    assert compiled.received == twin.received and [delta.sign for delta in twin.received] == [1, -1]
    assert compiled.ticks == twin.ticks == [0, 1, 2] and failing.ticks == []
    assert list(fan.errors) == [id(failing)] and "broke" in str(fan.errors[id(failing)])
