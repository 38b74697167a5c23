"""``POST /streams/{name}`` and ``GET /streams`` on a real server (``http/streams.py``).

Correctness by oracle: a query registered on the server's engine sees the pushed events exactly as
the same query in recompute mode on the same engine, and as a fresh engine fed the intended events
directly through the Python API. Every refused batch is checked to have applied nothing: the
stream's counters and the queries' emissions are unchanged.
"""

from __future__ import annotations

import json
import time
import urllib.parse

import pytest

from cqels_endpoint.engine import Engine
from cqels_endpoint.errors import LateEventError
from cqels_endpoint.http.context import endpoint

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE = "http://example.org/streams/"
P = "http://ex.org/p"
XSD = "http://www.w3.org/2001/XMLSchema#"
PROV = "http://www.w3.org/ns/prov#"


@pytest.fixture(scope="module")
def server(endpoint_factory):
    return endpoint_factory(cache_engine="local", auth_token=TOKEN, stream_base=BASE)


def push(server, stream: str, body: str, content_type: str, time: str | None = None, headers=AUTH):
    params = {"time": time} if time is not None else None
    return server.post(f"/streams/{urllib.parse.quote(stream, safe='')}", params=params, body=body,
                       headers={"Content-Type": content_type, **headers})


def ndjson(*lines) -> str:
    return "".join((json.dumps(line) if line is not None else "") + "\n" for line in lines)


def stream_state(server, iri: str) -> dict | None:
    response = server.get("/streams")
    assert response.status == 200
    return next((s for s in response.json()["streams"] if s["stream"] == iri), None)


def query_on(stream: str) -> str:
    return f"SELECT ?s ?o WHERE {{ STREAM <{stream}> [RANGE 10s] {{ ?s <{P}> ?o }} }}"


class Recorder:
    """Every emission of a query, as comparable values: (time, r2s, sorted rows)."""

    def __init__(self, query):
        self.seen: list[tuple] = []
        query.subscribe(self.record)

    def record(self, emission) -> None:
        rows = sorted(tuple(sorted((var, str(term)) for var, term in row.items())) for row in emission.rows)
        self.seen.append((emission.time, emission.r2s, rows))


def register_pair(server, name: str, stream: str) -> tuple[Recorder, Recorder]:
    """The query on ``stream`` registered twice on the server's engine: incremental and the oracle."""
    engine = endpoint(server.app).engine
    incremental = Recorder(engine.register(query_on(stream), name=f"{name}-inc", r2s="RSTREAM"))
    oracle = Recorder(engine.register(query_on(stream), name=f"{name}-rec", r2s="RSTREAM", mode="recompute"))
    return incremental, oracle


