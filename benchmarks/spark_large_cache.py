"""A Spark job over a large static cache: collected on the driver against left in Parquet, joined either way.

    python benchmarks/spark_large_cache.py [--people 300000] [--events 20000] [--files 10]
                                           [--partitions 2] [--master local[2]] [--work DIR]
                                           [--out benchmarks/results/spark_large_cache.md]

The static data is ``--people`` people, each with a ``foaf:name`` and a ``foaf:mbox``; the stream
is ``--events`` RFID detections of people drawn at random (one per 100 ms, ``--files`` NDJSON
files, one micro-batch each). The query counts each detected person's rooms of the last 30 s with
their name and mailbox::

    SELECT ?person ?name ?mbox (COUNT(?loc) AS ?n)
    WHERE { STREAM <rfid> [RANGE 30s] { ?person lv:detectedAt ?loc } ?person foaf:name ?name ; foaf:mbox ?mbox }
    GROUP BY ?person ?name ?mbox

so the job is keyed by ``?person``, the group runs in the partitions, and the static cache
(``?person ?name ?mbox``, one row per person) holds the key. A cache this large cannot be shipped
with the plan (over 1 MiB pickled, PySpark broadcasts the command, which the Python runner of
``transformWithStateInPandas`` cannot load), so it is joined as a DataFrame in both variants, each
partition getting the rows of the people it owns as its initial state. Each variant runs the same
job in a process of its own (its own SparkSession, ``--master``), so that the driver's peak RSS is
its own:

- ``collected``: ``inline_cache_rows=None``: the cache job collects the rows on the driver, which
  makes the DataFrame from them;
- ``parquet``: ``inline_cache_rows=0``: the rows stay in the cache job's Parquet, read by the
  executors.

Reported per variant: wall time of ``run_job`` (session start excluded), the driver's peak RSS
(``ru_maxrss``) and what it was before the job, the pickled size of the plan the tasks receive,
the rows of the cache each partition holds, and whether the committed emissions equal the
single-process engine's (``streaming.stages.comparable``). ``uptime`` is noted: only the ratios of
one run are meaningful.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from engine import machine

RFID = "http://deri.org/streams/rfid"
LV = "http://deri.org/floorplan/"
FOAF = "http://xmlns.com/foaf/0.1/"
QUERY = (
    f"PREFIX lv: <{LV}> PREFIX foaf: <{FOAF}> SELECT ?person ?name ?mbox (COUNT(?loc) AS ?n) "
    f"WHERE {{ STREAM <{RFID}> [RANGE 30s] {{ ?person lv:detectedAt ?loc }} ?person foaf:name ?name ; foaf:mbox ?mbox }} "
    "GROUP BY ?person ?name ?mbox"
)
VARIANTS = {"collected": None, "parquet": 0}


def person(i: int) -> str:
    return f"http://example.org/person/{i}"


def write_data(work: Path, people: int, events: int, files: int, seed: int = 2026) -> tuple[Path, Path]:
    static = work / "people.nt"
    with static.open("w") as out:
        for i in range(people):
            out.write(f'<{person(i)}> <{FOAF}name> "Person {i}" .\n<{person(i)}> <{FOAF}mbox> <mailto:p{i}@example.org> .\n')
    rng = random.Random(seed)
    events_dir = work / "events"
    events_dir.mkdir()
    size = -(-events // files)
    for k in range(files):
        lines = []
        for i in range(k * size, min(events, (k + 1) * size)):
            data = f"<{person(rng.randrange(people))}> <{LV}detectedAt> <{LV}room{rng.randrange(20)}> .\n"
            lines.append(json.dumps({"stream": RFID, "time": 1_000_000 + 100 * i, "data": data}))
        (events_dir / f"part{k:03d}.ndjson").write_text("".join(line + "\n" for line in lines))
    return static, events_dir


def run_variant(args) -> None:
    """One job in this process; prints its figures as one JSON line."""
    from cqels_endpoint.spark.session import build_session
    from cqels_endpoint.streaming import job as streaming_job
    from cqels_endpoint.streaming.follow import static_nquads
    from cqels_endpoint.streaming.job import committed_lines, input_lines, run_job
    from cqels_endpoint.streaming.plan import job_plan
    from cqels_endpoint.streaming.stages import comparable, single_process_lines

    work = Path(args.work)
    session = build_session(args.master, "cqels-bench-large-cache")
    before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    shipped: dict = {}
    start = streaming_job._start

    def recording_start(session, plan, *rest):  # the plan exactly as the tasks receive it
        shipped["plan_mb"] = len(pickle.dumps(plan)) / 1e6
        return start(session, plan, *rest)

    streaming_job._start = recording_start
    output = work / f"out-{args.run}"
    started = time.perf_counter()
    report = run_job(QUERY, work / "events", output=output, partitions=args.partitions, session=session, static=[work / "people.nt"],
                     checkpoint=work / f"checkpoint-{args.run}", r2s="ISTREAM", inline_cache_rows=VARIANTS[args.run],
                     max_files_per_trigger=1)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    session.stop()
    plan = job_plan(QUERY, args.partitions, r2s="ISTREAM")
    shards = _shard_rows(work / f"checkpoint-{args.run}", plan)
    expected = single_process_lines(
        job_plan(QUERY, 1, r2s="ISTREAM", static_nquads=static_nquads([work / "people.nt"])), input_lines(work / "events")
    )
    got = committed_lines(output)
    print(json.dumps({
        "variant": args.run, "seconds": seconds, "driver_before_mb": before_mb, "driver_peak_mb": peak_mb,
        "plan_mb": shipped["plan_mb"], "caches": report.plan["caches"], "batches": len(report.batches),
        "emissions": len(got), "equal": comparable(got, plan.ordered) == comparable(expected, plan.ordered), "shard_rows": shards,
    }))


def _shard_rows(checkpoint: Path, plan) -> list[int]:
    """The cache rows each partition keeps in its state (the state data source of Spark)."""
    from cqels_endpoint.spark.session import build_session

    session = build_session("local[1]", "cqels-bench-state")
    try:
        # The partitions' operator is the one with a "shard" state variable (Spark numbers them).
        operators = [row["operatorId"] for row in session.read.format("state-metadata").load(str(checkpoint)).collect()]
        for operator in operators:
            try:
                frame = (session.read.format("statestore").option("operatorId", operator).option("stateVarName", "shard")
                         .load(str(checkpoint)))
                counts = {row["key"][0]: row["count"] for row in frame.groupBy("key").count().collect()}
                break
            except Exception:  # the global stage's operator has no such variable
                continue
    finally:
        session.stop()
    return [counts.get(part, 0) - 1 for part in range(plan.tasks)]  # less the cache's mark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=300_000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--work")
    parser.add_argument("--run", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "spark_large_cache.md"))
    args = parser.parse_args()
    if args.run:
        run_variant(args)
        return
    work = Path(args.work or tempfile.mkdtemp(prefix="cqels-large-cache-"))
    work.mkdir(parents=True, exist_ok=True)
    load_start = uptime()
    write_data(work, args.people, args.events, args.files)
    results = []
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--run", variant, "--work", str(work), "--master", args.master,
                   "--partitions", str(args.partitions)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(results[-1], flush=True)
    Path(args.out).write_text(report(args, results, load_start, uptime()))
    print(Path(args.out).read_text())


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def report(args, results: list[dict], load_start: str, load_end: str) -> str:
    lines = [
        "# A Spark job over a large static cache: collected on the driver against left in Parquet",
        "",
        f"`python benchmarks/spark_large_cache.py --people {args.people} --events {args.events} --files {args.files} "
        f"--partitions {args.partitions} --master {args.master}`, {datetime.now().strftime('%Y-%m-%d %H:%M')}.",
        "",
        f"Machine: {machine()}. Load at start: `{load_start}`; at end: `{load_end}`.",
        "",
        f"The cache has {args.people:,} rows (?person ?name ?mbox), keyed like the stream; "
        f"{args.events:,} events in {args.files} micro-batches, {args.partitions} partitions.",
        "",
        "| variant | caches shipped / joined | job wall s | driver RSS before → peak (MB) | plan pickled (MB) "
        "| cache rows per partition | emissions | equal to the engine |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for r in results:
        shards = " / ".join(f"{n:,}" for n in r["shard_rows"])
        lines.append(
            f"| {r['variant']} | {r['caches']['shipped']} / {r['caches']['joined']} | {r['seconds']:.1f} | "
            f"{r['driver_before_mb']:.0f} → {r['driver_peak_mb']:.0f} | {r['plan_mb']:.1f} | {shards} | {r['emissions']:,} | "
            f"{'yes' if r['equal'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
