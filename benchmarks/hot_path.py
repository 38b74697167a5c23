"""The per-event path on DEBS 2015, this checkout against another built checkout in the same run.

    python benchmarks/hot_path.py --baseline /tmp/base [--trips 5000] [--repeat 3]
                                  [--out benchmarks/results/hot_path.md]

Issue 30's targets for the compiled push chain are mean times per trip of DEBS Q1 and Q2
(``examples/queries/debs-q1-frequent-routes.rq``, ``debs-q2-profitable-areas.rq``), incremental
mode, Engine API, one push and one tick per trip, under two mappings of the sample's trips:

- *17 triples*: every column of the trip record (``benchmarks/debs.py``'s mapping);
- *9 triples*: only the nine predicates the two queries read (pickLat/Lon, dropLat/Lon, fare, tip,
  taxi, pickupTime, dropoffTime).

Each (checkout, query, mapping) replay runs in a fresh process (``PYTHONPATH`` = the checkout; the
child says which package it imported), after a warm-up replay of 200 trips on a throw-away engine.
Checkouts alternate within each repeat (A B A B …) so that drift on a shared machine falls on both;
the table gives each one's best and median mean over the repeats, and the ratio of the medians.
Both checkouts must emit the same ISTREAM emissions (a digest of every emission is compared), or
the script stops: a speed-up that changes one answer is a bug.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from engine import machine, pyplot, run_child

HERE = Path(__file__).resolve()
QUERIES = {"q1": "debs-q1-frequent-routes.rq", "q2": "debs-q2-profitable-areas.rq"}
READ_PREDICATES = ("pickLat", "pickLon", "dropLat", "dropLon", "fare", "tip", "taxi", "pickupTime", "dropoffTime")
MAPPINGS = ("17", "9")
TARGET_MS = {"q1": 0.05, "q2": 0.15}
SEED_JAVA_MS = {"q1": 0.022, "q2": 0.068}  # the seed paper's Java CQELS, mean delay per trip
WARM_UP = 200


def child(query: str, mapping: str, trips: int) -> None:
    """One replay in this process: prints a JSON line with the package, mean ms and the digest."""
    sys.path.insert(0, str(HERE.parents[1] / "tests"))
    from debs import PREDICATES, trip_events

    import cqels_endpoint
    from cqels_endpoint import Engine

    predicates = PREDICATES if mapping == "17" else READ_PREDICATES
    text = (HERE.parents[1] / "examples" / "queries" / QUERIES[query]).read_text(encoding="utf-8")

    def replay(events):
        engine = Engine()
        digest = hashlib.sha256()
        engine.register(text).subscribe(
            lambda e: digest.update(repr((e.time, sorted(sorted((k, str(v)) for k, v in row.items()) for row in e.rows))).encode())
        )
        clock = time.perf_counter
        total = 0.0
        for _, stream, at, triples in events:
            start = clock()
            engine.push(stream, triples, time=at)
            total += clock() - start
        engine.close()
        return total, digest.hexdigest()

    replay(trip_events(WARM_UP, predicates))
    total, digest = replay(trip_events(trips, predicates))
    print(json.dumps({"package": cqels_endpoint.__file__, "mean_ms": total * 1000 / trips, "digest": digest}))


def run(checkout: Path, query: str, mapping: str, trips: int) -> dict:
    return run_child(checkout, HERE, "--child", query, mapping, "--trips", trips)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another built checkout (the commit before)")
    parser.add_argument("--trips", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "hot_path.md")
    args = parser.parse_args()
    checkouts = {"this checkout": HERE.parents[1], "before": args.baseline.resolve()}
    load = [os.getloadavg()[0]]
    means: dict[tuple[str, str, str], list[float]] = {}
    for query in QUERIES:
        for mapping in MAPPINGS:
            digests = set()
            for _ in range(args.repeat):
                for name, checkout in checkouts.items():
                    result = run(checkout, query, mapping, args.trips)
                    digests.add(result["digest"])
                    means.setdefault((query, mapping, name), []).append(result["mean_ms"])
                    print(f"{query} {mapping:>2} triples  {name:<13} {result['mean_ms']:.4f} ms/trip", flush=True)
            if len(digests) != 1:
                raise SystemExit(f"{query} ({mapping} triples): the checkouts' emissions differ")
    load.append(os.getloadavg()[0])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(means, args, load), encoding="utf-8")
    print(f"wrote {args.out}")
    plot(means, args.out.with_suffix(".png"))


def report(means: dict, args: argparse.Namespace, load: list[float]) -> str:
    lines = [
        "# DEBS 2015 per-event path: this checkout against the commit before",
        "",
        f"Machine: {machine()}; load average {load[0]:.1f} at the start, {load[1]:.1f} at the end. Produced by "
        f"`python benchmarks/hot_path.py --baseline {args.baseline} --trips {args.trips} --repeat {args.repeat}`; "
        "incremental mode, Engine API, one push per trip; every emission identical across checkouts.",
        "",
        "| query | triples a trip | checkout | best mean (ms/trip) | median mean (ms/trip) | before / this (medians) | target | seed's Java CQELS |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for query in QUERIES:
        for mapping in MAPPINGS:
            this = means[query, mapping, "this checkout"]
            before = means[query, mapping, "before"]
            ratio = statistics.median(before) / statistics.median(this)
            for name, values in (("this checkout", this), ("before", before)):
                lines.append(
                    f"| {query.upper()} | {mapping} | {name} | {min(values):.4f} | {statistics.median(values):.4f} | "
                    + (f"{ratio:.2f}× | ≤ {TARGET_MS[query]} | {SEED_JAVA_MS[query]} |" if name == "this checkout" else " | | |")
                )
    return "\n".join(lines) + "\n"


def plot(means: dict, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    labels = [f"{query.upper()}, {mapping} triples" for query in QUERIES for mapping in MAPPINGS]
    figure, axis = plt.subplots(figsize=(8, 4))
    width = 0.38
    for offset, name in ((-width / 2, "before"), (width / 2, "this checkout")):
        values = [statistics.median(means[query, mapping, name]) for query in QUERIES for mapping in MAPPINGS]
        axis.bar([i + offset for i in range(len(labels))], values, width, label=name)
    for i, query in enumerate(q for q in QUERIES for _ in MAPPINGS):
        axis.hlines(SEED_JAVA_MS[query], i - width, i + width, colors="black", linestyles="dotted",
                    label="seed's Java CQELS" if i == 0 else None)
    axis.set_xticks(range(len(labels)), labels)
    axis.set_ylabel("mean ms per trip (median of repeats)")
    axis.set_title("DEBS 2015, incremental, one push per trip")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        position = sys.argv.index("--child")
        child(sys.argv[position + 1], sys.argv[position + 2], int(sys.argv[sys.argv.index("--trips") + 1]))
    else:
        main()
