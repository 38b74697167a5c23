"""Accelerated-time soak: is memory released as windows expire? RSS over a bounded run.

    python benchmarks/soak.py [--duration 150] [--warm-up 30] [--per-event 5] [--step-ms 50]
                              [--out benchmarks/results/soak.md]

One engine, four continuous queries over one stream, fed as fast as it takes events whose
timestamps advance ``--step-ms`` per event (several seconds of stream time per wall-clock second),
so that their windows fill and expire continuously — a run of 150 s covers over a thousand
windows of 1 s:

- ``join``: two patterns in ``RANGE 1s``, joined on the room (two readings in one room);
- ``per-room``: ``COUNT`` per room, ``RANGE 1s SLIDE 200ms`` (periodic);
- ``latest``: the last 500 triples (``TRIPLES 500``);
- ``now``: the triples of the current event (``NOW``), ``RSTREAM``.

Every event carries ``--per-event`` triples, each with a subject IRI never seen before (a new
reading) and one of 200 rooms drawn at random (seeded), so the term dictionary takes new terms all the time and must release
them when their triples expire. A subscriber per query counts its emissions and drops them.

Every second the script samples the resident set (``/proc/self/statm``), the term dictionary's size
and the triples held by all window states. After ``--warm-up`` seconds, the slope of RSS over time
(least squares) and RSS at the start and end of the measured part are reported: flat RSS (a slope of
a few KiB per minute, within allocator noise) means expired windows give their memory back. Written:
``soak.md`` (figures and samples), ``soak.json`` (every sample) and ``soak.png`` (RSS and dictionary size over time) when
matplotlib is installed. ``tests/engine/test_limits.py`` runs a bounded version asserting the
window and dictionary sizes themselves.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import time
from pathlib import Path

import pyoxigraph as ox
from engine import machine, pyplot
from memory import resident

from cqels_endpoint import Engine

EX = "http://soak.example.org/"
STREAM = EX + "sensors"
READING = ox.NamedNode(EX + "reading")
IN_ROOM = ox.NamedNode(EX + "inRoom")
ROOMS = [ox.NamedNode(f"{EX}room{k}") for k in range(200)]
QUERIES = {
    "join": f"""SELECT ?a ?b WHERE {{
      STREAM <{STREAM}> [RANGE 1s] {{ ?a <{IN_ROOM.value}> ?room }}
      STREAM <{STREAM}> [RANGE 1s] {{ ?b <{IN_ROOM.value}> ?room }}
      FILTER(STR(?a) < STR(?b))
    }}""",
    "per-room": f"""SELECT ?room (COUNT(*) AS ?n) WHERE {{
      STREAM <{STREAM}> [RANGE 1s SLIDE 200ms] {{ ?r <{IN_ROOM.value}> ?room }}
    }} GROUP BY ?room""",
    "latest": f"SELECT ?r ?room WHERE {{ STREAM <{STREAM}> [TRIPLES 500] {{ ?r <{IN_ROOM.value}> ?room }} }}",
    "now": f"SELECT ?r ?room WHERE {{ STREAM <{STREAM}> [NOW] {{ ?r <{IN_ROOM.value}> ?room }} }}",
}
BATCH = 50  # events per push_batch


def run(duration_s: float, warm_up_s: float, per_event: int, step_ms: int) -> dict:
    engine = Engine()
    emitted = {name: 0 for name in QUERIES}
    for name, text in QUERIES.items():
        query = engine.register(text, name=name, r2s="RSTREAM" if name == "now" else None)

        def count(_emission, name=name) -> None:
            emitted[name] += 1

        query.subscribe(count)
    samples = []  # (seconds, events, rss bytes, dictionary terms, window triples)
    events = triples = 0
    rooms = random.Random(16)
    started = time.monotonic()
    next_sample = started
    while True:
        now = time.monotonic()
        if now >= next_sample:
            samples.append((now - started, events, resident(), len(engine.dictionary), sum(engine.shared_windows.sizes())))
            next_sample += 1.0
            if now - started >= duration_s:
                break
        batch = []
        for _ in range(BATCH):
            event = [ox.Triple(ox.NamedNode(f"{EX}r{triples + k}"), IN_ROOM, rooms.choice(ROOMS)) for k in range(per_event)]
            batch.append((event, events * step_ms))
            events += 1
            triples += per_event
        engine.push_batch(STREAM, batch)
    engine.close()
    gc.collect()
    return {
        "samples": samples, "events": events, "triples": triples, "emitted": emitted, "warm_up_s": warm_up_s,
        "stream_s": events * step_ms / 1000,
    }


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var


def report(result: dict, out: Path, duration_s: float, per_event: int, step_ms: int) -> str:
    samples = result["samples"]
    measured = [s for s in samples if s[0] >= result["warm_up_s"]]
    mib = 1024 * 1024
    rss_slope = slope([(s[0] / 60, s[2] / 1024) for s in measured])  # KiB per minute
    term_slope = slope([(s[0] / 60, s[3]) for s in measured])
    first, last = measured[0], measured[-1]
    # RSS saws up and down by a few MiB (the allocator, the cycle collector): the median of the
    # first and of the last minute of the measured part say more than two single samples.
    head = statistics.median(s[2] for s in measured if s[0] < measured[0][0] + 60) / (1024 * 1024)
    tail = statistics.median(s[2] for s in measured if s[0] > measured[-1][0] - 60) / (1024 * 1024)
    stream_s = result["stream_s"]
    lines = [
        "# Accelerated-time soak (`benchmarks/soak.py`)",
        "",
        f"Machine: {machine()}; load average at the end {os.getloadavg()[0]:.2f}.",
        "",
        f"{duration_s:.0f} s of wall time, {result['events']:,} events of {per_event} triples ({result['triples']:,} triples), "
        f"{step_ms} ms of stream time per event: {stream_s:,.0f} s of stream time, {stream_s:,.0f} windows of `RANGE 1s` "
        f"({result['events'] / duration_s:,.0f} events/s). Queries: {', '.join(QUERIES)}; emissions: "
        + ", ".join(f"{name} {count:,}" for name, count in result["emitted"].items()) + ".",
        "",
        f"After a warm-up of {result['warm_up_s']:.0f} s:",
        "",
        "| | start | end | max | slope |",
        "|---|---:|---:|---:|---:|",
        f"| RSS (MiB) | {first[2] / mib:.1f} | {last[2] / mib:.1f} | {max(s[2] for s in measured) / mib:.1f} "
        f"| {rss_slope:+.1f} KiB/min |",
        f"| dictionary (terms) | {first[3]:,} | {last[3]:,} | {max(s[3] for s in measured):,} | {term_slope:+.1f} terms/min |",
        f"| window triples (all states) | {first[4]:,} | {last[4]:,} | {max(s[4] for s in measured):,} | |",
        "",
        f"Median RSS over the first minute after the warm-up {head:.1f} MiB, over the last minute {tail:.1f} MiB "
        f"({tail - head:+.1f} MiB); lowest and highest sample after the warm-up "
        f"{min(s[2] for s in measured) / mib:.1f} and {max(s[2] for s in measured) / mib:.1f} MiB.",
        "",
        "Samples (one every 10 s):",
        "",
        "| s | events | RSS (MiB) | terms | window triples |",
        "|---:|---:|---:|---:|---:|",
        *(f"| {s[0]:.0f} | {s[1]:,} | {s[2] / mib:.1f} | {s[3]:,} | {s[4]:,} |" for s in samples[::10]),
    ]
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result))
    print(text)
    print(f"wrote {out}")
    plt = pyplot()
    if plt is not None:
        figure, (rss_axis, term_axis) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        rss_axis.plot([s[0] for s in samples], [s[2] / mib for s in samples], label="RSS")
        rss_axis.axvline(result["warm_up_s"], color="grey", linestyle=":", label="end of warm-up")
        rss_axis.set_ylabel("RSS (MiB)")
        rss_axis.set_ylim(bottom=0)
        rss_axis.legend(fontsize="small")
        rss_axis.set_title(f"Soak: {stream_s:,.0f} s of stream time in {duration_s:.0f} s; RSS slope {rss_slope:+.1f} KiB/min")
        term_axis.plot([s[0] for s in samples], [s[3] for s in samples], label="dictionary terms")
        term_axis.plot([s[0] for s in samples], [s[4] for s in samples], label="window triples")
        term_axis.set_xlabel("wall-clock seconds")
        term_axis.set_ylim(bottom=0)
        term_axis.legend(fontsize="small")
        for axis in (rss_axis, term_axis):
            axis.grid(True, alpha=0.3)
        figure.tight_layout()
        png = out.with_suffix(".png")
        figure.savefig(png, dpi=120)
        print(f"wrote {png}")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=150, help="seconds of wall time (default 150)")
    parser.add_argument("--warm-up", type=float, default=30, help="seconds left out of start/end/slope (default 30)")
    parser.add_argument("--per-event", type=int, default=5, help="triples per event (default 5)")
    parser.add_argument("--step-ms", type=int, default=50, help="stream time between two events (default 50 ms)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "soak.md")
    args = parser.parse_args()
    if not 0 <= args.warm_up < args.duration - 2:
        parser.error("--warm-up must leave a few seconds of --duration to measure")
    result = run(args.duration, args.warm_up, args.per_event, args.step_ms)
    report(result, args.out, args.duration, args.per_event, args.step_ms)


if __name__ == "__main__":
    main()
