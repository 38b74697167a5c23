"""DEBS 2015 Q1 as a Spark job with partial aggregates per partition against today's job (the
solutions sent to the global stage), same run.

    python benchmarks/spark_partials.py [--trips 100000] [--files 100] [--files-per-trigger 10]
                                        [--master local[2]] [--out benchmarks/results/spark_partials.md]

Q1 groups by route (``?pickup ?dropoff``) while the job's key is ``?trip``: each route's count
spans the partitions. Today's job (``partial_aggregates=False``) sends every solution below the
group to the global stage, which counts them; with partial aggregates each partition counts the
solutions it owns per route and sends the changed counts, which the global stage adds up
(``plan.partitioning.split_aggregates``: COUNT → SUM). The trips are those of
``benchmarks/debs_generator.py``, the same files for every run. Each configuration runs as a Spark
job on one SparkSession (``spark_streaming.run_spark``; its emissions compared with the
single-process engine's as ``cqels spark-job --verify`` does), and once more in this process through
the job's own steps (``streaming.stages.run_locally``, the micro-batches those of the Spark run), to
count what the partitions hand the global stage: Spark rows (one per event and partition with
changes, plus partition 0's mark of every event) and the solution or partial rows they carry. With
one partition the query runs whole there, with no global stage to merge, so partials do not apply.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from debs_generator import trip_events, write_files
from engine import machine
from spark_streaming import QUERY, WARM_UP, agreement, read_events, replay_engine, run_spark, summary, uptime

from cqels_endpoint.spark.session import build_session
from cqels_endpoint.streaming.job import input_lines
from cqels_endpoint.streaming.plan import job_plan
from cqels_endpoint.streaming.stages import CHANGES, run_locally


def shuffled(text: str, events_dir: Path, partitions: int, files_per_trigger: int, partial: bool) -> dict:
    """What the partitions hand the global stage, counted on the job's steps in this process."""
    plan = job_plan(text, partitions, partial_aggregates=partial)
    lines = input_lines(events_dir)
    files = sorted({name for _, name, _ in lines})
    by_file = {name: [] for name in files}
    for line in lines:
        by_file[line[1]].append(line)
    batches = [[line for name in files[k : k + files_per_trigger] for line in by_file[name]] for k in range(0, len(files), files_per_trigger)]
    counts = {"spark_rows": 0, "result_rows": 0}

    def count(outputs) -> None:
        counts["spark_rows"] += len(outputs)
        counts["result_rows"] += sum(len(json.loads(output.payload)) for output in outputs if output.kind == CHANGES)

    started = time.perf_counter()
    run_locally(plan, batches, on_outputs=count)
    counts["seconds"] = time.perf_counter() - started
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--files-per-trigger", type=int, default=10)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=2015)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "spark_partials.md")
    args = parser.parse_args()
    text = QUERY.read_text(encoding="utf-8")
    ordered = job_plan(text, 1).ordered
    load_start = uptime()
    work = Path(tempfile.mkdtemp(prefix="cqels-spark-partials-"))
    rows = []
    try:
        events = list(trip_events(args.trips, args.seed))
        events_dir = work / "events"
        write_files(events, args.files, events_dir)
        del events
        assert sum(1 for _ in read_events(events_dir)) == args.trips
        replay_engine(text, events_dir, WARM_UP)
        single = replay_engine(text, events_dir)
        print(f"single process: {single['trips'] / single['wall']:,.0f} trips/s", flush=True)
        session = build_session(args.master, "cqels-spark-partials-bench")
        session.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(args.files + 10))
        try:
            # A short run first: the session's warm-up, not reported.
            run_spark(text, events_dir, work, session, 2, args.files, args.master)
            for partitions, partial in ((1, True), (2, False), (2, True)):
                run = run_spark(text, events_dir, work, session, partitions, args.files_per_trigger, args.master, partial_aggregates=partial)
                found = summary(run)
                counted = shuffled(text, events_dir, partitions, args.files_per_trigger, partial)
                rows.append((partitions, partial, found, counted, agreement(single["lines"], run["lines"], ordered), run["plan"]))
                print(f"{partitions} partition(s), partial {partial}: {found['throughput']:,.0f} trips/s, "
                      f"{counted['result_rows']:,} result rows in {counted['spark_rows']:,} Spark rows, {rows[-1][4]}", flush=True)
        finally:
            session.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(args, single, rows, load_start, uptime()), encoding="utf-8")
    print(f"wrote {args.out}")


def report(args, single: dict, rows: list, load_start: str, load_end: str) -> str:
    single_rate = single["trips"] / single["wall"]
    lines = [
        "# DEBS 2015 Q1: partial aggregates per partition against today's job",
        "",
        f"Machine: {machine()}. `uptime` at the start: `{load_start}`; at the end: `{load_end}`. Produced by "
        f"`python benchmarks/spark_partials.py --trips {args.trips} --files {args.files} --files-per-trigger "
        f"{args.files_per_trigger} --master '{args.master}' --seed {args.seed}` (the module docstring says how).",
        "",
        "| job | partitions | throughput (trips/s) | × single process | batch p50 (ms) | batch p95 (ms) | Spark rows to the global stage "
        "| result rows in them | emissions equal |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| single process (incremental) | — | {single_rate:,.0f} | 1.00 | — | — | — | — | (reference, {len(single['lines']):,} emissions) |",
    ]
    for partitions, partial, found, counted, verdict, _plan in rows:
        name = "one partition (no global merge)" if partitions == 1 else "partial aggregates" if partial else "today's job (solutions)"
        lines.append(
            f"| {name} | {partitions} | {found['throughput']:,.0f} | {found['throughput'] / single_rate:.2f} | "
            f"{found['batch_p50']:,.0f} | {found['batch_p95']:,.0f} | {counted['spark_rows']:,} | {counted['result_rows']:,} | {verdict} |"
        )
    lines += ["", "The split each job ran (`run_job`'s report):", ""]
    lines += [f"- {partitions} partition(s), partial {partial}: " + " ".join(plan["explain"]) for partitions, partial, _f, _c, _v, plan in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
