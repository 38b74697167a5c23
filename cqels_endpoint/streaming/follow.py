"""Static data that changes while a job runs (``cqels spark-job --follow``).

The job's static data comes from files (``--static``) or from a running ``cqels serve``
(``--static-endpoint URL``: its version read from ``/health``, its dataset from ``GET /store`` in
N-Quads, the Graph Store Protocol). ``Follower`` watches it on the driver: when the files' sizes or
times, or the server's version, change, it builds the caches again with the Spark cache job and
writes each changed cache's difference (``caches.delta.bag_delta``: rows in and out, N-Triples forms) as one
line of a *change file* in the job's change directory, which the job reads as a second file
source beside the events. The partitions apply a change at the start of the micro-batch that
reads it, before that batch's events (``stages.partition_step``): from its first event on, the
answers are the single engine's with the change applied after the events of the batches before.

The caches the job started with (``base.json``) and every change file stay in the checkpoint
directory, so a restarted job goes on from the same caches: Spark's file source has recorded which
change files the partitions took.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint.caches.delta import bag_delta
from cqels_endpoint.errors import ArgumentError

log = logging.getLogger("cqels_endpoint.streaming")

STATIC = "static"
CacheKey = tuple[str, tuple[str, ...]]


class StaticFiles:
    """RDF files, their version their sizes and modification times."""

    def __init__(self, paths: Sequence[str | Path]):
        self.paths = [Path(path) for path in paths]

    def version(self) -> str:
        return json.dumps([(str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in self.paths])

    def nquads(self) -> str:
        return static_nquads(self.paths)


class StaticEndpoint:
    """The store of a running ``cqels serve`` at ``url``."""

    def __init__(self, url: str, timeout_s: float = 60.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def version(self) -> str:
        return str(json.loads(self._get("/health", "application/json"))["version"])

    def nquads(self) -> str:
        return self._get("/store", "application/n-quads").decode()

    def _get(self, path: str, accept: str) -> bytes:
        request = urllib.request.Request(f"{self.url}{path}", headers={"Accept": accept})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.read()
        except (OSError, ValueError) as error:  # URLError and HTTPError are OSErrors
            msg = f"cannot read the static data from {self.url}{path}: {error}"
            raise ArgumentError(msg) from None


def static_nquads(paths: Sequence[str | Path]) -> str:
    """RDF files (their named graphs kept; triples in the default graph) as one N-Quads text."""
    store = ox.Store()
    for path in paths:
        store.load(path=str(path))
    return store.dump(format=ox.RdfFormat.N_QUADS).decode() if paths else ""


def static_source(paths: Sequence[str | Path], endpoint: str | None) -> StaticFiles | StaticEndpoint | None:
    if endpoint and paths:
        raise ArgumentError("give the static data as files (--static) or as a server (--static-endpoint), not both")
    if endpoint:
        return StaticEndpoint(endpoint)
    return StaticFiles(paths) if paths else None


def apply_delta(rows: list[tuple], added: Sequence[tuple], removed: Sequence[tuple]) -> list[tuple]:
    """``rows`` with ``removed`` taken out (one occurrence each) and ``added`` put in."""
    leaving = Counter(removed)
    kept = []
    for row in rows:
        if leaving[row] > 0:
            leaving[row] -= 1
        else:
            kept.append(row)
    return kept + list(added)


def delta_line(number: int, version: str, key: CacheKey, added: list[tuple], removed: list[tuple]) -> str:
    return json.dumps({STATIC: {"change": number, "version": version, "cache": [key[0], list(key[1])], "added": added, "removed": removed}}, ensure_ascii=False)


def parse_delta(item: dict) -> tuple[CacheKey, list[tuple], list[tuple]]:
    """The cache key and the rows in and out of one change line's ``static`` object."""
    sparql, schema = item["cache"]
    return (sparql, tuple(schema)), [tuple(row) for row in item["added"]], [tuple(row) for row in item["removed"]]


class Follower:
    """Watches ``source`` every ``interval_s`` seconds on a thread of the driver and writes a change
    file into ``directory / "changes"`` for each new version (module docstring). ``build(nquads)``
    gives the caches of the static data ``nquads`` (rows by cache key)."""

    def __init__(self, source, directory: Path, build: Callable[[str], dict], interval_s: float):
        self.source, self.build, self.interval_s = source, build, interval_s
        self.changes = directory / "changes"
        self.changes.mkdir(parents=True, exist_ok=True)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        base = directory / "base.json"
        if base.exists():  # a restart: the caches the job started with, and the changes since
            saved = json.loads(base.read_text())
            self.version, self.number = saved["version"], 0
            self.base = {(sparql, tuple(schema)): [tuple(row) for row in rows] for sparql, schema, rows in saved["caches"]}
            self.rows = dict(self.base)
            for path in sorted(self.changes.glob("change-*.ndjson")):
                for line in path.read_text().splitlines():
                    item = json.loads(line)[STATIC]
                    key, added, removed = parse_delta(item)
                    self.rows[key] = apply_delta(self.rows.get(key, []), added, removed)
                    self.version, self.number = item["version"], item["change"]
        else:
            self.version, self.number = source.version(), 0
            self.base = build(source.nquads())
            self.rows = dict(self.base)
            caches = [[key[0], list(key[1]), rows] for key, rows in self.base.items()]
            _write_atomically(base, json.dumps({"version": self.version, "caches": caches}, ensure_ascii=False))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cqels-static-follower", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except Exception as error:  # the next poll tries again; the job goes on with the caches it has
                log.warning("spark-job --follow: the static data could not be read or built: %s", error)

    def poll(self) -> bool:
        """Writes a change file when the source has a new version; whether it did."""
        version = self.source.version()
        if version == self.version:
            return False
        rows = self.build(self.source.nquads())
        lines = []
        for key in sorted(set(self.rows) | set(rows)):
            delta = bag_delta(self.rows.get(key, []), rows.get(key, []))
            if len(delta):
                lines.append(delta_line(self.number + 1, version, key, delta.added, delta.removed))
        self.version, self.rows = version, rows
        if lines:
            self.number += 1
            _write_atomically(self.changes / f"change-{self.number:06d}.ndjson", "".join(line + "\n" for line in lines))
            log.info("spark-job --follow: static version %s, %d caches changed", version, len(lines))
        return bool(lines)


def _write_atomically(path: Path, text: str) -> None:
    # Spark's file source skips names starting with a dot: it sees the file complete or not at all.
    hidden = path.with_name(f".{path.name}.tmp")
    hidden.write_text(text)
    hidden.replace(path)
