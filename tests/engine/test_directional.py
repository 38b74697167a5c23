"""Directional windows, EMIT and LATENESS (issue 17, items 2 and 3), against oracles.

The oracle of a directional query is written here from the events pushed: for each anchor, the
window's triples (docs/ARCHITECTURE.md, "Directional windows") loaded into a fresh pyoxigraph store
and the query's WHERE run once on it. Hypothesis draws event sequences, windows and EMIT policies,
and both modes (incremental operators, re-evaluation) must emit exactly the oracle's sequence.
The LATENESS oracle is the same query on the same events pushed in timestamp order: events up to
``d`` late must give the same emissions, on every window and query shape.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.engine import Engine
from cqels_endpoint.errors import LateEventError, PlanError, QuerySyntaxError
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.testing import Push, run

EX = "http://example.org/"
S = EX + "s"
PREFIX = f"PREFIX ex: <{EX}>\n"

# (projection, WHERE body, GROUP BY): shapes the oracle runs as plain SPARQL over the window graph.
SHAPES = {
    "pattern": ("?a ?v", "?a ex:p ?v", ""),
    "join": ("?a ?v ?w", "?a ex:p ?v . ?a ex:q ?w", ""),
    "aggregate": ("?a (COUNT(*) AS ?n) (SUM(?v) AS ?total)", "?a ex:p ?v", "GROUP BY ?a"),
    "negation": ("?a ?v", "?a ex:p ?v FILTER NOT EXISTS { ?a ex:q ?w }", ""),
}


def triple(subject: int, predicate: str, value: int) -> str:
    return f"<{EX}x{subject}> <{EX}{predicate}> {value} ."


def query_text(shape: str, window: str) -> str:
    projection, body, group = SHAPES[shape]
    return f"{PREFIX}SELECT {projection}\nFROM STREAM <{S}> {window}\nWHERE {{ {body} }} {group}"


def oracle_rows(shape: str, triples: list[str]) -> Counter:
    projection, body, group = SHAPES[shape]
    store = ox.Store()
    if triples:
        store.load("\n".join(triples).encode(), ox.RdfFormat.TURTLE)
    solutions = store.query(f"{PREFIX}SELECT {projection} WHERE {{ {body} }} {group}")
    names = [v.value for v in solutions.variables]
    return Counter(tuple(str(s[name]) if s[name] is not None else None for name in names) for s in solutions)


def emitted_rows(emission) -> Counter:
    return Counter(tuple(str(row[name]) if name in row else None for name in emission.variables) for row in emission.rows)


def window_of(events, anchor: int, past: int, future: int, cap: int | None = None) -> list[str]:
    top = anchor + future if cap is None else min(anchor + future, cap)
    return [data for time, data in events if anchor - past < time <= top]


def anchors_of(times: list[int], step: int | None, through: int) -> list[int]:
    """The anchors up to ``through`` (inclusive): every distinct event time, or origin + k·step."""
    if step is None:
        return sorted({t for t in times if t <= through})
    return list(range(times[0], through + 1, step))


def run_directional(shape, window, events, mode, r2s="RSTREAM", end=None, dialect=None):
    engine = Engine()
    try:
        query = engine.register(query_text(shape, window), r2s=r2s, mode=mode, dialect=dialect)
        emissions = []
        query.subscribe(emissions.append)
        for time, data in events:
            engine.push(S, data, time=time)
        if end is not None:
            engine.advance(end)
        assert all(e.r2s == query.r2s for e in emissions)
        return [(e.anchor, e.final, emitted_rows(e)) for e in emissions]
    finally:
        engine.close()


def r2s_of(evaluations, r2s: str, every: bool) -> list:
    """What ``r2s`` emits of a directional query's evaluations ``(anchor, final, Γ)``: the finals and
    the early results are each a sequence of their own. ``every``: an evaluation whose R2S selects
    no row still emits (the cqels2 dialect, CQELS-QL 2.0 §3.2), as RSTREAM always does."""
    previous = {True: Counter(), False: Counter()}
    emitted = []
    for anchor, final, rows in evaluations:
        selected = {"RSTREAM": rows, "ISTREAM": rows - previous[final], "DSTREAM": previous[final] - rows}[r2s]
        previous[final] = rows
        if selected or every or r2s == "RSTREAM":
            emitted.append((anchor, final, selected))
    return emitted


event_lists = st.lists(
    st.tuples(st.integers(0, 1500), st.integers(0, 2), st.sampled_from(["p", "q"]), st.integers(1, 3)),
    min_size=1,
    max_size=14,
).map(lambda drawn: _timed(drawn))


def _timed(drawn) -> list[tuple[int, str]]:
    time, events = 0, []
    for gap, subject, predicate, value in drawn:
        time += gap
        events.append((time, triple(subject, predicate, value)))
    return events


@settings(max_examples=100, deadline=None)
@given(
    events=event_lists,
    shape=st.sampled_from(sorted(SHAPES)),
    past=st.sampled_from([0, 1000, 2500]),
    future=st.sampled_from([500, 1000, 3000]),
    step=st.sampled_from([None, 700, 1000]),
    emit=st.sampled_from(["ON_CLOSE", "EARLY_AND_FINAL", "ON_UPDATE"]),
    dialect=st.sampled_from(["cqels", "cqels2"]),
    r2s=st.sampled_from([None, "ISTREAM", "RSTREAM", "DSTREAM"]),
)
def test_directional_windows_emit_the_oracle_per_anchor_in_both_modes(events, shape, past, future, step, emit, dialect, r2s):
    """Each anchor's final (and each early evaluation EMIT asks for) is the oracle's Γ under the
    R2S. In cqels2 (§3.2) every one of them is an emission, an empty one too, and the R2S defaults
    to RSTREAM; in cqels an evaluation whose R2S selects nothing emits nothing (RSTREAM aside)."""
    extent = (f"PAST {past}ms " if past else "") + f"FUTURE {future}ms" + (f" STEP {step}ms" if step else "")
    window = f"[{extent} EMIT {emit}]"
    times = [t for t, _ in events]
    end = times[-1] + future + 1  # closes every anchor up to the last event
    expected = []
    # Early results: after each event, the newest anchor over what has arrived (events so far).
    finals = {a: oracle_rows(shape, window_of(events, a, past, future)) for a in anchors_of(times, step, end - future - 1)}
    closed = set()
    for i, (time, _data) in enumerate(events):
        for anchor in sorted(a for a in finals if a + future < time and a not in closed):
            closed.add(anchor)
            if emit != "ON_UPDATE":
                expected.append((anchor, True, finals[anchor]))
        if emit != "ON_CLOSE":
            anchor = time if step is None else times[0] + (time - times[0]) // step * step
            expected.append((anchor, False, oracle_rows(shape, window_of(events[: i + 1], anchor, past, future, cap=time))))
    for anchor in sorted(a for a in finals if a not in closed):
        if emit != "ON_UPDATE":
            expected.append((anchor, True, finals[anchor]))
    every = dialect == "cqels2"
    emitted = r2s_of(expected, r2s or ("RSTREAM" if every else "ISTREAM"), every)
    if every:  # one emission per anchor's final and per early evaluation, in order
        assert [(anchor, final) for anchor, final, _rows in emitted] == [(anchor, final) for anchor, final, _rows in expected]
    for mode in ("incremental", "recompute"):
        assert run_directional(shape, window, events, mode, r2s=r2s, end=end, dialect=dialect) == emitted, (mode, dialect, r2s)


@settings(max_examples=40, deadline=None)
@given(events=event_lists, shape=st.sampled_from(["pattern", "aggregate"]), step=st.sampled_from([None, 1000]))
def test_istream_of_directional_finals_is_the_bag_difference_of_consecutive_anchors(events, shape, step):
    window = "[PAST 1s FUTURE 2s" + (f" STEP {step}ms" if step else "") + "]"
    times = [t for t, _ in events]
    end = times[-1] + 2001
    expected, previous = [], Counter()
    for anchor in anchors_of(times, step, end - 2001):
        rows = oracle_rows(shape, window_of(events, anchor, 1000, 2000))
        if rows - previous:
            expected.append((anchor, True, rows - previous))
        previous = rows
    for mode in ("incremental", "recompute"):
        assert run_directional(shape, window, events, mode, r2s="ISTREAM", end=end) == expected, mode


@settings(max_examples=50, deadline=None)
@given(
    events=event_lists,
    past=st.integers(0, 3),
    future=st.integers(1, 3),
)
def test_count_directional_windows_execute(events, past, future):
    """``[TRIPLES PAST n FUTURE m]`` (anchored at each event time): the last n matching triples
    at or before the anchor and the first m after it, emitted once the m have arrived."""
    window = f"[TRIPLES PAST {past} FUTURE {future}]"
    matching = [(t, data) for t, data in events if f"<{EX}p>" in data]
    times = [t for t, _ in events]
    expected = []
    for anchor in anchors_of(times, None, times[-1]):
        before = [data for t, data in matching if t <= anchor]
        after = [data for t, data in matching if t > anchor]
        if len(after) < future:
            break  # this anchor (and every later one) waits for more triples
        expected.append((anchor, True, oracle_rows("pattern", (before[-past:] if past else []) + after[:future])))
    for mode in ("incremental", "recompute"):
        got = run_directional("pattern", window, events, mode)
        assert got == expected, mode


def test_a_directional_result_waits_for_its_window_to_close():
    text = query_text("pattern", "[FUTURE 10s EMIT ON_CLOSE]")
    engine = Engine()
    try:
        query = engine.register(text, r2s="RSTREAM")
        emissions = []
        query.subscribe(emissions.append)
        engine.push(S, triple(1, "p", 1), time=0)
        engine.push(S, triple(2, "p", 2), time=4_000)
        engine.push(S, triple(3, "p", 3), time=10_000)
        engine.push(EX + "other", triple(5, "p", 5), time=20_000)  # a stream it does not read leaves it alone
        assert emissions == []  # anchor 0 reaches to 10 s: an event at 10 s may still come
        engine.push(S, triple(4, "p", 4), time=10_001)
        assert [(e.anchor, e.final, e.time) for e in emissions] == [(0, True, 0)]
        assert sorted(str(r["v"]) for r in emissions[0].rows) == ['"2"^^<http://www.w3.org/2001/XMLSchema#integer>',
                                                                  '"3"^^<http://www.w3.org/2001/XMLSchema#integer>']
        assert emissions[0].to_json()["anchor"] == 0 and emissions[0].to_json()["final"] is True
        assert "directional" in query.explain()
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ("[RANGE 10s EMIT ON_CLOSE]", "applies to directional windows"),
        ("[FUTURE 1s STEP 1s EMIT ON_CLOSE]", None),
    ],
)
def test_emit_belongs_to_directional_windows(window, message):
    engine = Engine()
    try:
        if message is None:
            engine.register(query_text("pattern", window))
        else:
            with pytest.raises(QuerySyntaxError, match=message) as raised:
                engine.register(query_text("pattern", window))
            assert raised.value.lineno == 3 and "^" in str(raised.value)
    finally:
        engine.close()


def test_a_periodic_window_beside_a_directional_one_is_refused_with_its_position():
    text = f"""{PREFIX}SELECT * FROM STREAM <{S}> [FUTURE 1s]
