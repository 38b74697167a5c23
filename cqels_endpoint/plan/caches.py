"""Static caches: the mappings of each static sub-pattern, computed with pyoxigraph at registration.

DESIGN §4: the maximal static sub-patterns of a query are materialised once per query, dictionary
encoded, and probed by the stream inputs on the variables they share. In this issue the mappings
come from a pyoxigraph evaluation of the sub-pattern written back to SPARQL (``to_sparql``) with
the query's own ``FROM``/``FROM NAMED`` clauses, so a cache holds exactly the solutions SPARQL
gives for that sub-pattern over the static dataset. This is the local cache engine
(``caches.engines.LocalCacheEngine``) and the oracle of the Spark one; ``caches.rebuild`` decides
when a cache is built again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.aggregates import MEDIAN_IRI
from cqels_endpoint.algebra.to_sparql import to_sparql
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan.nodes import StaticCache
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.aggregates import CUSTOM_AGGREGATES
from cqels_endpoint.terms import Var

StaticSource = object
"""A ``cqels_endpoint.static_store.StaticStore``, a ``pyoxigraph.Store``, or None (no static data)."""


def cache_sparql(query: n.AlgebraQuery, cache: StaticCache) -> str:
    """The SELECT whose solutions are the cached mappings of ``cache``."""
    static_datasets = tuple(d for d in query.datasets if isinstance(d, ast.DatasetClause))
    select = n.AlgebraQuery(
        "SELECT",
        n.Project(tuple(Var(name) for name in cache.schema), cache.pattern),
        datasets=static_datasets,
        base=query.base,
    )
    return to_sparql(select)


def static_solutions(static: StaticSource, text: str) -> Iterator[ox.QuerySolution]:
    """The solutions of the SELECT ``text`` over the static data."""
    store = ox.Store() if static is None else static
    options = {}
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
    """The mappings of ``cache`` as tuples of pyoxigraph terms (None for unbound) aligned with its schema."""
    return [tuple(solution[name] for name in cache.schema) for solution in static_solutions(static, cache.sparql)]

