"""Whole-engine workload: incremental vs re-evaluation on a 3-way stream join with a static join.

    python benchmarks/engine.py [--events 1000 2000 5000 10000] [--window-ms 30000] [--period-ms 100]
                                [--out benchmarks/results/engine.md]

The query joins three streams in a 30 s window (people seen in rooms, room temperatures, badges
people carry) and a static graph (room names)::

    SELECT ?person ?room ?name ?temp ?badge WHERE {
      STREAM :rfid  [RANGE 30s] { ?person :at ?room }
      STREAM :temp  [RANGE 30s] { ?room :temp ?temp }
      STREAM :badge [RANGE 30s] { ?person :badge ?badge }
      ?room :name ?name
    }

One event every ``--period-ms`` (one triple, round robin over the three streams), people and
rooms drawn with a skew (a quarter of the readings hit one hot room), so the window holds
30 s / period events. The same events go through two engines in the same run, one registered in
``mode="incremental"``, one in ``mode="recompute"`` (the oracle and the baseline). Measured: the
latency of each ``push`` (evaluation and R2S included) after a warm-up of 200 events, as mean and
p99, and the total; the ratio is recompute / incremental. Both modes must emit the same number of
rows, checked before anything is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cqels_endpoint import Engine
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.query.windows import format_duration
from static_store import StaticStore

EX = "http://bench.example.org/"
STREAMS = (EX + "rfid", EX + "temp", EX + "badge")
WARM_UP = 200


def query(window: str) -> str:
    return (
        f"PREFIX : <{EX}>\n"
        "SELECT ?person ?room ?name ?temp ?badge WHERE {\n"
        f"  STREAM <{STREAMS[0]}> [RANGE {window}] {{ ?person :at ?room }}\n"
        f"  STREAM <{STREAMS[1]}> [RANGE {window}] {{ ?room :temp ?temp }}\n"
        f"  STREAM <{STREAMS[2]}> [RANGE {window}] {{ ?person :badge ?badge }}\n"
        "  ?room :name ?name\n"
        "}"
    )


def static_data(rooms: int) -> StaticStore:
    store = open_store()
    lines = "".join(f'<{EX}room{r}> <{EX}name> "Room {r}" .\n' for r in range(rooms))
    store.load(lines.encode(), media_type="application/n-triples")
    return store


def workload(count: int, period_ms: int, people: int, rooms: int, seed: int = 11) -> list[tuple[str, int, str]]:
    """(stream, time, N-Triples) per event."""
    rng = random.Random(seed)
    hot = rooms // 2
    events = []
    for i in range(count):
        stream = STREAMS[i % 3]
        person = f"<{EX}person{rng.randrange(people)}>"
        room = f"<{EX}room{hot if rng.random() < 0.25 else rng.randrange(rooms)}>"
        if stream == STREAMS[0]:
            triple = f"{person} <{EX}at> {room} ."
        elif stream == STREAMS[1]:
            triple = f'{room} <{EX}temp> "{rng.randrange(15, 30)}"^^<http://www.w3.org/2001/XMLSchema#integer> .'
        else:
            triple = f"{person} <{EX}badge> <{EX}badge{rng.randrange(people * 2)}> ."
        events.append((stream, i * period_ms, triple))
    return events


def run(mode: str, text: str, events: list[tuple[str, int, str]], rooms: int) -> tuple[list[float], int]:
    """Per-push latencies in ms (after the warm-up) and the number of ISTREAM rows emitted."""
    engine = Engine(store=static_data(rooms))
    registered = engine.register(text, mode=mode)
    rows = [0]
    registered.subscribe(lambda emission: rows.__setitem__(0, rows[0] + len(emission.rows)))
    latencies = []
    clock = time.perf_counter
    for position, (stream, at, triple) in enumerate(events):
        start = clock()
        engine.push(stream, triple, time=at)
        elapsed = (clock() - start) * 1000
        if position >= WARM_UP:
            latencies.append(elapsed)
    engine.close()
    return latencies, rows[0]


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def run_child(checkout: Path, script: str | Path, *arguments: object) -> dict:
    """The JSON object a benchmark's child run prints last: ``script`` with ``arguments``, run by this
    interpreter in a fresh process that imports ``cqels_endpoint`` from ``checkout`` (``PYTHONPATH``
    set to it, so a baseline checkout wins over the installed package). A child that prints the
    ``package`` it imported is checked to have imported the checkout's."""
    command = [sys.executable, str(Path(script).resolve()), *map(str, arguments)]
    done = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(checkout)}, capture_output=True, text=True, check=False, cwd=checkout)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[1:])} on {checkout} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if "package" in result and not result["package"].startswith(str(checkout)):
        raise SystemExit(f"the run meant for {checkout} imported {result['package']}")
    return result


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, {platform.python_implementation()} {platform.python_version()}"


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or None (with a note) when the bench extra
    is not installed: the figures are written either way, the plot is optional."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'cqels-endpoint[bench]'): no plot")
        return None
    return plt


