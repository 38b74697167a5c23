"""``cqels spark-job`` on Spark (local[2], the suite's one session): the file sink's committed
lines against the single-process engine fed the same events, a restart from the checkpoint (after
a clean stop and after a stop while a micro-batch runs) losing and repeating nothing, and Kafka
without its connector refused with the way out. The steps themselves are proven on random
workloads in tests/streaming/test_job_stages.py; these tests prove that Spark drives them so."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from datetime import datetime, timezone

import pytest
from debs import PREDICATES, trip_events
from paths import ROOT
from stored_queries import FLOORPLAN, LV, RFID

from cqels_endpoint.cli import main
from cqels_endpoint.cli.replay import DEBS_TRIPS
from cqels_endpoint.errors import SparkUnavailableError
from cqels_endpoint.streaming import job as streaming_job
from cqels_endpoint.streaming.follow import static_nquads
from cqels_endpoint.streaming.job import committed_lines, input_lines, run_job
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable, run_locally, single_process_lines

Q1 = ROOT / "examples" / "queries" / "debs-q1-frequent-routes.rq"
CONFERENCE_Q2 = ROOT / "examples" / "queries" / "conference-q2-reachable.rq"


def write_files(directory, events: list[tuple[int, str]], stream: str, files: int, first: int = 0) -> None:
    """The events (in time order) as ``files`` NDJSON files named and aged in time order: Spark's
    file source takes the oldest first, by modification times in milliseconds, and files written
    within one millisecond would come in any order (a later one first makes the earlier late)."""
    directory.mkdir(exist_ok=True)
    size = -(-len(events) // files)
    for k in range(files):
        lines = [json.dumps({"stream": stream, "time": t, "data": data}) for t, data in events[k * size : (k + 1) * size]]
        path = directory / f"part{first + k:03d}.ndjson"
        path.write_text("".join(line + "\n" for line in lines))
        os.utime(path, (1_000_000 + first + k, 1_000_000 + first + k))


def debs_events(count: int) -> list[tuple[int, str]]:
    return [(t, data) for _push, _stream, t, data in trip_events(count, PREDICATES)]


def assert_engines_answers(
    query: str, events_dir, output_dir, partitions: int, static: str = "", r2s: str | None = None, partial: bool = False
) -> list[str]:
    plan = job_plan(query, partitions, r2s=r2s, static_nquads=static, partial_aggregates=partial)
    lines = input_lines(events_dir)
    got = committed_lines(output_dir)
    expected = single_process_lines(plan, lines)
    assert comparable(got, plan.ordered) == comparable(expected, plan.ordered)
    # The same steps in-process give the very same lines (the order of rows included).
    assert got == run_locally(plan, [[line for line in lines if line[1] == name] for name in sorted({line[1] for line in lines})])
    return got


def test_debs_q1_from_the_command_line_gives_the_engines_answers(spark, tmp_path, capsys):
    events, output = tmp_path / "trips", tmp_path / "out"
    write_files(events, debs_events(450), DEBS_TRIPS, 3)
    code = main([
        "spark-job", str(Q1), "--events", str(events), "--output", str(output), "--partitions", "2",
        "--checkpoint", str(tmp_path / "checkpoint"), "--max-files-per-trigger", "1", "--verify",
    ])
    err = capsys.readouterr().err
    assert code == 0, err
    summary = json.loads(err.splitlines()[0])
    assert summary["partitions"] == 2 and summary["key"] == "?trip" and summary["micro_batches"] >= 3
    assert "verified: the" in err
    lines = assert_engines_answers(Q1.read_text(), events, output, 2)
    assert len(lines) == summary["emissions"] > 10


def random_workload(seed: int) -> list[tuple[int, str]]:
    """Events of 1–3 triples of five subjects, two predicates and small integers, 0–3 ms apart."""
    rng = random.Random(seed)
    events, time = [], 0
    for _ in range(120):
        time += rng.randrange(4)
        triples = [(rng.randrange(5), rng.choice("pq"), rng.randrange(6)) for _ in range(rng.randint(1, 3))]
        data = "".join(f'<http://ex.org/s{s}> <http://ex.org/{p}> "{o}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n' for s, p, o in triples)
        events.append((time, data))
    return events


@pytest.mark.parametrize(
    ("query", "events", "stream"),
    [
        pytest.param((ROOT / "examples" / "queries" / "debs-q2-profitable-areas.rq").read_text(), debs_events(300), DEBS_TRIPS, id="debs-q2"),
        pytest.param(
            "SELECT ?o (COUNT(?s) AS ?c) (SUM(?o) AS ?sum) (MIN(?s) AS ?lo) WHERE { STREAM <http://ex.org/s> [RANGE 6ms] "
            "{ ?s <http://ex.org/p> ?o . ?s <http://ex.org/q> ?x } } GROUP BY ?o ORDER BY DESC(?c) ?o LIMIT 3",
            random_workload(19), "http://ex.org/s", id="random-keyed-top-k",
        ),
    ],
)
def test_more_queries_give_the_engines_answers(spark, tmp_path, query, events, stream):
    write_files(tmp_path / "events", events, stream, 2)
    report = run_job(query, tmp_path / "events", output=tmp_path / "out", partitions=2, session=spark,
                     checkpoint=tmp_path / "checkpoint", max_files_per_trigger=1, r2s="RSTREAM")
    assert len(report.batches) >= 2
    lines = assert_engines_answers(query, tmp_path / "events", tmp_path / "out", 2, r2s="RSTREAM")
    assert len(lines) == len(events)  # RSTREAM: one emission per event


SENSOR = "http://ex.org/"
SENSOR_STREAMS = {"a": "temp", "b": "hum", "c": "wind"}
A, B, C = (f"STREAM <{SENSOR}{name}> [RANGE 2s] {{ ?s <{SENSOR}{p}> ?{p[0]} }}" for name, p in SENSOR_STREAMS.items())
SENSOR_QUERIES = {
    "two streams": f"SELECT * WHERE {{ {A} {B} }}",
    "two streams, filter": f"SELECT ?s ?t ?h WHERE {{ {A} {B} FILTER (?t > ?h) }}",
    "three streams": f"SELECT * WHERE {{ {A} {B} {C} }}",
    "optional": f"SELECT * WHERE {{ {A} OPTIONAL {{ {B} }} }}",
    "static join": f"SELECT * WHERE {{ {A} {B} ?s <{SENSOR}label> ?l }}",
    "aggregate above": f"SELECT ?t (COUNT(*) AS ?n) (SUM(?h) AS ?sum) (AVG(?h) AS ?avg) (MAX(?w) AS ?wind) WHERE {{ {A} {B} OPTIONAL {{ {C} }} }} GROUP BY ?t",
}


@pytest.mark.parametrize("name", sorted(SENSOR_QUERIES))
def test_stream_joins_on_a_shared_key_give_the_engines_answers(spark, tmp_path, monkeypatch, name):
    """Joins of two and three streams on their subject (the shape whose changes once crashed the job
    in PySpark's output conversion: a micro-batch's frame over 2 GiB of text), with every step's
    frames cut at 2 KiB here, so that each micro-batch's outputs cross Arrow in many frames."""
    monkeypatch.setattr(streaming_job, "FRAME_BYTES", 2048)
    rng = random.Random(name)
    events, clock = tmp_path / "events", 1_000
    events.mkdir()
    for k in range(3):
        lines = []
        for _ in range(60):
            clock += rng.randrange(300)
            stream, predicate = rng.choice(list(SENSOR_STREAMS.items()))
            data = f'<{SENSOR}s{rng.randrange(4)}> <{SENSOR}{predicate}> "{rng.randrange(30)}"^^<http://www.w3.org/2001/XMLSchema#integer> .'
            lines.append(json.dumps({"stream": SENSOR + stream, "time": clock, "data": data}))
        (events / f"part{k}.ndjson").write_text("".join(line + "\n" for line in lines))
        os.utime(events / f"part{k}.ndjson", (1_000_000 + k, 1_000_000 + k))
    static = tmp_path / "labels.nt"
    static.write_text("".join(f'<{SENSOR}s{i}> <{SENSOR}label> "sensor {i}" .\n' for i in range(3)))
    query = SENSOR_QUERIES[name]
    partial = name == "aggregate above"  # COUNT, SUM, AVG and MAX by ?t, each partition's share merged
    report = run_job(query, events, output=tmp_path / "out", partitions=2, session=spark, static=[static],
                     checkpoint=tmp_path / "checkpoint", max_files_per_trigger=1, partial_aggregates=partial)
    assert report.plan["key"] == "?s" and len(report.batches) == 3
    assert any("partial aggregates per partition" in line for line in report.plan["explain"]) == partial
    lines = assert_engines_answers(query, events, tmp_path / "out", 2, static_nquads([static]), partial=partial)
    assert sum(len(json.loads(line)["results"]["bindings"]) for line in lines) > 20