FROM STREAM <{EX}t> [RANGE 5s STEP 1s]
WHERE {{ STREAM <{S}> {{ ?a ex:p ?v }} STREAM <{EX}t> {{ ?a ex:q ?w }} }}"""
    with pytest.raises(QuerySyntaxError, match="periodic window") as raised:
        Engine().register(text)
    assert raised.value.lineno == 3


# --------------------------------------------------------------------------- LATENESS

LATENESS_WINDOWS = {
    "pattern": "[RANGE 2s LATENESS 1s]",
    "join": "[RANGE 2s LATENESS 1s]",
    "aggregate": "[RANGE 2s STEP 500ms LATENESS 1s]",
    "negation": "[PAST 1s FUTURE 1s STEP 500ms EMIT EARLY_AND_FINAL LATENESS 1s]",
}


def run_pushes(text: str, pushes, mode: str, end: int):
    engine = Engine()
    try:
        query = engine.register(text, r2s="RSTREAM", mode=mode)
        emissions = []
        query.subscribe(emissions.append)
        for time, data in pushes:
            engine.push(S, data, time=time)
        engine.advance(end)
        return [(e.time, e.anchor, e.final, emitted_rows(e)) for e in emissions]
    finally:
        engine.close()


@settings(max_examples=40, deadline=None)
@given(events=event_lists, shape=st.sampled_from(sorted(LATENESS_WINDOWS)), seed=st.integers(0, 2**32 - 1))
def test_events_up_to_lateness_late_give_the_in_order_answers(events, shape, seed):
    """Pushed out of order by at most the LATENESS (1 s), every query shape emits what it emits
    for the same events in timestamp order, in both modes."""
    shuffle = random.Random(seed)
    arrivals = sorted(events, key=lambda event: event[0] + shuffle.randint(0, 1000))
    # Equal timestamps are released in arrival order: the in-order push keeps that order.
    in_order = sorted(arrivals, key=lambda event: event[0])
    text = query_text(shape, LATENESS_WINDOWS[shape])
    end = events[-1][0] + 5_000
    for mode in ("incremental", "recompute"):
        assert run_pushes(text, arrivals, mode, end) == run_pushes(text, in_order, mode, end), mode


def test_an_event_later_than_the_lateness_is_refused_counted_and_reported():
    engine = Engine()
    try:
        query = engine.register(query_text("pattern", "[RANGE 10s LATENESS 2s]"), r2s="RSTREAM")
        emissions = []
        query.subscribe(emissions.append)
        engine.push(S, triple(1, "p", 1), time=10_000)
        engine.push(S, triple(2, "p", 2), time=8_500)  # 1.5 s late: lands in its window
        with pytest.raises(LateEventError) as raised:
            engine.push(S, triple(3, "p", 3), time=7_000)  # 3 s late: refused, counted
        assert "7000" in str(raised.value)
        assert engine.late_events(S) == 1
        stats = engine.stream_stats(S)[0]
        assert stats["late"] == 1 and stats["lateness_ms"] == 2000
        engine.advance(20_000)
        assert [sorted(r["a"].value for r in e.rows) for e in emissions][:2] == [[f"{EX}x2"], [f"{EX}x1", f"{EX}x2"]]
        # Unregistered, the stream falls back to the engine's lateness.
        engine.unregister(query.name)
        assert engine.stream_stats(S)[0]["lateness_ms"] == 0
    finally:
        engine.close()


def test_unregistering_the_query_with_the_lateness_releases_what_it_held():
    engine = Engine()
    try:
        slow = engine.register(query_text("pattern", "[RANGE 10s LATENESS 5s]"), name="slow")
        eager = engine.register(query_text("pattern", "[RANGE 10s]"), name="eager")
        seen = []
        eager.subscribe(lambda e: seen.append(e.time))
        engine.push(S, triple(1, "p", 1), time=1_000)
        assert seen == []  # held for the 5 s of the slow query's LATENESS
        engine.unregister(slow.name)
        assert seen == [1_000]
    finally:
        engine.close()


def test_json_of_directional_emissions_carries_anchor_and_final():
    engine = Engine()
    try:
        query = engine.register(query_text("pattern", "[PAST 1s FUTURE 1s EMIT EARLY_AND_FINAL]"), r2s="RSTREAM")
        lines = []
        query.subscribe(lambda emission: lines.append(json.loads(emission.json_text())), json_only=True)
        engine.push(S, triple(1, "p", 1), time=0)
        engine.push(S, triple(2, "p", 2), time=1_500)
        assert [(line["anchor"], line["final"], len(line["results"]["bindings"])) for line in lines] == [
            (0, False, 1),  # early: anchor 0 over what has arrived
            (0, True, 1),  # anchor 0 closed by the event at 1.5 s: (−1 s, 1 s] holds x1 only
            (1_500, False, 1),  # early: anchor 1.5 s, its past (0.5 s, 1.5 s] holds x2
        ]
    finally:
        engine.close()


def test_instances_of_a_directional_template_run_at_their_own_anchors():
    engine = Engine()
    try:
        template = engine.template(f"# @param ?a\n{query_text('pattern', '[FUTURE 1s]')}")
        (instance,) = engine.register_instances(template, [("one", {"a": ox.NamedNode(f"{EX}x1")})], r2s="RSTREAM")
        assert "directional" in instance.unshared
        seen = []
        instance.subscribe(lambda e: seen.append((e.anchor, sorted(r["v"].value for r in e.rows))))
        for time, subject in [(0, 1), (500, 1), (700, 2), (2_000, 1)]:
            engine.push(S, triple(subject, "p", time), time=time)
        assert seen == [(0, ["500"]), (500, []), (700, [])]
    finally:
        engine.close()


# --------------------------------------------------------------------------- one result per anchor (cqels2)

MODES = ("incremental", "recompute")
COUNT_AHEAD = f"{PREFIX}SELECT (COUNT(*) AS ?n) FROM STREAM <{S}> [FUTURE 2s STEP 1s] WHERE {{ ?a ex:p ?v }}"


def pushes(*events: tuple[int, int, str]) -> list[Push]:
    return [Push(S, time, triple(subject, predicate, 1)) for time, subject, predicate in events]


def anchored(emissions) -> list[tuple]:
    """``(anchor, final, r2s, sorted rows)`` of each emission, a row the text of its terms."""
    return [(e.anchor, e.final, e.r2s, sorted(tuple(str(row[v]) for v in e.variables) for row in e.rows)) for e in emissions]


def count(n: int) -> list[tuple[str]]:
    return [(f'"{n}"^^<http://www.w3.org/2001/XMLSchema#integer>',)]


@pytest.mark.parametrize("mode", MODES)
def test_consecutive_anchors_with_equal_results_each_emit_in_cqels2(mode):
    """§3.2: "exact, delayed results at window close (one result per anchor)". Anchors 0, 1 s and
    2 s each count two events in (a, a + 2 s]: cqels2 emits the three, the default R2S then being
    RSTREAM; cqels's default ISTREAM emits the first only (the others add nothing)."""
    events = pushes((0, 0, "p"), (500, 1, "p"), (1500, 2, "p"), (2500, 3, "p"), (3500, 4, "p"))
    # Anchor 2 s is closed by the advance to 4.5 s (past 2 s + 2 s); anchor 3 s is not.
    cqels2 = run(f"REGISTER QUERY Counts AS {COUNT_AHEAD}", events, mode=mode, advance_to=4500)
    assert anchored(cqels2) == [(0, True, "RSTREAM", count(2)), (1000, True, "RSTREAM", count(2)), (2000, True, "RSTREAM", count(2))]
    cqels = run(COUNT_AHEAD, events, mode=mode, advance_to=4500)
    assert anchored(cqels) == [(0, True, "ISTREAM", count(2))]
    # An ISTREAM asked of the cqels2 query is honoured, and still emits at every anchor: nothing entered.
    differences = run(COUNT_AHEAD, events, mode=mode, r2s="ISTREAM", advance_to=4500, dialect="cqels2")
    assert anchored(differences) == [(0, True, "ISTREAM", count(2)), (1000, True, "ISTREAM", []), (2000, True, "ISTREAM", [])]


