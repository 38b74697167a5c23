"""The steps of a Spark job (streaming.stages) run in-process against the single-process engine.

``run_locally`` drives route → partitions → global stage exactly as the Spark processors do
(tests/spark/test_spark_streaming.py runs the same through Spark); ``single_process_lines`` is the
oracle: the engine fed the same events in the job's order. Random workloads (hypothesis) cover
every R2S, 1–3 partitions, micro-batch boundaries anywhere between files, and queries with a key
(aggregates merged globally, DISTINCT, top-k, OPTIONAL, NOT EXISTS, ASK, CONSTRUCT) and without
one (count and periodic windows run on one partition).
"""

from __future__ import annotations

import itertools
import json
import random

import pytest
from debs import PREDICATES, trip_events
from hypothesis import given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS
from paths import ROOT
from stored_queries import FLOORPLAN, LV, RFID

from cqels_endpoint.caches.engines import LocalCacheEngine
from cqels_endpoint.cli.replay import DEBS_TRIPS
from cqels_endpoint.streaming.caches import record_caches, shards
from cqels_endpoint.streaming.follow import static_nquads
from cqels_endpoint.streaming.job import bounded_frames
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable, run_locally, single_process_lines, static_store

QUERIES = ROOT / "examples" / "queries"
CONFERENCE = ROOT / "examples" / "data" / "conference.ttl"
S = "http://ex.org/s"
PREFIX = "PREFIX : <http://ex.org/> "
INTEGER = '"%d"^^<http://www.w3.org/2001/XMLSchema#integer>'

# Queries of the random workloads: those with a key are partitioned (the group in the partitions
# when the key is a group key, globally otherwise), the last two are not.
KEYED = {
    "count by key": "SELECT ?s (COUNT(?o) AS ?c) WHERE { STREAM <S> [RANGE 5ms] { ?s :p ?o } } GROUP BY ?s",
    "aggregates across partitions": "SELECT ?o (COUNT(?s) AS ?c) (SUM(?o) AS ?sum) (MIN(?s) AS ?lo) (MAX(?o) AS ?hi) "
    "(AVG(?o) AS ?avg) (SAMPLE(?s) AS ?any) WHERE { STREAM <S> [RANGE 4ms] { ?s :p ?o . ?s :q ?x } } GROUP BY ?o HAVING (COUNT(?s) > 1)",
    "groups in their partitions, top-k global": "SELECT ?s (SUM(?o) AS ?t) (MAX(?o) AS ?hi) WHERE { STREAM <S> [RANGE 5ms] { ?s :p ?o } } "
    "GROUP BY ?s HAVING (SUM(?o) > 2) ORDER BY DESC(?t) LIMIT 2",
    "distinct over a keyed join": "SELECT DISTINCT ?o WHERE { STREAM <S> [RANGE 3ms] { ?s :p ?o . ?s :q ?x } }",
    "top-k": "SELECT ?s ?o WHERE { STREAM <S> [RANGE 6ms] { ?s :p ?o } } ORDER BY DESC(?o) LIMIT 3",
    "optional": "SELECT ?s ?o ?x WHERE { STREAM <S> [RANGE 5ms] { ?s :p ?o } OPTIONAL { STREAM <S> [RANGE 2ms] { ?s :q ?x } } }",
    "not exists": "SELECT ?s ?o WHERE { STREAM <S> [RANGE 5ms] { ?s :p ?o } FILTER NOT EXISTS { STREAM <S> [NOW] { ?s :q ?x } } }",
    "count of everything": "SELECT (COUNT(*) AS ?n) (COUNT(DISTINCT ?o) AS ?d) WHERE { STREAM <S> [RANGE 4ms] { ?s :p ?o } }",
    "ask": "ASK { STREAM <S> [RANGE 2ms] { ?s :p 3 } }",
    "construct of a sub-select": "CONSTRUCT { ?s :total ?t } WHERE { { SELECT ?s (SUM(?o) AS ?t) "
    "WHERE { STREAM <S> [RANGE 3ms] { ?s :p ?o } } GROUP BY ?s } }",
    "keyed by object": "SELECT ?a ?b WHERE { STREAM <S> [RANGE 3ms] { ?a :p ?o } STREAM <S> [RANGE 2ms] { ?b :q ?o } }",
}
UNKEYED = {
    "count window": "SELECT ?s ?o WHERE { STREAM <S> [TRIPLES 3] { ?s :p ?o } }",
    "periodic window": "SELECT ?s (COUNT(?o) AS ?c) WHERE { STREAM <S> [RANGE 6ms SLIDE 2ms] { ?s :p ?o } } GROUP BY ?s",
}


