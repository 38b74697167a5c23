"""The physical plan and the incremental evaluator: plan choices, PlanErrors, explain, references.

The differential property tests (``test_incremental_differential.py``) check the results; these
tests check what the plan is made of and the evaluator's bookkeeping: which operator computes
what, which constructs are refused and how the refusal reads, the explain text with its live
counters, windows as sets of triples, static changes, and dictionary references released.
"""

from __future__ import annotations

import re

import pytest
from incremental_oracle import Scenario, differences, run_both, static_store

from cqels_endpoint import Engine, parse_query
from cqels_endpoint.algebra.passes import optimize
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan import compile_plan
from cqels_endpoint.plan.caches import cache_sparql
from cqels_endpoint.plan.nodes import ExtendNode, FilterNode, MultiwayJoin, ProjectNode, StaticCache, StreamLeaf

EX = "http://ex.org/"
S = EX + "s"
PREFIX = f"PREFIX : <{EX}>\n"


def algebra(text: str):
    return optimize(to_algebra(parse_query(PREFIX + text)))


# --------------------------------------------------------------------------- the plan


def test_a_stream_static_join_is_one_multiway_join_with_indexed_inputs() -> None:
    query = algebra(
        f"SELECT ?a ?d WHERE {{ STREAM <{S}> [RANGE 30s] {{ ?a :p ?b . ?b :q ?c }} ?c :r ?d . "
        "FILTER (?d != :x) FILTER (?a != ?d) BIND (STR(?a) AS ?z) }"
    )
    plan = compile_plan(query)
    project = plan.root
    assert isinstance(project, ProjectNode) and project.schema == ("a", "d")
    extend = project.input
    assert isinstance(extend, ExtendNode) and extend.var == "z" and extend.schema == ("a", "b", "c", "d", "z")
    stream_filter = extend.input
    assert isinstance(stream_filter, FilterNode)
    join = stream_filter.input
    assert isinstance(join, MultiwayJoin) and join.schema == ("a", "b", "c", "d")
    assert [(i.node.id, type(i.node), i.keys, i.index) for i in join.join_inputs] == [
        ("S1", StreamLeaf, ("b",), "ring"),
        ("S2", StreamLeaf, ("b", "c"), "ring"),
        ("C1", StaticCache, ("c",), "hash"),
    ]
    # The filter on the static ?d went into the cache: pyoxigraph evaluates it once.
    cache = join.join_inputs[2].node
    assert cache.schema == ("c", "d")
    assert cache_sparql(query, cache) == f"SELECT ?c ?d WHERE {{ {{ ?c <{EX}r> ?d . }} FILTER ((?d != <{EX}x>)) }}"
    assert [leaf.positions for leaf in plan.leaves.values()] == [("a", None, "b"), ("b", None, "c")]


def test_stream_blank_nodes_and_repeated_variables() -> None:
    plan = compile_plan(algebra(f"SELECT * WHERE {{ STREAM <{S}> [ALL] {{ _:x :p ?a . _:x :q ?a . ?a :r ?a }} }}"))
    positions = [leaf.positions for leaf in plan.leaves.values()]
    assert positions == [("_:x", None, "a"), ("_:x", None, "a"), ("a", None, "a")]
    # The blank node is a join column of the stream pattern, never part of Γ.
    assert plan.root.schema == ("a",)


def test_a_cache_in_a_graph_reads_that_graph_with_the_query_dataset() -> None:
    query = algebra(f"SELECT * FROM NAMED :g WHERE {{ STREAM <{S}> [NOW] {{ ?a :p ?b }} GRAPH :g {{ ?b :q ?c }} }}")
    plan = compile_plan(query)
    (cache,) = plan.caches
    assert cache.join_vars == ("b",)
    assert cache_sparql(query, cache) == f"SELECT ?b ?c FROM NAMED <{EX}g> WHERE {{ GRAPH <{EX}g> {{ ?b <{EX}q> ?c . }} }}"


def test_a_top_level_order_by_orders_the_emissions_over_the_columns_it_reads() -> None:
    plan = compile_plan(algebra(f"SELECT ?a WHERE {{ STREAM <{S}> [ALL] {{ ?a :p ?b }} }} ORDER BY ?b"))
    order = plan.order
    assert isinstance(plan.root, ProjectNode) and plan.root.input is order and plan.root.schema == ("a",)
    assert order.projection == ("a",) and order.schema == ("a", "b")
    assert isinstance(order.input, StreamLeaf)


