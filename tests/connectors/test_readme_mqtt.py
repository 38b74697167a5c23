"""The README's "Streams over MQTT" session, run command for command against a real ``mosquitto``
(on a free port: ``localhost:1883`` and ``-h localhost`` are rewritten to it) and a real ``cqels
serve`` started with the README's flags (local cache engine: the output is the same, no JVM). The
``mosquitto_sub`` runs in the background and must print the README's triple; every other command
must print the lines the README shows under it."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from paths import ROOT
from readme_sessions import commands, section_blocks
from serve_process import serving
from waiting import eventually

README_ADDRESS = "http://127.0.0.1:7878"
SECTION = "Streams over MQTT"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README session uses curl")
def test_the_readme_mqtt_session_gives_the_output_it_shows(broker, tmp_path: Path) -> None:
    serve, store_and_subscribe, publish, published = section_blocks(ROOT / "README.md", SECTION)

    def local(command: str, base_url: str = README_ADDRESS) -> str:
        """The README's ``command`` against this test's broker and server."""
        return (command.replace("localhost:1883", f"127.0.0.1:{broker.port}")
                .replace("-h localhost", f"-h 127.0.0.1 -p {broker.port}")
                .replace(README_ADDRESS, base_url))

    [(start, _)] = commands(serve)
    flags = shlex.split(start)
    assert flags[:2] == [".venv/bin/cqels", "serve"] and flags[2:4] == ["--data-dir", "/tmp/cqels-mqtt"]
    flags = [local(flag) for flag in flags[4:]]
    with serving("--data-dir", str(tmp_path / "data"), *flags, env={"CQELS_CACHE_ENGINE": "local"}, cwd=ROOT) as server:
        *writes, (subscribe, subscribe_output) = commands(store_and_subscribe)
        assert subscribe_output == []
        for command, expected in writes:
            assert run(local(command, server.base_url)) == expected, command
        # Named, so that the broker's log says when it has subscribed (mosquitto_sub itself prints nothing then).
        subscriber = subprocess.Popen([*shlex.split(local(subscribe)), "-i", "readme-subscriber"],
                                      stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            eventually(lambda: "Received SUBSCRIBE from readme-subscriber" in broker.log(), what="mosquitto_sub subscribed")
            *pushes, (look, look_output) = commands(publish)
            for command, expected in pushes:
                assert run(local(command, server.base_url)) == expected, command
            expected_lines = [line for line in published if line]
            seen: list[str] = []
            while len(seen) < len(expected_lines):
                line = subscriber.stdout.readline()
                assert line, "mosquitto_sub ended"
                if line.strip():
                    seen.append(line.rstrip("\n"))
            assert seen == expected_lines
            assert run(local(look, server.base_url)) == look_output
        finally:
            subscriber.kill()
            subscriber.wait()
            subscriber.stdout.close()


def run(command: str) -> list[str]:
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()
