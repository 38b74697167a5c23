"""Cache engines: what computes the mappings of one static sub-pattern.

A cache engine takes a compiled ``plan.nodes.StaticCache`` (its sub-pattern and schema), the query
it belongs to and the static store, and returns the complete new rows of that cache. Two engines
must give identical caches: ``LocalCacheEngine`` evaluates the sub-pattern with pyoxigraph (the
oracle, and enough for small deployments); ``spark.job.SparkCacheEngine`` runs it as a Spark job.
The rebuild manager (``caches.rebuild``) decides when a cache is built; an engine only builds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.aggregates import MEDIAN_IRI
from cqels_endpoint.algebra.to_sparql import needs_store_graphs, to_sparql
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan.nodes import StaticCache
from cqels_endpoint.runtime.aggregates import CUSTOM_AGGREGATES
from cqels_endpoint.runtime.functions.extensions import custom_functions
from cqels_endpoint.terms import IRI

StaticSource = object
"""A ``cqels_endpoint.static_store.StaticStore``, a ``pyoxigraph.Store``, or None (no static data)."""

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

    ``close()`` releases what the engine holds (the Spark engine's session); the ``Engine`` calls
    it on close when it made the cache engine itself from a name (``spark.cache_engine``).
    """

    name: str

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild: ...
    def close(self) -> None: ...


class LocalCacheEngine:
    """Evaluates the cache's SELECT (``plan.caches.cache_sparql``) with pyoxigraph on the driver."""

    name = "local"

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild:
        # cache.sparql already carries the query's FROM/FROM NAMED (written by the compiler).
        return CacheBuild(compute_cache(cache, static), self.name, ("evaluated by pyoxigraph on the driver",))

    def close(self) -> None:
        """Nothing to release: pyoxigraph evaluates in this process."""


def static_solutions(static: StaticSource, text: str) -> Iterator[ox.QuerySolution]:
    """The solutions of the SELECT ``text`` over the static data."""
    store = ox.Store() if static is None else static
    # The extension functions (runtime.functions.extensions) a FILTER or BIND of the cache may call.
    options: dict = {"custom_functions": custom_functions()}
    if MEDIAN_IRI in text:
        # MEDIAN is a pyoxigraph custom aggregate in to_sparql text, which a StaticStore's one-shot
        # query cannot take: evaluate on a pyoxigraph copy of its quads instead.
        if not isinstance(store, ox.Store):
            copy = ox.Store()
            copy.extend(iter(store))
            store = copy
        options["custom_aggregate_functions"] = CUSTOM_AGGREGATES
    try:
        yield from store.query(text, **options)
    except (SyntaxError, OSError, RuntimeError, ValueError) as error:
        msg = f"the static sub-pattern query failed: {error}\n  {text}"
        raise PlanError(msg) from error


def compute_cache(cache: StaticCache, static: StaticSource) -> list[tuple]:
    """The mappings of ``cache`` as tuples of pyoxigraph terms (None for unbound) aligned with its schema.

    A cache whose text depends on the store's named graphs (``to_sparql.needs_store_graphs``: a
    ``GRAPH ?g`` pyoxigraph must evaluate graph by graph) is written again for the graphs ``static``
    has now.
    """
    text = cache.sparql
    if cache.select is not None and needs_store_graphs(cache.select):
        text = to_sparql(cache.select, store_graphs=store_graph_iris(static))
    return [tuple(solution[name] for name in cache.schema) for solution in static_solutions(static, text)]


def store_graph_iris(store: StaticSource) -> tuple[IRI, ...] | None:
    """The named graphs of ``store`` as IRIs, sorted; None when one is a blank node, which query text
    cannot name (``to_sparql`` then keeps pyoxigraph's own ``GRAPH ?g``)."""
    if store is None:
        return ()
    names = [g if isinstance(g, str) else g.value if isinstance(g, ox.NamedNode) else None for g in store.named_graphs()]
    if any(name is None or name.startswith("_:") for name in names):
        return None
    return tuple(IRI(name) for name in sorted(names))

