"""Random queries (``job_queries``) as Spark jobs on local[2] against the single-process engine:
every emission equal, and the sink's lines those of the same steps run in this process. Each
example is a streaming query of its own (a few seconds): few examples by default,
``CQELS_JOB_EXAMPLES`` for a long run. tests/streaming/test_job_random.py runs many more cases
through the same steps without Spark."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS
from job_queries import JobCase, examples, job_cases

from cqels_endpoint.caches.engines import LocalCacheEngine
from cqels_endpoint.streaming.caches import record_caches
from cqels_endpoint.streaming.job import committed_lines, run_job
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable, run_locally, single_process_lines, static_store


@settings(ORACLE_SETTINGS, max_examples=examples(6), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=job_cases(), partitions=st.sampled_from([2, 3]), partial=st.booleans())
def test_random_queries_as_spark_jobs_give_the_engines_emissions(spark, case: JobCase, partitions: int, partial: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        case.write(root / "events")
        static = []
        if case.static:
            (root / "static.nt").write_text(case.static)
            static = [root / "static.nt"]
        run_job(case.query, root / "events", output=root / "out", partitions=partitions, session=spark, static=static,
                checkpoint=root / "checkpoint", max_files_per_trigger=1, r2s=case.r2s, partial_aggregates=partial)
        got = committed_lines(root / "out")
    plan = job_plan(case.query, partitions, r2s=case.r2s, static_nquads=case.static, partial_aggregates=partial)
    lines = case.lines()
    assert comparable(got, plan.ordered) == comparable(single_process_lines(plan, [line for batch in lines for line in batch]), plan.ordered)
    if case.static:
        # The partitions get the caches as the job ships them (sorted rows), not built from the graphs.
        caches = record_caches(plan.partition_algebra, plan.text, static_store(plan), LocalCacheEngine())[0]
        plan = replace(plan, caches=caches, static_nquads="")
    assert got == run_locally(plan, lines)
