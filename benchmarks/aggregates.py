"""Aggregate cost per tick against the size of its group, for every aggregate.

    python benchmarks/aggregates.py [--sizes 100 1000 10000 100000] [--values integer|decimal|double]
                                    [--budget 1.5] [--out benchmarks/results/aggregates.md]

For each aggregate (COUNT, COUNT DISTINCT, SUM, AVG, MIN, MAX, GROUP_CONCAT, SAMPLE and this
project's MEDIAN) and each group size n, an ``Engine`` of its own runs::

    SELECT (AGG(?v) AS ?x) WHERE { STREAM <s> [TRIPLES n] { ?s <p> ?v } }

so the whole window is one group of n rows. The window is first filled, untimed, with n triples
of distinct subjects and seeded random values (integers; with ``--values decimal`` or ``double``,
numbers with two decimal places as xsd:decimal or xsd:double, inexact in binary),
in events of up to 10,000 triples so that an aggregate that recomputes its group does not pay n
ticks to get there. Then the window is in its steady state: every further event of one triple adds
one row to the group and expires the oldest. After 3 warm-up ticks, ticks are timed one
``engine.push`` each (evaluation and ISTREAM included; the triples are pyoxigraph terms, built
before the clock starts, so no parsing is timed), at least 5 and at most 200 per size, stopping
once ``--budget`` seconds of ticks were measured: the cheap aggregates get 200 ticks per size, the
ones whose tick grows with the group fewer. The engines of one aggregate's sizes are filled first
and then timed in rounds of 10 ticks per size, so that a change of the machine's load (it is
shared) falls on every size alike. Reported per aggregate and size: median and p90 µs per tick and the
number of ticks, and the ratio median(largest) / median(smallest) against the 2× target of
issue 15. Sanity checks: every aggregate must have reported a bound value (GROUP_CONCAT therefore
concatenates ``STR(?v)``), and COUNT must have reported n.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import pyoxigraph as ox
from engine import machine, pyplot, save_loglog

from cqels_endpoint import Engine

EX = "http://bench.example.org/"
STREAM = EX + "stream"
PREDICATE = ox.NamedNode(EX + "p")
XSD = "http://www.w3.org/2001/XMLSchema#"
AGGREGATES = {
    "COUNT": "COUNT(?v)",
    "COUNT DISTINCT": "COUNT(DISTINCT ?v)",
    "SUM": "SUM(?v)",
    "AVG": "AVG(?v)",
    "MIN": "MIN(?v)",
    "MAX": "MAX(?v)",
    "GROUP_CONCAT": "GROUP_CONCAT(STR(?v))",  # of numbers it is an error, as in pyoxigraph
    "SAMPLE": "SAMPLE(?v)",
    "MEDIAN": "MEDIAN(?v)",
}
FILL_EVENT = 10_000
WARM_UP = 3
MIN_TICKS, MAX_TICKS = 5, 200
ROUND = 10  # ticks per size in each round of one aggregate's sizes
TARGET = 2.0


def query(expression: str, size: int) -> str:
    return f"SELECT ({expression} AS ?x) WHERE {{ STREAM <{STREAM}> [TRIPLES {size}] {{ ?s <{PREDICATE.value}> ?v }} }}"


class Triples:
    """Triples of distinct subjects and seeded random values, numbered from 0."""

    def __init__(self, values: str, seed: int = 15) -> None:
        self.rng = random.Random(seed)
        self.datatype = ox.NamedNode(XSD + values)
        self.fraction = values != "integer"
        self.next = 0

    def take(self, count: int) -> list[ox.Triple]:
        triples = []
        for _ in range(count):
            value = self.rng.randrange(1_000_000)
            lexical = f"{value // 100}.{value % 100:02d}" if self.fraction else str(value)
            subject = ox.NamedNode(f"{EX}s{self.next}")
            triples.append(ox.Triple(subject, PREDICATE, ox.Literal(lexical, datatype=self.datatype)))
            self.next += 1
        return triples


class Window:
    """One engine running the query over a full ``[TRIPLES size]`` window: one group in its steady
    state. ``samples`` are the µs of its timed ticks, ``last`` the values the query reported."""

    def __init__(self, expression: str, size: int, values: str) -> None:
        self.engine = Engine()
        registered = self.engine.register(query(expression, size))
        self.last: list[ox.Literal] = []
        registered.subscribe(lambda emission: self.last.extend(row["x"] for row in emission.rows if "x" in row))
        self.source = Triples(values)
        self.at = 0
        while self.source.next < size:
            self.engine.push(STREAM, self.source.take(min(FILL_EVENT, size - self.source.next)), time=self.at)
            self.at += 1
        for _ in range(WARM_UP):
            self.tick()
        self.samples: list[float] = []
        self.spent = 0.0

    def tick(self) -> float:
        """One event of one triple (a row in, the oldest out): its seconds."""
        triples = self.source.take(1)
        start = time.perf_counter()
        self.engine.push(STREAM, triples, time=self.at)
        elapsed = time.perf_counter() - start
        self.at += 1
        return elapsed

    def done(self, budget: float) -> bool:
        return len(self.samples) >= MAX_TICKS or (len(self.samples) >= MIN_TICKS and self.spent >= budget)


def measure(expression: str, sizes: list[int], values: str, budget: float) -> dict[int, Window]:
    """The timed windows of one aggregate, by size, timed in interleaved rounds."""
    windows = {size: Window(expression, size, values) for size in sizes}
    while not all(window.done(budget) for window in windows.values()):
        for window in windows.values():
            for _ in range(ROUND):
                if window.done(budget):
                    break
                elapsed = window.tick()
                window.samples.append(elapsed * 1e6)
                window.spent += elapsed
    for window in windows.values():
        window.engine.close()
    return windows


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 10_000, 100_000])
    parser.add_argument("--values", choices=("integer", "decimal", "double"), default="integer")
    parser.add_argument("--budget", type=float, default=1.5, help="seconds of measured ticks per aggregate and size")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "aggregates.md")
    args = parser.parse_args()

    where = machine()
    load_before = os.getloadavg()
    print(f"machine: {where}; load average {load_before[0]:.2f}")
    started = time.perf_counter()
    results: dict[str, dict[int, list[float]]] = {name: {} for name in AGGREGATES}
    for name, expression in AGGREGATES.items():
        for size, window in measure(expression, args.sizes, args.values, args.budget).items():
            last = window.last[-1] if window.last else None
            if last is None:
                sys.exit(f"{name} over a [TRIPLES {size}] window reported no value")
            if name == "COUNT" and int(last.value) != size:
                sys.exit(f"COUNT over a [TRIPLES {size}] window reported {last}: the window is not full")
            samples = results[name][size] = window.samples
            print(f"{name:<15} n={size:>7,}  median {statistics.median(samples):10.1f} µs  "
                  f"p90 {p90(samples):10.1f} µs  ticks {len(samples)}", flush=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    write_table(args, results, where, (load_before[0], load_after[0]), elapsed)
    plot(results, args.sizes, args.out.with_suffix(".png"))


def write_table(args, results, where: str, load: tuple[float, float], elapsed: float) -> None:
    smallest, largest = min(args.sizes), max(args.sizes)
    header = "| aggregate | " + " | ".join(f"n = {size:,}" for size in args.sizes)
    header += f" | ratio {largest:,} / {smallest:,} | within {TARGET:g}× |"
    lines = [
        "# Aggregate cost per tick against group size (`benchmarks/aggregates.py`)",
        "",
        f"Machine: {where}; load average {load[0]:.2f} before, {load[1]:.2f} after (2 cores shared with other jobs). The whole run took {elapsed:.0f} s.",
        "",
        f"Query: `SELECT (AGG(?v) AS ?x) WHERE {{ STREAM <s> [TRIPLES n] {{ ?s <p> ?v }} }}`, one group of n "
        f"rows, {args.values} values (seeded random), distinct subjects. The window is filled untimed in events "
        f"of up to {FILL_EVENT:,} triples; then each tick is one `engine.push` of one triple, which adds a row "
        f"to the group and expires the oldest (ISTREAM included). After {WARM_UP} warm-up ticks, {MIN_TICKS} to "
        f"{MAX_TICKS} ticks are timed per cell, until {args.budget:g} s of ticks were measured, one aggregate's sizes "
        f"in interleaved rounds of {ROUND} ticks. Cells: median µs "
        "per tick (p90, ticks timed). The ratio is the medians' ratio; the target (issue 15) is every aggregate "
        f"within {TARGET:g}× from a {smallest:,}-row to a {largest:,}-row group.",
        "",
        header,
        "|---|" + "---:|" * len(args.sizes) + "---:|:---:|",
    ]
    for name, by_size in results.items():
        cells = [f"{statistics.median(by_size[size]):,.0f} ({p90(by_size[size]):,.0f}, {len(by_size[size])})" for size in args.sizes]
        ratio = statistics.median(by_size[largest]) / statistics.median(by_size[smallest])
        verdict = "yes" if ratio <= TARGET else "no"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio:,.1f}× | {verdict} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


def plot(results, sizes: list[int], path: Path) -> None:
    """Median µs per tick against group size, log-log, one line per aggregate (needs the bench extra)."""
    plt = pyplot()
    if plt is None:
        return
    figure, axis = plt.subplots(figsize=(7, 4.5))
    markers = "osD^v<>xP"
    for (name, by_size), marker in zip(results.items(), markers, strict=False):
        axis.plot(sizes, [statistics.median(by_size[size]) for size in sizes], marker=marker, label=name)
    save_loglog(figure, axis, path, "rows in the group (window [TRIPLES n])", "µs per tick (median)",
                f"Aggregate cost per tick; target: within {TARGET:g}× across sizes", legend_columns=2)


if __name__ == "__main__":
    main()
