"""Memory drift under steady load: does the server's RSS stay flat over a long run of pushes?

    python benchmarks/drift.py [--minutes 30] [--rate 1000] [--clients 4] [--interval 0.5]
                               [--warm-up 60] [--heap DIR | --trace DIR] [--trace-every 5]
                               [--serve-option OPTION] [--out benchmarks/results/drift.md]
    python benchmarks/drift.py --compare DIR/snapshot-1.pickle DIR/snapshot-3.pickle [--top 25]

``cqels serve`` runs as a subprocess (``load.py``'s server: in memory, local cache engine, the same
flags), so the run measures whatever HTTP server ``cqels serve`` uses. The workload is ``load.py``'s
at a steady rate instead of as fast as possible: ``--clients`` push threads, each to its own stream
``load-i``, each sending one NDJSON batch every ``--interval`` seconds on a fixed schedule (a late
batch is sent at once, the next keeps the schedule), ``--rate`` events per second in all, event
times advancing with the wall clock (so ``RANGE 1s`` holds about a second of events); client 0 also
feeds every 100th event to the sample stream. ``load.py``'s ten ISTREAM queries, each read by two
SSE subscribers (``load.Subscriber``) in two subscriber processes, which report how far they have
read every second, so that a backlog in their queues (memory that is owed to slow readers, not
leaked) shows as a lag.

The server's RSS (``/proc/PID/statm``) is sampled every second. Reported: RSS at the end of the
warm-up (``--warm-up``, a minute: the median of the ten seconds before it) and at the end (the
median of the last ten seconds), their ratio, the least-squares slope after the warm-up, the pushes
achieved against the schedule, push latencies and the subscribers' lag. The target (issue 31): the
end within 10% of the RSS after the first minute over a 30-minute run.

``--heap DIR`` runs the server through this script's launcher (``--heap-server``), which on
SIGUSR1 appends its RSS and glibc malloc's bytes in use and free (``mallinfo2``: what C, C++ and
Rust code allocates, and Python objects over 512 bytes) to ``DIR/sizes.jsonl``: in use flat while
RSS grows is fragmentation, in use growing is memory held. ``--trace DIR`` does the same with the
server under ``tracemalloc`` (25 frames) and dumps a snapshot to ``DIR/snapshot-N.pickle`` each
time. The signal comes at the end of the warm-up, every ``--trace-every`` minutes and at the end.
``--compare A B`` prints what grew from snapshot A to B grouped by traceback. Tracing slows the
server down: trace at a lower ``--rate``.
"""

from __future__ import annotations

import argparse
import ctypes
import http.client
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from engine import machine, pyplot
from load import (
    RECOMPUTE_STREAM,
    SAMPLE_EVERY,
    Subscriber,
    event_line,
    free_port,
    post_events,
    queries,
    request,
    server_rss,
    start_server,
)
from soak import slope

MIB = 2**20


# ------------------------------------------------------------------ the server's heap


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``: totals over every malloc arena."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
    )]  # fmt: skip


