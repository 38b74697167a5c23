"""``cqels spark-job`` on Spark (local[2], the suite's one session): the file sink's committed
lines against the single-process engine fed the same events, a restart from the checkpoint (after
a clean stop and after a stop while a micro-batch runs) losing and repeating nothing, and Kafka
without its connector refused with the way out. The steps themselves are proven on random
workloads in tests/streaming/test_job_stages.py; these tests prove that Spark drives them so."""

from __future__ import annotations

import json
import random
import shutil
import threading
import time

import pytest
from debs import PREDICATES, trip_events
from paths import ROOT
from stored_queries import FLOORPLAN, LV, RFID

from cqels_endpoint.cli import main
from cqels_endpoint.cli.replay import DEBS_TRIPS
from cqels_endpoint.errors import SparkUnavailableError
from cqels_endpoint.streaming.job import committed_lines, input_lines, run_job, static_nquads
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable, run_locally, single_process_lines

Q1 = ROOT / "examples" / "queries" / "debs-q1-frequent-routes.rq"
CONFERENCE_Q2 = ROOT / "examples" / "queries" / "conference-q2-reachable.rq"


def write_files(directory, events: list[tuple[int, str]], stream: str, files: int, first: int = 0) -> None:
    """The events (in time order) as ``files`` NDJSON files named in time order."""
    directory.mkdir(exist_ok=True)
    size = -(-len(events) // files)
    for k in range(files):
        lines = [json.dumps({"stream": stream, "time": t, "data": data}) for t, data in events[k * size : (k + 1) * size]]
        (directory / f"part{first + k:03d}.ndjson").write_text("".join(line + "\n" for line in lines))


def debs_events(count: int) -> list[tuple[int, str]]:
    return [(t, data) for _push, _stream, t, data in trip_events(count, PREDICATES)]


def assert_engines_answers(query: str, events_dir, output_dir, partitions: int, static: str = "", r2s: str | None = None) -> list[str]:
    plan = job_plan(query, partitions, r2s=r2s, static_nquads=static)
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


def test_kafka_without_its_connector_says_how_to_get_it(spark, tmp_path):
    with pytest.raises(SparkUnavailableError, match="spark-sql-kafka"):
        run_job(Q1.read_text(), None, kafka=("localhost:9092", "trips"), output=tmp_path / "out", session=spark, partitions=2)
