"""Stopping ``cqels serve`` (issue 16, deliverable 2): SIGTERM and SIGINT end the open results
streams with a last word and the process exits 0 within a second (``--demo``'s demo stream too); an early SIGTERM while Spark
starts prints no traceback; Spark's JVM and Py4J log through the server's logging, at WARN, and
``--log-level`` sets the server's level."""

from __future__ import annotations

import http.client
import io
import logging
import re
import signal
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import pytest
from serve_process import Server, environment, serving

from cqels_endpoint.spark.session import JVM_LOGGER, _log_lines

QUERY = b"SELECT ?s WHERE { STREAM <urn:cqels:stream:s> [RANGE 10s] { ?s ?p ?o } }"
# The bound, on what the server does: from the signal to every connection closed (it logs
# the figure; measured 10-20 ms with four open subscribers).
STOP_WITHIN_S = 1.0
# To the exit status seen by the parent, the interpreter's teardown (modules, pyarrow, the store)
# comes on top: measured 0.4-0.7 s in all on the shared 2-core machine, up to 2 s at load 13. The
# slack is for that teardown only.
EXIT_WITHIN_S = 1.5
STOPPED = re.compile(r"stopped (\d+\.\d+) s after (SIG\w+): every connection closed")


def stopped_after(server: Server, signum: int) -> float:
    """The server's own figure: seconds from the signal to every connection closed."""
    found = [STOPPED.search(line) for line in server.output]
    found = [m for m in found if m]
    assert len(found) == 1 and found[0].group(2) == signal.Signals(signum).name, "".join(server.output)
    return float(found[0].group(1))


class Subscriber:
    """An open results stream, read to its end in a thread."""

    def __init__(self, base_url: str, name: str, accept: str):
        where = urlsplit(base_url)
        self.connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        self.connection.request("GET", f"/queries/{name}/results", headers={"Accept": accept})
        self.response = self.connection.getresponse()
        assert self.response.status == 200
        self.lines: list[bytes] = []
        self.ended = threading.Event()
        if accept == "text/event-stream":
            self.lines.append(self.response.readline())  # the greeting comment: subscribed from here on
            assert self.lines[0].startswith(b": subscribed to query")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.response:
                self.lines.append(line)
        except (OSError, http.client.HTTPException) as error:
            self.lines.append(b"!broken " + repr(error).encode())
        finally:
            self.ended.set()

    def close(self) -> None:
        self.connection.close()


def register(server: Server, name: str = "q") -> None:
    status, body = server.request("PUT", f"/queries/{name}", QUERY, {"Content-Type": "application/sparql-query"})
    assert status == 201, body


