"""Differential tests of nested SELECTs: incremental == recompute at every evaluation.

Hypothesis draws a query with sub-queries anywhere a pattern can be: a grouped sub-query joined with
a stream pattern, two grouped sub-queries joined (the DEBS 2015 Q2 shape), a sub-query with its own
window, a sub-query with ORDER BY … LIMIT, a DISTINCT sub-query in an OPTIONAL, a static sub-query
(a cache) with a LIMIT, and an outer top-k over a sub-query. The inner variables a sub-query does
not project must not leak out (``?n`` below is bound inside and outside, independently). Both modes
run with all three R2S (``incremental_oracle``). DEBS Q2 itself runs as written on the first sample
trips. Failing examples are kept under ``tests/regressions/subqueries/``.
"""

from __future__ import annotations

import pytest
from debs import trip_events
from hypothesis import given, settings
from hypothesis import strategies as st
from incremental_oracle import (
    ORACLE_SETTINGS,
    REGRESSIONS,
    Scenario,
    check,
    check_keeping_failures,
    differences,
    regression_cases,
    run_both,
)
from paths import ROOT
from test_incremental_differential import WINDOWS, static_graphs
from test_incremental_topk import STREAMS, histories, instantiate

from cqels_endpoint import Engine

EX = "http://ex.org/"
SAVED = REGRESSIONS.parent / "subqueries"

QUERIES = (
    # A grouped sub-query joined with a stream pattern; its ?n does not leak into the outer ?n.
    """SELECT ?a ?n ?c WHERE { STREAM <{s1}> {w2} { ?a :v ?n }
         { SELECT ?a (COUNT(?n) AS ?c) WHERE { STREAM <{s0}> {w} { ?a :v ?n } } GROUP BY ?a } }""",
    # Two grouped sub-queries joined, a SELECT expression over both, top-k (DEBS Q2's shape).
    """SELECT ?a ?s ?c ((?s / ?c) AS ?r) WHERE {
         { SELECT ?a (SUM(?n) AS ?s) WHERE { STREAM <{s0}> {w} { ?a :v ?n } } GROUP BY ?a HAVING (SUM(?n) > 0) }
         { SELECT ?a (COUNT(?b) AS ?c) WHERE { STREAM <{s1}> {w2} { ?a :p ?b } } GROUP BY ?a } }
       ORDER BY DESC(?r) LIMIT {k}""",
    # A sub-query with its own window over the same stream.
    """SELECT ?a ?m WHERE { STREAM <{s0}> {w} { ?a :p ?b }
         { SELECT ?b (MAX(?n) AS ?m) WHERE { STREAM <{s0}> [RANGE 2ms] { ?b :v ?n } } GROUP BY ?b } }""",
    # A sub-query with ORDER BY … LIMIT: only its top rows join.
    """SELECT ?a ?b ?n WHERE { STREAM <{s1}> {w2} { ?a :p ?b }
         { SELECT ?a ?n WHERE { STREAM <{s0}> {w} { ?a :v ?n } } ORDER BY DESC(?n) LIMIT {k} OFFSET {m} } }""",
    # A sub-query with LIMIT and no ORDER BY, a DISTINCT sub-query in an OPTIONAL.
    """SELECT * WHERE { STREAM <{s1}> {w2} { ?a :p ?b }
         OPTIONAL { SELECT DISTINCT ?b WHERE { STREAM <{s0}> {w} { ?b :v ?n } } } }""",
    """SELECT ?a ?x WHERE { STREAM <{s0}> {w} { ?a :v ?n }
         { SELECT ?a (?n2 + 1 AS ?x) WHERE { STREAM <{s1}> {w2} { ?a :v ?n2 } } LIMIT {k} } }""",
    # A static sub-query (a cache) with its own top-k, joined with a stream.
    """SELECT ?a ?n ?t WHERE { STREAM <{s0}> {w} { ?a :v ?n }
         { SELECT ?a ?t WHERE { ?a :t ?t } ORDER BY DESC(?t) LIMIT 2 } }""",
    # Top-k over a grouped sub-query, with a UNION of sub-queries under it.
    """SELECT ?a ?c WHERE {
         { SELECT ?a (COUNT(*) AS ?c) WHERE {
             { SELECT ?a WHERE { STREAM <{s0}> {w} { ?a :v ?n } } }
             UNION { SELECT ?a WHERE { STREAM <{s1}> {w2} { ?a :p ?b } } }
           } GROUP BY ?a } }
       ORDER BY DESC(?c) LIMIT 2""",
)


@st.composite
def scenarios(draw) -> Scenario:
    query = instantiate(
        draw(st.sampled_from(QUERIES)), draw(WINDOWS), draw(WINDOWS), draw(st.integers(1, 3)), draw(st.integers(0, 2))
    )
    return Scenario(query, draw(static_graphs()), draw(histories()))


@settings(ORACLE_SETTINGS, max_examples=120)
@given(scenario=scenarios())
def test_subqueries_incremental_equals_recompute(scenario: Scenario) -> None:
    check_keeping_failures(scenario, SAVED)


@pytest.mark.parametrize(("name", "scenario"), regression_cases(SAVED))
def test_regression(name: str, scenario: Scenario) -> None:
    check(scenario)


def test_every_query_shape_compiles_to_an_incremental_plan() -> None:
    engine = Engine()
    for number, template in enumerate(QUERIES):
        query = engine.register(instantiate(template, "[RANGE 5ms]", "[ALL]", 2, 1), name=f"q{number}")
        assert "select (incremental)" in query.explain()
    engine.close()


def test_inner_variables_that_are_not_projected_do_not_leak() -> None:
    text = instantiate(QUERIES[0], "[ALL]", "[ALL]", 0, 0)
    engine = Engine()
    query = engine.register(text, name="q", r2s="RSTREAM")
    engine.push(STREAMS[0], f'<{EX}a> <{EX}v> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .', time=0)
    engine.push(STREAMS[1], f'<{EX}a> <{EX}v> "7"^^<http://www.w3.org/2001/XMLSchema#integer> .', time=1)
    [row] = query.snapshot()
    assert (row["n"].value, row["c"].value) == ("7", "1")
    engine.close()


def test_debs_q2_as_written_on_the_sample_trips() -> None:
    """DEBS 2015 Q2 (examples/queries): two grouped sub-queries (MEDIAN; COUNT under a correlated NOT
    EXISTS) joined, a SELECT expression, ORDER BY DESC LIMIT 10 — on the first 150 sample trips,
    incremental == recompute at every tick for every R2S, top 10 compared in order."""
    text = (ROOT / "examples" / "queries" / "debs-q2-profitable-areas.rq").read_text()
    predicates = ("fare", "tip", "pickLat", "pickLon", "dropLat", "dropLon", "taxi", "dropoffTime", "pickupTime")
    logs = run_both(Scenario(text, "", trip_events(150, predicates)))
    assert differences(logs) == []
    assert logs["ordered", "rows"] == [True]
    assert len(logs["incremental", "RSTREAM"][-1].rows) == 10
    assert sum(len(e.rows) for e in logs["incremental", "ISTREAM"]) > 20
