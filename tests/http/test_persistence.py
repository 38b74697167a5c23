"""Stored queries and instances survive a restart: the app built again on the same data directory,
and a real ``cqels serve`` stopped and started again, have the queries, instances and static data
back, and the restored queries still answer as the recompute oracle."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from serve_process import serving

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.engine.registry import FILE_NAME
from cqels_endpoint.errors import CqelsError
from cqels_endpoint.http.app import create_app
from cqels_endpoint.http.asgi import application
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.server import serve_in_thread
from cqels_endpoint.oxigraph.requests import open_store
from tests.conftest import LiveEndpoint
from tests.stored_queries import (
    LV,
    Q2,
    TEMPLATE,
    collect,
    load_floorplan,
    normalised,
    person,
    push,
    rfid_events,
    sparql_query,
    substituted,
)

JSON = {"Content-Type": "application/json"}


@contextmanager
def running(data_dir: Path, **fields) -> Iterator[LiveEndpoint]:
    """An app over the on-disk store in ``data_dir``, served on loopback, closed at the end."""
    config = ServerConfig(data_dir=data_dir, port=0, cache_engine="local", rebuild_debounce_ms=0, **fields)
    store = open_store(config.store_path)
    try:
        app = create_app(store, config)
        base_url, stop = serve_in_thread(application(app), "127.0.0.1", 0)
        try:
            yield LiveEndpoint(base_url, store, config, app)
        finally:
            stop()
            endpoint(app).close()
    finally:
        store.close()


def instances(live, name: str, body) -> object:
    return live.post(f"/queries/{name}/instances", body=json.dumps(body), headers=JSON)


def test_queries_instances_and_data_come_back(tmp_path: Path) -> None:
    with running(tmp_path) as live:
        load_floorplan(live)
        assert sparql_query(live, "q2", Q2, r2s="RSTREAM").status == 201
        assert sparql_query(live, "where", TEMPLATE).status == 201
        assert instances(live, "where", [{"bindings": {"person": {"type": "uri", "value": person(i)}}} for i in range(3)]).status == 201
        assert instances(live, "where", {"bindings": {"person": {"type": "uri", "value": person(7)}}, "name": "seven"}).status == 201
        assert live.delete("/queries/where/2").status == 204
        before = live.get("/queries").json()
        quads = len(live.store)
    assert json.loads((tmp_path / FILE_NAME).read_text())["format"] == 1
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()

    with running(tmp_path) as live:
        engine = endpoint(live.app).engine
        assert len(live.store) == quads
        assert live.get("/queries").json() == before
        assert {"q2", "where/1", "where/3", "where/seven"} <= set(engine.queries)
        assert "where/2" not in engine.queries
        assert engine.queries["q2"].r2s == "RSTREAM"
        assert live.get("/queries/where/seven").json()["bindings"] == {"person": {"type": "uri", "value": person(7)}}
        # Numbering goes on after the highest number ever given, not after the ones left.
        created = instances(live, "where", {"bindings": {"person": {"type": "uri", "value": person(9)}}})
        assert created.json()["instances"][0]["name"] == "4"

        # The restored queries answer, and as the oracle does.
        oracle_q2 = engine.register(Q2, "oracle-q2", r2s="RSTREAM", mode="recompute")
        oracle_where = engine.register(substituted(TEMPLATE, person(0)), "oracle-where", mode="recompute")
        pairs = [(collect(engine.queries["q2"]), collect(oracle_q2)),
                 (collect(engine.queries["where/1"]), collect(oracle_where))]
        assert push(live, rfid_events(50, people=5)).status == 200
        for got, expected in pairs:
            assert any(e.triples or e.rows for e in expected)
            assert normalised(got) == normalised(expected)

        assert live.delete("/queries/where").status == 204
    with running(tmp_path) as live:
        assert [q["name"] for q in live.get("/queries").json()["queries"]] == ["q2"]
        assert "where/1" not in endpoint(live.app).engine.queries


def test_an_in_memory_server_writes_nothing(tmp_path: Path) -> None:
    with running(tmp_path, memory=True) as live:
        assert sparql_query(live, "q2", Q2).status == 201
    assert not (tmp_path / FILE_NAME).exists()


def test_a_query_that_no_longer_starts_is_kept_as_failed(tmp_path: Path) -> None:
    with running(tmp_path) as live:
        assert sparql_query(live, "q2", Q2).status == 201
        assert sparql_query(live, "where", TEMPLATE).status == 201
        assert instances(live, "where", {"bindings": {"person": {"type": "uri", "value": person(1)}}}).status == 201
    path = tmp_path / FILE_NAME
    document = json.loads(path.read_text())
    for entry in document["queries"]:
        if entry["name"] == "where":  # as if a later version no longer accepted the text
            entry["text"] = entry["text"].replace("[RANGE 3s]", "[RANGE 3 parsecs]")
    path.write_text(json.dumps(document))

    with running(tmp_path) as live:
        failed = live.get("/queries/where").json()
        assert failed["status"] == "failed" and "line" in failed["error"]
        assert "q2" in endpoint(live.app).engine.queries
        assert not [name for name in endpoint(live.app).engine.queries if name.startswith("where")]
        # Another change rewrites the file; the failed query and its instance stay in it.
        assert live.delete("/queries/q2").status == 204
    kept = json.loads(path.read_text())["queries"]
    assert [(q["name"], len(q["instances"])) for q in kept] == [("where", 1)]


def test_a_damaged_file_is_set_aside_and_its_backup_restored(tmp_path: Path, caplog) -> None:
    with running(tmp_path) as live:
        assert sparql_query(live, "q2", Q2).status == 201
        assert sparql_query(live, "where", TEMPLATE).status == 201  # the file with q2 alone is the backup
    damaged = '{"format": 1, "queries": [{"name": "q2", "te'  # as a disk might return it
    (tmp_path / FILE_NAME).write_text(damaged)
    with running(tmp_path) as live:
        assert [q["name"] for q in live.get("/queries").json()["queries"]] == ["q2"]
    assert (tmp_path / (FILE_NAME + ".corrupt")).read_text() == damaged
    assert [q["name"] for q in json.loads((tmp_path / FILE_NAME).read_text())["queries"]] == ["q2"]  # written again
    assert any("restored its backup" in record.message and "misses the last change" in record.message for record in caplog.records)


def test_a_damaged_file_without_backup_starts_with_no_query(tmp_path: Path, caplog) -> None:
    (tmp_path / FILE_NAME).write_text('{"format": 1, "queries": [{"name": 3}]}')
    with running(tmp_path) as live:
        assert live.get("/queries").json()["queries"] == []
    assert (tmp_path / (FILE_NAME + ".corrupt")).exists()
    assert any("no backup, no query restored" in record.message for record in caplog.records)


def test_a_file_this_user_cannot_read_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).mkdir()  # reading it fails whoever runs the tests (root reads any file)
    with pytest.raises(CqelsError, match=f"cannot read the stored queries in .*{FILE_NAME}"), running(tmp_path):
        pass


def test_cqels_serve_restores_before_it_listens(tmp_path: Path) -> None:
    flags = ("--data-dir", str(tmp_path), "--auth-token", "t0k")
    token = {"Authorization": "Bearer t0k"}
    with serving(*flags) as server:
        live = LiveEndpoint(server.base_url, None, None)
        load_floorplan(live, headers=token)
        status, body = server.request("PUT", "/queries/where", TEMPLATE.encode(),
                                      {"Content-Type": "application/sparql-query", **token})
        assert status == 201, body
        status, body = server.request("POST", "/queries/where/instances",
                                      json.dumps({"bindings": {"person": {"type": "uri", "value": person(0)}}}).encode(),
                                      {**JSON, **token})
        assert status == 201, body
        assert server.stop() == 0

    with serving(*flags) as server:
        assert any("restored 1 stored query" in line for line in server.output)
        live = LiveEndpoint(server.base_url, None, None)
        assert live.get("/queries/where").json()["instances"][0]["query"] == "where/1"
        assert "read once for the 1 instance of the shared plan" in live.get("/queries/where/1").json()["explain"]
        events = [(1_000, f"<{person(0)}> <{LV}detectedAt> <{LV}kitchen> .\n")]
        assert push(live, events, headers=token).status == 200
        assert live.get("/queries/where/1").json()["emissions"] == 1  # the static data is back too
        assert server.stop() == 0
