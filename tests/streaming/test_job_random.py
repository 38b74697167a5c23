"""Random queries (``job_queries``) as jobs in this process (``run_locally``: route → partitions →
global stage, one micro-batch per file) against the single-process engine, on 1–3 partitions.
The same cases run on Spark in tests/spark/test_spark_job_random.py, with fewer examples."""

from __future__ import annotations

import json

from hypothesis import event, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS
from job_queries import JobCase, examples, job_cases

from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable, run_locally, single_process_lines


def expected_and_plan(case: JobCase, partitions: int):
    plan = job_plan(case.query, partitions, r2s=case.r2s, static_nquads=case.static)
    return plan, single_process_lines(plan, [line for batch in case.lines() for line in batch])


@settings(ORACLE_SETTINGS, max_examples=examples(150))
@given(case=job_cases(), partitions=st.sampled_from([1, 2, 2, 3]), fresh=st.booleans())
def test_random_queries_as_jobs_give_the_engines_emissions(case: JobCase, partitions: int, fresh: bool) -> None:
    plan, expected = expected_and_plan(case, partitions)
    got = run_locally(plan, case.lines(), fresh_workers=fresh)
    assert comparable(got, plan.ordered) == comparable(expected, plan.ordered)
    event("partitioned" if plan.partitioned else "one partition")
    event("some emission has a result" if any(has_result(line) for line in expected) else "no emission has a result")


def has_result(line: str) -> bool:
    """An emission with a row, a triple or a true ASK (the comparison is then not of empty answers)."""
    item = json.loads(line)
    return bool(item.get("boolean") or item.get("triples") or item.get("results", {}).get("bindings"))
