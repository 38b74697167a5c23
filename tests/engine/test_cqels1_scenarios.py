"""CQELS 1 as CQELS means it, push and assert, in the style of the unit tests of a CQELS 1.x fork:
``[NOW]`` is the current instant (every triple whose timestamp is the query's time), and ``STREAM
?var`` reads the streams its variable ranges over, bound to each triple's stream as ``GRAPH ?g``
binds a graph's name (docs/ARCHITECTURE.md, "Windows and time" and "STREAM ?var").

Every scenario runs in both modes (the incremental operators and the recompute oracle) and must
give the answers written out here.
"""

from __future__ import annotations

import re

import pyoxigraph as ox
import pytest

from cqels_endpoint import Engine
from cqels_endpoint.errors import PlanError
from cqels_endpoint.oxigraph.requests import open_store

EX = "http://ex.org/"
PREFIX = f"PREFIX : <{EX}>\n"
MODES = ("incremental", "recompute")


def run(query: str, steps: list[tuple], static: str = "", mode: str = "incremental", r2s: str = "RSTREAM") -> list[tuple]:
    """The emissions of ``query``: ``(time, sorted rows)``, a row the values of its variables in
    name order (IRIs without ``EX``). ``steps``: ``("push", stream, time, N-Triples)``,
    ``("advance", time)`` or ``("update", SPARQL Update)``, after which the caches are rebuilt."""
    store = open_store()
    if static:
        store.load(static.encode(), media_type="application/n-triples")
    engine = Engine(store=store, rebuild_debounce_ms=1)
    try:
        registered = engine.register(PREFIX + query, mode=mode, r2s=r2s)
        emitted: list = []
        registered.subscribe(emitted.append)
        for step in steps:
            if step[0] == "push":
                engine.push(EX + step[1], step[3], time=step[2])
            elif step[0] == "advance":
                engine.advance(step[1])
            else:
                store.update(PREFIX + step[1])
                assert engine.wait_for_caches(30)
        return [(e.time, sorted(tuple(_short(row[v]) for v in sorted(row)) for row in e.rows)) for e in emitted]
    finally:
        engine.close()


def _short(term) -> str:
    return term.value.removeprefix(EX)


def reading(sensor: str, value: int, predicate: str = "value") -> str:
    return f'<{EX}{sensor}> <{EX}{predicate}> "{value}"^^<http://www.w3.org/2001/XMLSchema#integer> .'


# --------------------------------------------------------------------------- [NOW] is the current instant


@pytest.mark.parametrize("mode", MODES)
def test_three_events_of_one_instant_count_one_two_three(mode):
    query = "SELECT (COUNT(*) AS ?n) WHERE { STREAM :s [NOW] { ?s ?p ?o } }"
    steps = [("push", "s", 1000, reading(f"s{i}", i)) for i in range(3)]
    assert run(query, steps, mode=mode) == [(1000, [("1",)]), (1000, [("2",)]), (1000, [("3",)])]


