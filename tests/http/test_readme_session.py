"""The README's "A continuous query with curl" session, run command for command with curl against a
real ``cqels serve`` (local cache engine: the output is the same and no JVM starts), so that the
README stays true. Each ``$ `` line (with its ``\\`` continuations) is run by the shell in the
checkout; its output must be the lines the README shows under it. The ``curl -N`` watch runs in the
background and must print the README's subscription comment and then its emission."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from paths import ROOT
from test_http_serve import serving

README_ADDRESS = "http://127.0.0.1:7878"


def session_blocks() -> list[list[str]]:
    """The text blocks of the README section, as lists of lines."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A continuous query with curl", 1)[1].split("\n## ", 1)[0]
    return [block.splitlines() for block in re.findall(r"```text\n(.*?)```", section, re.S)]


def commands(lines: list[str]) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` for each ``$ `` line of a block."""
    found: list[tuple[str, list[str]]] = []
    continued = False
    for line in lines:
        if line.startswith("$ ") or continued:
            command = line.removeprefix("$ ").rstrip("\\").strip()
            if continued:
                found[-1] = (found[-1][0] + " " + command, [])
            else:
                found.append((command, []))
            continued = line.endswith("\\")
        elif found:
            found[-1][1].append(line)
    return found


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README session uses curl")
def test_the_readme_session_gives_the_output_it_shows(tmp_path: Path) -> None:
    serve, store_and_watch, push, emission = session_blocks()
    # The server is started as the README starts it, on a data directory of the test's own.
    assert commands(serve)[0][0] == ".venv/bin/cqels serve --data-dir /tmp/cqels-session"
    with serving("--data-dir", str(tmp_path / "session"), env={"CQELS_CACHE_ENGINE": "local"}, cwd=ROOT) as server:
        def run(command: str) -> list[str]:
            command = command.replace(README_ADDRESS, server.base_url)
            done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout.splitlines()

        *writes, (watch, watch_output) = commands(store_and_watch)
        for command, expected in writes:
            assert run(command) == expected, command
        watcher = subprocess.Popen(
            shlex.split(watch.replace(README_ADDRESS, server.base_url)), stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        try:
            seen = [watcher.stdout.readline().rstrip("\n") for _ in watch_output]
            assert seen == watch_output
            for command, expected in commands(push):
                assert run(command) == expected, command
            expected_emission = [line for line in emission if line]
            deadline = time.monotonic() + 10
            seen = []
            while len(seen) < len(expected_emission) and time.monotonic() < deadline:
                line = watcher.stdout.readline().rstrip("\n")
                if line and not line.startswith(":"):
                    seen.append(line)
            assert seen == expected_emission
        finally:
            watcher.kill()
            watcher.wait()
            watcher.stdout.close()