@pytest.mark.parametrize("mode", MODES)
def test_an_anchor_with_an_empty_result_emits_zero_rows_in_cqels2(mode):
    """§3.2: one result per anchor, the empty one too. [FUTURE 1s STEP 1s] reads (a, a + 1 s]:
    anchors 0, 2 s and 3 s hold no event."""
    text = f"{PREFIX}SELECT ?a FROM STREAM <{S}> [FUTURE 1s STEP 1s] WHERE {{ ?a ex:p ?v }}"
    events = pushes((0, 0, "p"), (1500, 1, "p"), (4200, 2, "p"))
    cqels2 = run(f"REGISTER QUERY Ahead AS {text}", events, mode=mode, advance_to=5001)
    x1, x2 = [(f"<{EX}x1>",)], [(f"<{EX}x2>",)]
    assert anchored(cqels2) == [
        (0, True, "RSTREAM", []), (1000, True, "RSTREAM", x1), (2000, True, "RSTREAM", []),
        (3000, True, "RSTREAM", []), (4000, True, "RSTREAM", x2),
    ]
    assert anchored(run(text, events, mode=mode, advance_to=5001)) == [(1000, True, "ISTREAM", x1), (4000, True, "ISTREAM", x2)]


@pytest.mark.parametrize("mode", MODES)
def test_an_empty_early_estimate_is_seen_in_cqels2(mode):
    """§3.2, EMIT EARLY_AND_FINAL: "an early estimate and a final result". The event at 0 is no
    ex:p: anchor 0's early estimate is empty, and cqels2 emits it (final = false); anchor 1 s's
    early estimate equals anchor 0's, and cqels2 emits it too."""
    text = f"{PREFIX}SELECT ?a FROM STREAM <{S}> [PAST 1s FUTURE 1s STEP 1s EMIT EARLY_AND_FINAL] WHERE {{ ?a ex:p ?v }}"
    events = pushes((0, 0, "q"), (500, 1, "p"), (1500, 2, "q"))
    x1 = [(f"<{EX}x1>",)]
    cqels2 = run(text, events, mode=mode, dialect="cqels2")
    assert anchored(cqels2) == [
        (0, False, "RSTREAM", []),  # after the event at 0: (−1 s, 0] holds no ex:p
        (0, False, "RSTREAM", x1),
        (0, True, "RSTREAM", x1),  # closed by the event at 1.5 s
        (1000, False, "RSTREAM", x1),  # (0, 1.5 s] so far
    ]
    assert anchored(run(text, events, mode=mode)) == [(0, False, "ISTREAM", x1), (0, True, "ISTREAM", x1)]