def test_every_format_reaches_a_registered_query_as_the_oracle_sees_it(server):
    stream = "http://example.org/streams/formats"
    incremental, oracle = register_pair(server, "formats", stream)

    answers = [
        push(server, stream, f'<http://ex.org/a> <{P}> "1" .\n<http://ex.org/b> <{P}> "2" .\n',
             "application/n-triples", time="1000"),
        push(server, "formats", "@prefix e: <http://ex.org/> .\ne:c e:p 3 .\n", "text/turtle",
             time="1970-01-01T00:00:02Z"),
        push(server, stream, json.dumps({"@id": "http://ex.org/d", P: "4"}), "application/ld+json", time="3000"),
        # Document order g5, g4: applied in timestamp order.
        push(server, stream, f"""@prefix prov: <{PROV}> . @prefix xsd: <{XSD}> .
            <http://ex.org/g5> prov:generatedAtTime "1970-01-01T00:00:05Z"^^xsd:dateTime .
            <http://ex.org/g4> prov:generatedAtTime "1970-01-01T00:00:04+00:00"^^xsd:dateTime .
            <http://ex.org/g5> {{ <http://ex.org/f> <{P}> "5" }}
            <http://ex.org/g4> {{ <http://ex.org/e> <{P}> "4b" . <http://ex.org/e2> <{P}> "4c" }}
            """, "application/trig"),
        push(server, stream, ndjson(
            {"time": 6000, "data": f'<http://ex.org/g> <{P}> "6" .'},
            None,  # a blank line: skipped
            {"time": "1970-01-01T00:00:07.500Z", "data": f'<http://ex.org/h> <{P}> "7" .'},
            {"time": 7500, "data": f'<http://ex.org/i> <{P}> "8" .'},
        ), "application/x-ndjson"),
    ]
    assert [a.status for a in answers] == [200] * 5, [a.text for a in answers]
    assert [(a.json()["accepted"], a.json()["latest"]) for a in answers] == [
        (1, 1000), (1, 2000), (1, 3000), (2, 5000), (3, 7500)]
    assert answers[1].json()["stream"] == stream  # the short name under the stream base

    # The same events pushed straight into a fresh engine: what the HTTP bodies should have meant.
    expected = Engine()
    local = Recorder(expected.register(query_on(stream), r2s="RSTREAM", mode="recompute"))
    for at, data in [
        (1000, f'<http://ex.org/a> <{P}> "1" .\n<http://ex.org/b> <{P}> "2" .'),
        (2000, f'<http://ex.org/c> <{P}> 3 .'),
        (3000, f'<http://ex.org/d> <{P}> "4" .'),
        (4000, f'<http://ex.org/e> <{P}> "4b" . <http://ex.org/e2> <{P}> "4c" .'),
        (5000, f'<http://ex.org/f> <{P}> "5" .'),
        (6000, f'<http://ex.org/g> <{P}> "6" .'),
        (7500, f'<http://ex.org/h> <{P}> "7" .'),
        (7500, f'<http://ex.org/i> <{P}> "8" .'),
    ]:
        expected.push(stream, data, time=at)
    assert len(local.seen) == 8  # one RSTREAM emission per event
    assert incremental.seen == oracle.seen == local.seen
    assert local.seen[-1][2][0] == (("o", '"1"'), ("s", "<http://ex.org/a>"))  # a=1 still in the 10 s window


def test_an_event_without_time_is_stamped_with_its_arrival(server):
    stream = "http://example.org/streams/arrival"
    before = time.time_ns() // 1_000_000
    answer = push(server, stream, json.dumps({"@id": "http://ex.org/a", P: "1"}), "application/ld+json")
    after = time.time_ns() // 1_000_000
    assert answer.status == 200, answer.text
    assert before <= answer.json()["latest"] <= after
    lines = ndjson({"data": f'<http://ex.org/a> <{P}> "2" .'}, {"data": f'<http://ex.org/b> <{P}> "3" .'})
    answer = push(server, stream, lines, "application/x-ndjson")
    assert answer.status == 200, answer.text
    assert answer.json()["accepted"] == 2
    assert answer.json()["latest"] >= after


