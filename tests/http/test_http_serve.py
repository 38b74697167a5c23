"""``cqels serve`` as a user runs it: a subprocess that starts, answers, stops on SIGTERM, keeps its
data across restarts, loads the demo data once, and reads its flags from ``CQELS_*`` variables."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.parse
from pathlib import Path

from serve_process import environment, serving

from cqels_endpoint.cli import build_parser


def test_serve_memory_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    with serving("--memory", cwd=tmp_path) as server:
        status, body = server.request("GET", "/health")
        assert status == 200
        assert json.loads(body)["status"] == "ok"
        assert server.query("ASK {}")["boolean"] is True
        assert server.stop() == 0
    assert not (tmp_path / "cqels-data").exists()


def test_a_data_dir_keeps_the_data_across_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    graph = urllib.parse.quote("http://example.org/kept", safe="")
    with serving("--data-dir", str(data_dir)) as server:
        status, _ = server.request(
            "PUT", f"/store?graph={graph}", b"<http://example.org/s> <http://example.org/p> 42 .",
            {"Content-Type": "text/turtle"},
        )
        assert status == 201
        version = json.loads(server.request("GET", "/health")[1])["version"]
        assert server.stop() == 0
    with serving("--data-dir", str(data_dir)) as server:
        status, body = server.request("GET", f"/store?graph={graph}", headers={"Accept": "application/n-triples"})
        assert status == 200
        assert b"<http://example.org/s> <http://example.org/p>" in body and b"42" in body
        assert json.loads(server.request("GET", "/health")[1])["version"] == version
        assert server.stop() == 0


def test_demo_loads_once_and_prints_curl_commands(tmp_path: Path) -> None:
    data_dir = tmp_path / "demo"
    with serving("--data-dir", str(data_dir), "--demo") as server:
        rooms = server.query(
            "PREFIX lv: <http://deri.org/floorplan/> SELECT ?name WHERE { GRAPH lv: { ?r lv:name ?name } }"
        )
        assert len(rooms["results"]["bindings"]) == 6
        alice = server.query('ASK { ?p <http://xmlns.com/foaf/0.1/name> "Alice Smith" }')
        assert alice["boolean"] is True
        version = json.loads(server.request("GET", "/health")[1])["version"]
        assert server.stop() == 0
    printed = "".join(server.output)
    assert "loaded the demo data" in printed
    assert f"curl -s {server.base_url}/query" in printed
    with serving("--data-dir", str(data_dir), "--demo") as server:
        assert "already holds data" in "".join(server.output)
        assert json.loads(server.request("GET", "/health")[1])["version"] == version  # nothing written again
        assert server.stop() == 0


def test_environment_twins_configure_the_server(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"CQELS_PORT": str(port), "CQELS_MEMORY": "1", "CQELS_AUTH_TOKEN": "tok"}
    with serving(env=env, cwd=tmp_path) as server:
        assert server.base_url == f"http://127.0.0.1:{port}"
        update = b"INSERT DATA { <http://example.org/s> <http://example.org/p> 1 }"
        headers = {"Content-Type": "application/sparql-update"}
        assert server.request("POST", "/update", update, headers)[0] == 401
        assert server.request("POST", "/update", update, {**headers, "Authorization": "Bearer tok"})[0] == 204
        assert not (tmp_path / "cqels-data").exists()  # CQELS_MEMORY: no store on disk
        assert server.stop() == 0


def test_bad_flag_values_exit_2() -> None:
    bad = (["--query-timeout", "-1"], ["--port", "70000"], ["--max-body-mb", "-1"], ["--port", "x"])
    # All started at once: each is a Python start-up that then refuses its flag.
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "cqels_endpoint.cli", "serve", "--memory", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
        )
        for flags in bad
    ]
    try:
        for flags, process in zip(bad, processes):
            _, stderr = process.communicate(timeout=60)
            assert process.returncode == 2, (flags, stderr)
            assert "cqels" in stderr
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()


def test_a_port_in_use_exits_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "cqels_endpoint.cli", "serve", "--memory", "--port", str(port)],
            capture_output=True, text=True, env=environment(), timeout=60,
        )
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_every_serve_flag_has_an_environment_twin(monkeypatch) -> None:
    values = {
        "CQELS_HOST": "0.0.0.0",
        "CQELS_PORT": "9999",
        "CQELS_DATA_DIR": "/tmp/x",
        "CQELS_MEMORY": "yes",
        "CQELS_AUTH_TOKEN": "t",
        "CQELS_QUERY_TIMEOUT": "2.5",
        "CQELS_MAX_BODY_MB": "3",
        "CQELS_ALLOW_REMOTE": "on",
        "CQELS_DEMO": "true",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.data_dir, args.memory, args.auth_token) == ("0.0.0.0", 9999, "/tmp/x", True, "t")
    assert (args.query_timeout, args.max_body_mb, args.allow_remote, args.demo) == (2.5, 3.0, True, True)
    flags = build_parser().parse_args(["serve", "--port", "1234", "--no-memory"])
    assert (flags.port, flags.memory) == (1234, False)  # the command line wins
