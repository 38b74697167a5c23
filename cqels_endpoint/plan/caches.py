"""Static caches: the SELECT whose solutions are the mappings of each static sub-pattern.

The maximal static sub-patterns of a query are materialised once per query, dictionary encoded,
and probed by the stream inputs on the variables they share
(docs/ARCHITECTURE.md, "Static data and caches"). The mappings come from a pyoxigraph evaluation
of the sub-pattern written back to SPARQL (``to_sparql``) with the query's own
``FROM``/``FROM NAMED`` clauses, so a cache holds exactly the solutions SPARQL gives for that
sub-pattern over the static dataset. ``caches.engines`` evaluates it (the local
cache engine, and the oracle of the Spark one); ``caches.rebuild`` decides when a cache is built again.
"""

from __future__ import annotations

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.to_sparql import to_sparql
from cqels_endpoint.plan.nodes import StaticCache
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import QueryForm
from cqels_endpoint.terms import Var


def cache_select(query: n.AlgebraQuery, cache: StaticCache) -> n.AlgebraQuery:
    """The SELECT whose solutions are the cached mappings of ``cache``, as algebra."""
    static_datasets = tuple(d for d in query.datasets if isinstance(d, ast.DatasetClause))
    return n.AlgebraQuery(
        QueryForm.SELECT,
        n.Project(tuple(Var(name) for name in cache.schema), cache.pattern),
        datasets=static_datasets,
        base=query.base,
    )


def cache_sparql(query: n.AlgebraQuery, cache: StaticCache) -> str:
    """The SELECT whose solutions are the cached mappings of ``cache``."""
    return to_sparql(cache_select(query, cache))
