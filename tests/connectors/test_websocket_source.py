"""The WebSocket client source against a real publisher on a real socket (``ws_publisher``): every
message one batch on the stream, what the engine emits for them the same as for the same events
pushed directly (the oracle: a second engine fed by ``Engine.push_batch``), malformed messages
counted and skipped, the publisher going away and coming back, authentication, stopping."""

from __future__ import annotations

import base64
import json

import pytest
from waiting import eventually
from ws_publisher import Publisher

from cqels_endpoint import Engine
from cqels_endpoint.connectors.base import CONNECTED, FAILED, RETRYING, STOPPED
from cqels_endpoint.connectors.events import EVENT_FORMATS, reader
from cqels_endpoint.connectors.specs import source_from_json
from cqels_endpoint.connectors.websocket import WebSocketSource

STREAM = "http://ex.org/s"
QUERY = f"SELECT ?s ?o WHERE {{ STREAM <{STREAM}> [RANGE 10ms] {{ ?s <http://ex.org/p> ?o }} }}"
FAST_RETRY = {"initial_ms": 20, "max_ms": 200}


def triple(number: int) -> str:
    return f'<http://ex.org/e{number}> <http://ex.org/p> "{number}"^^<http://www.w3.org/2001/XMLSchema#integer> .'


def source(engine: Engine, publisher: Publisher, **fields) -> WebSocketSource:
    spec = source_from_json("ws", {"kind": "websocket", "address": publisher.url, "stream": STREAM,
                                   "retry": FAST_RETRY, **fields})
    started = WebSocketSource(spec, engine, STREAM)
    started.start()
    return started


def emissions(engine: Engine) -> list:
    rows: list = []
    engine.register(QUERY, name="q", r2s="ISTREAM").subscribe(lambda e: rows.append((e.time, sorted(map(str, e.rows)))))
    return rows


@pytest.fixture
def publisher():
    running = Publisher().start()
    yield running
    running.stop()


@pytest.mark.parametrize("syntax", ["ntriples", "turtle", "ndjson", "trig", "jsonld"])
def test_each_message_is_one_batch_and_the_engine_emits_what_a_direct_push_gives(publisher, syntax) -> None:
    messages = [_message(syntax, number) for number in range(1, 6)]
    engine, oracle = Engine(), Engine()
    mine, theirs = emissions(engine), emissions(oracle)
    connector = source(engine, publisher, format=syntax, time="payload" if syntax in ("ndjson", "trig") else "arrival")
    try:
        publisher.wait_for_client()
        eventually(lambda: connector.state == CONNECTED, what="connected")
        engine.clock = oracle.clock = lambda: 1_000  # arrival times, in both engines
        for message in messages:
            publisher.send(message)
        eventually(lambda: connector.accepted == 5, what="five events accepted")
        for message in messages:
            oracle.push_batch(STREAM, reader(EVENT_FORMATS[syntax])(message.encode(), None, None).events)
        assert (connector.received, connector.rejected) == (5, {})
        assert mine == theirs and theirs
    finally:
        connector.stop()
        engine.close()
        oracle.close()


def _message(syntax: str, number: int) -> str:
    if syntax == "ndjson":
        return json.dumps({"time": 1_000 + number, "data": triple(number)})
    if syntax == "trig":
        return (f"<http://ex.org/g{number}> {{ {triple(number)} }}\n<http://ex.org/g{number}> "
                f'<http://www.w3.org/ns/prov#generatedAtTime> "1970-01-01T00:00:01.00{number}Z"'
                "^^<http://www.w3.org/2001/XMLSchema#dateTime> .")
    if syntax == "jsonld":
        return json.dumps({"@id": f"http://ex.org/e{number}", "http://ex.org/p": number})
    return triple(number)


def test_a_malformed_message_is_counted_and_the_next_one_is_taken(publisher, caplog) -> None:
    engine = Engine()
    connector = source(engine, publisher)
    try:
        publisher.wait_for_client()
        publisher.send("<http://ex.org/a> <http://ex.org/p> .")  # no object
        publisher.send(triple(1))
        eventually(lambda: connector.accepted == 1, what="the good message accepted")
        assert connector.rejected == {"malformed": 1} and connector.received == 2
        [stats] = engine.stream_stats(STREAM)
        assert (stats["events"], stats["malformed"]) == (1, 1)
        assert any(publisher.url in r.getMessage() and "malformed" in r.getMessage() for r in caplog.records)
    finally:
        connector.stop()
        engine.close()


