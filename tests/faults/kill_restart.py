"""Kill-restart cycles of a real ``cqels serve``: SIGKILL at seeded random moments while clients write,
then a restart and a consistency check.

Four clients run at once against the server: GSP PUTs that each replace graph ``G`` with version
``k`` (``PUT_SIZE`` triples, two on blank nodes, and ``<G> ex:version k``); SPARQL Update requests
of three operations that move a counter on by one and log the step (``ex:state`` and
``ex:entry``); NDJSON batches pushed to a stream; registrations of queries and of instances of a
template. The server is killed at a random moment, started again on the same data directory, and
checked:

- graph ``G`` is exactly one complete version, no older than the last PUT answered;
- there is exactly one ``ex:state`` triple, its value the number of ``ex:entry`` triples (every
  update applied whole or not at all), no lower than the updates answered;
- every registration answered is back (and nothing never asked for), none failed; ``queries.json``
  reads and nothing was set aside;
- the stream's clock is no older than the last push answered, its accepted count no lower, and an
  event older than its watermark is still refused (409);
- the server answers a query, a push and a write.

Run as a script to write the figures of a longer run::

    .venv/bin/python -m tests.faults.kill_restart --cycles 20 --report benchmarks/results/faults.md
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint.engine.registry import FILE_NAME as QUERIES_FILE
from static_store.journal import FILE_NAME as JOURNAL_FILE
from tests.serve_process import Server, serving
from tests.stored_queries import Q1, RFID, TEMPLATE, ndjson, person

EX = "http://example.org/faults/"
G = EX + "graph"
PUT_SIZE = 300
EVENTS_PER_PUSH = 20
STREAM_PATH = "/streams/" + urllib.parse.quote(RFID, safe="")
COUNTER_UPDATE = (
    f"DELETE {{ <{EX}counter> <{EX}state> ?old }} INSERT {{ <{EX}counter> <{EX}state> ?new }} "
    f"WHERE {{ <{EX}counter> <{EX}state> ?old BIND(?old + 1 AS ?new) }} ; "
    f"INSERT {{ <{EX}log> <{EX}entry> ?new }} WHERE {{ <{EX}counter> <{EX}state> ?new }} ; "
    f"INSERT DATA {{ <{EX}log> <{EX}touched> true }}"
)
UPDATE = {"Content-Type": "application/sparql-update"}
TURTLE = {"Content-Type": "text/turtle"}
N_TRIPLES = {"Accept": "application/n-triples"}
JSON_BODY = {"Content-Type": "application/json"}
SPARQL_QUERY = {"Content-Type": "application/sparql-query"}


def graph_version(k: int) -> str:
    lines = [f'<{EX}s{i}> <{EX}value> "{k}-{i}" .' for i in range(PUT_SIZE - 3)]
    lines += [f'_:a <{EX}value> "{k}-a" .', f'_:b <{EX}value> "{k}-b" .', f"<{G}> <{EX}version> {k} ."]
    return "\n".join(lines) + "\n"


def _without_blank_nodes(triples: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    return {t for t in triples if not t[0].startswith("_:")}


def _triples(text: str, fmt: ox.RdfFormat) -> set[tuple[str, str, str]]:
    return {(str(t.subject), str(t.predicate), str(t.object)) for t in ox.parse(text.encode(), format=fmt)}


@dataclass
class Progress:
    """What the clients asked for and what the server answered, over all cycles."""

    puts_sent: int = 0
    puts_done: int = 0  # the highest version a PUT of which was answered 2xx
    updates_sent: int = 0
    updates_done: int = 0
    pushes_done: int = 0
    events_sent: int = 0
    events_done: int = 0
    latest_sent_ms: int = 0  # the latest event time pushed, answered or not
    latest_done_ms: int = 0  # the latest event time of an answered push
    queries_sent: set[str] = field(default_factory=set)
    queries_done: set[str] = field(default_factory=set)
    instances_sent: set[str] = field(default_factory=set)
    instances_done: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)  # wrong answers the clients got
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Report:
    cycles: int = 0
    seed: int = 0
    kills_during_a_journaled_write: int = 0
    kill_moments_s: list[float] = field(default_factory=list)
    restart_s: list[float] = field(default_factory=list)
    load: list[float] = field(default_factory=list)  # the 1-minute load average at start and end
    progress: Progress = field(default_factory=Progress)


def _push(server: Server, progress: Progress, count: int) -> None:
    """``count`` detections at the wall clock's time (later than any before) as one NDJSON batch."""
    now = int(time.time() * 1000)
    with progress.lock:
        progress.events_sent += count
        progress.latest_sent_ms = max(progress.latest_sent_ms, now)
    events = [(now, f"<{person(i)}> <http://deri.org/floorplan/detectedAt> <http://deri.org/floorplan/kitchen> .\n") for i in range(count)]
    status, body = server.request("POST", STREAM_PATH, ndjson(events).encode(), {"Content-Type": "application/x-ndjson"})
    assert status == 200, body
    with progress.lock:
        progress.events_done += count
        progress.latest_done_ms = max(progress.latest_done_ms, now)


