"""MQTT sources and sinks (``connectors/mqtt.py``) against a real ``mosquitto`` (``mqtt_broker``).

Correctness by oracle: a query on the engine a source feeds emits exactly what the same query emits
on a twin engine fed the intended events directly (``Engine.push``, N-Triples, the intended
times), both on a manual arrival clock; what a sink publishes is what a Python subscriber of the
same query received, emission for emission. Topic matching is checked against paho's
``topic_matches_sub``.
"""

from __future__ import annotations

import datetime
import json
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager

import paho.mqtt.client as mqtt
import pyoxigraph as ox
import pytest
from mqtt_broker import HOST, USERS, Broker
from waiting import eventually

from cqels_endpoint.connectors.base import CONNECTED, FAILED, RETRYING, WAITING, ConnectionLost
from cqels_endpoint.connectors.mqtt import _READ_BYTES, MqttSink, MqttSource, _Client
from cqels_endpoint.connectors.specs import sink_from_json, source_from_json
from cqels_endpoint.connectors.subscriptions import Subscriptions
from cqels_endpoint.engine import Engine
from cqels_endpoint.testing import ManualClock

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
PROV = "http://www.w3.org/ns/prov#"
STREAM = EX + "stream"
PASSWORD_ENV = "CQELS_TEST_MQTT_PASSWORD"
START_MS = 1_800_000_000_000
QUERY = f"SELECT ?s ?v ?label WHERE {{ STREAM <{STREAM}> [RANGE 1h] {{ ?s <{EX}value> ?v OPTIONAL {{ ?s <{EX}label> ?label }} }} }}"


def event(i: int) -> list[ox.Triple]:
    """Event ``i``: a value, and a label with a language tag and quotes (what the syntaxes escape)."""
    subject = ox.NamedNode(f"{EX}obs/{i}")
    return [ox.Triple(subject, ox.NamedNode(EX + "value"), ox.Literal(str(i), datatype=ox.NamedNode(XSD + "integer"))),
            ox.Triple(subject, ox.NamedNode(EX + "label"), ox.Literal(f'reading "{i}" é', language="fr"))]


def ntriples(triples: list[ox.Triple]) -> str:
    return ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES).decode()


def trig(events: list[tuple[int, int]]) -> bytes:
    """Events ``(i, time)`` as TriG: one named graph each, its prov:generatedAtTime in the default graph."""
    lines = [f"@prefix prov: <{PROV}> . @prefix xsd: <{XSD}> ."]
    for i, millis in events:
        lines.append(f"<{EX}g/{i}> prov:generatedAtTime \"{_iso(millis)}\"^^xsd:dateTime .")
        lines.append(f"<{EX}g/{i}> {{ {ntriples(event(i))} }}")
    return "\n".join(lines).encode()


def _iso(millis: int) -> str:
    return datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ndjson(events: list[tuple[int, int | None]]) -> bytes:
    return "".join(json.dumps({"data": ntriples(event(i))} | ({} if t is None else {"time": t})) + "\n"
                   for i, t in events).encode()


ONE_EVENT = {
    "ntriples": lambda i: ntriples(event(i)).encode(),
    "turtle": lambda i: ox.serialize(event(i), format=ox.RdfFormat.TURTLE, prefixes={"ex": EX}),
    "jsonld": lambda i: ox.serialize(event(i), format=ox.RdfFormat.JSON_LD),
    "rdfxml": lambda i: ox.serialize(event(i), format=ox.RdfFormat.RDF_XML),
    "n3": lambda i: ox.serialize(event(i), format=ox.RdfFormat.N3),
}


class Twin:
    """An engine and its twin on manual clocks, the same query registered on both; ``emitted``
    records what each emitted (as JSON)."""

    def __init__(self):
        self.clock = ManualClock(START_MS)
        self.twin_clock = ManualClock(START_MS)
        self.engine = Engine(clock=self.clock)
        self.twin = Engine(clock=self.twin_clock)
        self.emitted: dict[str, list] = {"engine": [], "twin": []}
        for key, engine in (("engine", self.engine), ("twin", self.twin)):
            engine.register(QUERY, name="q").subscribe(lambda emission, key=key: self.emitted[key].append(emission.to_json()))

    def close(self) -> None:
        self.engine.close()
        self.twin.close()


@pytest.fixture
def twin():
    made = Twin()
    yield made
    made.close()


@contextmanager
def running(connector):
    connector.start()
    try:
        yield connector
    finally:
        connector.stop()


