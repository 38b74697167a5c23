"""The compiled top-k operator against its re-sorting twin, and the influence region.

The compiled operator is taken from ``operators._topk`` directly, so that these tests check it under
``CQELS_PURE_PYTHON=1`` too (where the engine's ``TopK`` is the twin). Hypothesis drives both
operators with the same random ticks — inserts, expiries, and rows replaced under the same lineage
(what an aggregate emits when a group's value changes) — over values of every kind (numerics,
strings, IRIs, unbound) with many ties, for several ORDER BY / OFFSET / LIMIT shapes, and compares
after every punctuation the deltas each emitted in the tick (rows, signs, lineages, order) and the
slice it holds, and at the end the counters both report. Explicit cases pin the influence region: a
change behind the k-th row emits nothing and is counted as a skipped tick. Failing examples are kept
in ``tests/regressions/topk_operator.json``.
"""

from __future__ import annotations

import json

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from operator_scenarios import REGRESSIONS, Recorded

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.operators import _topk
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.order import Order
from cqels_endpoint.operators.reference import topk as reference_topk
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.decoding import TermDecoder
from cqels_endpoint.runtime.encoding import TermDictionary

XSD = "http://www.w3.org/2001/XMLSchema#"
EX = "http://ex.org/"

VALUES = (
    ox.Literal("1", datatype=ox.NamedNode(XSD + "integer")),
    ox.Literal("2", datatype=ox.NamedNode(XSD + "integer")),
    ox.Literal("2.5", datatype=ox.NamedNode(XSD + "decimal")),
    ox.Literal("-3", datatype=ox.NamedNode(XSD + "integer")),
    ox.Literal("a"),
    ox.NamedNode(EX + "i"),
    None,
)
GROUPS = (ox.NamedNode(EX + "g0"), ox.NamedNode(EX + "g1"), ox.Literal("g2"), None)

# ORDER BY clauses over ?g ?x; the slice shapes are drawn separately.
ORDERS = {
    "by ?x": "ORDER BY ?x",
    "by DESC(?x)": "ORDER BY DESC(?x)",
    "by an expression, then ?g": "ORDER BY DESC(?x * 2) ?g",
    "tie-break only": "",
}
SLICES = [(0, 1), (0, 3), (2, 2), (1, None), (0, 0), (4, 1)]


def conditions(order: str) -> tuple:
    algebra = to_algebra(parse_query(f"SELECT ?g ?x WHERE {{ ?g <{EX}v> ?x }} {order}"))
    found = [node for node in walk(algebra) if isinstance(node, n.OrderBy)]
    return found[0].conditions if found else ()


class Harness(Recorded):
    """One operator fed rows (g, x), recording what it emits."""

    def __init__(self, operator_class, order: str, offset: int, limit: int | None, dictionary: TermDictionary) -> None:
        decoder = TermDecoder(dictionary)
        super().__init__(operator_class(("g", "x"), conditions(order), ("g", "x"), decoder, offset, limit))


def run(order: str, offset: int, limit: int | None, ticks: list[list[list]]) -> None:
    """Replays ``ticks`` (``["+", g, x]`` inserts a row, ``["-", k]`` expires the k-th live one,
    ``["~", k, x]`` replaces the k-th live one's x under the same lineage) through both operators."""
    dictionary = TermDictionary()
    incremental = Harness(_topk.TopK, ORDERS[order], offset, limit, dictionary)
    reference = Harness(reference_topk.TopK, ORDERS[order], offset, limit, dictionary)
    live: dict[tuple, tuple] = {}
    next_leaf = 1

    def encode(g: int, x: int) -> tuple:
        return tuple(None if term is None else dictionary.encode(term) for term in (GROUPS[g], VALUES[x]))

    for tau, operations in enumerate(ticks):
        deltas = []
        for operation in operations:
            if operation[0] == "+":
                row = encode(operation[1], operation[2])
                live[(next_leaf,)] = row
                deltas.append(Delta(row, 1, (next_leaf,)))
                next_leaf += 1
            elif live:
                lineage = sorted(live)[operation[1] % len(live)]
                row = live.pop(lineage)
                deltas.append(Delta(row, -1, lineage))
                if operation[0] == "~":
                    value = VALUES[operation[2]]
                    new = (row[0], None if value is None else dictionary.encode(value))
                    live[lineage] = new
                    deltas.append(Delta(new, 1, lineage))
        mine = incremental.tick(deltas, tau)
        theirs = reference.tick(deltas, tau)
        assert mine == theirs, f"tick {tau} ({operations}): the operators disagree"
        assert incremental.recorder.live == reference.recorder.live
        expected = limit if limit is not None else len(live)
        assert len(incremental.recorder.live) == max(0, min(expected, len(live) - offset))
    mine, theirs = incremental.operator.counters(), reference.operator.counters()
    # The twin re-reads the slice at every changed tick; the compiled operator skips the ticks whose
    # changes all fell behind the slice, and recomputes at most as often.
    assert mine["recomputations"] + mine["skipped_ticks"] == theirs["recomputations"]
    assert theirs["skipped_ticks"] == 0
    shared = ("inputs", "outputs", "slice_rows", "live_rows")
    assert {c: mine[c] for c in shared} == {c: theirs[c] for c in shared}
    assert mine["live_rows"] == len(live) and mine["slice_rows"] == len(incremental.recorder.live)


