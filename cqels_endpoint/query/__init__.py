"""Query text → AST: the grammar-driven parser (``parser``), the AST (``ast``), semantic checks
(``checks``), window configurations (``windows``) and the serialiser (``serialize``)."""

from cqels_endpoint.query.parser import parse_query, parse_update

__all__ = ["parse_query", "parse_update"]