def stop_with(server: Server, signum: int) -> tuple[int, float]:
    """Send ``signum``; the exit code and the seconds until the process was gone."""
    sent = time.monotonic()
    server.process.send_signal(signum)
    code = server.process.wait(30)
    return code, time.monotonic() - sent


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_open_results_streams_and_exits_within_a_second(tmp_path, signum) -> None:
    # An NDJSON response's headers leave with its first line: a keep-alive, after a second.
    with serving("--data-dir", str(tmp_path / "data"), "--keepalive-s", "1") as server:
        register(server, "q")
        register(server, "r")
        subscribers = [Subscriber(server.base_url, "q", "text/event-stream") for _ in range(3)]
        subscribers.append(Subscriber(server.base_url, "r", "application/x-ndjson"))
        try:
            code, took = stop_with(server, signum)
            assert code == 0, "".join(server.output)
            assert took < EXIT_WITHIN_S, f"exited after {took:.2f} s"
            for subscriber in subscribers:
                assert subscriber.ended.wait(5), "a results stream stayed open after the server exited"
            for subscriber in subscribers[:3]:
                assert b": stream ended by the server: the server is stopping\n" in subscriber.lines, subscriber.lines
            assert not [line for s in subscribers for line in s.lines if line.startswith(b"!broken")]  # an end, not a cut
        finally:
            for subscriber in subscribers:
                subscriber.close()
    printed = "".join(server.output)
    assert "Traceback" not in printed and "still running" not in printed, printed
    assert stopped_after(server, signum) < STOP_WITHIN_S


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_demo_stream_stops_with_the_server(tmp_path, signum) -> None:
    # The demo stream pushes every half second while a subscriber reads the demo query's emissions.
    with serving("--memory", "--demo", cwd=tmp_path) as server:
        give_up = time.monotonic() + 30
        while not any("the demo stream feeds" in line for line in server.output):
            assert time.monotonic() < give_up, "".join(server.output)
            time.sleep(0.05)
        while server.request("GET", "/queries/demo")[0] != 200:
            assert time.monotonic() < give_up, "".join(server.output)
            time.sleep(0.05)
        subscriber = Subscriber(server.base_url, "demo", "text/event-stream")
        try:
            while not any(line.startswith(b"event: emission") for line in list(subscriber.lines)):
                assert time.monotonic() < give_up, subscriber.lines
                time.sleep(0.05)
            code, took = stop_with(server, signum)
            assert code == 0, "".join(server.output)
            assert took < EXIT_WITHIN_S, f"exited after {took:.2f} s"
            assert subscriber.ended.wait(5)
            assert b": stream ended by the server: the server is stopping\n" in subscriber.lines, subscriber.lines
        finally:
            subscriber.close()
    printed = "".join(server.output)
    assert "Traceback" not in printed and "still running" not in printed, printed
    assert stopped_after(server, signum) < STOP_WITHIN_S


def test_a_second_signal_stops_at_once(tmp_path) -> None:
    with serving("--memory", cwd=tmp_path) as server:
        register(server, "q")
        subscriber = Subscriber(server.base_url, "q", "text/event-stream")
        try:
            server.process.send_signal(signal.SIGINT)
            code, took = stop_with(server, signal.SIGINT)
            assert subscriber.ended.wait(5)
        finally:
            subscriber.close()
    printed = "".join(server.output)
    assert code == 0, printed
    assert took < EXIT_WITHIN_S, f"exited after {took:.2f} s"
    assert stopped_after(server, signal.SIGINT) < STOP_WITHIN_S
    assert "Traceback" not in printed, printed


def test_a_server_without_subscribers_stops_as_fast(tmp_path) -> None:
    with serving("--memory", cwd=tmp_path) as server:
        code, took = stop_with(server, signal.SIGTERM)
    assert code == 0
    assert took < EXIT_WITHIN_S, f"exited after {took:.2f} s"
    assert stopped_after(server, signal.SIGTERM) < STOP_WITHIN_S


def test_log_level_sets_the_servers_level(tmp_path) -> None:
    with serving("--memory", "--log-level", "warning", cwd=tmp_path) as server:
        assert stop_with(server, signal.SIGTERM)[0] == 0
    assert "stopping on SIGTERM" not in "".join(server.output)  # an INFO line
    with serving("--memory", env={"CQELS_LOG_LEVEL": "DEBUG"}, cwd=tmp_path) as server:
        assert stop_with(server, signal.SIGTERM)[0] == 0
    assert "INFO cqels_endpoint.http: stopping on SIGTERM" in "".join(server.output)
    done = subprocess.run(
        [sys.executable, "-m", "cqels_endpoint.cli", "serve", "--memory", "--log-level", "chatty"],
        capture_output=True, text=True, env=environment(), timeout=60,
    )
    assert done.returncode == 2
    assert "--log-level" in done.stderr and "chatty" in done.stderr.lower()


# ------------------------------------------------------------------ Spark


