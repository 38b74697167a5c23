"""Instances of a template evaluated by one plan (``cqels_endpoint.engine.instances``), against the oracle.

Random scripts add instances in batches (a batch made after an event starts a second plan), push
RFID detections, advance the clock and delete instances midway; every instance must emit exactly
what its substituted text — the template with a one-row VALUES — emits when registered on its own
in recompute mode at the same point of the script in another engine. The templates cover what the
shared plan has to carry the instance column through (joins with static data that reads a
parameter, GROUP BY, ORDER BY, DISTINCT, UNION, OPTIONAL, NOT EXISTS, MINUS, sub-queries, ASK,
CONSTRUCT, two parameters, every window kind) and the templates that fall back to a plan per
instance (LIMIT, an aggregate without GROUP BY, a FILTER on parameters alone).
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from paths import ROOT

from cqels_endpoint.engine import Engine
from cqels_endpoint.oxigraph.requests import open_store
from static_store import StaticStore
from tests.stored_queries import FLOORPLAN, LV, RFID, collect, normalised, values_first

DATA = ROOT / "examples" / "data"
PEOPLE = [f"http://deri.org/people/{who}" for who in ("alice", "bob", "carol", "dave", "erin")]
NAMES = ["Alice Smith", "Bob Jones", "Carol White", "Dave Brown", "Erin Green"]
ROOMS = ["lobby", "mainHall", "corridor", "room101", "room102", "kitchen"]

PREFIXES = """PREFIX lv: <http://deri.org/floorplan/>
PREFIX foaf: <http://xmlns.com/foaf/0.1/>
PREFIX dc: <http://purl.org/dc/elements/1.1/>
"""
FLOOR = "FROM NAMED <http://deri.org/floorplan/>"
RFID_S = "STREAM <http://deri.org/streams/rfid>"

# name → template text; {W} is replaced by the window under test.
SHARED = {
    "join": f"""# @param ?person
SELECT ?locName ?other {FLOOR} WHERE {{
  {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc . ?other lv:detectedAt ?loc }}
  GRAPH <http://deri.org/floorplan/> {{ ?loc lv:name ?locName }}
}}""",
    # Conference Q5 with the author's name as the parameter (the seed experiments' $Name$): the
    # name sits in the static pattern, which is cached once for every name and joined with the table.
    "q5": f"""# @param ?name
SELECT ?loc2 ?locName (COUNT(DISTINCT ?coAuth) AS ?noCoAuths) WHERE {{
  {RFID_S} [TRIPLES 1] {{ ?auth lv:detectedAt ?loc1 }}
  {RFID_S} {{W}} {{ ?coAuth lv:detectedAt ?loc2 }}
  GRAPH <http://deri.org/floorplan/> {{ ?loc2 lv:name ?locName . ?loc2 lv:connected ?loc1 }}
  {{ ?paper dc:creator ?auth . ?paper dc:creator ?coAuth . ?auth foaf:name ?name }}
  FILTER (?auth != ?coAuth)
}} GROUP BY ?loc2 ?locName""",
    "ordered": f"""# @param ?person
SELECT ?other ?loc WHERE {{
  {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc . ?other lv:detectedAt ?loc }}
}} ORDER BY DESC(?other) ?loc""",
    "distinct-union": f"""# @param ?person
SELECT DISTINCT ?loc WHERE {{
  {{ {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc }} }}
  UNION {{ {RFID_S} [RANGE 1s] {{ ?person lv:detectedAt ?loc }} }}
}}""",
    "optional-not-exists": f"""# @param ?person