@pytest.mark.parametrize("mode", MODES)
def test_a_later_instant_empties_the_window_of_the_earlier_one(mode):
    query = "SELECT (COUNT(*) AS ?n) WHERE { STREAM :s [NOW] { ?s ?p ?o } }"
    steps = [("push", "s", 1000, reading("a", 1)), ("push", "s", 1000, reading("b", 2)), ("advance", 1000),
             ("push", "s", 2000, reading("c", 3)), ("advance", 2500)]
    # An advance to the instant itself keeps it; one past it leaves nothing.
    assert run(query, steps, mode=mode) == [
        (1000, [("1",)]), (1000, [("2",)]), (1000, [("2",)]), (2000, [("1",)]), (2500, [("0",)]),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_grouped_average_over_the_events_of_one_instant(mode):
    query = "SELECT ?room (AVG(?t) AS ?avg) WHERE { STREAM :s [NOW] { ?x :room ?room . ?x :temp ?t } } GROUP BY ?room"

    def event(sensor: str, room: str, temperature: int) -> str:
        return f"<{EX}{sensor}> <{EX}room> <{EX}{room}> .\n" + reading(sensor, temperature, "temp")

    steps = [
        ("push", "s", 1000, event("x1", "r1", 20)),
        ("push", "s", 1000, event("x2", "r1", 30)),
        ("push", "s", 1000, event("x3", "r2", 10)),
        ("push", "s", 2000, event("x1", "r1", 40)),
    ]
    assert run(query, steps, mode=mode) == [
        (1000, [("20", "r1")]),
        (1000, [("25", "r1")]),
        (1000, [("10", "r2"), ("25", "r1")]),
        (2000, [("40", "r1")]),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_now_in_a_periodic_query_is_empty_at_every_close(mode):
    # The event that triggers a close comes after it: at close c, [NOW] holds nothing of t < c.
    query = (
        "SELECT ?x ?y WHERE { STREAM :s [NOW] { ?x :value ?v } "
        "OPTIONAL { STREAM :s [RANGE 20ms SLIDE 10ms] { ?y :value ?w } } }"
    )
    steps = [("push", "s", t, reading(f"e{t}", t)) for t in (0, 10, 10, 25)]
    assert run(query, steps, mode=mode) == [(10, []), (20, [])]


# --------------------------------------------------------------------------- STREAM ?var

OBSERVES = "".join(f"<{EX}sensor-{s}> <{EX}observes> <{EX}{s}> .\n" for s in ("a", "b"))
OBSERVED = "SELECT ?sensor ?stream ?v WHERE { ?sensor :observes ?stream . STREAM ?stream [NOW] { ?sensor :value ?v } }"


def pushes(*streams_and_times: tuple[str, int]) -> list[tuple]:
    """An event per ``(stream, time)``: the stream's sensor reads the time, and so does the sensor of c."""
    return [
        ("push", stream, t, reading(f"sensor-{stream}", t) + "\n" + reading("sensor-c", t))
        for stream, t in streams_and_times
    ]


@pytest.mark.parametrize("mode", MODES)
def test_static_data_restricts_the_streams_read(mode):
    # a and b are observed, c is not: its events never reach the query (no evaluation at 3).
    steps = pushes(("a", 1), ("b", 2), ("c", 3), ("a", 4))
    assert run(OBSERVED, steps, OBSERVES, mode=mode) == [
        (1, [("sensor-a", "a", "1")]),
        (2, [("sensor-b", "b", "2")]),
        (4, [("sensor-a", "a", "4")]),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_static_change_routes_the_stream_it_names(mode):
    steps = [*pushes(("a", 1), ("c", 2)), ("update", "INSERT DATA { :sensor-c :observes :c }"), *pushes(("c", 3), ("a", 4))]
    assert run(OBSERVED, steps, OBSERVES, mode=mode) == [
        (1, [("sensor-a", "a", "1")]),
        (3, [("sensor-c", "c", "3")]),
        (4, [("sensor-a", "a", "4")]),
    ]
    # And the routing follows a stream leaving the static data too.
    steps = [*pushes(("a", 1)), ("update", "DELETE DATA { :sensor-a :observes :a }"), *pushes(("a", 2), ("b", 3))]
    assert run(OBSERVED, steps, OBSERVES, mode=mode) == [(1, [("sensor-a", "a", "1")]), (3, [("sensor-b", "b", "3")])]


@pytest.mark.parametrize("mode", MODES)
def test_a_free_stream_variable_reads_every_stream(mode):
    # Streams first seen after registration included; the same triple on two streams is two rows.
    query = "SELECT ?stream ?x ?v WHERE { STREAM ?stream [RANGE 10ms] { ?x :value ?v } }"
    steps = [
        ("push", "a", 1, reading("x", 1)),
        ("push", "b", 2, reading("x", 1)),
        ("push", "a", 12, reading("y", 2)),
    ]
    assert run(query, steps, mode=mode) == [
        (1, [("a", "1", "x")]),
        (2, [("a", "1", "x"), ("b", "1", "x")]),
        (12, [("a", "2", "y")]),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_variable_joins_other_patterns(mode):
    # ?s is the stream of the reading and the subject of a triple of another stream.
    query = (
        "SELECT ?s ?v ?where WHERE { STREAM ?s [NOW] { ?x :value ?v } "
        "STREAM :registry [ALL] { ?s :placed ?where } }"
    )
    steps = [
        ("push", "registry", 1, f"<{EX}a> <{EX}placed> <{EX}hall> ."),
        ("push", "a", 2, reading("x", 7)),
        ("push", "b", 2, reading("x", 8)),
    ]
    # The registry's own event: no stream named :registry is placed. b is not placed anywhere.
    assert run(query, steps, mode=mode) == [(1, []), (2, [("a", "7", "hall")]), (2, [("a", "7", "hall")])]


@pytest.mark.parametrize("mode", MODES)
def test_a_triple_naming_the_stream_variable_must_hold_the_stream(mode):
    query = "SELECT ?s ?v WHERE { STREAM ?s [ALL] { ?s :value ?v } }"
    steps = [("push", "a", 1, reading("a", 1) + "\n" + reading("b", 2)), ("push", "b", 2, reading("b", 3))]
    assert run(query, steps, mode=mode) == [(1, [("a", "1")]), (2, [("a", "1"), ("b", "3")])]


@pytest.mark.parametrize("mode", MODES)
def test_a_count_window_keeps_the_last_triples_of_each_stream(mode):
    query = "SELECT ?s ?v WHERE { STREAM ?s [TRIPLES 1] { ?x :value ?v } }"
    steps = [("push", "a", 1, reading("x", 1)), ("push", "b", 2, reading("x", 2)), ("push", "a", 3, reading("x", 3))]
    assert run(query, steps, mode=mode) == [(1, [("a", "1")]), (2, [("a", "1"), ("b", "2")]), (3, [("a", "3"), ("b", "2")])]


@pytest.mark.parametrize("mode", MODES)
def test_values_restricts_a_stream_variable_and_a_lagging_stream_keeps_its_times(mode):
    query = "SELECT ?s ?v WHERE { VALUES ?s { :a :b } STREAM ?s [RANGE 5ms] { ?x :value ?v } }"
    steps = [
        ("push", "a", 10, reading("x", 1)),
        ("push", "c", 11, reading("x", 2)),  # not read: no evaluation
        ("push", "b", 7, reading("x", 3)),  # b lags at the query's clock 10: 5 < 7 ≤ 10 holds it
        ("push", "b", 20, reading("x", 4)),
    ]
    assert run(query, steps, mode=mode) == [(10, [("a", "1")]), (10, [("a", "1"), ("b", "3")]), (20, [("b", "4")])]


def test_explain_shows_the_stream_variable_and_what_restricts_it():
    engine = Engine(store=open_store())
    try:
        incremental = engine.register(PREFIX + OBSERVED)
        text = incremental.explain()
        assert "stream windows ?stream [NOW]" in text
        assert "a window buffer per stream, ?stream its IRI, reading the streams C1 name" in text
        assert "window 0 on ?stream (the streams its static data names)" in text
        free = engine.register(PREFIX + "SELECT * WHERE { STREAM ?s [NOW] { ?x :value ?v } }", mode="recompute")
        assert "on ?s (every stream; 0 read so far)" in free.explain()
        engine.push(EX + "a", reading("x", 1), time=1)
        assert "on ?s (every stream; 1 read so far)" in free.explain()
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "SELECT * WHERE { STREAM ?s [NOW] { ?e :value ?v . ?f :other ?w } FILTER(SEQ(?e ; ?f)) }",
            "a SEQ step over STREAM ?s is not supported",
        ),
        ("SELECT * WHERE { STREAM ?s [PAST 5s FUTURE 5s] { ?e :value ?v } }", "a directional window in a query reading STREAM ?s"),
        ("SELECT * WHERE { STREAM ?s [RANGE 5s LATENESS 1s] { ?e :value ?v } }", "LATENESS in a query reading STREAM ?s"),
    ],
)
def test_what_a_stream_variable_cannot_run_is_refused_in_both_modes(query, message):
    engine = Engine()
    try:
        for mode in MODES:
            with pytest.raises(PlanError, match=re.escape(message)):
                engine.register(PREFIX + query, mode=mode)
    finally:
        engine.close()


def test_a_path_over_a_stream_variable_runs_by_re_evaluation():
    query = "SELECT ?s ?x ?y WHERE { STREAM ?s [ALL] { ?x :next+ ?y } }"
    with pytest.raises(PlanError, match=r"a property path over STREAM \?s .*mode=\"recompute\""):
        run(query, [])
    steps = [("push", "a", 1, f"<{EX}x> <{EX}next> <{EX}y> ."), ("push", "b", 2, f"<{EX}y> <{EX}next> <{EX}z> .")]
    # Each stream's window is a graph of its own: no path runs from x to z.
    assert run(query, steps, mode="recompute") == [(1, [("a", "x", "y")]), (2, [("a", "x", "y"), ("b", "y", "z")])]


def test_instances_of_a_template_naming_their_stream_run_plans_of_their_own():
    engine = Engine(store=open_store())
    try:
        template = engine.template(PREFIX + "# @param ?s\nSELECT ?v WHERE { STREAM ?s [NOW] { ?x :value ?v } }")
        instances = [("first", {"s": ox.NamedNode(EX + "a")}), ("second", {"s": ox.NamedNode(EX + "b")})]
        first, second = engine.register_instances(template, instances, r2s="RSTREAM")
        assert first.unshared is not None and "STREAM ?s" in first.unshared
        seen: dict[str, list] = {first.name: [], second.name: []}
        for query in (first, second):
            query.subscribe(lambda e, name=query.name: seen[name].append((e.time, [row["v"].value for row in e.rows])))
        engine.push(EX + "a", reading("x", 1), time=1)
        engine.push(EX + "b", reading("x", 2), time=2)
        # Each instance reads its own stream and is evaluated at its events only.
        assert seen == {first.name: [(1, ["1"])], second.name: [(2, ["2"])]}
    finally:
        engine.close()
