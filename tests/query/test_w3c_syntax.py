"""The W3C SPARQL syntax suites through ``parse_query`` / ``parse_update``.

Positive tests must parse; negative tests must raise ``QuerySyntaxError`` (exactly that type,
never a lark exception). Known failures are listed with reasons in ``known_failures.py`` and run
as strict xfails, so a fixed one fails the suite until its entry is removed.
"""

from __future__ import annotations

import pytest
from w3c import SPARQL10, SPARQL11, W3CTest
from w3c import params as w3c_params
from w3c import select_tests as w3c_tests

from cqels_endpoint import parse_query, parse_update
from cqels_endpoint.errors import QuerySyntaxError

SYNTAX_QUERY = [SPARQL11 / "syntax-query" / "manifest.ttl"]
NEGATIVE_ONLY = [SPARQL11 / name / "manifest.ttl" for name in ("aggregates", "construct", "grouping")]
SPARQL10_SYNTAX = [SPARQL10 / "manifest-syntax.ttl"]
SYNTAX_UPDATE = [SPARQL11 / name / "manifest.ttl" for name in ("syntax-update-1", "syntax-update-2")]

POSITIVE_QUERIES = w3c_tests(SYNTAX_QUERY, "PositiveSyntaxTest11") + w3c_tests(
    SPARQL10_SYNTAX, "PositiveSyntaxTest"
)
NEGATIVE_QUERIES = (
    w3c_tests(SYNTAX_QUERY, "NegativeSyntaxTest11")
    + w3c_tests(NEGATIVE_ONLY, "NegativeSyntaxTest11")
    + w3c_tests(SPARQL10_SYNTAX, "NegativeSyntaxTest")
)
POSITIVE_UPDATES = w3c_tests(SYNTAX_UPDATE, "PositiveUpdateSyntaxTest11")
NEGATIVE_UPDATES = w3c_tests(SYNTAX_UPDATE, "NegativeUpdateSyntaxTest11")



def read(test: W3CTest) -> str:
    return test.action.read_text(encoding="utf-8")


def test_the_suites_have_the_expected_sizes() -> None:
    """Guards against a manifest that silently stops loading (the counts of the W3C suites)."""
    assert len(w3c_tests(SYNTAX_QUERY, "PositiveSyntaxTest11")) == 63
    assert len(w3c_tests(SYNTAX_QUERY, "NegativeSyntaxTest11")) == 31
    assert len(w3c_tests(NEGATIVE_ONLY, "NegativeSyntaxTest11")) == 9
    assert len(w3c_tests(SPARQL10_SYNTAX, "PositiveSyntaxTest")) == 149
    assert len(w3c_tests(SPARQL10_SYNTAX, "NegativeSyntaxTest")) == 50
    assert len(POSITIVE_UPDATES) == 42
    assert len(NEGATIVE_UPDATES) == 13


@pytest.mark.parametrize("test", w3c_params(POSITIVE_QUERIES))
def test_positive_query_syntax(test: W3CTest) -> None:
    parse_query(read(test), base_iri=test.action.as_uri())


@pytest.mark.parametrize("test", w3c_params(NEGATIVE_QUERIES))
def test_negative_query_syntax(test: W3CTest) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        parse_query(read(test), base_iri=test.action.as_uri())
    assert type(raised.value) is QuerySyntaxError


@pytest.mark.parametrize("test", w3c_params(POSITIVE_UPDATES))
def test_positive_update_syntax(test: W3CTest) -> None:
    parse_update(read(test), base_iri=test.action.as_uri())


@pytest.mark.parametrize("test", w3c_params(NEGATIVE_UPDATES))
def test_negative_update_syntax(test: W3CTest) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        parse_update(read(test), base_iri=test.action.as_uri())
    assert type(raised.value) is QuerySyntaxError
