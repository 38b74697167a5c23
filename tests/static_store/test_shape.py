"""``static_store.shape`` against the project's parser, on every query and update of the W3C suites.

The token scan decides, without parsing, whether pyoxigraph may run a request unchecked and whether
a query may run in-process under its deadline. It may err only on the safe side: a query it calls
non-blocking must hold no operator that computes before its first row, one it lets past the checks
must hold no SERVICE, and a request it runs as pure INSERT DATA / DELETE DATA must be exactly that.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from w3c import SPARQL10, SPARQL11

from cqels_endpoint import parse_query, parse_update
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import BlankNode
from static_store.shape import query_shape, update_shape

_FORMS = {ast.SelectQuery: "SELECT", ast.AskQuery: "ASK", ast.ConstructQuery: "CONSTRUCT", ast.DescribeQuery: "DESCRIBE"}


def _requests(suffix: str) -> list[Path]:
    return sorted({*SPARQL10.rglob(f"*{suffix}"), *SPARQL11.rglob(f"*{suffix}")})


def _parsed(path: Path, parse):
    try:
        return parse(path.read_text(encoding="utf-8"), base_iri=path.as_uri())
    except (QuerySyntaxError, UnicodeDecodeError):
        return None  # a negative syntax test: nothing to compare with


QUERIES = [(path, query) for path in _requests(".rq") if (query := _parsed(path, parse_query)) is not None]
UPDATES = [(path, update) for path in _requests(".ru") if (update := _parsed(path, parse_update)) is not None]


def test_the_suites_give_enough_requests() -> None:
    assert len(QUERIES) > 400
    assert len(UPDATES) > 100


def _blocking(query: ast.Query) -> bool:
    for node in walk(query):
        match node:
            case ast.Aggregate() | ast.MinusPattern() | ast.Exists() | ast.SubSelect():
                return True
            case ast.Modifiers(group_by=group_by, having=having, order_by=order_by) if group_by or having or order_by:
                return True
            case ast.PathMod(modifier=modifier) if modifier in "*+":
                return True
    return False


@pytest.mark.parametrize(("path", "query"), QUERIES, ids=[str(p.relative_to(p.parents[1])) for p, _ in QUERIES])
def test_query_shape_errs_only_on_the_safe_side(path: Path, query: ast.Query) -> None:
    shape = query_shape(path.read_text(encoding="utf-8"))
    assert shape.form == _FORMS[type(query.form)]
    if _blocking(query):
        assert shape.blocking
    if any(isinstance(node, ast.ServicePattern) for node in walk(query)):
        assert shape.parse_first


def test_the_scan_sends_plain_lookups_in_process() -> None:
    # The other side of the scan: the common light shapes are not needlessly forked or parsed.
    light = [(path, q) for path, q in QUERIES if not _blocking(q)]
    wrongly_blocking = [path for path, _ in light if query_shape(path.read_text(encoding="utf-8")).blocking]
    assert len(wrongly_blocking) < len(light) / 10, wrongly_blocking


@pytest.mark.parametrize(("path", "update"), UPDATES, ids=[str(p.relative_to(p.parents[1])) for p, _ in UPDATES])
def test_update_shape_names_only_pure_data_requests(path: Path, update: ast.Update) -> None:
    shape = update_shape(path.read_text(encoding="utf-8"))
    kinds = {type(operation) for operation in update.operations}
    if shape.data_kind == "INSERT":
        assert kinds == {ast.InsertData}
    elif shape.data_kind == "DELETE":
        assert kinds == {ast.DeleteData}
        assert not any(isinstance(node, BlankNode) for node in walk(update))
    elif update.operations and kinds <= {ast.InsertData}:
        pytest.fail("a pure INSERT DATA request took the slow path")
