"""``cqels push`` and ``cqels replay`` against a real server (the clients of ``POST /streams/{name}``).

The replay is checked by oracle: DEBS Q1 registered on the server's engine sees exactly what the same
query in recompute mode sees when the same trips (``debs.trip_events``) are pushed straight into a
fresh engine.
"""

from __future__ import annotations

import json
import time

import pytest
from debs import PREDICATES, trip_events
from debs import SAMPLE as DEBS_SAMPLE
from incremental_oracle import emission_key
from paths import ROOT

from cqels_endpoint import Engine
from cqels_endpoint.cli import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, main
from cqels_endpoint.cli.replay import DEBS_TRIPS
from cqels_endpoint.http.context import endpoint

TOKEN = "t0ken"
P = "http://ex.org/p"
Q1 = ROOT / "examples" / "queries" / "debs-q1-frequent-routes.rq"


@pytest.fixture(scope="module")
def server(endpoint_factory):
    return endpoint_factory(cache_engine="local", auth_token=TOKEN, stream_base="http://example.org/s/")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    # The flags' environment twins must not leak in from the shell running the tests.
    for name in ("CQELS_URL", "CQELS_AUTH_TOKEN", "CQELS_TIME", "CQELS_FORMAT", "CQELS_STREAM", "CQELS_SPEED",
                 "CQELS_LIMIT", "CQELS_BATCH", "CQELS_MAPPING"):
        monkeypatch.delenv(name, raising=False)


def cqels(server, *args: str, token: str | None = TOKEN) -> int:
    return main([*args, "--url", server.base_url, *(["--auth-token", token] if token else [])])


def stream_state(server, iri: str) -> dict | None:
    return next((s for s in server.get("/streams").json()["streams"] if s["stream"] == iri), None)


def test_push_sends_a_file_in_the_syntax_its_extension_names(server, tmp_path, capsys):
    stream = "http://example.org/s/files"
    (tmp_path / "one.nt").write_text(f'<http://ex.org/a> <{P}> "1" .\n')
    (tmp_path / "two.ttl").write_text("@prefix e: <http://ex.org/> .\ne:b e:p 2 .\n")
    (tmp_path / "three.trig").write_text(
        f"""<http://ex.org/g3> <http://www.w3.org/ns/prov#generatedAtTime>
               "1970-01-01T00:00:03Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .
           <http://ex.org/g3> {{ <http://ex.org/c> <{P}> 3 }}""")
    (tmp_path / "four.ndjson").write_text(
        json.dumps({"time": 4000, "data": f'<http://ex.org/d> <{P}> "4" .'}) + "\n"
        + json.dumps({"time": 4500, "data": f'<http://ex.org/e> <{P}> "5" .'}) + "\n")
    (tmp_path / "five.txt").write_text(json.dumps({"@id": "http://ex.org/f", P: "6"}))

    assert cqels(server, "push", stream, str(tmp_path / "one.nt"), "--time", "1000") == EXIT_OK
    assert "1 event(s) accepted on <http://example.org/s/files>; its latest timestamp is 1000 ms" in (
        capsys.readouterr().out)
    assert cqels(server, "push", "files", str(tmp_path / "two.ttl"), "--time", "1970-01-01T00:00:02Z") == EXIT_OK
    assert cqels(server, "push", stream, str(tmp_path / "three.trig")) == EXIT_OK
    assert cqels(server, "push", stream, str(tmp_path / "four.ndjson")) == EXIT_OK
    assert "2 event(s) accepted" in capsys.readouterr().out
    assert cqels(server, "push", stream, str(tmp_path / "five.txt"), "--format", "jsonld", "--time", "5000") == EXIT_OK
    state = stream_state(server, stream)
    assert (state["events"], state["latest"]) == (6, 5000)


def test_push_reads_standard_input_with_format(server, monkeypatch, capsys):
    import io
    import sys

    stream = "http://example.org/s/stdin"
    data = f'<http://ex.org/a> <{P}> "1" .\n'.encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert cqels(server, "push", stream, "-", "--format", "application/n-triples", "--time", "7") == EXIT_OK
    assert stream_state(server, stream)["latest"] == 7