def test_a_query_without_a_key_posts_its_triples_to_a_server(spark, tmp_path, live_endpoint):
    """Conference Q2 (CONSTRUCT, no variable common to its stream patterns: one partition) with the
    floorplan as static data, its triples POSTed into a stream of a running server: the server
    accepts one event per non-empty emission of the single engine, each at the emission's time."""
    people = ["http://example.org/person/1", "http://example.org/person/2", "http://example.org/person/3"]
    rooms = ["lobby", "mainHall", "corridor", "room101", "room102", "kitchen"]
    events = [(1_000 + 700 * i, f"<{people[i % 3]}> <{LV}detectedAt> <{LV}{rooms[(i * 5) % 6]}> .\n") for i in range(40)]
    write_files(tmp_path / "rfid", events, RFID, 1)
    report = run_job(
        CONFERENCE_Q2.read_text(), tmp_path / "rfid", sink="post", post_url=f"{live_endpoint.base_url}/streams/reachable",
        partitions=2, session=spark, checkpoint=tmp_path / "checkpoint", static=[FLOORPLAN], r2s="RSTREAM",
    )
    assert report.plan["partitions"] == 1 and "no variable occurs in every stream triple pattern" in report.plan["explain"][0]
    plan = job_plan(CONFERENCE_Q2.read_text(), 2, r2s="RSTREAM", static_nquads=static_nquads([FLOORPLAN]))
    expected = [json.loads(line) for line in single_process_lines(plan, input_lines(tmp_path / "rfid"))]
    posted = [item for item in expected if item["triples"]]
    assert posted  # the static join found reachable people
    (stream,) = [entry for entry in live_endpoint.get("/streams").json()["streams"] if entry["stream"].endswith("reachable")]
    assert stream["accepted"] == len(posted) and stream["latest"] == posted[-1]["time"]
    assert not any(stream["rejected"].values())


