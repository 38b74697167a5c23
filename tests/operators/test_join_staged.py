"""A static cache's change staged into the multiway join below it (``MultiwayJoin.stage_rows``,
``release_rows``, ``flip_rows``): stream rows, parts staged, releases, undone installs and a closed
query interleave at random; after every tick the join's output is the naive join of the stream
rows with the cache as last released, and the compiled join and its twin agree delta for delta."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_scenarios import SKEWED_VALUES, Recorder, naive_join

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators import _join
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.reference import join as reference
from cqels_endpoint.operators.static_cache import StaticCache

IMPLEMENTATIONS = [pytest.param(_join, id="compiled"), pytest.param(reference, id="pure")]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows_of(width: int, unbound: bool):
    values = st.one_of(SKEWED_VALUES, st.none()) if unbound else SKEWED_VALUES
    return st.lists(values, min_size=width, max_size=width).map(tuple)


@st.composite
def staged_scenarios(draw) -> dict:
    n = draw(st.integers(2, 3))
    schemas = [tuple(draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=2, unique=True))) for _ in range(n)]
    unbound = draw(st.booleans())
    cache = n - 1  # the cache feeds the last input; the others are fed like windows
    cache_row = rows_of(len(schemas[cache]), unbound)
    operation = st.one_of(
        st.integers(0, n - 2).flatmap(lambda port: rows_of(len(schemas[port]), unbound).map(lambda row: ("+", port, row))),
        st.integers(0, 50).map(lambda k: ("-", k)),
        st.tuples(st.just("stage"), st.lists(cache_row, max_size=6), st.lists(st.integers(0, 50), max_size=4, unique=True)),
        st.just(("release",)),
        st.just(("discard",)),
    )
    return {
        "schemas": schemas,
        "initial": draw(st.lists(cache_row, max_size=6)),
        "ticks": draw(st.lists(st.lists(operation, max_size=8), min_size=1, max_size=8)),
        "collect_per_tick": draw(st.integers(1, 4)),
    }


def drive(join_class, scenario: dict) -> tuple[Recorder, object]:
    schemas = scenario["schemas"]
    cache_port = len(schemas) - 1
    join = join_class(schemas)
    join.collect_per_tick = scenario["collect_per_tick"]
    recorder = Recorder(join.schema)
    join.connect(recorder)
    released: list[tuple] = []
    cache = StaticCache(schemas[cache_port], on_release=released.append)
    cache.connect(join, cache_port)
    given_rows = Counter(scenario["initial"])
    cache.replace(scenario["initial"])
    visible = Counter(scenario["initial"])  # the cache as the join sees it after the next punctuation
    live: dict[int, tuple[int, tuple]] = {}
    leaf = 0
    for tau, tick in enumerate(scenario["ticks"]):
        release = None
        for op in tick:
            if op[0] == "+":
                leaf += 1
                live[leaf] = (op[1], op[2])
                join.on_batch(op[1], [Delta(op[2], 1, (leaf,))])
            elif op[0] == "-" and live:
                gone = sorted(live)[op[1] % len(live)]
                port, row = live.pop(gone)
                join.on_batch(port, [Delta(row, -1, (gone,))])
            elif op[0] == "stage":
                held = cache.rows()
                removed = [held[k % len(held)] for k in sorted({k % len(held) for k in op[2]})] if held else []
                cache.stage(op[1], removed)
                given_rows.update(op[1])
            elif op[0] == "release":
                cache.release_staged()
                release = Counter(cache.rows())
            elif op[0] == "discard":
                cache.discard_staged()
        cache.on_punctuation(tau)
        for _port in range(cache_port):
            join.on_punctuation(tau)
        assert recorder.punctuations[-1] == tau
        if release is not None:
            visible = release
        per_port = [[row for port, row in live.values() if port == p] for p in range(cache_port)]
        assert recorder.relation() == naive_join(join.schema, schemas, [*per_port, list(visible.elements())]), f"tick {tau}"
        assert join.index_sizes() == [len(rows) for rows in per_port] + [sum(visible.values())]
    # The query is unregistered, whatever is staged or released: every reference goes back once.
    cache.close()
    assert Counter(released) == given_rows
    return recorder, join


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@SETTINGS
@given(scenario=staged_scenarios())
def test_a_staged_change_shows_whole_at_the_tick_after_its_release(implementation, scenario):
    drive(implementation.MultiwayJoin, scenario)


@SETTINGS
@given(scenario=staged_scenarios())
def test_compiled_join_matches_its_twin_on_staged_changes(scenario):
    compiled, compiled_join = drive(_join.MultiwayJoin, scenario)
    pure, pure_join = drive(reference.MultiwayJoin, scenario)
    assert compiled.deltas == pure.deltas
    assert compiled_join.counters() == pure_join.counters()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_large_change_is_joined_from_the_window_side(implementation):
    # 2,000 cache rows replaced against a window of 2 rows: the release extends the 2 window rows
    # over the entering cache rows (probe order 0>1), not the 1,000 entering rows over the window.
    join = implementation.MultiwayJoin([("s", "x"), ("s", "o")])
    recorder = Recorder(join.schema)
    join.connect(recorder)
    cache = StaticCache(("s", "o"))
    cache.connect(join, 1)
    cache.replace([(s, 100 + s) for s in range(1000)])
    cache.on_punctuation(0)
    join.on_batch(0, [Delta((7, 1), 1, (1,)), Delta((2000, 2), 1, (2,))])
    join.on_punctuation(0)
    orders = Counter(join.probe_orders)
    for start in range(0, 1000, 100):
        cache.stage([(s, 200 + s) for s in range(start, start + 100)], [(s, 100 + s) for s in range(start, start + 100)])
        cache.on_punctuation(1)  # staged: not seen yet
        join.on_punctuation(1)
    assert recorder.relation() == Counter({(7, 1, 107): 1})
    cache.release_staged()
    cache.on_punctuation(2)
    join.on_punctuation(2)
    assert recorder.relation() == Counter({(7, 1, 207): 1})
    assert Counter(join.probe_orders) - orders == Counter({(0, 1): 2})
    assert join.index_sizes() == [2, 1000]
    # The 1,000 rows that left are deleted a bounded number per tick.
    join.collect_per_tick = 600
    cache.on_punctuation(3)
    join.on_punctuation(3)
    assert recorder.relation() == Counter({(7, 1, 207): 1})
    join.on_batch(0, [Delta((7, 3), 1, (3,))])
    assert recorder.relation() == Counter({(7, 1, 207): 1, (7, 3, 207): 1})


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_row_a_staged_change_holds_cannot_leave_as_a_delta(implementation):
    join = implementation.MultiwayJoin([("a",), ("a",)], label="join J1")
    join.stage_rows(1, [(1,)], -1, [])
    with pytest.raises(OperatorError, match=r"join J1.*staged change"):
        join.on_batch(1, [Delta((1,), -1, (-1,))])
    with pytest.raises(OperatorError, match=r"join J1.*not in it"):
        join.stage_rows(1, [], -2, [-5])