def text(query: str) -> str:
    return PREFIX + query.replace("<S>", f"<{S}>")


def files(events: list[tuple[int, str]], cuts: list[int], stream: str = S) -> list[list[tuple[str, str, int]]]:
    """The events as NDJSON lines split into files at ``cuts`` (in time order, as event files are),
    each file one micro-batch."""
    bounds = [0, *sorted(set(cuts)), len(events)]
    batches = []
    for number, (start, end) in enumerate(itertools.pairwise(bounds)):
        lines = [json.dumps({"stream": stream, "time": t, "data": data}) for t, data in events[start:end]]
        batches.append([(line, f"part{number:03d}.ndjson", i) for i, line in enumerate(lines, 1)])
    return [batch for batch in batches if batch]


@st.composite
def workloads(draw):
    events, time = [], 0
    for _ in range(draw(st.integers(1, 28))):
        time += draw(st.integers(0, 3))
        triples = draw(st.lists(st.tuples(st.integers(0, 4), st.sampled_from("pq"), st.integers(0, 5)), min_size=1, max_size=3))
        data = "".join(f"<http://ex.org/s{s}> <http://ex.org/{p}> {INTEGER % o} .\n" for s, p, o in triples)
        events.append((time, data))
    cuts = draw(st.lists(st.integers(1, max(1, len(events) - 1)), max_size=3))
    return events, cuts


def agree(
    query: str, batches, partitions: int, r2s: str | None, static: str = "", stream: str | None = None, dialect: str = "auto",
    fresh: bool = False,
) -> list[str]:
    plan = job_plan(query, partitions, r2s=r2s, static_nquads=static, dialect=dialect)
    got = run_locally(plan, batches, stream, fresh_workers=fresh)
    expected = single_process_lines(plan, [line for batch in batches for line in batch], stream)
    assert comparable(got, plan.ordered) == comparable(expected, plan.ordered)
    return got


@pytest.mark.parametrize("name", sorted(KEYED))
@settings(ORACLE_SETTINGS, max_examples=50)
@given(workload=workloads(), partitions=st.integers(1, 3), r2s=st.sampled_from(["ISTREAM", "RSTREAM", "DSTREAM"]))
def test_keyed_queries_give_the_engines_answers(name, workload, partitions, r2s):
    plan = job_plan(text(KEYED[name]), partitions)
    assert plan.split.partitioned
    agree(text(KEYED[name]), files(*workload), partitions, r2s)


@pytest.mark.parametrize("dialect", ["cqels", "cqels2"])
@pytest.mark.parametrize("name", sorted(UNKEYED))
@settings(ORACLE_SETTINGS, max_examples=50)
@given(workload=workloads(), r2s=st.sampled_from(["ISTREAM", "RSTREAM"]), fresh=st.booleans())
def test_queries_without_a_key_run_on_one_partition(name, dialect, workload, r2s, fresh):
    # In cqels2 the count window holds the last statements of the stream, :q ones included; a
    # partition rebuilt from its state (``fresh``) replays every event it kept to count them again.
    plan = job_plan(text(UNKEYED[name]), 3, dialect=dialect)
    assert not plan.partitioned and plan.tasks == 1
    agree(text(UNKEYED[name]), files(*workload), 3, r2s, dialect=dialect, fresh=fresh)


def test_a_cqels2_directional_query_emits_every_anchor_as_a_job():
    """One result per anchor (CQELS-QL 2.0 §3.2) through the job's stages: the query runs whole on
    one partition, RSTREAM by default, and the global stage hands on its empty anchors too."""
    query = text("REGISTER QUERY Ahead AS SELECT ?s ?o FROM STREAM <S> [FUTURE 2ms STEP 2ms] WHERE { ?s :p ?o }")
    plan = job_plan(query, 3)
    assert not plan.partitioned and plan.r2s == "RSTREAM"
    events = [(time, f"<{S}{time}> <http://ex.org/{p}> {INTEGER % time} .") for time, p in [(0, "p"), (1, "q"), (7, "p"), (12, "q")]]
    lines = [json.loads(line) for line in agree(query, files(events, [2]), 3, None)]
    # Anchors 0, 2, …, 8 hold (a, a + 2 ms]: only anchor 6 holds an ex:p; the event at 12 ms closes them.
    assert [(line["anchor"], line["final"], len(line["results"]["bindings"])) for line in lines] == [
        (0, True, 0), (2, True, 0), (4, True, 0), (6, True, 1), (8, True, 0),
    ]


