"""``/sources`` and ``/sinks`` over HTTP (``http/connectors.py``) on real servers, with a real
WebSocket publisher (``ws_publisher``) behind the sources: declaring, listing with state and
counters, replacing, deleting, refusals naming the field, write access, and the connectors kept
across a restart (``connectors.json``) and started by ``cqels serve --source``."""

from __future__ import annotations

import json

import pytest
from serve_process import serving
from waiting import eventually
from ws_publisher import Publisher

STREAM = "http://ex.org/s"
FAST_RETRY = {"initial_ms": 20, "max_ms": 200}
TRIPLE = '<http://ex.org/a> <http://ex.org/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .'


@pytest.fixture
def publisher():
    running = Publisher().start()
    yield running
    running.stop()


def put(endpoint, path: str, declaration: dict, **headers):
    return endpoint.put(path, body=json.dumps(declaration), headers={"Content-Type": "application/json", **headers})


def declaration(publisher: Publisher, **fields) -> dict:
    return {"kind": "websocket", "address": publisher.url, "stream": STREAM, "retry": FAST_RETRY, **fields}


def test_a_source_is_declared_listed_counted_replaced_and_deleted(live_endpoint, publisher) -> None:
    created = put(live_endpoint, "/sources/feed", declaration(publisher))
    assert created.status == 201 and created.headers["Location"] == "/sources/feed"
    assert created.json()["spec"]["address"] == publisher.url
    publisher.wait_for_client()
    publisher.send(TRIPLE)
    publisher.send("not N-Triples")
    listed = eventually(lambda: next((s for s in live_endpoint.get("/sources").json()["sources"]
                                      if s["name"] == "feed" and s["received"] == 2), None), what="two messages")
    assert (listed["state"], listed["stream"], listed["accepted"], listed["rejected"]) == ("connected", STREAM, 1, {"malformed": 1})
    [stream] = [s for s in live_endpoint.get("/streams").json()["streams"] if s["stream"] == STREAM]
    assert stream["rejected"]["malformed"] >= 1
    metrics = live_endpoint.get("/metrics").text
    for line in ('cqels_source_messages_total{source="feed"} 2', 'cqels_source_events_total{source="feed"} 1',
                 'cqels_source_rejected_total{source="feed",reason="malformed"} 1',
                 'cqels_connector_state{role="source",name="feed",state="connected"} 1'):
        assert line in metrics.splitlines(), line
    # Replaced: the old connection closes, the new one opens, its counters start again.
    replaced = put(live_endpoint, "/sources/feed", declaration(publisher, format="turtle"))
    assert replaced.status == 200 and replaced.json()["received"] == 0 and replaced.json()["spec"]["format"] == "turtle"
    assert live_endpoint.delete("/sources/feed").status == 204
    assert live_endpoint.get("/sources/feed").error(404)["error"] == "no source is named 'feed'; GET /sources lists them"
    assert live_endpoint.delete("/sources/feed").status == 404
    eventually(lambda: not publisher.clients, what="the connection closed")


@pytest.mark.parametrize(("body", "message"), [
    ({"kind": "kafka", "address": "x"}, '"kind": \'kafka\''),
    ({"kind": "websocket", "address": "http://h/", "stream": "s"}, '"address"'),
    ({"kind": "websocket", "address": "ws://h/"}, '"stream"'),
    ({"kind": "websocket", "address": "ws://h/", "stream": "s", "format": "csv"}, '"format": \'csv\''),
    ({"kind": "websocket", "address": "ws://h/", "stream": "s", "retry": {"initial_ms": -1}}, '"retry.initial_ms"'),
    ({"kind": "websocket", "address": "ws://h/", "stream": "s", "tls": {"ca": "x"}}, '"tls" needs a secure address'),
    ({"kind": "websocket", "address": "ws://h/", "stream": "a b"}, '"stream"'),
    ({"kind": "websocket", "address": "ws://h/", "stream": "s", "time": "later"}, '"time"'),
    ({"kind": "websocket", "address": "ws://h/", "stream": "s", "topic": "t"}, 'unknown field "topic"'),
    ([], "give a JSON object"),
])
def test_a_declaration_that_cannot_be_a_source_is_a_400_naming_the_field(live_endpoint, body, message) -> None:
    answer = put(live_endpoint, "/sources/bad", body)
    assert message in answer.error(400)["error"]
    assert live_endpoint.get("/sources/bad").status == 404


