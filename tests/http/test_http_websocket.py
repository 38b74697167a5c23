"""The WebSocket routes against a real server on loopback, with the ``websockets`` library's client
(``http/sockets.py``, ``asgi.py``): ``/streams/{name}/ws`` applies each message as one push, and
is checked against its twin, the same batches posted to ``POST /streams/{name}``; ``/queries/{name}/ws``
sends the JSON of the SSE events of the same query, checked against an SSE client reading along
and the recompute-mode oracle of ``test_http_results``.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import threading
import time
import urllib.parse

import pytest
from serve_process import serving
from test_http_results import (
    RFID,
    SEEN,
    WHERE_NAMED,
    Stream,
    as_query,
    canonical,
    detection,
    fresh,
    metric,
    oracle,
    subscribers,
    ten_emissions_past_a_replay_buffer_of_three,
    wait_until,
)
from test_http_results import clock as clock  # its fixtures: floorplan loaded, keep-alives every 0.5 s
from test_http_results import server as server
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidStatus
from websockets.sync.client import connect

from cqels_endpoint.http.asgi import EndpointApp
from cqels_endpoint.http.context import endpoint

EX = "http://example.org/"


def ws_url(server, path: str, **params: str) -> str:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    return "ws" + server.base_url.removeprefix("http") + path + query


def open_socket(server, path: str, **params: str):
    # No proxy from the environment between the tests and 127.0.0.1; frames uncompressed, as most clients send them.
    return connect(ws_url(server, path, **params), proxy=None, compression=None, open_timeout=10)


def refusal(server, path: str, headers: dict | None = None, **params: str):
    """The HTTP answer refusing a handshake: (status, headers, JSON body)."""
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url(server, path, **params), proxy=None, open_timeout=10, additional_headers=headers)
    response = refused.value.response
    assert response.headers["Content-Type"] == "application/json"
    return response.status_code, response.headers, json.loads(bytes(response.body))


def ndjson(*events: tuple[int, str]) -> str:
    return "\n".join(json.dumps({"time": time_ms, "data": data}) for time_ms, data in events)


def triple(i: int) -> str:
    return f'<{EX}s{i}> <{EX}p> "{i}" .'


def replies(sock, count: int) -> list[dict]:
    return [json.loads(sock.recv(timeout=30)) for _ in range(count)]


# --------------------------------------------------------------------------- /streams/{name}/ws


def test_each_message_is_answered_as_its_http_push_would_be(server):
    """Valid and refused messages on one socket: each reply is the answer the same body gets from
    POST /streams (the twin stream), a refused one leaves the socket open, and the streams' counts
    (accepted, late, malformed) match."""
    messages = [
        ndjson((1000, triple(1)), (2000, triple(2))),
        ndjson((3000, triple(3))) + '\n{"time": 3500, "data": "<broken"}',  # line 2: nothing applied
        ndjson((3000, triple(3))).encode(),  # binary
        ndjson((2500, triple(4))),  # older than the watermark: 409
        '{"time": 4000}',  # no data
        "",  # no events
        '{"time": 4000, "data": "<a> <b> <c> ."}\n\n' + ndjson((5000, triple(5))),  # relative IRIs: line 1
        ndjson((6000, triple(6)), (7000, triple(7))),
    ]
    over_socket, over_http = fresh("socket-"), fresh("http-")
    with open_socket(server, f"/streams/{over_socket}/ws") as sock:
        for message in messages:
            sock.send(message)
        got = replies(sock, len(messages))
    assert [reply.pop("seq") for reply in got] == list(range(1, len(messages) + 1))
    for reply, message in zip(got, messages):
        body = message if isinstance(message, bytes) else message.encode()
        answer = server.post(f"/streams/{over_http}", body=body, headers={"Content-Type": "application/x-ndjson"})
        if answer.status == 200:
            assert reply == {**answer.json(), "stream": f"urn:cqels:stream:{over_socket}"}
        else:
            error = answer.error(answer.status)
            error["error"] = error["error"].replace(over_http, over_socket)  # a late event's names its stream
            assert reply == {"status": answer.status, **error}
    assert [reply.get("status", 200) for reply in got] == [200, 400, 200, 409, 400, 400, 400, 200]
    assert got[1]["line"] == 2 and got[3]["line"] == 1

    listed = {entry["stream"]: entry for entry in server.get("/streams").json()["streams"]}
    by_socket, by_http = listed[f"urn:cqels:stream:{over_socket}"], listed[f"urn:cqels:stream:{over_http}"]
    assert by_socket["accepted"] == 5 and by_socket["rejected"] == {"late": 1, "future": 0, "malformed": 4}
    for key in ("accepted", "late", "rejected", "latest", "watermark", "buffered"):
        assert by_socket[key] == by_http[key], key


def trig(i: int) -> str:
    """Two timestamped graphs, later ones for a larger ``i``."""
    return f"""@prefix ex: <{EX}> . @prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:g1 {{ ex:a ex:p {i} }} ex:g2 {{ ex:b ex:p {i} }}
