"""The leaf of a ``STREAM ?g`` triple pattern (``operators/stream_variable.py``): one window buffer
per stream, the stream's id appended to its rows. On compiled buffers and on their twins, against
the set of live (triple, stream) pairs after every tick, and against each other delta for delta."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_scenarios import Recorder, replay_window_ticks

from cqels_endpoint.operators import _join
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.reference import join as reference
from cqels_endpoint.operators.stream_variable import StreamWindows
from cqels_endpoint.runtime.encoding import TermDictionary

IMPLEMENTATIONS = [pytest.param(_join, id="compiled"), pytest.param(reference, id="pure")]
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Triple positions; "g" is the stream's variable, which a position may name too.
PATTERNS = [("s", "p", "o"), ("g", None, "o"), ("s", None, "g"), (None, None, None), ("x", None, "x")]


def windows(implementation, pattern, on_release=None) -> StreamWindows:
    return StreamWindows(
        pattern, "g", lambda positions: implementation.WindowBuffer(positions, on_release=on_release), on_release=on_release
    )


@st.composite
def scenarios(draw):
    pattern = draw(st.sampled_from(PATTERNS))
    quad = st.tuples(*[st.sampled_from([1, 2, 3])] * 4)
    operation = st.one_of(quad.map(lambda q: ("+", q)), st.integers(0, 20).map(lambda k: ("-", k)))
    return pattern, draw(st.lists(st.lists(operation, max_size=8), min_size=1, max_size=6))


def bound(pattern, quad) -> dict[str, int] | None:
    """The values a quad binds to the pattern's variables and ``g``, None when it does not match
    (a repeated variable, or ``g`` at a triple position, must get one value)."""
    *triple, stream = quad
    values = {"g": stream}
    for name, value in zip(pattern, triple):
        if name is not None and values.setdefault(name, value) != value:
            return None
    return values


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@SETTINGS
@given(scenario=scenarios())
def test_rows_are_the_set_of_live_triples_of_each_stream(implementation, scenario):
    pattern, ticks = scenario
    source = windows(implementation, pattern)
    assert source.schema[-1] == "g"
    recorder = Recorder(source.schema)
    source.connect(recorder)
    live: dict[int, tuple] = {}
    seq = 0
    for tau, tick in enumerate(ticks):
        for op, value in tick:
            if op == "+":
                seq += 1
                live[seq] = value
                source.insert(seq, value)
            elif live:
                expired = sorted(live)[value % len(live)]
                del live[expired]
                source.expire(expired)
        source.on_punctuation(tau)
        matched = [bound(pattern, quad) for quad in set(live.values())]
        assert recorder.relation() == Counter(tuple(values[name] for name in source.schema) for values in matched if values)


@SETTINGS
@given(scenario=scenarios())
def test_compiled_buffers_match_their_twins_delta_for_delta(scenario):
    pattern, ticks = scenario
    outputs = []
    for implementation in (_join, reference):
        released: list[tuple] = []
        source = windows(implementation, pattern, released.append)
        recorder = replay_window_ticks(source, ticks)
        outputs.append((recorder.deltas, released, source.counters(), source.rejected))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_same_triple_on_two_streams_is_two_rows(implementation):
    source = windows(implementation, ("s", "p", "o"))
    recorder = Recorder(source.schema)
    source.connect(recorder)
    source.insert(1, (7, 8, 9, 100))
    source.insert(2, (7, 8, 9, 200))
    source.insert(3, (7, 8, 9, 100))  # a copy: the window is a set
    source.on_punctuation(0)
    source.expire(1)
    source.expire(2)
    source.on_punctuation(1)
    assert recorder.deltas == [
        Delta((7, 8, 9, 100), 1, (1,)), Delta((7, 8, 9, 200), 1, (2,)), Delta((7, 8, 9, 200), -1, (2,)),
    ]
    assert source.counters() == {"inputs": 3, "outputs": 3, "streams": 2, "size": 1, "expired": 1}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_every_reference_goes_back(implementation):
    dictionary = TermDictionary()
    s, p, o, g, h = (dictionary.encode(ox.NamedNode(f"http://ex.org/{name}")) for name in "spogh")
    source = windows(implementation, ("g", "p", "o"), on_release=dictionary.decref_many)
    source.connect(Recorder(source.schema))
    # Two copies of one triple of stream g naming g, and a triple of stream h not naming h.
    for seq, ids in enumerate([(g, p, o, g), (g, p, o, g), (s, p, o, h)], 1):
        dictionary.incref_many(ids)  # the engine's evaluator takes a reference per id of a copy
        source.insert(seq, ids)
    source.on_punctuation(0)
    source.expire(1)
    source.on_punctuation(1)
    source.on_punctuation(2)
    # Beside encode's: the kept triple's three, and g's for its stream's buffer.
    assert [dictionary.refcount(term) for term in (s, p, o, g, h)] == [1, 2, 2, 3, 1]
    source.close()
    assert [dictionary.refcount(term) for term in (s, p, o, g, h)] == [1] * 5
