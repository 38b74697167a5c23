"""cqels-endpoint: a SPARQL 1.1 endpoint with continuous CQELS queries over RDF streams."""

from cqels_endpoint.engine import Engine
from cqels_endpoint.query.parser import parse_query, parse_update

__all__ = ["Engine", "parse_query", "parse_update"]