def test_the_jvms_lines_are_logged_at_their_level(caplog) -> None:
    output = io.BytesIO(
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"26/11/26 03:15:23 WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address\n"
        b"Setting default log level to \"WARN\".\n"
        b"26/11/26 03:15:24 ERROR Executor: Exception in task 0.0\n"
        b"java.lang.IllegalStateException: boom\n"
        b"\tat org.apache.spark.Foo.bar(Foo.scala:1)\n"
        b"Caused by: java.io.IOException: disk\n"
        b"26/11/26 03:15:25 INFO SparkContext: Running Spark\n"
        b"\n"
    )
    with caplog.at_level(logging.DEBUG, logger=JVM_LOGGER):
        _log_lines(output)
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == JVM_LOGGER] == [
        ("INFO", "WARNING: Using incubator modules: jdk.incubator.vector"),
        ("WARNING", "Utils: Set SPARK_LOCAL_IP if you need to bind to another address"),
        ("INFO", 'Setting default log level to "WARN".'),
        ("ERROR", "Executor: Exception in task 0.0"),
        ("ERROR", "java.lang.IllegalStateException: boom"),
        ("ERROR", "\tat org.apache.spark.Foo.bar(Foo.scala:1)"),
        ("ERROR", "Caused by: java.io.IOException: disk"),
        ("INFO", "SparkContext: Running Spark"),
    ]


# A line the server's logging wrote ("2026-11-26 03:15:23,993 WARNING name: message"), or its own
# "cqels serve:" lines on standard output.
_OWN_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) \S+: |cqels serve: ")


def test_sigterm_while_spark_starts_prints_no_traceback() -> None:
    with serving("--memory", "--cache-engine", "spark") as server:
        # The JVM starts in the background as the server listens: this signal comes while it starts.
        code, took = stop_with(server, signal.SIGTERM)
    printed = "".join(server.output)
    assert code == 0, printed
    assert "Traceback" not in printed and "Py4J" not in printed, printed
    assert took < 5 * EXIT_WITHIN_S, f"exited after {took:.2f} s"  # no wait for the JVM to come up
    assert stopped_after(server, signal.SIGTERM) < STOP_WITHIN_S
    assert all(_OWN_LINE.match(line) for line in server.output if line.strip()), printed


@pytest.mark.slow
def test_a_started_spark_session_is_stopped_quietly_through_the_servers_logging() -> None:
    with serving("--memory", "--cache-engine", "spark", "--log-level", "info") as server:
        give_up = time.monotonic() + 240
        while not any('Setting Spark log level to "WARN"' in line for line in server.output):
            assert time.monotonic() < give_up, "".join(server.output)
            assert server.process.poll() is None, "".join(server.output)
            time.sleep(0.2)
        time.sleep(1)  # the context is up; let the session finish
        code, took = stop_with(server, signal.SIGTERM)
    printed = "".join(server.output)
    assert code == 0, printed
    assert "Traceback" not in printed, printed
    # Everything the JVM printed came through the server's logging, and nothing at INFO from Spark
    # or Py4J (the launcher's own banner lines excepted: they are not log4j lines).
    assert all(_OWN_LINE.match(line) for line in server.output if line.strip()), printed
    assert not [line for line in server.output if " INFO py4j" in line]
    assert took < 5 * EXIT_WITHIN_S, f"exited after {took:.2f} s"
    assert stopped_after(server, signal.SIGTERM) < STOP_WITHIN_S


def test_sigterm_while_starting_stops_without_a_traceback(tmp_path) -> None:
    # SIGTERM as soon as the demo data is loaded, before the app is built and listens.
    process = subprocess.Popen(
        [sys.executable, "-m", "cqels_endpoint.cli", "serve", "--memory", "--demo", "--port", "0", "--cache-engine", "local"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment(), cwd=tmp_path,
    )  # fmt: skip
    try:
        printed = [process.stdout.readline()]
        assert "loaded the demo data" in printed[0], printed
        process.send_signal(signal.SIGTERM)
        printed.append(process.stdout.read())
        code = process.wait(30)
    finally:
        process.kill()
        process.stdout.close()
    text = "".join(printed)
    assert code == 0, text
    assert "Traceback" not in text, text
    # Either the start-up was interrupted or, had it already listened, the server stopped.
    assert "stopped while starting" in text or "stopping on SIGTERM" in text, text
