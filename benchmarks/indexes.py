"""Operator micro-benchmark: ring and one-way index throughput, compiled vs pure-Python twin.

    python benchmarks/indexes.py [--keys 10000 100000 1000000] [--per-key 2] [--repeat 3]
                                 [--out benchmarks/results/indexes.md]

For each key count N and each implementation, one round inserts N × per-key entries (keys in a
scrambled order, as hashed join keys arrive), probes N random keys, expires every entry oldest
first (window expiry), and counts N × per-key one-way index updates. Every call goes through the
Python API, as the pure-Python operators call it; the Cython operators reach the same containers
through the .pxd without that overhead. Reports the median (and best) rate of ``--repeat`` rounds,
alternating the implementations, after one warm-up round each, plus the index's own memory
estimate, and writes a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

from cqels_endpoint.operators import _indexes as compiled
from cqels_endpoint.operators.reference import indexes as twin

IMPLEMENTATIONS = {"compiled": compiled, "twin": twin}
OPERATIONS = ("insert", "probe", "expire", "one-way add")


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"{platform.python_implementation()} {platform.python_version()}"
    )


def workload(keys: int, per_key: int) -> tuple[list[int], list[int]]:
    """Insertion keys (each key exactly ``per_key`` times, scrambled) and probe keys."""
    scramble = 2_654_435_761  # a prime: i → i·c mod N is a bijection, visiting keys in a hash-like order
    inserted = [(i * scramble) % keys for i in range(keys * per_key)]
    probed = [((i * 40_503 + 7) * scramble) % keys for i in range(keys)]
    return inserted, probed


def one_round(impl, inserted: list[int], probed: list[int]) -> tuple[dict[str, float], int]:
    """Seconds per operation kind, and the ring's memory estimate when full."""
    ring = impl.RingIndex()
    insert, probe, remove = ring.insert, ring.probe, ring.remove
    seconds = {}

    start = time.perf_counter()
    for entry, key in enumerate(inserted):
        insert(key, entry)
    seconds["insert"] = time.perf_counter() - start
    memory = ring.memory_bytes()

    start = time.perf_counter()
    for key in probed:
        probe(key)
    seconds["probe"] = time.perf_counter() - start

    start = time.perf_counter()
    for entry, key in enumerate(inserted):
        remove(key, entry)
    seconds["expire"] = time.perf_counter() - start
    if len(ring):
        msg = "expiry left entries behind: the benchmark's workload is wrong"
        raise AssertionError(msg)

    counters = impl.OneWayIndex()
    add = counters.add
    start = time.perf_counter()
    for key in inserted:
        add(key, 1)
    seconds["one-way add"] = time.perf_counter() - start
    return seconds, memory


def mega(rates: list[float]) -> str:
    """Median (best) in millions per second."""
    return f"{statistics.median(rates) / 1e6:.2f} ({max(rates) / 1e6:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--per-key", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "indexes.md")
    args = parser.parse_args()

    where = machine()
    print(f"machine: {where}")
    rows = []
    for keys in args.keys:
        inserted, probed = workload(keys, args.per_key)
        counts = {"insert": len(inserted), "probe": len(probed), "expire": len(inserted),
                  "one-way add": len(inserted)}  # fmt: skip
        rates = {name: {operation: [] for operation in OPERATIONS} for name in IMPLEMENTATIONS}
        memories = {}
        for impl in IMPLEMENTATIONS.values():
            one_round(impl, inserted, probed)  # warm-up
        # Rounds alternate between the implementations, so load from other processes hits both alike.
        for _ in range(args.repeat):
            for name, impl in IMPLEMENTATIONS.items():
                seconds, memories[name] = one_round(impl, inserted, probed)
                for operation in OPERATIONS:
                    rates[name][operation].append(counts[operation] / seconds[operation])
        for operation in OPERATIONS:
            fast, slow = rates["compiled"][operation], rates["twin"][operation]
            ratio = statistics.median(fast) / statistics.median(slow)
            row = f"| {keys:,} | {operation} | {mega(fast)} | {mega(slow)} | {ratio:.1f}× |"
            rows.append(row)
            print(row)
        compiled_mib, twin_mib = memories["compiled"] / 2**20, memories["twin"] / 2**20
        memory_row = (
            f"| {keys:,} | ring memory, full | {compiled_mib:.1f} MiB | {twin_mib:.1f} MiB "
            f"| {twin_mib / compiled_mib:.1f}× smaller |"
        )
        rows.append(memory_row)
        print(memory_row)

    table = "\n".join(
        [
            "# Index micro-benchmark (`benchmarks/indexes.py`)",
            "",
            f"Machine: {where}.",
            "",
            f"Each key holds {args.per_key} entries; rates in millions of operations per second through the "
            f"Python API, median (best) of {args.repeat} rounds after a warm-up. *expire* removes every "
            "entry oldest first; *one-way add* counts each insertion in a OneWayIndex.",
            "",
            "| keys | operation | compiled, M/s | twin, M/s | compiled / twin |",
            "|---:|---|---:|---:|---:|",
            *rows,
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
