"""``cqels serve --demo``'s continuous side (issue 31, deliverable 6): the demo stream registers the
query ``demo`` and feeds it looping events at their arrival time; the query emits; the first push
of anyone else's, on any stream and whichever way it came, stops it for good; ``--demo-stream off``
never starts it. (Its prompt stop with the server: tests/http/test_http_shutdown.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from serve_process import Server, environment, serving

from cqels_endpoint.engine import Engine
from cqels_endpoint.engine.registry import QueryRegistry
from cqels_endpoint.http.demo import DEMO_QUERY_NAME, DEMO_STREAM, DemoStream, demo_event, load_demo
from cqels_endpoint.oxigraph.requests import open_store

FAST_S = 0.02  # the in-process demo's interval: 50 events a second
NAMES = {"alice": "Alice Smith", "bob": "Bob Jones", "carol": "Carol White", "dave": "Dave Brown", "erin": "Erin Green"}
ROOMS = {"lobby": "Lobby", "mainHall": "Main hall", "corridor": "Corridor", "room101": "Room 101",
         "room102": "Room 102", "kitchen": "Kitchen"}


def wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    give_up = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < give_up, "timed out"
        time.sleep(0.01)


@pytest.fixture
def demo():
    """A demo stream over the demo data, its engine and its registry, stopped and closed after."""
    with open_store() as store:
        load_demo(store)
        engine = Engine(store)
        registry = QueryRegistry(engine, None)
        stream = DemoStream(registry, interval_s=FAST_S)
        try:
            yield stream
        finally:
            stream.stop()
            engine.close()


def demo_events(engine: Engine) -> int:
    return sum(s["events"] for s in engine.stream_stats(DEMO_STREAM))


def test_the_demo_registers_its_query_and_its_events_make_it_emit(demo: DemoStream) -> None:
    rows: list[tuple[str, str]] = []
    demo.start()
    wait_for(lambda: DEMO_QUERY_NAME in demo.registry.stored)
    demo.registry.get(DEMO_QUERY_NAME).query.subscribe(
        lambda emission: rows.extend((b["name"]["value"], b["room"]["value"]) for b in emission.to_sparql_json()["results"]["bindings"])
    )
    wait_for(lambda: len(rows) >= 8)
    # Each row is a person the demo pushed, in the room its event named (the floor plan's and the
    # people's names joined in): the walk of demo_event, looping.
    pushed = {_name_and_room(demo_event(n)) for n in range(demo.pushed)}
    assert set(rows) <= pushed
    assert len(set(rows)) > 1
    assert demo.running
    demo.stop()
    assert not demo.running
    after = demo_events(demo.engine)
    time.sleep(10 * FAST_S)
    assert demo_events(demo.engine) == after == demo.pushed  # nothing pushed once stop() returned


@pytest.mark.parametrize("stream", [DEMO_STREAM, "http://example.org/mine"], ids=["its-own-stream", "another-stream"])
def test_a_push_of_anyone_else_stops_the_demo_stream(demo: DemoStream, stream: str) -> None:
    demo.start()
    wait_for(lambda: demo.pushed >= 3)
    assert demo.running
    demo.engine.push(stream, "<http://example.org/s> <http://example.org/p> <http://example.org/o> .")
    wait_for(lambda: not demo.running, timeout_s=2.0)
    pushed = demo.pushed
    time.sleep(10 * FAST_S)
    assert demo.pushed == pushed
    stats = {s["stream"]: s["events"] for s in demo.engine.stream_stats()}
    assert stats[DEMO_STREAM] == pushed + (stream == DEMO_STREAM)
    assert stats[stream] >= 1


def test_a_refused_push_stops_it_too(demo: DemoStream) -> None:
    demo.start()
    wait_for(lambda: demo.pushed >= 2)
    with pytest.raises(Exception, match="late"):  # older than the demo stream's watermark
        demo.engine.push(DEMO_STREAM, "<http://example.org/s> <http://example.org/p> 1 .", time=0)
    wait_for(lambda: not demo.running, timeout_s=2.0)


def test_a_query_stored_as_demo_is_kept(demo: DemoStream) -> None:
    mine = "SELECT ?s WHERE { STREAM <http://deri.org/streams/rfid-demo> [RANGE 1s] { ?s ?p ?o } }"
    demo.registry.put(DEMO_QUERY_NAME, mine, None, "incremental")
    demo.start()
    wait_for(lambda: demo.pushed >= 2)
    assert demo.registry.get(DEMO_QUERY_NAME).text == mine


def _name_and_room(event: str) -> tuple[str, str]:
    person, _, room = event.removesuffix(" .").split()
    return NAMES[person.strip("<>").rsplit("/", 1)[1]], ROOMS[room.strip("<>").rsplit("/", 1)[1]]


# ---------------------------------------------------------------- cqels serve --demo, as a user runs it


def streams(server: Server) -> dict[str, int]:
    status, body = server.request("GET", "/streams")
    assert status == 200
    return {s["stream"]: s["accepted"] for s in json.loads(body)["streams"]}


@pytest.mark.parametrize("how", ["POST /streams", "cqels push"])
def test_serve_demo_feeds_the_demo_query_until_a_push_of_your_own(tmp_path, how) -> None:
    with serving("--memory", "--demo", cwd=tmp_path) as server:
        wait_for(lambda: any("the demo stream feeds the continuous query 'demo'" in line for line in server.output))
        wait_for(lambda: streams(server).get(DEMO_STREAM, 0) >= 2)
        status, body = server.request("GET", f"/queries/{DEMO_QUERY_NAME}")
        assert status == 200
        assert json.loads(body)["emissions"] >= 1
        event = b"<http://example.org/a> <http://deri.org/floorplan/detectedAt> <http://deri.org/floorplan/lobby> ."
        if how == "POST /streams":
            status, _ = server.request("POST", "/streams/rfid", event, {"Content-Type": "text/turtle"})
            assert status == 200
        else:
            (tmp_path / "mine.nt").write_bytes(event)
            done = subprocess.run(
                [sys.executable, "-m", "cqels_endpoint.cli", "push", "rfid", str(tmp_path / "mine.nt"), "--url", server.base_url],
                capture_output=True, text=True, env=environment(), timeout=60,
            )
            assert done.returncode == 0, done.stderr
        wait_for(lambda: any("the demo stream on" in line and "stops" in line for line in server.output))
        fed = streams(server)[DEMO_STREAM]
        time.sleep(1.5)  # three of its intervals
        assert streams(server) == {DEMO_STREAM: fed, "urn:cqels:stream:rfid": 1}
        assert server.stop() == 0


def test_demo_stream_off_registers_and_pushes_nothing(tmp_path) -> None:
    with serving("--memory", "--demo", "--demo-stream", "off", cwd=tmp_path) as server:
        time.sleep(1.5)  # three intervals of a demo stream, had it started
        assert streams(server) == {}
        assert json.loads(server.request("GET", "/queries")[1])["queries"] == []
        assert server.query('ASK { ?p <http://xmlns.com/foaf/0.1/name> "Alice Smith" }')["boolean"] is True
        assert server.stop() == 0
    assert not any("demo stream" in line for line in server.output)


def test_a_bad_demo_stream_value_is_refused(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cqels_endpoint.cli", "serve", "--memory", "--demo", "--port", "0"],
        capture_output=True, text=True, env=environment(CQELS_DEMO_STREAM="maybe"), timeout=60, cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "--demo-stream 'maybe': use on or off" in done.stderr
