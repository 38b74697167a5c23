"""Differential tests of FILTER NOT EXISTS / FILTER EXISTS / MINUS: incremental == recompute.

Hypothesis draws a query whose left side is one or two stream blocks and whose right side is a
(NOT) EXISTS group or a MINUS operand — streaming with its own window, or static — including the
correlated shape of DEBS 2015 Q2's "empty taxis" (``FILTER NOT EXISTS { STREAM … { ?trip3 :taxi
?taxi . ?trip3 :pickupTime ?pickup } FILTER (?pickup > ?dropoff) }``, here over the test
vocabulary: trips ``?a``/``?c`` with taxi ``:p`` and time ``:v``), and the stream histories of
``test_incremental_differential`` so that rows enter and expire on both sides. Every emission of
all three R2S must agree at every evaluation time (``incremental_oracle``). Shrunk failures are
kept under ``tests/regressions/incremental_negation/`` and replayed below.
"""

from __future__ import annotations

import pytest
from debs import trip_events
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from incremental_oracle import (
    ORACLE_SETTINGS,
    REGRESSIONS,
    Scenario,
    check,
    check_keeping_failures,
    differences,
    emitted,
    regression_cases,
    run_both,
)
from test_incremental_differential import EX, STREAMS, WINDOWS, histories, static_graphs

from cqels_endpoint import Engine
from cqels_endpoint.errors import PlanError

NEGATION_REGRESSIONS = REGRESSIONS.parent / "incremental_negation"