def test_bodies_that_are_not_json_and_bad_names(live_endpoint) -> None:
    assert live_endpoint.put("/sources/x", body="{}", headers={"Content-Type": "text/plain"}).status == 415
    not_json = live_endpoint.put("/sources/x", body="{", headers={"Content-Type": "application/json"})
    assert "not JSON" in not_json.error(400)["error"]
    assert "not a connector name" in put(live_endpoint, "/sources/-x", {}).error(400)["error"]
    assert "sink" in put(live_endpoint, "/sinks/y", {"kind": "websocket"}).error(400)["error"]


def test_writes_need_the_token_and_are_refused_read_only(endpoint_factory, publisher) -> None:
    guarded = endpoint_factory(auth_token="t0ken")
    assert put(guarded, "/sources/a", declaration(publisher)).status == 401
    assert put(guarded, "/sources/a", declaration(publisher), Authorization="Bearer t0ken").status == 201
    assert guarded.delete("/sources/a").status == 401
    assert guarded.get("/sources").status == 200  # reads stay open
    assert guarded.delete("/sources/a", headers={"Authorization": "Bearer t0ken"}).status == 204
    read_only = endpoint_factory(read_only=True)
    assert put(read_only, "/sources/a", declaration(publisher)).status == 403


def test_connectors_are_kept_across_a_restart_and_flags_start_more(tmp_path, publisher) -> None:
    data = str(tmp_path / "data")
    flag = f"flagged={publisher.url}?stream={STREAM}&format=ntriples&retry_initial_ms=20"
    with serving("--data-dir", data, "--cache-engine", "local", "--source", flag) as server:
        assert "source 'flagged' (websocket " in "".join(server.output)
        status, body = server.request("PUT", "/sources/declared", json.dumps(declaration(publisher)).encode(),
                                      {"Content-Type": "application/json"})
        assert status == 201, body
        publisher.wait_for_client(2)
        assert server.stop() == 0
    kept = json.loads((tmp_path / "data" / "connectors.json").read_text())
    assert sorted(s["name"] for s in kept["sources"]) == ["declared", "flagged"]
    publisher.stop()
    publisher.start()
    with serving("--data-dir", data, "--cache-engine", "local") as server:
        publisher.wait_for_client(2)
        publisher.send(TRIPLE)

        def both_took_it():
            sources = json.loads(server.request("GET", "/sources")[1])["sources"]
            return [s["accepted"] for s in sources] == [1, 1] and sources

        sources = eventually(both_took_it, what="both restored sources took the event")
        assert [(s["name"], s["state"]) for s in sources] == [("declared", "connected"), ("flagged", "connected")]


def test_a_bad_flag_stops_the_start_and_names_it(tmp_path) -> None:
    import subprocess
    import sys

    from serve_process import environment

    finished = subprocess.run(
        [sys.executable, "-m", "cqels_endpoint.cli", "serve", "--memory", "--port", "0", "--cache-engine", "local",
         "--source", "x=mqtt://broker/topic?stream=s&qos=2"],
        capture_output=True, text=True, env=environment(), timeout=120,
    )
    assert finished.returncode == 2
    assert '"qos": 2' in finished.stderr


def test_a_file_that_cannot_be_read_is_set_aside_and_a_bad_entry_kept(tmp_path, publisher) -> None:
    from cqels_endpoint.config import ServerConfig
    from cqels_endpoint.http.app import create_app
    from cqels_endpoint.http.context import endpoint
    from cqels_endpoint.oxigraph.requests import open_store

    data = tmp_path / "data"
    data.mkdir()
    config = ServerConfig(data_dir=data, cache_engine="local")
    (data / "connectors.json").write_text("{not json")
    with open_store() as store:
        context = endpoint(create_app(store, config))
        assert context.connectors.listed("source") == []
        assert (data / "connectors.json.corrupt").read_text() == "{not json"
        context.close()
    unknown_kind = {"name": "old", "kind": "zeromq", "address": "tcp://h"}
    good = {"name": "good", **declaration(publisher)}
    (data / "connectors.json").write_text(json.dumps({"format": 1, "sources": [unknown_kind, good], "sinks": []}))
    with open_store() as store:
        context = endpoint(create_app(store, config))
        assert [c.name for c in context.connectors.listed("source")] == ["good"]
        context.connectors.delete("source", "good")  # a change rewrites the file: the bad entry stays
        context.close()
    assert json.loads((data / "connectors.json").read_text())["sources"] == [unknown_kind]
