"""UNION (bag union with schema alignment). Only the pure-Python operator of ``reference/union.py``
exists (``COMPILED`` is False): it is a per-delta tuple reshuffle."""

from cqels_endpoint.operators.reference.union import Union, union_schema

COMPILED = False

__all__ = ["COMPILED", "Union", "union_schema"]
