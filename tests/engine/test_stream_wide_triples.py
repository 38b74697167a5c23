"""``[TRIPLES n]`` as each dialect means it, against its definition written out here.

CQELS-QL 2.0 (``CQELS-QL_SPEC.md`` §3.1, "Count-based | ``[TRIPLES 100]`` | The most recent N
statements, regardless of time"): in the cqels2 dialect the window is the last n statements pushed
on the stream, whatever they match, and each triple pattern reading it sees those of the n that
match it. CQELS 1 (the cqels dialect) keeps the last n triples of each triple pattern. The counts
start at the query's registration; within one event the statements come in the event's order.

The scenarios are the specification's wording on small streams, in both dialects and both modes;
the property tests draw streams of events of several statements (and a second stream, whose
statements never count) and compare every evaluation with the definition, in both modes, for a
query of one pattern, a join of two patterns of one block, two blocks with their own n, and a
directional window beside the count window (read at each anchor: the last n statements with
``t ≤ a``).
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.algebra.translate import cqels2_windows, to_algebra
from cqels_endpoint.engine import Engine
from cqels_endpoint.plan.explain import explain_query
from cqels_endpoint.query.parser import parse_query
from cqels_endpoint.query.serialize import serialize_query
from cqels_endpoint.query.windows import TriplesWindow
from cqels_endpoint.testing import Push, run

EX = "http://ex.org/"
S, OTHER = EX + "S", EX + "T"
PREFIX = f"PREFIX : <{EX}>\n"
MODES = ("incremental", "recompute")


def statement(subject: str, predicate: str, value: int) -> str:
    return f"<{EX}{subject}> <{EX}{predicate}> {value} ."


def rows(emission, *names: str) -> list[tuple]:
    """An emission's rows as sorted tuples of the local names / values of ``names``."""
    return sorted(tuple(row[name].value.removeprefix(EX) for name in names) for row in emission.rows)


def answers(query: str, pushes: list[Push], dialect: str, mode: str, *names: str) -> list[list[tuple]]:
    return [rows(e, *names) for e in run(PREFIX + query, pushes, mode=mode, r2s="RSTREAM", dialect=dialect)]


# --------------------------------------------------------------------------- §3.1 scenarios

ABC = [Push(S, 0, statement("a", "p", 1)), Push(S, 1, statement("b", "q", 2)), Push(S, 2, statement("c", "p", 3))]


@pytest.mark.parametrize("mode", MODES)
def test_the_window_is_the_last_n_statements_of_the_stream(mode):
    # §3.1: after `a p 1`, `b q 2`, `c p 3` the two most recent statements are `b q 2` and `c p 3`,
    # so ?s :p ?o sees c alone; CQELS 1 keeps the last two :p triples, a and c.
    query = f"SELECT ?s WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?s :p ?o }} }}"
    assert answers(query, ABC, "cqels2", mode, "s") == [[("a",)], [("a",)], [("c",)]]
    assert answers(query, ABC, "cqels", mode, "s") == [[("a",)], [("a",)], [("a",), ("c",)]]


@pytest.mark.parametrize("mode", MODES)
def test_the_patterns_reading_the_stream_share_the_n(mode):
    # A vehicle reported with :speed then :brake, then another vehicle's speed: in CQELS-QL 2.0 the
    # last two statements are v1's brake and v2's speed, and v1's speed has left the window; per
    # pattern (CQELS 1) :speed still holds v1 and v2, :brake v1, and v1 is one vehicle too many.
    query = f"SELECT ?v WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?v :speed ?x . ?v :brake ?y }} }}"
    pushes = [Push(S, 0, statement("v1", "speed", 90)), Push(S, 1, statement("v1", "brake", 1)), Push(S, 2, statement("v2", "speed", 50))]
    assert answers(query, pushes, "cqels2", mode, "v") == [[], [("v1",)], []]
    assert answers(query, pushes, "cqels", mode, "v") == [[], [("v1",)], [("v1",)]]


@pytest.mark.parametrize("mode", MODES)
def test_statements_matching_no_pattern_push_the_others_out(mode):
    query = f"SELECT ?s WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?s :p ?o }} }}"
    pushes = [Push(S, 0, statement("a", "p", 1)), Push(S, 1, statement("x", "r", 9)), Push(S, 2, statement("y", "r", 9))]
    assert answers(query, pushes, "cqels2", mode, "s") == [[("a",)], [("a",)], []]
    assert answers(query, pushes, "cqels", mode, "s") == [[("a",)], [("a",)], [("a",)]]


@pytest.mark.parametrize("mode", MODES)
def test_the_statements_of_one_event_count_in_the_events_order(mode):
    query = f"SELECT ?s WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?s :p ?o }} }}"
    event = "\n".join([statement("a", "p", 1), statement("b", "p", 2), statement("c", "q", 3)])
    assert answers(query, [Push(S, 0, event)], "cqels2", mode, "s") == [[("b",)]]
    assert answers(query, [Push(S, 0, event)], "cqels", mode, "s") == [[("a",), ("b",)]]