@pytest.mark.parametrize("mode", MODES)
def test_a_seq_over_a_directional_window_emits_one_match_set_per_anchor_in_cqels2(mode):
    """§7: CEP over a directional window "emits one final match per anchor at window close".
    (a − 4 ms, a + 2 ms] around anchors 1, 3, 5, 7 ms: a1 then b1 at anchors 1 and 3, nothing after."""
    text = f"""{PREFIX}SELECT ?e1 ?e2 FROM STREAM <{S}> [PAST 4ms FUTURE 2ms STEP 2ms]
WHERE {{ ?e1 ex:type ex:A . ?e2 ex:type ex:B . FILTER(SEQ(?e1 ; ?e2)) }}"""
    events = [Push(S, time, f"<{EX}{name}> <{EX}type> <{EX}{kind}> .") for time, name, kind in [(1, "a1", "A"), (2, "b1", "B"), (10, "c1", "C")]]
    match = [(f"<{EX}a1>", f"<{EX}b1>")]
    cqels2 = run(text, events, mode=mode, dialect="cqels2")
    assert anchored(cqels2) == [(1, True, "RSTREAM", match), (3, True, "RSTREAM", match), (5, True, "RSTREAM", []), (7, True, "RSTREAM", [])]
    assert anchored(run(text, events, mode=mode)) == [(1, True, "ISTREAM", match)]