LEFT_BLOCKS = ("?a :p ?b", "?a :p ?b . ?a :v ?n", "?a :q ?b", "?a :v ?n")
# Right sides: (text with {stream} and {window} holes, variables the left side must bind).
RIGHT_SIDES = (
    ("FILTER NOT EXISTS {{ STREAM <{stream}> {window} {{ ?b :p ?c }} }}", {"b"}),
    ("FILTER EXISTS {{ STREAM <{stream}> {window} {{ ?a :q ?c }} }}", {"a"}),
    ("FILTER NOT EXISTS {{ STREAM <{stream}> {window} {{ ?a :v ?m }} FILTER (?m > ?n) }}", {"a", "n"}),
    ("FILTER EXISTS {{ STREAM <{stream}> {window} {{ ?c :p ?b }} FILTER (?c != ?a) }}", {"a", "b"}),
    ("MINUS {{ STREAM <{stream}> {window} {{ ?a :q ?c }} }}", {"a"}),
    ("MINUS {{ STREAM <{stream}> {window} {{ ?x :p ?y }} }}", set()),
    ("FILTER NOT EXISTS {{ ?b :s ?c }}", {"b"}),
    ("FILTER EXISTS {{ ?a :t ?m FILTER (?m >= ?n) }}", {"a", "n"}),
    ("MINUS {{ ?a :t ?n }}", {"a"}),
    # Shared variables the static side may leave unbound (checked per candidate, not hashed).
    ("MINUS {{ {{ ?x :s ?a }} UNION {{ ?b :s ?x }} }}", {"a", "b"}),
    # Shared variable the outer side may leave unbound (a BIND whose expression errors).
    ("BIND (IF(?n > 1, ?b, 1 / 0) AS ?d) FILTER NOT EXISTS {{ ?d :s ?c }}", {"b", "n"}),
    ("BIND (IF(?n > 1, ?b, 1 / 0) AS ?d) MINUS {{ ?d :s ?c }}", {"b", "n"}),
    ("BIND (IF(?n > 1, ?b, 1 / 0) AS ?d) FILTER EXISTS {{ STREAM <{stream}> {window} {{ ?d :p ?c }} }}", {"b", "n"}),
    # A (NOT) EXISTS nested in the inner group's FILTERs, reading only the inner group's variables.
    (
        "FILTER EXISTS {{ STREAM <{stream}> {window} {{ ?a :q ?c }} "
        "FILTER NOT EXISTS {{ STREAM <{stream}> {window} {{ ?c :p ?d }} }} }}",
        {"a"},
    ),
    ("FILTER NOT EXISTS {{ STREAM <{stream}> {window} {{ ?b :p ?c }} FILTER EXISTS {{ ?c :s ?d }} }}", {"b"}),
    (
        "FILTER NOT EXISTS {{ STREAM <{stream}> {window} {{ ?a :v ?m }} FILTER (?m > ?n) "
        "FILTER EXISTS {{ STREAM <{stream}> {window} {{ ?a :v ?k }} FILTER (?k < ?m) }} }}",
        {"a", "n"},
    ),
    # DEBS Q2 "empty taxis": the trip ?a of taxi ?b dropped off at ?n has no later pick-up ?m of ?b.
    ("FILTER NOT EXISTS {{ STREAM <{stream}> {window} {{ ?c :p ?b . ?c :v ?m }} FILTER (?m > ?n) }}", {"b", "n"}),
    # (NOT) EXISTS inside a larger expression: a mark operator whose column the expression reads,
    # also in the inner group's FILTER (there the mark sits in the right input).
    ("FILTER NOT EXISTS {{ STREAM <{stream}> {window} {{ ?b :p ?c }} FILTER (?c = :e0 || EXISTS {{ ?c :s ?d }}) }}", {"b"}),
    ("FILTER NOT EXISTS {{ ?b :s ?c FILTER (?c = :e0 || EXISTS {{ ?c :s ?d }}) }}", {"b"}),
    (
        "FILTER EXISTS {{ STREAM <{stream}> {window} {{ ?a :q ?c }} "
        "FILTER (?n > 1 || NOT EXISTS {{ STREAM <{stream}> {window} {{ ?c :p ?d }} }}) }}",
        {"a", "n"},
    ),
    ("FILTER (?a = :e0 || NOT EXISTS {{ STREAM <{stream}> {window} {{ ?b :p ?c }} }})", {"a", "b"}),
    ("FILTER (?n > 1 && EXISTS {{ STREAM <{stream}> {window} {{ ?a :v ?m }} FILTER (?m > ?n) }} || ?n = 0)", {"a", "n"}),
    ("BIND (EXISTS {{ STREAM <{stream}> {window} {{ ?a :q ?c }} }} AS ?x)", {"a"}),
    ("BIND (IF(NOT EXISTS {{ ?a :t ?m }}, ?b, 1 / 0) AS ?x) FILTER (!BOUND(?x) || !EXISTS {{ ?x :s ?c }})", {"a", "b"}),
)
DEBS_Q2_EMPTY_TAXIS = f"""PREFIX : <{EX}>
SELECT ?a ?b ?n WHERE {{
  STREAM <{STREAMS[0]}> [RANGE 30ms] {{ ?a :p ?b . ?a :v ?n }}
  FILTER NOT EXISTS {{
    STREAM <{STREAMS[0]}> [RANGE 30ms] {{ ?c :p ?b . ?c :v ?m }}
    FILTER (?m > ?n)
  }}
}}"""


@st.composite
def negation_queries(draw) -> str:
    left = draw(st.sampled_from(LEFT_BLOCKS))
    if draw(st.booleans()):
        left += " . ?a :v ?n" if "?n" not in left else ""
    scope = {"a", "b", "n"} if "?n" in left else {"a", "b"}
    if "?b" not in left:
        scope.discard("b")
    sides = [text for text, needs in RIGHT_SIDES if needs <= scope]
    side = draw(st.sampled_from(sides)).format(stream=draw(st.sampled_from(STREAMS)), window=draw(WINDOWS))
    body = [f"STREAM <{draw(st.sampled_from(STREAMS))}> {draw(WINDOWS)} {{ {left} }}", side]
    if "STREAM" in side and draw(st.integers(0, 3)) == 0:
        # A static outer side: only the inner side streams.
        body[0], scope = "?a :t ?n . ?a :s ?b", {"a", "b", "n"}
    if draw(st.booleans()) and "n" in scope:
        body.append("FILTER (?n < 3)")
    head = draw(st.sampled_from(("SELECT *", "SELECT ?a", "CONSTRUCT { ?a :out ?b }" if "b" in scope else "SELECT ?a")))
    return f"PREFIX : <{EX}>\n{head}\nWHERE {{\n  " + "\n  ".join(body) + "\n}"