ex:g1 prov:generatedAtTime "2026-01-01T00:00:{2 * i:02}Z"^^xsd:dateTime .
ex:g2 prov:generatedAtTime "2026-01-01T00:00:{2 * i + 1:02}Z"^^xsd:dateTime ."""


@pytest.mark.parametrize(("fmt", "message", "accepted"), [
    ("turtle", lambda i: f"@prefix ex: <{EX}> . ex:a ex:p {i}, 2 .", 1),
    ("ntriples", lambda i: f"{triple(i)}\n{triple(i + 1)}\n", 1),
    ("trig", trig, 2),
    ("jsonld", lambda i: json.dumps({"@id": f"{EX}a", f"{EX}p": i}), 1),
], ids=["turtle", "ntriples", "trig", "jsonld"])
def test_format_chooses_the_syntax_of_every_message(server, fmt, message, accepted):
    name = fresh("formats-")
    with open_socket(server, f"/streams/{name}/ws", format=fmt) as sock:
        sock.send(message(1))
        sock.send(message(2).encode())  # binary
        assert [reply["accepted"] for reply in replies(sock, 2)] == [accepted, accepted]


def test_a_bad_format_or_stream_name_refuses_the_handshake(server):
    status, _, body = refusal(server, "/streams/s/ws", format="csv")
    assert status == 400 and body["error"] == "format=csv: the messages' syntax is one of " \
        "turtle, ntriples, jsonld, rdfxml, n3, trig, ndjson"
    status, _, body = refusal(server, "/streams/a%3Cb/ws")  # <
    assert status == 400 and "not an absolute IRI" in body["error"]


def test_messages_are_applied_in_the_order_sent(server):
    """Sent back to back, replies unread: with no lateness allowed, any reordering would make a
    later event late (409)."""
    name = fresh("ordered-")
    times = [1_000 + 10 * i for i in range(60)]
    with open_socket(server, f"/streams/{name}/ws") as sock:
        for i, time_ms in enumerate(times):
            sock.send(ndjson((time_ms, triple(i))))
        got = replies(sock, len(times))
    assert [(reply["seq"], reply["latest"]) for reply in got] == list(enumerate(times, 1))
    assert all(reply["accepted"] == 1 for reply in got)


def test_a_message_over_the_body_limit_is_refused_and_the_socket_goes_on(endpoint_factory):
    server = endpoint_factory(cache_engine="local", max_body_mb=0.5)
    with open_socket(server, "/streams/big/ws") as sock:
        sock.send(ndjson(*[(1000 + i, triple(i)) for i in range(10_000)]))  # 0.6 MiB
        sock.send(ndjson((5000, triple(0))))
        too_large, accepted = replies(sock, 2)
    assert too_large == {"seq": 1, "status": 413, "error": "message larger than 0.5 MiB; raise --max-body-mb or send less",
                         "line": None, "column": None}
    assert accepted["seq"] == 2 and accepted["accepted"] == 1


def test_the_handshake_checks_write_access(endpoint_factory):
    server = endpoint_factory(cache_engine="local", auth_token="s3cret")
    status, headers, body = refusal(server, "/streams/guarded/ws")
    assert status == 401 and headers["WWW-Authenticate"] == 'Bearer realm="cqels"'
    assert body["error"] == "this server requires 'Authorization: Bearer <token>' for writes"
    status, headers, _ = refusal(server, "/streams/guarded/ws", access_token="wrong")
    assert status == 401 and headers["WWW-Authenticate"] == 'Bearer realm="cqels", error="invalid_token"'
    status, _, _ = refusal(server, "/streams/guarded/ws", {"Authorization": "Bearer wrong"})
    assert status == 401
    by_header = connect(ws_url(server, "/streams/guarded/ws"), proxy=None, additional_headers={"Authorization": "Bearer s3cret"})
    # Browsers cannot set headers on a WebSocket: the token as a parameter.
    by_param = open_socket(server, "/streams/guarded/ws", access_token="s3cret")
    for i, sock in enumerate((by_header, by_param)):
        with sock:
            sock.send(ndjson((1000 + i, triple(i))))
            assert replies(sock, 1)[0]["accepted"] == 1

    read_only = endpoint_factory(cache_engine="local", read_only=True)
    status, _, body = refusal(read_only, "/streams/guarded/ws")
    assert status == 403 and body["error"].startswith("this server is read-only (started with --read-only): "
                                                      "WebSocket /streams/guarded/ws would write")


def test_other_paths_refuse_the_handshake(server):
    status, _, body = refusal(server, "/streams")
    assert status == 404 and body["error"].startswith("no WebSocket route at /streams:")
    assert server.get("/health").status == 200  # the server goes on answering plain HTTP


# --------------------------------------------------------------------------- /queries/{name}/ws


def messages(sock, count: int) -> list[dict]:
    return [json.loads(sock.recv(timeout=30)) for _ in range(count)]


@pytest.mark.parametrize(("text", "r2s", "params"), [
    (WHERE_NAMED, "RSTREAM", {}),
    (SEEN, None, {}),
    (SEEN, None, {"format": "turtle"}),
], ids=["select", "construct-ntriples", "construct-turtle"])
def test_each_emission_is_the_json_of_its_sse_event(server, clock, text, r2s, params):
    engine = endpoint(server.app).engine
    name = fresh()
    engine.register(text, name=name, r2s=r2s)
    expected = oracle(engine, text, name=f"{name}-oracle", r2s=r2s)
    sse = Stream(server.base_url, name, params=params)
    try:
        sse.greeting()
        with open_socket(server, f"/queries/{name}/ws", **params) as sock:
            assert messages(sock, 1) == [{"subscribed": name, "last": 0, "message": f"subscribed to query {name}; last emission 0"}]
            for i in range(8):
                engine.push(RFID, detection(i), time=next(clock))
            assert len(expected) >= 3
            events = sse.events(len(expected))
            got = messages(sock, len(expected))
        assert [message.pop("id") for message in got] == [seq for seq, _ in events]
        assert got == [data for _, data in events]
        if not params:  # the recompute oracle writes N-Triples
            assert [canonical(message) for message in got] == as_query(expected, name)
    finally:
        sse.close()


def test_last_event_id_resumes_from_the_replay_buffer(endpoint_factory):
    server, engine, seen = ten_emissions_past_a_replay_buffer_of_three(endpoint_factory)
    expected = as_query(seen, "q")
    with open_socket(server, "/queries/q/ws", **{"last-event-id": "2"}) as lost, \
            open_socket(server, "/queries/q/ws", **{"last-event-id": "8"}) as kept:
        first = messages(lost, 1)[0]
        assert first == {"subscribed": "q", "last": 10, "gap": {"first": 3, "last": 7}, "message":
                         "subscribed to query q; last emission 10\nemissions 3..7 are no longer in the replay buffer "
                         "(it keeps the last 3); resuming from 8"}
        replayed = messages(lost, 3)
        assert [message.pop("id") for message in replayed] == [8, 9, 10]
        assert [canonical(message) for message in replayed] == expected[7:]
        assert "gap" not in messages(kept, 1)[0]
        assert [message["id"] for message in messages(kept, 2)] == [9, 10]
        engine.push(RFID, detection(10), time=6000)  # then the live ones, without a seam
        assert messages(lost, 1)[0]["id"] == messages(kept, 1)[0]["id"] == 11


def test_bad_parameters_refuse_the_handshake(server):
    engine = endpoint(server.app).engine
    name = fresh()
    engine.register(WHERE_NAMED, name=name)
    status, _, body = refusal(server, "/queries/nothing-here/ws")
    assert status == 404 and "nothing-here" in body["error"]
    queue = server.config.subscriber_queue
    for params, message in [
        ({"buffer": "0"}, f"buffer=0: give a number of emissions from 1 to {queue} (the server's --subscriber-queue)"),
        ({"buffer": str(queue + 1)}, f"buffer={queue + 1}: give a number of emissions from 1 to {queue}"),
        ({"overflow": "drop-middle"}, "overflow=drop-middle: a full buffer does one of disconnect, drop-oldest, drop-newest"),
        ({"format": "turtle"}, "format=turtle: ?format= chooses the syntax of CONSTRUCT triples"),
        ({"last-event-id": "seven"}, "last-event-id must be the id of an event of this stream"),
    ]:
        status, _, body = refusal(server, f"/queries/{name}/ws", **params)
        assert status == 400 and body["error"].startswith(message), body
    assert subscribers(server, name) == 0


def test_unregistering_closes_the_socket(server, clock):
    engine = endpoint(server.app).engine
    name = fresh()
    engine.register(WHERE_NAMED, name=name)
    with open_socket(server, f"/queries/{name}/ws") as sock:
        messages(sock, 1)
        sock.send("what a client sends is ignored")
        engine.push(RFID, detection(0), time=next(clock))
        assert messages(sock, 1)[0]["id"] == 1
        engine.unregister(name)
        with pytest.raises(ConnectionClosedOK):
            sock.recv(timeout=30)
        assert (sock.close_code, sock.close_reason) == (1000, f"query '{name}' was unregistered")
    assert metric(server, "cqels_query_subscriber_disconnects_total", {"query": name, "reason": "unregistered"}) == 1


def test_a_failed_query_says_why_then_closes(endpoint_factory):
    server = endpoint_factory(cache_engine="local", max_window_triples=2)
    engine = endpoint(server.app).engine
    engine.register(f"SELECT ?s WHERE {{ STREAM <{RFID}> [RANGE 10s] {{ ?s ?p ?o }} }}", name="bounded")
    with open_socket(server, "/queries/bounded/ws") as sock:
        messages(sock, 1)
        for i in range(3):
            engine.push(RFID, triple(i), time=1000 + i)
        emitted = []
        while "error" not in (message := json.loads(sock.recv(timeout=30))):
            emitted.append(message["id"])
        failure = engine.failed["bounded"].failure
        assert message == {"query": "bounded", "error": f"query 'bounded' failed: {failure}"}
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=30)
        assert sock.close_code == 1011
    assert emitted == [1, 2]


# --------------------------------------------------------------------------- a consumer that does not read


def stalled_socket(server, path: str, **params: str):
    """A consumer that takes nothing in: a tiny receive buffer, and a client that stops reading its
    socket as soon as one message waits (so the server's writes soon block)."""
    parts = urllib.parse.urlsplit(server.base_url)
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect((parts.hostname, parts.port))
    return connect(ws_url(server, path, **params), sock=raw, proxy=None, compression=None, max_queue=1,
                   max_size=None, open_timeout=10)


CHATTY = f"SELECT ?who ?what WHERE {{ STREAM <{RFID}> [NOW] {{ ?who <{EX}said> ?what }} }}"
# 2 MB per emission: more than the socket buffers hold, so the server's writes to a client that
# does not read are stuck by the second message, whatever the machine's load.
PAYLOAD = "x" * 2_000_000


def say(engine, i: int, times) -> float:
    """Push one emission; how long the push took."""
    started = time.perf_counter()
    engine.push(RFID, f'<{EX}p{i}> <{EX}said> "{PAYLOAD}{i}" .', time=next(times))
    return time.perf_counter() - started


@pytest.mark.parametrize("overflow", ["drop-oldest", "drop-newest"])
def test_a_consumer_that_does_not_read_misses_emissions_by_its_policy(endpoint_factory, overflow):
    server = endpoint_factory(cache_engine="local")
    engine = endpoint(server.app).engine
    engine.register(CHATTY, name="chatty")
    times = iter(range(1, 10**9))
    count = 20
    with stalled_socket(server, "/queries/chatty/ws", buffer="2", overflow=overflow) as sock:
        messages(sock, 1)
        pushes = [say(engine, i, times) for i in range(count)]
        assert max(pushes) < 1.0  # the engine never waits for the client
        got = []
        with pytest.raises(TimeoutError):  # read until a second of silence: the queue is drained
            while True:
                got.append(json.loads(sock.recv(timeout=1.0)))
        say(engine, count, times)  # one more: it says how many were discarded before it
        got.append(json.loads(sock.recv(timeout=30)))
        assert subscribers(server, "chatty") == 1  # still subscribed
    ids = [message["id"] for message in got]
    skipped = [message.get("skipped", 0) for message in got]
    assert ids == sorted(ids) and ids[-1] == count + 1
    assert skipped == [seq - before - 1 for before, seq in zip([0, *ids], ids)]
    assert all(message["results"]["bindings"][0]["who"]["value"] == f"{EX}p{seq - 1}" for seq, message in zip(ids, got))
    assert sum(skipped) > 0
    if overflow == "drop-oldest":
        assert ids[-2] == count  # the newest emission stayed in the buffer
    else:
        assert ids[-2] < count and skipped[-1] == count - ids[-2]  # the newest ones were not queued
    assert metric(server, "cqels_query_subscriber_dropped_emissions_total", {"query": "chatty", "policy": overflow}) == sum(skipped)
    assert metric(server, "cqels_query_subscriber_disconnects_total", {"query": "chatty", "reason": "slow"}) is None


def test_a_disconnect_consumer_that_falls_behind_is_closed_with_1008(server, clock):
    """Fifty emissions delivered together (one batch, under the engine's lock) overflow a buffer of
    1 before the server's loop can take them all: the socket is closed, saying why."""
    engine = endpoint(server.app).engine
    name = fresh()
    engine.register(WHERE_NAMED, name=name)
    with open_socket(server, f"/queries/{name}/ws", buffer="1") as sock:
        messages(sock, 1)
        engine.push_batch(RFID, [(detection(i), next(clock)) for i in range(50)])
        ids = []
        with pytest.raises(ConnectionClosed):
            while True:
                ids.append(json.loads(sock.recv(timeout=30))["id"])
    assert sock.close_code == 1008
    behind = re.fullmatch(r"more than 1 emissions behind at emission (\d+); "
                          r"reconnect with Last-Event-ID to resume from the replay buffer", sock.close_reason)
    # What the loop took before the verdict, then nothing from the emission it fell behind at on.
    assert behind is not None and ids == list(range(1, len(ids) + 1)) and int(behind.group(1)) > len(ids), sock.close_reason
    assert metric(server, "cqels_query_subscriber_disconnects_total", {"query": name, "reason": "slow"}) == 1


def test_a_disconnect_consumer_stuck_in_a_write_is_cut_off(endpoint_factory):
    """A client that never reads past its handshake: the server's writes to it block, the hub
    drops it, and the server drops the connection under the stuck write."""
    server = endpoint_factory(cache_engine="local")
    engine = endpoint(server.app).engine
    engine.register(CHATTY, name="chatty")
    parts = urllib.parse.urlsplit(server.base_url)
    # Its buffers fill with a few emissions; read at full speed once the server gave up on it.
    raw = socket.create_connection((parts.hostname, parts.port), timeout=15)
    raw.sendall(f"GET /queries/chatty/ws?buffer=2 HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                .encode())
    try:
        assert raw.recv(12) == b"HTTP/1.1 101"
        wait_until(lambda: subscribers(server, "chatty") == 1)
        times = iter(range(1, 10**9))
        pushes = [say(engine, i, times) for i in range(20)]
        assert max(pushes) < 1.0  # the engine never waits for the client
        assert metric(server, "cqels_query_subscriber_disconnects_total", {"query": "chatty", "reason": "slow"}) == 1
        assert subscribers(server, "chatty") == 0
        # What the server had sent, then the end, within the grace the server gives a dropped
        # subscriber (2 s; a reset when it dropped output it could not deliver). A socket timeout
        # here fails the test.
        dropped = time.monotonic()
        try:
            while raw.recv(1 << 20):
                pass
        except ConnectionResetError:
            pass
        assert time.monotonic() - dropped < 5
    finally:
        raw.close()


# --------------------------------------------------------------------------- the server stopping


def test_stopping_the_server_closes_the_sockets_with_1001(tmp_path):
    # The local cache engine: no Spark session starting in the background while the server stops.
    with serving("--data-dir", str(tmp_path / "data"), "--cache-engine", "local") as server:
        status, body = server.request("PUT", "/queries/q", b"SELECT ?s WHERE { STREAM <urn:cqels:stream:s> [NOW] { ?s ?p ?o } }",
                                      {"Content-Type": "application/sparql-query"})
        assert status == 201, body
        with open_socket(server, "/queries/q/ws") as consumer, open_socket(server, "/streams/s/ws") as producer:
            closed = stop_reading(server, consumer, producer)
    assert closed == {"consumer": (1001, "the server is stopping"), "producer": (1001, "the server is stopping")}
    assert "Traceback" not in "".join(server.output)


def stop_reading(server, consumer, producer) -> dict[str, tuple]:
    """SIGTERM to ``server`` while both sockets are read: how each was closed."""
    closed: dict[str, tuple] = {}

    def read(name: str, sock) -> None:
        try:
            while True:
                sock.recv(timeout=30)
        except ConnectionClosed:
            closed[name] = (sock.close_code, sock.close_reason)

    readers = [threading.Thread(target=read, args=item) for item in (("consumer", consumer), ("producer", producer))]
    for reader in readers:
        reader.start()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0, "".join(server.output)
    for reader in readers:
        reader.join(10)
    return closed


def test_a_message_over_what_the_server_reads_ends_the_socket(endpoint_factory):
    """The server reads a message whole up to the larger of 16 MiB and the body limit: past the
    limit a reply refuses it (above), past what it reads the server ends the socket (a 1009 close
    frame, which the client may not get to read: the server stops reading its message)."""
    server = endpoint_factory(cache_engine="local", max_body_mb=0.5)
    with open_socket(server, "/streams/huge/ws") as sock:
        sock.send(ndjson((1000, triple(0))))
        assert replies(sock, 1)[0]["accepted"] == 1
        with pytest.raises((ConnectionClosed, ConnectionResetError, BrokenPipeError)):
            sock.send(b"x" * (16 * 1024 * 1024 + 1))
            sock.recv(timeout=30)
    with open_socket(server, "/streams/huge/ws") as sock:  # the server goes on
        sock.send(ndjson((2000, triple(1))))
        assert replies(sock, 1)[0]["accepted"] == 1


def test_a_body_limit_over_16_mib_reads_messages_up_to_it(endpoint_factory):
    server = endpoint_factory(cache_engine="local", max_body_mb=20)
    with open_socket(server, "/streams/large/ws") as sock:
        sock.send(b"x" * (17 * 1024 * 1024))  # read whole, and refused as what it is
        assert replies(sock, 1)[0] == {"seq": 1, "status": 400, "error": "line 1 is not JSON: Expecting value: line 1 column 1 (char 0)",
                                       "line": 1, "column": 1}


def test_a_stream_named_by_its_iri(server):
    iri = f"{EX}streams/{fresh('by-iri-')}"
    with open_socket(server, f"/streams/{urllib.parse.quote(iri, safe='')}/ws") as sock:
        sock.send(ndjson((1000, triple(0))))
        assert replies(sock, 1)[0] == {"seq": 1, "stream": iri, "accepted": 1, "latest": 1000, "watermark": 1000}
    assert iri in [entry["stream"] for entry in server.get("/streams").json()["streams"]]


def test_a_server_without_the_http_response_extension_gets_a_1008_close(server):
    """An ASGI server that cannot answer a handshake with an HTTP response (no
    ``websocket.http.response`` extension) is asked to close it with 1008, the reason saying why."""
    app = EndpointApp(server.app, threads=1)
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "websocket.connect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/queries/nothing-here/ws", "query_string": b"", "headers": [], "extensions": {}}
    try:
        asyncio.run(app(scope, receive, send))
    finally:
        app.close()
    [close] = sent
    reason = "404: no continuous query is registered as 'nothing-here'; register it with PUT /queries/{name}"
    assert close == {"type": "websocket.close", "code": 1008, "reason": reason}
