"""Stream time over HTTP (``http/streams.py``, issue 16): timestamps the engine cannot hold are a 400
whichever way they come and move no clock; ``--max-future-ms`` refuses events too far ahead (422);
``GET /streams`` shows each clock and its counts; ``DELETE /streams/{name}/clock`` resets a clock
(with the token); the clocks survive a restart, of the app and of ``cqels serve``."""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

import pytest
from serve_process import serving

from cqels_endpoint.cli import build_parser
from cqels_endpoint.config import ServerConfig
from cqels_endpoint.engine.clocks import FILE_NAME
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.runtime.streams import TIME_MAX_MS, TIME_MIN_MS
from tests.http.test_http_streams import AUTH, PROV, TOKEN, XSD, P, Recorder, ndjson, push, query_on, stream_state
from tests.http.test_persistence import running

BASE = "http://example.org/time/"
NT = "application/n-triples"


def body(n: int | str) -> str:
    return f'<http://ex.org/e{n}> <{P}> "{n}" .'


def trig_at(stamp: str) -> str:
    return f"""<http://ex.org/g> <{PROV}generatedAtTime> "{stamp}"^^<{XSD}dateTime> .
               <http://ex.org/g> {{ <http://ex.org/a> <{P}> 1 }}"""


@pytest.fixture(scope="module")
def server(endpoint_factory):
    return endpoint_factory(cache_engine="local", auth_token=TOKEN, stream_base=BASE, max_future_ms=60_000)


BAD_TIMES = [
    # (how the time comes, body, content type, ?time=, the value the error names)
    ("query-huge", body(2), NT, "99999999999999999999999", "99999999999999999999999"),
    ("query-huge-negative", body(2), NT, "-99999999999999999999999", "-99999999999999999999999"),
    ("query-one-past-the-end", body(2), NT, str(TIME_MAX_MS + 1), str(TIME_MAX_MS + 1)),
    ("query-year-10000", body(2), "text/turtle", "10000-01-01T00:00:00Z", "10000-01-01T00:00:00Z"),
    ("query-year-0000", body(2), NT, "0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z"),
    ("ndjson-integer", ndjson({"time": 99999999999999999999999, "data": body(2)}), "application/x-ndjson", None,
     "99999999999999999999999"),
    ("ndjson-before-year-1", ndjson({"time": 3000, "data": body(2)}, {"time": TIME_MIN_MS - 1, "data": body(3)}),
     "application/x-ndjson", None, str(TIME_MIN_MS - 1)),
    ("ndjson-datetime", ndjson({"time": "4199-11-24T01:22:57.664Z", "data": body(2)}), "application/x-ndjson",
     None, "4199-11-24T01:22:57.664Z"),
    ("trig-before-year-1", trig_at("0001-01-01T00:00:00+01:00"), "application/trig", None, "0001-01-01T00:00:00+01:00"),
    ("trig-year-99999", trig_at("99999-01-01T00:00:00Z"), "application/trig", None, "99999-01-01T00:00:00Z"),
]


@pytest.mark.parametrize(("name", "data", "content_type", "at", "named"), BAD_TIMES, ids=[t[0] for t in BAD_TIMES])
def test_a_time_the_engine_cannot_hold_is_a_400_and_moves_no_clock(server, name, data, content_type, at, named):
    stream = BASE + name
    seen = Recorder(endpoint(server.app).engine.register(query_on(stream), name=f"time-{name}", r2s="RSTREAM"))
    assert push(server, stream, body(1), NT, time="1000").status == 200

    error = push(server, stream, data, content_type, time=at).error(400)
    assert named in error["error"] and "4199-11-24T01:22:57.663Z" in error["error"], error
    state = stream_state(server, stream)
    assert (state["latest"], state["accepted"], state["rejected"]["malformed"]) == (1000, 1, 1)
    assert len(seen.seen) == 1  # nothing reached the query

    # Normal pushes go on, before and after the clock's latest... and the event refused stays refused.
    assert push(server, stream, body(3), NT, time="2000").status == 200
    assert push(server, stream, body(4), NT, time="1500").status == 409
    assert [at for at, _r2s, _rows in seen.seen] == [1000, 2000]


