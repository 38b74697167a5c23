"""A real ``cqels serve`` SIGKILLed at random moments while it is written to comes back consistent
(``kill_restart``: what is checked after every restart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.kill_restart import run

CYCLES = 6


@pytest.mark.slow
def test_the_server_survives_kill_restart_cycles(tmp_path: Path) -> None:
    report = run(CYCLES, seed=16, data_dir=tmp_path / "data")
    assert report.cycles == CYCLES
    progress = report.progress
    # The clients got far enough for the kills to land among writes of every kind.
    assert progress.puts_done > 0 and progress.updates_done > 0 and progress.pushes_done > 0
    assert progress.queries_done and progress.instances_done
