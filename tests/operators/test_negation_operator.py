"""The compiled negation operator (``operators/_negation.pyx``) against its reference twin and a naive
recomputation.

Hypothesis draws ticks of inserts and expiries on both inputs (left rows and right rows entering
and leaving, several per tick, some leaving in the tick they entered), for NOT EXISTS, EXISTS and
MINUS, with and without an inner condition over the merged row, and with right schemas sharing
one, two or no columns. After every tick the incremental operator's output relation must equal
its twin's and the relation computed directly from the definition; each tick emits at most one
delta per left row, and the -1 deltas carry the row and lineage of the +1 they cancel.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators._negation import Negation
from cqels_endpoint.operators.base import Delta, Sink
from cqels_endpoint.operators.reference.negation import Negation as ReferenceNegation
from cqels_endpoint.operators.shared.schemas import union_schema
from cqels_endpoint.plan.nodes import NegationKind, shared_columns

LEFT = ("a", "b")
RIGHT_SCHEMAS = (("b", "c"), ("a", "b"), ("c",), ("c", "b", "a"))
VALUES = st.integers(0, 3)
MAYBE = st.one_of(st.none(), VALUES)


def condition_over(left, right):
    """``?c > ?a`` when both exist in the merged row (a correlated inner FILTER), else None."""
    merged = union_schema(left, right)
    if "c" not in merged:
        return None
    a, c = merged.index("a"), merged.index("c")
    # An unbound operand is an expression error: the FILTER is false.
    return lambda row: row[c] is not None and row[a] is not None and row[c] > row[a]


def expected(kind, left_rows, right_rows, right_schema, condition):
    """The operator's output relation straight from the definition (SPARQL 1.1 §18.5, §18.6):
    compatible rows (unbound agrees with anything); MINUS also needs a common bound column."""
    shared = shared_columns(LEFT, right_schema)
    extra = [i for i, c in enumerate(right_schema) if c not in LEFT]
    kept = Counter()
    for lineage, row in left_rows.items():
        def matches(other, row=row):
            pairs = [(row[LEFT.index(c)], other[right_schema.index(c)]) for c in shared]
            if any(x is not None and y is not None and x != y for x, y in pairs):
                return False
            if kind is NegationKind.MINUS:
                return any(x is not None and y is not None for x, y in pairs)
            merged = tuple(
                other[right_schema.index(c)] if value is None and c in shared else value for c, value in zip(LEFT, row)
            )
            return condition is None or condition(merged + tuple(other[i] for i in extra))

        if any(matches(other) for other in right_rows.values()) == (kind is NegationKind.EXISTS):
            kept[(row, lineage)] += 1
    return kept


def relation(sink_deltas):
    out = Counter()
    for row, sign, lineage in sink_deltas:
        out[(row, lineage)] += sign
    return +out


class Recorder(Sink):
    def __init__(self, schema):
        super().__init__(schema)
        self.log: list[Delta] = []
        self.tick: list[Delta] = []

    def on_batch(self, port, deltas):
        super().on_batch(port, deltas)
        self.log.extend(deltas)
        self.tick.extend(deltas)


@st.composite
def ticks(draw):
    """Per tick: operations ("L"|"R", +1 row | -1 pick | 0 (pick, row)) applied in order."""
    result = []
    for _ in range(draw(st.integers(1, 12))):
        ops = []
        for _ in range(draw(st.integers(0, 6))):
            side = draw(st.sampled_from("LR"))
            choice = draw(st.integers(0, 3))
            if choice in (1, 2):
                ops.append((side, 1, tuple((draw(VALUES), draw(MAYBE)) for _ in range(3))))
            elif choice == 0:
                ops.append((side, -1, draw(st.integers(0, 50))))
            else:
                # A left row replaced under its lineage, as a group does when its aggregates change.
                ops.append(("L", 0, (draw(st.integers(0, 50)), tuple((draw(VALUES), draw(MAYBE)) for _ in range(3)))))
        result.append(ops)
    return result



def replay_ticks(history, keys, right_schema, targets):
    """Feeds each tick of ``history`` to every operator of ``targets`` (left rows on port 0, right
    rows on port 1, then both punctuations) and yields ``(tau, live)`` after it, ``live`` being the
    rows of each side by lineage. Hashed ``keys`` columns are bound in every row; the others may be
    unbound (None)."""
    live = ({}, {})
    next_lineage = 0
    for tau, ops in enumerate(history):
        batches: tuple[list, list] = ([], [])
        for side, sign, payload in ops:
            port = 0 if side == "L" else 1
            schema = LEFT if port == 0 else right_schema

            def make_row(payload, schema=schema):
                return tuple(value if name in keys else maybe for name, (value, maybe) in zip(schema, payload))

            if sign > 0:
                next_lineage += 1
                row = make_row(payload)
                live[port][(next_lineage,)] = row
                batches[port].append(Delta(row, 1, (next_lineage,)))
            elif sign == 0:
                pick, new_payload = payload
                if live[port]:
                    lineage = sorted(live[port])[pick % len(live[port])]
                    row = make_row(new_payload)
                    batches[port].append(Delta(live[port][lineage], -1, lineage))
                    batches[port].append(Delta(row, 1, lineage))
                    live[port][lineage] = row
            elif live[port]:
                lineage = sorted(live[port])[payload % len(live[port])]
                batches[port].append(Delta(live[port].pop(lineage), -1, lineage))
        for target in targets:
            for port in (0, 1):
                if batches[port]:
                    target.on_batch(port, list(batches[port]))
            target.on_punctuation(tau)
            target.on_punctuation(tau)
        yield tau, live

@settings(max_examples=400, deadline=None)
@given(
    kind=st.sampled_from(NegationKind),
    right_schema=st.sampled_from(RIGHT_SCHEMAS),
    with_condition=st.booleans(),
    hashed=st.sets(st.sampled_from(LEFT)),
    history=ticks(),
)
def test_operator_matches_twin_and_definition(kind, right_schema, with_condition, hashed, history):
    condition = condition_over(LEFT, right_schema) if with_condition and kind is not NegationKind.MINUS else None
    keys = tuple(c for c in shared_columns(LEFT, right_schema) if c in hashed)
    operator = Negation(LEFT, right_schema, kind, condition, keys=keys)
    twin = ReferenceNegation(LEFT, right_schema, kind, condition, keys=keys)
    sinks = (Recorder(LEFT), Recorder(LEFT))
    operator.connect(sinks[0])
    twin.connect(sinks[1])
    for tau, live in replay_ticks(history, keys, right_schema, (operator, twin)):
        want = expected(kind, live[0], live[1], right_schema, condition)
        assert relation(sinks[0].log) == want, f"tick {tau}"
        assert relation(sinks[1].log) == want, f"tick {tau} (twin)"
        # Once per tick: at most one delta per left lineage and sign (a replaced row: -old +new),
        # and no delta that cancels within the tick.
        signed = [(d.lineage, d.sign) for d in sinks[0].tick]
        assert len(signed) == len(set(signed))
        assert Counter((d.row, d.lineage, d.sign) for d in sinks[0].tick) == Counter(
            (d.row, d.lineage, d.sign) for d in sinks[1].tick
        )
        sinks[0].tick.clear()
        sinks[1].tick.clear()


def test_right_arrival_and_expiry_flip_a_left_row_once_per_tick():
    operator = Negation(("a",), ("a", "c"), "not exists")
    sink = Recorder(("a",))
    operator.connect(sink)
    operator.on_batch(0, [Delta((1,), 1, (1,))])
    operator.on_punctuation(0)
    operator.on_punctuation(0)
    assert sink.tick == [Delta((1,), 1, (1,))]
    sink.tick.clear()
    # A right row arrives and leaves within one tick: nothing to say.
    operator.on_batch(1, [Delta((1, 9), 1, (2,)), Delta((1, 9), -1, (2,))])
    operator.on_punctuation(1)
    operator.on_punctuation(1)
    assert sink.tick == []
    operator.on_batch(1, [Delta((1, 9), 1, (3,))])
    operator.on_punctuation(2)
    operator.on_punctuation(2)
    assert sink.tick == [Delta((1,), -1, (1,))]
    assert operator.counters()["kept"] == 0


@pytest.mark.parametrize("condition", [None, lambda row: True], ids=["by key", "pairwise"])
def test_a_right_row_leaving_without_having_entered_is_an_error(condition):
    operator = Negation(("a",), ("a", "c"), "not exists", condition)
    operator.on_batch(1, [Delta((1, 2), 1, (1,))])
    with pytest.raises(OperatorError, match="without entering"):
        operator.on_batch(1, [Delta((3, 2), -1, (2,))])


@pytest.mark.parametrize("condition", [None, lambda row: True], ids=["by key", "pairwise"])
def test_lineages_of_static_mappings_come_out_as_they_went_in(condition):
    # Static caches number their mappings -1, -2, …: a leaf id is no term id, -1 included.
    operator = Negation(("a",), ("a", "c"), "not exists", condition)
    sink = Recorder(("a",))
    operator.connect(sink)
    operator.on_batch(0, [Delta((1,), 1, (-1,)), Delta((2,), 1, (-2,))])
    operator.on_punctuation(0)
    operator.on_punctuation(0)
    assert sink.tick == [Delta((1,), 1, (-1,)), Delta((2,), 1, (-2,))]
    operator.on_batch(1, [Delta((1, 3), 1, (-1,))])
    operator.on_punctuation(1)
    operator.on_punctuation(1)
    assert sink.tick[2:] == [Delta((1,), -1, (-1,))]


def test_unbound_shared_column_is_an_error():
    operator = Negation(("a",), ("a",), "minus")
    with pytest.raises(OperatorError, match="unbound"):
        operator.on_batch(0, [Delta((None,), 1, (1,))])


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown negation kind"):
        Negation(("a",), ("a",), "optional")
