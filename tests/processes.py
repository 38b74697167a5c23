"""The child processes of a process, read from /proc (the query-timeout tests check that forked
evaluators are killed and reaped; a Spark JVM of the test session is a child too, so tests compare
with what was there before rather than with none)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def children(pid: int | None = None) -> list[int]:
    """Processes (zombies included) whose parent is ``pid`` (default: this process)."""
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry.name))
    return sorted(found)


def children_settle(before: list[int], timeout_s: float = 5.0) -> list[int]:
    """The children once they are ``before`` again (a forked evaluator that answered is reaped in
    the background), or as they are after ``timeout_s``."""
    give_up = time.monotonic() + timeout_s
    while (now := children()) != before and time.monotonic() < give_up:
        time.sleep(0.02)
    return now
