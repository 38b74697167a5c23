"""The window buffer and the adaptive multiway join: compiled and pure-Python twins against each
other and against a naive nested-loop join recomputed after every tick."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_scenarios import Recorder, drive_join, join_scenarios, load_regressions, replay_window_ticks

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators import _join
from cqels_endpoint.operators.base import Delta, Sink
from cqels_endpoint.operators.reference import join as reference
from cqels_endpoint.runtime.encoding import TermDictionary

IMPLEMENTATIONS = [pytest.param(_join, id="compiled"), pytest.param(reference, id="pure")]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("scenario", load_regressions("operators_join.json"), ids=lambda s: s["note"])
def test_join_regressions(implementation, scenario):
    recorder, join, expiry_probes = drive_join(implementation.MultiwayJoin, scenario)
    assert expiry_probes == 0
    assert not recorder.live
    assert join.counters()["index_sizes"] == [0] * join.arity


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@SETTINGS
@given(scenario=join_scenarios())
def test_join_equals_naive_join_after_every_tick(implementation, scenario):
    recorder, join, expiry_probes = drive_join(implementation.MultiwayJoin, scenario)
    assert expiry_probes == 0, "expiry must invalidate through lineage, never probe"
    assert not recorder.live
    assert join.counters()["live_outputs"] == 0


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@SETTINGS
@given(scenario=join_scenarios(unbound=True, max_inputs=3))
def test_join_with_unbound_values_equals_naive_join(implementation, scenario):
    drive_join(implementation.MultiwayJoin, scenario)


@SETTINGS
@given(scenario=st.one_of(join_scenarios(), join_scenarios(unbound=True, max_inputs=3)))
def test_compiled_join_matches_its_twin_delta_for_delta(scenario):
    compiled, compiled_join, _ = drive_join(_join.MultiwayJoin, scenario, expire_all=False)
    pure, pure_join, _ = drive_join(reference.MultiwayJoin, scenario, expire_all=False)
    assert compiled.deltas == pure.deltas
    assert compiled_join.counters() == pure_join.counters()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_probe_order_follows_the_smallest_bucket(implementation):
    # Input 1 holds many rows with a=0, input 2 one: a row arriving on 0 probes 2 first, then 1.
    join = implementation.MultiwayJoin([("a",), ("a", "b"), ("a", "c")])
    sink = Sink(join.schema)
    join.connect(sink)
    join.on_batch(1, [Delta((0, b), 1, (10 + b,)) for b in range(5)])
    join.on_batch(2, [Delta((0, 7), 1, (20,))])
    join.on_batch(0, [Delta((0,), 1, (1,))])
    orders = join.counters()["probe_orders"]
    assert orders["0>2>1"] == 1
    # An arrival whose cheapest input is empty stops at once: pruned, nothing probed.
    probes = join.counters()["probes"]
    join.on_batch(0, [Delta((9,), 1, (2,))])
    assert join.counters()["probes"] == probes
    assert join.counters()["pruned"] >= 1
    for _ in range(3):
        join.on_punctuation(0)
    assert sorted(sink.rows()) == [(0, b, 7) for b in range(5)]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_join_punctuation_is_a_barrier_over_its_inputs(implementation):
    join = implementation.MultiwayJoin([("a",), ("a",)])
    recorder = Recorder(join.schema)
    join.connect(recorder)
    join.on_punctuation(5)
    assert recorder.punctuations == []
    join.on_punctuation(5)
    assert recorder.punctuations == [5]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_join_rejects_a_lineage_that_never_entered(implementation):
    join = implementation.MultiwayJoin([("a",), ("a",)], label="join J1")
    with pytest.raises(OperatorError, match="join J1"):
        join.on_batch(0, [Delta((1,), -1, (3,))])


# ---- window buffer ------------------------------------------------------------------------------

PATTERNS = [("s", "p", "o"), ("s", None, "o"), ("x", None, "x"), (None, None, "o"), (None, None, None)]


@st.composite
def buffer_scenarios(draw):
    pattern = draw(st.sampled_from(PATTERNS))
    triple = st.tuples(*[st.sampled_from([1, 2, 3])] * 3)
    operation = st.one_of(triple.map(lambda t: ("+", t)), st.integers(0, 20).map(lambda k: ("-", k)))
    return pattern, draw(st.lists(st.lists(operation, max_size=8), min_size=1, max_size=6))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@SETTINGS
@given(scenario=buffer_scenarios())
def test_buffer_holds_exactly_the_set_of_matching_live_triples(implementation, scenario):
    # A window is a set: copies of one triple make one row, which leaves with the last copy.
    pattern, ticks = scenario
    released = []
    buffer = implementation.WindowBuffer(pattern, on_release=released.append)
    recorder = Recorder(buffer.schema)
    buffer.connect(recorder)
    live: dict[int, tuple] = {}  # every inserted copy, matching or not: expiring a non-kept one is a no-op
    seq = 0
    gone = [0]  # per tick: copies whose references go back (not kept, another copy, the last copy left)

    def matches(triple):
        return pattern != ("x", None, "x") or triple[0] == triple[2]

    for tau, tick in enumerate(ticks):
        for op, value in tick:
            if op == "+":
                seq += 1
                gone[-1] += not matches(value) or value in live.values()
                live[seq] = value
                buffer.insert(seq, value)
            elif live:
                expired = sorted(live)[value % len(live)]
                triple = live.pop(expired)
                gone[-1] += matches(triple) and triple not in live.values()
                buffer.expire(expired)
        buffer.on_punctuation(tau)
        expected = Counter()
        for s, p, o in set(live.values()):
            if matches((s, p, o)):
                values = {"s": s, "p": p, "o": o, "x": s}
                expected[tuple(values[name] for name in buffer.schema)] += 1
        assert recorder.relation() == expected
        assert len(buffer) == sum(expected.values())
        assert len(released) == sum(gone[:-1])
        gone.append(0)
    buffer.close()
    assert len(released) == seq


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_triple_is_named_by_its_first_copy_while_any_copy_stays(implementation):
    buffer = implementation.WindowBuffer(("s", "p", "o"))
    recorder = Recorder(buffer.schema)
    buffer.connect(recorder)
    buffer.insert(1, (7, 8, 9))
    buffer.insert(2, (7, 8, 9))
    buffer.on_punctuation(0)
    buffer.expire(1)
    buffer.insert(3, (7, 8, 9))
    buffer.on_punctuation(1)
    buffer.expire(2)
    buffer.expire(3)
    buffer.on_punctuation(2)
    assert recorder.deltas == [Delta((7, 8, 9), 1, (1,)), Delta((7, 8, 9), -1, (1,))]
    buffer.insert(4, (7, 8, 9))
    with pytest.raises(OperatorError, match="copy 4 entered the window twice"):
        buffer.insert(4, (1, 2, 3))


@SETTINGS
@given(scenario=buffer_scenarios())
def test_compiled_buffer_matches_its_twin(scenario):
    pattern, ticks = scenario
    outputs = []
    for implementation in (_join, reference):
        released = []
        buffer = implementation.WindowBuffer(pattern, on_release=released.append)
        recorder = replay_window_ticks(buffer, ticks)
        outputs.append((recorder.deltas, released, buffer.counters(), buffer.rejected))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_buffer_releases_terms_only_after_the_punctuation(implementation):
    dictionary = TermDictionary()
    ids = tuple(dictionary.encode(ox.NamedNode(f"http://ex.org/{name}")) for name in "spo")
    buffer = implementation.WindowBuffer(("s", "p", "o"), on_release=dictionary.decref_many)
    decoded_in_tick = []

    class Decoder(Recorder):
        def on_batch(self, port, deltas):
            super().on_batch(port, deltas)
            decoded_in_tick.extend(dictionary.decode_row(delta.row) for delta in deltas)

    buffer.connect(Decoder(buffer.schema))
    buffer.insert(1, ids)
    buffer.on_punctuation(0)
    buffer.expire(1)
    buffer.on_punctuation(1)
    assert len(decoded_in_tick) == 2
    assert dictionary.decode_row(ids)  # the -1 row of tick 1 can still be decoded after it
    buffer.on_punctuation(2)
    assert len(dictionary) == 0
    assert buffer.counters() == {"inputs": 1, "outputs": 2, "size": 0, "expired": 1}