def _clients(server: Server, progress: Progress, cycle: int, stop: threading.Event) -> list[threading.Thread]:
    """The four clients; each ends at its first failed request (the server is gone) or at ``stop``."""

    def put() -> None:
        while not stop.is_set():
            with progress.lock:
                progress.puts_sent += 1
                k = progress.puts_sent
            status, body = server.request("PUT", "/store?graph=" + urllib.parse.quote(G, safe=""), graph_version(k).encode(), TURTLE)
            assert status in (201, 204), body
            with progress.lock:
                progress.puts_done = max(progress.puts_done, k)

    def update() -> None:
        while not stop.is_set():
            with progress.lock:
                progress.updates_sent += 1
            status, body = server.request("POST", "/update", COUNTER_UPDATE.encode(), UPDATE)
            assert status == 204, body
            with progress.lock:
                progress.updates_done += 1

    def push() -> None:
        while not stop.is_set():
            _push(server, progress, EVENTS_PER_PUSH)
            with progress.lock:
                progress.pushes_done += 1
            time.sleep(0.01)

    def register() -> None:
        number = 0
        while not stop.is_set():
            number += 1
            name = f"q{cycle}-{number}"
            with progress.lock:
                progress.queries_sent.add(name)
            status, body = server.request("PUT", f"/queries/{name}", Q1.encode(), SPARQL_QUERY)
            assert status == 201, body
            with progress.lock:
                progress.queries_done.add(name)
            instance = f"c{cycle}i{number}"
            with progress.lock:
                progress.instances_sent.add(instance)
            spec = {"bindings": {"person": {"type": "uri", "value": person(number)}}, "name": instance}
            status, body = server.request("POST", "/queries/where/instances", json.dumps(spec).encode(), JSON_BODY)
            assert status == 201, body
            with progress.lock:
                progress.instances_done.add(instance)

    def guarded(client) -> None:
        try:
            client()
        except (OSError, http.client.HTTPException):
            pass  # killed: the request in flight has no answer
        except AssertionError as error:
            progress.errors.append(f"{client.__name__}: {error}")

    return [threading.Thread(target=guarded, args=(client,), daemon=True) for client in (put, update, push, register)]


def check(server: Server, data_dir: Path, progress: Progress) -> None:
    """The consistency check after a restart (AssertionError naming what is wrong)."""
    status, body = server.request("GET", "/health")
    assert status == 200, body
    status, body = server.request("GET", "/store?graph=" + urllib.parse.quote(G, safe=""), headers=N_TRIPLES)
    if progress.puts_done == 0 and status == 404:
        pass  # no PUT answered yet, none applied
    else:
        assert status == 200, body
        triples = _triples(body.decode(), ox.RdfFormat.N_TRIPLES)
        versions = [int(o.split('"')[1]) for s, p, o in triples if p == f"<{EX}version>"]
        assert len(versions) == 1, f"graph G holds versions {versions}"
        k = versions[0]
        assert progress.puts_done <= k <= progress.puts_sent, f"version {k}, answered {progress.puts_done}, sent {progress.puts_sent}"
        expected = _without_blank_nodes(_triples(graph_version(k), ox.RdfFormat.TURTLE))
        assert len(triples) == PUT_SIZE and _without_blank_nodes(triples) == expected, f"graph G is not one complete version {k}"
    states = server.query(f"SELECT ?v WHERE {{ <{EX}counter> <{EX}state> ?v }}")["results"]["bindings"]
    assert len(states) == 1, f"{len(states)} ex:state triples"
    state = int(states[0]["v"]["value"])
    entries = server.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ <{EX}log> <{EX}entry> ?e }}")["results"]["bindings"]
    assert int(entries[0]["n"]["value"]) == state, f"counter {state} but {entries[0]['n']['value']} log entries: an update applied in part"
    assert progress.updates_done <= state <= progress.updates_sent, f"counter {state}, answered {progress.updates_done}, sent {progress.updates_sent}"

    status, body = server.request("GET", "/queries")
    assert status == 200, body
    stored = {q["name"]: q for q in json.loads(body)["queries"]}
    assert not [name for name, q in stored.items() if q["status"] == "failed"], stored
    registered = set(stored) - {"where"}
    assert progress.queries_done <= registered <= progress.queries_sent, (registered, progress.queries_done)
    status, body = server.request("GET", "/queries/where")
    assert status == 200, body
    instances = {i["name"] for i in json.loads(body)["instances"]}
    assert progress.instances_done <= instances <= progress.instances_sent, (instances, progress.instances_done)
    json.loads((data_dir / QUERIES_FILE).read_text("utf-8"))
    assert not (data_dir / (QUERIES_FILE + ".corrupt")).exists()

    if progress.events_done:  # the stream's clock and counters, as the last answered push left them at least
        status, body = server.request("GET", "/streams")
        assert status == 200, body
        [clock] = [entry for entry in json.loads(body)["streams"] if entry["stream"] == RFID]
        assert progress.latest_done_ms <= clock["latest"] <= progress.latest_sent_ms, (clock, progress.latest_done_ms)
        assert progress.events_done <= clock["accepted"] <= progress.events_sent, (clock, progress.events_done)
        status, body = server.request("POST", STREAM_PATH, ndjson([(0, f'<{person(0)}> <{EX}p> "old" .\n')]).encode(), {"Content-Type": "application/x-ndjson"})
        assert status == 409, body  # the past stays closed
    _push(server, progress, 1)


