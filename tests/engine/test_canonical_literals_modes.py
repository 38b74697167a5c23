"""Pushed non-canonical literals: the incremental mode answers with the terms of the Store, as the
re-evaluation mode does (which loads each window into a pyoxigraph Store), so both modes emit the
same rows: ``"19.0"^^xsd:decimal`` is ``"19"``, a stream ``"01"`` joins a static ``"1"``."""

from __future__ import annotations

import pytest
from incremental_oracle import Scenario, check

XSD = "http://www.w3.org/2001/XMLSchema#"
S0 = "http://ex.org/s0"


def literal(lexical: str, name: str) -> str:
    return f'"{lexical}"^^<{XSD}{name}>'


# Values of every datatype the Store rewrites, each written in a form it does not keep.
PUSHED = [
    literal("19.0", "decimal"), literal("10.50", "decimal"), literal("-0.0", "decimal"),
    literal("01", "integer"), literal("+5", "int"), literal("300", "byte"), literal("1", "boolean"),
    literal("1.0E0", "double"), literal("3.50", "double"), literal("+INF", "double"), literal("1.0", "float"),
    literal("2020-01-01T00:00:00+00:00", "dateTime"), literal("2020-01-01T00:00:00.000Z", "dateTime"),
    literal("2020-01-01+00:00", "date"), literal("24:00:00", "time"), literal("PT60S", "duration"),
    literal("P1Y12M", "yearMonthDuration"), literal("2020-00:00", "gYear"), literal("abc", "int"),
]  # fmt: skip


def _pushes(objects: list[str]) -> list[list]:
    return [
        ["push", S0, time, f"<http://ex.org/e{time}> <http://ex.org/p> {term} ."]
        for time, term in enumerate(objects)
    ]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ?s ?v WHERE { STREAM <http://ex.org/s0> [RANGE 1h] { ?s :p ?v } }",
        "SELECT ?v (COUNT(*) AS ?n) WHERE { STREAM <http://ex.org/s0> [RANGE 1h] { ?s :p ?v } } GROUP BY ?v",
        "SELECT DISTINCT ?v WHERE { STREAM <http://ex.org/s0> [RANGE 1h] { ?s :p ?v } }",
        "SELECT ?s WHERE { STREAM <http://ex.org/s0> [RANGE 1h] { ?s :p 1 } }",
    ],
    ids=["project", "group", "distinct", "constant"],
)
def test_both_modes_answer_with_the_store_forms(query):
    # Every value twice, in two forms the Store makes equal, so grouping and DISTINCT see one value.
    again = [literal("19", "decimal"), literal("10.5", "decimal"), literal("0", "decimal"), literal("1", "integer")]
    logs = check(Scenario("PREFIX : <http://ex.org/>\n" + query, events=_pushes(PUSHED + again)))
    assert logs["incremental", "RSTREAM"], "the query answered nothing: the test would show nothing"


def test_a_pushed_01_joins_a_static_1():
    static = "\n".join(
        f"<http://ex.org/k{i}> <http://ex.org/q> {term} ."
        for i, term in enumerate([literal("1", "integer"), literal("19", "decimal"), literal("3.5", "double")])
    )
    query = (
        "PREFIX : <http://ex.org/>\n"
        "SELECT ?s ?k WHERE { STREAM <http://ex.org/s0> [RANGE 1h] { ?s :p ?v } ?k :q ?v }"
    )
    pushed = [literal("01", "integer"), literal("19.00", "decimal"), literal("3.50", "double"), literal("2", "integer")]
    logs = check(Scenario(query, static=static, events=_pushes(pushed)))
    rows = {frozenset((name, str(term)) for name, term in row.items()) for e in logs["incremental", "RSTREAM"] for row in e.rows}
    assert len(rows) == 3  # the first three join their static twin; "2" joins nothing