def test_negative_times_and_year_0001_are_accepted(server):
    stream = BASE + "old"
    assert push(server, stream, body(1), NT, time="0001-01-01T00:00:00Z").status == 200
    assert stream_state(server, stream)["latest"] == TIME_MIN_MS
    assert push(server, stream, body(2), NT, time="-1").status == 200
    answer = push(server, stream, body(3), "text/turtle", time="1969-12-31T23:59:59.999Z")
    assert answer.status == 200 and answer.json()["latest"] == -1


def test_events_too_far_ahead_of_the_clock_are_a_422_naming_value_and_bound(server):
    stream = BASE + "future"
    now = int(time.time() * 1000)
    assert push(server, stream, body(1), NT, time=str(now)).status == 200
    ahead = now + 3_600_000
    error = push(server, stream, body(2), NT, time=str(ahead)).error(422)
    assert str(ahead) in error["error"] and "max_future_ms=60000" in error["error"]
    lines = ndjson({"time": now + 1, "data": body(3)}, {"time": ahead, "data": body(4)}, {"time": ahead, "data": body(5)})
    error = push(server, stream, lines, "application/x-ndjson").error(422)
    assert error["line"] == 2 and "line 2" in error["error"] and "2 such events" in error["error"]
    state = stream_state(server, stream)
    assert (state["accepted"], state["rejected"], state["latest"]) == (1, {"late": 0, "future": 3, "malformed": 0}, now)
    assert push(server, stream, body(6), NT, time=str(now + 30_000)).status == 200  # within the bound
    metrics = server.get("/metrics").text
    assert f'cqels_stream_events_rejected_total{{stream="{stream}",reason="future"}} 3' in metrics


def test_get_streams_shows_the_clock_and_the_counts(endpoint_factory):
    server = endpoint_factory(cache_engine="local", stream_base=BASE, lateness_ms=100)
    stream = BASE + "counts"
    lines = ndjson(*({"time": t, "data": body(t)} for t in (1000, 950, 1200, 1150)))
    assert push(server, stream, lines, "application/x-ndjson", headers={}).status == 200
    assert push(server, stream, body(9), NT, time="900", headers={}).status == 409
    assert push(server, stream, "<x> .", NT, time="1300", headers={}).status == 400
    assert stream_state(server, stream) | {"rate_per_second": None} == {
        "stream": stream, "events": 4, "accepted": 4, "late": 2, "rejected": {"late": 1, "future": 0, "malformed": 1},
        "rate_per_second": None, "latest": 1200, "watermark": 1100, "lateness_ms": 100, "buffered": 2,
    }


def test_an_operator_resets_a_clock_with_the_token(endpoint_factory):
    server = endpoint_factory(cache_engine="local", auth_token=TOKEN, stream_base=BASE)  # no future bound
    stream = BASE + "reset"
    path = f"/streams/{urllib.parse.quote(stream, safe='')}/clock"
    seen = Recorder(endpoint(server.app).engine.register(query_on(stream), name="time-reset", r2s="RSTREAM"))
    # A client pushed the last instant the engine holds: every normal push is now late.
    assert push(server, stream, body(1), NT, time=str(TIME_MAX_MS)).status == 200
    assert push(server, stream, body(2), NT, time="5000").status == 409

    assert server.delete(path).status == 401
    assert server.delete(path, headers={"Authorization": "Bearer nope"}).status == 401
    assert stream_state(server, stream)["latest"] == TIME_MAX_MS
    answer = server.delete(path, headers=AUTH)
    assert answer.status == 200, answer.text
    reset = answer.json()
    assert (reset["stream"], reset["latest"], reset["watermark"], reset["released"]) == (stream, None, None, 0)
    assert (reset["accepted"], reset["rejected"]["late"]) == (1, 1)  # the counts stay
    # The query that evaluated at the wrong time keeps it: the answer names it, to be re-registered.
    assert reset["queries"] == [{"name": "time-reset", "clock": TIME_MAX_MS}]

    engine = endpoint(server.app).engine
    engine.unregister("time-reset")
    seen = Recorder(engine.register(query_on(stream), name="time-reset", r2s="RSTREAM"))
    assert push(server, stream, body(3), NT, time="5000").status == 200
    assert [at for at, _r2s, _rows in seen.seen] == [5000]
    assert server.delete("/streams/never-seen/clock", headers=AUTH).error(404)["error"] == f"no stream <{BASE}never-seen> has been seen"
    assert server.delete("/streams/reset/clock", headers=AUTH).json()["stream"] == stream  # a short name


