"""What the one-shot engine (pyoxigraph) refuses, found on our AST so the user gets a located error.

Our parser accepts the whole CQELS language; pyoxigraph evaluates plain SPARQL 1.1 on absolute
IRIs. Checking the parsed request first turns pyoxigraph's late, unlocated refusals (``expected
OPTIONAL`` for a relative IRI, a ``RuntimeError`` for an unknown function) into
``QuerySyntaxError``s pointing at the offending term, and enforces the remote-access policy.
"""

from __future__ import annotations

import re

from cqels_endpoint.errors import QuerySyntaxError, RemoteAccessError, Span, StoreError
from cqels_endpoint.query import ast
from cqels_endpoint.query.serialize import write_term
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import IRI, Literal
from static_store.requests import pyoxigraph_position

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_UNSUPPORTED_FUNCTION = re.compile(r"custom function <([^>]*)> is not supported")
# Aggregates our grammar adds for continuous queries that SPARQL 1.1 (and pyoxigraph) lack.
_EXTENSION_AGGREGATES = frozenset({"MEDIAN"})


def check_request(request: ast.Query | ast.Update, text: str, *, allow_remote: bool) -> None:
    """Refuse, before any evaluation or write, what pyoxigraph cannot run or policy forbids."""
    for node in walk(request):
        match node:
            case IRI(value) if not _SCHEME.match(value):
                raise _located(f"relative IRI <{value}> needs a base IRI (a BASE declaration or the base_iri option)",
                               text, node)
            case Literal(datatype=datatype) if datatype is not None and not _SCHEME.match(datatype):
                raise _located(f"relative datatype IRI <{datatype}> needs a base IRI", text, node)
            case ast.Aggregate(name) if name in _EXTENSION_AGGREGATES:
                raise _located(
                    f"{name} is a CQELS extension available in continuous queries only; "
                    "register the query under /queries/{{name}} or compute it another way",
                    text,
                    node,
                )
            case ast.ServicePattern(name) if not allow_remote:
                msg = f"SERVICE {write_term(name)} needs remote access, which is disabled; enable --allow-remote"
                raise RemoteAccessError(msg)


def evaluation_error(kind: str, message: str, text: str, request: ast.Query) -> Exception:
    """The error to raise for pyoxigraph failing on a query our parser accepted.

    A syntax refusal or an unsupported function is the query's fault (``QuerySyntaxError``, located);
    anything else is the store's (``StoreError``).
    """
    if kind == "SyntaxError":
        position = pyoxigraph_position(message)
        offset = 0
        if position is not None:
            line, column = position
            lines = text.splitlines(keepends=True)
            offset = sum(len(part) for part in lines[: line - 1]) + column - 1
        return QuerySyntaxError.at(f"pyoxigraph cannot evaluate this query: {message}", text, offset)
    unsupported = _UNSUPPORTED_FUNCTION.search(message)
    if unsupported is not None:
        iri = unsupported.group(1)
        call = next((n for n in walk(request) if isinstance(n, ast.FunctionCall) and n.iri.value == iri), request)
        return _located(f"function <{iri}> is not supported by the one-shot query engine", text, call)
    return StoreError(f"query evaluation failed: {message}")


def _located(message: str, text: str, node: object) -> QuerySyntaxError:
    span = getattr(node, "span", None) or Span.at(text, 0)
    return QuerySyntaxError(message, text, span)