def test_the_r2s_of_a_cqels2_directional_query():
    """RSTREAM by default (each emission is its anchor's result); asked for, ISTREAM and DSTREAM are
    kept, and the REGISTER keyword too; a query without a directional window keeps ISTREAM."""
    engine = Engine(dialect="cqels2")
    try:
        ahead = query_text("pattern", "[FUTURE 1s]")
        assert engine.register(ahead, name="default").r2s == "RSTREAM"
        assert engine.register(ahead, name="asked", r2s="DSTREAM").r2s == "DSTREAM"
        keyword = f"REGISTER ISTREAM <{EX}out> AS {ahead}"
        assert engine.register(keyword, name="keyword").r2s == "ISTREAM"
        assert engine.register(query_text("pattern", "[RANGE 1s]"), name="backward").r2s == "ISTREAM"
        assert Engine().register(ahead, name="cqels").r2s == "ISTREAM"
        assert job_plan(ahead, 2, dialect="cqels2").r2s == "RSTREAM"
        assert job_plan(ahead, 2).r2s == "ISTREAM"
    finally:
        engine.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_cqels2_directional_ask_answers_at_every_anchor_and_refuses_istream(mode):
    """An ASK has no answer for "unchanged": in cqels2 it is RSTREAM, its answer at each anchor,
    and ISTREAM or DSTREAM (which only say when it turns true or false) are refused."""
    text = f"{PREFIX}ASK FROM STREAM <{S}> [FUTURE 1s STEP 1s] WHERE {{ ?a ex:p ?v }}"
    events = pushes((0, 0, "p"), (1500, 1, "p"), (2500, 2, "q"), (3500, 3, "p"))
    answers = run(text, events, mode=mode, dialect="cqels2", advance_to=4001)
    assert [(e.anchor, e.r2s, e.boolean) for e in answers] == [
        (0, "RSTREAM", False), (1000, "RSTREAM", True), (2000, "RSTREAM", False), (3000, "RSTREAM", True),
    ]
    for r2s in ("ISTREAM", "DSTREAM"):
        with pytest.raises(PlanError, match=f"{r2s} on a directional ASK in the cqels2 dialect"):
            Engine().register(text, r2s=r2s, dialect="cqels2")
    assert [e.boolean for e in run(text, events, mode=mode, r2s="ISTREAM", advance_to=4001)] == [True, True]


