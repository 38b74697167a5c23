"""Cache engines: what computes the mappings of one static sub-pattern (DESIGN §4 "Static data").

A cache engine takes a compiled ``plan.nodes.StaticCache`` (its sub-pattern and schema), the query
it belongs to and the static store, and returns the complete new rows of that cache. Two engines
must give identical caches: ``LocalCacheEngine`` evaluates the sub-pattern with pyoxigraph (the
oracle, and enough for small deployments); ``spark.job.SparkCacheEngine`` runs it as a Spark job.
The rebuild manager (``caches.rebuild``) decides when a cache is built; an engine only builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.plan.caches import StaticSource, compute_cache
from cqels_endpoint.plan.nodes import StaticCache

CACHE_ENGINES = ("local", "spark")


@dataclass(frozen=True)
class CacheBuild:
    """The complete content of one cache as one engine computed it.

    ``rows``: pyoxigraph terms, or None for unbound, aligned with the cache's schema (a bag).
    ``notes``: how parts of it were computed, shown by ``explain`` (e.g. "FILTER by a Python UDF").
    """

    rows: list[tuple]
    engine: str
    notes: tuple[str, ...] = ()


class CacheEngine(Protocol):
    """Computes the rows of a static cache; ``build`` raises on failure and never returns part of a cache.

    An engine that holds resources (the Spark engine's session) also has ``close()``, which the
    ``Engine`` calls on close when it made the cache engine itself (``cache_engine(name)``); an
    engine without resources has none, rather than an empty one.
    """

    name: str

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild: ...


class LocalCacheEngine:
    """Evaluates the cache's SELECT (``plan.caches.cache_sparql``) with pyoxigraph on the driver."""

    name = "local"

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild:
        # cache.sparql already carries the query's FROM/FROM NAMED (written by the compiler).
        return CacheBuild(compute_cache(cache, static), self.name, ("evaluated by pyoxigraph on the driver",))


def cache_engine(name: str, spark_master: str | None = None, *, start: bool = True) -> CacheEngine:
    """The cache engine called ``name`` ("local" or "spark"); ``spark_master`` only for Spark
    (else ``CQELS_SPARK_MASTER``, else ``local[*]``). Raises ``ValueError`` for another name.

    ``start`` begins starting the SparkSession in the background at once; without it the session
    starts with ``engine.session_holder.start()`` or the first build (the server starts it when it
    starts serving, not whenever an app object is made)."""
    if name == "local":
        return LocalCacheEngine()
    if name == "spark":
        # Imported here: pyspark is heavy and only a Spark deployment needs it.
        from cqels_endpoint.spark.job import SparkCacheEngine
        from cqels_endpoint.spark.session import SparkSessionHolder

        holder = SparkSessionHolder(master=spark_master)
        if start:
            holder.start()
        return SparkCacheEngine(holder)
    msg = f"cache engine must be one of {', '.join(CACHE_ENGINES)}, not {name!r}"
    raise ValueError(msg)