@pytest.mark.parametrize("mode", MODES)
def test_other_streams_do_not_count_and_the_count_starts_at_registration(mode):
    engine = Engine(dialect="cqels2")
    try:
        engine.push(S, statement("early", "p", 0), time=0)  # before the query: not among its statements
        query = engine.register(PREFIX + f"SELECT ?s WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?s :p ?o }} }}", r2s="RSTREAM", mode=mode)
        seen = []
        query.subscribe(lambda e: seen.append(rows(e, "s")))
        engine.push(S, statement("a", "p", 1), time=1)
        engine.push(OTHER, statement("x", "r", 9), time=2)  # a stream the query does not read
        engine.push(S, statement("b", "p", 2), time=3)
        engine.push(S, statement("c", "q", 3), time=4)
        assert seen == [[("a",)], [("a",), ("b",)], [("b",)]]
    finally:
        engine.close()


def test_one_text_in_both_dialects_keeps_two_window_states():
    engine = Engine()
    try:
        text = PREFIX + f"SELECT ?s WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?s :p ?o }} }}"
        seen: dict[str, list] = {}
        for dialect in ("cqels", "cqels2", "cqels2"):
            query = engine.register(text, name=f"{dialect}-{len(seen)}", r2s="RSTREAM", dialect=dialect)
            seen[query.name] = []
            query.subscribe(lambda e, name=query.name: seen[name].append(rows(e, "s")))
        # The two cqels2 queries share one state; the cqels one keeps its own.
        assert engine.shared_windows.stats() == {"windows": 2, "readers": 3}
        for push in ABC:
            engine.push(push.stream, push.data, time=push.time)
        assert seen == {
            "cqels-0": [[("a",)], [("a",)], [("a",), ("c",)]],
            "cqels2-1": [[("a",)], [("a",)], [("c",)]],
            "cqels2-2": [[("a",)], [("a",)], [("c",)]],
        }
        assert " StreamTriplesState: " in engine.queries["cqels2-1"].explain()
        assert " TriplesState: " in engine.queries["cqels-0"].explain()
    finally:
        engine.close()


def test_instances_of_a_template_share_the_streams_count():
    engine = Engine(dialect="cqels2")
    try:
        template = engine.template(f"# @param ?s\n{PREFIX}SELECT ?o WHERE {{ STREAM <{S}> [TRIPLES 2] {{ ?s :p ?o }} }}")
        instances = engine.register_instances(template, [(name, {"s": ox.NamedNode(EX + name)}) for name in "ac"], r2s="RSTREAM")
        seen = {instance.name: [] for instance in instances}
        for instance in instances:
            instance.subscribe(lambda e, name=instance.name: seen[name].append(rows(e, "o")))
        for push in ABC:
            engine.push(push.stream, push.data, time=push.time)
        assert seen == {"a": [[("1",)], [("1",)], []], "c": [[], [], [("3",)]]}
        assert engine.shared_windows.stats() == {"windows": 1, "readers": 1}
    finally:
        engine.close()


def test_explain_shows_a_stream_wide_window_and_the_text_keeps_triples_n():
    text = PREFIX + f"SELECT ?s FROM STREAM <{S}> [TRIPLES 2] WHERE {{ STREAM <{S}> [TRIPLES 3] {{ ?s :p ?o }} }}"
    parsed = parse_query(text)
    algebra = to_algebra(parsed, dialect="cqels2")
    assert [d.window for d in algebra.datasets] == [TriplesWindow(2, stream_wide=True)]
    assert "[TRIPLES 3 OF STREAM]" in explain_query(parsed, dialect="cqels2")
    assert "OF STREAM" not in explain_query(parsed, dialect="cqels")
    # The query text is the same in both dialects: [TRIPLES n] reads back as written.
    written = serialize_query(cqels2_windows(parsed))
    assert "[TRIPLES 2]" in written and "[TRIPLES 3]" in written and parse_query(written) == parsed


# --------------------------------------------------------------------------- the definition, drawn

SUBJECTS, PREDICATES = ("a", "b", "c"), ("p", "q", "r")
drawn_statements = st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(PREDICATES), st.integers(1, 3))
# (time step, stream, statements): several statements per event, equal times, a second stream.
drawn_events = st.lists(
    st.tuples(st.sampled_from([0, 0, 1, 2, 5]), st.sampled_from([S, S, S, OTHER]), st.lists(drawn_statements, min_size=1, max_size=4)),
    min_size=1,
    max_size=14,
)


def timed(drawn) -> list[tuple[int, str, list[tuple]]]:
    time, events = 0, []
    for step, stream, statements in drawn:
        time += step
        events.append((time, stream, statements))
    return events


