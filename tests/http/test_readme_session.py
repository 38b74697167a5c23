"""The README's tour, run command for command with curl against a real ``cqels serve`` (local cache
engine: the output is the same and no JVM starts), so that the README stays true: "A one-shot
query" against the first command's ``cqels serve --demo``, and "A continuous query with curl"
against a server on an empty data directory. Each ``$ `` line (with its ``\\`` continuations) is
run by the shell in the checkout; its output must be the lines the README shows under it. The
``curl -N`` watch runs in the background and must print the README's subscription comment and then
its emission."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from paths import ROOT
from readme_sessions import commands, section_blocks
from serve_process import serving

README_ADDRESS = "http://127.0.0.1:7878"
SECTION = "A continuous query with curl"
ONE_SHOT = "A one-shot query"
FIRST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/cqels serve --demo"


def run_against(server, command: str) -> list[str]:
    """The output lines of the README's ``command``, run by the shell against ``server``."""
    command = command.replace(README_ADDRESS, server.base_url)
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README session uses curl")
def test_the_readme_one_shot_queries_give_the_output_they_show(tmp_path: Path) -> None:
    # Against the server of the README's first command: cqels serve --demo, demo stream and all.
    assert FIRST_COMMAND in (ROOT / "README.md").read_text(encoding="utf-8").split("\n## ", 1)[0]
    [block] = section_blocks(ROOT / "README.md", ONE_SHOT)
    with serving("--data-dir", str(tmp_path / "demo"), "--demo", env={"CQELS_CACHE_ENGINE": "local"}, cwd=ROOT) as server:
        for command, expected in commands(block):
            assert run_against(server, command) == expected, command


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README session uses curl")
def test_the_readme_session_gives_the_output_it_shows(tmp_path: Path) -> None:
    serve, store_and_watch, push, emission = section_blocks(ROOT / "README.md", SECTION)
    # The server is started as the README starts it, on a data directory of the test's own.
    assert commands(serve)[0][0] == ".venv/bin/cqels serve --data-dir /tmp/cqels-session"
    with serving("--data-dir", str(tmp_path / "session"), env={"CQELS_CACHE_ENGINE": "local"}, cwd=ROOT) as server:
        *writes, (watch, watch_output) = commands(store_and_watch)
        for command, expected in writes:
            assert run_against(server, command) == expected, command
        watcher = subprocess.Popen(
            shlex.split(watch.replace(README_ADDRESS, server.base_url)), stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        try:
            seen = [watcher.stdout.readline().rstrip("\n") for _ in watch_output]
            assert seen == watch_output
            for command, expected in commands(push):
                assert run_against(server, command) == expected, command
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