def source(engine: Engine, name: str, address: str, topics: list[str], **fields) -> MqttSource:
    spec = source_from_json(name, {"kind": "mqtt", "address": address, "topics": topics, "stream": STREAM, **fields})
    return MqttSource(spec, engine, STREAM)


def connected(connector, connections: int = 1) -> None:
    eventually(lambda: connector.state == CONNECTED and connector.connections >= connections,
               what=f"{connector.name} connected {connections} times")


def accepted(connector, events: int, received: int | None = None) -> None:
    eventually(lambda: connector.accepted >= events and connector.received >= (received or 0),
               what=f"{connector.name} accepting {events} events")


# ---------------------------------------------------------------------------- payload formats and time


@pytest.mark.parametrize("fmt", sorted(ONE_EVENT))
@pytest.mark.parametrize("qos", [0, 1])
def test_one_event_formats(broker, twin, fmt, qos):
    topic = f"formats/{fmt}/{qos}"
    with running(source(twin.engine, f"f-{fmt}-{qos}", broker.address, [topic], format=fmt, qos=qos)) as reader:
        connected(reader)
        for i in range(3):
            # time "payload" of a one-event syntax: the arrival, the manual clock's now on both engines
            twin.clock.set(START_MS + 1000 * i)
            twin.twin_clock.set(START_MS + 1000 * i)
            broker.publish(topic, ONE_EVENT[fmt](i), qos=qos)
            accepted(reader, i + 1)
            twin.twin.push(STREAM, ntriples(event(i)))
    assert reader.received == 3 and not reader.rejected
    assert twin.emitted["engine"] == twin.emitted["twin"] and len(twin.emitted["twin"]) == 3


@pytest.mark.parametrize("fmt", ["trig", "ndjson"])
def test_batch_formats_take_their_times_from_the_payload(broker, twin, fmt):
    topic = f"formats/{fmt}"
    messages = [[(0, START_MS + 5), (1, START_MS + 20), (2, START_MS + 20)], [(3, START_MS + 1000)]]
    with running(source(twin.engine, f"f-{fmt}", broker.address, [topic], format=fmt)) as reader:
        connected(reader)
        for message in messages:
            broker.publish(topic, trig(message) if fmt == "trig" else ndjson(message))
        accepted(reader, 4)
    for i, millis in (pair for message in messages for pair in message):
        twin.twin.push(STREAM, ntriples(event(i)), time=millis)
    assert reader.received == 2 and not reader.rejected
    assert twin.emitted["engine"] == twin.emitted["twin"]
    assert {emission["time"] for emission in twin.emitted["engine"]} == {START_MS + 5, START_MS + 20, START_MS + 1000}


@pytest.mark.parametrize("time", ["payload", "arrival", EX + "at"])
def test_the_three_time_choices(broker, twin, time):
    topic = f"time/{time.rsplit('/', 1)[-1]}"
    # Each NDJSON line carries a time and an ex:at triple that disagree: the choice decides which counts.
    lines = []
    for i in range(3):
        triples = ntriples(event(i)) + f'<{EX}obs/{i}> <{EX}at> "{_iso(START_MS + 300 * i)}"^^<{XSD}dateTime> .\n'
        lines.append(json.dumps({"time": START_MS + 7 * i, "data": triples}) + "\n")
    twin.clock.set(START_MS + 5000)
    twin.twin_clock.set(START_MS + 5000)
    with running(source(twin.engine, f"t-{topic[5:]}", broker.address, [topic], format="ndjson", time=time)) as reader:
        connected(reader)
        broker.publish(topic, "".join(lines))
        accepted(reader, 3)
    expected = {"payload": lambda i: START_MS + 7 * i, "arrival": lambda i: None, EX + "at": lambda i: START_MS + 300 * i}[time]
    twin.twin.push_batch(STREAM, [(json.loads(line)["data"], expected(i)) for i, line in enumerate(lines)])
    assert twin.emitted["engine"] == twin.emitted["twin"] and twin.emitted["twin"]


def test_a_burst_of_qos1_messages(broker, twin):
    # More than the broker's window of unacknowledged messages (20): it stalls unless each is acknowledged.
    topic = "burst/in"
    count = 300
    with running(source(twin.engine, "burst", broker.address, [topic], format="ndjson")) as reader:
        connected(reader)
        broker.publish(topic, *(ndjson([(i, START_MS + i)]) for i in range(count)))
        accepted(reader, count)
    twin.twin.push_batch(STREAM, [(ntriples(event(i)), START_MS + i) for i in range(count)])
    assert (reader.received, reader.accepted, dict(reader.rejected)) == (count, count, {})
    assert twin.emitted["engine"] == twin.emitted["twin"]


