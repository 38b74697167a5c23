"""DEBS 2015 Q1 as a Spark Structured Streaming job (1 and 2 partitions) beside the single-process engine.

    python benchmarks/spark_streaming.py [--trips 100000] [--files 100] [--files-per-trigger 10 1]
                                         [--partitions 1 2] [--master local[2]] [--check-trips 5000]
                                         [--work DIR] [--out benchmarks/results/spark_streaming.md]

The query is ``examples/queries/debs-q1-frequent-routes.rq`` as written (top 10 routes of the last
30 minutes), the trips those of ``benchmarks/debs_generator.py`` (the sample's trips resampled with
jittered coordinates, at the sample's rate, ``--seed``), written once as ``--files`` NDJSON files
of consecutive trips. The same files feed:

- the single-process engine (``Engine``, the query registered in ``mode="incremental"``): the lines
  read and decoded from the files, one ``engine.push`` per trip at its drop-off time, in order, one
  emission line (``Emission.json_text()``) kept per emission. Throughput = trips / wall time of the
  whole replay (reading the files included, as the Spark job reads them); latency = each push
  (evaluation and ISTREAM included), p50/p95/p99. A replay of the first ``WARM_UP`` trips on a
  throw-away engine runs first.
- the Spark job (``cqels_endpoint.streaming.job.run_job``) on ``--master`` (``local[2]``: this
  machine's two cores), once per ``--partitions`` value and ``--files-per-trigger`` value, each run
  with a new checkpoint and output directory, all on one SparkSession started before the first run
  (its start-up is not counted). Throughput = input rows (the sum of the progress records'
  ``numInputRows``) / the job's wall time from its start to its last batch's end; per-batch latency
  = ``durationMs.triggerExecution`` of the batches that read rows, p50/p95; end-to-end latency
  estimated as explained in ``end_to_end``.

Sanity first: at ``--check-trips`` trips (the first ones of the same generator, fewer files) the
Spark job's committed emission lines, with every partition count, must equal the single-process
engine's as ``cqels spark-job --verify`` compares them (``streaming.stages.comparable``: line for
line, the rows of an emission a bag unless the query orders them); the runs then double as the
session's warm-up. The 100k runs are compared the same way. A difference is reported in the
results, not hidden.

Other processes on the machine slow everything down: ``uptime`` is noted at the start and the end,
and only the ratios of one run are meaningful.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

from debs_generator import trip_events, write_files
from engine import machine, pyplot
from rebuild_stall import percentile

from cqels_endpoint import Engine
from cqels_endpoint.spark.session import build_session
from cqels_endpoint.streaming.job import committed_lines, run_job
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import comparable

QUERY = Path(__file__).resolve().parents[1] / "examples" / "queries" / "debs-q1-frequent-routes.rq"
WARM_UP = 2000
CHECK_FILES = 5
# Moments of uniform arrival sampled over a run to estimate the end-to-end latency.
ARRIVALS = 20_000


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def read_events(events_dir: Path):
    """(stream, time, N-Triples) of every line of the NDJSON files, in file order."""
    for path in sorted(events_dir.glob("trips-*.ndjson")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                yield event["stream"], event["time"], event["data"]


def replay_engine(text: str, events_dir: Path, limit: int | None = None) -> dict:
    """The single-process engine on the files of ``events_dir`` (the first ``limit`` trips only)."""
    engine = Engine()
    lines: list[str] = []
    engine.register(text, mode="incremental").subscribe(lambda emission: lines.append(emission.json_text()), json_only=True)
    latencies = []
    clock = time.perf_counter
    started = clock()
    for position, (stream, at, data) in enumerate(read_events(events_dir)):
        if position == limit:
            break
        start = clock()
        engine.push(stream, data, time=at)
        latencies.append((clock() - start) * 1000)
    wall = clock() - started
    engine.close()
    return {"trips": len(latencies), "wall": wall, "latencies": latencies, "lines": lines}


def run_spark(text: str, events_dir: Path, work: Path, session, partitions: int, files_per_trigger: int, master: str, **options) -> dict:
    """One run of the Spark job to the end of ``events_dir``, in fresh output and checkpoint
    directories; ``options`` go to ``run_job``."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"p{partitions}-f{files_per_trigger}-", dir=work))
    output = run_dir / "output"
    report = run_job(text, events_dir, output=output, partitions=partitions, checkpoint=run_dir / "checkpoint",
                     session=session, master=master, max_files_per_trigger=files_per_trigger, **options)
    lines = committed_lines(output)
    shutil.rmtree(run_dir)
    return {"partitions": partitions, "files_per_trigger": files_per_trigger, "wall": report.wall_seconds,
            "batches": report.batches, "lines": lines, "plan": report.plan}