@pytest.mark.parametrize(
    ("body", "content_type", "line", "mentions"),
    [
        (ndjson({"time": 1100, "data": f'<http://ex.org/a> <{P}> "1" .'},
                {"time": 1200, "data": f"<http://ex.org/a> <{P}> ."},
                {"time": 1300, "data": f'<http://ex.org/a> <{P}> "3" .'}), "application/x-ndjson", 2, "line 2"),
        (ndjson({"time": 1100, "data": f'<http://ex.org/a> <{P}> "1" .'}, None) + '{"time": 1300, "data": \n',
         "application/x-ndjson", 3, "not JSON"),
        (ndjson({"time": 1100, "data": f'<http://ex.org/a> <{P}> "1" .'},
                {"time": "yesterday", "data": f'<http://ex.org/a> <{P}> "2" .'}), "application/x-ndjson", 2,
         "xsd:dateTime"),
        (ndjson({"time": 1100, "data": f'<http://ex.org/a> <{P}> "1" .'},
                {"time": 1200, "triples": f'<http://ex.org/a> <{P}> "2" .'}), "application/x-ndjson", 2, '"data"'),
        (ndjson({"time": 1100, "data": f'<http://ex.org/a> <{P}> "1" .'},
                {"time": True, "data": f'<http://ex.org/a> <{P}> "2" .'}), "application/x-ndjson", 2, "milliseconds"),
        ("@prefix e: <http://ex.org/> .\ne:a e:p 1 .\ne:b e:p .\n", "text/turtle", 3, "Turtle"),
        (f"""@prefix prov: <{PROV}> .
            <http://ex.org/g1> prov:generatedAtTime "1970-01-01T00:00:01.1Z"^^<{XSD}dateTime> .
            <http://ex.org/g1> {{ <http://ex.org/a> <{P}> 1 }}
            <http://ex.org/g2> {{ <http://ex.org/b> <{P}> 2 }}""", "application/trig", None, "http://ex.org/g2"),
        (f"""<http://ex.org/g1> <{PROV}generatedAtTime> "soon" .
            <http://ex.org/g1> {{ <http://ex.org/a> <{P}> 1 }}""", "application/trig", None, "xsd:dateTime"),
        (f"""<http://ex.org/a> <{P}> 0 .
            <http://ex.org/g1> <{PROV}generatedAtTime> "1970-01-01T00:00:01.1Z"^^<{XSD}dateTime> .
            <http://ex.org/g1> {{ <http://ex.org/a> <{P}> 1 }}""", "application/trig", None, "default graph"),
    ],
    ids=["bad-ntriples-line", "bad-json-line", "bad-time", "no-data", "boolean-time", "turtle", "trig-no-time",
         "trig-time-not-datetime", "trig-other-default-triples"],
)
def test_a_malformed_batch_applies_nothing_and_names_the_line(server, body, content_type, line, mentions):
    stream = f"http://example.org/streams/malformed-{content_type.split('/')[1]}-{abs(hash(body))}"
    incremental, oracle = register_pair(server, f"malformed-{abs(hash(body))}", stream)
    assert push(server, stream, f'<http://ex.org/z> <{P}> "0" .', "application/n-triples", time="1000").status == 200
    seen = list(incremental.seen)

    error = push(server, stream, body, content_type).error(400)
    assert error["line"] == line
    assert mentions in error["error"]
    assert stream_state(server, stream) | {"rate_per_second": None} == {
        "stream": stream, "events": 1, "accepted": 1, "late": 0, "rejected": {"late": 0, "future": 0, "malformed": 1},
        "rate_per_second": None, "latest": 1000, "watermark": 1000, "lateness_ms": 0, "buffered": 0,
    }
    assert incremental.seen == oracle.seen == seen  # nothing reached the queries


def test_a_late_event_rejects_its_batch_with_409_and_is_counted(server):
    stream = "http://example.org/streams/late"
    incremental, oracle = register_pair(server, "late", stream)
    assert push(server, stream, f'<http://ex.org/a> <{P}> "1" .', "application/n-triples", time="1000").status == 200

    late = ndjson(
        {"time": 2000, "data": f'<http://ex.org/b> <{P}> "2" .'},
        {"time": 500, "data": f'<http://ex.org/c> <{P}> "3" .'},
        {"time": 3000, "data": f'<http://ex.org/d> <{P}> "4" .'},
        {"time": 400, "data": f'<http://ex.org/e> <{P}> "5" .'},
    )
    error = push(server, stream, late, "application/x-ndjson").error(409)
    assert error["line"] == 2
    assert "line 2" in error["error"] and "2 late events" in error["error"]
    state = stream_state(server, stream)
    assert (state["events"], state["rejected"], state["latest"]) == (1, {"late": 2, "future": 0, "malformed": 0}, 1000)
    assert len(incremental.seen) == 1

    # Late with respect to an earlier event of the same batch: still nothing applied.
    inner = ndjson({"time": 5000, "data": f'<http://ex.org/f> <{P}> "6" .'},
                   {"time": 4000, "data": f'<http://ex.org/g> <{P}> "7" .'})
    assert push(server, stream, inner, "application/x-ndjson").error(409)["line"] == 2
    error = push(server, stream, f'<http://ex.org/h> <{P}> "8" .', "application/n-triples", time="999").error(409)
    assert "the event" in error["error"]
    state = stream_state(server, stream)
    assert (state["events"], state["rejected"]["late"], state["latest"]) == (1, 4, 1000)
    assert len(incremental.seen) == 1

    # An equal timestamp is not late; the batch is then applied whole.
    fine = ndjson({"time": 1000, "data": f'<http://ex.org/i> <{P}> "9" .'},
                  {"time": 1500, "data": f'<http://ex.org/j> <{P}> "10" .'})
    answer = push(server, stream, fine, "application/x-ndjson")
    assert answer.status == 200, answer.text
    assert (answer.json()["accepted"], answer.json()["latest"]) == (2, 1500)
    assert [seen[0] for seen in incremental.seen] == [1000, 1000, 1500]
    assert incremental.seen == oracle.seen

    metrics = server.get("/metrics").text
    assert f'cqels_stream_events_rejected_total{{stream="{stream}",reason="late"}} 4\n' in metrics
    assert f'cqels_stream_events_ingested_total{{stream="{stream}"}} 3\n' in metrics