def test_messages_cut_by_the_clients_reads(broker, twin):
    # The client reads its socket _READ_BYTES at a time: a message longer than that, and the ones a
    # read ends in the middle of, are put together across reads, in order.
    topic = "cut/in"
    sizes = [1, 700, 2, 1, 700, 3, *[1] * 50]  # events a message; 700 make one over _READ_BYTES
    messages, first = [], 0
    for size in sizes:
        messages.append([(i, START_MS + i) for i in range(first, first + size)])
        first += size
    payloads = [ndjson(message) for message in messages]
    assert max(map(len, payloads)) > _READ_BYTES
    with running(source(twin.engine, "cut", broker.address, [topic], format="ndjson")) as reader:
        connected(reader)
        broker.publish(topic, *payloads)
        accepted(reader, first)
    for message in messages:
        twin.twin.push_batch(STREAM, [(ntriples(event(i)), millis) for i, millis in message])
    assert (reader.received, reader.accepted, dict(reader.rejected)) == (len(sizes), first, {})
    assert twin.emitted["engine"] == twin.emitted["twin"]


@contextmanager
def held_client():
    """A ``_Client`` on one end of a local socket pair with small buffers, and the other end."""
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ours.setblocking(False)
    client = _Client(mqtt.CallbackAPIVersion.VERSION2, client_id="held")
    client._sock = ours  # as paho's connect sets it
    try:
        yield client, theirs
    finally:
        ours.close()
        theirs.close()


def test_held_writes_go_out_whole_and_in_order_to_a_slow_peer():
    chunks = [bytes([i]) * 1000 for i in range(200)]  # far more than the socket buffers hold
    with held_client() as (client, peer):
        got = bytearray()

        def read() -> None:
            while len(got) < 200_000 and (data := peer.recv(1000)):
                got.extend(data)

        reader = threading.Thread(target=read)
        with client.holding(timeout=10):
            assert [client._sock_send(chunk) for chunk in chunks] == [1000] * 200
            peer.setblocking(False)
            with pytest.raises(BlockingIOError):  # nothing written while held
                peer.recv(1)
            peer.setblocking(True)
            reader.start()
        reader.join(10)
        assert bytes(got) == b"".join(chunks)
        assert client._sock_send(b"after") == 5 and peer.recv(5) == b"after"  # not held any more


def test_held_writes_give_up_when_the_peer_takes_nothing():
    refused = pytest.raises(ConnectionLost, match=r"took no data for 0\.3 s")
    with held_client() as (client, _peer), refused, client.holding(timeout=0.3):
        client._sock_send(b"x" * 1_000_000)


def test_wildcards_match_as_mqtt_says(broker, twin):
    filters = ["wild/+/obs", "wild/deep/#"]
    topics = ["wild/a/obs", "wild/b/obs", "wild/a/b/obs", "wild/obs", "wild/deep", "wild/deep/x/y", "wild/other/x", "wild2/a/obs"]
    query = f"SELECT ?topic WHERE {{ STREAM <{STREAM}> [RANGE 1h] {{ ?m <{EX}topic> ?topic }} }}"
    seen: list[str] = []
    twin.engine.register(query, name="topics").subscribe(lambda e: seen.extend(row["topic"].value for row in e.rows))
    with running(source(twin.engine, "wild", broker.address, filters)) as reader:
        connected(reader)
        for i, topic in enumerate(topics):
            broker.publish(topic, f'<{EX}m/{i}> <{EX}topic> "{topic}" .')
        broker.publish("wild/deep/end", f'<{EX}m/end> <{EX}topic> "end" .')  # the last one: the others came before
        eventually(lambda: "end" in seen, what="the last message")
    assert seen == [t for t in topics if any(mqtt.topic_matches_sub(f, t) for f in filters)] + ["end"]
    assert reader.received == len(seen)


def test_a_malformed_message_is_counted_and_the_next_one_accepted(broker, twin):
    topic = "malformed"
    bad = [b"<http://ex.org/a> <http://ex.org/p> .", b"\xff\xfe not utf-8", b"", b'{"time": 1}\n{"data": "<a> <b> <c> ."}']
    with running(source(twin.engine, "malformed", broker.address, [topic], format="ntriples")) as reader:
        connected(reader)
        for payload in bad:
            broker.publish(topic, payload)
            broker.publish(topic, ntriples(event(len(reader.rejected))).encode())
        accepted(reader, len(bad), received=2 * len(bad))
    refused = sum(reader.rejected.values())
    # An empty N-Triples document is an empty event, not a malformed one.
    assert reader.received == 2 * len(bad)
    assert reader.rejected == {"malformed": refused} and refused == len(bad) - 1
    assert twin.engine.stream_stats(STREAM)[0]["malformed"] == refused


