"""``/queries`` over real HTTP: storing, inspecting and deleting continuous queries, their errors,
their results against the recompute oracle, their metrics, and ``cqels register``."""

from __future__ import annotations

import re

import pytest

from cqels_endpoint.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.http.test_http_metrics import parse_exposition
from tests.stored_queries import (
    Q1,
    Q2,
    collect,
    engine_of,
    floorplan_endpoint,
    normalised,
    push,
    rfid_events,
    sparql_query,
)

SPARQL = {"Content-Type": "application/sparql-query"}


@pytest.fixture(scope="module")
def live(endpoint_factory):
    return floorplan_endpoint(endpoint_factory)


def test_put_get_list_delete(live) -> None:
    created = sparql_query(live, "q1", Q1)
    assert created.status == 201, created.text
    assert created.headers["Location"] == "/queries/q1"
    body = created.json()
    assert (body["name"], body["status"], body["r2s"], body["mode"], body["parameters"]) == (
        "q1", "running", "ISTREAM", "incremental", []
    )
    details = live.get("/queries/q1").json()
    assert details["text"] == Q1
    assert details["explain"].startswith("query q1 (incremental, ISTREAM, cqels, eager")
    assert "static cache" in details["explain"]  # the plan, not only the header
    assert (details["evaluations"], details["emissions"]) == (0, 0)
    listed = live.get("/queries").json()["queries"]
    assert [q["name"] for q in listed if q["name"] == "q1"] == ["q1"]
    assert "q1" in engine_of(live).queries

    again = sparql_query(live, "q1", Q1)
    assert again.status == 409 and "already registered" in again.error(409)["error"]

    assert live.delete("/queries/q1").status == 204
    assert "q1" not in engine_of(live).queries
    assert live.get("/queries/q1").status == 404
    assert live.delete("/queries/q1").status == 404
    assert all(q["name"] != "q1" for q in live.get("/queries").json()["queries"])


def test_replace_checks_the_new_text_before_stopping_the_old(live) -> None:
    assert sparql_query(live, "edited", Q1).status == 201
    try:
        broken = live.put("/queries/edited", body=Q1.replace("WHERE", "WHERE WHERE"), params={"replace": "true"}, headers=SPARQL)
        assert broken.error(400)["line"] is not None
        assert live.get("/queries/edited").json()["text"] == Q1 and "edited" in engine_of(live).queries
        assert "use true or false" in live.put("/queries/edited", body=Q1, params={"replace": "yes"}, headers=SPARQL).error(400)["error"]
        replaced = live.put("/queries/edited", body=Q2, params={"replace": "true", "r2s": "RSTREAM"}, headers=SPARQL)
        assert replaced.status == 201, replaced.text
        details = live.get("/queries/edited").json()
        assert (details["text"], details["r2s"]) == (Q2, "RSTREAM")
        assert engine_of(live).queries["edited"].algebra.form == "CONSTRUCT"
    finally:
        live.delete("/queries/edited")


def test_r2s_and_mode_parameters(live) -> None:
    response = sparql_query(live, "q1-r", Q1, r2s="rstream", mode="recompute")
    assert response.status == 201, response.text
    assert (response.json()["r2s"], response.json()["mode"]) == ("RSTREAM", "recompute")
    query = engine_of(live).queries["q1-r"]
    assert (query.r2s, query.mode) == ("RSTREAM", "recompute")
    live.delete("/queries/q1-r")


def test_a_syntax_error_names_line_and_column_and_quotes_the_line(live) -> None:
    text = "PREFIX lv: <http://deri.org/floorplan/>\nSELECT ?x WHERE {\n  STREAM <http://s> [RANGE 3s] { ?x lv:p }\n}\n"
    response = sparql_query(live, "broken", text)
    error = response.error(400)
    assert error["line"] == 3 and error["column"] > 1
    assert "STREAM <http://s> [RANGE 3s] { ?x lv:p }" in error["error"]  # the line, quoted
    assert "broken" not in engine_of(live).queries
    assert live.get("/queries/broken").status == 404


@pytest.mark.parametrize(
    ("params", "text", "needle"),
    [
        ({}, "SELECT * WHERE { ?s ?p ?o }", "reads at least one stream"),
        ({"r2s": "SOMETIMES"}, Q1, "r2s must be one of"),
        ({"mode": "fast"}, Q1, "mode must be one of"),
        ({"r2s": "ISTREAM", "mode": "recompute", "x": "1"}, "DESCRIBE <http://a>", "a continuous query must be"),
    ],
)
def test_bad_queries_and_arguments_are_400(live, params, text, needle) -> None:
    response = sparql_query(live, "bad", text, **params)
    assert needle in response.error(400)["error"]
    assert "bad" not in engine_of(live).queries


def test_a_value_error_that_is_no_bad_argument_is_a_500(live, monkeypatch) -> None:
    """Only ``ArgumentError`` is the client's fault: a bug raising a plain ValueError must not be
    reported as a bad request."""
    from cqels_endpoint.engine.registry import QueryRegistry

    def broken(self, *args, **kwargs):
        raise ValueError("an internal invariant broke")

    monkeypatch.setattr(QueryRegistry, "put", broken)
    response = sparql_query(live, "q", Q1)
    assert response.status == 500, response.text


