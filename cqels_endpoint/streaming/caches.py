"""The static caches of a Spark job: built once, on the driver, by the Spark cache job
(``spark.job.SparkCacheEngine``), and shipped to every partition with the job's plan (PySpark
broadcasts a task's pickled command once it is large), where ``BroadcastCaches`` hands them to
the partition's engine instead of each partition evaluating its static sub-queries again.
"""

from __future__ import annotations

from collections.abc import Mapping

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.caches.engines import CacheBuild, StaticSource
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.plan.nodes import StaticCache
from cqels_endpoint.spark.export import parse_term
from cqels_endpoint.spark.job import SparkCacheEngine
from cqels_endpoint.spark.session import SparkSessionHolder

CacheRows = Mapping[tuple[str, tuple[str, ...]], list[tuple[str | None, ...]]]


def cache_key(cache: StaticCache) -> tuple[str, tuple[str, ...]]:
    """A cache by what it computes: its SELECT and its columns (the same in every process that
    plans the same query)."""
    return cache.sparql, cache.schema


class BroadcastCaches:
    """A partition's cache engine: the rows the driver built (N-Triples forms, None unbound)."""

    name = "spark (broadcast)"

    def __init__(self, rows: CacheRows):
        self.rows = rows

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild:
        rows = self.rows.get(cache_key(cache))
        if rows is None:
            msg = f"the driver built no cache for {cache.sparql!r}: the partition planned another query"
            raise LookupError(msg)
        decoded = [tuple(None if text is None else parse_term(text) for text in row) for row in rows]
        return CacheBuild(decoded, self.name, ("built by the job's Spark cache job on the driver, shipped to every partition",))

    def close(self) -> None:
        pass


class _Recording:
    """A cache engine that keeps what another one built, as N-Triples forms."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.rows: dict[tuple[str, tuple[str, ...]], list[tuple[str | None, ...]]] = {}

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild:
        build = self.inner.build(cache, query, static)
        self.rows[cache_key(cache)] = [tuple(None if term is None else str(term) for term in row) for row in build.rows]
        return build

    def close(self) -> None:
        pass


def build_caches(algebra: n.AlgebraQuery, text: str, store, session) -> dict:
    """The rows of every static cache of ``algebra`` (what a partition registers), built by the
    Spark cache job on ``session`` over ``store``."""
    recorder = _Recording(SparkCacheEngine(SparkSessionHolder.wrap(session)))
    engine = Engine(store, cache_engine=recorder)
    try:
        engine.register_algebra(algebra, text, name="caches")
    finally:
        engine.close()
    return recorder.rows
