"""The static caches of a Spark job, built once by the Spark cache job (``spark.job.SparkCacheEngine``).

A cache of at most ``inline_rows`` rows is collected on the driver; those that fit the job's
budget are shipped to every partition with the plan (``streaming.job.SHIPPED_CACHE_BYTES``), where
``BroadcastCaches`` hands them to the partition's engine instead of each partition evaluating its
static sub-queries again. A larger one never reaches the driver: the cache job writes it as
Parquet (``caches.engines.ParquetRows``) and the job joins it as a DataFrame (``streaming.job``),
as it does a collected one over the budget: each row goes to the partitions that can use it
(``row_partitions``: the owner of its key value when the cache has the partitioning key, every
partition otherwise) and arrives as the partition's initial Spark state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.caches.engines import CacheBuild, ParquetRows, StaticSource
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.plan.nodes import StaticCache
from cqels_endpoint.spark.export import parse_term
from cqels_endpoint.spark.job import SparkCacheEngine
from cqels_endpoint.spark.session import SparkSessionHolder
from cqels_endpoint.streaming.events import owner
from cqels_endpoint.streaming.plan import JobPlan

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
    """A cache engine that keeps what another one built: ``rows`` as N-Triples forms, ``large``
    the builds left in Parquet. The engine it serves is only there to have the caches built, so it
    gets empty caches and holds no row."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.rows: dict[tuple[str, tuple[str, ...]], list[tuple[str | None, ...]]] = {}
        self.large: dict[tuple[str, tuple[str, ...]], ParquetRows] = {}

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild:
        build = self.inner.build(cache, query, static)
        if isinstance(build.rows, ParquetRows):
            self.large[cache_key(cache)] = build.rows
        else:
            # Sorted: Spark collects a cache's rows in an order that varies from run to run, and the
            # order the partitions receive them in is the order of the rows of their emissions.
            rows = [tuple(None if term is None else str(term) for term in row) for row in build.rows]
            self.rows[cache_key(cache)] = sorted(rows, key=_row_order)
        return CacheBuild([], build.engine, build.notes)

    def close(self) -> None:
        pass


def build_caches(algebra: n.AlgebraQuery, text: str, store, session, inline_rows: int | None) -> tuple[dict, dict]:
    """Every static cache of ``algebra`` (what a partition registers), built by the Spark cache job
    on ``session`` over ``store``: the rows of those of at most ``inline_rows`` rows (None: every
    one), and the ``ParquetRows`` of the larger ones, by cache key."""
    return record_caches(algebra, text, store, SparkCacheEngine(SparkSessionHolder.wrap(session), parquet_rows=inline_rows))


def record_caches(algebra: n.AlgebraQuery, text: str, store, cache_engine) -> tuple[dict, dict]:
    """``build_caches`` with any cache engine (``caches.engines``)."""
    recorder = _Recording(cache_engine)
    engine = Engine(store, cache_engine=recorder)
    try:
        engine.register_algebra(algebra, text, name="caches")
    finally:
        engine.close()
    return recorder.rows, recorder.large


def _row_order(row: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
    return tuple((text is not None, text or "") for text in row)


def row_partitions(plan: JobPlan, schema: tuple[str, ...], row: tuple[str | None, ...]) -> Iterable[int]:
    """The partitions that need a cache row (N-Triples forms): the owner of its key value when the
    cache has the partitioning key bound, since the row only joins solutions of that value (and
    only solutions a partition owns leave it); every partition otherwise."""
    if plan.partitioned and (name := plan.split.key.name) in schema and (value := row[schema.index(name)]) is not None:
        return (owner(parse_term(value), plan.partitions),)
    return range(plan.tasks)


def shards(plan: JobPlan, caches: CacheRows) -> list[dict]:
    """``caches`` cut into what each partition needs (``row_partitions``), by partition."""
    found: list[dict] = [{key: [] for key in caches} for _ in range(plan.tasks)]
    for key, rows in caches.items():
        for part, row in shard_rows(plan, key, rows):
            found[part][key].append(row)
    return found


def shard_rows(plan: JobPlan, key: tuple[str, tuple[str, ...]], rows: Iterable[tuple[str | None, ...]]) -> Iterator[tuple[int, tuple]]:
    """``(partition, row)`` for every partition each of ``rows`` of cache ``key`` goes to."""
    for row in rows:
        for part in row_partitions(plan, key[1], row):
            yield part, row
