"""Memory per window triple: resident and traced growth for windows of 10k to 1M triples.

    python benchmarks/memory.py [--case window|count] [--sizes 10000 100000 1000000]
                                [--per-event N] [--baseline /work/base]
                                [--out benchmarks/results/memory[-count].md]

Two cases. ``window`` (the default): one query with one stream pattern and a wide window, whose
FILTER passes nothing::

    SELECT ?s WHERE { STREAM <s> [RANGE 1d] { ?s <p> ?o } FILTER(?o < 0) }

so Γ stays empty and what grows is the window: its window state (``runtime/_windows.pyx``), the
set of triples its window buffer keeps (``operators/_join.pyx``) and the dictionary entries of the
new terms (``runtime/_dictionary.pyx``); the filter sits above the window. Every triple is new: a subject IRI of its
own and a distinct non-negative integer literal, ``--per-event`` triples per event 1 ms apart
(1M triples span under 2 h of stream time, well inside the day), pushed with
``engine.push_batch`` in batches of 10,000 triples built just before their push.

``count``: every triple brings two new terms, a subject IRI and a plain string literal of its own
(neither inlined in its id), 1,000 triples per event (``--per-event`` defaults to 1,000), under a
COUNT over the same wide window::

    SELECT (COUNT(*) AS ?n) WHERE { STREAM <s> [RANGE 1d] { ?s <p> ?o } }

so on top of the window, the aggregate keeps a record of every row it counted (to retract it when
it leaves) and the dictionary holds two entries a triple. The subscriber keeps only the last count,
which is checked against the number of triples pushed.

Each size runs in a fresh subprocess, so one size's heap does not pollute the next. There, after
registering the query and pushing 1,000 warm-up triples (so that lazily built paths exist), the
baseline is taken after ``gc.collect()``; then ``tracemalloc`` starts and the n triples are pushed.
Measured, divided by n: the growth of the resident set (``/proc/self/statm``) minus what
tracemalloc itself used to store its traces (``tracemalloc.get_tracemalloc_memory()``), and the
growth of the memory tracemalloc traced. tracemalloc sees only Python's allocators: what compiled
containers allocate with ``malloc``/``new`` shows in the RSS figure only. The push time (tracing on,
which slows it) is reported too. The targets, in bytes per window triple at 1M triples: ≤ 200 for
``window`` (issue 15), ≤ 250 for ``count`` (issue 30). With ``--baseline DIR`` each size also runs
against that checkout (``PYTHONPATH`` = DIR), right after this one's, for a same-run comparison.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
import tracemalloc
from pathlib import Path

import pyoxigraph as ox
from engine import machine, pyplot, run_child

from cqels_endpoint import Engine

EX = "http://bench.example.org/"
STREAM = EX + "stream"
PREDICATE = ox.NamedNode(EX + "p")
INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
QUERIES = {
    "window": f"SELECT ?s WHERE {{ STREAM <{STREAM}> [RANGE 1d] {{ ?s <{PREDICATE.value}> ?o }} FILTER(?o < 0) }}",
    "count": f"SELECT (COUNT(*) AS ?n) WHERE {{ STREAM <{STREAM}> [RANGE 1d] {{ ?s <{PREDICATE.value}> ?o }} }}",
}
PER_EVENT = {"window": 10, "count": 1_000}
BATCH = 10_000
WARM_UP = 1_000
TARGETS = {"window": 200, "count": 250}  # issue 15's and issue 30's, bytes per window triple at 1M


def resident() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Events:
    """Events of ``per_event`` new triples, 1 ms apart: distinct subjects and integers (``window``),
    or distinct subjects and string literals (``count``)."""

    def __init__(self, case: str, per_event: int) -> None:
        self.case = case
        self.per_event = per_event
        self.triples = 0
        self.at = 0

    def batch(self, triples: int) -> list[tuple[list[ox.Triple], int]]:
        events = []
        end = self.triples + triples
        while self.triples < end:
            count = min(self.per_event, end - self.triples)
            first = self.triples
            if self.case == "count":
                event = [ox.Triple(ox.NamedNode(f"{EX}s{i}"), PREDICATE, ox.Literal(f"v{i}")) for i in range(first, first + count)]
            else:
                event = [ox.Triple(ox.NamedNode(f"{EX}s{i}"), PREDICATE, ox.Literal(str(i), datatype=INTEGER)) for i in range(first, first + count)]
            events.append((event, self.at))
            self.triples += count
            self.at += 1
        return events


def push(engine: Engine, events: Events, triples: int) -> float:
    """Pushes ``triples`` more triples; seconds spent in ``push_batch``."""
    spent = 0.0
    done = 0
    while done < triples:
        batch = events.batch(min(BATCH, triples - done))
        start = time.perf_counter()
        engine.push_batch(STREAM, batch)
        spent += time.perf_counter() - start
        done += min(BATCH, triples - done)
    return spent


def child(case: str, size: int, per_event: int) -> dict:
    engine = Engine()
    registered = engine.register(QUERIES[case])
    rows = []
    last = []  # the count case keeps its last emission only
    if case == "count":
        registered.subscribe(lambda emission: last.__setitem__(slice(None), emission.rows or ()))
    else:
        registered.subscribe(lambda emission: rows.extend(emission.rows or ()))
    events = Events(case, per_event)
    push(engine, events, WARM_UP)
    gc.collect()
    rss_before = resident()
    tracemalloc.start()
    seconds = push(engine, events, size)
    gc.collect()
    traced, _ = tracemalloc.get_traced_memory()
    tracing = tracemalloc.get_tracemalloc_memory()
    rss_after = resident()
    tracemalloc.stop()
    if rows:
        msg = f"the FILTER passed {len(rows)} rows: the query does not measure the window alone"
        raise AssertionError(msg)
    if case == "count":
        counted = [int(row["n"].value) for row in last]
        if counted != [WARM_UP + size]:
            msg = f"the last emission counted {counted}, not the {WARM_UP + size:,} triples pushed"
            raise AssertionError(msg)
    return {
        "size": size,
        "rss": rss_after - rss_before - tracing,
        "traced": traced,
        "tracing": tracing,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--case", choices=sorted(QUERIES), default="window")
    parser.add_argument("--per-event", type=int, help="triples per event (window: 10, count: 1,000)")
    parser.add_argument("--baseline", type=Path, help="another built checkout (the commit before), measured in the same run")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="results/memory.md (window) or results/memory-count.md (count)")
    args = parser.parse_args()
    if args.per_event is None:
        args.per_event = PER_EVENT[args.case]
    if args.out is None:
        args.out = Path(__file__).parent / "results" / ("memory.md" if args.case == "window" else f"memory-{args.case}.md")
    if args.child is not None:
        print(json.dumps(child(args.case, args.child, args.per_event)))
        return

    where = machine()
    load_before = os.getloadavg()[0]
    print(f"machine: {where}; load average {load_before:.2f}")
    started = time.perf_counter()
    checkouts = {"this checkout": Path(__file__).resolve().parents[1]}
    if args.baseline is not None:
        checkouts["before"] = args.baseline.resolve()
    results: dict[str, list[dict]] = {name: [] for name in checkouts}
    for size in args.sizes:
        for name, checkout in checkouts.items():
            result = run_child(checkout, __file__, "--case", args.case, "--child", size, "--per-event", args.per_event)
            results[name].append(result)
            print(f"{name:>13}  {size:>9,} window triples  RSS {result['rss'] / size:7.1f} B/triple  "
                  f"traced {result['traced'] / size:7.1f} B/triple  push {result['seconds']:6.1f} s "
                  f"({size / result['seconds']:,.0f} triples/s, tracing on)", flush=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    write_table(args, results, where, (load_before, os.getloadavg()[0]), elapsed)
    plot(args.case, results, args.out.with_suffix(".png"))


DESCRIPTIONS = {
    "window": "(Γ stays empty: the window is what grows: its window state, its buffer's set of triples and "
    "the dictionary entries of the new terms). Every triple has a new subject IRI and a distinct integer object",
    "count": "(the window, the aggregate's record of each counted row, and two dictionary entries a triple). "
    "Every triple has a new subject IRI and a new plain string literal",
}


def write_table(args, results: dict[str, list[dict]], where: str, load: tuple[float, float], elapsed: float) -> None:
    target = TARGETS[args.case]
    issue = "issue 15" if args.case == "window" else "issue 30"
    lines = [
        f"# Memory per window triple, case `{args.case}` (`benchmarks/memory.py --case {args.case}`)",
        "",
        f"Machine: {where}; load average {load[0]:.2f} before, {load[1]:.2f} after (2 cores shared with other jobs). The whole run took {elapsed:.0f} s.",
        "",
        f"Query: `{QUERIES[args.case].replace(EX, '')}` {DESCRIPTIONS[args.case]}; {args.per_event:,} triples per event, 1 ms apart, "
        f"pushed with `push_batch` in batches of {BATCH:,} triples. Each size in a fresh process, after "
        f"{WARM_UP:,} warm-up triples. *RSS* is the resident set's growth (`/proc/self/statm`) minus "
        "tracemalloc's own trace storage; *traced* is tracemalloc's traced growth (Python allocators only: "
        "what compiled containers `malloc` is in RSS alone). Both divided by the window size. The push time "
        f"is with tracemalloc on. Target ({issue}): ≤ {target} bytes per window triple at 1M triples."
        + (f" *before* is the checkout `{args.baseline}` (the commit before), measured in the same run, alternating sizes." if "before" in results else ""),
        "",
        "| checkout | window triples | RSS growth (MiB) | RSS bytes / triple | traced bytes / triple | push (s) | triples/s | within target |",
        "|---|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for name, runs in results.items():
        for result in runs:
            size = result["size"]
            per_triple = result["rss"] / size
            verdict = "yes" if per_triple <= target else "no"
            lines.append(
                f"| {name} | {size:,} | {result['rss'] / 2**20:,.1f} | {per_triple:,.0f} | {result['traced'] / size:,.0f} "
                f"| {result['seconds']:.1f} | {size / result['seconds']:,.0f} | {verdict} |"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


def plot(case: str, results: dict[str, list[dict]], path: Path) -> None:
    """Bytes per window triple against the window size, with the target (needs the bench extra)."""
    plt = pyplot()
    if plt is None:
        return
    figure, axis = plt.subplots(figsize=(6, 3.6))
    for name, runs in results.items():
        sizes = [result["size"] for result in runs]
        axis.plot(sizes, [r["rss"] / r["size"] for r in runs], marker="o", label=f"RSS growth, {name}")
        axis.plot(sizes, [r["traced"] / r["size"] for r in runs], marker="s", label=f"traced, {name}")
    axis.axhline(TARGETS[case], color="grey", linestyle="--", label=f"target ≤ {TARGETS[case]} B")
    axis.set_xscale("log")
    axis.set_ylim(bottom=0)
    axis.set_xlabel("triples in the window")
    axis.set_ylabel("bytes per window triple")
    axis.set_title(f"Memory per window triple ({case})")
    axis.legend(loc="best", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
