"""The optimizer: an ordered tuple of small pure passes, ``AlgebraQuery`` → ``AlgebraQuery``.

Each pass lives in its own module, named as its function, and has golden fixtures under
``tests/fixtures/algebra/<pass name>/`` (its output on the plain translation). Order matters:
filters are pushed down first (so that a filter reading only static variables ends up inside the
static cache), joins are flattened next (so that the split sees every operand of a multiway join),
and the static/stream split comes last.
"""

from __future__ import annotations

from cqels_endpoint.algebra.nodes import AlgebraQuery
from cqels_endpoint.algebra.passes.flatten_joins import flatten_joins
from cqels_endpoint.algebra.passes.push_filters import push_filters
from cqels_endpoint.algebra.passes.split_static import split_static

RULES: tuple = (push_filters, flatten_joins, split_static)

PASSES = {rule.__name__: rule for rule in RULES}
"""The passes by name (the name of their module)."""


def optimize(query: AlgebraQuery, rules: tuple = RULES) -> AlgebraQuery:
    """``query`` after each of ``rules`` in turn."""
    for rule in rules:
        query = rule(query)
    return query
