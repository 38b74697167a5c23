"""Limits on a continuous query (``runtime.limits``): window size, rows per evaluation, and what a
query past them does — fail alone, releasing its state, or shed counted triples — plus the bounded
version of the accelerated-time soak (``benchmarks/soak.py``): state returns to its bound as
windows expire."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from cqels_endpoint.engine import Engine, LimitExceeded, Limits
from cqels_endpoint.engine.emission import PRUNE_FLOOR
from cqels_endpoint.engine.recompute import COMPACT_FLOOR
from cqels_endpoint.runtime.limits import Limits as RuntimeLimits

EX = "http://ex.org/"
S, T = EX + "s", EX + "t"


def nt(s: str, p: str, o: object) -> str:
    return f"<{EX}{s}> <{EX}{p}> {o} ."


def ranged(stream: str, window: str = "RANGE 1h") -> str:
    return f"SELECT ?s ?o WHERE {{ STREAM <{stream}> [{window}] {{ ?s <{EX}p> ?o }} }}"


CROSS = f"""SELECT ?a ?c WHERE {{
  STREAM <{S}> [RANGE 1h] {{ ?a <{EX}p> ?b }}
  STREAM <{S}> [RANGE 1h] {{ ?c <{EX}q> ?d }}
}}"""


def test_limits_are_checked() -> None:
    assert RuntimeLimits is Limits
    with pytest.raises(ValueError, match="max_window_triples must be a positive integer"):
        Limits(max_window_triples=0)
    with pytest.raises(ValueError, match="max_tick_rows must be a positive integer"):
        Limits(max_tick_rows=-3)
    with pytest.raises(ValueError, match="limit action 'drop'"):
        Limits(action="drop")


@pytest.mark.parametrize("mode", ["incremental", "recompute"])
def test_a_full_window_fails_its_query_alone_and_releases_it(mode: str) -> None:
    engine = Engine(limits=Limits(max_window_triples=3))
    baseline = len(engine.dictionary)
    full = engine.register(ranged(S), name="full", mode=mode)
    other = engine.register(ranged(T, "RANGE 2ms"), name="other", mode=mode)
    seen, other_seen = [], []
    full.subscribe(seen.append)
    other.subscribe(other_seen.append)
    for i in range(6):
        engine.push(S, nt(f"a{i}", "p", i), time=i)  # the 4th triple does not fit: "full" fails
        engine.push(T, nt(f"b{i}", "p", i), time=i)  # RANGE 2ms holds 2 at most: "other" runs on
    assert full.status == "failed" and isinstance(full.failure, LimitExceeded)
    assert str(full.failure) == f"the window of stream pattern 0 on <{S}> is full: it holds 3 triples, the limit max_window_triples=3"
    assert len(seen) == 3  # the emissions before the failure were delivered
    assert other.status == "running" and len(other_seen) == 6
    assert list(engine.queries) == ["other"] and list(engine.failed) == ["full"]
    # Its window and its term ids are gone: what is left is the other query's.
    engine.unregister("other")
    assert engine.shared_windows.stats() == {"windows": 0, "readers": 0}
    assert len(engine.dictionary) == baseline
    # The name stays taken until the failed query is unregistered.
    with pytest.raises(ValueError, match="already registered"):
        engine.register(ranged(S), name="full")
    engine.unregister("full")
    assert engine.failed == {}
    assert engine.register(ranged(S), name="full").status == "running"
    engine.close()


def test_a_full_window_sheds_the_new_triples_and_counts_them() -> None:
    engine = Engine(limits=Limits(max_window_triples=3, action="shed"))
    query = engine.register(ranged(S, "RANGE 10ms"), name="q", r2s="RSTREAM")
    seen = []
    query.subscribe(seen.append)
    for i in range(5):
        engine.push(S, nt(f"a{i}", "p", i), time=i)
    assert query.status == "running" and query.shed == 2
    assert sorted(row["s"].value for row in seen[-1].rows) == [f"{EX}a{i}" for i in range(3)]
    assert "2 triple(s) shed by full windows" in query.explain()
    # Once the oldest expire, new triples enter again.
    engine.push(S, nt("late", "p", 99), time=11)  # 11 − 10 < t' keeps t' > 1: a2 and the new one
    assert sorted(row["s"].value for row in seen[-1].rows) == [f"{EX}a2", f"{EX}late"]
    assert query.shed == 2
    engine.close()


def test_shed_counts_reach_every_query_sharing_a_window() -> None:
    engine = Engine(limits=Limits(max_window_triples=2, action="shed"))
    first = engine.register(ranged(S), name="first")
    second = engine.register(ranged(S), name="second")  # same epoch, same window: one shared state
    assert engine.shared_windows.stats() == {"windows": 1, "readers": 2}
    for i in range(5):
        engine.push(S, nt(f"a{i}", "p", i), time=i)
    assert (first.shed, second.shed) == (3, 3)
    assert engine.shared_windows.sizes() == [2]
    engine.close()


def test_too_many_rows_in_one_evaluation_fails_the_query() -> None:
    engine = Engine(limits=Limits(max_tick_rows=50))
    baseline = len(engine.dictionary)
    cross = engine.register(CROSS, name="cross")
    small = engine.register(ranged(S), name="small")
    engine.push(S, "\n".join(nt(f"a{i}", "p", i) for i in range(10)), time=1)
    assert cross.status == "running"
    assert cross.evaluator.tick_rows <= 50
    # Ten more triples join each of the ten: 100 join rows in one evaluation.
    engine.push(S, "\n".join(nt(f"c{i}", "q", i) for i in range(10)), time=2)
    assert cross.status == "failed"
    assert "more than 50 intermediate rows (max_tick_rows)" in str(cross.failure)
    assert small.status == "running" and small.evaluations == 2
    engine.push(S, nt("z", "p", 0), time=3)
    assert small.evaluations == 3 and len(small.snapshot()) == 11
    engine.unregister("small")
    assert len(engine.dictionary) == baseline
    engine.close()


def test_an_advance_that_retracts_too_many_rows_fails_the_query() -> None:
    def run(limits: Limits | None) -> tuple[Engine, object]:
        engine = Engine(limits=limits)
        cross = engine.register(CROSS, name="cross")
        engine.push(S, "\n".join(nt(f"a{i}", "p", i) for i in range(10)), time=1)
        for i in range(10):
            engine.push(S, nt(f"c{i}", "q", i), time=2 + i)  # ten join rows each
        return engine, cross

    engine, cross = run(None)
    peak = cross.evaluator.peak_tick_rows
    engine.close()
    engine, cross = run(Limits(max_tick_rows=peak))  # every push fits
    assert cross.status == "running"
    engine.advance(3_600_000 + 20)  # the whole window leaves at once: a hundred join rows retracted
    assert cross.status == "failed" and f"more than {peak} intermediate rows" in str(cross.failure)
    engine.close()


def test_tick_rows_are_the_deltas_the_operators_emit() -> None:
    engine = Engine()
    cross = engine.register(CROSS, name="cross")
    engine.push(S, "\n".join(nt(f"a{i}", "p", i) for i in range(4)), time=1)
    first = cross.evaluator.tick_rows
    engine.push(S, "\n".join(nt(f"c{i}", "q", i) for i in range(3)), time=2)
    # The second evaluation: 3 leaf rows flushed, 4 × 3 join rows, each passed on by the projection.
    assert cross.evaluator.tick_rows > 12 > first
    assert cross.evaluator.peak_tick_rows == cross.evaluator.tick_rows
    engine.close()


def test_the_instances_of_a_shared_plan_fail_together() -> None:
    engine = Engine(limits=Limits(max_window_triples=2))
    template = engine.template(f"# @param ?s\nSELECT ?o WHERE {{ STREAM <{S}> [RANGE 1h] {{ ?s <{EX}p> ?o }} }}")
    instances = engine.register_instances(template, [(f"i/{k}", {"s": ox.NamedNode(f"{EX}a{k}")}) for k in range(3)])
    alone = engine.register(ranged(T), name="alone")
    for i in range(3):
        engine.push(S, nt(f"a{i}", "p", i), time=i)
    assert [q.status for q in instances] == ["failed"] * 3
    assert engine.plan_sharing() == {"plans": 0, "instances": 0}
    assert alone.status == "running"
    for query in instances:
        engine.unregister(query.name)
    engine.close()


def test_an_error_inside_one_query_does_not_stop_the_others(caplog) -> None:
    engine = Engine()
    broken = engine.register(ranged(S), name="broken")
    healthy = engine.register(ranged(S), name="healthy")

    def explode(*_args) -> None:
        raise RuntimeError("operator bug")

    broken.evaluator.on_insert = explode  # a stand-in for a bug in one query's plan
    engine.push(S, nt("a", "p", 1), time=1)
    assert broken.status == "failed" and str(broken.failure) == "operator bug"
    assert healthy.evaluations == 1 and len(healthy.snapshot()) == 1
    assert "continuous query 'broken' failed" in caplog.text
    engine.close()


def test_windows_and_the_dictionary_return_to_their_bound_as_windows_expire() -> None:
    """The bounded soak: accelerated event time, fresh terms in every event, sliding windows
    expiring continuously; after many windows' worth of events the state is what one window holds."""
    engine = Engine()
    baseline = len(engine.dictionary)
    queries = [
        engine.register(f"SELECT ?s ?o WHERE {{ STREAM <{S}> [RANGE 100ms] {{ ?s <{EX}p> ?o }} }}", name="eager"),
        engine.register(f"SELECT (COUNT(*) AS ?n) WHERE {{ STREAM <{S}> [RANGE 100ms SLIDE 20ms] {{ ?s <{EX}p> ?o }} }}",
                        name="periodic"),
        engine.register(f"""SELECT ?s ?t WHERE {{
          STREAM <{S}> [RANGE 50ms] {{ ?s <{EX}p> ?o }} STREAM <{S}> [RANGE 50ms] {{ ?t <{EX}p> ?o }}
        }}""", name="join"),
    ]
    sizes = []
    for i in range(6_000):  # 600 windows of 100 ms, one event per 10 ms, a new subject each
        engine.push(S, nt(f"s{i}", "p", f'"{i % 7}"'), time=i * 10)
        if i % 97 == 96:
            sizes.append((len(engine.dictionary), engine.shared_windows.sizes()))
    # RANGE 100ms holds 10 triples 10 ms apart; RANGE 100ms SLIDE 20ms those of [c − 100, c) at its
    # last close c, 10, and at most 2 inserted since; RANGE 50ms 5.
    assert all(states == [10, 12, 5, 5] or states == [10, 11, 5, 5] for _, states in sizes[1:]), sizes
    # A triple in a window holds its subject (12 at most), the objects are 7 literals; the rest is
    # the predicate, the count in Γ and the like: a few terms, as many after 6,000 new subjects.
    terms = [count for count, _ in sizes]
    assert max(terms) <= baseline + 12 + 7 + 3
    assert max(terms[30:]) <= max(terms[1:30])  # no growth from the first half to the second
    assert max(len(q.snapshot()) for q in queries) <= 10 * 10
    engine.close()
    assert len(engine.dictionary) == baseline


