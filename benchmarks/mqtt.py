"""MQTT in and out against HTTP push, in one run: events/s from a publisher to emitted rows, and the
end-to-end latency from publish (or POST) to emission, p50/p99.

    python benchmarks/mqtt.py [--events 20000] [--rate 500] [--latency-events 5000]
                              [--out benchmarks/results/mqtt.md]

Loopback only. A real ``mosquitto`` (``tests/mqtt_broker.py``: Debian's, on a free port, with a
deployment's defaults: persistence saved every 30 minutes, not at every change as in the tests) and
``cqels serve --memory --cache-engine local`` as subprocesses; the server runs two MQTT sources,
QoS 0 and QoS 1 (``--source``, N-Triples, one event a message, arrival time), and the same
one-pattern query on three streams (the two sources' and one pushed over HTTP)::

    SELECT ?e ?t WHERE { STREAM <s> [RANGE 1s] { ?e <urn:bench:t> ?t } }   (ISTREAM)

Every event is one triple ``<urn:bench:e:k> <urn:bench:t> T`` where ``T`` is the time it was sent
(µs since the epoch, ``time.time``); each emitted row thus says when its event left the client.
Rows are read by one SSE subscriber per query (the same consumer for every path), and, for the QoS 1
path, by an MQTT subscriber of an MQTT sink of the query (``--sink``: emissions out over MQTT).

- **Throughput**: ``--events`` events sent as fast as the client can (paho: QoS 0, or QoS 1 with
  up to 1,000 in flight; HTTP: one ``POST /streams/s`` a event on one keep-alive connection, and
  NDJSON batches of 100), from the first send to the last row received: events/s.
- **Latency**: ``--latency-events`` events sent at a steady ``--rate`` events/s; for each row,
  receipt time − ``T``: p50, p99, max.

Every path's rows are checked: each event emitted exactly once. The machine and the load average
are printed with the figures (``results/mqtt.md``, ``results/mqtt.png``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

import paho.mqtt.client as mqtt
from engine import machine, pyplot
from load import free_port, request
from paho.mqtt.enums import CallbackAPIVersion

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mqtt_broker import Broker

HERE = Path(__file__).resolve().parent
PREDICATE = "urn:bench:t"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
STREAMS = {"mqtt-qos0": "urn:bench:stream:qos0", "mqtt-qos1": "urn:bench:stream:qos1", "http": "urn:bench:stream:http"}
TOPICS = {"mqtt-qos0": "bench/qos0", "mqtt-qos1": "bench/qos1"}
SINK_TOPIC = "bench/out"
QUIET_S = 5.0


def event(k: int, run: str) -> str:
    return f'<urn:bench:e:{run}:{k}> <{PREDICATE}> "{time.time_ns() // 1000}"^^<{XSD_INTEGER}> .'


# ------------------------------------------------------------------ consumers


class SseRows(threading.Thread):
    """The rows of one query's SSE results: for each event subject, when its row arrived and its ``T``."""

    def __init__(self, port: int, query: str):
        super().__init__(daemon=True)
        self.port, self.query = port, query
        self.rows: dict[str, tuple[float, int]] = {}
        self.duplicates = 0
        self.ready = threading.Event()
        self.changed = threading.Condition()

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        connection.request("GET", f"/queries/{self.query}/results", headers={"Accept": "application/x-ndjson"})
        response = connection.getresponse()
        self.ready.set()
        for line in response:
            if line.strip():
                record(self, time.time(), json.loads(line))

    def wait_for(self, prefix: str, count: int) -> tuple[int, float]:
        return wait_for_rows(self, prefix, count)


class SinkRows:
    """The rows an MQTT sink publishes (the emissions' SPARQL JSON), read by a paho subscriber."""

    def __init__(self, port: int):
        self.rows: dict[str, tuple[float, int]] = {}
        self.duplicates = 0
        self.changed = threading.Condition()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="bench-sink-reader")
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port)
        self.client.subscribe(SINK_TOPIC, qos=1)
        self.client.loop_start()

    def _message(self, _client, _userdata, message) -> None:
        record(self, time.time(), json.loads(message.payload))

    def wait_for(self, prefix: str, count: int) -> tuple[int, float]:
        return wait_for_rows(self, prefix, count)


def record(consumer, arrived: float, emission: dict) -> None:
    """The rows of one emission a consumer received at ``arrived``: each event's ``T``, duplicates counted."""
    with consumer.changed:
        for binding in emission["results"]["bindings"]:
            subject = binding["e"]["value"]
            if subject in consumer.rows:
                consumer.duplicates += 1
            consumer.rows[subject] = (arrived, int(binding["t"]["value"]))
        consumer.changed.notify_all()


