"""The store's version counters on disk: a snapshot plus an append-only log of commits.

Rewriting a whole file per commit cost a fifth of a small update's time, so each commit appends one
line (``{"v": version, "g": [graph, …]}``, the default graph as null) to ``versions.log`` and the
snapshot ``versions.json`` is rewritten only when the store opens or closes, when the log is
folded into it. A line cut short by a crash is ignored: the versions it would have recorded were
never reported to anyone who could have kept them.

While the store is open the log is never empty (opening writes a line that records nothing new), and
closing folds it away: a log found non-empty means the last process did not close the store
(``unclean``), so its last write may have committed without its line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


class VersionLog:
    """``version`` and ``graph_versions`` as last committed; in memory only when ``directory`` is None."""

    def __init__(self, directory: Path | None):
        self.version = 0
        self.graph_versions: dict[str | None, int] = {}
        self._snapshot = None if directory is None else directory / "versions.json"
        self._log_path = None if directory is None else directory / "versions.log"
        self._log = None
        self.unclean = False
        if self._snapshot is not None:
            self._read()
            self._fold()
            self._append(self.version, [])

    def record(self, version: int, graphs: list[str | None]) -> None:
        self.version = version
        for graph in graphs:
            self.graph_versions[graph] = version
        self._append(version, graphs)

    def _append(self, version: int, graphs: list[str | None]) -> None:
        if self._log is not None:
            self._log.write(json.dumps({"v": version, "g": graphs}) + "\n")
            self._log.flush()

    def close(self) -> None:
        if self._log is not None:
            self._fold()
            self._log.close()
            self._log = None

    def _read(self) -> None:
        if self._snapshot.exists():
            saved = json.loads(self._snapshot.read_text(encoding="utf-8"))
            self.version = int(saved["version"])
            self.graph_versions = {name: int(version) for name, version in saved["graphs"]}
        if self._log_path.exists():
            lines = self._log_path.read_text(encoding="utf-8").splitlines()
            self.unclean = bool(lines)
            for line in lines:
                try:
                    commit = json.loads(line)
                except json.JSONDecodeError:
                    break  # the last line, cut short
                # max: after a crash between folding and emptying the log, its lines are old news.
                version = int(commit["v"])
                self.version = max(self.version, version)
                for graph in commit["g"]:
                    self.graph_versions[graph] = max(self.graph_versions.get(graph, 0), version)

    def _fold(self) -> None:
        """Write the snapshot (atomically: a crash leaves the old or the new one), then empty the log."""
        state = {"version": self.version, "graphs": [[name, v] for name, v in self.graph_versions.items()]}
        scratch = self._snapshot.with_suffix(".json.tmp")
        scratch.write_text(json.dumps(state), encoding="utf-8")
        os.replace(scratch, self._snapshot)
        if self._log is not None:
            self._log.close()
        self._log = self._log_path.open("w", encoding="utf-8")
