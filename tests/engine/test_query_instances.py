"""Templates and instances: ``# @param`` lines, ``POST /queries/{name}/instances``, each instance
equal to the separately registered substituted query (the oracle), and instances sharing their
window states and static cache builds in the engine."""

from __future__ import annotations

import json

import pytest

from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.query.parameters import declared_parameters
from tests.stored_queries import (
    LV,
    RFID,
    TEMPLATE,
    collect,
    engine_of,
    floorplan_endpoint,
    normalised,
    person,
    push,
    rfid_events,
    sparql_query,
    substituted,
    values_first,
)

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def live(endpoint_factory):
    return floorplan_endpoint(endpoint_factory)


def uri(value: str) -> dict:
    return {"type": "uri", "value": value}


def post_instances(live, name: str, body) -> object:
    return live.post(f"/queries/{name}/instances", body=json.dumps(body), headers=JSON)


# --------------------------------------------------------------------------- declaring parameters


def test_parameters_are_read_from_comment_lines() -> None:
    assert [p.name for p in declared_parameters(TEMPLATE)] == ["person"]
    assert [p.name for p in declared_parameters("  #@param ?a $b\n# @param ?c\nSELECT ...")] == ["a", "b", "c"]
    assert declared_parameters("# @params ?a\n# a @param ?b in prose\nSELECT") == ()


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ("SELECT *\n# @param\n", "names no variable", 2, 1),
        ("# @param ?ok person\n", "not 'person'", 1, 14),
        ("# @param ?a\n# @param ?a\n", "declared twice", 2, 10),
    ],
)
def test_bad_param_lines_are_syntax_errors(text, message, line, column) -> None:
    with pytest.raises(QuerySyntaxError, match=message) as caught:
        declared_parameters(text)
    assert (caught.value.lineno, caught.value.offset) == (line, column)


def test_a_template_is_stored_not_started(live) -> None:
    response = sparql_query(live, "where", TEMPLATE)
    assert response.status == 201, response.text
    body = response.json()
    assert (body["status"], body["parameters"], body["explain"], body["instances"]) == ("template", ["person"], None, [])
    assert "where" not in engine_of(live).queries


def test_a_parameter_missing_from_the_where_is_a_400_at_its_line(live) -> None:
    text = TEMPLATE.replace("# @param ?person", "# @param ?person ?nobody")
    error = sparql_query(live, "t", text).error(400)
    assert "?nobody does not occur in the WHERE" in error["error"]
    assert (error["line"], error["column"]) == (2, 18)


def test_a_template_that_cannot_be_planned_is_refused_at_put(live) -> None:
    text = "# @param ?x\nSELECT ?x WHERE { ?x <http://p> ?y }"
    assert "reads at least one stream" in sparql_query(live, "t", text).error(400)["error"]
    assert live.get("/queries/t").status == 404


# --------------------------------------------------------------------------- creating instances


