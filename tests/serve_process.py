"""``cqels serve`` as a subprocess, for the tests that run the server as a user does (tests/http,
tests/cli, tests/faults, tests/examples): ``serving`` starts it and yields a ``Server`` once it
listens; ``environment`` is the environment such a subprocess gets."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty, Queue
from threading import Thread

import pytest

LISTENING = re.compile(r"listening on (http://\S+?)/ ")
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 20
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Server:
    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.base_url = ""
        self.output: list[str] = []  # every line printed so far (stdout and stderr)
        self._lines: Queue[str | None] = Queue()
        self._pump = Thread(target=self._read_output, daemon=True)
        self._pump.start()

    def _read_output(self) -> None:
        for line in self.process.stdout:
            self.output.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def wait_until_listening(self) -> None:
        while True:
            try:
                line = self._lines.get(timeout=START_TIMEOUT_S)
            except Empty:
                pytest.fail(f"cqels serve did not start: {''.join(self.output)}")
            if line is None:
                pytest.fail(f"cqels serve exited with {self.process.wait()}: {''.join(self.output)}")
            found = LISTENING.search(line)
            if found:
                self.base_url = found.group(1)
                return

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        request = urllib.request.Request(self.base_url + path, data=body, method=method, headers=headers or {})
        try:
            with OPENER.open(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.read()

    def query(self, text: str) -> dict:
        status, body = self.request("GET", "/query?" + urllib.parse.urlencode({"query": text}))
        assert status == 200, body
        return json.loads(body)

    def stop(self) -> int:
        """SIGTERM, then the exit code; the output is complete afterwards."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(STOP_TIMEOUT_S)
        self._pump.join(STOP_TIMEOUT_S)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._pump.join(STOP_TIMEOUT_S)
        self.process.stdout.close()


def environment(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQELS_")}
    # The local cache engine: these servers test serving, and each would otherwise start a JVM.
    return {**env, "PYTHONUNBUFFERED": "1", "CQELS_CACHE_ENGINE": "local", **variables}


@contextmanager
def serving(*flags: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[Server]:
    """``cqels serve FLAGS`` (with ``--port 0`` unless a port is given); yields once it listens."""
    if "--port" not in flags and "CQELS_PORT" not in (env or {}):
        flags = (*flags, "--port", "0")
    process = subprocess.Popen(
        [sys.executable, "-m", "cqels_endpoint.cli", "serve", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment(**(env or {})), cwd=cwd,
    )
    server = Server(process)
    try:
        server.wait_until_listening()
        yield server
    finally:
        server.close()
