"""DISTINCT, UNION and OPTIONAL operators against a naive recomputation after every tick.

Hypothesis draws ticks of inserts and expiries (skewed values, unbound columns where the operator
must treat them as compatible); after each tick the recorded output relation must equal the
operator's definition recomputed from the live input rows. ``Recorder`` checks the lineage
contract on the way (a -1 retracts a live lineage with the same row, no lineage emitted twice).
"""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_scenarios import SKEWED_VALUES, Recorder, compatible_merge

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.operators import _distinct, _optional, _union
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.reference import distinct as reference_distinct
from cqels_endpoint.operators.reference import optional as reference_optional
from cqels_endpoint.operators.reference import union as reference_union
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.runtime.expressions import compile_filter

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def ticks(draw, ports: int, widths: tuple[int, ...], unbound: bool) -> list[list[tuple]]:
    """Per tick, ``("+", port, row)`` inserts and ``("-", k)`` expiries of the k-th live leaf."""
    value = st.one_of(SKEWED_VALUES, st.none()) if unbound else SKEWED_VALUES
    drawn = []
    for _ in range(draw(st.integers(1, 8))):
        operations = []
        for _ in range(draw(st.integers(0, 6))):
            if draw(st.booleans()):
                port = draw(st.integers(0, ports - 1))
                operations.append(("+", port, tuple(draw(value) for _ in range(widths[port]))))
            else:
                operations.append(("-", draw(st.integers(0, 30))))
        drawn.append(operations)
    return drawn


def replay(operator, recorder: Recorder, drawn: list[list[tuple]], ports: int, after_tick) -> None:
    """Feeds the ticks (one batch per operation, so deltas interleave across ports), punctuating
    every port at the end of each tick, and calls ``after_tick(live)`` with the live leaves."""
    operator.connect(recorder)
    live: dict[int, tuple[int, tuple]] = {}  # leaf id → (port, row)
    next_leaf = 1
    for tau, operations in enumerate(drawn):
        for operation in operations:
            if operation[0] == "+":
                _, port, row = operation
                live[next_leaf] = (port, row)
                operator.on_batch(port, [Delta(row, 1, (next_leaf,))])
                next_leaf += 1
            elif live:
                leaf = sorted(live)[operation[1] % len(live)]
                port, row = live.pop(leaf)
                operator.on_batch(port, [Delta(row, -1, (leaf,))])
        for _ in range(ports):
            operator.on_punctuation(tau)
        assert recorder.punctuations[-1] == tau and len(recorder.punctuations) == tau + 1
        after_tick(live)
    # Expiring everything leaves nothing behind.
    for leaf in sorted(live):
        port, row = live.pop(leaf)
        operator.on_batch(port, [Delta(row, -1, (leaf,))])
    for _ in range(ports):
        operator.on_punctuation(len(drawn))
    assert recorder.relation() == Counter()


# ---- DISTINCT ---------------------------------------------------------------------------------


@SETTINGS
@given(drawn=ticks(1, (2,), unbound=True))
def test_distinct_keeps_one_copy_of_each_live_row(drawn):
    operator = _distinct.Distinct(("a", "b"))
    recorder = Recorder(operator.schema)
    emitted_before = [0]

    def after_tick(live):
        expected = Counter(set(row for _port, row in live.values()))
        assert recorder.relation() == expected
        this_tick = recorder.deltas[emitted_before[0] :]
        emitted_before[0] = len(recorder.deltas)
        # One +1 or one -1 per changed row and tick, never both.
        assert len({delta.row for delta in this_tick}) == len(this_tick)

    replay(operator, recorder, drawn, 1, after_tick)


def test_distinct_emits_only_at_the_end_of_the_tick_and_not_for_a_row_that_came_and_went():
    operator = _distinct.Distinct(("a",))
    recorder = Recorder(operator.schema)
    operator.connect(recorder)
    operator.on_batch(0, [Delta((1,), 1, (1,)), Delta((1,), 1, (2,)), Delta((2,), 1, (3,))])
    assert recorder.deltas == []
    operator.on_batch(0, [Delta((2,), -1, (3,))])
    operator.on_punctuation(0)
    assert recorder.deltas == [Delta((1,), 1, (0,))]
    operator.on_batch(0, [Delta((1,), -1, (1,))])
    operator.on_punctuation(1)
    assert len(recorder.deltas) == 1  # one copy of (1,) is still live
    operator.on_batch(0, [Delta((1,), -1, (2,))])
    operator.on_punctuation(2)
    assert recorder.deltas[-1] == Delta((1,), -1, (0,))
    operator.on_batch(0, [Delta((1,), 1, (4,))])
    operator.on_punctuation(3)
    assert recorder.deltas[-1] == Delta((1,), 1, (1,))  # a new lineage for the re-added row
    assert operator.counters()["distinct_rows"] == 1
    assert operator.counters()["duplicates"] == 0


def test_distinct_refuses_the_id_that_stands_for_unbound():
    # -1 is no term id (runtime/encoding.py never assigns inline type 31): the compiled state uses it for None.
    operator = _distinct.Distinct(("a",))
    with pytest.raises(ValueError, match="reserved"):
        operator.on_batch(0, [Delta((-1,), 1, (1,))])


# ---- UNION ------------------------------------------------------------------------------------

UNION_SCHEMAS = (("a", "b"), ("b", "c"))