def test_instances_are_named_by_number_or_as_given(live) -> None:
    sparql_query(live, "where", TEMPLATE)
    first = post_instances(live, "where", {"bindings": {"person": uri(person(1))}})
    assert first.status == 201, first.text
    assert [(i["name"], i["query"]) for i in first.json()["instances"]] == [("1", "where/1")]
    many = post_instances(live, "where", [
        {"bindings": {"person": uri(person(2))}},
        {"bindings": {"person": uri(person(3))}, "name": "carol"},
    ])
    assert [i["name"] for i in many.json()["instances"]] == ["2", "carol"]
    assert {"where/1", "where/2", "where/carol"} <= set(engine_of(live).queries)

    one = live.get("/queries/where/carol").json()
    assert one["bindings"] == {"person": uri(person(3))}
    assert "read once for the 3 instances of the shared plan" in one["explain"]
    assert "one operator graph for 3 instances" in one["explain"] and "instance table [?.instance ?person]" in one["explain"]
    details = live.get("/queries/where").json()
    assert [i["name"] for i in details["instances"]] == ["1", "2", "carol"]
    # Two stream triple patterns, three instances in one plan.
    assert details["sharing"] == {"window_states": 2, "plans": 1}

    assert live.delete("/queries/where/2").status == 204
    assert "where/2" not in engine_of(live).queries
    assert live.get("/queries/where/2").status == 404
    assert post_instances(live, "where", {"bindings": {"person": uri(person(4))}}).json()["instances"][0]["name"] == "3"


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"bindings": {}}, 400, "parameters not bound: ?person"),
        ({}, 400, '"bindings"'),
        ({"bindings": {"person": uri(person(1)), "loc": uri(LV + "lobby")}}, 400, "not parameters of 'where': ?loc"),
        ({"bindings": {"person": {"type": "bnode", "value": "b0"}}}, 400, "blank node cannot be pre-bound"),
        ({"bindings": {"person": uri("not an iri")}}, 400, "is not an IRI"),
        ({"bindings": {"person": "http://x"}}, 400, "must be an object"),
        ({"bindings": {"person": {"type": "triple", "value": "x"}}}, 400, "unknown term type"),
        ({"bindings": {"person": uri(person(1))}, "name": "results"}, 400, "instance name"),
        ([], 400, "empty"),
        ([{"bindings": {"person": uri(person(1))}}, {"bindings": {}}], 400, "instance 1: parameters not bound"),
        ([{"bindings": {"person": uri(person(1))}, "name": "a"}, {"bindings": {"person": uri(person(2))}, "name": "a"}],
         409, "already has an instance named 'a'"),
    ],
)
def test_bad_instances_create_nothing(live, body, status, needle) -> None:
    sparql_query(live, "where", TEMPLATE)
    before = set(engine_of(live).queries)
    response = post_instances(live, "where", body)
    assert needle in response.error(status)["error"]
    assert set(engine_of(live).queries) == before
    assert live.get("/queries/where").json()["instances"] == []


def test_instances_of_what_is_no_template(live) -> None:
    sparql_query(live, "plain", substituted(TEMPLATE, person(1)))
    response = post_instances(live, "plain", {"bindings": {"person": uri(person(1))}})
    assert "declares no parameters" in response.error(400)["error"]
    assert post_instances(live, "nothing", {"bindings": {}}).status == 404
    assert "not JSON" in live.post("/queries/plain/instances", body="{", headers=JSON).error(400)["error"]
    assert live.post("/queries/plain/instances", body="{}", headers={"Content-Type": "text/plain"}).status == 415


def test_a_literal_parameter(live) -> None:
    text = (
        "# @param ?name\nPREFIX lv: <http://deri.org/floorplan/>\nSELECT ?who FROM NAMED <http://deri.org/floorplan/>\n"
        "WHERE { STREAM <http://deri.org/streams/rfid> [RANGE 3s] { ?who lv:detectedAt ?loc }\n"
        "  GRAPH <http://deri.org/floorplan/> { ?loc lv:name ?name } }"
    )
    sparql_query(live, "by-room", text)
    created = post_instances(live, "by-room", {"bindings": {"name": {"type": "literal", "value": "Kitchen"}}})
    assert created.status == 201, created.text
    seen = collect(engine_of(live).queries["by-room/1"])
    push(live, [(10, f"<{person(1)}> <{LV}detectedAt> <{LV}kitchen> .\n"),
                (20, f"<{person(2)}> <{LV}detectedAt> <{LV}lobby> .\n")])
    assert [[row["who"].value for row in e.rows] for e in seen] == [[person(1)]]


# --------------------------------------------------------------------------- the oracle