def heap_server(directory: Path, trace: bool, argv: list[str]) -> int:
    """``cqels argv`` in this process, appending its heap's sizes to ``DIR/sizes.jsonl`` on each
    SIGUSR1: RSS, glibc malloc's bytes in use and free (``mallinfo2``: C, C++ and Rust
    allocations, and Python objects over 512 bytes) and, with ``trace``, the bytes tracemalloc
    traces, dumping its snapshot to ``DIR/snapshot-N.pickle``."""
    import tracemalloc

    from cqels_endpoint.cli import main

    directory.mkdir(parents=True, exist_ok=True)
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = _MallInfo2
    taken = [0]

    def dump(signum, frame) -> None:
        taken[0] += 1
        info = mallinfo2()
        sizes = {"dump": taken[0], "rss": server_rss(os.getpid()), "malloc_in_use": info.uordblks + info.hblkhd,
                 "malloc_free": info.fordblks, "malloc_arena": info.arena}  # fmt: skip
        if trace:
            tracemalloc.take_snapshot().dump(str(directory / f"snapshot-{taken[0]}.pickle"))
            sizes["traced"], sizes["traced_peak"] = tracemalloc.get_traced_memory()
            sizes["tracemalloc_overhead"] = tracemalloc.get_tracemalloc_memory()
        with open(directory / "sizes.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps(sizes) + "\n")

    if trace and not tracemalloc.is_tracing():
        tracemalloc.start(25)
    signal.signal(signal.SIGUSR1, dump)
    return main(argv)


def compare(first: Path, second: Path, top: int) -> None:
    import tracemalloc

    old, new = tracemalloc.Snapshot.load(str(first)), tracemalloc.Snapshot.load(str(second))
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    old, new = old.filter_traces(ignore), new.filter_traces(ignore)
    print(f"traced: {sum(s.size for s in old.statistics('filename')) / MIB:.1f} → "
          f"{sum(s.size for s in new.statistics('filename')) / MIB:.1f} MiB")  # fmt: skip
    for kind in ("lineno", "traceback"):
        print(f"\n## grown most, by {kind}\n")
        for stat in new.compare_to(old, kind)[:top]:
            print(f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks (now {stat.size / 1024:.1f} KiB)")
            frames = stat.traceback.format(limit=None if kind == "traceback" else 1)
            print("\n".join("    " + line for line in frames[-24:]))


# ------------------------------------------------------------------ load


class Pusher(threading.Thread):
    """One client: a batch to ``load-client`` every ``interval`` s on a fixed schedule from ``start``."""

    def __init__(self, client: int, port: int, per_second: float, interval: float, start: float, origin_ms: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.client, self.port, self.interval, self.start_at, self.origin_ms = client, port, interval, start, origin_ms
        self.per_batch = round(per_second * interval)
        self.step_ms = 1000 / per_second
        self.stop = stop
        self.events = 0
        self.latencies: list[float] = []
        self.late: list[float] = []  # how far behind its schedule each batch was sent (s)
        self.failure: str | None = None

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        batch = 0
        while not self.stop.is_set():
            due = self.start_at + batch * self.interval
            if self.stop.wait(max(0.0, due - time.monotonic())):
                break
            self.late.append(time.monotonic() - due)
            first = batch * self.per_batch
            lines = [event_line(self.client, k, self.origin_ms + int(k * self.step_ms)) for k in range(first, first + self.per_batch)]
            bodies = [(f"/streams/load-{self.client}", lines)]
            if self.client == 0:
                bodies.append((f"/streams/{RECOMPUTE_STREAM}", [line for k, line in enumerate(lines, first) if k % SAMPLE_EVERY == 0]))
            for path, body in bodies:
                if not body:
                    continue
                self.failure = post_events(connection, path, body, self.latencies)
                if self.failure is not None:
                    return
            self.events += self.per_batch
            batch += 1
        connection.close()


def subscriber_process(port: int, names: list[str], read_up_to, stop) -> None:
    """Two ``load.Subscriber`` per query; their last event ids go to ``read_up_to`` every second."""
    subscribers = [Subscriber(port, name) for name in names for _copy in range(2)]
    for subscriber in subscribers:
        subscriber.start()
    while not stop.wait(1.0):
        for i, subscriber in enumerate(subscribers):
            read_up_to[i] = subscriber.last_id or 0
    for subscriber in subscribers:
        subscriber.stop.set()
    for subscriber in subscribers:
        subscriber.join(15)


def emitted(port: int) -> dict[str, int]:
    _status, body = request("GET", port, "/queries")
    return {q["name"]: q["emissions"] for q in json.loads(body)["queries"]}


def run(args, port: int, server: subprocess.Popen) -> dict:
    registered = queries(args.clients)
    for name, (text, mode) in registered.items():
        status, answer = request("PUT", port, f"/queries/{name}?mode={mode}", text.encode(), {"Content-Type": "application/sparql-query"})
        if status not in (200, 201):
            raise SystemExit(f"registering {name}: {status} {answer!r}")
    names = list(registered)
    halves = [names[0::2], names[1::2]]
    reads = [multiprocessing.Array("q", 2 * len(half)) for half in halves]
    stop_reading = multiprocessing.Event()
    readers = [multiprocessing.Process(target=subscriber_process, args=(port, half, read, stop_reading), daemon=True)
               for half, read in zip(halves, reads)]  # fmt: skip
    for reader in readers:
        reader.start()
    time.sleep(2.0)  # the subscriptions are open before the first push

    stop = threading.Event()
    started = time.monotonic()
    origin_ms = int(time.time() * 1000)
    pushers = [Pusher(i, port, args.rate / args.clients, args.interval, started, origin_ms, stop) for i in range(args.clients)]
    for pusher in pushers:
        pusher.start()
    samples: list[tuple[float, int, int, int]] = []  # (s, rss, events pushed, subscriber lag in emissions)
    snapshots = []  # seconds at which a snapshot was asked for
    next_trace = args.warm_up
    duration = 60 * args.minutes
    while True:
        elapsed = time.monotonic() - started
        if elapsed >= duration or any(p.failure for p in pushers) or server.poll() is not None:
            break
        lag = 0
        if int(elapsed) % 10 == 0:  # the lag every 10 s: a GET /queries a second would be load of its own
            counts = emitted(port)
            read = [value for array in reads for value in array[:]]
            lag = max(counts[name] - value for name, value in zip([n for half in halves for n in half for _ in range(2)], read))
        samples.append((elapsed, server_rss(server.pid), sum(p.events for p in pushers), lag))
        if (args.trace or args.heap) and elapsed >= next_trace:
            server.send_signal(signal.SIGUSR1)
            snapshots.append(elapsed)
            next_trace += 60 * args.trace_every
        time.sleep(max(0.0, started + len(samples) - time.monotonic()))
    stop.set()
    for pusher in pushers:
        pusher.join(130)
    failures = [p.failure for p in pushers if p.failure]
    if server.poll() is not None:
        failures.append(f"the server exited with {server.returncode}: {server.stderr.read()[-2000:]}")
    if (args.trace or args.heap) and not failures:
        server.send_signal(signal.SIGUSR1)
        snapshots.append(time.monotonic() - started)
        time.sleep(30 if args.trace else 1)  # a snapshot of a large traced heap takes a while to write
    stop_reading.set()
    for reader in readers:
        reader.join(30)
    if failures:
        raise SystemExit("the run failed: " + "; ".join(failures))
    return {
        "samples": samples, "events": sum(p.events for p in pushers), "seconds": samples[-1][0],
        "latencies": sorted(t for p in pushers for t in p.latencies), "late": sorted(t for p in pushers for t in p.late),
        "snapshots": snapshots,
    }  # fmt: skip


# ------------------------------------------------------------------ the report


def report(args, where: str, loads: tuple[str, str], result: dict) -> tuple[float, float]:
    samples = result["samples"]
    warm, end = args.warm_up, result["seconds"]
    at_warm = statistics.median(r for s, r, _, _ in samples if warm - 10 <= s <= warm)
    at_end = statistics.median(r for s, r, _, _ in samples if s >= end - 10)
    measured = [(s / 60, r / 1024) for s, r, _, _ in samples if s >= warm]
    per_minute = slope(measured) if len(measured) > 2 else float("nan")
    ratio = at_end / at_warm
    latencies, late = result["latencies"], result["late"]
    lags = [lag for s, _, _, lag in samples if int(s) % 10 == 0]
    p = lambda values, q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
    lines = [
        "# Memory drift under steady load (`benchmarks/drift.py`)",
        "",
        f"Machine: {where}; load average (1, 5, 15 min) {loads[0]} before, {loads[1]} after. The server, the push "
        "threads and 2 subscriber processes share the cores.",
        "",
        f"{args.minutes:g} minutes: {args.rate:,} events/s (2 triples each) in all from {args.clients} push threads, "
        f"each an NDJSON batch every {args.interval:g} s to its own stream, client 0 also every {SAMPLE_EVERY}th event "
        f"to a sample stream; {len(queries(args.clients))} ISTREAM queries, 2 SSE subscribers each."
        + (" Server under tracemalloc (25 frames)." if args.trace else "")
        + (f" Server options added: `{' '.join(args.serve_option)}`." if args.serve_option else ""),
        "",
        "| measure | value |",
        "|---|---:|",
        f"| events pushed | {result['events']:,} in {end:.0f} s ({result['events'] / end:,.0f}/s) |",
        f"| batches sent behind schedule p50 / p99 / max | {1e3 * p(late, 0.5):.0f} / {1e3 * p(late, 0.99):.0f} / "
        f"{1e3 * late[-1]:.0f} ms |",
        f"| push latency per request p50 / p99 / max | {1e3 * p(latencies, 0.5):.1f} / {1e3 * p(latencies, 0.99):.1f} / "
        f"{1e3 * latencies[-1]:.1f} ms |",
        f"| subscriber lag (emissions behind, sampled every 10 s) max / last | {max(lags):,} / {lags[-1]:,} |",
        f"| server RSS at the start | {samples[0][1] / MIB:.1f} MiB |",
        f"| server RSS after the warm-up ({warm:.0f} s; median of its last 10 s) | {at_warm / MIB:.1f} MiB |",
        f"| server RSS at the end (median of the last 10 s) | {at_end / MIB:.1f} MiB |",
        f"| end / after warm-up | {ratio:.3f} ({100 * (ratio - 1):+.1f}%; target ≤ +10%) |",
        f"| RSS slope after the warm-up (least squares) | {per_minute:+.1f} KiB/min |",
        f"| peak RSS | {max(r for _, r, _, _ in samples) / MIB:.1f} MiB |",
        "",
        "Samples (one a minute):",
        "",
        "| s | events | RSS (MiB) | subscriber lag |",
        "|---:|---:|---:|---:|",
        *(f"| {s:.0f} | {n:,} | {r / MIB:.1f} | {lag:,} |" for s, r, n, lag in samples[::60]),
    ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    plt = pyplot()
    if plt is not None:
        figure, axis = plt.subplots(figsize=(8, 3.5))
        axis.plot([s / 60 for s, *_ in samples], [r / MIB for _, r, _, _ in samples], label="server RSS")
        axis.axvline(warm / 60, color="grey", linestyle=":", label="end of warm-up")
        axis.axhline(1.1 * at_warm / MIB, color="red", linestyle="--", linewidth=0.8, label="+10% of RSS after warm-up")
        axis.set_xlabel("minutes")
        axis.set_ylabel("RSS (MiB)")
        axis.set_ylim(bottom=0)
        axis.set_title(f"Drift: {args.rate:,} events/s for {end / 60:.0f} min; end/warm-up {ratio:.3f}, {per_minute:+.0f} KiB/min")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize="small")
        figure.tight_layout()
        figure.savefig(args.out.with_suffix(".png"), dpi=120)
        print(f"wrote {args.out.with_suffix('.png')}")
    return ratio, per_minute


def main() -> None:
    if sys.argv[1:2] == ["--heap-server"]:
        sys.exit(heap_server(Path(sys.argv[2]), sys.argv[3] == "trace", sys.argv[4:]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30, help="length of the run (default 30)")
    parser.add_argument("--rate", type=int, default=1000, help="events per second, all clients (default 1000)")
    parser.add_argument("--clients", type=int, default=4, choices=range(1, 5), metavar="1..4")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between two batches of a client")
    parser.add_argument("--warm-up", type=float, default=60, help="seconds before the reference RSS (default 60)")
    parser.add_argument("--heap", type=Path, metavar="DIR", help="record the server's malloc sizes in DIR/sizes.jsonl")
    parser.add_argument("--trace", type=Path, metavar="DIR", help="--heap, and the server under tracemalloc, snapshots in DIR")
    parser.add_argument("--trace-every", type=float, default=5, help="minutes between two --heap/--trace records (default 5)")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"), help="what grew from snapshot A to B")
    parser.add_argument("--top", type=int, default=25, help="lines shown by --compare")
    parser.add_argument("--serve-option", action="append", default=[], metavar="OPTION",
                        help="one more option of cqels serve (repeat; e.g. --serve-option=--replay-buffer=10)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "drift.md")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare, args.top)
        return
    if 60 * args.minutes < args.warm_up + 20:
        parser.error("--minutes must leave at least 20 s after --warm-up")
    where = machine()
    before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    python = (sys.executable, "-m", "cqels_endpoint.cli")
    heap = args.trace or args.heap
    if heap:
        mode = "trace" if args.trace else "sizes"
        python = (sys.executable, str(Path(__file__).resolve()), "--heap-server", str(heap.resolve()), mode)
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        server = start_server(port, data_dir, python, tuple(args.serve_option))
        try:
            result = run(args, port, server)
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
    after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    report(args, where, (before, after), result)


if __name__ == "__main__":
    main()
