"""Load: a million events over HTTP into a server with 10 queries and 20 SSE subscribers.

    python benchmarks/load.py [--events 1000000] [--clients 4] [--batch 500] [--max-seconds 1200]
                              [--out benchmarks/results/load.md]

Loopback only. ``cqels serve --memory --cache-engine local`` runs as a subprocess on a free port of
127.0.0.1; ``--clients`` client processes push NDJSON batches of ``--batch`` events over keep-alive
connections, each to its own stream ``load-i`` (a stream's timestamps must not go back, so one
writer per stream), every event one subject with two triples::

    <urn:load:e:i:k> <urn:load:v> k mod 100 .   <urn:load:e:i:k> <urn:load:g> <urn:load:g:k mod 7> .

Ten queries, ISTREAM, registered before the first push:

- ``select-i`` (one per client stream): ``SELECT ?e ?v … [RANGE 1s] { ?e <v> ?v }`` — every event
  enters once, so its rows over the run are exactly the events of stream i;
- ``filter-i``: the same with ``FILTER(?v >= 90)`` — exactly the events with ``k mod 100 ≥ 90``;
- ``sample-incremental`` and ``sample-recompute``: a grouped join over a sliding window
  (``[RANGE 5s STEP 1s]``, COUNT and SUM by group), incremental and re-evaluated (the oracle), over
  the ``load-sample`` stream, which client 0 also feeds with every 100th of its events.

Twenty SSE subscribers, two per query, in two subscriber processes. They count rows and record
which events they saw; a subscriber the server drops resumes with ``Last-Event-ID`` (the server
runs with the default replay buffer, 1,000 emissions per query, and a subscriber queue of 200,000
emissions, so that a subscriber falling behind while the clients push is not dropped).

Checked at the end (the run fails loudly otherwise): ``GET /streams`` counts exactly the pushed
events as accepted, none rejected; both subscribers of every ``select``/``filter`` query saw
exactly the expected set of events, each once (no loss, no duplicate); the two sample queries
emitted the same rows at the same times (the recompute oracle on a sample). Measured: sustained
ingestion (events/s over the whole push phase), push latency percentiles (per request, client
side), the server's RSS sampled every second (``/proc/PID/statm``), and how long the subscribers
took to drain after the last push.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

from engine import machine, pyplot

PREFIX = "urn:load:"
RECOMPUTE_STREAM = "load-sample"
SAMPLE_EVERY = 100
STREAM_BASE = "urn:cqels:stream:"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


def stream_iri(name: str) -> str:
    return STREAM_BASE + name


def queries(clients: int) -> dict[str, tuple[str, str]]:
    """Query name → (text, mode)."""
    found = {}
    for i in range(clients if clients <= 4 else 4):
        pattern = f"STREAM <{stream_iri(f'load-{i}')}> [RANGE 1s] {{ ?e <{PREFIX}v> ?v }}"
        found[f"select-{i}"] = (f"SELECT ?e ?v WHERE {{ {pattern} }}", "incremental")
        found[f"filter-{i}"] = (f"SELECT ?e WHERE {{ {pattern} FILTER(?v >= 90) }}", "incremental")
    sample = (
        f"SELECT ?g (COUNT(*) AS ?n) (SUM(?v) AS ?total) WHERE {{ STREAM <{stream_iri(RECOMPUTE_STREAM)}> "
        f"[RANGE 5s STEP 1s] {{ ?e <{PREFIX}v> ?v . ?e <{PREFIX}g> ?g }} }} GROUP BY ?g ORDER BY ?g"
    )
    found["sample-incremental"] = (sample, "incremental")
    found["sample-recompute"] = (sample, "recompute")
    return found


def event_line(client: int, k: int, time_ms: int) -> str:
    subject = f"<{PREFIX}e:{client}:{k}>"
    data = f'{subject} <{PREFIX}v> "{k % 100}"^^<{XSD_INTEGER}> .\n{subject} <{PREFIX}g> <{PREFIX}g:{k % 7}> .\n'
    return json.dumps({"time": time_ms, "data": data})


def expected_filtered(k: int) -> bool:
    return k % 100 >= 90


# ------------------------------------------------------------------ the server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(
    port: int, data_dir: str, python: tuple[str, ...] = (sys.executable, "-m", "cqels_endpoint.cli"), options: tuple[str, ...] = ()
) -> subprocess.Popen:
    """``cqels serve`` on ``port``, run by ``python`` (the interpreter and what it runs: the cqels
    CLI, or ``drift.py``'s traced launcher of it), with ``options`` after this benchmark's own."""
    command = [
        *python, "serve", "--host", "127.0.0.1", "--port", str(port),
        "--memory", "--data-dir", data_dir, "--cache-engine", "local", "--threads", "48",
        "--subscriber-queue", "200000", "--keepalive-s", "5", *options,
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            request("GET", port, "/health")
            return server
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"the server exited: {server.stderr.read()}") from None
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the server did not answer within 60 s")


def request(method: str, port: int, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def server_rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# ------------------------------------------------------------------ pushing


def push_client(client: int, port: int, events: int, batch: int, origin: int, latencies, failures) -> None:
    """Pushes ``events`` events to stream ``load-client`` in NDJSON batches; client 0 also feeds
    the sample stream. Request latencies (s) go to ``latencies``, failures to ``failures``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    own = f"/streams/load-{client}"
    sample: list[str] = []
    measured = []
    for start in range(0, events, batch):
        lines = []
        for k in range(start, min(start + batch, events)):
            line = event_line(client, k, origin + k)
            lines.append(line)
            if client == 0 and k % SAMPLE_EVERY == 0:
                sample.append(line)
        for path, body_lines in ((own, lines), (f"/streams/{RECOMPUTE_STREAM}", sample)):
            if not body_lines:
                continue
            failure = post_events(connection, path, body_lines, measured)
            if failure is not None:
                failures.append(failure)
                return
        sample = []
    connection.close()
    latencies.extend(measured)


def post_events(connection: http.client.HTTPConnection, path: str, lines: list[str], latencies: list[float]) -> str | None:
    """POST ``lines`` as one NDJSON batch to ``path``; its latency (s) goes to ``latencies``. The
    failure, when the server did not accept it."""
    began = time.perf_counter()
    connection.request("POST", path, body="\n".join(lines).encode(), headers={"Content-Type": "application/x-ndjson"})
    response = connection.getresponse()
    answer = response.read()
    latencies.append(time.perf_counter() - began)
    if response.status != 200:
        return f"{path}: {response.status} {answer[:300]!r}"
    return None


# ------------------------------------------------------------------ subscribing


class Subscriber(threading.Thread):
    """One SSE subscriber of one query: counts rows, keeps the event numbers it saw (select and
    filter queries) or the emissions (sample queries), resumes with Last-Event-ID if dropped."""

    def __init__(self, port: int, query: str) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.query = query
        self.last_id: int | None = None
        self.rows = 0
        self.seen: dict[str, bytearray] = {}
        self.emissions: list[tuple[int, list]] = []
        self.reconnects = 0
        self.stop = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._read()
            except (OSError, http.client.HTTPException) as error:
                if self.stop.is_set():
                    return
                self.error = f"{type(error).__name__}: {error}"
            self.reconnects += 1
            time.sleep(0.1)

    def _read(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Accept": "text/event-stream"}
        if self.last_id is not None:
            headers["Last-Event-ID"] = str(self.last_id)
        connection.request("GET", f"/queries/{quote(self.query)}/results", headers=headers)
        response = connection.getresponse()
        if response.status != 200:
            raise http.client.HTTPException(f"{response.status} {response.read()[:200]!r}")
        event_id = None
        while not self.stop.is_set():
            try:
                line = response.fp.readline()
            except TimeoutError:
                continue  # idle; keep-alives come every 5 s
            if not line:
                return  # the server ended the stream
            if line.startswith(b"id: "):
                event_id = int(line[4:])
            elif line.startswith(b"data: "):
                self._take(json.loads(line[6:]))
                self.last_id = event_id

    def _take(self, emission: dict) -> None:
        bindings = emission["results"]["bindings"]
        self.rows += len(bindings)
        if self.query.startswith("sample-"):
            self.emissions.append((emission["time"], [sorted((k, v["value"]) for k, v in b.items()) for b in bindings]))
            return
        for binding in bindings:
            _, _, client, k = binding["e"]["value"].rsplit(":", 3)
            seen = self.seen.setdefault(client, bytearray())
            index = int(k)
            if index >= len(seen):
                seen.extend(b"\0" * (index + 1 - len(seen) + 4096))
            seen[index] += 1


def subscriber_process(port: int, names: list[str], targets, results, ready, drain_seconds: float) -> None:
    """Runs two subscribers per query until each reached the last emission of its query (sent on
    ``targets`` once the pushes are over) or ``drain_seconds`` passed after that."""
    subscribers = [Subscriber(port, name) for name in names for _copy in range(2)]
    for subscriber in subscribers:
        subscriber.start()
    ready.set()
    last = targets.get()
    deadline = time.monotonic() + drain_seconds
    while time.monotonic() < deadline and any((s.last_id or 0) < last.get(s.query, 0) for s in subscribers):
        time.sleep(0.2)
    for subscriber in subscribers:
        subscriber.stop.set()
    for subscriber in subscribers:
        subscriber.join(15)
    results.put([
        {
            "query": s.query, "rows": s.rows, "last_id": s.last_id, "reconnects": s.reconnects, "error": s.error,
            "seen": {client: bytes(counts) for client, counts in s.seen.items()}, "emissions": s.emissions,
        }
        for s in subscribers
    ])  # fmt: skip


# ------------------------------------------------------------------ the run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events pushed in all (split across clients)")
    parser.add_argument("--clients", type=int, default=4, choices=range(1, 5), metavar="1..4")
    parser.add_argument("--batch", type=int, default=500, help="events per request")
    parser.add_argument("--max-seconds", type=float, default=1200, help="give up (and fail) after this long")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "load.md")
    args = parser.parse_args()
    per_client = args.events // args.clients
    total = per_client * args.clients
    where = machine()
    load_before = os.getloadavg()[0]
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        server = start_server(port, data_dir)
        try:
            run = drive(args, port, server, per_client, total)
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
    run["load"] = (load_before, os.getloadavg()[0])
    report(args, where, total, run)


def drive(args, port: int, server: subprocess.Popen, per_client: int, total: int) -> dict:
    registered = queries(args.clients)
    for name, (text, mode) in registered.items():
        status, answer = request(
            "PUT", port, f"/queries/{name}?mode={mode}", text.encode(), {"Content-Type": "application/sparql-query"}
        )
        if status not in (200, 201):
            raise SystemExit(f"registering {name}: {status} {answer!r}")
    names = list(registered)
    results = multiprocessing.Queue()
    halves = [names[0::2], names[1::2]]
    readies = [multiprocessing.Event() for _ in halves]
    targets = [multiprocessing.Queue() for _ in halves]
    watchers = [
        multiprocessing.Process(
            target=subscriber_process, args=(port, half, target, results, ready, args.max_seconds), daemon=True
        )
        for half, target, ready in zip(halves, targets, readies)
    ]
    for watcher in watchers:
        watcher.start()
    for ready in readies:
        ready.wait(60)
    time.sleep(1.0)  # the subscriptions are open before the first push

    manager = multiprocessing.Manager()
    latencies, failures = manager.list(), manager.list()
    origin = 1_700_000_000_000
    rss: list[tuple[float, int]] = []
    sampling = threading.Event()

    def sample_rss() -> None:
        while not sampling.is_set():
            rss.append((time.monotonic() - started, server_rss(server.pid)))
            sampling.wait(1.0)

    started = time.monotonic()
    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()
    pushers = [
        multiprocessing.Process(target=push_client, args=(i, port, per_client, args.batch, origin, latencies, failures))
        for i in range(args.clients)
    ]
    for pusher in pushers:
        pusher.start()
    for pusher in pushers:
        pusher.join(max(1.0, args.max_seconds - (time.monotonic() - started)))
        if pusher.is_alive():
            pusher.kill()
            failures.append("the push phase ran out of --max-seconds")
    push_seconds = time.monotonic() - started
    if failures:
        raise SystemExit("pushes failed: " + "; ".join(failures[:5]))

    # Drained when every query's subscribers reached its last emission.
    status, body = request("GET", port, "/queries")
    emitted = {q["name"]: q["emissions"] for q in json.loads(body)["queries"]}
    status, body = request("GET", port, "/streams")
    streams = json.loads(body)["streams"]
    drain_started = time.monotonic()
    for target in targets:
        target.put(emitted)
    collected = [entry for _ in watchers for entry in results.get(timeout=args.max_seconds + 60)]
    for watcher in watchers:
        watcher.join(30)
    drain_seconds = time.monotonic() - drain_started
    sampling.set()
    sampler.join(5)
    return {
        "push_seconds": push_seconds, "drain_seconds": drain_seconds, "latencies": list(latencies), "rss": rss,
        "emitted": emitted, "streams": streams, "subscribers": collected, "per_client": per_client,
    }  # fmt: skip


def check(run: dict, clients: int, total: int) -> list[str]:
    """What is wrong with the run (empty: every accepted event reflected exactly once)."""
    problems = []
    accepted = {s["stream"]: s for s in run["streams"]}
    per_client = run["per_client"]
    for i in range(clients):
        stats = accepted.get(stream_iri(f"load-{i}"))
        if stats is None or stats["events"] != per_client or any(stats["rejected"].values()):
            problems.append(f"stream load-{i}: {stats}")
    sample_events = len(range(0, per_client, SAMPLE_EVERY))
    stats = accepted.get(stream_iri(RECOMPUTE_STREAM))
    if stats is None or stats["events"] != sample_events:
        problems.append(f"stream {RECOMPUTE_STREAM}: {stats}, expected {sample_events} events")
    by_query: dict[str, list[dict]] = {}
    for entry in run["subscribers"]:
        by_query.setdefault(entry["query"], []).append(entry)
    for name, entries in sorted(by_query.items()):
        for entry in entries:
            if entry["last_id"] != run["emitted"].get(name):
                problems.append(f"{name}: a subscriber stopped at emission {entry['last_id']} of {run['emitted'].get(name)}")
            if name.startswith("sample-"):
                continue
            client = name.rsplit("-", 1)[1]
            counts = entry["seen"].get(client, b"")
            wanted = (lambda k: True) if name.startswith("select-") else expected_filtered
            missing = sum(1 for k in range(per_client) if wanted(k) and (k >= len(counts) or counts[k] == 0))
            twice = sum(1 for k in range(min(per_client, len(counts))) if counts[k] > 1)
            extra = sum(1 for k in range(min(per_client, len(counts))) if counts[k] and not wanted(k))
            if missing or twice or extra:
                problems.append(f"{name}: {missing} events missing, {twice} seen twice, {extra} unexpected")
    incremental = [e["emissions"] for e in by_query.get("sample-incremental", [])]
    recomputed = [e["emissions"] for e in by_query.get("sample-recompute", [])]
    if not incremental or not recomputed or any(e != recomputed[0] for e in incremental + recomputed):
        problems.append("the sample query's incremental emissions differ from the recompute oracle's")
    return problems


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(args, where: str, total: int, run: dict) -> None:
    problems = check(run, args.clients, total)
    latencies = sorted(run["latencies"])
    rate = total / run["push_seconds"]
    rss = run["rss"]
    rows = sum(e["rows"] for e in run["subscribers"])
    reconnects = sum(e["reconnects"] - 1 for e in run["subscribers"])
    sample_rows = sum(len(rows) for _, rows in next(e for e in run["subscribers"] if e["query"] == "sample-recompute")["emissions"])
    lines = [
        "# Load over HTTP (`benchmarks/load.py`)",
        "",
        f"Machine: {where}; load average {run['load'][0]:.2f} before, {run['load'][1]:.2f} after. Server, "
        f"{args.clients} push clients and 2 subscriber processes share the 2 cores.",
        "",
        f"{total:,} events ({2 * total:,} triples) pushed by {args.clients} client processes in NDJSON batches of "
        f"{args.batch}, each to its own stream, plus every {SAMPLE_EVERY}th event of client 0 to a sample stream; "
        f"{len(queries(args.clients))} ISTREAM queries, 20 SSE subscribers (two per query).",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| events pushed / accepted | {total:,} / {sum(s['events'] for s in run['streams'] if s['stream'] != stream_iri(RECOMPUTE_STREAM)):,} |",
        f"| lost / duplicated (every subscriber of every query) | {'0 / 0' if not problems else 'see below'} |",
        f"| push phase | {run['push_seconds']:.1f} s |",
        f"| sustained ingestion | {rate:,.0f} events/s ({2 * rate:,.0f} triples/s) |",
        f"| push latency per request p50 / p99 / max | {1e3 * percentile(latencies, 0.5):.1f} / "
        f"{1e3 * percentile(latencies, 0.99):.1f} / {1e3 * latencies[-1]:.1f} ms |",
        f"| rows delivered to subscribers | {rows:,} |",
        f"| sample query rows checked against recompute | {sample_rows:,} |",
        f"| subscriber reconnects | {reconnects} |",
        f"| subscribers drained after the last push | {run['drain_seconds']:.1f} s |",
        f"| server RSS at start / peak / end | {rss[0][1] / 2**20:.0f} / {max(r for _, r in rss) / 2**20:.0f} / "
        f"{rss[-1][1] / 2**20:.0f} MiB |",
        "",
        "Verdict: " + ("every accepted event reflected exactly once." if not problems else "FAILED: " + "; ".join(problems)),
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    plot(rss, args.out.with_suffix(".png"))
    if problems:
        raise SystemExit(1)


def plot(rss: list[tuple[float, int]], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    figure, axis = plt.subplots(figsize=(7, 3.5))
    axis.plot([t for t, _ in rss], [r / 2**20 for _, r in rss])
    axis.set_xlabel("seconds since the first push")
    axis.set_ylabel("server RSS (MiB)")
    axis.set_title("Server memory under load")
    axis.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
