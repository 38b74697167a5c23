"""The compiled event path (engine/_eventpath.pyx): an event it takes leaves every query, stream
clock, latency histogram and fan-out count as the general path leaves them (``CQELS_EVENT_PATH=off``
keeps every event there), under random registrations, unregistrations, events (text, pyoxigraph
triples, no time), advances, clock resets and failing queries."""

from __future__ import annotations

import os
import time
from unittest import mock

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cqels_endpoint import Engine
from cqels_endpoint.engine.fanout import EventPath
from cqels_endpoint.errors import LateEventError
from cqels_endpoint.runtime.limits import Limits
from cqels_endpoint.testing import ManualClock

pytestmark = pytest.mark.skipif(EventPath is None, reason="the event path is compiled (CQELS_PURE_PYTHON=1 has none)")

EX = "http://ex.org/"
S1, S2 = f"{EX}s1", f"{EX}s2"
XSD = "http://www.w3.org/2001/XMLSchema#"

# (text, r2s): lone queries the path takes (eager, periodic, every window kind and R2S), and those
# it leaves to the general path (a join over two streams; two queries sharing their window).
SHAPES = [
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "ISTREAM"),
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM"),
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "RSTREAM"),
    (f"SELECT ?s ?p ?o WHERE {{ STREAM <{S1}> [RANGE 30ms STEP 10ms] {{ ?s ?p ?o }} }}", "RSTREAM"),
    (f"SELECT ?s WHERE {{ STREAM <{S1}> [NOW] {{ ?s <{EX}p1> ?o }} }}", "DSTREAM"),
    (f"SELECT ?o WHERE {{ STREAM <{S2}> [TRIPLES 2] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM"),
    (f"SELECT ?s WHERE {{ STREAM <{S2}> [RANGE 20ms TUMBLING] {{ ?s <{EX}p1> ?o }} }}", "ISTREAM"),
    (f"SELECT (COUNT(*) AS ?n) WHERE {{ STREAM <{S1}> [RANGE 25ms] {{ ?s <{EX}p1> ?o }} }}", "ISTREAM"),
    (f"SELECT ?s ?o WHERE {{ STREAM <{S2}> [RANGE 25ms] {{ ?s <{EX}p2> ?o FILTER(?o > 1) }} }}", "ISTREAM"),
    (f"SELECT ?a ?c WHERE {{ STREAM <{S1}> [RANGE 40ms] {{ ?a <{EX}p0> ?b }} STREAM <{S2}> [RANGE 15ms] {{ ?c <{EX}p1> ?b }} }}",
     "ISTREAM"),
]

# A run of 1 to 6 events on one stream, each ``gap`` ms after the one before.
events = st.tuples(
    st.just("push"), st.sampled_from([S1, S2]), st.integers(0, 12), st.sampled_from(["text", "triples", "no time"]),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=3), st.integers(1, 6),
)
steps = st.lists(
    st.one_of(
        events, events, events,
        st.tuples(st.just("advance"), st.integers(0, 40)),
        st.tuples(st.just("register"), st.integers(0, len(SHAPES) - 1), st.sampled_from(["incremental", "recompute"])),
        st.tuples(st.just("unregister"), st.integers(0, 20)),
        st.tuples(st.just("reset"), st.sampled_from([S1, S2])),
    ),
    min_size=8,
    max_size=40,
)