@settings(ORACLE_SETTINGS, max_examples=400)
@given(query=negation_queries(), static=static_graphs(), events=histories())
def test_negation_incremental_equals_recompute(query: str, static: str, events: list[list]) -> None:
    logs = check_keeping_failures(Scenario(query, static, events), NEGATION_REGRESSIONS)
    removed, added = emitted(logs, "DSTREAM"), emitted(logs, "ISTREAM")
    event("rows entered and left Γ" if removed else "rows entered Γ" if added else "Γ stayed empty")


@settings(ORACLE_SETTINGS, max_examples=100)
@given(events=histories())
def test_debs_q2_empty_taxis_shape(events: list[list]) -> None:
    scenario = Scenario(DEBS_Q2_EMPTY_TAXIS, "", events)
    note(scenario.to_json())
    check(scenario)


def test_debs_q2_empty_taxis_by_hand() -> None:
    """Taxi e1 drops off at 5; a later pick-up at 7 makes it non-empty; that pick-up expiring
    (RANGE 30ms) makes it empty again."""
    t = "<http://www.w3.org/2001/XMLSchema#integer>"
    events = [
        ["push", STREAMS[0], 1, f'<{EX}t1> <{EX}p> <{EX}e1> .\n<{EX}t1> <{EX}v> "5"^^{t} .'],
        ["push", STREAMS[0], 2, f'<{EX}t2> <{EX}p> <{EX}e1> .\n<{EX}t2> <{EX}v> "7"^^{t} .'],
        ["advance", 40],
    ]
    logs = run_both(Scenario(DEBS_Q2_EMPTY_TAXIS, "", events))
    assert not differences(logs)
    rows = [(e.time, sorted(str(r["a"]) for r in e.rows)) for e in logs["incremental", "RSTREAM"]]
    # τ=1: t1 empty (no later pick-up yet); τ=2: t1 has one (t2 at 7), t2 is empty; t1 expires at 31.
    assert rows[0] == (1, [f"<{EX}t1>"])
    assert rows[1] == (2, [f"<{EX}t2>"])


def test_correlated_exists_inside_exists_is_refused() -> None:
    engine = Engine()
    query = f"PREFIX : <{EX}> SELECT * WHERE {{ STREAM <{STREAMS[0]}> [ALL] {{ ?a :p ?b }} FILTER NOT EXISTS {{ ?b :s ?c FILTER EXISTS {{ ?c :s ?a }} }} }}"
    with pytest.raises(PlanError, match="nested inside another one"):
        engine.register(query)
    engine.close()


def test_exists_inside_an_order_by_is_refused() -> None:
    engine = Engine()
    query = f"PREFIX : <{EX}> SELECT * WHERE {{ STREAM <{STREAMS[0]}> [ALL] {{ ?a :p ?b }} }} ORDER BY (NOT EXISTS {{ ?b :s ?c }})"
    with pytest.raises(PlanError, match="only FILTER and BIND expressions"):
        engine.register(query)
    engine.close()


def test_exists_inside_an_expression_by_hand() -> None:
    """``?a = :e0 || NOT EXISTS { ?b :q ?c }``: e2's row is out while ``e1 :q e3`` is in the window
    and comes in when it expires, e0's row stays; the BIND reads the other mark, which turns true."""
    n = lambda name: f"<{EX}{name}>"  # noqa: E731
    query = f"""PREFIX : <{EX}> SELECT ?a ?x WHERE {{
      STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?a :p ?b }}
      FILTER (?a = :e0 || NOT EXISTS {{ STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?b :q ?c }} }})
      BIND (EXISTS {{ STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?a :q ?d }} }} AS ?x)
    }}"""
    events = [
        ["push", STREAMS[0], 1, f"{n('e1')} {n('q')} {n('e3')} ."],
        ["push", STREAMS[0], 5, f"{n('e0')} {n('p')} {n('e1')} .\n{n('e2')} {n('p')} {n('e1')} ."],
        ["push", STREAMS[0], 8, f"{n('e0')} {n('q')} {n('e3')} ."],
        ["advance", 12],
        ["advance", 16],
    ]
    logs = run_both(Scenario(query, "", events))
    assert not differences(logs)
    rows = [(e.time, sorted((r["a"].value, r["x"].value) for r in e.rows)) for e in logs["incremental", "RSTREAM"]]
    assert rows == [
        (1, []),
        (5, [(f"{EX}e0", "false")]),
        (8, [(f"{EX}e0", "true")]),
        (12, [(f"{EX}e0", "true"), (f"{EX}e2", "false")]),
        (16, []),
    ]