def test_the_json_writers_keep_the_texts_of_live_ids_only() -> None:
    """What the HTTP results path holds per query (issue 31): a JSON-only subscriber has every
    emission written from ids, and the writer's kept texts follow the window, not every subject
    ever emitted (a fixed cap of 65,536 made a server's RSS drift for tens of minutes)."""
    engine = Engine()
    query = engine.register(f"SELECT ?s ?o WHERE {{ STREAM <{S}> [RANGE 100ms] {{ ?s <{EX}p> ?o }} }}", name="eager")
    written = []
    query.subscribe(lambda emission: written.append(emission.json_text()), json_only=True)
    kept = []
    for i in range(10_000):  # a new subject every 10 ms: 10 of them live in the window at a time
        engine.push(S, nt(f"s{i}", "p", f'"{i % 7}"'), time=i * 10)
        kept.append(len(query.evaluator._writer._texts))
    assert len(written) == 10_000 and f"{EX}s9999" in written[-1]
    assert max(kept) <= PRUNE_FLOOR + 1, max(kept)
    engine.close()


def test_the_recompute_store_is_rebuilt_as_its_windows_slide() -> None:
    """pyoxigraph's in-memory store keeps what a removed quad took, so the recompute oracle's store
    is rebuilt from what it holds once removals outnumber twice that (issue 31): over 12,000
    expired triples it was rebuilt, it holds the window and the static data only, and it emits
    what the incremental evaluator emits, every time."""
    store = ox.Store()
    rooms = [ox.NamedNode(f"{EX}room{k}") for k in range(7)]
    for k, room in enumerate(rooms):
        store.add(ox.Quad(room, ox.NamedNode(EX + "floor"), ox.Literal(k % 3), ox.NamedNode(EX + "g")))
    engine = Engine(store)
    text = f"""SELECT ?f (COUNT(*) AS ?n) WHERE {{
      STREAM <{S}> [RANGE 100ms] {{ ?s <{EX}p> ?room }} GRAPH <{EX}g> {{ ?room <{EX}floor> ?f }}
    }} GROUP BY ?f"""
    seen = {}
    for mode in ("incremental", "recompute"):
        query = engine.register(text, name=mode, mode=mode)
        seen[mode] = []
        query.subscribe(lambda emission, out=seen[mode]: out.append((emission.time, sorted(map(str, emission.to_json()["results"]["bindings"])))))
    oracle = engine.queries["recompute"].evaluator
    for i in range(12_000):  # a new subject every 10 ms, 10 in the window
        engine.push(S, nt(f"s{i}", "p", f"<{rooms[i % 7].value}>"), time=i * 10)
    assert seen["recompute"] == seen["incremental"] and len(seen["incremental"]) > 5_000
    assert 0 < oracle._built <= 10 + len(rooms)  # rebuilt with the window's triples and the static copy
    assert oracle._removed < COMPACT_FLOOR
    assert len(oracle.store) == 10 + len(rooms)
    engine.close()