def run(paths: str, shapes: list[tuple[int, str]], program: list[tuple], max_tick_rows: int | None) -> tuple[list, int]:
    """What every query emitted, each one's clock, evaluations, status and latency count, and each
    stream's statistics after every step; and how many times the general path called a query."""
    clock = ManualClock(1_000)
    with mock.patch.dict(os.environ, {"CQELS_EVENT_PATH": paths}):
        engine = Engine(clock=clock, limits=Limits(max_tick_rows=max_tick_rows))
    seen: list = []
    names: list[str] = []
    now = {S1: 0, S2: 0}
    general = 0

    def register(shape: int, mode: str) -> None:
        nonlocal general
        text, r2s = SHAPES[shape]
        query = engine.register(text, r2s=r2s, mode=mode)
        query.subscribe(lambda e, name=query.name: seen.append((name, e.time, sorted(sorted((k, str(v)) for k, v in r.items()) for r in e.rows))))
        names.append(query.name)
        original = query._on_event

        def on_event(*args):  # the general path's call of a query: the compiled path makes none
            nonlocal general
            general += 1
            original(*args)

        query._on_event = on_event

    for shape, mode in shapes:
        register(shape, mode)
    for step in program:
        if step[0] == "push":
            _, stream, gap, form, triples, run_length = step
            for k in range(run_length):
                if form == "no time":
                    now[stream] = clock.set(max(clock.now, now[stream]) + gap)
                else:
                    now[stream] += gap
                data = [(f"{EX}e{s + k}", f"{EX}p{p}", o) for s, p, o in triples]
                if form == "triples":
                    data = [ox.Triple(ox.NamedNode(s), ox.NamedNode(p), ox.Literal(str(o), datatype=ox.NamedNode(f"{XSD}integer")))
                            for s, p, o in data]
                else:
                    data = "\n".join(f"<{s}> <{p}> {o} ." for s, p, o in data)
                try:
                    engine.push(stream, data, time=None if form == "no time" else now[stream])
                except LateEventError as error:  # the arrival clock behind an advance: refused alike on both paths
                    seen.append(("refused", error.time, error.watermark))
        elif step[0] == "advance":
            at = max(max(now.values()), clock.now) + step[1]
            engine.advance(at)
            now = {S1: at, S2: at}
        elif step[0] == "register":
            register(step[1], step[2])
        elif step[0] == "unregister" and names:
            engine.unregister(names.pop(step[1] % len(names)))
        elif step[0] == "reset" and step[1] in engine.streams.clocks:
            engine.reset_clock(step[1])
            now[step[1]] = 0
        queries = [engine.queries.get(name) or engine.failed[name] for name in names]
        seen.append([(q.name, q.status, q.clock, q.evaluations, q.emitted, q.latency.count) for q in queries])
        seen.append(engine.stream_stats())
    seen.append([engine.explain(name).splitlines() for name in names if name in engine.queries])
    engine.close()
    return seen, general


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shapes=st.lists(st.tuples(st.integers(0, len(SHAPES) - 1), st.sampled_from(["incremental", "recompute"])), min_size=1, max_size=2),
    program=steps,
    max_tick_rows=st.sampled_from([None, None, 3]),
)
def test_the_compiled_path_answers_as_the_general_one(shapes, program, max_tick_rows) -> None:
    compiled, _ = run("on", shapes, program, max_tick_rows)
    general, _ = run("off", shapes, program, max_tick_rows)
    assert compiled == general


def test_a_lone_query_takes_no_general_call_after_its_first_events() -> None:
    program = [("push", S1, 5, form, [(k, 0, k % 3), (k, 1, 1)], 1) for k in range(30) for form in ("text", "triples", "no time")]
    for shape in (0, 3):
        compiled, general_calls = run("on", [(shape, "incremental")], program, None)
        general, all_calls = run("off", [(shape, "incremental")], program, None)
        assert compiled == general
        assert all_calls == 90
        assert general_calls <= 2  # the first events: no router yet, the query not settled


def test_the_path_is_dropped_when_a_query_comes_or_goes() -> None:
    engine = Engine()
    lone = engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p0> ?o }} }}", name="lone")
    for k in range(3):
        engine.push(S1, f"<{EX}e{k}> <{EX}p0> 1 .", time=k)
    path = engine.fanout.paths[S1]
    assert path is not None and path.valid
    engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p1> ?o }} }}", name="other")
    assert not path.valid and S1 not in engine.fanout.paths
    engine.push(S1, f"<{EX}e9> <{EX}p0> 1 .", time=9)
    assert engine.fanout.paths[S1] is None  # two units read the stream
    engine.unregister("other")
    engine.push(S1, f"<{EX}e10> <{EX}p0> 1 .", time=10)
    assert engine.fanout.paths[S1] is not None
    assert lone.evaluations == 5
    engine.close()


def test_an_event_without_a_time_takes_the_wall_clock_on_the_path() -> None:
    engine = Engine()
    query = engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p0> ?o }} }}")
    for k in range(3):
        engine.push(S1, f"<{EX}e{k}> <{EX}p0> 1 .")
    assert engine.fanout.paths[S1] is not None
    before = time.time_ns() // 1_000_000
    engine.push(S1, f"<{EX}e9> <{EX}p0> 1 .")
    after = time.time_ns() // 1_000_000
    (stats,) = engine.stream_stats(S1)
    assert before <= stats["latest"] <= after and stats["events"] == stats["last_minute"] == 4
    assert query.clock == stats["latest"] and query.evaluations == 4
    engine.close()
