"""The incremental aggregation operator against its recomputing twin, and the aggregate semantics.

Hypothesis drives both operators with the same random insert/expire ticks (skewed groups, duplicate
rows, unbound values and values on which the aggregated expressions fail) and compares, after every
punctuation, the deltas each emitted in the tick and the relation it holds. Explicit cases pin the
documented results (``runtime.aggregates``): lower median, empty groups, error rules, emission.
Failing examples are kept in ``tests/regressions/aggregate_operator.json``.
"""

from __future__ import annotations

import json
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from operator_scenarios import REGRESSIONS, Recorded

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.operators._aggregate import GroupAggregate
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.runtime.decoding import TermDecoder
from cqels_endpoint.operators.reference.aggregate import GroupAggregate as ReferenceGroupAggregate
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.terms import Var

XSD = "http://www.w3.org/2001/XMLSchema#"
EX = "http://ex.org/"

# The values ?x takes: numerics of several datatypes (equal values with different terms too),
# strings with and without language, an IRI; None is unbound.
VALUES = (
    ox.Literal("1", datatype=ox.NamedNode(XSD + "integer")),
    ox.Literal("2", datatype=ox.NamedNode(XSD + "integer")),
    ox.Literal("2.5", datatype=ox.NamedNode(XSD + "decimal")),
    ox.Literal("1.0", datatype=ox.NamedNode(XSD + "decimal")),
    ox.Literal("-3", datatype=ox.NamedNode(XSD + "integer")),
    ox.Literal("a"),
    ox.Literal("b", language="en"),
    ox.NamedNode(EX + "i"),
    None,
)
GROUPS = (ox.NamedNode(EX + "g0"), ox.NamedNode(EX + "g1"), ox.Literal("g2"), None)

QUERIES = {
    "all aggregates by ?g": """
        SELECT ?g (COUNT(*) AS ?c) (COUNT(?x) AS ?cx) (COUNT(DISTINCT ?x) AS ?cd) (COUNT(DISTINCT *) AS ?cs)
               (SUM(?x) AS ?s) (AVG(?x) AS ?av) (MIN(?x) AS ?mi) (MAX(?x) AS ?ma) (SAMPLE(?x) AS ?sa)
               (GROUP_CONCAT(?x; SEPARATOR="|") AS ?gc) (MEDIAN(?x) AS ?me)
        WHERE { ?g <http://ex.org/v> ?x } GROUP BY ?g""",
    "expression arguments, DISTINCT, errors": """
        SELECT ?k (SUM(?x + 1) AS ?s) (AVG(DISTINCT ?x * 2) AS ?av) (MIN(STR(?x)) AS ?mi)
               (MAX(DISTINCT ?x) AS ?ma) (GROUP_CONCAT(DISTINCT STR(?x)) AS ?gc) (MEDIAN(DISTINCT ?x + 0) AS ?me)
               (SAMPLE(?x + 0) AS ?sa)
        WHERE { ?g <http://ex.org/v> ?x } GROUP BY (STR(?g) AS ?k)""",
    "no GROUP BY": """
        SELECT (COUNT(*) AS ?c) (SUM(?x) AS ?s) (AVG(?x) AS ?av) (GROUP_CONCAT(?x) AS ?gc) (MIN(?x) AS ?mi)
        WHERE { ?g <http://ex.org/v> ?x }""",
    "unnamed and failing keys": """
        SELECT (COUNT(?x) AS ?c) (MEDIAN(?x) AS ?me)
        WHERE { ?g <http://ex.org/v> ?x } GROUP BY (isIRI(?g)) (?x + 1 AS ?k)""",
}


def group_of(text: str) -> n.Group:
    return next(node for node in walk(to_algebra(parse_query(text))) if isinstance(node, n.Group))


def selected_names(text: str) -> dict[str, str]:
    """Internal aggregate column -> the name the query's SELECT gives it."""
    return {
        node.expr.name: node.var.name
        for node in walk(to_algebra(parse_query(text)))
        if isinstance(node, n.Extend) and isinstance(node.expr, Var)
    }