def test_a_trig_graph_that_is_late_is_named(server):
    stream = "http://example.org/streams/late-trig"
    assert push(server, stream, f'<http://ex.org/a> <{P}> "1" .', "application/n-triples", time="10000").status == 200
    body = f"""<http://ex.org/g1> <{PROV}generatedAtTime> "1970-01-01T00:00:01Z"^^<{XSD}dateTime> .
               <http://ex.org/g1> {{ <http://ex.org/a> <{P}> 1 }}"""
    error = push(server, stream, body, "application/trig").error(409)
    assert "graph <http://ex.org/g1>" in error["error"]


def test_writes_need_the_token_and_reads_do_not(server):
    stream = "http://example.org/streams/auth"
    body = f'<http://ex.org/a> <{P}> "1" .'
    assert push(server, stream, body, "application/n-triples", time="1", headers={}).status == 401
    wrong = {"Authorization": "Bearer nope"}
    assert push(server, stream, body, "application/n-triples", time="1", headers=wrong).status == 401
    assert stream_state(server, stream) is None  # refused before anything was read or counted
    assert push(server, stream, body, "application/n-triples", time="1").status == 200
    assert stream_state(server, stream)["events"] == 1


def test_get_streams_reports_counts_rate_latest_and_watermark(server):
    stream = "http://example.org/streams/listed"
    lines = ndjson(*({"time": t, "data": f'<http://ex.org/a> <{P}> "{t}" .'} for t in (10, 20, 30)))
    assert push(server, stream, lines, "application/x-ndjson").status == 200
    assert push(server, stream, f'<http://ex.org/a> <{P}> "x" .', "application/n-triples", time="40").status == 200
    assert push(server, stream, "<http://ex.org/a> .", "application/n-triples", time="50").status == 400
    assert stream_state(server, stream) == {
        "stream": stream, "events": 4, "accepted": 4, "late": 0, "rejected": {"late": 0, "future": 0, "malformed": 1},
        "rate_per_second": 4 / 60, "latest": 40, "watermark": 40, "lateness_ms": 0, "buffered": 0,
    }
    metrics = server.get("/metrics").text
    assert f'cqels_stream_events_ingested_total{{stream="{stream}"}} 4\n' in metrics
    assert f'cqels_stream_events_rejected_total{{stream="{stream}",reason="malformed"}} 1\n' in metrics
    assert f'cqels_stream_latest_timestamp_seconds{{stream="{stream}"}} 0.04\n' in metrics