# ---------------------------------------------------------------------------- credentials and TLS


@pytest.mark.parametrize("user", ["username", "username_env"])
def test_username_and_password(broker, twin, monkeypatch, user):
    monkeypatch.setenv(PASSWORD_ENV, USERS["cqels"])
    monkeypatch.setenv("CQELS_TEST_MQTT_USER", "cqels")
    address = f"mqtt://{HOST}:{broker.auth_port}"
    fields = {"username": "cqels"} if user == "username" else {"username_env": "CQELS_TEST_MQTT_USER"}
    with running(source(twin.engine, f"auth-{user}", address, ["auth/obs"], password_env=PASSWORD_ENV, **fields)) as reader:
        connected(reader)
        # On the password listener: each listener has its own clients (per_listener_settings).
        broker.publish("auth/obs", ntriples(event(1)), user=("cqels", USERS["cqels"]))
        accepted(reader, 1)


@pytest.mark.parametrize("password", ["wrong", None])
def test_refused_credentials_say_so(broker, twin, monkeypatch, password):
    fields = {}
    if password is not None:
        monkeypatch.setenv(PASSWORD_ENV, password)
        fields = {"username": "cqels", "password_env": PASSWORD_ENV}
    address = f"mqtt://{HOST}:{broker.auth_port}"
    spec_retry = {"initial_ms": 50, "max_ms": 50, "attempts": 2}
    with running(source(twin.engine, f"badauth-{password}", address, ["auth/x"], retry=spec_retry, **fields)) as reader:
        eventually(lambda: reader.state == RETRYING, what="retrying")
        status = reader.status()
        assert "the broker refused the connection: Not authorized" in status["reason"]
        assert ("bad credentials? user 'cqels' with the password in $" + PASSWORD_ENV if password else "no credentials were given") in status["reason"]
        eventually(lambda: reader.state == FAILED, what="failed after the attempts")
        assert reader.reason.endswith("(gave up after 2 attempts)") and reader.connections == 0