@SETTINGS
@given(drawn=ticks(2, (2, 2), unbound=True))
def test_union_is_the_aligned_bag_union(drawn):
    operator = _union.Union(*UNION_SCHEMAS)
    assert operator.schema == ("a", "b", "c")
    recorder = Recorder(operator.schema)

    def after_tick(live):
        expected = Counter()
        for port, row in live.values():
            expected[compatible_merge(operator.schema, [(UNION_SCHEMAS[port], row)])] += 1
        assert recorder.relation() == expected

    replay(operator, recorder, drawn, 2, after_tick)


def test_union_lineages_stay_unique_across_branches():
    operator = _union.Union(("a",), ("a",))
    recorder = Recorder(operator.schema)
    operator.connect(recorder)
    operator.on_batch(0, [Delta((5,), 1, (7,))])
    operator.on_batch(1, [Delta((5,), 1, (7,))])  # the same leaf id in the other branch
    assert recorder.relation() == Counter({(5,): 2})
    operator.on_batch(1, [Delta((5,), -1, (7,))])
    assert recorder.live == {(0, 7): (5,)}


# ---- OPTIONAL ---------------------------------------------------------------------------------

LEFT, RIGHT = ("a", "b"), ("b", "c")
FILTERS = ("", "?c > ?a", "!BOUND(?a) || ?c != 1", "?b = 0")


def filter_exprs(text: str) -> tuple:
    if not text:
        return ()
    algebra = to_algebra(parse_query(f"SELECT * WHERE {{ ?a ?b ?c FILTER ({text}) }}"))
    return next(node.exprs for node in walk(algebra.pattern) if isinstance(node, n.Filter))


def naive_left_join(schema, live, passes, decoder) -> Counter:
    """§18.5: Filter(expr, Join(left, right)) ∪ Diff(left, right, expr), recomputed from scratch."""
    positions = {name: i for i, name in enumerate(schema)}
    lefts = [row for port, row in live.values() if port == 0]
    rights = [row for port, row in live.values() if port == 1]
    expected = Counter()
    for left in lefts:
        matched = False
        for right in rights:
            merged = compatible_merge(schema, [(LEFT, left), (RIGHT, right)])
            if merged is not None and (passes is None or passes(DecodedRow(positions, merged, decoder))):
                expected[merged] += 1
                matched = True
        if not matched:
            expected[compatible_merge(schema, [(LEFT, left)])] += 1
    return expected


@SETTINGS
@given(drawn=ticks(2, (2, 2), unbound=True), condition=st.sampled_from(FILTERS))
def test_optional_equals_the_left_join_recomputed(drawn, condition):
    dictionary = TermDictionary()
    # Row values are small ints; encode them as integer literals so that the filter reads numbers.
    integer = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
    ids = {value: dictionary.encode(ox.Literal(str(value), datatype=integer)) for value in range(5)}
    encoded = [
        [
            (op[0], op[1], tuple(None if v is None else ids[v] for v in op[2])) if op[0] == "+" else op
            for op in operations
        ]
        for operations in drawn
    ]
    decoder = TermDecoder(dictionary)
    exprs = filter_exprs(condition)
    operator = _optional.OptionalJoin(LEFT, RIGHT, exprs, decoder)
    assert operator.schema == ("a", "b", "c")
    recorder = Recorder(operator.schema)
    passes = compile_filter(exprs) if exprs else None

    def after_tick(live):
        assert recorder.relation() == naive_left_join(operator.schema, live, passes, decoder)

    replay(operator, recorder, encoded, 2, after_tick)


def test_optional_retracts_and_readds_the_padded_row():
    operator = _optional.OptionalJoin(("a",), ("a", "b"))
    recorder = Recorder(operator.schema)
    operator.connect(recorder)
    operator.on_batch(0, [Delta((1,), 1, (10,))])
    assert recorder.deltas == [Delta((1, None), 1, (0, 10))]
    operator.on_batch(1, [Delta((1, 2), 1, (20,)), Delta((1, 3), 1, (21,))])
    assert recorder.deltas[1:] == [
        Delta((1, None), -1, (0, 10)),
        Delta((1, 2), 1, (1, 10, 20)),
        Delta((1, 3), 1, (1, 10, 21)),
    ]
    operator.on_batch(1, [Delta((1, 2), -1, (20,))])
    assert recorder.deltas[-1] == Delta((1, 2), -1, (1, 10, 20))
    operator.on_batch(1, [Delta((1, 3), -1, (21,))])
    assert recorder.deltas[-2:] == [Delta((1, 3), -1, (1, 10, 21)), Delta((1, None), 1, (0, 10))]
    assert operator.counters()["unmatched_left"] == 1


# ---- compiled vs twin ---------------------------------------------------------------------------

TWINS = {
    "distinct": (_distinct.Distinct, reference_distinct.Distinct, (("a", "b"),), (2,)),
    "union": (_union.Union, reference_union.Union, UNION_SCHEMAS, (2, 2)),
    "optional": (_optional.OptionalJoin, reference_optional.OptionalJoin, (LEFT, RIGHT), (2, 2)),
}


@pytest.mark.parametrize("name", list(TWINS))
@SETTINGS
@given(data=st.data())
def test_compiled_operator_matches_its_twin_delta_for_delta(name, data):
    compiled_class, twin_class, args, widths = TWINS[name]
    drawn = data.draw(ticks(len(widths), widths, unbound=True))
    runs = []
    for operator_class in (compiled_class, twin_class):
        operator = operator_class(*args)
        recorder = Recorder(operator.schema)
        replay(operator, recorder, drawn, len(widths), lambda live: None)
        runs.append((recorder.deltas, operator.counters()))
    assert runs[0] == runs[1]