@pytest.mark.parametrize("form", ["SELECT", "CONSTRUCT"])
@pytest.mark.parametrize("json_only", [False, True], ids=["terms", "json"])
def test_a_zero_row_anchor_reaches_terms_and_json_subscribers(form, json_only):
    """The empty anchor of a cqels2 query as a callback sees it: no rows (no triples), SPARQL JSON
    with no bindings (empty N-Triples) from the terms and from the ids alike, anchor and final set."""
    head = "CONSTRUCT { ?a ex:seen ?v }" if form == "CONSTRUCT" else "SELECT ?a ?v"
    text = f"{PREFIX}{head} FROM STREAM <{S}> [FUTURE 1s STEP 1s] WHERE {{ ?a ex:p ?v }}"
    engine = Engine()
    try:
        query = engine.register(text, dialect="cqels2")
        seen = []
        query.subscribe(seen.append, json_only=json_only)
        engine.push(S, triple(0, "p", 1), time=0)
        engine.advance(1001)
        (emission,) = seen
        assert (emission.anchor, emission.final, emission.r2s) == (0, True, "RSTREAM")
        assert json.loads(emission.json_text()) == emission.to_json()
        head_json = {"query": query.name, "time": 0, "r2s": "RSTREAM", "anchor": 0, "final": True}
        if form == "CONSTRUCT":
            assert emission.to_json() == head_json | {"triples": ""}
            assert emission.to_ntriples() == "" and emission.graph() == []
            assert (emission.triples is None) == json_only
        else:
            assert emission.to_json() == head_json | {"head": {"vars": ["a", "v"]}, "results": {"bindings": []}}
            assert emission.rows == (None if json_only else [])
    finally:
        engine.close()