def wait_for_rows(consumer, prefix: str, count: int) -> tuple[int, float]:
    """The rows of ``prefix`` ``consumer`` received and when the last came: once there are ``count``,
    or when none came for ``QUIET_S`` (QoS 0 messages a broker drops never come)."""
    with consumer.changed:
        while True:
            found = [arrived for subject, (arrived, _) in consumer.rows.items() if subject.startswith(prefix)]
            if len(found) >= count:
                return len(found), max(found)
            if not consumer.changed.wait(QUIET_S):
                return len(found), max(found, default=time.time())


# ------------------------------------------------------------------ senders


class MqttSender:
    def __init__(self, port: int, qos: int):
        self.qos = qos
        self.topic = TOPICS[f"mqtt-qos{qos}"]
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-publisher-{qos}")
        self.client.max_inflight_messages_set(1000)
        self.client.max_queued_messages_set(0)
        self.client.connect("127.0.0.1", port)
        # paho leaves Nagle's algorithm on: a small publish would wait behind the previous one for
        # the broker's delayed TCP acknowledgement (40 ms spikes that are the client's, not the server's).
        self.client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client.loop_start()
        self.last = None

    def send(self, payload: str) -> None:
        self.last = self.client.publish(self.topic, payload, qos=self.qos)

    def flush(self) -> None:
        if self.last is not None:
            self.last.wait_for_publish(60)


class HttpSender:
    def __init__(self, port: int, batch: int = 1):
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.path = "/streams/" + quote(STREAMS["http"], safe="")
        self.batch = batch
        self.pending: list[str] = []

    def send(self, payload: str) -> None:
        if self.batch == 1:
            self._post(payload.encode(), "application/n-triples")
            return
        self.pending.append(json.dumps({"data": payload}))
        if len(self.pending) == self.batch:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self._post("\n".join(self.pending).encode(), "application/x-ndjson")
            self.pending = []

    def _post(self, body: bytes, media_type: str) -> None:
        try:
            self.connection.request("POST", self.path, body=body, headers={"Content-Type": media_type})
            response = self.connection.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closed the idle keep-alive connection (between runs): once more on a new one.
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.connection.request("POST", self.path, body=body, headers={"Content-Type": media_type})
            response = self.connection.getresponse()
        answer = response.read()
        if response.status != 200:
            raise SystemExit(f"push refused: {response.status} {answer[:200]!r}")


# ------------------------------------------------------------------ the run


def throughput(sender, consumer, run: str, events: int) -> tuple[float, int]:
    """Events/s from the first send to the last row, and how many events gave no row (lost)."""
    began = time.time()
    for k in range(events):
        sender.send(event(k, run))
    sender.flush()
    received, last = consumer.wait_for(f"urn:bench:e:{run}:", events)
    return received / (last - began), events - received


