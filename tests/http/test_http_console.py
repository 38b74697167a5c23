"""The console's files over HTTP (``http/console.py``): the page at ``/``, its assets with their
types, nothing outside its folder, the settings it reads; and the plan tree and latency that
``GET /queries/{name}`` gives it."""

from __future__ import annotations

import re

import pytest

from cqels_endpoint.connectors.events import EVENT_FORMATS
from cqels_endpoint.connectors.specs import (
    OVERFLOWS,
    SINK_FORMATS,
    SINK_KINDS,
    SOURCE_KINDS,
    TIME_SOURCES,
    sink_from_json,
    source_from_json,
)
from cqels_endpoint.http.context import endpoint


@pytest.fixture(scope="module")
def server(endpoint_factory):
    return endpoint_factory(cache_engine="local")


def test_the_page_and_every_file_it_loads(server) -> None:
    page = server.get("/")
    assert page.status == 200 and page.content_type == "text/html; charset=utf-8"
    assert page.headers["Cache-Control"] == "no-cache"
    loaded = re.findall(r'(?:src|href)="(console/[^"]+)"', page.text)
    assert {"console/console.js", "console/sparql-mode.js", "console/vendor/codemirror/codemirror.js"} <= set(loaded)
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
    for path in loaded:
        asset = server.get("/" + path)
        assert asset.status == 200, path
        assert asset.content_type == types[path[path.rindex("."):]], path
    # Nothing comes from another site.
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page.text)
    assert server.get("/console/vendor/codemirror/LICENSE").text.startswith("MIT License")


@pytest.mark.parametrize("path", ["/console/../app.py", "/console/%2e%2e/console.py", "/console/missing.js", "/console/vendor/"])
def test_nothing_outside_the_console_folder(server, path) -> None:
    assert server.get(path).status == 404


def test_settings_say_whether_writes_need_a_token(server, endpoint_factory) -> None:
    settings = server.get("/console/settings.json").json()
    assert {k: settings[k] for k in ("auth_required", "read_only", "demo_query")} == {"auth_required": False, "read_only": False, "demo_query": None}
    guarded = endpoint_factory(cache_engine="local", auth_token="t", read_only=True).get("/console/settings.json").json()
    assert {k: guarded[k] for k in ("auth_required", "read_only", "demo_query")} == {"auth_required": True, "read_only": True, "demo_query": None}


def test_settings_offer_what_a_connector_declaration_accepts(server) -> None:
    # The "Sources & sinks" forms offer these: each choice is read by the declarations' own
    # readers, every value they accept is offered, and the one a declaration without it gets comes first.
    choices = server.get("/console/settings.json").json()["connectors"]
    source = {"kind": "mqtt", "address": "mqtt://broker:1883", "topics": ["a/#"], "stream": "obs"}
    sink = {"kind": "mqtt", "address": "mqtt://broker:1883", "topic": "out", "query": "q"}
    for kind in choices["source_kinds"]:
        address = "mqtt://broker:1883" if kind == "mqtt" else "ws://publisher:8080/"
        topics = ["a/#"] if kind == "mqtt" else []
        assert source_from_json("s", {**source, "kind": kind, "address": address, "topics": topics}).kind == kind
    for field, key in (("format", "source_formats"), ("time", "times")):
        assert [getattr(source_from_json("s", {**source, field: value}), field) for value in choices[key]] == choices[key]
        assert getattr(source_from_json("s", source), field) == choices[key][0]
    for field, key in (("kind", "sink_kinds"), ("format", "sink_formats"), ("overflow", "overflows")):
        assert [getattr(sink_from_json("k", {**sink, field: value}), field) for value in choices[key]] == choices[key]
        assert getattr(sink_from_json("k", sink), field) == choices[key][0]
    assert set(choices["source_kinds"]) == set(SOURCE_KINDS) and set(choices["sink_kinds"]) == set(SINK_KINDS)
    assert set(choices["source_formats"]) == set(EVENT_FORMATS) and set(choices["times"]) == set(TIME_SOURCES)
    assert set(choices["sink_formats"]) == set(SINK_FORMATS) and set(choices["overflows"]) == set(OVERFLOWS)


def test_settings_name_the_demo_query_while_the_demo_stream_is_on(endpoint_factory) -> None:
    # The console opens on it (cqels serve --demo); with --demo-stream off there is none.
    demo = endpoint_factory(cache_engine="local", demo=True)
    assert demo.get("/console/settings.json").json()["demo_query"] == "demo"
    quiet = endpoint_factory(cache_engine="local", demo=True, demo_stream="off")
    assert quiet.get("/console/settings.json").json()["demo_query"] is None


def test_query_details_carry_the_plan_tree_and_latency(server) -> None:
    text = "PREFIX ex: <http://example.org/> SELECT ?s (COUNT(*) AS ?n) FROM STREAM <urn:s> [RANGE 10s] WHERE { ?s ex:p ?o } GROUP BY ?s"
    assert server.put("/queries/counted", body=text, headers={"Content-Type": "application/sparql-query"}).status == 201
    try:
        engine = endpoint(server.app).engine
        engine.push("urn:s", "<urn:a> <http://example.org/p> 1 .", time=5)
        details = server.get("/queries/counted").json()
        plan = details["plan"]
        assert plan == engine.explain_tree("counted")
        assert plan["what"] == engine.explain("counted").splitlines()[0]
        (evaluator,) = plan["children"]
        ids = []

        def walk(node):
            ids.append(node["id"])
            for child in node["children"]:
                walk(child)

        walk(evaluator)
        # Every operator of the text plan is a node of the tree, with the same counters.
        assert set(filter(None, ids)) == set(re.findall(r"^\s+([A-Z]+\d+) ", details["explain"], re.MULTILINE))
        assert details["latency"]["count"] == 1 and details["latency"]["sum_ms"] > 0
        # The push made one emission: its latency from the engine accepting the event.
        assert details["emission_latency"]["count"] == 1
        assert 0 < details["emission_latency"]["sum_ms"] < 10_000
    finally:
        server.delete("/queries/counted")
