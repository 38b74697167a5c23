"""``cqels spark-job --follow`` on Spark (local[2]): static data that changes while the job runs,
from a file and from a running server's store. The job runs until stopped; event files arrive in
turns, the static data changes between two of them, and the sink's lines are the single engine's
with the change applied before the events of the next file (tests/streaming/test_job_follow.py
proves the steps on random cases)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from job_queries import EX, STATIC, JobCase, file_name

from cqels_endpoint.errors import ArgumentError
from cqels_endpoint.streaming.job import committed_lines, run_job
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable, single_process_lines

QUERY = (f"SELECT ?s ?l (COUNT(?t) AS ?n) WHERE {{ STREAM <{EX}a> [RANGE 10ms] {{ ?s <{EX}temp> ?t }} ?s <{EX}label> ?l }} "
         "GROUP BY ?s ?l")
NEW_STATIC = STATIC.replace('"one"', '"eins"') + f'<{EX}s3> <{EX}label> "three" .\n'


def case() -> JobCase:
    events = [(f"{EX}a", t, f'<{EX}s{t % 4}> <{EX}temp> "{t}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n') for t in range(1, 13)]
    return JobCase(QUERY, STATIC, "RSTREAM", (tuple(events[:6]), tuple(events[6:])))


def wait_for(condition, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def follow(spark, tmp_path, change, **static) -> list[str]:
    """Runs the job until both files and the change between them are processed; ``change()``
    changes the static data once the first file's micro-batch is committed."""
    job = case()
    events, out = tmp_path / "events", tmp_path / "out"
    events.mkdir()
    first, second = job.lines()
    (events / file_name(0)).write_text("".join(text + "\n" for text, _, _ in first))
    options = {"output": out, "partitions": 2, "session": spark, "checkpoint": tmp_path / "checkpoint", "r2s": job.r2s,
               "until_done": False, "follow_interval_s": 0.2, **static}
    running = threading.Thread(target=run_job, args=(QUERY, events), kwargs=options)
    running.start()
    try:
        wait_for(lambda: len(committed_lines(out)) >= len(first), "the first file's emissions")
        change()
        wait_for(lambda: list((tmp_path / "checkpoint" / "static" / "changes").glob("change-*")), "the change file")
        processed = len(spark.streams.active[0].recentProgress)
        wait_for(lambda: sum(p.numInputRows for p in spark.streams.active[0].recentProgress[processed:]) > 0, "the change's micro-batch")
        (events / file_name(1)).write_text("".join(text + "\n" for text, _, _ in second))
        wait_for(lambda: len(committed_lines(out)) >= len(first) + len(second), "the second file's emissions")
    finally:
        for query in spark.streams.active:
            query.stop()
        running.join(60)
    got = committed_lines(out)
    plan = job_plan(QUERY, 2, r2s=job.r2s, static_nquads=STATIC)
    place = (job.files[1][0][1], file_name(1), 0)
    expected = single_process_lines(plan, [*first, *second], changes=[(place, NEW_STATIC)])
    assert comparable(got, plan.ordered) == comparable(expected, plan.ordered)
    # The change is visible: s1's label before it, s1's new one and s3 after it.
    before, after = json.dumps(json.loads(got[len(first) - 1])), json.dumps(json.loads(got[-1]))
    assert '"one"' in before and '"eins"' not in before and '"eins"' in after and '"three"' in after
    return got


def test_a_static_file_that_changes_reaches_the_running_job(spark, tmp_path):
    static = tmp_path / "labels.nt"
    static.write_text(STATIC)
    follow(spark, tmp_path, lambda: static.write_text(NEW_STATIC), static=[static])


def test_a_servers_store_that_changes_reaches_the_running_job(spark, tmp_path, live_endpoint):
    live_endpoint.reset()
    live_endpoint.put_graph(None, STATIC.encode(), "application/n-triples")

    def change():
        live_endpoint.put_graph(None, NEW_STATIC.encode(), "application/n-triples")

    follow(spark, tmp_path, change, static_endpoint=live_endpoint.base_url)


def test_following_needs_a_checkpoint(tmp_path):
    static = tmp_path / "labels.nt"
    static.write_text(STATIC)
    (tmp_path / "events").mkdir()
    with pytest.raises(ArgumentError, match="checkpoint"):
        run_job(QUERY, tmp_path / "events", output=tmp_path / "out", static=[static], until_done=False)


def test_an_unreachable_static_endpoint_is_refused_before_spark_starts(tmp_path):
    (tmp_path / "events").mkdir()
    with pytest.raises(ArgumentError, match=r"cannot read the static data from http://127\.0\.0\.1:9/store"):
        run_job(QUERY, tmp_path / "events", output=tmp_path / "out", static_endpoint="http://127.0.0.1:9")