def save_loglog(figure, axis, path: Path, xlabel: str, ylabel: str, title: str, legend_columns: int = 1) -> None:
    """Log-log axes with their labels, legend and grid, written to ``path``."""
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.set_title(title)
    axis.legend(fontsize="small", ncol=legend_columns)
    axis.grid(True, which="major", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    parser.add_argument("--window-ms", type=int, default=30_000)
    parser.add_argument("--period-ms", type=int, default=100)
    parser.add_argument("--people", type=int, default=40)
    parser.add_argument("--rooms", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "engine.md")
    args = parser.parse_args()

    window = format_duration(args.window_ms)
    text = query(window)
    results = []
    for count in args.events:
        events = workload(count, args.period_ms, args.people, args.rooms)
        measured = {}
        for mode in ("incremental", "recompute"):
            latencies, rows = run(mode, text, events, args.rooms)
            measured[mode] = (latencies, rows)
            print(f"{count:>6} events  {mode:<11}  mean {statistics.fmean(latencies):8.3f} ms  "
                  f"p99 {p99(latencies):8.3f} ms  total {sum(latencies) / 1000:7.2f} s  rows {rows}", flush=True)
        if measured["incremental"][1] != measured["recompute"][1]:
            sys.exit(f"the modes disagree at {count} events: {measured['incremental'][1]} != {measured['recompute'][1]} rows")
        results.append((count, measured))

    live = args.window_ms // args.period_ms
    lines = [
        f"# Engine: incremental vs re-evaluation (3-way stream join + static join, {window} window)",
        "",
        f"Machine: {machine()}. Produced by `python benchmarks/engine.py`.",
        "",
        f"Query: three `RANGE {window}` stream patterns joined on ?person and ?room, and a static cache of "
        f"{args.rooms} room names. One event every {args.period_ms} ms (one triple, round robin over the "
        f"three streams; {args.people} people, {args.rooms} rooms, a quarter of the readings in one hot room), "
        f"so the windows hold about {live} triples. Latency = one `engine.push` (evaluation and ISTREAM "
        f"included), measured after a warm-up of {WARM_UP} events; both modes in the same run on the same "
        "events, and both emitted the same number of rows.",
        "",
        "| events | mode | mean latency (ms) | p99 latency (ms) | total (s) | ISTREAM rows |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for count, measured in results:
        for mode in ("incremental", "recompute"):
            latencies, rows = measured[mode]
            lines.append(
                f"| {count} | {mode} | {statistics.fmean(latencies):.3f} | {p99(latencies):.3f} | "
                f"{sum(latencies) / 1000:.2f} | {rows} |"
            )
        incremental, recompute = measured["incremental"][0], measured["recompute"][0]
        lines.append(
            f"| {count} | **ratio recompute / incremental** | **{statistics.fmean(recompute) / statistics.fmean(incremental):.1f}×** "
            f"| {p99(recompute) / p99(incremental):.1f}× | {sum(recompute) / sum(incremental):.1f}× | |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    plot(results, args.out.with_suffix(".png"), window)


def plot(results, path: Path, window: str) -> None:
    """Mean latency per push against the number of events, both modes (needs the bench extra)."""
    plt = pyplot()
    if plt is None:
        return
    counts = [count for count, _ in results]
    figure, axis = plt.subplots(figsize=(6, 4))
    for mode, marker in (("incremental", "o"), ("recompute", "s")):
        axis.plot(counts, [statistics.fmean(m[mode][0]) for _, m in results], marker=marker, label=f"{mode} (mean)")
        axis.plot(counts, [p99(m[mode][0]) for _, m in results], marker=marker, linestyle="--", label=f"{mode} (p99)")
    axis.set_xlabel("events")
    axis.set_ylabel("latency per push (ms)")
    axis.set_yscale("log")
    axis.set_title(f"3-way stream join + static join, {window} window")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
