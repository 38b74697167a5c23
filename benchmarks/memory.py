"""Memory per window triple: resident and traced growth for windows of 10k to 1M triples.

    python benchmarks/memory.py [--sizes 10000 100000 1000000] [--per-event 10]
                                [--out benchmarks/results/memory.md]

One query with one stream pattern and a wide window, whose FILTER passes nothing::

    SELECT ?s WHERE { STREAM <s> [RANGE 1d] { ?s <p> ?o } FILTER(?o < 0) }

so Γ stays empty and what grows is the window: its window state (``runtime/_windows.pyx``), the
set of triples its window buffer keeps (``operators/_join.pyx``) and the dictionary entries of the
new terms (``runtime/_dictionary.pyx``); the filter sits above the window. Every triple is new: a subject IRI of its
own and a distinct non-negative integer literal, ``--per-event`` triples per event 1 ms apart
(1M triples span under 2 h of stream time, well inside the day), pushed with
``engine.push_batch`` in batches of 10,000 triples built just before their push.

Each size runs in a fresh subprocess, so one size's heap does not pollute the next. There, after
registering the query and pushing 1,000 warm-up triples (so that lazily built paths exist), the
baseline is taken after ``gc.collect()``; then ``tracemalloc`` starts and the n triples are pushed.
Measured, divided by n: the growth of the resident set (``/proc/self/statm``) minus what
tracemalloc itself used to store its traces (``tracemalloc.get_tracemalloc_memory()``), and the
growth of the memory tracemalloc traced. tracemalloc sees only Python's allocators: what compiled
containers allocate with ``malloc``/``new`` shows in the RSS figure only. The push time (tracing on,
which slows it) is reported too. The target (issue 15) is ≤ 200 bytes per window triple at 1M.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pyoxigraph as ox
from engine import machine, pyplot

from cqels_endpoint import Engine

EX = "http://bench.example.org/"
STREAM = EX + "stream"
PREDICATE = ox.NamedNode(EX + "p")
INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
QUERY = f"SELECT ?s WHERE {{ STREAM <{STREAM}> [RANGE 1d] {{ ?s <{PREDICATE.value}> ?o }} FILTER(?o < 0) }}"
BATCH = 10_000
WARM_UP = 1_000
TARGET = 200


def resident() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Events:
    """Events of ``per_event`` new triples (distinct subjects and integers), 1 ms apart."""

    def __init__(self, per_event: int) -> None:
        self.per_event = per_event
        self.triples = 0
        self.at = 0

    def batch(self, triples: int) -> list[tuple[list[ox.Triple], int]]:
        events = []
        end = self.triples + triples
        while self.triples < end:
            count = min(self.per_event, end - self.triples)
            first = self.triples
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


def child(size: int, per_event: int) -> dict:
    engine = Engine()
    registered = engine.register(QUERY)
    rows = []
    registered.subscribe(lambda emission: rows.extend(emission.rows or ()))
    events = Events(per_event)
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
    parser.add_argument("--per-event", type=int, default=10)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "memory.md")
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.per_event)))
        return

    where = machine()
    load_before = os.getloadavg()[0]
    print(f"machine: {where}; load average {load_before:.2f}")
    started = time.perf_counter()
    results = []
    for size in args.sizes:
        command = [sys.executable, __file__, "--child", str(size), "--per-event", str(args.per_event)]
        result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        results.append(result)
        print(f"{size:>9,} window triples  RSS {result['rss'] / size:7.1f} B/triple  "
              f"traced {result['traced'] / size:7.1f} B/triple  push {result['seconds']:6.1f} s "
              f"({size / result['seconds']:,.0f} triples/s, tracing on)", flush=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    write_table(args, results, where, (load_before, os.getloadavg()[0]), elapsed)
    plot(results, args.out.with_suffix(".png"))


def write_table(args, results: list[dict], where: str, load: tuple[float, float], elapsed: float) -> None:
    lines = [
        "# Memory per window triple (`benchmarks/memory.py`)",
        "",
        f"Machine: {where}; load average {load[0]:.2f} before, {load[1]:.2f} after (2 cores shared with other jobs). The whole run took {elapsed:.0f} s.",
        "",
        f"Query: `{QUERY.replace(EX, '')}` (Γ stays empty: the window is what grows: its window state, "
        "its buffer's set of triples and the dictionary entries of the new terms). Every triple has "
        f"a new subject IRI and a distinct integer object; {args.per_event} triples per event, 1 ms apart, "
        f"pushed with `push_batch` in batches of {BATCH:,} triples. Each size in a fresh process, after "
        f"{WARM_UP:,} warm-up triples. *RSS* is the resident set's growth (`/proc/self/statm`) minus "
        "tracemalloc's own trace storage; *traced* is tracemalloc's traced growth (Python allocators only: "
        "what compiled containers `malloc` is in RSS alone). Both divided by the window size. The push time "
        f"is with tracemalloc on. Target (issue 15): ≤ {TARGET} bytes per window triple at 1M triples.",
        "",
        "| window triples | RSS growth (MiB) | RSS bytes / triple | traced bytes / triple | push (s) | triples/s | within target |",
        "|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for result in results:
        size = result["size"]
        per_triple = result["rss"] / size
        verdict = "yes" if per_triple <= TARGET else "no"
        lines.append(
            f"| {size:,} | {result['rss'] / 2**20:,.1f} | {per_triple:,.0f} | {result['traced'] / size:,.0f} "
            f"| {result['seconds']:.1f} | {size / result['seconds']:,.0f} | {verdict} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


def plot(results: list[dict], path: Path) -> None:
    """Bytes per window triple against the window size, with the target (needs the bench extra)."""
    plt = pyplot()
    if plt is None:
        return
    sizes = [result["size"] for result in results]
    figure, axis = plt.subplots(figsize=(6, 3.6))
    axis.plot(sizes, [r["rss"] / r["size"] for r in results], marker="o", label="RSS growth")
    axis.plot(sizes, [r["traced"] / r["size"] for r in results], marker="s", label="tracemalloc traced")
    axis.axhline(TARGET, color="grey", linestyle="--", label=f"target ≤ {TARGET} B")
    axis.set_xscale("log")
    axis.set_ylim(bottom=0)
    axis.set_xlabel("triples in the window")
    axis.set_ylabel("bytes per window triple")
    axis.set_title("Memory per window triple")
    axis.legend(loc="center left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