@pytest.mark.parametrize("query", ["debs-q1-frequent-routes.rq", "debs-q2-profitable-areas.rq"])
@pytest.mark.parametrize("partitions", [1, 2, 3])
def test_debs_queries(query, partitions):
    events = [(time, data) for _push, _stream, time, data in trip_events(400, PREDICATES)]
    lines = agree((QUERIES / query).read_text(), files(events, [150, 320], DEBS_TRIPS), partitions, "ISTREAM")
    assert lines  # the sample makes emissions: the comparison is not of two empty lists


@pytest.mark.parametrize(
    "query", ["conference-q2-reachable.rq", "conference-q3-coauthors.rq", "conference-q4-editors.rq"]
)
def test_conference_queries_with_static_data(query):
    rng = random.Random(3)
    people = [f"http://deri.org/people/{name}" for name in ("alice", "bob", "carol", "dave", "erin")]
    rooms = ["lobby", "mainHall", "corridor", "room101", "room102", "kitchen"]
    events = [(1_000 + 400 * i, f"<{rng.choice(people)}> <{LV}detectedAt> <{LV}{rng.choice(rooms)}> .\n") for i in range(60)]
    static = static_nquads([FLOORPLAN, CONFERENCE])
    lines = [json.loads(line) for line in agree((QUERIES / query).read_text(), files(events, [20, 41], RFID), 2, "RSTREAM", static)]
    assert len(lines) == len(events)  # RSTREAM: one emission per event
    assert any(line.get("triples") or line.get("results", {}).get("bindings") for line in lines)


STATIC_KEYED = {
    "cache with the key": "SELECT ?person ?name (COUNT(?loc) AS ?n) WHERE { STREAM <R> [RANGE 3s] { ?person lv:detectedAt ?loc } "
    "?person foaf:name ?name } GROUP BY ?person ?name",
    "cache without the key": "SELECT ?person (GROUP_CONCAT(?room) AS ?rooms) WHERE { STREAM <R> [RANGE 2s] { ?person lv:detectedAt ?loc } "
    "GRAPH lv: { ?loc lv:name ?room } } GROUP BY ?person",
    "not exists": "SELECT ?person (COUNT(?loc) AS ?n) WHERE { STREAM <R> [RANGE 2s] { ?person lv:detectedAt ?loc } "
    "FILTER NOT EXISTS { ?paper dc:creator ?person } } GROUP BY ?person",
    "optional": "SELECT ?person (COUNT(?paper) AS ?papers) WHERE { STREAM <R> [RANGE 2s] { ?person lv:detectedAt ?loc } "
    "OPTIONAL { ?paper dc:creator ?person } } GROUP BY ?person",
}


@pytest.mark.parametrize("name", sorted(STATIC_KEYED))
def test_large_caches_cut_by_partition_give_the_engines_answers(name):
    """A cache too large to ship reaches each partition as the rows it needs (the owner of the
    key value, every partition when the cache has no key): the same answers as one engine."""
    query = (f"PREFIX lv: <{LV}> PREFIX foaf: <http://xmlns.com/foaf/0.1/> PREFIX dc: <http://purl.org/dc/elements/1.1/> "
             + STATIC_KEYED[name].replace("<R>", f"<{RFID}>"))
    rng = random.Random(5)
    people = [f"http://deri.org/people/{person}" for person in ("alice", "bob", "carol", "dave", "erin", "frank")]
    rooms = ["lobby", "mainHall", "corridor", "room101", "room102", "kitchen", "attic"]
    events = [(1_000 + 300 * i, f"<{rng.choice(people)}> <{LV}detectedAt> <{LV}{rng.choice(rooms)}> .\n") for i in range(50)]
    plan = job_plan(query, 3, r2s="RSTREAM", static_nquads=static_nquads([FLOORPLAN, CONFERENCE]))
    assert plan.partitioned and plan.split.key.name == "person"
    rows, large = record_caches(plan.partition_algebra, plan.text, static_store(plan), LocalCacheEngine())
    assert rows and not large
    cut = shards(plan, rows)
    keyed = [key for key in rows if "person" in key[1]]
    for key in keyed:  # each row of a cache with the key goes to one partition
        assert sum(len(shard[key]) for shard in cut) == len(rows[key]) and all(len(shard[key]) < len(rows[key]) for shard in cut)
    assert bool(keyed) == (name != "cache without the key")
    batches = files(events, [17, 33], RFID)
    got = run_locally(plan, batches, large=rows)
    expected = single_process_lines(plan, [line for batch in batches for line in batch])
    assert comparable(got, plan.ordered) == comparable(expected, plan.ordered)


