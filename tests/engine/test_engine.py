"""The Engine API (issue 4 contract): registration, input conversion, R2S, emissions, static data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pyoxigraph as ox
import pytest
import rdflib

from cqels_endpoint import Engine
from cqels_endpoint.engine import UnknownQueryError
from cqels_endpoint.errors import LateEventError, PlanError, QuerySyntaxError, RdfSyntaxError
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.testing import ManualClock

EX = "http://ex.org/"
S = EX + "s"
AT = f"<{EX}at>"
SELECT_AT = f"SELECT ?who ?room WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who {AT} ?room }} }}"


def nt(who: str, room: str) -> str:
    return f"<{EX}{who}> {AT} <{EX}{room}> ."


def collect(query):
    emissions = []
    query.subscribe(emissions.append)
    return emissions


def names(rows, var="who"):
    return sorted(row[var].value.removeprefix(EX) for row in rows)


def engine_with(text=SELECT_AT, **options):
    engine = Engine(clock=options.pop("clock", None), lateness_ms=options.pop("lateness_ms", 0))
    query = engine.register(text, mode="recompute", **options)
    return engine, query, collect(query)


# --------------------------------------------------------------------------- input conversion


def test_pyoxigraph_rdflib_and_text_inputs_are_the_same_event():
    triple = ox.Triple(ox.NamedNode(EX + "ann"), ox.NamedNode(EX + "at"), ox.NamedNode(EX + "hall"))
    rdflib_triple = (rdflib.URIRef(EX + "ann"), rdflib.URIRef(EX + "at"), rdflib.URIRef(EX + "hall"))
    graph = rdflib.Graph()
    graph.add(rdflib_triple)
    turtle = f"@prefix ex: <{EX}> .\nex:ann ex:at ex:hall ."
    for data in (triple, [triple], rdflib_triple, [rdflib_triple], graph, nt("ann", "hall"), turtle, turtle.encode()):
        engine, _query, emissions = engine_with()
        engine.push(S, data, time=1)
        assert [names(e.rows) for e in emissions] == [["ann"]], data
        assert emissions[0].rows[0]["room"] == ox.NamedNode(EX + "hall")


def test_rdflib_literals_and_blank_nodes_convert():
    engine, _query, emissions = engine_with(f"SELECT ?v WHERE {{ STREAM <{S}> [NOW] {{ ?x {AT} ?v }} }}")
    engine.push(S, [(rdflib.BNode(), rdflib.URIRef(EX + "at"), rdflib.Literal(5))], time=1)
    engine.push(S, [(rdflib.URIRef(EX + "a"), rdflib.URIRef(EX + "at"), rdflib.Literal("hi", lang="en"))], time=2)
    assert emissions[0].rows[0]["v"] == ox.Literal("5", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
    assert emissions[1].rows[0]["v"] == ox.Literal("hi", language="en")


def test_malformed_text_names_the_line_and_applies_nothing():
    engine, _query, emissions = engine_with()
    with pytest.raises(RdfSyntaxError) as caught:
        engine.push(S, nt("ann", "hall") + "\n<http://ex.org/bob> <http://ex.org/at> .\n", time=1)
    assert caught.value.line == 2
    assert "line 2" in str(caught.value) and "<http://ex.org/bob> <http://ex.org/at> ." in str(caught.value)
    assert emissions == [] and S not in engine.streams.clocks
    engine.push(S, nt("ann", "hall"), time=0)  # the clock did not move
    assert len(emissions) == 1


def test_datetime_timestamps():
    engine, query, emissions = engine_with()
    engine.push(S, nt("ann", "hall"), time=datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC))
    engine.push(S, nt("bob", "hall"), time=datetime(2024, 1, 1, 13, 0, 0, 5000, tzinfo=timezone(timedelta(hours=1))))
    engine.push(S, nt("cat", "hall"), time=datetime(2024, 1, 1, 12, 0, 0, 9000))  # naive: UTC
    base = int(datetime(2024, 1, 1, 12, tzinfo=UTC).timestamp() * 1000)
    assert [e.time for e in emissions] == [base, base + 5, base + 9]
    assert names(query.snapshot()) == ["ann", "bob", "cat"]


def test_no_time_means_arrival_time():
    clock = ManualClock(1000)
    engine, query, emissions = engine_with(clock=clock)
    engine.push(S, nt("ann", "hall"))
    clock.advance(20)
    engine.push(S, nt("bob", "hall"))
    assert [(e.time, names(e.rows)) for e in emissions] == [(1000, ["ann"]), (1020, ["bob"])]
    assert names(query.snapshot()) == ["bob"]  # ann (1000) left the 10 ms window at 1020


def test_stream_named_by_any_iri_form():
    engine, _query, emissions = engine_with()
    engine.push(ox.NamedNode(S), nt("ann", "hall"), time=1)
    engine.push(rdflib.URIRef(S), nt("bob", "hall"), time=2)
    assert len(emissions) == 2
    with pytest.raises(ValueError, match="absolute IRI"):
        engine.push("not an iri", nt("bob", "hall"), time=3)


# --------------------------------------------------------------------------- streams and lateness


def test_late_event_is_rejected_counted_and_named():
    engine, query, emissions = engine_with()
    engine.push(S, nt("ann", "hall"), time=10)
    with pytest.raises(LateEventError) as caught:
        engine.push(S, nt("bob", "hall"), time=9)
    error = caught.value
    assert (error.stream, error.time, error.watermark) == (S, 9, 10)
    assert S in str(error) and "9" in str(error) and "lateness_ms" in str(error)
    assert engine.late_events(S) == 1
    assert names(query.snapshot()) == ["ann"] and len(emissions) == 1
    engine.push(S, nt("bob", "hall"), time=10)  # equal timestamps are fine
    assert engine.late_events(S) == 1 and names(query.snapshot()) == ["ann", "bob"]


def test_lateness_buffers_per_stream_and_advance_releases():
    engine, query, emissions = engine_with(lateness_ms=5)
    engine.push(S, nt("ann", "hall"), time=10)  # watermark 5: buffered
    engine.push(EX + "other", nt("x", "y"), time=1)  # another stream, its own clock
    assert emissions == [] and engine.streams.clocks[S].buffered == 1
    engine.push(S, nt("bob", "hall"), time=5)  # not late (5 >= 5) and released at once
    with pytest.raises(LateEventError):
        engine.push(S, nt("cat", "hall"), time=4)
    assert [(e.time, names(e.rows)) for e in emissions] == [(5, ["bob"])]
    engine.advance(20)  # releases ann (10), then evaluates at 20
    assert [(e.time, names(e.rows)) for e in emissions] == [(5, ["bob"]), (10, ["ann"])]
    assert query.snapshot() == []


# --------------------------------------------------------------------------- registration


def test_register_names_r2s_and_modes():
    engine = Engine()
    first = engine.register(SELECT_AT, mode="recompute")
    second = engine.register(SELECT_AT, mode="recompute")
    assert (first.name, second.name, first.r2s) == ("q1", "q2", "ISTREAM")
    registered = engine.register(f"REGISTER RSTREAM <{EX}out> AS {SELECT_AT}", mode="recompute")
    assert (registered.name, registered.r2s) == (EX + "out", "RSTREAM")
    overridden = engine.register(f"REGISTER RSTREAM <{EX}out2> AS {SELECT_AT}", mode="recompute", r2s="dstream")
    assert overridden.r2s == "DSTREAM"
    with pytest.raises(ValueError, match="already registered"):
        engine.register(SELECT_AT, name="q1", mode="recompute")
    with pytest.raises(ValueError, match="r2s"):
        engine.register(SELECT_AT, r2s="XSTREAM", mode="recompute")
    with pytest.raises(ValueError, match="mode"):
        engine.register(SELECT_AT, mode="magic")
    with pytest.raises(QuerySyntaxError):
        engine.register("SELECT ?x WHERE { STREAM <s> [RANGE 1s] { ?x ?y } }", mode="recompute")
    with pytest.raises(PlanError, match="reads at least one stream"):
        engine.register("SELECT * WHERE { ?s ?p ?o }", mode="recompute")
    with pytest.raises(PlanError, match="a SELECT, a CONSTRUCT or an ASK"):
        engine.register(f"DESCRIBE ?s {{ STREAM <{S}> [NOW] {{ ?s ?p ?o }} }}", mode="recompute")
    assert set(engine.queries) == {"q1", "q2", EX + "out", EX + "out2"}


def test_unregister_subscribe_and_unsubscribe():
    engine, query, emissions = engine_with()
    other = []
    unsubscribe = query.subscribe(other.append)
    engine.push(S, nt("ann", "hall"), time=1)
    unsubscribe()
    engine.push(S, nt("bob", "hall"), time=2)
    assert (len(emissions), len(other)) == (2, 1)
    engine.unregister(query.name)
    engine.push(S, nt("cat", "hall"), time=3)
    assert len(emissions) == 2
    with pytest.raises(UnknownQueryError, match="q1"):
        engine.unregister(query.name)


def test_a_failing_callback_does_not_starve_the_others():
    engine, query, emissions = engine_with()

    def broken(emission):
        raise RuntimeError("subscriber bug")

    query.subscribe(broken)
    later = collect(query)
    with pytest.raises(RuntimeError, match="subscriber bug"):
        engine.push(S, nt("ann", "hall"), time=1)
    assert len(emissions) == len(later) == 1
    assert names(query.snapshot()) == ["ann"]


# --------------------------------------------------------------------------- R2S


EVENTS = [(1, "ann"), (5, "bob"), (12, "cat")]  # RANGE 10ms: ann leaves at 11, bob at 15


def r2s_run(r2s):
    engine, _query, emissions = engine_with(r2s=r2s)
    for time, who in EVENTS:
        engine.push(S, nt(who, "hall"), time=time)
    engine.advance(15)
    return [(e.time, e.r2s, names(e.rows)) for e in emissions]


def test_istream():
    assert r2s_run("ISTREAM") == [(1, "ISTREAM", ["ann"]), (5, "ISTREAM", ["bob"]), (12, "ISTREAM", ["cat"])]


def test_dstream():
    assert r2s_run("DSTREAM") == [(12, "DSTREAM", ["ann"]), (15, "DSTREAM", ["bob"])]


def test_rstream_emits_every_evaluation():
    assert r2s_run("RSTREAM") == [
        (1, "RSTREAM", ["ann"]),
        (5, "RSTREAM", ["ann", "bob"]),
        (12, "RSTREAM", ["bob", "cat"]),
        (15, "RSTREAM", ["cat"]),
    ]


def test_istream_is_a_bag_difference():
    # Two copies of a row: one more copy is an insertion even though the row was already there.
    text = f"SELECT ?room WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who {AT} ?room }} }}"
    engine, query, emissions = engine_with(text)
    engine.push(S, nt("ann", "hall"), time=1)
    engine.push(S, nt("bob", "hall"), time=2)
    assert [len(e.rows) for e in emissions] == [1, 1]
    assert len(query.snapshot()) == 2


def test_same_triple_twice_stays_until_both_copies_leave():
    engine, query, _emissions = engine_with(r2s="RSTREAM")
    engine.push(S, nt("ann", "hall"), time=1)
    engine.push(S, nt("ann", "hall"), time=6)
    engine.advance(12)  # the copy from 1 left, the one from 6 is still there
    assert names(query.snapshot()) == ["ann"]
    engine.advance(16)
    assert query.snapshot() == []


def test_emission_json_and_ntriples():
    engine, query, emissions = engine_with(f"SELECT ?who ?n WHERE {{ STREAM <{S}> [NOW] {{ ?who {AT} ?n }} }}")
    engine.push(S, f'<{EX}ann> {AT} "x"@en . _:b {AT} 3 . <{EX}cat> {AT} "plain" .', time=7)
    body = emissions[0].to_sparql_json()
    assert body["head"] == {"vars": ["who", "n"]}
    values = sorted(body["results"]["bindings"], key=lambda b: b["n"]["value"])
    assert values[0]["n"] == {"type": "literal", "value": "3", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}
    assert values[0]["who"]["type"] == "bnode"
    assert values[1] == {"who": {"type": "uri", "value": EX + "cat"}, "n": {"type": "literal", "value": "plain"}}
    assert values[2]["n"] == {"type": "literal", "value": "x", "xml:lang": "en"}
    assert emissions[0].to_json()["time"] == 7 and emissions[0].to_json()["query"] == query.name
    with pytest.raises(TypeError, match="to_sparql_json"):
        emissions[0].to_ntriples()


def test_construct_on_istream_rows_with_fresh_blank_nodes_and_ill_formed_triples_skipped():
    text = (
        f"CONSTRUCT {{ _:n <{EX}about> ?who . _:n <{EX}room> ?room . ?room <{EX}has> ?who . ?v <{EX}bad> ?who }} "
        f"WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who {AT} ?room }} OPTIONAL {{ STREAM <{S}> [NOW] {{ ?who <{EX}v> ?v }} }} }}"
    )
    engine, _query, emissions = engine_with(text)
    engine.push(S, f'{nt("ann", "hall")} {nt("bob", "hall")} <{EX}ann> <{EX}v> "lit" .', time=1)
    triples = emissions[0].triples
    about = [t for t in triples if t.predicate.value == EX + "about"]
    assert len(about) == 2 and about[0].subject != about[1].subject  # a fresh blank node per row
    assert all(isinstance(t.subject, ox.BlankNode) for t in about)
    assert not any(t.predicate.value == EX + "bad" for t in triples)  # "lit" as a subject is skipped
    assert len(triples) == 6
    text_form = emissions[0].to_ntriples()
    assert text_form.count(" .\n") == 6 and f"<{EX}hall> <{EX}has> <{EX}ann> .\n" in text_form
    assert emissions[0].to_json()["triples"] == text_form
    with pytest.raises(TypeError, match="to_ntriples"):
        emissions[0].to_sparql_json()


def test_construct_under_dstream_uses_the_dstream_rows():
    text = f"CONSTRUCT {{ ?who <{EX}left> ?room }} WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who {AT} ?room }} }}"
    engine, _query, emissions = engine_with(text, r2s="DSTREAM")
    engine.push(S, nt("ann", "hall"), time=1)
    engine.advance(11)
    assert [(e.time, e.to_ntriples()) for e in emissions] == [(11, f"<{EX}ann> <{EX}left> <{EX}hall> .\n")]


def test_select_modifiers_apply_to_gamma():
    text = (
        f"SELECT DISTINCT ?room WHERE {{ STREAM <{S}> [ALL] {{ ?who {AT} ?room }} }} ORDER BY DESC(?room) LIMIT 2"
    )
    engine, _query, emissions = engine_with(text, r2s="RSTREAM")
    for time, (who, room) in enumerate([("a", "r1"), ("b", "r1"), ("c", "r3"), ("d", "r2")]):
        engine.push(S, nt(who, room), time=time)
    assert [r["room"].value for r in emissions[-1].rows] == [EX + "r3", EX + "r2"]


# --------------------------------------------------------------------------- static data


def test_static_data_from_a_static_store_and_its_changes():
    store = open_store()
    store.update(f"INSERT DATA {{ <{EX}hall> <{EX}name> \"Hall\" }}")
    engine = Engine(store)
    text = f"SELECT ?who ?name WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who {AT} ?room }} ?room <{EX}name> ?name }}"
    query = engine.register(text, mode="recompute", r2s="RSTREAM")
    emissions = collect(query)
    engine.push(S, nt("ann", "hall"), time=1)
    store.update(f"DELETE DATA {{ <{EX}hall> <{EX}name> \"Hall\" }}; INSERT DATA {{ <{EX}hall> <{EX}name> \"Main hall\" }}")
    assert len(emissions) == 1  # a static change alone emits nothing
    engine.advance(2)
    assert [[r["name"].value for r in e.rows] for e in emissions] == [["Hall"], ["Main hall"]]


def test_a_pyoxigraph_store_is_read_in_place():
    store = ox.Store()
    store.add(ox.Quad(ox.NamedNode(EX + "hall"), ox.NamedNode(EX + "name"), ox.Literal("Hall"), ox.NamedNode(EX + "g")))
    engine = Engine(store)
    text = f"SELECT ?name WHERE {{ STREAM <{S}> [NOW] {{ ?who {AT} ?room }} GRAPH <{EX}g> {{ ?room <{EX}name> ?name }} }}"
    query = engine.register(text, mode="recompute")
    emissions = collect(query)
    engine.push(S, nt("ann", "hall"), time=1)
    assert emissions[0].rows == [{"name": ox.Literal("Hall")}]


def test_graph_variables_never_range_over_window_graphs():
    store = open_store()
    store.update(f"INSERT DATA {{ GRAPH <{EX}g> {{ <{EX}hall> <{EX}name> \"Hall\" }} }}")
    engine = Engine(store)
    text = f"SELECT ?g WHERE {{ STREAM <{S}> [NOW] {{ ?who {AT} ?room }} GRAPH ?g {{ ?x ?p ?y }} }}"
    query = engine.register(text, mode="recompute", r2s="RSTREAM")
    engine.push(S, nt("ann", "hall"), time=1)
    assert query.snapshot() == [{"g": ox.NamedNode(EX + "g")}]


def test_from_named_keeps_sparql_dataset_semantics():
    store = open_store()
    store.update(f"INSERT DATA {{ <{EX}ann> <{EX}name> \"Ann\" . GRAPH <{EX}g> {{ <{EX}hall> <{EX}name> \"Hall\" }} }}")
    engine = Engine(store)
    # FROM NAMED alone: the default graph is empty (SPARQL 1.1 §13.2), so ?who ex:name never matches.
    body = f"WHERE {{ STREAM <{S}> [NOW] {{ ?who {AT} ?room }} GRAPH <{EX}g> {{ ?room <{EX}name> ?r }} OPTIONAL {{ ?who <{EX}name> ?n }} }}"
    query = engine.register(f"SELECT ?r ?n FROM NAMED <{EX}g> {body}", mode="recompute", r2s="RSTREAM")
    with_default = engine.register(f"SELECT ?r ?n FROM <{EX}g> FROM NAMED <{EX}g> {body}", mode="recompute", r2s="RSTREAM")
    engine.push(S, nt("ann", "hall"), time=1)
    assert query.snapshot() == [{"r": ox.Literal("Hall")}]
    assert with_default.snapshot() == [{"r": ox.Literal("Hall")}]


def test_explain_shows_windows_and_counters():
    engine, query, _emissions = engine_with()
    engine.push(S, nt("ann", "hall"), time=1)
    text = query.explain()
    assert "query q1 (recompute, ISTREAM, cqels, eager" in text and "1 triple(s)" in text and "urn:cqels:window:q1:0" in text


# --------------------------------------------------------------------------- the oracle itself


def test_multi_triple_stream_blocks_read_one_window_per_triple_pattern():
    # [TRIPLES 1] applies to each triple pattern: the last ?x :at triple and the last ?x :v triple,
    # joined on ?x (a blank node of the pattern is a variable shared by both).
    text = f"SELECT ?room ?v WHERE {{ STREAM <{S}> [TRIPLES 1] {{ _:x {AT} ?room . _:x <{EX}v> ?v }} }}"
    engine, _query, emissions = engine_with(text, r2s="RSTREAM")
    engine.push(S, f'{nt("ann", "hall")} <{EX}ann> <{EX}v> 1 .', time=1)
    engine.push(S, nt("bob", "kitchen"), time=2)  # the :at window now holds bob alone: no join
    engine.push(S, f'<{EX}bob> <{EX}v> 2 .', time=3)
    assert [[(r["room"].value, r["v"].value) for r in e.rows] for e in emissions] == [
        [(EX + "hall", "1")],
        [],
        [(EX + "kitchen", "2")],
    ]


def test_from_stream_dataset_windows():
    engine = Engine()
    text = f"SELECT ?who FROM STREAM <{S}> [RANGE 5ms] WHERE {{ ?who {AT} ?room . ?room <{EX}kind> <{EX}Hall> }}"
    query = engine.register(text, mode="recompute", r2s="RSTREAM")
    emissions = collect(query)
    engine.push(S, f"{nt('ann', 'h1')} <{EX}h1> <{EX}kind> <{EX}Hall> .", time=1)
    engine.push(S, nt("bob", "h1"), time=3)
    engine.push(S, nt("cat", "h1"), time=7)  # the :kind triple (1) left the 5 ms window
    assert [names(e.rows) for e in emissions] == [["ann"], ["ann", "bob"], []]


def test_gamma_equals_pyoxigraph_on_the_window_contents():
    # The oracle, checked against a store built by hand with the window contents at τ = 12.
    text = (
        f"SELECT ?who (COUNT(?room) AS ?n) WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who {AT} ?room }} "
        f"FILTER NOT EXISTS {{ STREAM <{S}> [NOW] {{ ?who <{EX}left> ?room }} }} }} GROUP BY ?who"
    )
    engine, _query, emissions = engine_with(text, r2s="RSTREAM")
    pushes = [(1, nt("ann", "a")), (5, nt("ann", "b")), (6, nt("bob", "a")), (12, f"{nt('bob', 'c')} <{EX}bob> <{EX}left> <{EX}a> .")]
    for time, data in pushes:
        engine.push(S, data, time=time)
    store = ox.Store()
    window, now = ox.NamedNode("urn:w"), ox.NamedNode("urn:now")
    for time, data in pushes:
        for quad in ox.parse(input=data, format=ox.RdfFormat.TURTLE):
            if time > 2 and quad.predicate.value == EX + "at":
                store.add(ox.Quad(quad.subject, quad.predicate, quad.object, window))
            if time == 12 and quad.predicate.value == EX + "left":
                store.add(ox.Quad(quad.subject, quad.predicate, quad.object, now))
    expected = store.query(
        f"SELECT ?who (COUNT(?room) AS ?n) WHERE {{ GRAPH <urn:w> {{ ?who {AT} ?room }} "
        f"FILTER NOT EXISTS {{ GRAPH <urn:now> {{ ?who <{EX}left> ?room }} }} }} GROUP BY ?who"
    )
    as_rows = sorted((s["who"].value, s["n"].value) for s in expected)
    assert as_rows == [(EX + "ann", "1"), (EX + "bob", "1")]
    assert sorted((r["who"].value, r["n"].value) for r in emissions[-1].rows) == as_rows


def test_engine_close_unregisters_everything():
    store = open_store()
    engine = Engine(store)
    engine.register(SELECT_AT, mode="recompute")
    engine.close()
    assert engine.queries == {}
    store.update(f"INSERT DATA {{ <{EX}a> <{EX}b> <{EX}c> }}")  # no longer observed: nothing to do


def test_periodic_query_with_origin_closes_on_advance_alone():
    text = f"SELECT ?who WHERE {{ STREAM <{S}> [RANGE 10ms SLIDE 5ms] {{ ?who {AT} ?room }} }}"
    engine, query, emissions = engine_with(text, r2s="RSTREAM", origin_ms=100)
    engine.advance(112)  # no event yet: the given origin still defines the closes 105, 110
    assert [(e.time, e.rows) for e in emissions] == [(105, []), (110, [])]
    assert "periodic, origin 100, next close 115" in query.explain()
    engine.push(S, nt("ann", "hall"), time=113)
    engine.advance(115)
    assert [(e.time, names(e.rows)) for e in emissions][2:] == [(115, ["ann"])]


def test_a_declared_stream_drives_a_query_whose_patterns_are_all_static():
    """``FROM STREAM`` makes a query continuous even when its patterns only read named static
    graphs: it reports on that stream's events (at its windows' closes when they slide), in both
    modes alike, and ignores other streams."""
    store = open_store()
    store.update(f"INSERT DATA {{ GRAPH <{EX}g> {{ <{EX}a> <{EX}p> 1 }} }}")
    engine = Engine(store=store)
    eager = f"SELECT * FROM STREAM <{S}> [RANGE 10s] FROM NAMED <{EX}g> WHERE {{ GRAPH ?g {{ ?x ?p ?o }} }}"
    periodic = eager.replace("[RANGE 10s]", "[RANGE 10s SLIDE 5s]")
    logs = {}
    for name, text in (("eager", eager), ("periodic", periodic)):
        for mode in ("incremental", "recompute"):
            logs[name, mode] = collect(engine.register(text, name=f"{name}-{mode}", r2s="RSTREAM", mode=mode))
    engine.push(f"{EX}other", nt("bob", "hall"), time=500)
    engine.push(S, nt("bob", "hall"), time=1000)
    engine.push(S, nt("bob", "hall"), time=7000)
    times = {key: [e.time for e in log] for key, log in logs.items()}
    assert times["eager", "incremental"] == times["eager", "recompute"] == [1000, 7000]
    assert times["periodic", "incremental"] == times["periodic", "recompute"] == [6000]
    rows = [(row["x"].value, row["g"].value) for row in logs["eager", "incremental"][0].rows]
    assert rows == [(f"{EX}a", f"{EX}g")]
    assert logs["eager", "incremental"][-1].rows == logs["eager", "recompute"][-1].rows


def test_a_triple_reaches_the_patterns_of_its_predicate_and_those_of_any():
    """Routing by predicate: constant-predicate, variable-predicate and path patterns of one
    stream each get exactly the triples they match, in both modes."""
    text = (
        f"SELECT ?s ?p ?x ?y WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?s ?p ?o . ?s <{EX}a> ?x . ?s <{EX}b>/<{EX}c> ?y }} }}"
    )
    engine = Engine()
    try:
        queries = {mode: engine.register(text, mode=mode, r2s="RSTREAM") for mode in ("incremental", "recompute")}
        for time, (p, o) in enumerate([("a", "1"), ("b", "m"), ("z", "0")], start=1):
            engine.push(S, f"<{EX}s> <{EX}{p}> <{EX}{o}> .", time=time)
        engine.push(S, f"<{EX}m> <{EX}c> <{EX}end> .", time=4)
        rows = {mode: sorted(tuple(str(r[v]) for v in ("p", "x", "y")) for r in q.snapshot()) for mode, q in queries.items()}
    finally:
        engine.close()
    assert rows["incremental"] == rows["recompute"]
    assert rows["incremental"] == sorted((f"<{EX}{p}>", f"<{EX}1>", f"<{EX}end>") for p in ("a", "b", "z"))