SELECT ?loc ?other {FLOOR} WHERE {{
  {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc }}
  OPTIONAL {{ {RFID_S} [RANGE 1s] {{ ?other lv:detectedAt ?loc }} FILTER (?other != ?person) }}
  FILTER NOT EXISTS {{ GRAPH <http://deri.org/floorplan/> {{ ?loc lv:name "Kitchen" }} }}
}}""",
    "minus-subquery": f"""# @param ?person
SELECT ?loc ?seen WHERE {{
  {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc }}
  {{ SELECT ?loc (COUNT(?x) AS ?seen) WHERE {{ {RFID_S} [RANGE 2s] {{ ?x lv:detectedAt ?loc }} }} GROUP BY ?loc }}
  MINUS {{ {RFID_S} [NOW] {{ ?person lv:detectedAt <http://deri.org/floorplan/lobby> }} }}
}}""",
    "ask": f"""# @param ?person
ASK {FLOOR} WHERE {{
  {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc }}
  GRAPH <http://deri.org/floorplan/> {{ ?loc lv:connected <http://deri.org/floorplan/lobby> }}
}}""",
    "construct": f"""# @param ?person
CONSTRUCT {{ ?person lv:near ?other }} WHERE {{
  {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc . ?other lv:detectedAt ?loc }}
}}""",
    "two-params": f"""# @param ?person ?room
SELECT ?other WHERE {{
  {RFID_S} {{W}} {{ ?person lv:detectedAt ?room . ?other lv:detectedAt ?room }}
}}""",
}

# name → (template, what the instances' explain says keeps them from sharing one plan)
UNSHARED = {
    "limit": (f"""# @param ?person
SELECT ?other WHERE {{ {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc . ?other lv:detectedAt ?loc }} }}
ORDER BY ?other LIMIT 1""", "a LIMIT or OFFSET"),
    "count-all": (f"""# @param ?person
SELECT (COUNT(*) AS ?n) WHERE {{ {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc }} }}""",
                  "an aggregate without GROUP BY"),
    "filter-on-parameter": (f"""# @param ?person
