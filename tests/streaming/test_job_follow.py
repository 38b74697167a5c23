"""Static data that changes while a job runs (``streaming.follow``), in this process: the partitions
apply each cache's change at the start of the micro-batch that reads it, and the job's emissions are
the single engine's with the static data replaced after the events of the batches before.
tests/spark/test_spark_follow.py runs the same through Spark, from files and from a server."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS
from job_queries import EX, STATIC, JobCase, examples, file_name, job_cases

from cqels_endpoint.caches.delta import bag_delta
from cqels_endpoint.caches.engines import LocalCacheEngine
from cqels_endpoint.streaming.caches import record_caches
from cqels_endpoint.streaming.follow import Follower, apply_delta, delta_line
from cqels_endpoint.streaming.plan import JobPlan, job_plan
from cqels_endpoint.streaming.stages import comparable, run_locally, single_process_lines, static_store

LABELS = [f'<{EX}s{s}> <{EX}label> "{label}" .\n' for s, label in ((0, "zero"), (1, "one"), (1, "uno"), (2, "two"), (3, "three"), (3, "drei"))]


def caches_of(plan: JobPlan, nquads: str) -> dict:
    return record_caches(plan.partition_algebra, plan.text, static_store(replace(plan, static_nquads=nquads)), LocalCacheEngine())[0]


def change_lines(plan: JobPlan, old: str, new: str, number: int = 1) -> list[tuple[str, str, int]]:
    before, after = caches_of(plan, old), caches_of(plan, new)
    lines = []
    for key in sorted(set(before) | set(after)):
        delta = bag_delta(before.get(key, []), after.get(key, []))
        if len(delta):
            lines.append(delta_line(number, str(number), key, delta.added, delta.removed))
    return [(line, f"change-{number:06d}.ndjson", k) for k, line in enumerate(lines, 1)]


def assert_follows(
    case: JobCase, partitions: int, new_static: str, at: int, alone: bool = False, fresh: bool = False, sharded: bool = False,
    partial: bool = False,
) -> list[str]:
    """The job with the static data replaced by ``new_static`` before file ``at``: in that file's
    micro-batch, or ``alone`` in one before it; ``fresh``: each micro-batch on a new worker;
    ``sharded``: the caches cut by partition, as the job gives those too large to ship."""
    plan = job_plan(case.query, partitions, r2s=case.r2s, static_nquads=case.static, partial_aggregates=partial)
    batches = case.lines()
    changes = [[] for _ in batches]
    changes[at] = change_lines(plan, case.static, new_static)
    caches = caches_of(plan, case.static)
    shipped = replace(plan, caches={} if sharded else caches, static_nquads="")
    if alone:
        batches, changes = [*batches[:at], [], *batches[at:]], [*changes[:at], changes[at], [], *changes[at + 1 :]]
    got = run_locally(shipped, batches, large=caches if sharded else None, changes=changes, fresh_workers=fresh)
    # Before the first event of file ``at`` in the job's event order (time, file, line).
    place = (case.files[at][0][1], file_name(at), 0)
    expected = single_process_lines(plan, [line for batch in batches for line in batch], changes=[(place, new_static)])
    assert comparable(got, plan.ordered) == comparable(expected, plan.ordered)
    return got


@settings(ORACLE_SETTINGS, max_examples=examples(60))
@given(case=job_cases(), partitions=st.sampled_from([1, 2, 3]), labels=st.sets(st.sampled_from(LABELS)), alone=st.booleans(),
       fresh=st.booleans(), sharded=st.booleans(), partial=st.booleans(), data=st.data())
def test_a_static_change_reaches_the_partitions_at_a_micro_batch_boundary(case, partitions, labels, alone, fresh, sharded, partial, data) -> None:
    assume(case.static and len(case.files) > 1)
    at = data.draw(st.integers(1, len(case.files) - 1))
    assert_follows(case, partitions, "".join(sorted(labels)), at, alone, fresh, sharded, partial)


def test_a_label_that_changes_changes_the_join() -> None:
    query = f"SELECT ?s ?l WHERE {{ STREAM <{EX}a> [RANGE 10ms] {{ ?s <{EX}temp> ?t }} ?s <{EX}label> ?l }}"
    events = [(f"{EX}a", t, f'<{EX}s{t % 3}> <{EX}temp> "{t}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n') for t in range(1, 7)]
    case = JobCase(query, STATIC, "RSTREAM", (tuple(events[:3]), tuple(events[3:])))
    for alone in (False, True):
        for fresh in (False, True):
            got = assert_follows(case, 2, STATIC.replace('"one"', '"eins"'), 1, alone, fresh)
            assert '"eins"' in got[-1] and '"one"' in got[2] and '"one"' not in got[-1]


def test_a_follower_writes_a_change_file_for_each_new_version(tmp_path) -> None:
    plan = job_plan(f"SELECT * WHERE {{ STREAM <{EX}a> [RANGE 1s] {{ ?s <{EX}temp> ?t }} ?s <{EX}label> ?l }}", 2)

    class Versions:
        def __init__(self):
            self.text, self.number = STATIC, 0

        def version(self):
            return str(self.number)

        def nquads(self):
            return self.text

    source = Versions()
    follower = Follower(source, tmp_path, lambda text: caches_of(plan, text), 60)
    assert not follower.poll() and not list(follower.changes.iterdir())
    source.text, source.number = STATIC + f'<{EX}s5> <{EX}label> "five" .\n', 1
    assert follower.poll()
    (change,) = follower.changes.iterdir()
    assert change.name == "change-000001.ndjson" and "five" in change.read_text()
    # A restart reads the caches it started with and the changes since: nothing new to write.
    again = Follower(source, tmp_path, lambda text: caches_of(plan, text), 60)
    assert bags(again.base) == bags(follower.base) and bags(again.rows) == bags(follower.rows) and not again.poll()
    key = next(iter(follower.rows))
    delta = bag_delta(follower.base[key], follower.rows[key])
    assert Counter(apply_delta(follower.base[key], delta.added, delta.removed)) == Counter(follower.rows[key])


def bags(caches: dict) -> dict:
    return {key: Counter(rows) for key, rows in caches.items()}
