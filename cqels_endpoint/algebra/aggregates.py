"""The names under which aggregates leave the algebra.

``MEDIAN`` (our extension) has no SPARQL 1.1 syntax: ``to_sparql`` writes it as a call of the
pyoxigraph custom aggregate ``<MEDIAN_IRI>(e)``, and whoever evaluates that text passes
``runtime.aggregates.CUSTOM_AGGREGATES`` to ``Store.query``.
"""

MEDIAN_IRI = "urn:cqels:aggregate:median"