def last(events, n: int, through: int | None = None) -> set[tuple]:
    """The distinct statements among the last ``n`` of stream S (with ``t ≤ through``): a window is a graph."""
    statements = [s for time, stream, batch in events if stream == S and (through is None or time <= through) for s in batch]
    return set(statements[-n:])


def matching(window: set[tuple], predicate: str) -> list[tuple]:
    return [(s, str(v)) for s, p, v in window if p == predicate]


# name → (query, the rows at an evaluation, from the events so far and the counts of the query)
SHAPES = {
    "one pattern": (
        "SELECT ?s ?o WHERE {{ STREAM <{S}> [TRIPLES {n}] {{ ?s :p ?o }} }}",
        lambda events, n, m: sorted(matching(last(events, n), "p")),
    ),
    "two patterns of one block": (
        "SELECT ?s ?o ?x WHERE {{ STREAM <{S}> [TRIPLES {n}] {{ ?s :p ?o . ?s :q ?x }} }}",
        lambda events, n, m: sorted(
            (s, o, x) for s, o in matching(last(events, n), "p") for t, x in matching(last(events, n), "q") if s == t
        ),
    ),
    "two blocks of their own n": (
        "SELECT ?s ?o ?x WHERE {{ STREAM <{S}> [TRIPLES {n}] {{ ?s :p ?o }} STREAM <{S}> [TRIPLES {m}] {{ ?s :q ?x }} }}",
        lambda events, n, m: sorted(
            (s, o, x) for s, o in matching(last(events, n), "p") for t, x in matching(last(events, m), "q") if s == t
        ),
    ),
}


def payload(statements: list[tuple]) -> str:
    return "\n".join(statement(*s) for s in statements)


@settings(max_examples=80, deadline=None)
@given(drawn=drawn_events, shape=st.sampled_from(sorted(SHAPES)), n=st.integers(1, 5), m=st.integers(1, 5))
def test_every_evaluation_sees_the_matches_among_the_last_n_statements(drawn, shape, n, m):
    events = timed(drawn)
    text, expected_rows = SHAPES[shape]
    query = text.format(S=S, n=n, m=m)
    names = ("s", "o") if shape == "one pattern" else ("s", "o", "x")
    # Evaluated at every event of S (the query reads no other stream), over the statements so far.
    expected = [expected_rows(events[: i + 1], n, m) for i, (_t, stream, _b) in enumerate(events) if stream == S]
    pushes = [Push(stream, time, payload(batch)) for time, stream, batch in events]
    for mode in MODES:
        assert answers(query, pushes, "cqels2", mode, *names) == expected, mode


@settings(max_examples=60, deadline=None)
@given(
    drawn=drawn_events, n=st.integers(1, 5), future=st.sampled_from([1, 3, 6]), step=st.sampled_from([None, 2, 4]),
    emit=st.sampled_from(["ON_CLOSE", "EARLY_AND_FINAL"]),
)
def test_beside_a_directional_window_it_is_read_at_each_anchor(drawn, n, future, step, emit):
    """§3.2: at an anchor a, ``[FUTURE f]`` holds a < t ≤ a + f and ``[TRIPLES n]`` the last n
    statements of its stream with t ≤ a; early results cut the future part at the event's time."""
    events = timed(drawn)
    window = f"[FUTURE {future}ms" + (f" STEP {step}ms" if step else "") + f" EMIT {emit}]"
    query = f"SELECT ?s ?o ?x WHERE {{ STREAM <{S}> {window} {{ ?s :p ?o }} STREAM <{S}> [TRIPLES {n}] {{ ?s :q ?x }} }}"
    times = sorted({t for t, stream, _b in events if stream == S})
    if not times:
        return
    end = events[-1][0] + future + 1  # closes every anchor

    def rows_at(anchor: int, known, cap: int) -> list[tuple]:
        ahead = {s for time, stream, batch in known if stream == S and anchor < time <= min(anchor + future, cap) for s in batch}
        return sorted((s, o, x) for s, o in matching(ahead, "p") for t, x in matching(last(known, n, anchor), "q") if s == t)

    anchors = times if step is None else list(range(times[0], end - future, step))
    expected, closed = [], set()
    for i, (time, stream, _batch) in enumerate(events):
        if stream != S:
            continue
        for anchor in (a for a in anchors if a + future < time and a not in closed):
            closed.add(anchor)
            expected.append((anchor, True, rows_at(anchor, events, end)))
        if emit == "EARLY_AND_FINAL":
            anchor = time if step is None else times[0] + (time - times[0]) // step * step
            expected.append((anchor, False, rows_at(anchor, events[: i + 1], time)))
    expected += [(a, True, rows_at(a, events, end)) for a in anchors if a not in closed]
    pushes = [Push(stream, time, payload(batch)) for time, stream, batch in events]
    for mode in MODES:
        emitted = run(PREFIX + query, pushes, mode=mode, r2s="RSTREAM", advance_to=end, dialect="cqels2")
        assert [(e.anchor, e.final, rows(e, "s", "o", "x")) for e in emitted] == expected, mode
