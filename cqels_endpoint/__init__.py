"""cqels-endpoint: a SPARQL 1.1 endpoint with continuous CQELS queries over RDF streams."""

from cqels_endpoint.query.parser import parse_query, parse_update

__all__ = ["Engine", "parse_query", "parse_update"]


def __getattr__(name: str):
    # Imported on first use: the engine pulls in static_store, which itself imports this package.
    if name == "Engine":
        from cqels_endpoint.engine import Engine

        return Engine
    raise AttributeError(f"module 'cqels_endpoint' has no attribute {name!r}")
