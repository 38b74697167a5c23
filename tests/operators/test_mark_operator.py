"""The compiled EXISTS mark (``operators/_mark.pyx``) against its reference twin and the definition.

The ticks of ``test_negation_operator`` (left and right rows entering, leaving and, on the left,
coming back under their lineage with another row) drive the compiled mark and its twin, for EXISTS
and NOT EXISTS, with and without an inner condition over the merged row. After every tick both
output relations must be every live left row with the truth of its (NOT) EXISTS appended, as the
negation's definition gives it; each tick emits at most one delta per left lineage and sign, and
the compiled operator and the twin emit the same deltas.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_negation_operator import LEFT, RIGHT_SCHEMAS, Recorder, condition_over, expected, relation, replay_ticks, ticks

from cqels_endpoint.operators._mark import Mark
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.reference.mark import Mark as ReferenceMark
from cqels_endpoint.operators.shared.mark import FALSE_ID, TRUE_ID
from cqels_endpoint.plan.nodes import NegationKind, shared_columns

MARKED = (*LEFT, ".exists1")


def marked(kind, left_rows, right_rows, right_schema, condition):
    """Every live left row with its mark: whether some right row matches it, negated for NOT EXISTS."""
    matching = expected(NegationKind.EXISTS, left_rows, right_rows, right_schema, condition)
    out = Counter()
    for lineage, row in left_rows.items():
        holds = ((row, lineage) in matching) == (kind is NegationKind.EXISTS)
        out[((*row, TRUE_ID if holds else FALSE_ID), lineage)] += 1
    return out


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from((NegationKind.EXISTS, NegationKind.NOT_EXISTS)),
    right_schema=st.sampled_from(RIGHT_SCHEMAS),
    with_condition=st.booleans(),
    hashed=st.sets(st.sampled_from(LEFT)),
    history=ticks(),
)
def test_mark_matches_twin_and_definition(kind, right_schema, with_condition, hashed, history):
    condition = condition_over(LEFT, right_schema) if with_condition else None
    keys = tuple(c for c in shared_columns(LEFT, right_schema) if c in hashed)
    operator = Mark(LEFT, right_schema, kind, condition, keys=keys, column=".exists1")
    twin = ReferenceMark(LEFT, right_schema, kind, condition, keys=keys, column=".exists1")
    assert operator.schema == twin.schema == MARKED
    sinks = (Recorder(MARKED), Recorder(MARKED))
    operator.connect(sinks[0])
    twin.connect(sinks[1])
    for tau, live in replay_ticks(history, keys, right_schema, (operator, twin)):
        want = marked(kind, live[0], live[1], right_schema, condition)
        assert relation(sinks[0].log) == want, f"tick {tau}"
        assert relation(sinks[1].log) == want, f"tick {tau} (twin)"
        signed = [(d.lineage, d.sign) for d in sinks[0].tick]
        assert len(signed) == len(set(signed))
        assert Counter(sinks[0].tick) == Counter(sinks[1].tick)
        sinks[0].tick.clear()
        sinks[1].tick.clear()


@pytest.mark.parametrize("mark", [Mark, ReferenceMark])
def test_a_right_row_flips_the_mark_of_the_rows_it_matches(mark):
    operator = mark(("a",), ("a", "c"), "not exists", column=".exists1")
    sink = Recorder(operator.schema)
    operator.connect(sink)
    operator.on_batch(0, [Delta((1,), 1, (1,)), Delta((2,), 1, (2,))])
    operator.on_punctuation(0)
    operator.on_punctuation(0)
    assert sorted(sink.tick) == [Delta((1, TRUE_ID), 1, (1,)), Delta((2, TRUE_ID), 1, (2,))]
    sink.tick.clear()
    operator.on_batch(1, [Delta((1, 9), 1, (3,))])
    operator.on_punctuation(1)
    operator.on_punctuation(1)
    assert sink.tick == [Delta((1, TRUE_ID), -1, (1,)), Delta((1, FALSE_ID), 1, (1,))]
    sink.tick.clear()
    # A second match changes nothing the output shows.
    operator.on_batch(1, [Delta((1, 8), 1, (4,))])
    operator.on_punctuation(2)
    operator.on_punctuation(2)
    assert sink.tick == []


@pytest.mark.parametrize("mark", [Mark, ReferenceMark])
def test_minus_has_no_mark(mark):
    with pytest.raises(ValueError, match="MINUS has no value to mark"):
        mark(("a",), ("a",), "minus", column=".exists1")
