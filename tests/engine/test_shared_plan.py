"""A unit's shared window buffer (engine.shared_plan): queries reading one window state through one
buffer, fanned out to their plans, answer as each query alone on its own buffer (``FanOut`` mode
``all``) and as re-evaluation (``mode="recompute"``): the same emissions, clocks, evaluations and
window sizes after every step, under random FILTER constants, events, advances, registrations and
unregistrations mid-stream."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cqels_endpoint import Engine
from cqels_endpoint.engine.fanout import FanOut
from cqels_endpoint.runtime.compiled import use_pure_python

# The shared buffer is a compiled one: with CQELS_PURE_PYTHON=1 every query keeps its own.
compiled_only = pytest.mark.skipif(use_pure_python(), reason="the shared plan needs the compiled operators")

EX = "http://ex.org/"
S1 = f"{EX}s1"
PATTERN = f"STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p> ?o"

# (text with {k} for a random constant, r2s): shapes whose plans read the one stream pattern alone.
SHAPES = [
    (f"SELECT ?s ?o WHERE {{ {PATTERN} FILTER(?o >= {{k}}) }} }}", "ISTREAM"),
    (f"SELECT ?s ?o WHERE {{ {PATTERN} FILTER(?o < {{k}}) }} }}", "DSTREAM"),
    (f"SELECT ?o WHERE {{ {PATTERN} FILTER(?o != {{k}}) }} }}", "ISTREAM"),
    (f"SELECT DISTINCT ?o WHERE {{ {PATTERN} FILTER(?o > {{k}}) }} }}", "DSTREAM"),
    (f"SELECT (COUNT(*) AS ?n) WHERE {{ {PATTERN} FILTER(?o >= {{k}}) }} }}", "ISTREAM"),
    (f"ASK WHERE {{ {PATTERN} FILTER(?o = {{k}}) }} }}", "ISTREAM"),
    (f"CONSTRUCT {{ ?s <{EX}q> ?o }} WHERE {{ {PATTERN} FILTER(?o <= {{k}}) }} }}", "ISTREAM"),
]

queries_drawn = st.lists(st.tuples(st.integers(0, len(SHAPES) - 1), st.integers(0, 4)), min_size=2, max_size=6)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.integers(0, 12),
                  st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1), st.integers(0, 4)), min_size=1, max_size=3)),
        st.tuples(st.just("advance"), st.integers(0, 40)),
        st.tuples(st.just("register"), queries_drawn),
        st.tuples(st.just("unregister"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=40,
)


def run(fanout: str, mode: str, first: list[tuple[int, int]], program: list[tuple]) -> tuple[list, bool]:
    """What every query emitted and each one's clock, evaluations and window size after every step;
    and whether any query read a shared buffer."""
    engine = Engine()
    engine.fanout = FanOut(engine.dictionary, fanout)
    seen: list = []
    names: list[str] = []
    shared = False
    now = 0

    def register(drawn: list[tuple[int, int]]) -> None:
        for shape, constant in drawn:
            text, r2s = SHAPES[shape]
            query = engine.register(text.replace("{k}", str(constant)), r2s=r2s, mode=mode)
            query.subscribe(lambda e, name=query.name: seen.append((name, e.time, e.boolean, _rows(e))))
            names.append(query.name)

    register(first)
    for step in program:
        if step[0] == "push":
            _, gap, triples = step
            now += gap
            engine.push(S1, "\n".join(f"<{EX}e{s}> <{EX}{'pq'[p]}> {o} ." for s, p, o in triples), time=now)
        elif step[0] == "advance":
            now += step[1]
            engine.advance(now)
        elif step[0] == "register":
            register(step[1])
        elif names:
            engine.unregister(names.pop(step[1] % len(names)))
        shared = shared or any(query._shared is not None for query in engine.queries.values())
        seen.append([(name, engine.queries[name].clock, engine.queries[name].evaluations, len(engine.queries[name].windows[0]))
                     for name in names])
    engine.close()
    assert len(engine.dictionary) == 0  # every reference the shared buffer took was dropped
    return seen, shared


def _rows(emission) -> list:
    if emission.triples is not None:
        return sorted(str(triple) for triple in emission.triples)
    return sorted(sorted((k, str(v)) for k, v in row.items()) for row in emission.rows or ())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=queries_drawn, program=steps)
def test_a_shared_buffer_answers_as_each_query_alone_and_as_recompute(first, program) -> None:
    indexed, shared = run("index", "incremental", first, program)
    alone, shared_alone = run("all", "incremental", first, program)
    recomputed, _ = run("all", "recompute", first, program)
    assert indexed == alone == recomputed
    assert not shared_alone
    if not use_pure_python() and any(step[0] == "push" and any(p == 0 for _s, p, _o in step[2]) for step in program[:1]):
        assert shared  # the first event matched: the queries registered before it read one buffer


@compiled_only
def test_the_queries_of_a_unit_read_one_buffer_and_explain_as_alone() -> None:
    def explained(fanout: str) -> tuple[list[str], set[int]]:
        engine = Engine()
        engine.fanout = FanOut(engine.dictionary, fanout)
        queries = [engine.register(SHAPES[0][0].replace("{k}", str(k)), r2s="ISTREAM") for k in range(3)]
        for k in range(5):
            engine.push(S1, f"<{EX}e{k}> <{EX}p> {k} .", time=10 * k)
        buffers = {id(query.evaluator.built.buffers[0]) for query in queries}
        texts = [query.explain() for query in queries]
        engine.close()
        return texts, buffers

    shared, one_buffer = explained("index")
    alone, own_buffers = explained("all")
    assert (len(one_buffer), len(own_buffers)) == (1, 3)
    # Each FILTER's counters are its own, the buffer's those each query's own buffer has.
    assert shared == alone
    assert "inputs=5 outputs=7 size=3 expired=2" in shared[0] and "rejected=2" in shared[2]


@compiled_only
def test_a_query_failing_in_a_shared_round_fails_alone() -> None:
    engine = Engine()
    queries = [engine.register(SHAPES[0][0].replace("{k}", str(k)), r2s="ISTREAM", name=f"q{k}") for k in range(3)]
    engine.push(S1, f"<{EX}e0> <{EX}p> 5 .", time=0)
    failing = queries[1].evaluator.sink

    def broken(*_args):
        raise RuntimeError("q1's plan broke")

    # q1's FILTER pushes into a Python sink that raises: only q1 fails; the others go on.
    filter_operator = queries[1]._shared._targets[queries[1]][0]
    filter_operator.downstream = type("Broken", (), {"on_batch": broken, "on_punctuation": lambda *_: None})()
    engine.push(S1, f"<{EX}e1> <{EX}p> 6 .", time=10)
    assert set(engine.failed) == {"q1"} and "broke" in str(engine.failed["q1"].failure)
    engine.push(S1, f"<{EX}e2> <{EX}p> 7 .", time=20)
    assert [queries[0].emitted, queries[2].emitted] == [3, 3]
    assert failing is not None
    engine.close()


@compiled_only
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(constants=st.lists(st.integers(0, 4), min_size=2, max_size=5), pushes=st.lists(st.integers(0, 4), min_size=1, max_size=12),
       json_only=st.lists(st.booleans(), min_size=5, max_size=5))
def test_a_shared_round_writes_each_subscriber_what_a_query_alone_writes(constants, pushes, json_only) -> None:
    """The round in C (``_shared_round``) makes a SELECT's emission itself: JSON written from ids
    for subscribers that read only JSON, terms for the others, as ``ContinuousQuery._emit`` does."""

    def run_with(fanout: str) -> tuple[list, list]:
        engine = Engine()
        engine.fanout = FanOut(engine.dictionary, fanout)
        seen: list = []
        queries = []
        for k, constant in enumerate(constants):
            query = engine.register(SHAPES[0][0].replace("{k}", str(constant)), r2s="ISTREAM", name=f"q{k}")
            query.subscribe(lambda e, k=k: seen.append((k, e.time, e.rows is None, e.json_text())), json_only=json_only[k])
            queries.append(query)
        for step, value in enumerate(pushes):
            engine.push(S1, f"<{EX}e{step}> <{EX}p> {value} .", time=10 * step)
        counts = [(query.evaluations, query.clock, query.latency.count, query.emission_latency.count) for query in queries]
        shared = {id(query.evaluator.built.buffers[0]) for query in queries}
        engine.close()
        return seen, counts, len(shared)

    shared_seen, shared_counts, buffers = run_with("index")
    alone_seen, alone_counts, own = run_with("all")
    assert (buffers, own) == (1, len(constants))
    assert shared_seen == alone_seen
    assert shared_counts == alone_counts


@compiled_only
def test_a_compiled_sinks_rows_stay_out_of_the_cyclic_gc() -> None:
    """Γ of a compiled sink is a plain dict of untracked id tuples (``operators._sink``): a full
    collection does not walk it; it reads as the twin's Counter; the sinks of a shared plan share
    the tuples of the rows both hold."""
    import gc
    from collections import Counter

    engine = Engine()
    queries = [engine.register(SHAPES[0][0].replace("{k}", str(k)), r2s="ISTREAM") for k in range(2)]
    for k in range(6):
        engine.push(S1, f"<{EX}e{k}> <{EX}p> {k % 3} .", time=k)
    sink = queries[1].evaluator.sink
    assert sink.relation == Counter(sink.rows()) and len(sink.rows()) == 4
    assert not gc.is_tracked(sink.relation) and not any(gc.is_tracked(row) for row in sink.relation)
    # The row that enters reaches both sinks in turn: they keep one tuple of it, not one each.
    first = {id(row) for row in queries[0].evaluator.sink.relation}
    assert {id(row) for row in sink.relation} <= first
    engine.close()