def agreement(expected: list[str], got: list[str], ordered: bool) -> str:
    """``equal`` when the job's lines are the engine's as ``cqels spark-job --verify`` compares them
    (in order, each emission's rows a bag unless the query orders them), else where they part."""
    want, have = comparable(expected, ordered), comparable(got, ordered)
    if want == have:
        return "equal"
    differ = next((i for i, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
    return f"DIFFER from emission {differ + 1} ({len(got)} emissions against the engine's {len(expected)})"


def data_batches(batches: list[dict]) -> list[dict]:
    return [batch for batch in batches if batch.get("numInputRows", 0) > 0]


def end_to_end(batches: list[dict]) -> list[float]:
    """Estimated event-to-emission latencies (ms) of events arriving at ``ARRIVALS`` evenly spread
    moments of the run, on the run's own batch timeline (start = the progress record's timestamp,
    end = start + triggerExecution). A file source lists new files when a batch starts, so an event
    arriving at ``t`` waits for the batch running at ``t`` to end (the wait: on average half a batch)
    and is read by the next batch, whose emissions are written when it ends: latency = end of the
    first batch starting at or after ``t`` − ``t``. This is the latency of a feed that keeps the job
    busy with batches of the measured size."""
    spans = sorted(
        (start, start + batch["durationMs"]["triggerExecution"])
        for batch in data_batches(batches)
        for start in [datetime.fromisoformat(batch["timestamp"].replace("Z", "+00:00")).timestamp() * 1000]
    )
    if len(spans) < 2:
        return []
    first, last_start = spans[0][0], spans[-1][0]
    latencies = []
    following = 1
    for index in range(ARRIVALS):
        arrival = first + (last_start - first) * index / ARRIVALS
        while spans[following][0] < arrival:
            following += 1
        latencies.append(spans[following][1] - arrival)
    return latencies


def summary(run: dict) -> dict:
    batches = data_batches(run["batches"])
    durations = [batch["durationMs"]["triggerExecution"] for batch in batches]
    rows = sum(batch["numInputRows"] for batch in batches)
    e2e = end_to_end(run["batches"])
    return {
        "rows": rows, "batches": len(batches), "throughput": rows / run["wall"],
        "batch_rows": statistics.median(batch["numInputRows"] for batch in batches) if batches else 0,
        "batch_p50": percentile(durations, 0.5), "batch_p95": percentile(durations, 0.95),
        "e2e_p50": percentile(e2e, 0.5), "e2e_p95": percentile(e2e, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=100, help="NDJSON files the trips are split into")
    parser.add_argument("--files-per-trigger", type=int, nargs="+", default=[10, 1], help="maxFilesPerTrigger values")
    parser.add_argument("--partitions", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--check-trips", type=int, default=5000, help="trips of the sanity comparison (0: none)")
    parser.add_argument("--seed", type=int, default=2015)
    parser.add_argument("--work", type=Path, help="where the events and the jobs' files go (default: a temporary directory)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "spark_streaming.md")
    args = parser.parse_args()
    text = QUERY.read_text(encoding="utf-8")
    ordered = job_plan(text, 1).ordered
    load_start = uptime()
    work = Path(tempfile.mkdtemp(prefix="cqels-spark-bench-", dir=args.work))
    try:
        events = list(trip_events(args.trips, args.seed))
        full_dir, check_dir = work / "events", work / "check"
        write_files(events, args.files, full_dir)
        if args.check_trips:
            write_files(events[: args.check_trips], CHECK_FILES, check_dir)
        span_minutes = (events[-1].time - events[0].time) / 60_000
        del events
        print(f"{args.trips} trips ({span_minutes:.0f} min of event time) in {args.files} files; {load_start}", flush=True)

        replay_engine(text, full_dir, WARM_UP)
        single = replay_engine(text, full_dir)
        print(f"single process: {single['trips'] / single['wall']:,.0f} trips/s, push p50 "
              f"{percentile(single['latencies'], 0.5):.3f} ms, {len(single['lines'])} emissions", flush=True)

        session = build_session(args.master, "cqels-spark-streaming-bench")
        # A query keeps its last numRecentProgressUpdates - 1 progress records, counted with this
        # session's value (run_job sets its own only while the query starts): room for every batch.
        session.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(args.files + 10))
        try:
            checks = []
            if args.check_trips:
                expected = replay_engine(text, check_dir)["lines"]
                for partitions in args.partitions:
                    run = run_spark(text, check_dir, work, session, partitions, 1, args.master)
                    checks.append((partitions, len(expected), agreement(expected, run["lines"], ordered)))
                    print(f"check {args.check_trips} trips, {partitions} partition(s): {checks[-1][2]}", flush=True)
            runs = []
            for files_per_trigger in args.files_per_trigger:
                for partitions in args.partitions:
                    run = run_spark(text, full_dir, work, session, partitions, files_per_trigger, args.master)
                    run["agreement"] = agreement(single["lines"], run["lines"], ordered)
                    run["summary"] = summary(run)
                    runs.append(run)
                    found = run["summary"]
                    if found["rows"] != args.trips:
                        print(f"the progress records count {found['rows']} input rows, not {args.trips}", flush=True)
                    print(f"spark {partitions} partition(s), {files_per_trigger} file(s)/trigger: {found['throughput']:,.0f} trips/s, "
                          f"batch p50 {found['batch_p50']:.0f} ms, {run['agreement']}", flush=True)
                    # Written after every run: a long sweep interrupted keeps what it measured.
                    write_report(args, span_minutes, single, checks, runs, load_start)
        finally:
            session.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_report(args, span_minutes, single, checks, runs, load_start)
    print(f"wrote {args.out}")
    plot(single, runs, args.out.with_suffix(".png"))


def write_report(args, span_minutes: float, single: dict, checks: list, runs: list[dict], load_start: str) -> None:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(args, span_minutes, single, checks, runs, load_start, uptime()), encoding="utf-8")


def report(args, span_minutes: float, single: dict, checks: list, runs: list[dict], load_start: str, load_end: str) -> str:
    latencies = single["latencies"]
    single_rate = single["trips"] / single["wall"]
    trips_per_file = args.trips // args.files
    lines = [
        "# DEBS 2015 Q1 as a Spark Structured Streaming job against the single-process engine",
        "",
        f"Machine: {machine()}. `uptime` at the start: `{load_start}`; after the last run: `{load_end}`. "
        f"Produced by `python benchmarks/spark_streaming.py --trips {args.trips} --files {args.files} "
        f"--files-per-trigger {' '.join(map(str, args.files_per_trigger))} --partitions {' '.join(map(str, args.partitions))} "
        f"--master '{args.master}' --check-trips {args.check_trips} --seed {args.seed}`.",
        "",
        f"Query: `examples/queries/debs-q1-frequent-routes.rq` as written. Trips: {args.trips:,} from "
        f"`benchmarks/debs_generator.py --seed {args.seed}` ({span_minutes:.0f} minutes of event time at the "
        f"sample's rate, all 17 columns as triples), in {args.files} NDJSON files of {trips_per_file:,} trips. "
        "The single-process engine reads the same files and pushes one trip at a time; the Spark job reads "
        f"them with `maxFilesPerTrigger` = the files per trigger below ({trips_per_file:,} trips per file), on "
        f"`{args.master}`, one SparkSession for every run, started before the first (not counted). Ratios are "
        "against the single-process engine of the same run.",
        "",
        "| engine | partitions | trips per batch (median) | throughput (trips/s) | × single process | batch / push p50 (ms) "
        "| batch / push p95 (ms) | end-to-end p50 (ms) | end-to-end p95 (ms) | batches | emissions equal |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| single process (incremental) | — | 1 | {single_rate:,.0f} | 1.00 | {percentile(latencies, 0.5):.3f} | "
        f"{percentile(latencies, 0.95):.3f} | {percentile(latencies, 0.5):.3f} | {percentile(latencies, 0.95):.3f} | "
        f"{single['trips']:,} pushes | (reference, {len(single['lines']):,} emissions) |",
    ]
    for run in runs:
        found = run["summary"]
        lines.append(
            f"| Spark job | {run['partitions']} | {found['batch_rows']:,.0f} | {found['throughput']:,.0f} | "
            f"{found['throughput'] / single_rate:.2f} | {found['batch_p50']:,.0f} | {found['batch_p95']:,.0f} | "
            f"{found['e2e_p50']:,.0f} | {found['e2e_p95']:,.0f} | {found['batches']} | {run['agreement']} |"
        )
    short = [run for run in runs if run["summary"]["rows"] != args.trips]
    if short:
        lines += ["", "Progress records missing: " + "; ".join(
            f"{run['partitions']} partition(s), {run['files_per_trigger']} file(s) per trigger: "
            f"{run['summary']['rows']:,} input rows counted of {args.trips:,}" for run in short
        ) + ". Spark dropped the first batches' records (it keeps `numRecentProgressUpdates` − 1), so throughput is "
            "understated by that share and the batch latencies lack those batches (the job's first, slowest)."]
    lines += [
        "",
        "Throughput: trips in / wall time; for the engine, of the whole replay (reading and decoding the "
        "NDJSON lines included), for the job, from its start to the end of its last batch (`numInputRows` "
        "summed over the progress records). Batch / push: for the engine, the latency of one `push` "
        "(evaluation and ISTREAM included); for the job, `durationMs.triggerExecution` of each batch that "
        "read rows. End-to-end (event to emission): for the engine, the push itself; for the job an "
        "estimate on each run's own batch timeline: the file source lists new files only when a batch "
        "starts, so an event arriving at a uniformly random moment waits for the batch in progress to "
        "end (half a batch on average, a whole one at worst) and is then read by the next batch, whose "
        "emissions are written when it commits — the wait plus one batch, about 1.5 batch durations at "
        f"the median. Sampled at {ARRIVALS:,} evenly spread moments of each run; it holds for a feed that "
        "keeps the job busy with batches of the measured size.",
        "",
        "The partitions of a batch run as parallel tasks, the global stage after them as one: on "
        f"`{args.master}` two partitions gain from the second core only when nothing else wants it — "
        "compare the load averages above with the machine's cores.",
    ]
    plans = {}
    for run in runs:
        plans.setdefault(run["partitions"], run["plan"])
    if plans:
        lines += ["", "The job's split of the query (`run_job`'s report):", ""]
        lines += [f"- {partitions} partition(s): key `{plan['key']}`; " + " ".join(plan["explain"]) for partitions, plan in plans.items()]
    if checks:
        lines += ["", f"Sanity, at the first {args.check_trips:,} trips ({CHECK_FILES} files, one per trigger): the "
                  "Spark job's committed emission lines against the single-process engine's, compared as "
                  "`cqels spark-job --verify` does (line for line; an emission's rows in order when the query orders them, else as a bag):"]
        lines += [f"- {partitions} partition(s): {verdict} ({count:,} emissions)" for partitions, count, verdict in checks]
    return "\n".join(lines) + "\n"


def plot(single: dict, runs: list[dict], path: Path) -> None:
    """Throughput per configuration (left) and latency p50/p95 (right, log scale)."""
    plt = pyplot()
    if plt is None or not runs:
        return
    labels = ["single\nprocess"] + [f"Spark {run['partitions']}p\n{run['files_per_trigger']} file/trig" for run in runs]
    rates = [single["trips"] / single["wall"]] + [run["summary"]["throughput"] for run in runs]
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    left.bar(range(len(labels)), rates, color=["tab:gray"] + ["tab:blue" if run["partitions"] == 1 else "tab:orange" for run in runs])
    left.set_xticks(range(len(labels)), labels, fontsize="small")
    left.set_ylabel("throughput (trips/s)")
    left.set_title("DEBS Q1 throughput")
    positions = range(len(labels))
    p50 = [percentile(single["latencies"], 0.5)] + [run["summary"]["e2e_p50"] for run in runs]
    p95 = [percentile(single["latencies"], 0.95)] + [run["summary"]["e2e_p95"] for run in runs]
    batch = [float("nan")] + [run["summary"]["batch_p50"] for run in runs]
    right.plot(positions, p50, "o", label="end-to-end p50 (engine: push)")
    right.plot(positions, p95, "^", label="end-to-end p95 (engine: push)")
    right.plot(positions, batch, "s", label="batch p50 (triggerExecution)", fillstyle="none")
    right.set_xticks(positions, labels, fontsize="small")
    right.set_xlim(-0.5, len(labels) - 0.5)
    right.set_yscale("log")
    right.set_ylabel("latency (ms)")
    right.set_title("event-to-emission latency")
    right.legend(fontsize="small")
    right.grid(True, which="major", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