MARKED_SHAPES = (
    # A static outer side, the EXISTS streaming: the extend sits on a static cache.
    f"SELECT ?a (EXISTS {{ STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?a :q ?c }} }} AS ?x) WHERE {{ ?a :t ?n }}",
    # HAVING: the mark sits on the groups, joined on the group key.
    f"SELECT ?a (COUNT(*) AS ?k) WHERE {{ STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?a :q ?c }} }} GROUP BY ?a "
    "HAVING (COUNT(*) > 1 || NOT EXISTS { ?a :t 1 })",
    # Two marks in one expression, one of them in the condition of an IF.
    f"SELECT * WHERE {{ STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?a :q ?c }} "
    f"BIND (IF(EXISTS {{ ?c :t ?m }}, NOT EXISTS {{ STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?c :q ?a }} }}, false) AS ?x) }}",
)


@pytest.mark.parametrize("shape", MARKED_SHAPES)
def test_exists_marks_in_other_places(shape: str) -> None:
    integer = "<http://www.w3.org/2001/XMLSchema#integer>"
    static = f'<{EX}e0> <{EX}t> "1"^^{integer} .\n<{EX}e1> <{EX}t> "2"^^{integer} .'
    events = [
        ["push", STREAMS[0], 1, f"<{EX}e0> <{EX}q> <{EX}e1> ."],
        ["push", STREAMS[0], 3, f"<{EX}e1> <{EX}q> <{EX}e1> ."],
        ["advance", 12],
        ["push", STREAMS[0], 13, f"<{EX}e1> <{EX}q> <{EX}e2> ."],
    ]
    logs = check(Scenario(f"PREFIX : <{EX}>\n{shape}", static, events))
    assert emitted(logs, "ISTREAM")


@pytest.mark.parametrize(("name", "scenario"), regression_cases(NEGATION_REGRESSIONS))
def test_regression(name: str, scenario: Scenario) -> None:
    check(scenario)


DEBS_Q2_INNER = """PREFIX : <http://debs2015.org/taxi#>
SELECT ?trip2 ?taxi ?dropoff WHERE {
  STREAM <http://debs2015.org/streams/trips> [RANGE 30m] { ?trip2 :taxi ?taxi . ?trip2 :dropoffTime ?dropoff . }
  FILTER NOT EXISTS {
    STREAM <http://debs2015.org/streams/trips> [RANGE 30m] { ?trip3 :taxi ?taxi . ?trip3 :pickupTime ?pickup . }
    FILTER (?pickup > ?dropoff)
  }
}"""


def test_debs_q2_empty_taxis_on_the_sample_trips() -> None:
    logs = run_both(Scenario(DEBS_Q2_INNER, "", trip_events(300, ("taxi", "pickupTime", "dropoffTime"))))
    assert not differences(logs)
    assert max(len(e.rows) for e in logs["incremental", "RSTREAM"]) > 0
    # The 300 drop-offs span 10 minutes, inside RANGE 30m: nothing expires, so every row leaving Γ
    # (DSTREAM) was negated by a later pick-up of the same taxi.
    assert sum(len(e.rows) for e in logs["incremental", "DSTREAM"]) > 0


def test_explain_names_the_negation() -> None:
    engine = Engine()
    query = engine.register(DEBS_Q2_EMPTY_TAXIS)
    text = query.explain()
    engine.close()
    assert "not exists [?a ?b ?n] probed on ?b via hash index where ((?m > ?n))" in text
