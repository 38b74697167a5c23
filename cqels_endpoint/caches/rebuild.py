"""The rebuild manager: static caches follow the store's change events.

Each registered incremental query hands its static caches to the ``CacheRebuilder``, which knows
per cache which graphs its sub-pattern reads (``caches.graphs.graphs_read``, computed once at registration). A
``ChangeEvent`` of the store marks stale exactly the caches reading one of the changed graphs and
schedules their query's rebuild after ``debounce_ms`` of quiet (at most ``MAX_WAIT_DEBOUNCES``
debounce periods after the first change, so a steady stream of writes cannot starve it). One
background worker builds the complete new rows with the configured ``CacheEngine``, computes
their difference from the rows installed (``caches.delta.bag_delta``, on terms, holding no lock;
for a build in Parquet, a ``MergedDelta`` computed part by part as the swap applies it)
and hands it to the engine's swap callback, which applies it in bounded parts under short holds of
the engine's lock and releases all rebuilt caches of one query together, never part of one: the
operators send the difference as +/- deltas at their next evaluation. A failed build leaves the
old caches in place and serving, is counted, logged (logger ``cqels_endpoint.caches``) and kept as
``last_error``/``last_error_at_ms`` until a build succeeds, and retried with exponential backoff
up to ``max_backoff_ms``; a new change event reschedules it after the debounce instead.

Identical caches are built once: a cache is identified by its SELECT (``StaticCache.sparql``, which
carries the query's FROM/FROM NAMED) and schema, and a build made from store version ``v`` serves
every cache with that identity needed while the store is still at ``v`` — the instances of one
stored template, registered together or rebuilt after one change, cost one build, not one each.
``build_counts()`` says how many builds ran and how many were served from another's.

Locks: the manager's own lock is never held while building or swapping, and the engine takes it
only after its own lock, so the order is always engine lock → manager lock. Change events arrive
with the store's lock held and take only the manager's lock.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.caches.delta import CacheDelta, bag_delta
from cqels_endpoint.caches.engines import CacheBuild, CacheEngine, ParquetRows, RowChunks, Rows
from cqels_endpoint.caches.graphs import GraphsRead, graphs_read
from cqels_endpoint.plan.nodes import StaticCache

log = logging.getLogger("cqels_endpoint.caches")

MAX_WAIT_DEBOUNCES = 10
TERM_TYPES = (ox.NamedNode, ox.BlankNode, ox.Literal, ox.Triple)


# --------------------------------------------------------------------------- per-cache state


@dataclass(eq=False)
class CacheState:
    """One static cache of one query: what it reads, how its content was built, and its history.

    ``version`` is the store version read just before its content was built (the content reflects
    at least that version); ``stale`` says a later change it reads has not been swapped in yet;
    ``installing`` that a rebuild's difference is being applied; ``content`` the rows (of terms)
    installed (a list, or the ``ParquetRows`` of a large Spark build: its files live as long as it
    is installed), which the next rebuild is diffed against (its rows and terms are untracked by the
    cyclic collector, ``runtime.untracked``); ``last_error``/``last_error_at_ms`` the
    last failed build since the last one that succeeded.
    """

    query: str
    node: StaticCache
    operator: object  # the plan's operators.static_cache.StaticCache, the swap target
    reads: GraphsRead
    engine: str = ""
    rows: int = 0
    version: int = 0
    built_at_ms: int | None = None
    duration_ms: float = 0.0
    notes: tuple[str, ...] = ()
    stale: bool = False
    rebuilds: int = 0
    failures: int = 0
    last_error: str | None = None
    last_error_at_ms: int | None = None
    installing: bool = False
    content: Rows = field(default_factory=list, repr=False)

    def stats(self) -> dict:
        return {
            "query": self.query,
            "cache": self.node.id,
            "engine": self.engine,
            "rows": self.rows,
            "version": self.version,
            "built_at_ms": self.built_at_ms,
            "duration_ms": round(self.duration_ms, 3),
            "stale": self.stale,
            "rebuilds": self.rebuilds,
            "failures": self.failures,
            "last_error": self.last_error,
            "last_error_at_ms": self.last_error_at_ms,
            "last_error_at": None if self.last_error_at_ms is None else _iso(self.last_error_at_ms),
            "installing": self.installing,
            "notes": list(self.notes),
        }

    def describe(self) -> list[str]:
        """The lines ``explain`` shows under the cache."""
        built = "never built" if self.built_at_ms is None else (
            f"built by {self.engine} from store version {self.version} at {_iso(self.built_at_ms)} in {self.duration_ms:.1f} ms"
        )
        lines = [f"{self.rows} rows, {built}; reads {self.reads.describe()}"]
        lines.append(f"rebuilds={self.rebuilds} failures={self.failures} stale={self.stale}")
        if self.last_error:
            lines.append(f"last error at {_iso(self.last_error_at_ms)}: {self.last_error}")
        lines.extend(f"note: {note}" for note in self.notes)
        return lines

    def record(self, build: CacheBuild, version: int, duration_ms: float) -> None:
        self.engine, self.rows, self.version, self.notes = build.engine, len(build.rows), version, build.notes
        self.content = build.rows
        self.built_at_ms = time.time_ns() // 1_000_000
        self.duration_ms = duration_ms


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


@dataclass(eq=False)
class _QueryCaches:
    """The caches of one query and its rebuild schedule (times from ``time.monotonic``)."""

    name: str
    algebra: n.AlgebraQuery
    caches: list[CacheState]
    dirty: set = field(default_factory=set)  # CacheStates to rebuild at the next run
    due: float | None = None
    first_marked: float | None = None
    attempts: int = 0  # consecutive failures, for the backoff
    building: bool = False
    removed: bool = False


Swap = Callable[[str, list[tuple[CacheState, CacheDelta]]], bool]
"""``swap(query, [(state, delta)])`` applies the differences, released together; False if the query is gone."""


# --------------------------------------------------------------------------- the manager


class CacheRebuilder:
    """Builds the static caches of registered queries and rebuilds them on change events (module docstring).

    ``store``: the static store (or None), read by ``engine``; ``swap``: the engine's installer.
    """

    def __init__(self, store, engine: CacheEngine, swap: Swap, debounce_ms: int = 200, max_backoff_ms: int = 30_000):
        if debounce_ms < 0:
            msg = f"rebuild_debounce_ms must be ≥ 0, not {debounce_ms}"
            raise ValueError(msg)
        self.store = store
        self.engine = engine
        self.debounce_s = debounce_ms / 1000
        self.max_backoff_s = max_backoff_ms / 1000
        self._swap = swap
        self._queries: dict[str, _QueryCaches] = {}
        self._cond = threading.Condition(threading.Lock())
        self._worker: threading.Thread | None = None
        self._closed = False
        # (sparql, schema) -> (store version it was built from, the build, its duration in ms)
        self._builds: dict[tuple, tuple[int, CacheBuild, float]] = {}
        self._counts = {"builds": 0, "reused": 0}

    # ------------------------------------------------------------------ registration (engine side)

    def build(self, name: str, algebra: n.AlgebraQuery, caches: list[tuple[StaticCache, object]]):
        """Builds every cache of a query being registered, synchronously; raises what the engine raises.

        Returns ``(states, builds, version)`` for ``install`` once the query's caches hold them.
        """
        version = self._version()
        states, builds = [], []
        for node, operator in caches:
            state = CacheState(name, node, operator, graphs_read(node.pattern, algebra))
            build, duration = self._build(node, algebra, version)
            state.record(build, version, duration)
            states.append(state)
            builds.append(build)
        return states, builds, version

    def _build(self, node: StaticCache, algebra: n.AlgebraQuery, version: int) -> tuple[CacheBuild, float]:
        """The rows of ``node`` at store ``version`` (read before calling): another cache's build
        of the same SELECT at that version, else a new one. Not under the lock while building."""
        key = (node.sparql, node.schema)
        with self._cond:
            built = self._builds.get(key)
            if built is not None and built[0] == version:
                self._counts["reused"] += 1
                return built[1], built[2]
        started = time.perf_counter()
        build = self.engine.build(node, algebra, self.store)
        _check(node, build)
        if not isinstance(build.rows, ParquetRows | RowChunks):
            build = replace(build, rows=RowChunks(build.rows))
        duration = (time.perf_counter() - started) * 1000
        with self._cond:
            self._counts["builds"] += 1
            previous = self._builds.get(key)
            if previous is None or previous[0] <= version:
                self._builds[key] = (version, build, duration)
        return build, duration

    def build_counts(self) -> dict[str, int]:
        """``builds``: caches computed by the cache engine; ``reused``: caches served by an
        identical cache's build at the same store version instead."""
        with self._cond:
            return dict(self._counts)

    def install(self, name: str, algebra: n.AlgebraQuery, states: list[CacheState], version: int) -> None:
        """Starts following the store for the caches of ``name`` (built from ``version``)."""
        if not states:
            return
        with self._cond:
            group = _QueryCaches(name, algebra, states)
            self._queries[name] = group
            # A write between the initial build and now raised an event nobody heard for these caches.
            missed = self._version() != version
            if missed:
                self._mark(group, states, time.monotonic())

    def forget(self, name: str) -> None:
        """Stops rebuilding the caches of ``name``; a build under way is discarded by ``swap``."""
        with self._cond:
            group = self._queries.pop(name, None)
            if group is not None:
                group.removed = True
                # A build nobody registered needs any more is memory held for nothing.
                used = {(state.node.sparql, state.node.schema) for g in self._queries.values() for state in g.caches}
                for state in group.caches:
                    key = (state.node.sparql, state.node.schema)
                    if key not in used:
                        self._builds.pop(key, None)
                self._cond.notify_all()

    # ------------------------------------------------------------------ change events

    def on_change(self, event) -> None:
        """A ``ChangeEvent`` of the store: marks the caches reading a changed graph, schedules their rebuild."""
        changed = event.graphs
        now = time.monotonic()
        with self._cond:
            for group in self._queries.values():
                touched = [state for state in group.caches if state.reads.touches(changed)]
                if touched:
                    self._mark(group, touched, now)

    def _mark(self, group: _QueryCaches, states: list[CacheState], now: float) -> None:
        for state in states:
            state.stale = True
        group.dirty.update(states)
        if group.first_marked is None:
            group.first_marked = now
        # Trailing debounce, capped so that continuous writes still get a rebuild; this also
        # replaces a pending retry's backoff (a newer change supersedes it).
        group.due = min(now + self.debounce_s, group.first_marked + MAX_WAIT_DEBOUNCES * self.debounce_s)
        self._start_worker()
        self._cond.notify_all()

    # ------------------------------------------------------------------ observing

    def stats(self) -> list[dict]:
        with self._cond:
            return [state.stats() for group in self._queries.values() for state in group.caches]

    def describe(self, name: str, cache_id: str) -> list[str]:
        with self._cond:
            group = self._queries.get(name)
            state = next((s for s in group.caches if s.node.id == cache_id), None) if group else None
            return [] if state is None else state.describe()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Waits until no rebuild is pending or running; False if ``timeout_s`` passed first."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not any(g.dirty or g.building for g in self._queries.values()), timeout_s
            )

    def close(self) -> None:
        """Stops the worker (a build under way finishes, its result is dropped)."""
        with self._cond:
            self._closed = True
            for group in self._queries.values():
                group.removed = True
            self._queries.clear()
            self._cond.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    # ------------------------------------------------------------------ the worker

    def _start_worker(self) -> None:
        if self._worker is None and not self._closed:
            self._worker = threading.Thread(target=self._run, name="cqels-cache-rebuild", daemon=True)
            self._worker.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                group = self._next_due()
                if group is None:
                    return
                todo = list(group.dirty)
                group.dirty.clear()
                group.due = group.first_marked = None
                group.building = True
            try:
                self._rebuild(group, todo)
            finally:
                with self._cond:
                    group.building = False
                    self._cond.notify_all()

    def _next_due(self) -> _QueryCaches | None:
        """The group whose rebuild is due, waiting for it; None once closed. Holds the lock."""
        while not self._closed:
            now = time.monotonic()
            pending = [g for g in self._queries.values() if g.due is not None and not g.building]
            ready = [g for g in pending if g.due <= now]
            if ready:
                return min(ready, key=lambda g: g.due)
            self._cond.wait(min((g.due for g in pending), default=now + 3600) - now)
        return None

    def _rebuild(self, group: _QueryCaches, todo: list[CacheState]) -> None:
        version = self._version()
        results: list[tuple[CacheState, CacheBuild, float]] = []
        try:
            for state in todo:
                build, duration = self._build(state.node, group.algebra, version)
                results.append((state, build, duration))
        except Exception as error:  # any engine failure: keep the old caches and retry
            self._failed(group, todo, error)
            return
        # Only this worker changes an installed cache's content, so it is diffed without a lock.
        deltas = [(state, bag_delta(state.content, build.rows)) for state, build, _ in results]
        self._installing(todo, True)
        try:
            swapped = self._swap(group.name, deltas)
        except Exception as error:  # the rows were checked: only a bug gets here; seen and retried
            self._failed(group, todo, error)
            return
        finally:
            self._installing(todo, False)
        with self._cond:
            if not swapped:
                return
            group.attempts = 0
            replaced = [state.content for state, _, _ in results]
            for state, build, duration in results:
                state.record(build, version, duration)
                state.rebuilds += 1
                state.last_error = state.last_error_at_ms = None
                state.stale = state in group.dirty  # a change during the build is still to come
        # The deltas refer to rows of the replaced builds: dropped first, so that what frees those
        # rows is the loop below.
        del deltas
        while replaced:
            _free(replaced.pop())

    def _installing(self, states: list[CacheState], installing: bool) -> None:
        with self._cond:
            for state in states:
                state.installing = installing

    def _failed(self, group: _QueryCaches, todo: list[CacheState], error: Exception) -> None:
        with self._cond:
            if group.removed:
                return
            group.attempts += 1
            now_ms = time.time_ns() // 1_000_000
            for state in todo:
                state.failures += 1
                state.last_error = f"{type(error).__name__}: {error}"
                state.last_error_at_ms = now_ms
            delay = min(self.debounce_s * 2 ** (group.attempts - 1), self.max_backoff_s)
            delay = max(delay, 0.01)  # a zero debounce must not retry in a busy loop
            newer = bool(group.dirty)  # a change event during the build already scheduled a run
            group.dirty.update(todo)
            if not newer:
                group.due = time.monotonic() + delay
            self._cond.notify_all()
        ids = ", ".join(state.node.id for state in todo)
        log.warning(
            "rebuilding static caches %s of query %r with the %s engine failed (attempt %d); "
            "keeping the old caches, retrying in %.2f s", ids, group.name, self.engine.name, group.attempts, delay,
            exc_info=error,
        )

    def _version(self) -> int:
        return 0 if self.store is None else self.store.version


