"""The compiled window states (``runtime/_windows.pyx``) and their twins (``runtime/windows.py``)
answer every call alike, on random sequences of inserts and expiries."""

from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.query.windows import AllWindow, NowWindow, RangeWindow, TriplesWindow
from cqels_endpoint.runtime import _windows, windows

configs = st.one_of(
    st.builds(RangeWindow, st.integers(1, 8)),
    st.builds(RangeWindow, st.integers(1, 8), st.integers(1, 4)),
    st.just(NowWindow()),
    st.just(AllWindow()),
    st.builds(TriplesWindow, st.integers(1, 4)),
)
# (call, clock step): the clock only moves forward, as the engine drives it.
calls = st.lists(
    st.tuples(st.sampled_from(["insert", "insert", "expire", "admits"]), st.sampled_from([0, 0, 1, 2, 5])),
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
        case TriplesWindow(count):
            return module.TriplesState(count)


def test_build_window_makes_the_selected_states():
    compiled = not windows.use_pure_python()
    assert (type(windows.build_window(RangeWindow(3))).__module__ == _windows.__name__) is compiled


@settings(max_examples=400)
@given(configs, calls)
def test_compiled_states_answer_like_their_twins(config, steps):
    reference, compiled = make(windows, config), make(_windows, config)
    now = 0
    for seq, (call, step) in enumerate(steps):
        now += step
        if call == "insert":
            assert compiled.insert(now, seq) == reference.insert(now, seq)
        elif call == "expire":
            assert compiled.expire(now) == reference.expire(now)
        else:
            assert compiled.admits(now - step, now) == reference.admits(now - step, now)
        assert compiled.contents() == reference.contents()
        assert compiled.times() == reference.times()
        assert len(compiled) == len(reference)
