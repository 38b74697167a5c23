"""The fan-out index (engine.fanout): an event reaches only the queries it gives work, and what every
query emits, its clock and its evaluations are those of the path that hands every event to every
query reading its stream (``FanOut`` mode ``all``), under random registrations, events, advances,
clock resets and unregistrations; the ``audit`` mode checks each skip against the unskipped run."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cqels_endpoint import Engine
from cqels_endpoint.engine.fanout import FanOut

EX = "http://ex.org/"
S1, S2 = f"{EX}s1", f"{EX}s2"

# (text, r2s, dialect): each kind of query the index treats apart, and the ones it must always reach.
SHAPES = [
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "ISTREAM", None),
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM", None),
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "RSTREAM", None),
    (f"SELECT ?s WHERE {{ STREAM <{S1}> [NOW] {{ ?s <{EX}p1> ?o }} }}", "DSTREAM", None),
    (f"SELECT ?s WHERE {{ STREAM <{S1}> [NOW] {{ ?s <{EX}p1> ?o }} }}", "RSTREAM", None),
    (f"SELECT ?o WHERE {{ STREAM <{S2}> [TRIPLES 2] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM", None),
    (f"SELECT ?o WHERE {{ STREAM <{S2}> [TRIPLES 2] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM", "cqels2"),
    (f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 30ms SLIDE 10ms] {{ ?s <{EX}p2> ?o }} }}", "RSTREAM", None),
    (f"SELECT ?s WHERE {{ STREAM <{S2}> [RANGE 20ms TUMBLING] {{ ?s <{EX}p1> ?o }} }}", "ISTREAM", None),
    (f"SELECT (COUNT(*) AS ?n) WHERE {{ STREAM <{S1}> [RANGE 25ms] {{ ?s <{EX}p1> ?o }} }}", "ISTREAM", None),
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 25ms] {{ ?s <{EX}p2> ?o FILTER(?o > 1) }} }}", "ISTREAM", None),
    # The stream pattern and window of the first three: a unit of eager queries routed once (FanOut.run).
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o FILTER(?o >= 1) }} }}", "ISTREAM", None),
    (f"SELECT ?a ?c WHERE {{ STREAM <{S1}> [RANGE 40ms] {{ ?a <{EX}p0> ?b }} STREAM <{S2}> [RANGE 15ms] {{ ?c <{EX}p1> ?b }} }}",
     "ISTREAM", None),
    (f"SELECT ?a ?c WHERE {{ STREAM <{S1}> [NOW] {{ ?a <{EX}p2> ?b }} STREAM <{S2}> [RANGE 15ms] {{ ?c <{EX}p2> ?b }} }}",
     "DSTREAM", None),
    (f"SELECT ?s ?p WHERE {{ STREAM <{S2}> [RANGE 20ms] {{ ?s ?p 1 }} }}", "ISTREAM", None),
    (f"SELECT ?st ?s WHERE {{ STREAM ?st [RANGE 20ms] {{ ?s <{EX}p1> ?o }} }}", "ISTREAM", None),
]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.sampled_from([S1, S2]), st.integers(0, 12),
                  st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=3)),
        st.tuples(st.just("advance"), st.integers(0, 40)),
        st.tuples(st.just("register"), st.integers(0, len(SHAPES) - 1), st.sampled_from(["incremental", "recompute"])),
        st.tuples(st.just("unregister"), st.integers(0, 20)),
        st.tuples(st.just("reset"), st.sampled_from([S1, S2])),
    ),
    min_size=1,
    max_size=40,
)


def run(mode: str, shapes: list[tuple[int, str]], program: list[tuple]) -> list:
    """What every query emitted, and each one's clock and evaluations after every step."""
    engine = Engine()
    engine.fanout = FanOut(engine.dictionary, mode)
    seen: list = []
    names: list[str] = []
    now = {S1: 0, S2: 0}

    def register(shape: int, mode_of: str) -> None:
        text, r2s, dialect = SHAPES[shape]
        query = engine.register(text, r2s=r2s, mode=mode_of, dialect=dialect)
        query.subscribe(lambda e, name=query.name: seen.append((name, e.time, sorted(sorted((k, str(v)) for k, v in r.items()) for r in e.rows))))
        names.append(query.name)

    for shape, mode_of in shapes:
        register(shape, mode_of)
    for step in program:
        if step[0] == "push":
            _, stream, gap, triples = step
            now[stream] += gap
            data = "\n".join(f"<{EX}e{s}> <{EX}p{p}> {o} ." for s, p, o in triples)
            engine.push(stream, data, time=now[stream])
        elif step[0] == "advance":
            at = max(now.values()) + step[1]
            engine.advance(at)
            now = {S1: at, S2: at}  # the watermarks moved there
        elif step[0] == "register":
            register(step[1], step[2])
        elif step[0] == "unregister" and names:
            engine.unregister(names.pop(step[1] % len(names)))
        elif step[0] == "reset" and stream_seen(engine, step[1]):
            engine.reset_clock(step[1])
            now[step[1]] = 0
        seen.append([(name, engine.queries[name].clock, engine.queries[name].evaluations) for name in names])
    engine.close()
    return seen