def latency(sender, consumers: list, run: str, events: int, rate: float) -> list[list[float]]:
    began = time.perf_counter()
    for k in range(events):
        due = began + k / rate
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        sender.send(event(k, run))
    sender.flush()
    found = []
    for consumer in consumers:
        received, _ = consumer.wait_for(f"urn:bench:e:{run}:", events)
        if received != events:
            raise SystemExit(f"{run}: {received} of {events} events emitted at {rate} events/s")
        found.append(sorted((arrived - sent / 1e6) * 1000 for subject, (arrived, sent) in consumer.rows.items()
                            if subject.startswith(f"urn:bench:e:{run}:")))
    return found


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--latency-events", type=int, default=5_000)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "mqtt.md")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        broker = Broker(Path(scratch) / "broker", tested=False)
        broker.start()
        port = free_port()
        sources = [
            f"{path}=mqtt://127.0.0.1:{broker.port}/{TOPICS[path]}?stream={STREAMS[path]}&format=ntriples&time=arrival"
            f"&qos={path[-1]}&clean_session=true"
            for path in TOPICS
        ]
        command = [sys.executable, "-m", "cqels_endpoint.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
                   "--memory", "--data-dir", str(Path(scratch) / "data"), "--cache-engine", "local",
                   "--subscriber-queue", "1000000", *(flag for source in sources for flag in ("--source", source)),
                   "--sink", f"out=mqtt://127.0.0.1:{broker.port}/{SINK_TOPIC}?query=mqtt-qos1&qos=1&buffer=1000000"]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for_server(server, port)
            consumers = {}
            for path, stream in STREAMS.items():
                text = f"SELECT ?e ?t WHERE {{ STREAM <{stream}> [RANGE 1s] {{ ?e <{PREDICATE}> ?t }} }}"
                status, body = request("PUT", port, f"/queries/{path}?r2s=ISTREAM", text.encode(),
                                       {"Content-Type": "application/sparql-query"})
                assert status == 201, body
                consumers[path] = SseRows(port, path)
                consumers[path].start()
                consumers[path].ready.wait(30)
            sink = SinkRows(broker.port)
            _wait_connected(port)
            senders = {"mqtt-qos0": MqttSender(broker.port, 0), "mqtt-qos1": MqttSender(broker.port, 1),
                       "http": HttpSender(port), "http-ndjson-100": HttpSender(port, 100)}
            load_before = os.getloadavg()
            rates, lost = {}, {}
            for name, sender in senders.items():
                consumer = consumers[name if name in consumers else "http"]
                throughput(sender, consumer, f"warm-{name}", 500)
                rates[name], lost[name] = throughput(sender, consumer, f"run-{name}", args.events)
                print(f"{name}: {rates[name]:,.0f} events/s, {lost[name]} lost", flush=True)
            delays = {}
            for name in ("mqtt-qos0", "mqtt-qos1", "http"):
                watched = [consumers[name]] + ([sink] if name == "mqtt-qos1" else [])
                found = latency(senders[name], watched, f"lat-{name}", args.latency_events, args.rate)
                delays[name] = found[0]
                if name == "mqtt-qos1":
                    delays["mqtt-qos1 → sink"] = found[1]
            load_after = os.getloadavg()
            duplicates = {name: c.duplicates for name, c in consumers.items()} | {"sink": sink.duplicates}
            assert not any(duplicates.values()), duplicates
            _, body = request("GET", port, "/sources")
            listing = json.loads(body)["sources"]
        finally:
            server.terminate()
            server.wait(60)
            broker.stop()
    report(args, rates, lost, delays, listing, load_before, load_after)


def _wait_for_server(server: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            request("GET", port, "/health")
            return
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"the server exited: {server.stderr.read()}") from None
            time.sleep(0.2)
    raise SystemExit("the server did not answer within 60 s")


def _wait_connected(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = [c["state"] for role in ("sources", "sinks") for c in json.loads(request("GET", port, f"/{role}")[1])[role]]
        if states and all(state == "connected" for state in states):
            return
        time.sleep(0.1)
    raise SystemExit(f"connectors not connected: {states}")


def report(args, rates: dict, lost: dict, delays: dict, listing: list, load_before, load_after) -> None:
    lines = [
        "# MQTT and WebSocket sources against HTTP push (`benchmarks/mqtt.py`)",
        "",
        f"Machine: {machine()}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after.",
        f"Broker: Debian's mosquitto on loopback; the server, the broker and the clients share the machine. "
        f"{args.events:,} events per throughput run, {args.latency_events:,} at {args.rate:,.0f} events/s per latency run.",
        "",
        "| path | events/s | vs HTTP push (one event a request) | events lost |",
        "|---|---:|---:|---:|",
    ]
    for name, rate in rates.items():
        lines.append(f"| {name} | {rate:,.0f} | {rate / rates['http']:.2f}× | {lost[name]:,} |")
    lines += ["", "| path | latency p50 (ms) | p99 (ms) | max (ms) |", "|---|---:|---:|---:|"]
    for name, values in delays.items():
        lines.append(f"| {name} | {statistics.median(values):.2f} | {percentile(values, 0.99):.2f} | {max(values):.2f} |")
    lines += ["", "No event was emitted twice on any path; the latency runs lost none (the run fails otherwise); a "
              "throughput run's lost events would be QoS 0 messages the broker dropped (this broker queues without "
              "bound for a subscriber that is behind). Sources at the end:", ""]
    for source in listing:
        lines.append(f"- `{source['name']}`: received {source['received']:,}, accepted {source['accepted']:,}, "
                     f"rejected {source['rejected'] or 0}")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)
    plt = pyplot()
    if plt is not None:
        figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        left.bar(list(rates), list(rates.values()))
        left.set_ylabel("events/s")
        left.set_title("throughput")
        left.tick_params(axis="x", rotation=20)
        right.boxplot(list(delays.values()), showfliers=False)
        right.set_xticks(range(1, len(delays) + 1), list(delays), rotation=20)
        right.set_ylabel("ms, publish → emission")
        right.set_title(f"latency at {args.rate:,.0f} events/s")
        figure.tight_layout()
        figure.savefig(args.out.with_suffix(".png"), dpi=100)


if __name__ == "__main__":
    main()
