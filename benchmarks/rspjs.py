"""rsp-js 1.3.5 side by side with our engine: the same events, queries and run, every window report compared.

    python benchmarks/rspjs.py [--events 10000] [--repeat 3] [--seed 7] [--out benchmarks/results/rspjs.md]

Three workloads in rsp-js's own style (one RSP-QL window ``[RANGE 10 s STEP 2 s]``, RSTREAM,
events of 1–3 triples), each run on both engines over the same events:

1. one-pattern SELECT: ``WINDOW :w1 { ?s ?p ?o }`` (every triple of the window);
2. two-pattern stream join: ``WINDOW :w1 { ?obs :sensor ?sensor . ?sensor :room ?room }``, joining
   observations with the sensor positions that arrive in the stream (triples of other events);
3. stream–static join: ``?sensor :label ?label . WINDOW :w1 { ?obs :sensor ?sensor }`` with a static
   graph of two triples per sensor.

Events (seeded): event ``i`` is ``:obs{i} :sensor :sensor{k}``, plus ``:obs{i} :value n`` (2 or 3
triples) and ``:sensor{k} :room :room{r}`` (3 triples); 1, 2 or 3 triples with equal odds, times
0–200 ms apart in steps of 10 ms (100 ms on average), so that ties and events exactly on a window
boundary are frequent.

rsp-js runs in Node (``benchmarks/rspjs/driver.mjs``, installed by ``npm install --prefix
benchmarks/rspjs`` when its ``node_modules`` is missing), fed the events as JSON lines. Our engine
runs in this process, one ``engine.push`` per event with pre-parsed pyoxigraph triples. Both are
warmed up on the first events on a separate engine, then timed ``--repeat`` times on a fresh
engine each: ours around the push loop, rsp-js inside Node from the first ``add`` until every window
evaluation it started has ended. Throughput = triples fed / wall time, median of the runs.

Window alignment. rsp-js's windows are ``[o, o + 10 s)`` with ``o`` a multiple of 2 s (its ``t0`` is
0); it evaluates the window closing at ``c`` when the first triple with a timestamp ``> c`` arrives
(so never the last windows of a run), skips windows holding no triple, and of several windows
closing before one triple only evaluates the latest (no such gap here). Ours is registered with
``origin_ms=0``: closes at multiples of 2 s, the window at close ``c`` holding ``c − 10 s ≤ t < c``,
evaluated when the first event with ``t ≥ c`` arrives. So the same window has the same close and
contents in both; only the moment it is reported differs, by the events at exactly ``c``. Reports
are matched by close time and their rows compared as bags of N-Triples terms; a close we report
that rsp-js does not must be one rsp-js cannot report (after its last triple, or an empty window).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyoxigraph as ox
from engine import machine, pyplot

from cqels_endpoint import Engine
from cqels_endpoint.oxigraph.requests import open_store

EX = "https://rsp.js/"
STREAM = EX + "stream1"
RANGE_MS, STEP_MS = 10_000, 2_000
SENSORS, ROOMS = 50, 10
WARM_UP = 300
DRIVER = Path(__file__).parent / "rspjs"
INTEGER = "http://www.w3.org/2001/XMLSchema#integer"

WORKLOADS = {
    "one-pattern SELECT": ("?s ?p ?o", "", "WINDOW :w1 { ?s ?p ?o }"),
    "two-pattern stream join": ("?obs ?sensor ?room", "", "WINDOW :w1 { ?obs :sensor ?sensor . ?sensor :room ?room }"),
    "stream–static join": ("?obs ?sensor ?label", "?sensor :label ?label .", "WINDOW :w1 { ?obs :sensor ?sensor }"),
}


def query(workload: str, window: str) -> str:
    """The RSP-QL text both engines get; only the window's durations are spelled differently
    (rsp-js takes bare numbers in the timestamps' unit, we take durations with a unit). rsp-js reads
    the query line by line, so each clause keeps its own line."""
    projection, static, stream = WORKLOADS[workload]
    lines = [
        f"PREFIX : <{EX}>",
        "REGISTER RStream <output> AS",
        f"SELECT {projection}",
        f"FROM NAMED WINDOW :w1 ON STREAM :stream1 {window}",
        "WHERE {",
        *([f"  {static}"] if static else []),
        f"  {stream}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def events(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    at = 0
    out = []
    for i in range(count):
        at += 10 * rng.randint(0, 20)
        sensor = f"<{EX}sensor{rng.randrange(SENSORS)}>"
        size = rng.randint(1, 3)
        triples = [[f"<{EX}obs{i}>", f"<{EX}sensor>", sensor]]
        if size >= 2:
            triples.append([f"<{EX}obs{i}>", f"<{EX}value>", f'"{rng.randrange(100)}"^^<{INTEGER}>'])
        if size == 3:
            triples.append([sensor, f"<{EX}room>", f"<{EX}room{rng.randrange(ROOMS)}>"])
        out.append({"stream": STREAM, "time": at, "triples": triples})
    return out


def static_triples() -> list[list[str]]:
    return [
        triple
        for k in range(SENSORS)
        for triple in (
            [f"<{EX}sensor{k}>", f"<{EX}label>", f'"Sensor {k}"'],
            [f"<{EX}sensor{k}>", f"<{EX}model>", f"<{EX}model{k % 4}>"],
        )
    ]


def ntriples(triples: list[list[str]]) -> str:
    return "".join(f"{s} {p} {o} .\n" for s, p, o in triples)


def parsed(triples: list[list[str]]) -> list[ox.Triple]:
    return list(ox.parse(ntriples(triples).encode(), format=ox.RdfFormat.N_TRIPLES))


def run_ours(text: str, feed: list[tuple[list[ox.Triple], int]], static: list[list[str]]) -> tuple[float, dict[int, Counter]]:
    """Seconds around the push loop, and the RSTREAM rows per close time."""
    store = None
    if static:
        store = open_store()
        store.load(ntriples(static).encode(), media_type="application/n-triples")
    engine = Engine(store=store)
    registered = engine.register(text, origin_ms=0)
    emissions = []
    registered.subscribe(emissions.append)
    push = engine.push
    started = time.perf_counter()
    for triples, at in feed:
        push(STREAM, triples, time=at)
    seconds = time.perf_counter() - started
    engine.close()
    reports = {}
    for emission in emissions:
        reports[emission.time] = Counter(tuple(sorted((name, str(term)) for name, term in row.items())) for row in emission.rows)
    return seconds, reports


def ensure_driver() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        sys.exit("node and npm are needed (Debian: apt-get install -y nodejs npm)")
    if not (DRIVER / "node_modules" / "rsp-js").is_dir():
        print(f"installing rsp-js: npm install --prefix {DRIVER}", flush=True)
        subprocess.run(["npm", "install", "--prefix", str(DRIVER), "--no-audit", "--no-fund"], check=True)


def run_rspjs(text: str, workdir: Path, events_file: Path, static_file: Path | None, repeat: int) -> tuple[list[float], dict[int, Counter], str]:
    """Seconds of each run, rows per close time (checking each report's open), Node's version."""
    query_file, out_file = workdir / "query.rq", workdir / "reports.jsonl"
    query_file.write_text(text, encoding="utf-8")
    command = ["node", str(DRIVER / "driver.mjs"), "--query", str(query_file), "--events", str(events_file),
               "--out", str(out_file), "--warm-up", str(WARM_UP), "--repeat", str(repeat)]
    if static_file is not None:
        command += ["--static", str(static_file)]
    summary = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    reports = {}
    for line in out_file.read_text(encoding="utf-8").splitlines():
        report = json.loads(line)
        if report["close"] - report["open"] != RANGE_MS or report["close"] in reports:
            sys.exit(f"unexpected rsp-js window {report['open']}..{report['close']}")
        reports[report["close"]] = Counter(tuple(sorted(row.items())) for row in report["rows"])
    return summary["seconds"], reports, summary["node"]


def compare(ours: dict[int, Counter], theirs: dict[int, Counter], feed: list[dict]) -> tuple[int, int, list[str]]:
    """Windows compared, rows compared, and every disagreement. A close only we report is fine when
    rsp-js could not report it: no triple came after it, or its window held no triple."""
    problems = []
    last = feed[-1]["time"]
    times = [event["time"] for event in feed]
    for close in sorted(theirs):
        if close not in ours:
            problems.append(f"close {close}: rsp-js reported it, we did not")
        elif ours[close] != theirs[close]:
            problems.append(f"close {close}: {sum(ours[close].values())} rows here, {sum(theirs[close].values())} in rsp-js, "
                            f"{sum((ours[close] - theirs[close]).values())} only here, {sum((theirs[close] - ours[close]).values())} only there")
    for close in sorted(set(ours) - set(theirs)):
        empty = not any(close - RANGE_MS <= at < close for at in times)
        if close < last and not empty:
            problems.append(f"close {close}: we reported {sum(ours[close].values())} rows, rsp-js did not report it")
        elif ours[close]:
            problems.append(f"close {close}: we reported {sum(ours[close].values())} rows from a window rsp-js could not report")
    common = set(ours) & set(theirs)
    return len(common), sum(sum(theirs[close].values()) for close in common), problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "rspjs.md")
    args = parser.parse_args()
    ensure_driver()

    feed = events(args.events, args.seed)
    triples = sum(len(event["triples"]) for event in feed)
    static = static_triples()
    ox_feed = [(parsed(event["triples"]), event["time"]) for event in feed]
    print(f"{machine()}\n{args.events} events, {triples} triples over {feed[-1]['time'] / 1000:.0f} s", flush=True)

    results = []
    with tempfile.TemporaryDirectory(prefix="rspjs-bench-") as scratch:
        workdir = Path(scratch)
        events_file, static_file = workdir / "events.jsonl", workdir / "static.jsonl"
        events_file.write_text("".join(json.dumps(event) + "\n" for event in feed), encoding="utf-8")
        static_file.write_text(json.dumps({"triples": static}) + "\n", encoding="utf-8")
        for workload, (_, static_part, _) in WORKLOADS.items():
            ours_text = query(workload, "[RANGE PT10S STEP PT2S]")
            theirs_text = query(workload, f"[RANGE {RANGE_MS} STEP {STEP_MS}]")
            workload_static = static if static_part else []
            run_ours(ours_text, ox_feed[:WARM_UP], workload_static)
            ours_runs = []
            for _ in range(args.repeat):
                seconds, ours = run_ours(ours_text, ox_feed, workload_static)
                ours_runs.append(seconds)
            theirs_runs, theirs, node = run_rspjs(theirs_text, workdir, events_file, static_file if static_part else None, args.repeat)
            windows, rows, problems = compare(ours, theirs, feed)
            ours_rate, theirs_rate = triples / statistics.median(ours_runs), triples / statistics.median(theirs_runs)
            results.append({
                "workload": workload, "query": ours_text, "ours": ours_rate, "rspjs": theirs_rate,
                "ours_runs": ours_runs, "rspjs_runs": theirs_runs, "windows": windows, "rows": rows,
                "ours_windows": len(ours), "rspjs_windows": len(theirs), "problems": problems,
            })
            verdict = "every report equal" if not problems else f"{len(problems)} DISAGREEMENTS"
            print(f"{workload:<24} ours {ours_rate:>9,.0f} triples/s   rsp-js {theirs_rate:>8,.0f} triples/s   "
                  f"{ours_rate / theirs_rate:5.1f}×   {windows} windows, {rows} rows: {verdict}", flush=True)
            for problem in problems[:10]:
                print("   ", problem)

    write_report(args, results, triples, feed, node)
    plot(results, args.out.with_suffix(".png"))
    if any(result["problems"] for result in results):
        sys.exit("the engines disagree (see above)")


def write_report(args, results: list[dict], triples: int, feed: list[dict], node: str) -> None:
    lines = [
        "# rsp-js 1.3.5 side by side (RANGE 10 s STEP 2 s, RSTREAM)",
        "",
        f"Machine: {machine()}, Node {node}. Produced by `python benchmarks/rspjs.py --events {args.events} "
        f"--repeat {args.repeat} --seed {args.seed}`.",
        "",
        f"{args.events} events of 1–3 triples ({triples} triples, {feed[-1]['time'] / 1000:.0f} s of stream time, "
        f"about {RANGE_MS * len(feed) // feed[-1]['time']} events per window), the same events for both engines and all "
        f"three workloads; {SENSORS} sensors, {ROOMS} rooms, {2 * SENSORS} static triples for the stream–static join. "
        f"Both engines warmed up on the first {WARM_UP} events, then timed {args.repeat} times on a fresh engine; "
        "throughput = triples / median wall time (ours: the `engine.push` loop, one push per event; rsp-js: "
        "inside Node, from the first `add` until every window evaluation has ended, with its console logging "
        "turned off). Reports are matched by window close and compared as bags of rows. "
        f"{sum(1 for e in feed if e['time'] and e['time'] % STEP_MS == 0)} events fall exactly on a close and "
        f"{sum(1 for a, b in itertools.pairwise(feed) if a['time'] == b['time'])} share their timestamp with the previous one.",
        "",
        "| workload | ours (triples/s) | rsp-js (triples/s) | ours / rsp-js | windows compared | rows compared | reports equal |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for result in results:
        lines.append(
            f"| {result['workload']} | {result['ours']:,.0f} | {result['rspjs']:,.0f} | **{result['ours'] / result['rspjs']:.1f}×** "
            f"| {result['windows']} | {result['rows']:,} | {'all' if not result['problems'] else str(len(result['problems'])) + ' differ'} |"
        )
    lines += [
        "",
        "Wall times of the runs (s):",
        "",
    ]
    for result in results:
        lines.append(f"- {result['workload']}: ours {', '.join(f'{s:.3f}' for s in result['ours_runs'])}; "
                     f"rsp-js {', '.join(f'{s:.3f}' for s in result['rspjs_runs'])}")
    lines += [
        "",
        "Windows: both engines use windows `[c − 10 s, c)` closing at multiples of 2 s (ours registered with "
        "`origin_ms=0`, rsp-js's `t0` is 0). We report the window closing at `c` when the first event with "
        "`t ≥ c` arrives; rsp-js when the first triple with `t > c` arrives, so it never reports the windows "
        f"closing at or after its last triple (ours reported {results[0]['ours_windows']} windows, "
        f"rsp-js {results[0]['rspjs_windows']} in the first workload).",
        "",
        "Queries (rsp-js gets the same text with `[RANGE 10000 STEP 2000]`):",
        "",
    ]
    for result in results:
        lines += [f"{result['workload']}:", "", "```sparql", result["query"].rstrip(), "```", ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")


def plot(results: list[dict], path: Path) -> None:
    """Throughput of both engines per workload, with the ratio over each pair (needs the bench extra)."""
    plt = pyplot()
    if plt is None:
        return
    figure, axis = plt.subplots(figsize=(7, 4))
    positions = range(len(results))
    width = 0.38
    axis.bar([p - width / 2 for p in positions], [r["ours"] for r in results], width, label="cqels-endpoint")
    axis.bar([p + width / 2 for p in positions], [r["rspjs"] for r in results], width, label="rsp-js 1.3.5")
    for p, result in zip(positions, results):
        axis.annotate(f"{result['ours'] / result['rspjs']:.1f}×", (p - width / 2, result["ours"]), ha="center", va="bottom",
                      xytext=(0, 3), textcoords="offset points")
    axis.set_xticks(list(positions), [r["workload"] for r in results])
    axis.set_ylabel("triples / s")
    axis.set_yscale("log")
    axis.set_ylim(top=max(r["ours"] for r in results) * 3)
    axis.set_title("RANGE 10 s STEP 2 s, RSTREAM, same events")
    axis.legend(loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
