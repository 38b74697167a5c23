"""Continuous ASK: Γ is ``Distinct(Project((), P))``, the empty mapping while ``P`` has a solution.

Each emission carries ``boolean``: RSTREAM answers at every evaluation, ISTREAM emits ``True`` when
the answer turns true, DSTREAM ``False`` when it turns false (the R2S of that one-row relation).
Hypothesis turns the WHERE clauses of the other differential generators into ASK queries and asks
incremental == recompute (pyoxigraph's own ASK over the windows) at every evaluation time.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS, R2S, Scenario, run_both
from test_incremental_differential import EX, STREAMS, histories, static_graphs
from test_incremental_differential import queries as join_queries
from test_incremental_distinct_union_optional import queries as union_queries
from test_incremental_values_paths import path_queries

from cqels_endpoint import Engine

PREFIX = f"PREFIX : <{EX}>\n"


def as_ask(query: str) -> str:
    """The query with its head (the line after the prefix) replaced by ASK: its WHERE clause kept."""
    prefix, _head, where = query.split("\n", 2)
    return f"{prefix}\nASK\n{where}"


def booleans(logs: dict, mode: str, r2s: str) -> list[tuple[int, bool]]:
    return [(emission.time, emission.boolean) for emission in logs[mode, r2s]]


@settings(ORACLE_SETTINGS, max_examples=120)
@given(
    query=st.one_of(join_queries(), union_queries(), path_queries()),
    static=static_graphs(),
    events=histories(),
)
def test_incremental_equals_recompute(query: str, static: str, events: list[list]) -> None:
    scenario = Scenario(as_ask(query), static, events)
    note(scenario.to_json())
    logs = run_both(scenario)
    for r2s in R2S:
        assert booleans(logs, "incremental", r2s) == booleans(logs, "recompute", r2s), r2s
    assert logs["snapshot", "incremental"] == logs["snapshot", "recompute"]


def test_each_r2s_reports_the_answer_as_decided() -> None:
    engine = Engine()
    text = PREFIX + f"ASK WHERE {{ STREAM <{STREAMS[0]}> [RANGE 10ms] {{ ?a :v ?n }} FILTER (?n > 1) }}"
    logs = {}
    for r2s in R2S:
        logs[r2s] = []
        engine.register(text, name=r2s, r2s=r2s).subscribe(logs[r2s].append)
    for time, number in ((1, 1), (3, 2), (5, 3)):
        engine.push(STREAMS[0], f'<{EX}e0> <{EX}v> "{number}"^^<http://www.w3.org/2001/XMLSchema#integer> .', time=time)
    engine.advance(14)  # the 2 left at 13, the 3 is still there
    engine.advance(16)  # the 3 left at 15: false again
    assert [(e.time, e.boolean) for e in logs["RSTREAM"]] == [(1, False), (3, True), (5, True), (14, True), (16, False)]
    assert [(e.time, e.boolean) for e in logs["ISTREAM"]] == [(3, True)]
    assert [(e.time, e.boolean) for e in logs["DSTREAM"]] == [(16, False)]
    assert engine.queries["RSTREAM"].snapshot() == []
    engine.close()


def test_an_ask_emission_is_a_sparql_boolean_result() -> None:
    engine = Engine()
    query = engine.register(PREFIX + f"ASK {{ STREAM <{STREAMS[0]}> [ALL] {{ ?a :p ?b }} }}", r2s="RSTREAM")
    seen: list = []
    query.subscribe(seen.append)
    engine.push(STREAMS[0], f"<{EX}e0> <{EX}p> <{EX}e1> .", time=7)
    (emission,) = seen
    assert emission.rows is None and emission.triples is None
    assert emission.to_sparql_json() == {"head": {}, "boolean": True}
    assert emission.to_json() == {"query": query.name, "time": 7, "r2s": "RSTREAM", "head": {}, "boolean": True}
    with pytest.raises(TypeError):
        emission.to_ntriples()
    assert query.snapshot() == [{}]
    assert "D1 distinct []" in query.explain()
    engine.close()