def test_large_caches_joined_as_dataframes_give_the_engines_answers(spark, tmp_path, monkeypatch):
    """Both ways a cache is joined as a DataFrame: the rooms (6 rows, over ``inline_cache_rows``)
    stay in the cache job's Parquet; the names (5 rows, collected) are over the shipping budget
    (0 here) and go from the driver's rows. Each partition gets its rows as initial state: by the
    key, ?person, for the names; all of them for the rooms, which have no key."""
    monkeypatch.setattr(streaming_job, "SHIPPED_CACHE_BYTES", 0)
    query = (
        f"PREFIX lv: <{LV}> PREFIX foaf: <http://xmlns.com/foaf/0.1/> SELECT ?person ?name (COUNT(?room) AS ?n) "
        f"WHERE {{ STREAM <{RFID}> [RANGE 3s] {{ ?person lv:detectedAt ?loc }} ?person foaf:name ?name GRAPH lv: {{ ?loc lv:name ?room }} }} "
        "GROUP BY ?person ?name"
    )
    rng = random.Random(11)
    people = [f"http://deri.org/people/{person}" for person in ("alice", "bob", "carol", "dave", "erin", "frank")]
    rooms = ["lobby", "mainHall", "corridor", "room101", "room102", "kitchen", "attic"]
    events = [(1_000 + 300 * i, f"<{rng.choice(people)}> <{LV}detectedAt> <{LV}{rng.choice(rooms)}> .\n") for i in range(60)]
    write_files(tmp_path / "rfid", events, RFID, 2)
    static = [FLOORPLAN, ROOT / "examples" / "data" / "conference.ttl"]
    report = run_job(query, tmp_path / "rfid", output=tmp_path / "out", partitions=2, session=spark, static=static,
                     checkpoint=tmp_path / "checkpoint", max_files_per_trigger=1, r2s="RSTREAM", inline_cache_rows=5)
    assert report.plan["key"] == "?person" and report.plan["caches"] == {"shipped": 0, "joined": 2}
    lines = assert_engines_answers(query, tmp_path / "rfid", tmp_path / "out", 2, static_nquads(static), r2s="RSTREAM")
    assert any(json.loads(line)["results"]["bindings"] for line in lines)