def run(cycles: int, seed: int, data_dir: Path, kill_window_s: tuple[float, float] = (0.3, 2.0)) -> Report:
    """``cycles`` kill-restart cycles on ``data_dir``; the report of a run that survived them all
    (the first failed check raises)."""
    rng = random.Random(seed)
    report = Report(seed=seed, load=[os.getloadavg()[0]])
    flags = ("--data-dir", str(data_dir), "--cache-engine", "local")
    progress = report.progress
    with serving(*flags) as server:
        status, body = server.request("POST", "/update", f"INSERT DATA {{ <{EX}counter> <{EX}state> 0 }}".encode(), UPDATE)
        assert status == 204, body
        status, body = server.request("PUT", "/queries/where", TEMPLATE.encode(), SPARQL_QUERY)
        assert status == 201, body
        assert server.stop() == 0
    for cycle in range(cycles + 1):
        started = time.monotonic()
        with serving(*flags) as server:
            if cycle > 0:
                report.restart_s.append(round(time.monotonic() - started, 2))
            check(server, data_dir, progress)
            assert not progress.errors, progress.errors
            # The first request through the project's parser loads it (seconds on a busy machine):
            # done here, so that the kill window falls among writes. This one matches nothing.
            status, body = server.request("POST", "/update", f"DELETE WHERE {{ <{EX}none> <{EX}none> ?x }}".encode(), UPDATE)
            assert status == 204, body
            if cycle == cycles:
                assert server.stop() == 0
                break
            report.cycles = cycle
            stop = threading.Event()
            clients = _clients(server, progress, cycle, stop)
            for client in clients:
                client.start()
            moment = rng.uniform(*kill_window_s)
            time.sleep(moment)
            server.process.send_signal(signal.SIGKILL)
            server.process.wait()
            stop.set()
            for client in clients:
                client.join(30)
            report.kill_moments_s.append(round(moment, 2))
            report.kills_during_a_journaled_write += (data_dir / JOURNAL_FILE).exists()
    report.cycles = cycles  # each kill was followed by a restart that passed the check
    report.load.append(os.getloadavg()[0])
    return report


def markdown(report: Report, seconds: float) -> str:
    progress = report.progress
    restarts = sorted(report.restart_s)
    return "\n".join([
        "# Kill-restart cycles (`tests/faults/kill_restart.py`)",
        "",
        f"`cqels serve --cache-engine local` SIGKILLed at seeded random moments (seed {report.seed}) while four",
        "clients wrote to it, restarted on the same data directory and checked (every GSP PUT and every",
        "Update request whole or absent, everything answered kept, stored queries and instances back,",
        f"stream clock and counts no older than the last push answered). Load average {report.load[0]:.1f} at the",
        f"start, {report.load[-1]:.1f} at the end, on {os.cpu_count()} cores.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| kill-restart cycles survived | {report.cycles} of {report.cycles} |",
        f"| kills that found a multi-step write in progress (undo journal left, undone at restart) | {report.kills_during_a_journaled_write} |",
        f"| GSP PUTs answered (graph of {PUT_SIZE} triples replaced) | {progress.puts_done} |",
        f"| Update requests of 3 operations answered | {progress.updates_done} |",
        f"| NDJSON batches of {EVENTS_PER_PUSH} events accepted (events) | {progress.pushes_done} ({progress.events_done}) |",
        f"| queries / instances registered | {len(progress.queries_done)} / {len(progress.instances_done)} |",
        "| lost or partial writes found | 0 |",
        f"| restart to listening, median (max) | {restarts[len(restarts) // 2]} s ({restarts[-1]} s) |",
        f"| run time | {seconds:.0f} s |",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--report", type=Path, help="write the figures there (markdown)")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        report = run(args.cycles, args.seed, Path(scratch) / "data")
    text = markdown(report, time.monotonic() - started)
    print(text)
    if args.report is not None:
        args.report.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