def test_push_reports_refusals_with_their_line(server, tmp_path, capsys, monkeypatch):
    stream = "http://example.org/s/refused"
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix e: <http://ex.org/> .\ne:a e:p 1 .\ne:b e:p .\n")
    assert cqels(server, "push", stream, str(bad), "--time", "1") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "the server answered 400" in err and "line 3" in err

    good = tmp_path / "good.nt"
    good.write_text(f'<http://ex.org/a> <{P}> "1" .\n')
    assert cqels(server, "push", stream, str(good), "--time", "1", token=None) == EXIT_BAD_INPUT
    assert "the server answered 401" in capsys.readouterr().err
    monkeypatch.setenv("CQELS_AUTH_TOKEN", TOKEN)  # the flag's environment twin
    assert cqels(server, "push", stream, str(good), "--time", "100", token=None) == EXIT_OK
    assert cqels(server, "push", stream, str(good), "--time", "50") == EXIT_BAD_INPUT
    assert "the server answered 409" in capsys.readouterr().err
    assert stream_state(server, stream) | {"rate_per_second": None} == {
        "stream": stream, "events": 1, "accepted": 1, "late": 0, "rejected": {"late": 1, "future": 0, "malformed": 1},
        "rate_per_second": None, "latest": 100, "watermark": 100, "lateness_ms": 0, "buffered": 0,
    }

    assert cqels(server, "push", stream, str(tmp_path / "missing.nt")) == EXIT_BAD_INPUT
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "events.csv").write_text("x")
    assert cqels(server, "push", stream, str(tmp_path / "events.csv")) == EXIT_BAD_INPUT
    assert "--format" in capsys.readouterr().err
    assert main(["push", stream, str(good), "--url", "http://127.0.0.1:9"]) == EXIT_FAILURE
    assert "cannot reach the server" in capsys.readouterr().err


def test_replay_feeds_debs_q1_as_the_oracle_sees_it(server, capsys):
    trips = 300
    engine = endpoint(server.app).engine
    served: list = []
    engine.register(Q1.read_text(), name="debs-q1").subscribe(served.append)

    assert cqels(server, "replay", str(DEBS_SAMPLE), "--mapping", "debs2015", "--stream", DEBS_TRIPS,
                 "--speed", "0", "--limit", str(trips), "--batch", "128") == EXIT_OK
    assert f"{trips} events in 3 batches to <{DEBS_TRIPS}>" in capsys.readouterr().out

    oracle_engine = Engine()
    expected: list = []
    oracle_engine.register(Q1.read_text(), mode="recompute").subscribe(expected.append)
    for _, stream, at, triples in trip_events(trips, PREDICATES):
        oracle_engine.push(stream, triples, time=at)
    assert len(expected) > 10
    assert [emission_key(e, ordered=True) for e in served] == [emission_key(e, ordered=True) for e in expected]
    state = stream_state(server, DEBS_TRIPS)
    assert (state["events"], state["latest"]) == (trips, trip_events(trips, PREDICATES)[-1][2])


def test_replay_paces_at_n_times_real_time(server, capsys):
    # The first 100 trips span 420 s of drop-off time: at 600x real time that is 0.7 s.
    started = time.perf_counter()
    assert cqels(server, "replay", str(DEBS_SAMPLE), "--stream", "paced", "--speed", "600", "--limit", "100") == EXIT_OK
    assert time.perf_counter() - started >= 0.65
    out = capsys.readouterr().out
    batches = int(out.split(" events in ")[1].split(" batches")[0])
    assert batches > 1  # sent as the trips fall due, not in one request
    assert stream_state(server, "http://example.org/s/paced")["events"] == 100


def test_replay_stops_at_a_refused_batch_naming_the_csv_line(server, tmp_path, capsys):
    stream = "http://example.org/s/replay-late"
    ahead = tmp_path / "ahead.nt"
    ahead.write_text(f'<http://ex.org/a> <{P}> "1" .\n')
    # 2013-01-01T00:05:00Z: trips dropped off before it are late.
    assert cqels(server, "push", stream, str(ahead), "--time", "2013-01-01T00:05:00Z") == EXIT_OK
    capsys.readouterr()
    code = cqels(server, "replay", str(DEBS_SAMPLE), "--stream", stream, "--speed", "0", "--limit", "50")
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "CSV lines 1-50 was refused at CSV line 1" in err and "409" in err and "0 events were sent" in err
    assert stream_state(server, stream)["events"] == 1

    broken = tmp_path / "broken.csv"
    broken.write_text(DEBS_SAMPLE.read_text().splitlines()[0] + "\nnot,a,trip\n")
    assert cqels(server, "replay", str(broken), "--stream", "broken", "--speed", "0") == EXIT_BAD_INPUT
    assert "line 2: 3 columns" in capsys.readouterr().err
    assert stream_state(server, "http://example.org/s/broken") is None  # the bad row stopped it before sending


def test_serve_maps_short_names_under_its_stream_base(tmp_path, capsys):
    from serve_process import serving

    event = tmp_path / "event.nt"
    event.write_text(f'<http://ex.org/a> <{P}> "1" .\n')
    for flags, env, base in [
        (("--memory", "--stream-base", "http://deri.org/streams/"), None, "http://deri.org/streams/"),
        (("--memory",), {"CQELS_STREAM_BASE": "urn:ex:"}, "urn:ex:"),
        (("--memory",), None, "urn:cqels:stream:"),
    ]:
        with serving(*flags, env=env, cwd=tmp_path) as running:
            assert main(["push", "rfid", str(event), "--time", "5", "--url", running.base_url]) == EXIT_OK
            assert f"accepted on <{base}rfid>" in capsys.readouterr().out
            assert running.stop() == 0