@pytest.mark.parametrize(
    ("where", "construct", "line"),
    [
        ("{ STREAM <S> [ALL] { ?a :p ?b }\n  OPTIONAL { ?b :q ?c FILTER (?a = ?b || NOT EXISTS { ?c :q ?b }) } }", "NOT EXISTS", 4),
        ("{ STREAM <S> [ALL] { ?a :p ?b }\n  GRAPH ?g { STREAM <S> [NOW] { ?b :q ?c } } }", "GRAPH ?g around a stream pattern", 4),
    ],
)
def test_constructs_of_issue_5_are_refused_by_name_and_line(where: str, construct: str, line: int) -> None:
    text = "SELECT *\nWHERE " + where.replace("<S>", f"<{S}>")
    with pytest.raises(PlanError) as raised:
        compile_plan(algebra(text))
    message = str(raised.value)
    assert message.startswith(construct + " (line ")
    assert re.search(rf"^{re.escape(construct)} \(line {line}: `", message)
    assert 'mode="recompute"' in message


@pytest.mark.parametrize(
    ("text", "construct"),
    [
        (
            f"SELECT DISTINCT ?a WHERE {{ STREAM <{S}> [ALL] {{ ?a :p ?b }} }} ORDER BY ?b LIMIT 3",
            "ORDER BY over the variables ?b, which SELECT DISTINCT does not project",
        ),
    ],
)
def test_query_level_constructs_of_issue_5_are_refused(text: str, construct: str) -> None:
    with pytest.raises(PlanError, match=re.escape(construct)):
        compile_plan(algebra(text))


def test_now_is_refused_with_its_line_since_its_value_changes_at_every_evaluation() -> None:
    text = f"SELECT ?a\nWHERE {{ STREAM <{S}> [ALL] {{ ?a :p ?t }}\n  FILTER (?t < NOW()) }}"
    with pytest.raises(PlanError, match=r"^NOW\(\) \(line 4: `FILTER \(\?t < NOW\(\)\) }`\) is not supported"):
        compile_plan(algebra(text))


def test_the_engine_refuses_them_at_registration_and_recompute_accepts_them() -> None:
    engine = Engine()
    text = PREFIX + f"SELECT ?a WHERE {{ STREAM <{S}> [ALL] {{ ?a :p ?b }} GRAPH ?g {{ STREAM <{S}> [ALL] {{ ?b :q ?c }} }} }}"
    with pytest.raises(PlanError, match="GRAPH"):
        engine.register(text, mode="incremental")
    assert engine.queries == {}
    engine.register(text, mode="recompute")


# --------------------------------------------------------------------------- the evaluator


def test_explain_shows_the_operators_with_live_counters() -> None:
    engine = Engine(store=static_store(f"<{EX}b> <{EX}r> <{EX}d> ."))
    query = engine.register(
        PREFIX + f"SELECT ?a ?d WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?a :p ?b }} ?b :r ?d FILTER (?a != ?d) }}"
    )
    engine.push(S, f"<{EX}a> <{EX}p> <{EX}b> .", time=1)
    engine.push(S, f"<{EX}c> <{EX}p> <{EX}b> .", time=2)
    text = query.explain()
    assert "J1 multiway join of 2 inputs [?a ?b ?d]" in text
    assert "S1 window buffer <http://ex.org/s> [RANGE 10ms] { ?a <http://ex.org/p> ?b }  probed on ?b via ring index" in text
    assert "C1 static cache [?b ?d] joined on ?b  probed on ?b via hash index" in text
    assert "computed by: SELECT ?b ?d WHERE { ?b <http://ex.org/r> ?d . }" in text
    join_counters = text.splitlines()[text.splitlines().index(next(x for x in text.splitlines() if "J1 multiway" in x)) + 1]
    assert "outputs=2" in join_counters
    assert "probe_orders={" in join_counters and "S1>C1: 2" in join_counters
    assert "F1 filter ((?a != ?d))" in text
    assert text.endswith("Γ: 2 rows after 2 evaluations")


def test_a_window_is_a_set_of_triples() -> None:
    """The same triple pushed twice is in a RANGE window once, until its last copy expires."""
    engine = Engine()
    query = engine.register(PREFIX + f"SELECT ?a WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?a :p :b }} }}", r2s="RSTREAM")
    seen = []
    query.subscribe(lambda e: seen.append((e.time, len(e.rows))))
    triple = f"<{EX}a> <{EX}p> <{EX}b> ."
    engine.push(S, triple, time=0)
    engine.push(S, triple, time=5)
    engine.advance(12)  # the copy of 0 expired, the copy of 5 has not
    engine.advance(15)
    assert seen == [(0, 1), (5, 1), (12, 1), (15, 0)]