def test_the_clocks_and_buffered_events_survive_an_app_restart(tmp_path: Path):
    stream = "http://example.org/streams/kept"
    fields = {"lateness_ms": 1000, "auth_token": TOKEN}
    with running(tmp_path, **fields) as live:
        lines = ndjson(*({"time": t, "data": body(t)} for t in (10_000, 9_500, 11_000)))
        assert push(live, stream, lines, "application/x-ndjson").status == 200
        before = stream_state(live, stream)
        assert (before["latest"], before["watermark"], before["buffered"]) == (11_000, 10_000, 1)
    assert (tmp_path / FILE_NAME).exists()
    with running(tmp_path, **fields) as live:
        seen = Recorder(endpoint(live.app).engine.register(query_on(stream), name="kept", r2s="RSTREAM"))
        assert stream_state(live, stream) | {"rate_per_second": None} == before | {"rate_per_second": None}
        assert push(live, stream, body(1), NT, time="9999").status == 409  # the past stays closed
        assert push(live, stream, body(2), NT, time="12000").status == 200
        assert [at for at, _r2s, _rows in seen.seen] == [11_000]  # the event buffered before the restart


def test_an_in_memory_server_keeps_no_clock(tmp_path: Path):
    with running(tmp_path, memory=True) as live:
        assert push(live, "http://example.org/streams/m", body(1), NT, time="1").status == 200
    assert not (tmp_path / FILE_NAME).exists()


def test_max_future_ms_flag_environment_and_config():
    assert build_parser().parse_args(["serve"]).max_future_ms == 0  # off by default
    assert build_parser().parse_args(["serve", "--max-future-ms", "5000"]).max_future_ms == 5000
    with pytest.raises(ValueError, match="max_future_ms"):
        ServerConfig(max_future_ms=-1)


def test_max_future_ms_environment_twin(monkeypatch):
    monkeypatch.setenv("CQELS_MAX_FUTURE_MS", "250")
    assert build_parser().parse_args(["serve"]).max_future_ms == 250


@pytest.mark.slow  # three server starts: ~5 s, more under load
def test_cqels_serve_keeps_the_clocks_across_sigterm_and_sigkill_restarts(tmp_path: Path):
    flags = ("--data-dir", str(tmp_path), "--cache-engine", "local")
    stream = urllib.parse.quote("http://example.org/streams/serve", safe="")
    nt = {"Content-Type": NT}
    with serving(*flags) as server:
        assert server.request("POST", f"/streams/{stream}?time=5000", body(1).encode(), nt)[0] == 200
        assert server.request("POST", f"/streams/{stream}?time=99999999999999999999999", body(2).encode(), nt)[0] == 400
        assert server.request("POST", f"/streams/{stream}?time=6000", body(3).encode(), nt)[0] == 200
        assert server.stop() == 0
    with serving(*flags) as server:
        status, answer = server.request("POST", f"/streams/{stream}?time=5500", body(4).encode(), nt)
        assert status == 409, answer
        [state] = json.loads(server.request("GET", "/streams")[1])["streams"]
        assert (state["latest"], state["watermark"], state["accepted"]) == (6000, 6000, 2)
        assert state["rejected"] == {"late": 1, "future": 0, "malformed": 1}
        assert server.request("POST", f"/streams/{stream}?time=7000", body(5).encode(), nt)[0] == 200
        server.process.kill()  # SIGKILL: no shutdown, only what was journaled before the 200
        server.process.wait()
    with serving(*flags) as server:
        assert server.request("POST", f"/streams/{stream}?time=6999", body(6).encode(), nt)[0] == 409
        [state] = json.loads(server.request("GET", "/streams")[1])["streams"]
        assert (state["latest"], state["accepted"], state["rejected"]["late"]) == (7000, 3, 2)
        assert server.stop() == 0