def test_a_line_that_is_no_event_is_kept_as_rejected():
    plan = job_plan(text(KEYED["count by key"]), 2)
    good = json.dumps({"stream": S, "time": 5, "data": f"<http://ex.org/s1> <http://ex.org/p> {INTEGER % 1} ."})
    lines = run_locally(plan, [[(good, "a.ndjson", 1), (json.dumps({"stream": S, "time": 6, "data": "<a> <b"}), "a.ndjson", 2), ("7\tnot rdf", "a.ndjson", 3)]])
    rejected = [json.loads(line)["rejected"] for line in lines if "rejected" in line]
    assert [(r["file"], r["line"]) for r in rejected] == [("a.ndjson", 2), ("a.ndjson", 3)]
    assert "data" in rejected[0]["error"] and "statement" in rejected[1]["error"]
    assert [json.loads(line)["time"] for line in lines if "rejected" not in line] == [5]


def test_late_events_are_refused_and_held_ones_released_in_order():
    """With LATENESS 3 ms the watermark (Spark's: the latest time of the earlier micro-batches
    minus 3 ms) refuses an event older than it, reported as late; newer events wait until the
    watermark after their batch passes them and enter in time order."""
    query = text("SELECT ?s ?o WHERE { STREAM <S> [RANGE 10ms LATENESS 3ms] { ?s :p ?o } }")
    event = lambda t, s: json.dumps({"stream": S, "time": t, "data": f"<http://ex.org/s{s}> <http://ex.org/p> {INTEGER % t} ."})  # noqa: E731
    first = [(event(10, 1), "a", 1), (event(12, 2), "a", 2)]
    second = [(event(11, 3), "b", 1), (event(5, 4), "b", 2), (event(20, 5), "b", 3)]
    plan = job_plan(query, 2)
    assert plan.lateness_ms == 3
    lines = [json.loads(line) for line in run_locally(plan, [first, second])]
    late = [line["late"] for line in lines if "late" in line]
    assert late == [{"stream": S, "time": 5, "file": "b", "line": 2, "watermark": 9}]
    assert [line["time"] for line in lines if "late" not in line] == [10, 11, 12]  # 20 waits for a later watermark


def test_one_watermark_for_all_streams_and_no_time_before_1970():
    """Spark's watermark is one for the query's streams: an event of one stream older than the
    other stream's latest time of an earlier batch (minus the lateness) is late. A time before
    1970 is refused with its line, since that watermark counts from the epoch."""
    t = "http://ex.org/t"
    query = PREFIX + f"SELECT ?s ?o WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?s :p ?o }} STREAM <{t}> [RANGE 10ms] {{ ?s :q ?o }} }}"
    def event(stream: str, time: int) -> str:
        predicate = "p" if stream == S else "q"
        return json.dumps({"stream": stream, "time": time, "data": f"<http://ex.org/s1> <http://ex.org/{predicate}> {INTEGER % 1} ."})

    plan = job_plan(query, 2)
    second = [(event(t, 19), "b", 1), (event(t, 20), "b", 2), (event(S, -5), "b", 3)]
    lines = [json.loads(line) for line in run_locally(plan, [[(event(S, 20), "a", 1)], second])]
    assert [line["late"]["time"] for line in lines if "late" in line] == [19]
    assert [(line["rejected"]["line"], "before 1970" in line["rejected"]["error"]) for line in lines if "rejected" in line] == [(3, True)]
    emissions = [line for line in lines if "query" in line]  # ISTREAM: the join's row once t@20 enters
    assert [(line["time"], len(line["results"]["bindings"])) for line in emissions] == [(20, 1)]


def test_frames_are_cut_at_the_text_limit():
    # Arrow keeps a string column of one frame in one array only up to 2 GiB (streaming.job.FRAME_BYTES).
    rows = [(i, "x" * (i % 7), None) for i in range(200)]
    frames = list(bounded_frames(rows, ["n", "text", "none"], 10))
    assert len(frames) > 50
    assert [tuple(row) for frame in frames for row in frame.itertuples(index=False)] == rows
    assert all(sum(map(len, frame["text"])) <= 10 for frame in frames)
    assert [len(frame) for frame in bounded_frames([(1, "x" * 50), (2, "y")], ["n", "text"], 10)] == [1, 1]
    assert list(bounded_frames([], ["n"], 10)) == []