class Harness(Recorded):
    """One operator fed leaf rows (g, x) with lineage (leaf id,), recording what it emits."""

    def __init__(self, operator_class, group: n.Group, dictionary: TermDictionary) -> None:
        keys = [(None if var is None else var.name, expr) for var, expr in group.keys]
        aggregates = [(var.name, aggregate) for var, aggregate in group.aggregates]
        super().__init__(operator_class(("g", "x"), keys, aggregates, TermDecoder(dictionary)))


def decoded(dictionary: TermDictionary, rows) -> Counter:
    return Counter(tuple(None if i is None else dictionary.decode(i) for i in row) for row in rows)


def run(query: str, ticks: list[list[list]]) -> None:
    """Replays ``ticks`` (``["+", g, x]`` inserts a leaf, ``["-", k]`` expires the k-th live one)
    through both operators and checks them against each other after every tick."""
    group = group_of(QUERIES[query])
    dictionary = TermDictionary()
    incremental = Harness(GroupAggregate, group, dictionary)
    reference = Harness(ReferenceGroupAggregate, group, dictionary)
    live: dict[int, tuple] = {}
    next_leaf = 1
    for tau, operations in enumerate(ticks):
        deltas = []
        for operation in operations:
            if operation[0] == "+":
                terms = (GROUPS[operation[1]], VALUES[operation[2]])
                row = tuple(None if term is None else dictionary.encode(term) for term in terms)
                live[next_leaf] = row
                deltas.append(Delta(row, 1, (next_leaf,)))
                next_leaf += 1
            elif live:
                leaf = sorted(live)[operation[1] % len(live)]
                deltas.append(Delta(live.pop(leaf), -1, (leaf,)))
        mine = incremental.tick(deltas, tau)
        theirs = reference.tick(deltas, tau)
        for sign in (1, -1):
            assert decoded(dictionary, [d.row for d in mine if d.sign == sign]) == decoded(
                dictionary, [d.row for d in theirs if d.sign == sign]
            ), f"tick {tau} ({operations}): the operators disagree on the {sign:+d} rows"
        # One output per changed group per tick: at most one -1 and one +1 per group lineage.
        for sign in (1, -1):
            lineages = Counter(d.lineage for d in mine if d.sign == sign)
            assert all(count == 1 for count in lineages.values()), lineages
        assert decoded(dictionary, incremental.recorder.relation().elements()) == decoded(
            dictionary, reference.recorder.relation().elements()
        )
        # Expired leaves release their ids only now: the operators decoded them already.
        for delta in deltas:
            if delta.sign < 0:
                dictionary.decref_many(i for i in delta.row if i is not None)
    incremental.operator.close()
    reference.operator.close()
    for row in live.values():
        dictionary.decref_many(i for i in row if i is not None)
    assert len(dictionary) == 0, "an operator leaked dictionary references"


OPERATION = st.one_of(
    st.tuples(
        st.just("+"),
        st.sampled_from([0, 0, 0, 0, 1, 1, 2, 3]),  # skewed: g0 dominates
        st.integers(0, len(VALUES) - 1),
    ).map(list),
    st.tuples(st.just("-"), st.integers(0, 20)).map(list),
)
TICKS = st.lists(st.lists(OPERATION, max_size=6), min_size=1, max_size=12)


@pytest.mark.parametrize("query", list(QUERIES))
@settings(max_examples=60, deadline=None)
@given(ticks=TICKS)
def test_incremental_equals_recompute_after_every_tick(query, ticks):
    run(query, ticks)


REGRESSION_FILE = REGRESSIONS / "aggregate_operator.json"


@pytest.mark.parametrize(
    "case", json.loads(REGRESSION_FILE.read_text()), ids=lambda case: case["note"]
)
def test_regressions(case):
    run(case["query"], case["ticks"])


# ---------------------------------------------------------------------- pinned results


def integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=ox.NamedNode(XSD + "integer"))


def single_tick(query: str, rows: list[tuple], operator_class=GroupAggregate) -> list[dict]:
    group = group_of(query)
    dictionary = TermDictionary()
    harness = Harness(operator_class, group, dictionary)
    deltas = [
        Delta(tuple(None if t is None else dictionary.encode(t) for t in row), 1, (leaf,))
        for leaf, row in enumerate(rows, 1)
    ]
    out = harness.tick(deltas, 0)
    names = selected_names(query)
    schema = [names.get(name, name) for name in harness.operator.schema]
    return [
        {name: dictionary.decode(i) for name, i in zip(schema, d.row) if i is not None} for d in out if d.sign > 0
    ]


