"""The cost of an event against the number of queries registered on its stream (issue 30, item 8).

    python benchmarks/queries.py [--queries 1 10 100 1000] [--events 2000] [--baseline /work/base]
                                 [--out benchmarks/results/queries.md]

N incremental ISTREAM queries on one stream, each over a ``[RANGE 10s]`` window, two cases:

- ``one``: query i reads ``?s <p{i}> ?o``; each event is one triple of a random one of the N
  predicates, so it matches one query;
- ``all``: every query reads ``?s <p> ?o`` and keeps ``FILTER(?o >= i)``: each event matches all N
  (and enters the window state they share, ``runtime.sharing``), about half of them pass it.

Events come 10 ms apart (so the windows fill and expire in their steady state after 10 s of stream
time). Each (checkout, case, N) runs in a fresh process: this checkout and ``--baseline`` (a built
checkout, run with ``PYTHONPATH`` set to it) alternate, and the emissions of the two are compared
(a digest of every query's) before anything is reported. Reported: mean ms per event over the
events after the first ``--warmup`` (the registrations' garbage collected before the first event),
in wall time and in the process's CPU time (on a shared machine the wall time of an event also
counts the time other processes held the cores).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import random
import statistics
import time
from pathlib import Path

from engine import machine, run_child

ROOT = Path(__file__).resolve().parents[1]
STREAM = "http://ex.org/stream"
EX = "http://ex.org/"


def query_text(case: str, i: int) -> str:
    if case == "one":
        return f"SELECT ?s ?o WHERE {{ STREAM <{STREAM}> [RANGE 10s] {{ ?s <{EX}p{i}> ?o }} }}"
    return f"SELECT ?s ?o WHERE {{ STREAM <{STREAM}> [RANGE 10s] {{ ?s <{EX}p> ?o FILTER(?o >= {i}) }} }}"


def child(case: str, count: int, events: int, warmup: int) -> dict:
    from cqels_endpoint import Engine

    engine = Engine()
    queries = [engine.register(query_text(case, i), name=f"q{i}") for i in range(count)]
    digest = hashlib.sha256()
    for query in queries:
        query.subscribe(lambda e, name=query.name: digest.update(repr((name, e.time, len(e.rows))).encode()))
    # The full collection the registrations' garbage makes due (about 0.1 s with 1,000 queries) is
    # theirs, not the events': collected here, so it does not land among the measured events in one
    # checkout and in the warm-up in the other.
    gc.collect()
    rng = random.Random(7)
    stream = []
    for k in range(events):
        predicate = f"p{rng.randrange(count)}" if case == "one" else "p"
        stream.append((1_000 + 10 * k, f"<{EX}s{k}> <{EX}{predicate}> {rng.randrange(count)} ."))
    per_event, cpu = [], []
    for at, data in stream:
        tick, cpu_tick = time.perf_counter(), time.process_time()
        engine.push(STREAM, data, time=at)
        per_event.append(time.perf_counter() - tick)
        cpu.append(time.process_time() - cpu_tick)
    engine.close()
    return {"mean_ms": 1000 * statistics.fmean(per_event[warmup:]), "cpu_ms": 1000 * statistics.fmean(cpu[warmup:]),
            "emissions": sum(q.emitted for q in queries), "digest": digest.hexdigest()}


def run_case(checkout: Path, case: str, count: int, events: int, warmup: int) -> dict:
    return run_child(checkout, __file__, "--child", case, "--queries", count, "--events", events, "--warmup", warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--baseline", type=Path, default=Path("/work/base"))
    parser.add_argument("--child", choices=["one", "all"])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "queries.md")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.queries[0], args.events, args.warmup)))
        return

    rows = []
    for case in ("one", "all"):
        for count in args.queries:
            ours = run_case(ROOT, case, count, args.events, args.warmup)
            base = run_case(args.baseline, case, count, args.events, args.warmup)
            if (ours["digest"], ours["emissions"]) != (base["digest"], base["emissions"]):
                raise SystemExit(f"{case}, {count} queries: the two checkouts emitted different results")
            rows.append((case, count, ours, base))
            figures = f"{ours['mean_ms']:.4f} ms/event ({ours['cpu_ms']:.4f} CPU), baseline {base['mean_ms']:.4f} ({base['cpu_ms']:.4f} CPU)"
            print(f"{case} {count}: {figures}", flush=True)

    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    lines = [
        "# Cost of an event against the number of queries on its stream",
        "",
        f"`python benchmarks/queries.py --queries {' '.join(map(str, args.queries))} --events {args.events}`, one run, "
        f"this checkout against `{args.baseline}` (the commit before issue 30's fan-out), each point a fresh process; "
        f"{machine()}, load average {load} at the end. Both checkouts emitted identical results at every point.",
        "",
        "| case | queries | this checkout (ms/event) | baseline (ms/event) | baseline / this "
        "| this checkout, CPU (ms/event) | baseline, CPU (ms/event) | baseline / this, CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case, count, ours, base in rows:
        lines.append(
            f"| {case} | {count} | {ours['mean_ms']:.4f} | {base['mean_ms']:.4f} | {base['mean_ms'] / ours['mean_ms']:.1f}× "
            f"| {ours['cpu_ms']:.4f} | {base['cpu_ms']:.4f} | {base['cpu_ms'] / ours['cpu_ms']:.1f}× |"
        )
    args.out.write_text("\n".join(lines) + "\n")
    _plot(rows, args.out.with_suffix(".png"))
    print(f"wrote {args.out}")


def _plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for axis, case, title in zip(axes, ("one", "all"), ("the event matches one query", "the event matches every query")):
        points = [(count, ours, base) for c, count, ours, base in rows if c == case]
        counts = [count for count, _, _ in points]
        axis.plot(counts, [ours["mean_ms"] for _, ours, _ in points], marker="o", label="this checkout")
        axis.plot(counts, [base["mean_ms"] for _, _, base in points], marker="o", label="baseline")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("queries registered on the stream")
        axis.set_ylabel("ms per event")
        axis.set_title(title)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
