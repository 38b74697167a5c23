"""DISTINCT / REDUCED with per-row counters. Only the pure-Python operator of
``reference/distinct.py`` exists (``COMPILED`` is False): its cost is one dict update per delta."""

from cqels_endpoint.operators.reference.distinct import Distinct

COMPILED = False

__all__ = ["COMPILED", "Distinct"]