@pytest.mark.parametrize("operator_class", [GroupAggregate, ReferenceGroupAggregate])
def test_median_is_the_lower_middle_value(operator_class):
    query = "SELECT (MEDIAN(?x) AS ?m) WHERE { ?g <http://ex.org/v> ?x }"
    rows = [(None, integer(v)) for v in (7, 1, 4, 10)]
    assert single_tick(query, rows, operator_class) == [{"m": integer(4)}]
    rows.append((None, ox.Literal("x")))
    assert single_tick(query, rows, operator_class) == [{}], "a non-numeric value makes MEDIAN an error"


def test_empty_input_without_group_by_gives_one_row():
    query = "SELECT (COUNT(*) AS ?c) (SUM(?x) AS ?s) (GROUP_CONCAT(?x) AS ?gc) (MIN(?x) AS ?m) WHERE { ?g <http://ex.org/v> ?x }"
    assert single_tick(query, []) == [{"c": integer(0), "s": integer(0), "gc": ox.Literal("")}]
    assert single_tick(query + " GROUP BY ?g", []) == []


def test_errors_unbind_strict_aggregates_and_are_skipped_by_count_and_sample():
    query = """SELECT ?g (COUNT(?x) AS ?c) (SUM(?x) AS ?s) (MAX(?x) AS ?ma) (SAMPLE(?x) AS ?sa)
               (GROUP_CONCAT(?x; SEPARATOR=",") AS ?gc) WHERE { ?g <http://ex.org/v> ?x } GROUP BY ?g"""
    g = ox.NamedNode(EX + "g")
    [row] = single_tick(query, [(g, integer(3)), (g, None), (g, integer(1))])
    assert row == {"g": g, "c": integer(2), "sa": integer(1)}
    [row] = single_tick(query, [(g, ox.Literal("b")), (g, ox.Literal("a"))])
    assert row["gc"] == ox.Literal("a,b") and row["ma"] == ox.Literal("b") and "s" not in row


def test_one_retraction_and_one_addition_per_changed_group_and_nothing_when_unchanged():
    group = group_of("SELECT ?g (MAX(?x) AS ?m) WHERE { ?g <http://ex.org/v> ?x } GROUP BY ?g")
    dictionary = TermDictionary()
    harness = Harness(GroupAggregate, group, dictionary)
    g, one, five = (dictionary.encode(t) for t in (ox.NamedNode(EX + "g"), integer(1), integer(5)))
    first = harness.tick([Delta((g, five), 1, (1,)), Delta((g, one), 1, (2,))], 0)
    assert [(d.row, d.sign) for d in first] == [((g, five), 1)]
    assert harness.tick([Delta((g, one), -1, (2,))], 1) == [], "MAX is still 5: nothing to emit"
    second = harness.tick([Delta((g, five), -1, (1,)), Delta((g, one), 1, (3,))], 2)
    assert [(d.row, d.sign) for d in second] == [((g, five), -1), ((g, one), 1)]
    assert second[0].lineage == second[1].lineage == first[0].lineage
    third = harness.tick([Delta((g, one), -1, (3,))], 3)
    assert [(d.row, d.sign) for d in third] == [((g, one), -1)], "the emptied group disappears"


def test_median_as_a_pyoxigraph_custom_aggregate_agrees_with_the_operators():
    from cqels_endpoint.algebra.aggregates import MEDIAN_IRI
    from cqels_endpoint.runtime.aggregates import MedianAccumulator

    functions = {ox.NamedNode(MEDIAN_IRI): MedianAccumulator}

    def median(values: str):
        query = f"SELECT (<{MEDIAN_IRI}>(?z) AS ?m) WHERE {{ VALUES ?z {{ {values} }} }}"
        [solution] = ox.Store().query(query, custom_aggregate_functions=functions)
        return solution["m"]

    assert median("4 1 2 3.5") == integer(2)
    assert median("1 UNDEF 2") is None
    assert median('1 "x"') is None
    assert median("") is None
