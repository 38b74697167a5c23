"""The logical plan: SPARQL 1.1 algebra (spec §18.2) with stream nodes, its printer and optimizer.

``to_algebra(query)`` translates a parsed query, ``optimize(algebra)`` runs the passes of
``passes.RULES``, ``to_sexpr(node)`` prints any of it as an S-expression.
"""

from cqels_endpoint.algebra.nodes import AlgebraQuery
from cqels_endpoint.algebra.passes import RULES, optimize
from cqels_endpoint.algebra.sexpr import to_sexpr
from cqels_endpoint.algebra.translate import to_algebra

__all__ = ["RULES", "AlgebraQuery", "optimize", "to_algebra", "to_sexpr"]
