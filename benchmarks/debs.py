"""DEBS 2015 Grand Challenge Q1 and Q2: incremental vs re-evaluation on the sample trips.

    python benchmarks/debs.py [--trips q1=5000 q2=5000] [--windows 30 60 120 240] [--out benchmarks/results/debs.md]

The queries are ``examples/queries/debs-q1-frequent-routes.rq`` (top 10 routes of the last 30
minutes: a 4-way stream join, GROUP BY four computed cells, HAVING, ORDER BY … LIMIT 10) and
``debs-q2-profitable-areas.rq`` (top 10 cells by profitability: two sub-queries, a MEDIAN over a
15-minute window joined with a COUNT over a 30-minute window filtered by a correlated NOT EXISTS,
ORDER BY … LIMIT 10), read as written. The trips are the 5,000 of ``examples/data/debs2015``
mapped as its README says (``tests/debs.py``, all 17 columns per trip), replayed at full speed:
each trip is one ``engine.push`` at its drop-off time, and each push is a tick of the query.

Per query, the same trips go through two engines in the same run, one with the query registered
in ``mode="incremental"``, one in ``mode="recompute"`` (ISTREAM), one after the other, each
alone on its engine as it would run. Measured: the latency of each push (evaluation and R2S
included), over every trip of the replay, as mean, p50 and p99, and their total; ratios are
recompute / incremental. Other processes on the machine slow single pushes (p99 most): the load
average at the start is noted, and ratios are only meaningful within one run. A replay of the first ``WARM_UP`` trips on
throw-away engines runs first. Both modes must emit the same ISTREAM emissions, in the same order
(checked before anything is reported).

The seed paper's window-size sweep follows, in incremental mode only (re-evaluation of a 240-minute
window would take hours): each query with its windows scaled to 30, 60, 120 and 240 minutes (Q2's
15-minute window to half of that). The sample's trips span 35 minutes, so from 60 minutes on the
window holds every trip replayed so far and the sweep measures a growing state without expiry.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

from engine import machine, p99, pyplot

from cqels_endpoint import Engine

# The trip reader and the RDF mapping are the tests' (one reader for the sample).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from debs import PREDICATES, SAMPLE, trip_events

QUERIES = Path(__file__).resolve().parents[1] / "examples" / "queries"
FILES = {"q1": QUERIES / "debs-q1-frequent-routes.rq", "q2": QUERIES / "debs-q2-profitable-areas.rq"}
TITLES = {"q1": "Q1 frequent routes", "q2": "Q2 profitable areas"}
MODES = ("incremental", "recompute")
WARM_UP = 200
SAMPLE_TRIPS = 5000
# Mean-latency ratios recompute / incremental reported by the seed paper (JWS 2016) for the two queries,
# and its Java CQELS's average delay per trip in ms (dual-core 2.5 GHz laptop).
PAPER = {"q1": 76, "q2": 320}
PAPER_DELAY_MS = {"q1": 0.022, "q2": 0.068}
WINDOWS_MINUTES = (30, 60, 120, 240)


def replay(mode: str, text: str, events: list[list]) -> tuple[list[float], list[tuple]]:
    """Per-push latencies in ms and the ISTREAM emissions (time and rows, in order)."""
    engine = Engine()
    emitted: list[tuple] = []
    engine.register(text, mode=mode).subscribe(
        lambda e: emitted.append((e.time, tuple(frozenset(row.items()) for row in e.rows)))
    )
    latencies = []
    clock = time.perf_counter
    for _, stream, at, triples in events:
        start = clock()
        engine.push(stream, triples, time=at)
        latencies.append((clock() - start) * 1000)
    engine.close()
    return latencies, emitted


def with_windows(text: str, minutes: int) -> str:
    """The query with its windows scaled so that the 30-minute one lasts ``minutes``."""
    return re.sub(r"\[RANGE (\d+)m\]", lambda match: f"[RANGE {int(match.group(1)) * minutes // 30}m]", text)


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def trip_counts(values: list[str]) -> dict[str, int]:
    counts = {}
    for value in values:
        name, _, count = value.partition("=")
        if name not in FILES or not count.isdigit():
            raise argparse.ArgumentTypeError(f"--trips takes q1=N and/or q2=N, not {value!r}")
        counts[name] = int(count)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", nargs="+", default=["q1=5000", "q2=5000"], help="queries to run and how many trips each")
    parser.add_argument("--windows", nargs="*", type=int, default=list(WINDOWS_MINUTES), help="window sizes of the sweep, minutes")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "debs.md")
    args = parser.parse_args()
    counts = trip_counts(args.trips)
    load = os.getloadavg()[0]  # other processes on the machine skew single pushes (p99 most)

    results = {}
    for name, count in counts.items():
        text = FILES[name].read_text(encoding="utf-8")
        for mode in MODES:
            replay(mode, text, trip_events(WARM_UP, PREDICATES))
        events = trip_events(count, PREDICATES)
        measured = {}
        for mode in MODES:
            latencies, emitted = replay(mode, text, events)
            measured[mode] = (latencies, emitted)
            print(f"{name} {count:>5} trips  {mode:<11}  mean {statistics.fmean(latencies):9.3f} ms  p50 {p50(latencies):9.3f} ms  "
                  f"p99 {p99(latencies):9.3f} ms  total {sum(latencies) / 1000:8.2f} s", flush=True)
        if measured["incremental"][1] != measured["recompute"][1]:
            sys.exit(f"{name}: the modes' ISTREAM emissions differ")
        results[name] = (count, measured)

    sweep = {}
    for name, count in counts.items():
        events = trip_events(count, PREDICATES)
        for minutes in args.windows:
            latencies, _ = replay("incremental", with_windows(FILES[name].read_text(encoding="utf-8"), minutes), events)
            sweep[name, minutes] = latencies
            print(f"{name} window {minutes:>3} min  mean {statistics.fmean(latencies):9.3f} ms  p50 {p50(latencies):9.3f} ms  "
                  f"p99 {p99(latencies):9.3f} ms", flush=True)

    lines = [
        "# DEBS 2015 Q1 and Q2: incremental vs re-evaluation on the sample trips",
        "",
        f"Machine: {machine()}, load average {load:.1f} when the run started. Produced by `python benchmarks/debs.py --trips {' '.join(args.trips)}`.",
        "",
        f"Queries: `examples/queries/debs-q1-frequent-routes.rq` and `debs-q2-profitable-areas.rq` as written. Trips: "
        f"the first N lines of `examples/data/debs2015/{SAMPLE.name}` (its 5,000 drop-offs span 00:02 to 00:37 on 2013-01-01), "
        "all 17 columns as triples, replayed at full speed: one `engine.push` per trip at its drop-off time, one tick "
        "each (trips of the same minute too). Latency = one push (evaluation and ISTREAM included) over every trip "
        f"of the replay, after a warm-up replay of {WARM_UP} trips on throw-away engines; both modes in the same run "
        "on the same trips, one engine per mode, one mode after the other, and both "
        "emitted the same ISTREAM emissions in the same order.",
        "",
        "| query | trips | mode | mean latency (ms) | p50 (ms) | p99 (ms) | total (s) | ISTREAM rows | seed's Java CQELS, mean (ms) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (count, measured) in results.items():
        for mode in MODES:
            latencies, emitted = measured[mode]
            rows = sum(len(rows) for _, rows in emitted)
            lines.append(
                f"| {TITLES[name]} | {count} | {mode} | {statistics.fmean(latencies):.3f} | {p50(latencies):.3f} | "
                f"{p99(latencies):.3f} | {sum(latencies) / 1000:.2f} | {rows} | {PAPER_DELAY_MS[name] if mode == 'incremental' else ''} |"
            )
        incremental, recompute = measured["incremental"][0], measured["recompute"][0]
        lines.append(
            f"| {TITLES[name]} | {count} | **ratio recompute / incremental** | "
            f"**{statistics.fmean(recompute) / statistics.fmean(incremental):.1f}×** | {p50(recompute) / p50(incremental):.1f}× | "
            f"{p99(recompute) / p99(incremental):.1f}× | {sum(recompute) / sum(incremental):.1f}× | | |"
        )
    lines += ["", "Mean-latency ratio recompute / incremental, against the seed paper's:", ""]
    for name, (count, measured) in results.items():
        ratio = statistics.fmean(measured["recompute"][0]) / statistics.fmean(measured["incremental"][0])
        scope = "all the sample's trips" if count == SAMPLE_TRIPS else f"the first {count} of the sample's {SAMPLE_TRIPS} trips only"
        lines.append(f"- {TITLES[name]}: {ratio:.1f}× here, on {scope}; the paper reports {PAPER[name]}×.")
    if sweep:
        lines += [
            "",
            "Window-size sweep (incremental; windows scaled so the 30-minute one lasts the given time, Q2's 15-minute one half "
            "of it; the sample spans 35 minutes, so from 60 minutes on nothing expires):",
            "",
            "| query | window (min) | mean (ms) | p50 (ms) | p99 (ms) | seed's Java CQELS at 30 min (ms) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for (name, minutes), latencies in sweep.items():
            lines.append(
                f"| {TITLES[name]} | {minutes} | {statistics.fmean(latencies):.3f} | {p50(latencies):.3f} | {p99(latencies):.3f} | "
                f"{PAPER_DELAY_MS[name] if minutes == 30 else ''} |"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    plot(results, args.out.with_suffix(".png"))


def plot(results, path: Path) -> None:
    """Latency of each push along the replay (dots) and its median per block of trips (line), both modes,
    one panel per query (needs the bench extra)."""
    plt = pyplot()
    if plt is None:
        return
    figure, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False)
    for axis, (name, (count, measured)) in zip(axes[0], results.items()):
        block = max(1, count // 50)
        for mode, colour in zip(MODES, ("tab:blue", "tab:orange")):
            latencies = measured[mode][0]
            axis.plot(range(1, count + 1), latencies, ".", markersize=1, alpha=0.3, color=colour)
            # The median of each block of trips: single pushes are noisy on a shared machine.
            starts = range(0, count, block)
            medians = [statistics.median(latencies[start : start + block]) for start in starts]
            axis.plot([start + 1 for start in starts], medians, color=colour, label=f"{mode} (median per {block} trips)")
        axis.set_xlabel("trip (one push and one tick each)")
        axis.set_ylabel("latency per push (ms)")
        axis.set_yscale("log")
        axis.set_title(TITLES[name])
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
