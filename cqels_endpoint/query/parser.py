"""SPARQL 1.1 Query/Update + CQELS text → AST with source spans.

>>> query = parse_query("SELECT ?s WHERE { STREAM <http://ex.org/s> [RANGE 30s] { ?s a <http://ex.org/C> } }")
>>> query.form.where.elements[0].window
RangeWindow(range_ms=30000, slide_ms=None)
>>> parse_query("SELECT * { ?s ex:p ?o }")
Traceback (most recent call last):
  ...
cqels_endpoint.errors.QuerySyntaxError: undeclared prefix 'ex:'; declare it with PREFIX ex: <…>

The grammar (``grammar/cqels.lark`` layered on ``grammar/sparql11.lark``) is loaded from the
installed package once, on first use, and lark's parser cache keeps later processes from
recomputing its LALR tables. The AST is built during the LALR parse itself (``_reductions``), with
no intermediate parse tree. Every error, from the grammar or from a semantic check, is a
``QuerySyntaxError``; no lark exception reaches the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from lark import Lark
from lark.exceptions import UnexpectedInput

from cqels_endpoint.config import DEFAULT_STREAM_BASE
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query._builder import AstBuilder
from cqels_endpoint.query._lexical import Source
from cqels_endpoint.query._reductions import Building, install, unwrap
from cqels_endpoint.query._syntax_errors import describe_terminals, syntax_error, unmangled
from cqels_endpoint.query.checks import check_query, check_update

__all__ = ["parse_query", "parse_update"]

_GRAMMAR_PACKAGE = "cqels_endpoint.grammar"
_GRAMMAR_FILE = "cqels.lark"


class _Grammar:
    """The lark parser and the wording of its terminals, built on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lark: Lark | None = None
        self.described: dict[str, str] = {}

    @property
    def lark(self) -> Lark:
        if self._lark is None:
            with self._lock:
                if self._lark is None:
                    lark = Lark.open_from_package(
                        _GRAMMAR_PACKAGE,
                        _GRAMMAR_FILE,
                        parser="lalr",
                        lexer="contextual",
                        start=["query_unit", "update_unit"],
                        # Positions are tracked by our own reduce callbacks (_reductions.py),
                        # at a fraction of the cost of lark's propagate_positions.
                        propagate_positions=False,
                        maybe_placeholders=True,
                        cache=True,
                    )
                    install(lark.parser.parser.parser, _handler_for)
                    self.described = describe_terminals(lark.terminals)
                    self._lark = lark
        return self._lark


_GRAMMAR = _Grammar()


def parse_query(
    text: str,
    base_iri: str | None = None,
    *,
    allow_streams: bool = True,
    stream_base: str = DEFAULT_STREAM_BASE,
) -> ast.Query:
    """Parse a SPARQL 1.1 / CQELS / CQELS-QL 2.0 query into an ``ast.Query``.

    ``base_iri`` resolves relative IRIs (a ``BASE`` in the text takes over from it); without one
    they stay relative. A bare stream name (``FROM STREAM Sensors [NOW]``) is the stream
    ``stream_base`` + name, as a short name is over HTTP (``ServerConfig.stream_base``). With
    ``allow_streams=False`` (one-shot queries) STREAM, WINDOW, FROM STREAM, FROM NAMED WINDOW and
    REGISTER are errors. Raises ``QuerySyntaxError``.
    """
    query = _parse(text, "query_unit", base_iri, allow_streams, stream_base)
    with _depth_guard(text):
        check_query(query)
    return query


def parse_update(text: str, base_iri: str | None = None) -> ast.Update:
    """Parse a SPARQL 1.1 Update request into an ``ast.Update``. Raises ``QuerySyntaxError``."""
    update = _parse(text, "update_unit", base_iri, True, DEFAULT_STREAM_BASE)
    with _depth_guard(text):
        check_update(update)
    return update


def _handler_for(rule_name: str):
    name = unmangled(rule_name)
    return None if name.startswith("_") else getattr(AstBuilder, name, None)


def _parse(text: str, start: str, base_iri: str | None, allow_streams: bool, stream_base: str):
    lark = _GRAMMAR.lark
    source = Source(text)
    builder = AstBuilder(source, base_iri, allow_streams=allow_streams, stream_base=stream_base)
    try:
        with Building(builder), _depth_guard(text):
            return unwrap(lark.parse(source.text, start=start))
    except UnexpectedInput as error:
        raise syntax_error(error, source, _GRAMMAR.described) from None


@contextmanager
def _depth_guard(text: str) -> Iterator[None]:
    """Turn a RecursionError (a query nested thousands of levels deep) into a QuerySyntaxError."""
    try:
        yield
    except RecursionError:
        msg = "the query is nested too deeply to be processed"
        raise QuerySyntaxError.at(msg, text, 0, min(1, len(text))) from None
