"""MEDIAN (our extension aggregate) in recompute mode: pyoxigraph evaluates it as the custom
aggregate ``<MEDIAN_IRI>(e)`` written by ``to_sparql``, and must agree with the incremental
operator at every evaluation time, for every R2S (``incremental_oracle``)."""

from __future__ import annotations

import pytest
from debs import trip_events
from incremental_oracle import Scenario, differences, run_both
from paths import ROOT

from cqels_endpoint import Engine
from cqels_endpoint.errors import PlanError

EX = "http://ex.org/"
TAXI = "http://debs2015.org/taxi#"
XSD = "http://www.w3.org/2001/XMLSchema#"
TRIPS = "http://debs2015.org/streams/trips"


def integer(value: int) -> str:
    return f'"{value}"^^<{XSD}integer>'


def test_grouped_median_incremental_equals_recompute() -> None:
    """Groups gaining and losing values (odd and even counts, a decimal, a string that makes the
    group's MEDIAN unbound) as a sliding window moves: both modes emit the same rows every tick."""
    query = f"""PREFIX : <{EX}>
        SELECT ?a (MEDIAN(?n) AS ?m) (MEDIAN(?n * 2) AS ?m2) (COUNT(*) AS ?c)
        WHERE {{ STREAM <{EX}s0> [RANGE 10ms SLIDE 2ms] {{ ?a :v ?n }} }} GROUP BY ?a"""
    pushes = [
        (1, "e0", integer(5)), (2, "e0", integer(1)), (3, "e1", integer(7)), (4, "e0", integer(3)),
        (5, "e0", f'"2.5"^^<{XSD}decimal>'), (7, "e1", integer(2)), (8, "e2", '"x"'), (9, "e2", integer(4)),
        (13, "e0", integer(9)), (16, "e1", integer(8)), (21, "e2", integer(6)),
    ]
    events = [["push", f"{EX}s0", time, f"<{EX}{subject}> <{EX}v> {value} ."] for time, subject, value in pushes]
    events.append(["advance", 40])
    logs = run_both(Scenario(query, "", events))
    assert differences(logs) == []
    medians = {row["m"].value for emission in logs["recompute", "ISTREAM"] for row in emission.rows if "m" in row}
    # Lower medians seen on the way: e0 {5,1} → 1, {5,1,3} → 3, e1 {7,2} → 2.
    assert {"1", "3", "2"} <= medians


def test_median_distinct_is_refused_in_recompute_mode_with_its_line() -> None:
    query = f"""PREFIX : <{EX}>
        SELECT ?a
               (MEDIAN(DISTINCT ?n) AS ?m)
        WHERE {{ STREAM <{EX}s0> [RANGE 10ms] {{ ?a :v ?n }} }} GROUP BY ?a"""
    engine = Engine()
    try:
        with pytest.raises(PlanError, match=r"MEDIAN\(DISTINCT …\) \(line 3\)"):
            engine.register(query, name="median-distinct", mode="recompute")
    finally:
        engine.close()


def debs_q2_profit_query() -> str:
    """The first sub-query of DEBS Q2 (examples/queries), as a query of its own."""
    text = (ROOT / "examples" / "queries" / "debs-q2-profitable-areas.rq").read_text()
    start = text.index("{ SELECT ?pE ?pS (MEDIAN")
    end = text.index("HAVING (?pE > 0 && ?pE < 601 && ?pS > 0 && ?pS < 601)", start)
    inner = text[start + 2 : end] + "HAVING (?pE > 0 && ?pE < 601 && ?pS > 0 && ?pS < 601)"
    return f"PREFIX : <{TAXI}>\n" + inner


def test_debs_q2_profit_sub_query_runs_in_recompute_mode_on_sample_trips() -> None:
    query = debs_q2_profit_query()
    assert "MEDIAN(?fare + ?tip)" in query and "[RANGE 15m]" in query
    logs = run_both(Scenario(query, "", trip_events(100, ("pickLon", "pickLat", "fare", "tip"))))
    assert differences(logs) == []
    rows = [row for emission in logs["recompute", "ISTREAM"] for row in emission.rows]
    assert len(rows) > 20
    assert all("prof" in row for row in rows)


def test_median_in_a_static_sub_select_agrees_in_both_modes() -> None:
    """A static cache (incremental mode) and the recompute store both evaluate the MEDIAN of a static
    sub-select with pyoxigraph's custom aggregate: the lower median of {4, 1, 3} is 3."""
    query = f"""PREFIX : <{EX}>
        SELECT ?a ?m WHERE {{ STREAM <{EX}s0> [RANGE 10ms] {{ ?a :v ?n }} {{ SELECT (MEDIAN(?x) AS ?m) WHERE {{ ?s :w ?x }} }} }}"""
    static = "\n".join(f"<{EX}s{i}> <{EX}w> {integer(i)} ." for i in (4, 1, 3))
    events = [["push", f"{EX}s0", 1, f"<{EX}e> <{EX}v> {integer(1)} ."], ["advance", 3]]
    logs = run_both(Scenario(query, static, events))
    assert differences(logs) == []
    assert [row["m"].value for emission in logs["incremental", "RSTREAM"] for row in emission.rows] == ["3", "3"]