def test_events_older_than_the_watermark_are_rejected_as_late_and_reordered_ones_counted(publisher) -> None:
    engine = Engine(lateness_ms=5)
    connector = source(engine, publisher, format="ndjson")
    try:
        publisher.wait_for_client()
        for time in (100, 97, 50, 101):  # 97: reordered within the lateness; 50: behind the watermark
            publisher.send(json.dumps({"time": time, "data": triple(time)}))
        eventually(lambda: connector.received == 4, what="four messages")
        eventually(lambda: connector.accepted == 3, what="three accepted")
        assert connector.rejected == {"late": 1}
        assert connector.late == 1
        assert connector.status()["lag_ms"] > 0
    finally:
        connector.stop()
        engine.close()


def test_the_time_can_come_from_a_predicate_of_the_event(publisher) -> None:
    engine = Engine()
    times: list = []
    engine.register(f"SELECT ?s WHERE {{ STREAM <{STREAM}> [NOW] {{ ?s ?p ?o }} }}", name="q").subscribe(
        lambda e: times.append(e.time))
    connector = source(engine, publisher, format="turtle", time="http://www.w3.org/ns/sosa/resultTime")
    try:
        publisher.wait_for_client()
        publisher.send('<http://ex.org/o1> <http://www.w3.org/ns/sosa/resultTime> '
                       '"1970-01-01T00:00:02Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .')
        publisher.send('<http://ex.org/o2> <http://www.w3.org/ns/sosa/resultTime> 3000 .')
        publisher.send("<http://ex.org/o3> <http://ex.org/p> 1 .")  # no time: malformed
        eventually(lambda: connector.received == 3, what="three messages")
        assert connector.accepted == 2 and connector.rejected == {"malformed": 1}
        assert connector.last_event_time == 3000
        engine.advance(3001)
        assert times[:2] == [2000, 3000]
    finally:
        connector.stop()
        engine.close()


def test_the_publisher_going_away_is_retried_and_what_it_sends_after_is_taken(publisher) -> None:
    engine = Engine()
    connector = source(engine, publisher)
    try:
        publisher.wait_for_client()
        publisher.send(triple(1))
        eventually(lambda: connector.accepted == 1, what="the first event")
        publisher.stop()
        status = eventually(lambda: (s := connector.status())["state"] == RETRYING and s, what="retrying")
        assert status["reason"] and status["attempts"] >= 1
        publisher.start()
        publisher.wait_for_client()
        eventually(lambda: connector.state == CONNECTED, what="connected again")
        publisher.send(triple(2))
        eventually(lambda: connector.accepted == 2, what="the event after the restart")
        assert connector.connections == 2 and connector.attempts == 0
    finally:
        connector.stop()
        engine.close()
    assert connector.state == STOPPED


def test_credentials_come_from_environment_variables(monkeypatch) -> None:
    expected = "Basic " + base64.b64encode(b"cqels:secret").decode()
    publisher = Publisher(check=lambda request: None if request.headers.get("Authorization") == expected else 401).start()
    engine = Engine()
    missing = source(engine, publisher, username="cqels", password_env="CQELS_TEST_WS_PASSWORD")
    try:
        failed = eventually(lambda: missing.state == FAILED and missing.status(), what="failed")
        assert "CQELS_TEST_WS_PASSWORD" in failed["reason"] and not publisher.requests
        monkeypatch.setenv("CQELS_TEST_WS_PASSWORD", "wrong")
        refused = source(engine, publisher, username="cqels", password_env="CQELS_TEST_WS_PASSWORD")
        eventually(lambda: refused.state == RETRYING and "401" in refused.reason, what="refused with 401")
        refused.stop()
        monkeypatch.setenv("CQELS_TEST_WS_PASSWORD", "secret")
        accepted = source(engine, publisher, username="cqels", password_env="CQELS_TEST_WS_PASSWORD")
        eventually(lambda: accepted.state == CONNECTED, what="connected with the right password")
        accepted.stop()
    finally:
        missing.stop()
        engine.close()
        publisher.stop()


def test_giving_up_after_the_declared_attempts() -> None:
    publisher = Publisher()  # never started: nothing listens on its port
    engine = Engine()
    connector = source(engine, publisher, retry={**FAST_RETRY, "attempts": 2})
    try:
        status = eventually(lambda: connector.state == FAILED and connector.status(), what="failed")
        assert "gave up after 2 attempts" in status["reason"] and status["attempts"] == 3
    finally:
        connector.stop()
        engine.close()