def _free(rows: Rows) -> None:
    """Frees the rows of a replaced build a chunk at a time, when nothing but this call refers to
    them (another cache, an identical build's, may still hold them). The last reference to a million
    rows of terms, dropped at once, frees them all in one C call, the GIL held for about 0.3 s: a
    pause of every push. Between two chunks, other threads get the GIL."""
    # 2: this frame's reference and getrefcount's argument; the caller handed its own over.
    if isinstance(rows, RowChunks) and sys.getrefcount(rows) == 2:
        rows.release()


def _check(node: StaticCache, build: CacheBuild) -> None:
    """Rejects a malformed build before anything is swapped: a cache is complete or not installed."""
    width = len(node.schema)
    if isinstance(build.rows, ParquetRows):
        # Decoded from its own dictionary, so only its width can be wrong; reading it all to check
        # would cost a second full read.
        if build.rows.width != width:
            msg = f"the {build.engine} cache engine returned rows of {build.rows.width} columns for cache {node.id} of schema {node.schema}"
            raise ValueError(msg)
        return
    for row in build.rows:
        if len(row) != width or not all(term is None or isinstance(term, TERM_TYPES) for term in row):
            msg = f"the {build.engine} cache engine returned row {row!r} for cache {node.id} of schema {node.schema}"
            raise ValueError(msg)
