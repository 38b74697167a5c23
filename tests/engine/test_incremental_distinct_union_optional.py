"""Differential tests for DISTINCT/REDUCED, UNION and OPTIONAL in continuous queries.

Hypothesis draws queries that put these constructs over stream blocks (windows of every kind),
static data and each other — DISTINCT over a join, UNION branches with different columns joined
with a third block on a column one branch leaves unbound, OPTIONAL with a filter on the merged
row, OPTIONAL over a static pattern, CONSTRUCT over OPTIONAL — and replays a stream history with
``incremental_oracle``: incremental must equal recompute at every evaluation time, for ISTREAM,
RSTREAM and DSTREAM. Shrunk failures are kept under ``tests/regressions/distinct_union_optional/``
and run from then on as explicit cases.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS, Scenario, check, check_keeping_failures, emitted, regression_cases
from paths import TESTS
from test_incremental_differential import EX, STREAMS, WINDOWS, histories, static_graphs

from cqels_endpoint import Engine

REGRESSIONS = TESTS / "regressions" / "distinct_union_optional"
PREFIX = f"PREFIX : <{EX}>\n"

# Stream triple patterns, in groups that share variables with one another.
LEFT_SHAPES = ("?a :p ?b", "?a :q ?b", "?a :p ?b . ?b :p ?c", "?a :v ?n")
RIGHT_SHAPES = ("?b :q ?c", "?b :v ?n", "?b :p ?c", "?a :v ?m", "?c :p ?d")
OPTIONAL_FILTERS = ("?n > 1", "?c != ?a", "!BOUND(?c) || ?c = :e1", "?n + 1 > 2", "?b = :e0")
STATIC_RIGHT = ("?b :s ?c", "GRAPH :g { ?b :u ?d }", "?a :t ?n")
STATIC_LEFT = ("?a :s ?b", "GRAPH :g { ?a :u ?b }")


@st.composite
def blocks(draw, shapes: tuple[str, ...]) -> str:
    stream = draw(st.sampled_from(STREAMS))
    return f"STREAM <{stream}> {draw(WINDOWS)} {{ {draw(st.sampled_from(shapes))} }}"


@st.composite
def optional_patterns(draw) -> str:
    # Mostly a stream on the left; a static left with a streaming OPTIONAL sometimes.
    left = draw(st.one_of(blocks(LEFT_SHAPES), blocks(LEFT_SHAPES), st.sampled_from(STATIC_LEFT)))
    if not left.startswith("STREAM") or draw(st.sampled_from((True, True, False))):
        right = draw(blocks(RIGHT_SHAPES))
    else:
        right = draw(st.sampled_from(STATIC_RIGHT))
    if draw(st.booleans()):
        right += f" FILTER ({draw(st.sampled_from(OPTIONAL_FILTERS))})"
    text = f"{left} OPTIONAL {{ {right} }}"
    if draw(st.booleans()):
        # A second OPTIONAL, or a join on a column the OPTIONAL may leave unbound.
        text += draw(st.sampled_from((f" OPTIONAL {{ {draw(blocks(RIGHT_SHAPES))} }}", f" {draw(blocks(RIGHT_SHAPES))}")))
    return text


@st.composite
def union_patterns(draw) -> str:
    first = draw(st.one_of(blocks(LEFT_SHAPES), blocks(LEFT_SHAPES), st.sampled_from(STATIC_LEFT)))
    text = f"{{ {first} }} UNION {{ {draw(blocks(LEFT_SHAPES + RIGHT_SHAPES))} }}"
    if draw(st.booleans()):
        # Joined on columns one branch may not bind: unbound must be compatible with anything.
        text += f" {draw(blocks(RIGHT_SHAPES))}"
    return text


@st.composite
def queries(draw) -> str:
    kind = draw(st.sampled_from(("distinct", "union", "optional", "mixed")))
    if kind == "distinct":
        body = draw(blocks(LEFT_SHAPES))
        if draw(st.booleans()):
            body += " " + draw(st.sampled_from((draw(blocks(RIGHT_SHAPES)), "?b :s ?c", "FILTER (?a != :e2)")))
    elif kind == "union":
        body = draw(union_patterns())
    elif kind == "optional":
        body = draw(optional_patterns())
    else:
        body = f"{{ {draw(optional_patterns())} }} UNION {{ {draw(blocks(RIGHT_SHAPES))} }}"
    head = draw(st.sampled_from(("SELECT *", "SELECT DISTINCT *", "SELECT REDUCED *", "SELECT DISTINCT ?a ?b", "SELECT DISTINCT ?b", "CONSTRUCT")))
    if head == "CONSTRUCT":
        return PREFIX + f"CONSTRUCT {{ ?a :out ?b . ?b :val ?c }}\nWHERE {{ {body} }}"
    return PREFIX + f"{head}\nWHERE {{ {body} }}"


@settings(ORACLE_SETTINGS, max_examples=200)
@given(query=queries(), static=static_graphs(), events=histories())
def test_incremental_equals_recompute(query: str, static: str, events: list[list]) -> None:
    logs = check_keeping_failures(Scenario(query, static, events), REGRESSIONS)
    event("Γ gained rows" if emitted(logs, "ISTREAM") else "Γ stayed empty")


@pytest.mark.parametrize(("name", "scenario"), regression_cases(REGRESSIONS))
def test_regression(name: str, scenario: Scenario) -> None:
    check(scenario)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT DISTINCT ?a WHERE { STREAM <http://ex.org/s0> [ALL] { ?a :p ?b } }", "D1 distinct [?a]"),
        ("SELECT REDUCED ?a WHERE { STREAM <http://ex.org/s0> [ALL] { ?a :p ?b } }", "D1 reduced (as distinct) [?a]"),
        (
            "SELECT * WHERE { { STREAM <http://ex.org/s0> [ALL] { ?a :p ?b } } UNION { STREAM <http://ex.org/s1> [ALL] { ?a :q ?c } } }",
            "U1 union [?a ?b ?c]",
        ),
        (
            "SELECT * WHERE { STREAM <http://ex.org/s0> [ALL] { ?a :p ?b } OPTIONAL { ?b :s ?c FILTER (?c != ?a) } }",
            "O1 optional [?a ?b ?c] if ((?c != ?a))",
        ),
    ],
)
def test_explain_names_the_operators(query: str, expected: str) -> None:
    engine = Engine()
    registered = engine.register(PREFIX + query)
    engine.push(STREAMS[0], f"<{EX}e0> <{EX}p> <{EX}e1> .", time=1)
    assert expected in registered.explain()
    engine.close()


def test_optional_padded_row_is_retracted_and_readded_as_the_right_side_comes_and_goes() -> None:
    engine = Engine()
    query = engine.register(
        PREFIX + "SELECT * WHERE { STREAM <http://ex.org/s0> [RANGE 10ms] { ?a :p ?b } "
        "OPTIONAL { STREAM <http://ex.org/s1> [RANGE 2ms] { ?b :q ?c } } }",
        r2s="RSTREAM",
    )
    seen: list = []
    query.subscribe(seen.append)
    engine.push(STREAMS[0], f"<{EX}e0> <{EX}p> <{EX}e1> .", time=1)
    engine.push(STREAMS[1], f"<{EX}e1> <{EX}q> <{EX}e2> .", time=2)
    engine.advance(5)
    values = [sorted((k, str(v)) for row in e.rows for k, v in row.items()) for e in seen]
    assert values[0] == [("a", f"<{EX}e0>"), ("b", f"<{EX}e1>")]
    assert values[1] == [("a", f"<{EX}e0>"), ("b", f"<{EX}e1>"), ("c", f"<{EX}e2>")]
    assert values[-1] == values[0]  # the right triple left its 2 ms window: the padded row is back
    engine.close()
