"""The compiled window states (``runtime/_windows.pyx``) and their twins (``runtime/windows.py``)
answer every call alike, on random sequences of inserts and expiries; a stream-wide count window
(CQELS-QL 2.0's ``[TRIPLES n]``) holds what its definition says, on random events."""

from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.query.windows import AllWindow, NowWindow, RangeWindow, TriplesWindow, stream_wide
from cqels_endpoint.runtime import _windows, windows

configs = st.one_of(
    st.builds(RangeWindow, st.integers(1, 8)),
    st.builds(RangeWindow, st.integers(1, 8), st.integers(1, 4)),
    st.just(NowWindow()),
    st.just(AllWindow()),
    st.builds(TriplesWindow, st.integers(1, 4)),
    st.builds(TriplesWindow, st.integers(1, 4), st.just(True)),
)
# (call, clock step, index or statements): the clock only moves forward, as the engine drives it.
calls = st.lists(
    st.tuples(
        st.sampled_from(["insert", "insert", "expire", "admits", "statements"]),
        st.sampled_from([0, 0, 1, 2, 5]),
        st.integers(0, 5),
    ),
    max_size=40,
)


def make(module, config):
    """The state of ``config`` from ``module`` (the twins or the compiled states)."""
    match config:
        case RangeWindow(range_ms, None):
            return module.EagerRangeState(range_ms)
        case RangeWindow(range_ms, slide_ms):
            return module.PeriodicRangeState(range_ms, slide_ms)
        case NowWindow():
            return module.NowState()
        case AllWindow():
            return module.AllState()
        case TriplesWindow(count, True):
            return module.StreamTriplesState(count)
        case TriplesWindow(count):
            return module.TriplesState(count)


def test_build_window_makes_the_selected_states():
    compiled = not windows.use_pure_python()
    assert (type(windows.build_window(RangeWindow(3))).__module__ == _windows.__name__) is compiled
    assert type(windows.build_window(TriplesWindow(3, stream_wide=True))).__name__ == "StreamTriplesState"
    assert type(windows.build_window(TriplesWindow(3))).__name__ == "TriplesState"


@settings(max_examples=400)
@given(configs, calls)
def test_compiled_states_answer_like_their_twins(config, steps):
    reference, compiled = make(windows, config), make(_windows, config)
    now = 0
    for seq, (call, step, number) in enumerate(steps):
        now += step
        if call == "insert":
            assert compiled.insert(now, seq, number) == reference.insert(now, seq, number)
        elif call == "expire":
            assert compiled.expire(now) == reference.expire(now)
        elif call == "statements":
            if stream_wide(config):  # only a stream-wide window counts statements
                assert compiled.statements(number) == reference.statements(number)
                assert compiled.seen == reference.seen
        else:
            assert compiled.admits(now - step, now) == reference.admits(now - step, now)
        assert compiled.contents() == reference.contents()
        assert compiled.times() == reference.times()
        assert len(compiled) == len(reference)
        assert compiled.expiry() == reference.expiry()


@settings(max_examples=400)
@given(configs, calls)
def test_expiry_is_the_first_time_an_expiry_removes_something(config, steps):
    """``expiry()`` (the engine's timers, engine.fanout): ``expire(τ)`` removes nothing before it
    and something at it; None when no time would."""
    for module in (windows, _windows):
        state, now = make(module, config), 0
        for seq, (call, step, number) in enumerate(steps):
            now += step
            if call in ("insert", "statements"):
                state.insert(now, seq, number)
            due = state.expiry()
            probe = make(module, config)
            for t, s in zip(state.times(), state.contents(), strict=True):
                probe.insert(t, s)
            if due is None:
                assert probe.expire(now + 1000) == []
            else:
                assert probe.expire(due - 1) == [] and probe.expire(due) != []


# An event: its number of statements and the indexes of those that match the window's pattern.
events = st.lists(
    st.integers(0, 5).flatmap(lambda k: st.tuples(st.just(k), st.sets(st.integers(0, k - 1)) if k else st.just(set()))),
    max_size=20,
)


@settings(max_examples=300)
@given(st.integers(1, 6), events, st.sampled_from([windows, _windows]))
def test_a_stream_wide_count_window_holds_the_matches_among_the_last_n_statements(count, drawn, module):
    """§3.1 of CQELS-QL 2.0: ``[TRIPLES n]`` is "the most recent N statements": after each event,
    the state holds the matching statements whose ordinal in the stream is among the last n,
    whatever the others match, never more than n; each leaves once."""
    state = module.StreamTriplesState(count)
    ordinal, seq, matching, gone = 0, 0, {}, []
    for k, matched in drawn:
        gone += state.statements(k)  # as the engine drives it: the event's count, then its matches
        for index in sorted(matched):
            gone += state.insert(ordinal, seq, index)
            matching[seq] = ordinal + index
            seq += 1
        ordinal += k
        held = [s for s, at in matching.items() if at >= ordinal - count]
        assert state.contents() == held and len(held) <= count
        assert sorted(gone + held) == list(matching) and len(set(gone)) == len(gone)