SELECT ?loc WHERE {{ {RFID_S} {{W}} {{ ?person lv:detectedAt ?loc }}
  FILTER (?person != <http://deri.org/people/erin>) }}""", "a pattern mixing the parameters"),
}

WINDOWS = ["[RANGE 3s]", "[RANGE 2s SLIDE 1s]", "[TRIPLES 3]", "[NOW]"]


@pytest.fixture(scope="module")
def store() -> StaticStore:
    store = open_store()
    store.load(str(FLOORPLAN))
    store.load(str(DATA / "conference.ttl"))
    return store


def prefixed(template: str, window: str) -> str:
    return PREFIXES + template.replace("{W}", window)


def bindings(params: tuple[str, ...], choice: int) -> dict[str, ox.Term]:
    values = {
        "person": ox.NamedNode(PEOPLE[choice % len(PEOPLE)]),
        "name": ox.Literal(NAMES[choice % len(NAMES)]),
        "room": ox.NamedNode(LV + ROOMS[choice % len(ROOMS)]),
    }
    return {p: values[p] for p in params}


class Pair:
    """The engine under test (instances of ``template`` through ``register_instances``) and the
    oracle engine (each instance's substituted text alone, recompute mode), driven by one script."""

    def __init__(self, store: StaticStore, text: str, r2s: str, mode: str = "incremental") -> None:
        self.text, self.r2s, self.mode = text, r2s, mode
        self.shared = Engine(store, cache_engine="local")
        self.template = self.shared.template(text)
        self.params = self.template.parameters
        self.alone = Engine(store, cache_engine="local")
        self.live: list[str] = []
        self.got: dict[str, list] = {}
        self.expected: dict[str, list] = {}
        self.count = 0

    def batch(self, choices: list[int], names: list[str] | None = None) -> list[tuple]:
        """The ``(name, terms)`` of ``register_instances`` for parameter choices."""
        batch = []
        for index, choice in enumerate(choices):
            self.count += 1
            name = f"t/{self.count}" if names is None else names[index]
            batch.append((name, bindings(self.params, choice)))
        return batch

    def add(self, choices: list[int]) -> list:
        batch = self.batch(choices)
        queries = self.shared.register_instances(self.template, batch, self.r2s, self.mode, group="t")
        for (name, terms), query in zip(batch, queries):
            self.got[name] = collect(query)
            self.expected[name] = collect(self.alone.register(values_first(self.text, terms), name, self.r2s, mode="recompute"))
            self.live.append(name)
        return queries

    def event(self, time: int, who: int, room: int) -> None:
        data = f"<{PEOPLE[who]}> <{LV}detectedAt> <{LV}{ROOMS[room]}> ."
        for engine in (self.shared, self.alone):
            engine.push(RFID, data, time=time)

    def advance(self, time: int) -> None:
        for engine in (self.shared, self.alone):
            engine.advance(time)

    def delete(self, index: int) -> None:
        name = self.live.pop(index % len(self.live))
        for engine in (self.shared, self.alone):
            engine.unregister(name)

    def check(self) -> int:
        """Asserts every instance's emissions equal its oracle's; returns how many rows were compared."""
        compared = 0
        for name, expected in self.expected.items():
            assert normalised(self.got[name]) == normalised(expected), f"instance {name}"
            compared += sum(len(e.rows or e.triples or ()) + (e.boolean is not None) for e in expected)
        return compared

    def close(self) -> None:
        self.shared.close()
        self.alone.close()


detection = st.tuples(st.just("event"), st.integers(0, 900), st.integers(0, 4), st.integers(0, 5))
step = st.one_of(
    detection,
    detection,
    detection,
    detection,
    st.tuples(st.just("advance"), st.integers(0, 2_500)),
    st.tuples(st.just("add"), st.lists(st.integers(0, 5), min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.integers(0, 10)),
)


def run(pair: Pair, first: list[int], steps: list[tuple]) -> None:
    pair.add(first)
    time = 1_000
    for action, *args in steps:
        if action == "event":
            time += args[0]
            pair.event(time, args[1], args[2])
        elif action == "advance":
            time += args[0]
            pair.advance(time)
        elif action == "add":
            pair.add(args[0])
        elif pair.live:
            pair.delete(args[0])
    pair.advance(time + 10_000)  # drain every window
    event("answers compared" if pair.check() else "no answer to compare")


# Every shared template under every window kind, and the templates that need a plan per instance.
CASES = [(name, SHARED[name], window) for name in sorted(SHARED) for window in WINDOWS] + [
    (name, UNSHARED[name][0], "[RANGE 3s]") for name in sorted(UNSHARED)
]


@pytest.mark.parametrize(("name", "template", "window"), CASES, ids=[f"{name}-{window}" for name, _, window in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    r2s=st.sampled_from(["ISTREAM", "RSTREAM", "DSTREAM"]),
    first=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    steps=st.lists(step, min_size=5, max_size=30),
)
def test_instances_equal_their_substituted_queries(store, name, template, window, r2s, first, steps) -> None:
    pair = Pair(store, prefixed(template, window), r2s)
    try:
        run(pair, first, steps)
    finally:
        pair.close()


@pytest.mark.parametrize("name", sorted(SHARED))
def test_every_shared_template_runs_one_plan_and_answers(store, name) -> None:
    """The property tests above would pass through the fallback too: here each template must
    really be one plan for its instances, and the scripted run must compare real answers."""
    pair = Pair(store, prefixed(SHARED[name], "[RANGE 3s]"), "RSTREAM" if name == "ask" else "ISTREAM")
    try:
        queries = pair.add(list(range(5)))
        assert pair.shared.plan_sharing() == {"plans": 1, "instances": 5}
        assert all(q.unshared is None and "one operator graph for 5 instances" in q.explain() for q in queries)
        time = 1_000
        for number in range(60):
            time += 150 + 37 * (number % 5)
            pair.event(time, (number * 3) % 5, (number * 7) % 6)
            if number == 20:
                pair.delete(1)
                pair.add([3, 4])  # after events: a second plan, whose windows start now
                assert pair.shared.plan_sharing() == {"plans": 2, "instances": 6}
        pair.advance(time + 10_000)
        assert pair.check() > 0, "no answer compared: the script proves nothing"
    finally:
        pair.close()
    assert pair.shared.plan_sharing() == {"plans": 0, "instances": 0}
    assert pair.shared.shared_windows.stats() == {"windows": 0, "readers": 0}


@pytest.mark.parametrize("name", sorted(UNSHARED))
def test_templates_that_need_a_plan_per_instance_say_why(store, name) -> None:
    template, reason = UNSHARED[name]
    pair = Pair(store, prefixed(template, "[RANGE 3s]"), "ISTREAM")
    try:
        queries = pair.add([0, 1])
        assert pair.shared.plan_sharing() == {"plans": 0, "instances": 0}
        for query in queries:
            assert reason in query.unshared
            assert f"a plan of its own: {reason}" in query.explain()
    finally:
        pair.close()


def test_a_group_in_recompute_mode_is_a_query_per_instance(store) -> None:
    pair = Pair(store, prefixed(SHARED["join"], "[RANGE 3s]"), "ISTREAM", mode="recompute")
    try:
        (query,) = pair.add([0])
        assert query.mode == "recompute" and "recompute mode" in query.unshared
        assert pair.shared.plan_sharing() == {"plans": 0, "instances": 0}
    finally:
        pair.close()


def test_instances_are_created_all_or_none(store) -> None:
    pair = Pair(store, prefixed(SHARED["join"], "[RANGE 3s]"), "ISTREAM")
    engine = pair.shared
    try:
        engine.register(prefixed(SHARED["join"].replace("?person", "<http://deri.org/people/bob>"), "[RANGE 3s]"), "taken")
        for names in (["a", "taken"], ["a", "a"]):
            with pytest.raises(ValueError, match=r"already registered|two instances"):
                engine.register_instances(pair.template, pair.batch([0, 1], names))
            assert set(engine.queries) == {"taken"}
            assert engine.plan_sharing() == {"plans": 0, "instances": 0}
    finally:
        pair.close()


def test_the_static_split_keeps_the_instance_table_a_cache_of_its_own() -> None:
    """Conference Q5's parameter ?name sits in a static pattern: the split caches that pattern for
    every name and the table apart, so the table's rows can change without a rebuild."""
    from cqels_endpoint.algebra import nodes as n
    from cqels_endpoint.algebra import optimize, to_algebra
    from cqels_endpoint.algebra.parameters import make_template, with_instance_table
    from cqels_endpoint.query.parser import parse_query
    from cqels_endpoint.query.visit import walk

    text = prefixed(SHARED["q5"], "[RANGE 3s]")
    algebra = optimize(with_instance_table(make_template(parse_query(text), ("name",)).algebra))
    caches = [node.pattern for node in walk(algebra.pattern) if isinstance(node, n.StaticPattern)]
    tables = [c for c in caches if isinstance(c, n.InstanceTable)]
    assert [tuple(v.name for v in t.vars) for t in tables] == [(".instance", "name")]
    assert not any(isinstance(x, n.InstanceTable) for c in caches if c not in tables for x in walk(c))
    assert any(n.Var("name") in {x for x in walk(c)} for c in caches if c not in tables)
    with pytest.raises(ValueError, match="one parameter table, not 0"):
        with_instance_table(to_algebra(parse_query(text)))


def test_an_instance_explains_its_shared_windows_and_schedule(store) -> None:
    pair = Pair(store, prefixed(SHARED["join"], "[RANGE 2s SLIDE 1s]"), "ISTREAM")
    try:
        _first, second = pair.add([0, 1])
        pair.event(1_000, 0, 0)
        pair.event(2_500, 1, 0)
        text = second.explain()
        assert "periodic, origin 1000, next close 3000; clock 2000, 1 evaluations" in text
        assert "window 0 on <http://deri.org/streams/rfid> PeriodicRangeState: 2 triple(s), state read once for the 2 instances" in text
        assert "(this one is ?.instance 2 in C1)" in text
    finally:
        pair.close()


def test_instances_whose_cache_build_outlasts_an_event_join_the_windows_after_it() -> None:
    """Window readers are taken when the instances start, after their caches are built (as
    ``register`` does): an event pushed during the build must not leave the group behind the
    window states it shares with a query registered before the event."""
    import threading

    from cqels_endpoint.caches.engines import LocalCacheEngine

    class Gated(LocalCacheEngine):
        def __init__(self) -> None:
            self.gate, self.started, self.holding = threading.Event(), threading.Event(), False

        def build(self, cache, query, static):
            if self.holding:
                self.started.set()
                assert self.gate.wait(10)
            return super().build(cache, query, static)

    store = open_store()
    store.load(str(FLOORPLAN))
    template = prefixed(SHARED["join"], "[RANGE 3s]")
    pair = Pair(store, template, "ISTREAM")
    gated = Gated()
    pair.shared.close()
    pair.shared = Engine(store, cache_engine=gated)
    try:
        # The same stream patterns registered before the event: a window state shared at this epoch.
        (_, terms) = pair.batch([1], ["plain"])[0]
        text = values_first(template, terms)
        pair.got["plain"] = collect(pair.shared.register(text, "plain"))
        pair.expected["plain"] = collect(pair.alone.register(text, "plain", mode="recompute"))
        # A write to another graph: the instances' floorplan cache is built anew, not reused.
        store.update("INSERT DATA { GRAPH <http://example.org/other> { <http://example.org/a> <http://example.org/b> 1 } }")
        gated.holding = True
        added: list = []
        worker = threading.Thread(target=lambda: added.extend(pair.shared.register_instances(
            pair.template, pair.batch([0, 1]), "ISTREAM", group="t")))
        worker.start()
        assert gated.started.wait(10)
        pair.event(1_000, 0, 0)  # during the build
        gated.gate.set()
        worker.join(10)
        assert [q.name for q in added] == ["t/2", "t/3"]
        for query, (_name, terms) in zip(added, pair.batch([0, 1])):
            pair.got[query.name] = collect(query)
            pair.expected[query.name] = collect(pair.alone.register(values_first(template, terms), query.name, mode="recompute"))
        for number in range(30):
            pair.event(1_200 + 150 * number, number % 5, number % 6)
        pair.advance(20_000)
        assert pair.check() > 0
    finally:
        pair.close()