def test_a_restarted_job_loses_and_repeats_nothing(spark, tmp_path):
    """Run 1 is stopped while it works (possibly mid micro-batch); run 2 finishes the first
    files; then new files arrive and run 3 takes them. The file sink holds each emission once."""
    events = debs_events(600)
    staging, incoming = tmp_path / "staging", tmp_path / "trips"
    write_files(staging, events[:400], DEBS_TRIPS, 4)
    shutil.copytree(staging, incoming)
    options = {"output": tmp_path / "out", "partitions": 2, "session": spark, "checkpoint": tmp_path / "checkpoint", "max_files_per_trigger": 1}

    running = threading.Thread(target=run_job, args=(Q1.read_text(), incoming), kwargs=options | {"until_done": False})
    running.start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        active = spark.streams.active
        if active and active[0].lastProgress is not None:
            active[0].stop()  # the next micro-batch has usually begun: it is cut short uncommitted
            break
        time.sleep(0.2)
    running.join(120)
    assert not running.is_alive()
    first = committed_lines(tmp_path / "out")
    assert first  # run 1 committed at least one micro-batch

    run_job(Q1.read_text(), incoming, **options)
    write_files(incoming, events[400:], DEBS_TRIPS, 2, first=4)
    report = run_job(Q1.read_text(), incoming, **options)
    assert report.batches and report.input_rows == 200  # only the new files were read
    lines = assert_engines_answers(Q1.read_text(), incoming, tmp_path / "out", 2)
    assert lines[: len(first)] == first


def test_spark_watermark_refuses_late_events_and_reports_them(spark, tmp_path):
    """LATENESS 3 ms as Spark's event-time watermark: files out of time order, one per micro-batch.
    Spark's reported watermarks are those the late lines name, every late event is a line, and the
    job's output is the in-process steps' to the byte."""
    query = ("SELECT ?s (COUNT(?o) AS ?c) WHERE { STREAM <http://ex.org/s> [RANGE 10ms LATENESS 3ms] "
             "{ ?s <http://ex.org/p> ?o } } GROUP BY ?s")
    rng = random.Random(7)
    events = tmp_path / "events"
    events.mkdir()
    batches = []
    for k, start in enumerate([0, 20, 12, 40, 30]):  # the 3rd and 5th files lie before the watermark, in part
        times = sorted(start + rng.randrange(8) for _ in range(5))
        data = [(t, f'<http://ex.org/s{rng.randrange(3)}> <http://ex.org/p> "{t}"^^<http://www.w3.org/2001/XMLSchema#integer> .') for t in times]
        text = "".join(json.dumps({"stream": "http://ex.org/s", "time": t, "data": d}) + "\n" for t, d in data)
        (events / f"part{k}.ndjson").write_text(text)
        os.utime(events / f"part{k}.ndjson", (1_000_000 + k, 1_000_000 + k))  # the file source takes files by age
        batches.append([(line, f"part{k}.ndjson", n) for n, line in enumerate(text.splitlines(), 1)])
    report = run_job(query, events, output=tmp_path / "out", partitions=2, session=spark,
                     checkpoint=tmp_path / "checkpoint", max_files_per_trigger=1)
    got = committed_lines(tmp_path / "out")
    assert got == run_locally(job_plan(query, 2), batches)
    late = [json.loads(line)["late"] for line in got if '"late"' in line]
    assert late and all(item["time"] < item["watermark"] for item in late)
    reported = {batch["eventTime"]["watermark"] for batch in report.batches if "eventTime" in batch}
    named = {datetime.fromtimestamp(item["watermark"] / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" for item in late}
    assert named <= reported


def test_kafka_without_its_connector_says_how_to_get_it(spark, tmp_path):
    with pytest.raises(SparkUnavailableError, match="spark-sql-kafka"):
        run_job(Q1.read_text(), None, kafka=("localhost:9092", "trips"), output=tmp_path / "out", session=spark, partitions=2)