OPERATION = st.one_of(
    st.tuples(st.just("+"), st.sampled_from([0, 0, 1, 2, 3]), st.integers(0, len(VALUES) - 1)).map(list),
    st.tuples(st.just("-"), st.integers(0, 20)).map(list),
    st.tuples(st.just("~"), st.integers(0, 20), st.integers(0, len(VALUES) - 1)).map(list),
)
TICKS = st.lists(st.lists(OPERATION, max_size=6), min_size=1, max_size=12)


@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize(("offset", "limit"), SLICES)
@settings(max_examples=25, deadline=None)
@given(ticks=TICKS)
def test_compiled_operator_matches_its_twin_delta_for_delta(order, offset, limit, ticks):
    run(order, offset, limit, ticks)


REGRESSION_FILE = REGRESSIONS / "topk_operator.json"


@pytest.mark.parametrize("case", json.loads(REGRESSION_FILE.read_text()), ids=lambda case: case["note"])
def test_regressions(case):
    run(case["order"], case["offset"], case["limit"], case["ticks"])


# ---------------------------------------------------------------------- the influence region


def integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=ox.NamedNode(XSD + "integer"))


def test_a_change_behind_the_kth_row_is_a_skipped_tick_and_emits_nothing():
    dictionary = TermDictionary()
    harness = Harness(_topk.TopK, "ORDER BY DESC(?x)", 0, 2, dictionary)
    g = dictionary.encode(GROUPS[0])
    ids = {v: dictionary.encode(integer(v)) for v in (1, 5, 7, 9)}
    first = harness.tick([Delta((g, ids[v]), 1, (leaf,)) for leaf, v in enumerate((5, 7, 1), 1)], 0)
    assert [(d.row[1], d.sign) for d in first] == [(ids[7], 1), (ids[5], 1)]
    assert harness.tick([Delta((g, ids[1]), -1, (3,))], 1) == [], "the 3rd row left: outside the top 2"
    assert harness.operator.counters()["skipped_ticks"] == 1
    second = harness.tick([Delta((g, ids[9]), 1, (4,))], 2)
    assert [(d.row[1], d.sign) for d in second] == [(ids[5], -1), (ids[9], 1)]
    third = harness.tick([Delta((g, ids[9]), -1, (4,))], 3)
    assert [(d.row[1], d.sign) for d in third] == [(ids[9], -1), (ids[5], 1)], "a removal pulls the next row in"
    assert harness.operator.counters()["recomputations"] == 3


@pytest.mark.parametrize("limit", [2, 0], ids=["against the slice's edge", "inside the ordered set"])
def test_an_order_key_comparison_error_reaches_the_caller_as_it_was_raised(limit):
    """The C++ ordered set compares the Python order keys; a comparison that raises must come out as
    that exception (not a crash, not a generic RuntimeError), leaving the operator as it was."""
    harness = Harness(_topk.TopK, "ORDER BY ?x", 0, limit, TermDictionary())
    harness.operator._rows = _topk._TopRows(lambda row: (row[0],), 0, limit)  # keys that do not compare across types
    one, two = Delta((1, 0), 1, (1,)), Delta((2, 0), 1, (3,))

    def shown(deltas):
        return deltas if limit else []

    assert harness.tick([one], 0) == shown([one])
    with pytest.raises(TypeError, match="not supported"):
        harness.operator.on_batch(0, [Delta(("a", 0), 1, (2,))])
    assert harness.tick([two], 1) == shown([two])
    gone = [Delta(one.row, -1, one.lineage), Delta(two.row, -1, two.lineage)]
    assert harness.tick(gone, 2) == shown(gone)
    assert harness.operator.counters()["live_rows"] == 0


def test_limit_0_never_recomputes_and_a_shrinking_relation_shrinks_the_slice():
    dictionary = TermDictionary()
    g, one = dictionary.encode(GROUPS[0]), dictionary.encode(integer(1))
    empty = Harness(_topk.TopK, "ORDER BY ?x", 0, 0, dictionary)
    assert empty.tick([Delta((g, one), 1, (1,))], 0) == []
    assert empty.operator.counters()["recomputations"] == 0
    offset = Harness(_topk.TopK, "ORDER BY ?x", 1, 5, dictionary)
    assert offset.tick([Delta((g, one), 1, (1,))], 0) == [], "one row, all before the offset"
    assert [d.sign for d in offset.tick([Delta((g, one), 1, (2,))], 1)] == [1]
    assert [d.sign for d in offset.tick([Delta((g, one), -1, (1,))], 2)] == [-1], "below m + k rows"


def test_order_lists_first_occurrences_of_entering_rows_in_order():
    """The emission order of a plain ORDER BY over a column the query does not project: a projected
    row that enters twice is listed at the positions of its first occurrences, as SPARQL lists it."""
    dictionary = TermDictionary()
    order = Order(("g", "x"), conditions("ORDER BY ?x"), ("g",), TermDecoder(dictionary))
    a, b = dictionary.encode(GROUPS[0]), dictionary.encode(GROUPS[1])
    one, two, three = (dictionary.encode(integer(v)) for v in (1, 2, 3))
    order.on_batch(0, [Delta((a, three), 1, (1,)), Delta((b, two), 1, (2,)), Delta((a, one), 1, (3,))])
    assert order.arrange([((a,), 2), ((b,), 1)]) == [((a,), 1), ((b,), 1), ((a,), 1)]
    assert order.rows() == [(a,), (b,), (a,)]
    order.on_batch(0, [Delta((a, one), -1, (3,)), Delta((b, two), -1, (2,))])
    assert order.arrange([((a,), -1), ((b,), -1)]) == [((a,), -1), ((b,), -1)], "in their previous order"
    assert order.rows() == [(a,)]
