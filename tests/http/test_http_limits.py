"""Limits over HTTP (``--max-window-triples``, ``--max-tick-rows``, ``--limit-action``): a query past
them fails alone — its results streams end with an error event, ``/queries`` shows it failed with
the reason, the pushes that made it fail succeed — or its full windows shed counted triples."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from test_http_metrics import parse_exposition
from test_http_results import Stream

from cqels_endpoint.cli import build_parser
from cqels_endpoint.config import ServerConfig
from cqels_endpoint.engine import Limits
from cqels_endpoint.http.app import create_app
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.oxigraph.requests import open_store

EX = "http://ex.org/"
S, T = EX + "s", EX + "t"
QUERY = {"Content-Type": "application/sparql-query"}


def ranged(stream: str, window: str = "RANGE 1h") -> str:
    return f"SELECT ?s ?o WHERE {{ STREAM <{stream}> [{window}] {{ ?s <{EX}p> ?o }} }}"


def push(server, stream: str, i: int):
    body = f"<{EX}a{i}> <{EX}p> \"{i}\" ."
    return server.post(f"/streams/{urllib.parse.quote(stream, safe='')}", params={"time": str(1000 + i)},
                       body=body, headers={"Content-Type": "application/n-triples"})


def samples(server, family: str) -> dict:
    return parse_exposition(server.get("/metrics").text)[family]["samples"]


def test_limit_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown limit action 'drop'"):
        ServerConfig(limit_action="drop")
    with pytest.raises(ValueError, match="max_window_triples must be an integer of at least 0"):
        ServerConfig(max_window_triples=-1)
    with pytest.raises(ValueError, match="max_tick_rows must be an integer of at least 0"):
        ServerConfig(max_tick_rows=-1)


def test_serve_flags_and_environment_reach_the_engine(monkeypatch) -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.max_window_triples, args.max_tick_rows, args.limit_action) == (0, 0, "fail")
    monkeypatch.setenv("CQELS_MAX_WINDOW_TRIPLES", "100")
    monkeypatch.setenv("CQELS_LIMIT_ACTION", "shed")
    args = build_parser().parse_args(["serve", "--max-tick-rows", "5000"])
    assert (args.max_window_triples, args.max_tick_rows, args.limit_action) == (100, 5000, "shed")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--limit-action", "drop"])
    with open_store() as store:
        app = create_app(store, ServerConfig(memory=True, cache_engine="local", max_window_triples=100, limit_action="shed"))
        try:
            assert endpoint(app).engine.limits == Limits(max_window_triples=100, max_tick_rows=None, action="shed")
        finally:
            endpoint(app).close()


def test_a_failed_query_ends_its_streams_with_an_error_and_shows_failed(endpoint_factory) -> None:
    server = endpoint_factory(cache_engine="local", max_window_triples=3, keepalive_s=0.5)
    assert server.put("/queries/full", body=ranged(S), headers=QUERY).status == 201
    assert server.put("/queries/other", body=ranged(T, "RANGE 2ms"), headers=QUERY).status == 201
    sse = Stream(server.base_url, "full")
    ndjson = Stream(server.base_url, "full", headers={"Accept": "application/x-ndjson"})
    try:
        sse.greeting()
        for i in range(5):
            assert push(server, S, i).status == 200  # the push that fails the query succeeds
            assert push(server, T, i).status == 200
        assert [seq for seq, _ in sse.events(3)] == [1, 2, 3]
        reason = f"the window of stream pattern 0 on <{S}> is full: it holds 3 triples, the limit max_window_triples=3"
        assert sse.block() == ["event: error", "data: " + json.dumps({"query": "full", "error": f"query 'full' failed: {reason}"})]
        assert sse.response.readline() == b""  # and the stream ends
        objects = ndjson.objects(4)
        assert [len(o["results"]["bindings"]) for o in objects[:3]] == [1, 1, 1]
        assert objects[3] == {"query": "full", "error": f"query 'full' failed: {reason}"}
        assert ndjson.response.readline() == b""
    finally:
        sse.close()
        ndjson.close()
    listed = {q["name"]: q for q in server.get("/queries").json()["queries"]}
    assert (listed["full"]["status"], listed["full"]["error"]) == ("failed", reason)
    assert listed["other"]["status"] == "running" and "error" not in listed["other"]
    assert listed["other"]["evaluations"] == 5
    details = server.get("/queries/full").json()
    assert (details["status"], details["error"], details["explain"]) == ("failed", reason, None)
    late = server.get("/queries/full/results")
    assert late.status == 409 and reason in late.json()["error"]
    assert samples(server, "cqels_queries_failed") == {frozenset(): 1}
    # Deleted and stored again, it runs again.
    assert server.delete("/queries/full").status == 204
    assert server.put("/queries/full", body=ranged(S), headers=QUERY).status == 201
    assert server.get("/queries/full").json()["status"] == "running"
    assert samples(server, "cqels_queries_failed") == {frozenset(): 0}


def test_too_many_rows_per_evaluation_fail_the_query(endpoint_factory) -> None:
    server = endpoint_factory(cache_engine="local", max_tick_rows=20)
    cross = f"SELECT * WHERE {{ STREAM <{S}> [RANGE 1h] {{ ?a <{EX}p> ?b }} STREAM <{S}> [RANGE 1h] {{ ?c <{EX}p> ?d }} }}"
    assert server.put("/queries/cross", body=cross, headers=QUERY).status == 201
    assert server.put("/queries/plain", body=ranged(S), headers=QUERY).status == 201
    for i in range(12):  # the n-th triple joins the n in the window both ways: 2n − 1 new pairs
        assert push(server, S, i).status == 200
    listed = {q["name"]: q for q in server.get("/queries").json()["queries"]}
    assert listed["cross"]["status"] == "failed"
    assert "more than 20 intermediate rows (max_tick_rows)" in listed["cross"]["error"]
    assert listed["cross"]["evaluations"] < 11
    assert (listed["plain"]["status"], listed["plain"]["evaluations"]) == ("running", 12)


def test_shed_triples_are_counted_in_queries_and_metrics(endpoint_factory) -> None:
    server = endpoint_factory(cache_engine="local", max_window_triples=3, limit_action="shed")
    assert server.put("/queries/shedding", body=ranged(S), headers=QUERY).status == 201
    for i in range(5):
        assert push(server, S, i).status == 200
    listed = {q["name"]: q for q in server.get("/queries").json()["queries"]}
    assert (listed["shedding"]["status"], listed["shedding"]["shed"], listed["shedding"]["emissions"]) == ("running", 2, 3)
    assert samples(server, "cqels_query_shed_triples_total") == {frozenset({("query", "shedding")}): 2}
    assert "2 triple(s) shed by full windows" in server.get("/queries/shedding").json()["explain"]