def test_each_instance_equals_its_substituted_query(live) -> None:
    engine = engine_of(live)
    people = 6
    sparql_query(live, "where", TEMPLATE)
    response = post_instances(live, "where", [{"bindings": {"person": uri(person(i))}, "name": f"p{i}"} for i in range(people)])
    assert response.status == 201, response.text
    oracles = {i: engine.register(substituted(TEMPLATE, person(i)), f"oracle-{i}", mode="recompute") for i in range(people)}
    got = {i: collect(engine.queries[f"where/p{i}"]) for i in range(people)}
    expected = {i: collect(query) for i, query in oracles.items()}

    assert push(live, rfid_events(80, people=people + 2)).status == 200
    # A change of the static data reaches every instance through the one shared cache rebuild.
    response = live.update(f"INSERT DATA {{ GRAPH <{LV}> {{ <{LV}kitchen> <{LV}name> \"Galley\" }} }}")
    assert response.status == 204, response.text
    assert engine.wait_for_caches(10)
    assert push(live, rfid_events(40, people=people + 2, seed=8, start=60_000)).status == 200

    for i in range(people):
        assert expected[i], f"person {i} must have emissions, or the comparison proves nothing"
        assert normalised(got[i]) == normalised(expected[i]), f"instance p{i}"
    assert any("Galley" in str(e.rows) for i in range(people) for e in got[i])


# --------------------------------------------------------------------------- sharing


def test_a_thousand_instances_share_windows_and_caches(live) -> None:
    engine = engine_of(live)
    count = 1000
    sparql_query(live, "where", TEMPLATE)
    builds_before = engine.caches.build_counts()
    response = post_instances(live, "where", [{"bindings": {"person": uri(person(i))}} for i in range(count)])
    assert response.status == 201, response.text
    assert len(response.json()["instances"]) == count

    # One window state per stream triple pattern of the template, read once by the one operator
    # graph of all the instances.
    assert engine.shared_windows.stats() == {"windows": 2, "readers": 2}
    assert engine.plan_sharing() == {"plans": 1, "instances": count}
    assert live.get("/queries/where").json()["sharing"] == {"window_states": 2, "plans": 1}
    assert len({id(engine.queries[f"where/{i + 1}"].evaluator.group) for i in range(count)}) == 1
    # The floorplan cache is built once; the instances' parameters are rows of the plan's instance
    # table, not caches.
    builds = engine.caches.build_counts()
    assert builds["builds"] - builds_before["builds"] == 1
    assert builds["reused"] - builds_before["reused"] == 0
    floorplan = [s for s in engine.cache_stats() if s["query"].startswith("where#")]
    assert [s["rows"] for s in floorplan] == [6]

    # After a change, the floorplan cache is rebuilt once for all of them.
    live.update(f"INSERT DATA {{ GRAPH <{LV}> {{ <{LV}hall2> <{LV}name> \"Hall 2\" }} }}")
    assert engine.wait_for_caches(30)
    rebuilt = engine.caches.build_counts()
    assert (rebuilt["builds"] - builds["builds"], rebuilt["reused"] - builds["reused"]) == (1, 0)

    # The shared windows follow events once, and each instance still sees its own person only.
    seen = {i: collect(engine.queries[f"where/{i + 1}"]) for i in (0, 1)}
    events = [(5_000, f"<{person(0)}> <{LV}detectedAt> <{LV}lobby> .\n"),
              (5_100, f"<{person(1)}> <{LV}detectedAt> <{LV}lobby> .\n")]
    assert push(live, events).status == 200
    assert normalised(seen[0]) == [(5_000, "ISTREAM", [(("locName", '"Lobby"'), ("other", f"<{person(0)}>"))]),
                                   (5_100, "ISTREAM", [(("locName", '"Lobby"'), ("other", f"<{person(1)}>"))])]
    assert [e.time for e in seen[1]] == [5_100]
    explained = live.get("/queries/where/1").json()["explain"]
    assert "triple(s), state read once for the 1000 instances of the shared plan" in explained
    # Each window buffer and join index holds the two detections once, not once per instance.
    buffers = engine.queries["where/1"].evaluator.group.evaluator.built.buffers
    assert [len(buffer) for buffer in buffers.values()] == [2, 2]
    assert "index_sizes=[1000, 2, 2, 7]" in explained
    metrics = live.get("/metrics").text
    assert 'cqels_shared_plans{kind="plans"} 1' in metrics and f'cqels_shared_plans{{kind="instances"}} {count}' in metrics

    # Deleting the template stops every instance and lets the shared state go.
    assert live.delete("/queries/where").status == 204
    assert not [name for name in engine.queries if name.startswith("where/")]
    assert engine.shared_windows.stats() == {"windows": 0, "readers": 0}
    assert engine.plan_sharing() == {"plans": 0, "instances": 0}
    assert not [s for s in engine.cache_stats() if s["query"].startswith("where")]


