"""The child processes of a process, read from /proc (the query-timeout tests check that forked
evaluators are killed and reaped; a Spark JVM of the test session is a child too, so tests compare
with what was there before rather than with none)."""

from __future__ import annotations

import os
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