def test_bad_names_bodies_and_types(live) -> None:
    assert "query name" in live.put("/queries/-x", body=Q1, headers=SPARQL).error(400)["error"]
    response = live.put("/queries/q", body=Q1, headers={"Content-Type": "text/plain"})
    assert response.status == 415
    response = live.put("/queries/q", body=b"\xff\xfe", headers=SPARQL)
    assert "not UTF-8" in response.error(400)["error"]
    response = live.put("/queries/q", body=Q1, params=[("r2s", "ISTREAM"), ("r2s", "RSTREAM")], headers=SPARQL)
    assert "given 2 times" in response.error(400)["error"]
    assert live.get("/queries/q").status == 404


def test_results_equal_the_recompute_oracle_and_counts_show(live) -> None:
    engine = engine_of(live)
    assert sparql_query(live, "q2", Q2).status == 201
    assert sparql_query(live, "q2-oracle", Q2, mode="recompute").status == 201
    got, expected = collect(engine.queries["q2"]), collect(engine.queries["q2-oracle"])
    events = rfid_events(60, people=8)
    response = push(live, events)
    assert response.status == 200, response.text
    assert expected, "the events must make Q2 emit, or the comparison proves nothing"
    assert normalised(got) == normalised(expected)

    details = live.get("/queries/q2").json()
    assert details["evaluations"] == len(events)  # eager: one evaluation per event
    assert details["emissions"] == len(got)
    assert f"{len(events)} evaluations, {len(got)} emissions" in details["explain"]

    metrics = live.get("/metrics").text
    families = parse_exposition(metrics)  # the strict reader of the format: histograms included
    assert families["cqels_query_event_latency_seconds"]["type"] == "histogram"
    assert f'cqels_query_emissions_total{{query="q2"}} {len(got)}' in metrics
    assert f'cqels_query_evaluations_total{{query="q2"}} {len(events)}' in metrics
    assert f'cqels_query_event_latency_seconds_count{{query="q2"}} {len(events)}' in metrics
    assert f'cqels_query_event_latency_seconds_bucket{{query="q2",le="+Inf"}} {len(events)}' in metrics
    assert "# TYPE cqels_query_event_latency_seconds histogram" in metrics
    buckets = [int(v) for v in re.findall(r'latency_seconds_bucket\{query="q2",le="[^"]+"\} (\d+)', metrics)]
    assert buckets == sorted(buckets)  # cumulative
    live.delete("/queries/q2")
    live.delete("/queries/q2-oracle")
    assert 'query="q2"' not in live.get("/metrics").text


def test_writes_need_the_token(endpoint_factory) -> None:
    secured = endpoint_factory(cache_engine="local", auth_token="s3cret")
    assert sparql_query(secured, "q1", Q1).status == 401
    token = {"Authorization": "Bearer s3cret"}
    assert secured.put("/queries/q1", body=Q1, headers={**SPARQL, **token}).status == 201
    assert secured.get("/queries/q1").status == 200  # reads stay open
    assert secured.get("/queries").status == 200
    assert secured.delete("/queries/q1").status == 401
    assert secured.post("/queries/q1/instances", body="{}", headers={"Content-Type": "application/json"}).status == 401
    assert secured.delete("/queries/q1", headers=token).status == 204


def test_cqels_register(live, tmp_path, capsys) -> None:
    path = tmp_path / "q1.rq"
    path.write_text(Q1)
    assert main(["register", "cli-q1", str(path), "--url", live.base_url, "--r2s", "RSTREAM"]) == EXIT_OK
    assert "stored cli-q1 (RSTREAM, incremental, cqels)" in capsys.readouterr().out
    assert engine_of(live).queries["cli-q1"].r2s == "RSTREAM"
    assert main(["register", "cli-q2", str(path), "--url", live.base_url, "--dialect", "cqels2"]) == EXIT_OK
    assert "stored cli-q2 (ISTREAM, incremental, cqels2)" in capsys.readouterr().out
    assert engine_of(live).queries["cli-q2"].dialect == "cqels2"
    assert "dialect must be one of auto, cqels, cqels2" in live.put(
        "/queries/cli-q3", body=Q1, params={"dialect": "cqels3"}, headers=SPARQL
    ).error(400)["error"]
    assert live.get("/queries/cli-q2").json()["dialect"] == "cqels2"

    # Taken: the server's 409 is the user's problem, reported with its message.
    assert main(["register", "cli-q1", str(path), "--url", live.base_url]) == EXIT_BAD_INPUT
    assert "409" in capsys.readouterr().err

    path.write_text("SELECT ?x WHERE {\n  STREAM <http://s> [NOW] { ?x }\n}")
    assert main(["register", "cli-bad", str(path), "--url", live.base_url]) == EXIT_BAD_INPUT
    assert "(line 2)" in capsys.readouterr().err
    assert main(["register", "cli-none", str(tmp_path / "missing.rq"), "--url", live.base_url]) == EXIT_BAD_INPUT
    live.delete("/queries/cli-q1")