def test_requests_that_cannot_be_events(server):
    body = f'<http://ex.org/a> <{P}> "1" .'
    assert push(server, "a b", body, "application/n-triples", time="1").error(400)["error"].startswith("the stream")
    assert push(server, "bad-type", body, "application/n-quads", time="1").status == 415
    assert push(server, "bad-type", body, "", time="1").status == 415
    assert "?time=" in push(server, "bad-time", body, "application/n-triples", time="noon").error(400)["error"]
    assert stream_state(server, BASE + "bad-time")["rejected"]["malformed"] == 1
    trig = f'<http://ex.org/g> {{ {body} }}'
    assert "TriG" in push(server, "trig-time", trig, "application/trig", time="5").error(400)["error"]
    assert push(server, "empty", "", "application/x-ndjson").error(400)["error"] == "the NDJSON body holds no events"
    assert server.get("/streams/anything").status == 405


def test_engine_batches_with_lateness_equal_pushes_one_by_one():
    """``Engine.push_batch`` (what the endpoint calls) with a lateness: the same emissions as the
    events pushed one at a time, a late event rejecting its whole batch, the rate over one minute."""
    from cqels_endpoint.testing import ManualClock

    stream = "http://example.org/streams/engine"
    events = [(f'<http://ex.org/e{t}> <{P}> "{t}" .', t) for t in (1000, 950, 1200, 1150, 1300)]
    clock = ManualClock(0)
    batched, single = Engine(lateness_ms=100, clock=clock), Engine(lateness_ms=100)
    by_batch = Recorder(batched.register(query_on(stream), r2s="RSTREAM", mode="recompute"))
    one_by_one = Recorder(single.register(query_on(stream), r2s="RSTREAM", mode="recompute"))
    assert batched.push_batch(stream, events) == 1300
    for data, at in events:
        single.push(stream, data, time=at)
    assert by_batch.seen == one_by_one.seen
    assert [seen[0] for seen in by_batch.seen] == [950, 1000, 1150, 1200]  # 1300 waits for the watermark

    with pytest.raises(LateEventError) as late:
        batched.push_batch(stream, [(f'<http://ex.org/x> <{P}> "x" .', 1400), (f'<http://ex.org/y> <{P}> "y" .', 1250)])
    assert (late.value.index, late.value.late_in_batch, late.value.watermark) == (1, 1, 1300)
    [stats] = batched.stream_stats(stream)
    assert stats == {"stream": stream, "events": 5, "out_of_order": 2, "late": 1, "future": 0, "malformed": 0,
                     "last_minute": 5, "latest": 1300, "watermark": 1200, "lateness_ms": 100, "buffered": 1}
    clock.set(61_000)
    assert batched.stream_stats(stream)[0]["last_minute"] == 0


def test_a_server_lateness_reorders_events_within_it_and_rejects_older_ones(endpoint_factory):
    """``--lateness-ms``: an event up to L behind its stream's latest is accepted and applied in
    timestamp order once the watermark passes it; the emissions equal those of an engine fed the
    events in timestamp order. One older than L is a 409."""
    server = endpoint_factory(cache_engine="local", auth_token=TOKEN, lateness_ms=1000)
    stream = "http://example.org/streams/lateness"
    incremental, oracle = register_pair(server, "lateness", stream)
    events = [(1000, "a"), (1800, "b"), (1500, "c"), (3000, "d")]  # c arrives after b, within L
    for at, subject in events:
        body = f'<http://ex.org/{subject}> <{P}> "{subject}" .'
        assert push(server, stream, body, "application/n-triples", time=str(at)).status == 200
    body = f'<http://ex.org/z> <{P}> "z" .'
    assert "late" in push(server, stream, body, "application/n-triples", time="1900").error(409)["error"]
    in_order = Engine()
    expected = Recorder(in_order.register(query_on(stream), name="in-order", r2s="RSTREAM"))
    for at, subject in sorted(events):
        if at <= 3000 - 1000:  # what the watermark (latest − L) has released so far
            in_order.push(stream, f'<http://ex.org/{subject}> <{P}> "{subject}" .', time=at)
    assert incremental.seen == oracle.seen == expected.seen
    assert [at for at, _r2s, _rows in expected.seen] == [1000, 1500, 1800]
    assert stream_state(server, stream)["watermark"] == 2000