def test_a_missing_password_variable_fails_naming_it(broker, twin, monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    address = f"mqtt://{HOST}:{broker.auth_port}"
    with running(source(twin.engine, "noenv", address, ["auth/x"], username="cqels", password_env=PASSWORD_ENV)) as reader:
        eventually(lambda: reader.state == FAILED, what="failed")
        assert reader.reason == f"the environment variable {PASSWORD_ENV} is not set for the server"


def tls_source(broker: Broker, engine: Engine, name: str, host: str, port: int, **tls) -> MqttSource:
    return source(engine, name, f"mqtts://{host}:{port}", ["tls/obs"], tls={"ca": broker.ca, **tls},
                  retry={"initial_ms": 50, "max_ms": 100})


@pytest.mark.parametrize(("host", "port", "tls"), [
    ("localhost", "tls_port", {}),
    ("127.0.0.1", "tls_port", {"insecure": True}),  # the certificate names localhost only
    ("localhost", "mtls_port", {"cert": "client_cert", "key": "client_key"}),
])
def test_tls(broker, twin, host, port, tls):
    tls = {key: getattr(broker, value) if isinstance(value, str) else value for key, value in tls.items()}
    with running(tls_source(broker, twin.engine, f"tls-{port}-{host}", host, getattr(broker, port), **tls)) as reader:
        connected(reader)
        # Published on the TLS listener's broker: one broker, every listener sees every topic.
        broker.publish("tls/obs", ntriples(event(7)))
        accepted(reader, 1)


@pytest.mark.parametrize(("host", "port", "tls", "reason"), [
    ("127.0.0.1", "tls_port", {}, "IP address mismatch"),  # without insecure, the host name is checked
    ("localhost", "tls_port", {"ca": None}, "CERTIFICATE_VERIFY_FAILED"),  # the system's authorities do not know its CA
    # This listener wants a client certificate: it closes the connection after the handshake.
    ("localhost", "mtls_port", {}, "the broker closed the connection before accepting it (failed to receive on socket: "),
])
def test_tls_refused(broker, twin, host, port, tls, reason):
    with running(tls_source(broker, twin.engine, f"tlsbad-{port}-{host}-{len(tls)}", host, getattr(broker, port), **tls)) as reader:
        eventually(lambda: reader.state == RETRYING or reader.connections, what="a TLS failure")
        assert reader.connections == 0 and reason in reader.reason


def test_an_unreadable_ca_file_fails(broker, twin, tmp_path):
    with running(tls_source(broker, twin.engine, "tlsca", "localhost", broker.tls_port, ca=str(tmp_path / "none.pem"))) as reader:
        eventually(lambda: reader.state == FAILED, what="failed")
        assert reader.reason.startswith("tls: cannot load the CA, certificate or key:")


# ---------------------------------------------------------------------------- broker restarts and redelivery


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_the_broker_restarted_mid_stream(new_broker, twin, kill):
    broker = new_broker()
    topic = "restart/obs"
    # A backoff long enough for the test to publish while the source is away, before it reconnects.
    reader = source(twin.engine, "restart", broker.address, [topic], format="ndjson", retry={"initial_ms": 1500, "max_ms": 1500})
    times = [START_MS + 10 * i for i in range(9)]
    with running(reader):
        connected(reader)
        broker.publish(topic, *(ndjson([(i, times[i])]) for i in range(3)))
        accepted(reader, 3)
        # Stopped once the broker has the acknowledgements: a message stopped before would come
        # again (at least once), which this test is not about.
        eventually(lambda: broker.acknowledgements("cqels-restart") == 3, what="3 acknowledgements")
        broker.settle()
        broker.stop(kill=kill)
        eventually(lambda: reader.state == RETRYING, what="retrying")
        broker.start()
        # Published while the source is away: kept by the broker for its persistent session.
        broker.publish(topic, *(ndjson([(i, times[i])]) for i in range(3, 6)))
        assert reader.connections == 1, "the source came back before the test published"
        connected(reader, 2)
        broker.publish(topic, *(ndjson([(i, times[i])]) for i in range(6, 9)))
        accepted(reader, 9)
    for i, millis in enumerate(times):
        twin.twin.push(STREAM, ntriples(event(i)), time=millis)
    assert (reader.received, reader.accepted, dict(reader.rejected)) == (9, 9, {})
    assert twin.emitted["engine"] == twin.emitted["twin"]


@pytest.mark.parametrize("clean_session", [False, True], ids=["persistent", "clean"])
def test_retained_messages_come_again_only_with_a_new_subscription(new_broker, twin, clean_session):
    broker = new_broker()
    topic = "retained/obs"
    name = f"retained-{clean_session}"
    broker.publish(topic, ndjson([(0, START_MS)]), retain=True)
    reader = source(twin.engine, name, broker.address, [topic], format="ndjson", clean_session=clean_session,
                    retry={"initial_ms": 50, "max_ms": 50})
    with running(reader):
        connected(reader)
        accepted(reader, 1)
        eventually(lambda: broker.acknowledgements(f"cqels-{name}") == 1, what="the acknowledgement")
        broker.settle()
        broker.stop()
        eventually(lambda: reader.state == RETRYING, what="retrying")
        broker.start()
        connected(reader, 2)
        # Published after the reconnection: on one topic, it comes after any retained message sent again.
        broker.publish(topic, ndjson([(1, START_MS + 1)]))
        eventually(lambda: reader.last_event_time == START_MS + 1, what="the message after the reconnection")
    # A persistent session kept the subscription: not made again, no retained message again. A
    # clean one subscribed again, and the broker sent the retained message again (at the stream's
    # latest time, so taken again).
    again = 1 if clean_session else 0
    assert (reader.received, reader.accepted, dict(reader.rejected)) == (2 + again, 2 + again, {})


def test_a_message_the_engine_did_not_take_is_delivered_again(broker, twin):
    topic = "crash/obs"
    reader = source(twin.engine, "crash", broker.address, [topic], format="ndjson", retry={"initial_ms": 50, "max_ms": 50})
    real_push = twin.engine.push_batch
    crashed = threading.Event()

    def push_once_crashing(stream, events):
        if not crashed.is_set():
            crashed.set()
            raise RuntimeError("the engine fell over")
        return real_push(stream, events)

    twin.engine.push_batch = push_once_crashing
    with running(reader):
        connected(reader)
        broker.publish(topic, *(ndjson([(i, START_MS + i)]) for i in range(3)))
        accepted(reader, 3)
        assert reader.connections == 2  # the crash dropped the connection; the broker sent the message again
    for i in range(3):
        twin.twin.push(STREAM, ntriples(event(i)), time=START_MS + i)
    assert twin.emitted["engine"] == twin.emitted["twin"]
    assert reader.accepted == 3 and not reader.rejected


# A server whose engine takes a message and never returns: killed there, it has not acknowledged it.
KILLED_SERVER = """
import sys, threading, time
from cqels_endpoint.connectors.mqtt import MqttSource
from cqels_endpoint.connectors.specs import source_from_json
from cqels_endpoint.engine import Engine

engine = Engine()

def busy(stream, events):
    print("delivering", flush=True)
    threading.Event().wait()

engine.push_batch = busy
spec = source_from_json("killed", {"kind": "mqtt", "address": sys.argv[1], "topics": [sys.argv[2]], "stream": sys.argv[3],
                                   "format": "ndjson"})
reader = MqttSource(spec, engine, sys.argv[3])
reader.start()
while reader.state != "connected":
    time.sleep(0.01)
print("connected", flush=True)
threading.Event().wait()
"""


def test_a_server_killed_before_acknowledging_gets_the_message_again(broker, twin):
    topic = "killed/obs"
    server = subprocess.Popen([sys.executable, "-c", KILLED_SERVER, broker.address, topic, STREAM], stdout=subprocess.PIPE, text=True)
    watchdog = threading.Timer(20, server.kill)  # a child that never says what it awaits must not hang the test
    watchdog.start()
    try:
        assert server.stdout.readline() == "connected\n"
        broker.publish(topic, ndjson([(0, START_MS)]), ndjson([(1, START_MS + 1)]))
        assert server.stdout.readline() == "delivering\n"
    finally:
        watchdog.cancel()
        server.kill()
        server.wait()
        server.stdout.close()
    # The same source (its client id, its persistent session) in a server started again.
    with running(source(twin.engine, "killed", broker.address, [topic], format="ndjson")) as reader:
        accepted(reader, 2)
        broker.publish(topic, ndjson([(2, START_MS + 2)]))
        accepted(reader, 3)
    for i in range(3):
        twin.twin.push(STREAM, ntriples(event(i)), time=START_MS + i)
    assert (reader.received, reader.accepted, dict(reader.rejected)) == (3, 3, {})
    assert twin.emitted["engine"] == twin.emitted["twin"]


# ---------------------------------------------------------------------------- sinks


@contextmanager
def sink_engine(query: str):
    engine = Engine(clock=ManualClock(START_MS))
    registered = engine.register(query, name="q")
    subscriptions = Subscriptions(engine, replay=10, queue=10)
    oracle = []
    registered.subscribe(oracle.append)
    try:
        yield engine, subscriptions, oracle
    finally:
        subscriptions.close()
        engine.close()


def sink(subscriptions: Subscriptions, name: str, broker: Broker, topic: str, **fields) -> MqttSink:
    spec = sink_from_json(name, {"kind": "mqtt", "address": broker.address, "topic": topic, "query": "q", **fields})
    return MqttSink(spec, subscriptions)


@pytest.mark.parametrize("qos", [0, 1])
def test_a_sink_publishes_select_json(broker, qos):
    topic = f"results/select/{qos}"
    subscriber = broker.subscriber(topic, qos=qos)
    with sink_engine(QUERY) as (engine, subscriptions, oracle), running(sink(subscriptions, f"sel{qos}", broker, topic, qos=qos)) as writer:
        connected(writer)
        for i in range(5):
            engine.push(STREAM, ntriples(event(i)), time=START_MS + i)
        received = subscriber.take(5)
        eventually(lambda: writer.published == 5, what="5 published")
    subscriber.close()
    assert [json.loads(m.payload) for m in received] == [emission.to_json() for emission in oracle]
    assert writer.failed_publishes == 0 and writer.status()["dropped"] == 0


def test_a_sink_publishes_from_its_making_not_from_its_first_look(broker):
    """Emissions of its query between the sink's making and its thread's first look (here: before it
    starts, as a loaded machine may delay that look) are published once it is connected."""
    topic = "results/from-making"
    subscriber = broker.subscriber(topic)
    with sink_engine(QUERY) as (engine, subscriptions, oracle):
        writer = sink(subscriptions, "from-making", broker, topic)
        for i in range(3):
            engine.push(STREAM, ntriples(event(i)), time=START_MS + i)
        with running(writer):
            received = subscriber.take(3)
    subscriber.close()
    assert len(oracle) == 3
    assert [json.loads(m.payload) for m in received] == [emission.to_json() for emission in oracle]


def test_a_sink_publishes_a_burst(broker):
    # More emissions than may be in flight (MAX_IN_FLIGHT): the rest wait in the buffer, none lost.
    topic = "results/burst"
    count = 300
    subscriber = broker.subscriber(topic)
    with sink_engine(QUERY) as (engine, subscriptions, oracle), running(sink(subscriptions, "burst", broker, topic)) as writer:
        connected(writer)
        for i in range(count):
            engine.push(STREAM, ntriples(event(i)), time=START_MS + i)
        received = subscriber.take(count)
        eventually(lambda: writer.published == count, what=f"{count} published")
    subscriber.close()
    assert [json.loads(m.payload) for m in received] == [emission.to_json() for emission in oracle]
    assert (writer.failed_publishes, writer.status()["dropped"]) == (0, 0)


def test_a_sink_publishes_construct_ntriples(broker):
    topic = "results/construct"
    query = f"CONSTRUCT {{ ?s <{EX}seen> ?v }} WHERE {{ STREAM <{STREAM}> [RANGE 1h] {{ ?s <{EX}value> ?v }} }}"
    subscriber = broker.subscriber(topic)
    with sink_engine(query) as (engine, subscriptions, oracle), \
            running(sink(subscriptions, "construct", broker, topic, format="ntriples", retain=True)) as writer:
        connected(writer)
        for i in range(4):
            engine.push(STREAM, ntriples(event(i)), time=START_MS + i)
        received = subscriber.take(4)
        eventually(lambda: writer.published == 4, what="4 published")
    subscriber.close()
    assert [set(ox.parse(m.payload, format=ox.RdfFormat.N_TRIPLES)) for m in received] == \
        [{ox.Quad(*t) for t in emission.graph()} for emission in oracle]
    # retain: a subscriber coming later gets the last emission.
    late = broker.subscriber(topic)
    assert late.take(1)[0].payload == received[-1].payload
    late.close()


def test_a_sink_refuses_ntriples_for_a_select(broker):
    with sink_engine(QUERY) as (_, subscriptions, _oracle), \
            running(sink(subscriptions, "selnt", broker, "results/x", format="ntriples")) as writer:
        eventually(lambda: writer.state == FAILED, what="failed")
        assert writer.reason == "format ntriples publishes CONSTRUCT triples; query 'q' is a SELECT"


def test_a_sink_sends_its_unacknowledged_messages_again(new_broker):
    broker = new_broker()
    topic = "results/resent"
    subscriber_id = "test-resent"
    subscriber = broker.subscriber(topic, client_id=subscriber_id)
    with sink_engine(QUERY) as (engine, subscriptions, oracle), \
            running(sink(subscriptions, "resent", broker, topic, retry={"initial_ms": 50, "max_ms": 100})) as writer:
        connected(writer)
        broker.pause()  # the sink's messages reach a broker that never reads them: no PUBACK
        for i in range(3):
            engine.push(STREAM, ntriples(event(i)), time=START_MS + i)
        eventually(lambda: writer.status()["in_flight"] == 3, what="3 in flight")
        broker.stop(kill=True)
        eventually(lambda: writer.state == RETRYING, what="retrying")
        broker.start()
        received = subscriber.take(3)
        eventually(lambda: writer.published == 3 and writer.status()["in_flight"] == 0, what="3 acknowledged")
    subscriber.close()
    assert [json.loads(m.payload) for m in received] == [e.to_json() for e in oracle]
    assert writer.connections == 2 and writer.failed_publishes == 0


def test_a_sink_waits_for_its_query(broker):
    topic = "results/waiting"
    subscriber = broker.subscriber(topic)
    engine = Engine(clock=ManualClock(START_MS))
    subscriptions = Subscriptions(engine, replay=10, queue=10)
    try:
        with running(sink(subscriptions, "waiting", broker, topic)) as writer:
            eventually(lambda: writer.state == WAITING, what="waiting")
            assert writer.reason == "query 'q' is not registered"
            oracle = []
            engine.register(QUERY, name="q").subscribe(oracle.append)
            eventually(lambda: writer.state == CONNECTED, what="attached")
            engine.push(STREAM, ntriples(event(0)), time=START_MS)
            received = subscriber.take(1)
    finally:
        subscriber.close()
        subscriptions.close()
        engine.close()
    assert [json.loads(m.payload) for m in received] == [e.to_json() for e in oracle]


def test_a_sink_publishes_what_its_query_emitted_before_the_sink_looked_again(broker):
    """A query registered while its sink waits, emitting and unregistered at once, twice, in the
    test's thread: the sink thread, which looks for its query every 0.2 s, still publishes every
    emission of both registrations (it is subscribed at each registration, under the engine's lock)."""
    topic = "results/at-once"
    subscriber = broker.subscriber(topic)
    engine = Engine(clock=ManualClock(START_MS))
    subscriptions = Subscriptions(engine, replay=10, queue=10)
    oracle: list = []
    try:
        with running(sink(subscriptions, "at-once", broker, topic)) as writer:
            eventually(lambda: writer.state == WAITING, what="waiting")
            for registration in range(2):
                engine.register(QUERY, name="q").subscribe(oracle.append)
                for k in range(3):
                    engine.push(STREAM, ntriples(event(10 * registration + k)), time=START_MS + 10 * registration + k)
                engine.unregister("q")
            received = subscriber.take(len(oracle))
            assert writer.status()["dropped"] == 0
    finally:
        subscriber.close()
        subscriptions.close()
        engine.close()
    assert len(oracle) == 6
    assert [json.loads(m.payload) for m in received] == [e.to_json() for e in oracle]


@pytest.mark.parametrize("overflow", ["drop-oldest", "drop-newest"])
def test_a_sink_buffers_while_the_broker_is_away(new_broker, overflow):
    broker = new_broker()
    topic = "results/buffered"
    # A persistent subscriber: what the sink publishes while it reconnects after the restart is kept for it.
    subscriber_id = f"test-buffered-{overflow}"
    subscriber = broker.subscriber(topic, client_id=subscriber_id)
    with sink_engine(QUERY) as (engine, subscriptions, oracle), \
            running(sink(subscriptions, "buffered", broker, topic, buffer=3, overflow=overflow,
                         retry={"initial_ms": 50, "max_ms": 100})) as writer:
        connected(writer)
        engine.push(STREAM, ntriples(event(0)), time=START_MS)
        first = subscriber.take(1)
        # Both acknowledgements in (the sink's and the subscriber's), or the broker sends emission 0 again.
        eventually(lambda: writer.published == 1 and broker.acknowledgements(subscriber_id) == 1, what="emission 0 acknowledged")
        broker.settle()
        broker.stop()
        eventually(lambda: writer.state == RETRYING, what="retrying")
        for i in range(1, 8):
            engine.push(STREAM, ntriples(event(i)), time=START_MS + i)
        assert writer.status()["dropped"] == 4 and writer.status()["buffered"] == 3
        broker.start()
        later = subscriber.take(3)
        eventually(lambda: writer.published == 4, what="4 published")
    subscriber.close()
    kept = oracle[-3:] if overflow == "drop-oldest" else oracle[1:4]
    assert [json.loads(m.payload) for m in first + later] == [e.to_json() for e in [oracle[0], *kept]]
    assert writer.failed_publishes == 0



# ---------------------------------------------------------------------------- through the server


def test_a_server_reads_a_broker_and_publishes_its_results(broker, live_endpoint):
    """``PUT /sources`` and ``PUT /sinks`` of MQTT on a real server: its emissions, published back
    to the broker, are what the same query emits on an engine fed the same events directly."""
    name, topic_in, topic_out = "mqtt_served", "served/in", "served/out"
    stream = EX + "served"
    query = QUERY.replace(STREAM, stream)
    headers = {"Content-Type": "application/json"}
    subscriber = broker.subscriber(topic_out)
    assert live_endpoint.put(f"/queries/{name}", body=query, headers={"Content-Type": "application/sparql-query"}).status == 201
    try:
        sink_spec = {"kind": "mqtt", "address": broker.address, "topic": topic_out, "query": name}
        source_spec = {"kind": "mqtt", "address": broker.address, "topics": [topic_in], "stream": stream, "format": "ndjson"}
        assert live_endpoint.put(f"/sinks/{name}", body=json.dumps(sink_spec), headers=headers).status == 201
        assert live_endpoint.put(f"/sources/{name}", body=json.dumps(source_spec), headers=headers).status == 201
        eventually(lambda: all(live_endpoint.get(f"/{role}/{name}").json()["state"] == CONNECTED for role in ("sources", "sinks")),
                   what="source and sink connected")
        events = [(i, START_MS + 10 * i) for i in range(4)]
        broker.publish(topic_in, ndjson(events[:2]), ndjson(events[2:]))
        received = subscriber.take(4)
        listed = eventually(lambda: (s := live_endpoint.get(f"/sinks/{name}").json())["published"] == 4 and s, what="4 published")
        assert (listed["failed"], listed["dropped"]) == (0, 0)
        assert live_endpoint.get(f"/sources/{name}").json()["accepted"] == 4
    finally:
        subscriber.close()
        for path in (f"/sources/{name}", f"/sinks/{name}", f"/queries/{name}"):
            live_endpoint.delete(path)
    engine = Engine()
    oracle = []
    engine.register(query, name=name).subscribe(lambda emission: oracle.append(emission.to_json()))
    engine.push_batch(stream, [(ntriples(event(i)), millis) for i, millis in events])
    engine.close()
    assert [json.loads(m.payload) for m in received] == oracle
