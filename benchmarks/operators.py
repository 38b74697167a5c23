"""Operator micro-benchmark: window buffers feeding the adaptive multiway join, compiled vs twin.

    python benchmarks/operators.py [--events 10000 100000] [--window 1000] [--keys 100]
                                   [--repeat 3] [--out benchmarks/results/operators.md]

The workload is the shape of the localisation example: a 3-way join of two stream patterns
(?person :detectedAt ?loc, ?person :carries ?tag) and a static cache (?loc :name ?name) of
``--keys`` locations. Each event inserts one triple into one of the two buffers (alternating) and,
once a buffer holds ``--window`` triples, expires its oldest one first: one punctuation per event,
as the engine ticks. People and locations are drawn from ``--keys`` values with a skew (a quarter
of the events hit one hot location). Reports events/s and output deltas/s (median and best of
``--repeat`` rounds after a warm-up), and the join's probe count, for both implementations. Other processes on
the machine skew single runs: compare the two implementations within one run only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from cqels_endpoint.operators import _join as compiled
from cqels_endpoint.operators.base import Operator
from cqels_endpoint.operators.reference import join as twin
from cqels_endpoint.operators.static_cache import StaticCache

IMPLEMENTATIONS = {"compiled": compiled, "twin": twin}


class Counting(Operator):
    """Counts what reaches the top without keeping it (a Sink's bag would dominate the timing)."""

    def __init__(self, schema) -> None:
        super().__init__(schema, "count")

    def on_batch(self, port, deltas) -> None:
        self.inputs_seen += len(deltas)


def events(count: int, keys: int, seed: int = 7) -> list[tuple[int, tuple[int, int, int]]]:
    rng = random.Random(seed)
    hot = keys // 2
    out = []
    for i in range(count):
        person = rng.randrange(keys * 4)
        if i % 2 == 0:
            location = hot if rng.random() < 0.25 else rng.randrange(keys)
            out.append((0, (person, 1_000_000, location)))
        else:
            out.append((1, (person, 1_000_001, rng.randrange(keys * 10))))
    return out


def one_round(impl, workload, keys: int, window: int) -> tuple[float, int, int]:
    detected = impl.WindowBuffer(("person", None, "loc"))
    carries = impl.WindowBuffer(("person", None, "tag"))
    cache = StaticCache(("loc", "name"))
    join = impl.MultiwayJoin([detected.schema, carries.schema, cache.schema])
    for port, source in enumerate((detected, carries, cache)):
        source.connect(join, port)
    top = Counting(join.schema)
    join.connect(top)
    cache.replace([(location, 2_000_000 + location) for location in range(keys)])
    sources = (detected, carries, cache)
    for source in sources:
        source.on_punctuation(0)
    buffers = (detected, carries)
    held = ([], [])
    start = time.perf_counter()
    for seq, (which, ids) in enumerate(workload, start=1):
        buffers[which].insert(seq, ids)
        held[which].append(seq)
        if len(held[which]) > window:
            buffers[which].expire(held[which].pop(0))
        for source in sources:
            source.on_punctuation(seq)
    seconds = time.perf_counter() - start
    return seconds, top.inputs_seen, join.counters()["probes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "operators.md")
    args = parser.parse_args()
    from indexes import machine  # the shared machine line of the index benchmark

    lines = [
        "# Operators: window buffers + adaptive multiway join",
        "",
        f"Machine: {machine()}. Window {args.window} triples per buffer, {args.keys} keys, "
        f"median (best) of {args.repeat} rounds after a warm-up.",
        "",
        "| events | implementation | events/s | output deltas/s | outputs | probes |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for count in args.events:
        workload = events(count, args.keys)
        rates = {}
        runs = {name: [] for name in IMPLEMENTATIONS}
        for impl in IMPLEMENTATIONS.values():
            one_round(impl, workload[: min(count, 2000)], args.keys, args.window)
        # Rounds alternate between the implementations so a busy neighbour slows both alike.
        for _ in range(args.repeat):
            for name, impl in IMPLEMENTATIONS.items():
                runs[name].append(one_round(impl, workload, args.keys, args.window))
        for name in IMPLEMENTATIONS:
            times = [seconds for seconds, _, _ in runs[name]]
            _, outputs, probes = runs[name][0]
            median, best = statistics.median(times), min(times)
            rates[name] = count / median
            lines.append(
                f"| {count} | {name} | {count / median:,.0f} ({count / best:,.0f}) | "
                f"{outputs / median:,.0f} | {outputs} | {probes} |"
            )
            print(lines[-1], flush=True)
        lines.append(f"| {count} | speed-up | {rates['compiled'] / rates['twin']:.1f}× | | | |")
        print(lines[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
