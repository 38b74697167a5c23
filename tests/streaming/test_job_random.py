"""Random queries (``job_queries``) as jobs in this process (``run_locally``: route → partitions →
global stage, one micro-batch per file) against the single-process engine, on 1–3 partitions.
The same cases run on Spark in tests/spark/test_spark_job_random.py, with fewer examples."""

from __future__ import annotations

import json

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS
from job_queries import EX, JobCase, examples, job_cases

from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable, run_locally, single_process_lines


def expected_and_plan(case: JobCase, partitions: int, partial: bool = True):
    plan = job_plan(case.query, partitions, r2s=case.r2s, static_nquads=case.static, partial_aggregates=partial)
    return plan, single_process_lines(plan, [line for batch in case.lines() for line in batch])


@settings(ORACLE_SETTINGS, max_examples=examples(150))
@given(case=job_cases(), partitions=st.sampled_from([1, 2, 2, 3]), fresh=st.booleans(), partial=st.booleans())
def test_random_queries_as_jobs_give_the_engines_emissions(case: JobCase, partitions: int, fresh: bool, partial: bool) -> None:
    plan, expected = expected_and_plan(case, partitions, partial)
    got = run_locally(plan, case.lines(), fresh_workers=fresh)
    assert comparable(got, plan.ordered) == comparable(expected, plan.ordered)
    event("partial aggregates" if plan.partial is not None else "partitioned" if plan.partitioned else "one partition")
    event("some emission has a result" if any(has_result(line) for line in expected) else "no emission has a result")


def has_result(line: str) -> bool:
    """An emission with a row, a triple or a true ASK (the comparison is then not of empty answers)."""
    item = json.loads(line)
    return bool(item.get("boolean") or item.get("triples") or item.get("results", {}).get("bindings"))


def events_of(stream: str, times: list[int], predicate: str) -> tuple:
    return tuple((f"{EX}{stream}", t, f'<{EX}s{t % 3}> <{EX}{predicate}> "{t % 4}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n') for t in times)


@pytest.mark.parametrize(
    "case",
    [
        # Found by the test above: a global stage rebuilt over no rows emitted the implicit group's
        # COUNT 0 again, as new (it had not evaluated once as the stage it replaced).
        JobCase(
            f"SELECT (COUNT(*) AS ?n) (COUNT(DISTINCT ?t) AS ?nd) WHERE {{ STREAM <{EX}a> [RANGE 3ms] {{ ?s <{EX}temp> ?t }} "
            f"STREAM <{EX}b> [RANGE 3ms] {{ ?s <{EX}hum> ?h }} }}",
            "", "ISTREAM", (events_of("a", [0], "temp"), events_of("a", [0], "temp")),
        ),
        # A partition rebuilt from its state replays the events of its longest window, then catches
        # up with its clock: the shorter window's expiries then must reach its partial aggregation.
        JobCase(
            f"SELECT ?t (COUNT(*) AS ?n) (MIN(?h) AS ?lo) WHERE {{ STREAM <{EX}a> [RANGE 8ms] {{ ?s <{EX}temp> ?t }} "
            f"STREAM <{EX}b> [RANGE 3ms] {{ ?s <{EX}hum> ?h }} }} GROUP BY ?t",
            "", "ISTREAM",
            (events_of("a", [0], "temp") + events_of("b", [0], "hum") + events_of("a", [7], "temp"), events_of("a", [9], "temp")),
        ),
        # A partition without events rebuilt: its partial COUNT of the implicit group, made while it
        # caught up, belongs to no event and is not handed on.
        JobCase(
            f"SELECT (COUNT(*) AS ?n) WHERE {{ STREAM <{EX}a> [RANGE 3ms] {{ ?s <{EX}temp> ?t }} }}",
            "", "ISTREAM", (events_of("a", [0], "temp"), events_of("a", [3, 3], "temp")),
        ),
    ],
    ids=["implicit group rebuilt", "partial aggregates rebuilt", "partition without events rebuilt"],
)
def test_stages_rebuilt_at_every_micro_batch(case: JobCase) -> None:
    plan, expected = expected_and_plan(case, 2)
    assert comparable(run_locally(plan, case.lines(), fresh_workers=True), plan.ordered) == comparable(expected, plan.ordered)


NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(lambda x: f'"{x!r}"^^<http://www.w3.org/2001/XMLSchema#double>'),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-1000, max_value=1000).map(
        lambda d: f'"{d}"^^<http://www.w3.org/2001/XMLSchema#decimal>'
    ),
    st.integers(-(10**18), 10**18).map(lambda i: f'"{i}"^^<http://www.w3.org/2001/XMLSchema#integer>'),
)


@settings(ORACLE_SETTINGS, max_examples=examples(60))
@given(
    values=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1), NUMBERS, st.integers(0, 2)), min_size=1, max_size=20),
    partitions=st.sampled_from([2, 3]),
    fresh=st.booleans(),
    cut=st.integers(1, 19),
)
def test_partial_sums_and_averages_are_the_engines_to_the_bit(values, partitions, fresh, cut) -> None:
    # Doubles of every magnitude, decimals and integers split between partitions: a float sum
    # rounded per partition would differ; the partitions' exact sums merged and rounded once do not.
    # ?pos fails on the values ≤ 0: AVG over errors alone is 0 and an error beside a value an error
    # (SPARQL 1.1 §18.5.1.4), which the merge tells from the errors counted in each partition's state.
    query = (f"SELECT ?o (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (COUNT(?v) AS ?n) (AVG(?pos) AS ?avgpos) "
             f"(SUM(?pos) AS ?sumpos) (COUNT(?pos) AS ?npos) WHERE {{ STREAM <{EX}a> [RANGE 4ms] "
             f"{{ ?s <{EX}p> ?o . ?s <{EX}v> ?v }} BIND (IF(?v > 0, ?v, 1/0) AS ?pos) }} GROUP BY ?o")
    events, time = [], 0
    for subject, group, number, step in values:
        time += step
        events.append((f"{EX}a", time, f"<{EX}s{subject}> <{EX}p> <{EX}o{group}> .\n<{EX}s{subject}> <{EX}v> {number} .\n"))
    cut = min(cut, len(events))
    case = JobCase(query, "", "RSTREAM", tuple(part for part in (tuple(events[:cut]), tuple(events[cut:])) if part))
    plan, expected = expected_and_plan(case, partitions)
    assert plan.partial is not None
    assert comparable(run_locally(plan, case.lines(), fresh_workers=fresh), plan.ordered) == comparable(expected, plan.ordered)


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("static", ["", f"<{EX}s1> <{EX}reads> <{EX}b> .\n<{EX}s2> <{EX}reads> <{EX}c> .\n"])
def test_a_stream_variable_runs_on_one_partition(static: str, fresh: bool) -> None:
    # Every stream's events reach the one partition, whose engine routes them: all of them with
    # ?st free, those of b and c with the static data naming them; [NOW] holds each instant.
    restriction = f"?s <{EX}reads> ?st . " if static else ""
    case = JobCase(
        f"SELECT ?st ?s (COUNT(*) AS ?n) WHERE {{ {restriction}STREAM ?st [NOW] {{ ?s ?p ?v }} }} GROUP BY ?st ?s",
        static, "RSTREAM",
        (events_of("a", [0, 1], "temp") + events_of("b", [1, 1], "hum"), events_of("c", [2], "wind") + events_of("a", [2, 4], "temp")),
    )
    plan, expected = expected_and_plan(case, 3)
    assert plan.streams is None and not plan.partitioned
    assert any(has_result(line) for line in expected)
    assert comparable(run_locally(plan, case.lines(), fresh_workers=fresh), plan.ordered) == comparable(expected, plan.ordered)