@pytest.mark.parametrize("window", ["[RANGE 2s SLIDE 1s]", "[TRIPLES 3]", "[NOW]", "[RANGE 1500ms]"])
def test_shared_windows_replay_every_window_kind(window) -> None:
    """In the engine alone: instances registered together share window states whatever the window
    (periodic closes, count-based expiry, NOW) and answer as the same queries in another engine,
    unshared, in recompute mode — also after one of them leaves midway with log entries unread."""
    import pyoxigraph as ox

    from cqels_endpoint.engine import Engine
    from cqels_endpoint.oxigraph.requests import open_store
    from tests.stored_queries import FLOORPLAN

    template = TEMPLATE.replace("[RANGE 3s]", window)
    texts = [values_first(template, {"person": ox.NamedNode(person(i))}) for i in range(4)]
    store = open_store()
    store.load(str(FLOORPLAN))
    shared, alone = Engine(store, cache_engine="local"), Engine(store, cache_engine="local")
    try:
        instances = [shared.register(text, f"t/{i}") for i, text in enumerate(texts)]
        assert shared.shared_windows.stats() == {"windows": 2, "readers": 2 * 4}
        oracles = []
        for i, text in enumerate(texts):
            oracles.append(alone.register(text, f"o/{i}", mode="recompute"))
            alone.push(RFID, f"<{person(99)}> <{LV}detectedAt> <{LV}lobby> .", time=0)  # no two at one epoch
        assert alone.shared_windows.stats() == {"windows": 2 * 4, "readers": 2 * 4}
        shared.push(RFID, f"<{person(99)}> <{LV}detectedAt> <{LV}lobby> .", time=0)
        got, expected = [collect(q) for q in instances], [collect(q) for q in oracles]
        events = rfid_events(60, people=5, seed=11)
        for number, (time, data) in enumerate(events):
            if number == 30:
                shared.unregister("t/0")  # the leader of every shared window leaves
            for engine in (shared, alone):
                engine.push(RFID, data, time=time)
                if number % 7 == 0:
                    engine.advance(time)
        for engine in (shared, alone):
            engine.advance(events[-1][0] + 10_000)
        for i in range(1, 4):
            assert expected[i]
            assert normalised(got[i]) == normalised(expected[i]), f"instance {i}"
    finally:
        shared.close()
        alone.close()
    assert shared.shared_windows.stats() == {"windows": 0, "readers": 0}


def test_a_count_window_counts_the_template_pattern() -> None:
    """Pre-binding is not substitution for a TRIPLES window: the window of ``?person :detectedAt
    ?loc`` holds the last n detections of anybody, then the VALUES row picks the person; the
    substituted query's window would hold the person's own last n (documented in algebra/parameters)."""
    import pyoxigraph as ox

    from cqels_endpoint.engine import Engine

    template = TEMPLATE.replace("[RANGE 3s]", "[TRIPLES 1]").replace("GRAPH <http://deri.org/floorplan/> { ?loc lv:name ?locName }", "BIND(?loc AS ?locName)")
    engine = Engine()
    try:
        instance = engine.register(values_first(template, {"person": ox.NamedNode(person(1))}), "t")
        seen = collect(instance)
        engine.push(RFID, f"<{person(1)}> <{LV}detectedAt> <{LV}lobby> .", time=1)
        engine.push(RFID, f"<{person(2)}> <{LV}detectedAt> <{LV}lobby> .", time=2)
        assert instance.snapshot() == []  # person 1's detection left the one-triple window
        assert [e.time for e in seen] == [1]
    finally:
        engine.close()
