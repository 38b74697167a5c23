"""cqels-endpoint: a SPARQL 1.1 endpoint with continuous CQELS queries over RDF streams."""

from cqels_endpoint.engine import Engine
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.query.parser import parse_query, parse_update
from cqels_endpoint.runtime.functions.extensions import register_function, registered_functions, unregister_function
from cqels_endpoint.runtime.functions.xsd import ExpressionError

__all__ = [
    "Engine",
    "ExpressionError",
    "open_store",
    "parse_query",
    "parse_update",
    "register_function",
    "registered_functions",
    "unregister_function",
]