def test_static_changes_enter_with_the_next_evaluation() -> None:
    store = static_store(f"<{EX}b> <{EX}r> <{EX}d1> .")
    scenario_query = PREFIX + f"SELECT ?a ?d WHERE {{ STREAM <{S}> [ALL] {{ ?a :p ?b }} ?b :r ?d }}"
    engine = Engine(store=store)
    logs = {}
    for mode in ("incremental", "recompute"):
        query = engine.register(scenario_query, name=mode, r2s="RSTREAM", mode=mode)
        logs[mode] = []
        query.subscribe(lambda e, log=logs[mode]: log.append((e.time, sorted(r["d"].value for r in e.rows))))
    engine.push(S, f"<{EX}a> <{EX}p> <{EX}b> .", time=1)
    store.post_graph(None, f"<{EX}b> <{EX}r> <{EX}d2> .", "application/n-triples")
    store.update(f"DELETE DATA {{ <{EX}b> <{EX}r> <{EX}d1> }}")
    # The incremental caches are rebuilt in the background (caches.rebuild): wait for the swap.
    assert engine.wait_for_caches(10)
    engine.advance(2)
    assert logs["incremental"] == logs["recompute"] == [(1, [EX + "d1"]), (2, [EX + "d2"])]


def test_every_dictionary_reference_is_released_when_the_query_goes() -> None:
    engine = Engine(store=static_store(f'<{EX}b> <{EX}r> "static {EX}" .'))
    engine.register(
        PREFIX + f"SELECT * WHERE {{ STREAM <{S}> [RANGE 3ms] {{ ?a :p ?b }} ?b :r ?s BIND (CONCAT(STR(?a), ?s) AS ?z) }}",
        name="q",
    )
    for time in range(10):
        engine.push(S, f'<{EX}a{time % 4}> <{EX}p> <{EX}b> .\n<{EX}x> <{EX}p> "t{time}" .', time=time)
    assert len(engine.dictionary) > 0
    engine.unregister("q")
    assert len(engine.dictionary) == 0


def test_expired_terms_are_released_while_the_query_runs() -> None:
    engine = Engine()
    engine.register(PREFIX + f"SELECT * WHERE {{ STREAM <{S}> [RANGE 2ms] {{ ?a :p ?b }} }}")
    for time in range(50):
        engine.push(S, f'<{EX}a> <{EX}p> "value {time}" .', time=time)
    # The window holds 2 triples: their literals, :a, :p (and nothing of the 48 that left).
    assert len(engine.dictionary) <= 2 + 2 + 2


def test_regression_scenarios_of_the_examples_run_in_both_modes() -> None:
    """A hand-written scenario covering ties, TRIPLES windows and a CONSTRUCT with a static join."""
    scenario = Scenario(
        PREFIX
        + f"CONSTRUCT {{ ?a :near ?c }} WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?a :p ?b }} "
        f"STREAM <{EX}t> [RANGE 5ms] {{ ?c :p ?b }} ?b :r ?d FILTER (?a != ?c) }}",
        f"<{EX}b> <{EX}r> <{EX}d> .\n<{EX}e> <{EX}r> <{EX}d> .",
        [
            ["push", S, 0, f"<{EX}a> <{EX}p> <{EX}b> ."],
            ["push", EX + "t", 0, f"<{EX}c> <{EX}p> <{EX}b> ."],
            ["push", S, 1, f"<{EX}a2> <{EX}p> <{EX}b> .\n<{EX}a3> <{EX}p> <{EX}e> ."],
            ["push", EX + "t", 3, f"<{EX}c> <{EX}p> <{EX}e> ."],
            ["advance", 9],
        ],
    )
    logs = run_both(scenario)
    assert differences(logs) == []
    assert sum(len(e.triples) for e in logs["incremental", "ISTREAM"]) > 0


def test_expiry_retracts_through_lineage_without_probing() -> None:
    """Done-when of issue 4: no operator re-scans or re-joins a window on expiry."""
    engine = Engine(store=static_store(f"<{EX}b> <{EX}r> <{EX}d> ."))
    query = engine.register(
        PREFIX + f"SELECT * WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?a :p ?b }} STREAM <{EX}t> [RANGE 10ms] {{ ?b :q ?c }} ?b :r ?d }}",
        r2s="DSTREAM",
    )
    retracted = []
    query.subscribe(lambda e: retracted.extend(e.rows))
    for time in range(5):
        engine.push(S, f"<{EX}a{time}> <{EX}p> <{EX}b> .", time=time)
        engine.push(EX + "t", f"<{EX}b> <{EX}q> <{EX}c{time}> .", time=time)
    join = query.evaluator.built.operators["J1"]
    before = join.counters()
    engine.advance(100)  # everything leaves the windows
    after = join.counters()
    assert len(retracted) == 25
    assert after["probes"] == before["probes"] and after["pruned"] == before["pruned"]
    assert after["live_outputs"] == 0 and query.snapshot() == []