def stream_seen(engine: Engine, stream: str) -> bool:
    return stream in engine.streams.clocks


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.tuples(st.integers(0, len(SHAPES) - 1), st.sampled_from(["incremental", "recompute"])), min_size=1, max_size=6),
       program=steps)
def test_skipping_changes_no_emission_clock_or_evaluation_count(shapes, program) -> None:
    assert run("index", shapes, program) == run("all", shapes, program)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.tuples(st.integers(0, len(SHAPES) - 1), st.just("incremental")), min_size=1, max_size=6), program=steps)
def test_every_skip_is_checked_against_the_unskipped_run(shapes, program) -> None:
    run("audit", shapes, program)  # raises AssertionError at a skip that would have changed anything


def test_an_event_reaches_only_the_query_whose_predicate_it_carries() -> None:
    engine = Engine()
    queries = [engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p{i}> ?o }} }}") for i in range(50)]
    engine.push(S1, f"<{EX}a> <{EX}p0> 1 .", time=1)  # the first evaluation of every query
    reached: list[str] = []
    for query in queries:
        original = query._on_event
        query._on_event = lambda *args, query=query, original=original: (reached.append(query.name), original(*args))
    engine.push(S1, f"<{EX}a> <{EX}p7> 1 .", time=2)
    assert reached == [queries[7].name]
    assert [q.evaluations for q in queries[6:9]] == [2, 2, 2] and queries[6].clock == 2
    engine.close()


def test_a_query_is_reached_when_its_window_expires_with_no_event_matching() -> None:
    engine = Engine()
    expiring = engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 10ms] {{ ?s <{EX}p0> ?o }} }}", r2s="DSTREAM")
    gone: list = []
    expiring.subscribe(lambda e: gone.append((e.time, [str(r["s"]) for r in e.rows])))
    engine.push(S1, f"<{EX}a> <{EX}p0> 1 .", time=1)
    engine.push(S1, f"<{EX}a> <{EX}p9> 1 .", time=5)
    assert gone == []
    engine.push(S1, f"<{EX}a> <{EX}p9> 1 .", time=11)  # 1 + 10 ≤ 11: the triple leaves
    assert gone == [(11, [f"<{EX}a>"])]
    engine.close()


def test_the_predicate_index_holds_and_releases_its_ids() -> None:
    engine = Engine()
    baseline = len(engine.dictionary)
    engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}only-here> ?o }} }}", name="q")
    engine.unregister("q")
    assert len(engine.dictionary) == baseline
    engine.close()


def test_the_queries_of_a_unit_share_the_routing_of_an_event_and_answer_as_alone() -> None:
    texts = [f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o FILTER(?o >= {i}) }} }}" for i in range(4)]

    def answers(mode: str) -> tuple[list, int]:
        engine = Engine()
        engine.fanout = FanOut(engine.dictionary, mode)
        seen: list = []
        queries = [engine.register(text, r2s=r2s) for text in texts for r2s in ("ISTREAM", "DSTREAM")]
        for query in queries:
            query.subscribe(lambda e, name=query.name: seen.append((name, e.time, sorted(str(r["o"]) for r in e.rows))))
        routes = 0
        for query in queries:
            original = query._router  # what routes an event: the unit's shared plan asks it once

            def counted(stream, original=original):
                nonlocal routes
                routes += 1
                return original(stream)

            query._router = counted
        for k in range(12):
            engine.push(S1, f"<{EX}e{k}> <{EX}p0> {k % 5} .", time=10 * k)
        seen.append([(q.clock, q.evaluations, len(q.windows[0])) for q in queries])
        engine.close()
        return seen, routes

    indexed, routes = answers("index")
    alone, routes_alone = answers("all")
    assert indexed == alone
    assert (routes, routes_alone) == (12, 12 * 8)  # once an event for the unit, against once a query
