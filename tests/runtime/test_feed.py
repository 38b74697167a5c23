"""The event feed: compiled (``_feed.pyx``) and twin (``feed.EventFeedPython``) make the calls the
window readers make (``runtime.sharing``, the path of a query whose windows others read), in the
same order, on random patterns, windows and events."""

import itertools
from array import array
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.query.windows import AllWindow, NowWindow, RangeWindow, TriplesWindow
from cqels_endpoint.runtime import _feed, _routing, _windows, feed, routing, windows
from cqels_endpoint.runtime.sharing import SharedWindow, SharedWindows, WindowReader

ids = st.sampled_from([1, 2, 3, -5])
configs = st.one_of(
    st.builds(RangeWindow, st.integers(1, 6)),
    st.builds(RangeWindow, st.integers(1, 6), st.integers(1, 3)),
    st.just(NowWindow()),
    st.just(AllWindow()),
    st.builds(TriplesWindow, st.integers(1, 3)),
)
TWIN_STATES = (
    windows.EagerRangeState, windows.PeriodicRangeState, windows.NowState, windows.AllState,
    windows.TriplesState, windows.StreamTriplesState,
)
COMPILED_STATES = (
    _windows.EagerRangeState, _windows.PeriodicRangeState, _windows.NowState, _windows.AllState,
    _windows.TriplesState, _windows.StreamTriplesState,
)


@st.composite
def patterns(draw) -> list[tuple[routing.PatternSpec, object]]:
    made = []
    for pattern_id in range(draw(st.integers(1, 4))):
        predicates = draw(st.none() | st.lists(ids, min_size=1, max_size=2, unique=True).map(tuple))
        constants = tuple(draw(st.lists(st.tuples(st.sampled_from([0, 2]), ids), max_size=1)))
        repeats = tuple(draw(st.lists(st.tuples(st.just(0), st.just(2)), max_size=1)))
        made.append((routing.PatternSpec(pattern_id, predicates, constants, repeats), draw(configs)))
    return made


# Events: (clock step, ids of its triples); the clock only moves forward, as the engine's does.
events = st.lists(
    st.tuples(st.sampled_from([0, 0, 1, 2, 4]), st.lists(ids, max_size=12).map(lambda v: v[: len(v) - len(v) % 3])),
    max_size=25,
)


def make_compiled(config):
    """The compiled state of ``config`` (``build_window`` gives the twins under CQELS_PURE_PYTHON=1)."""
    with patch.object(windows, "_STATES", COMPILED_STATES):
        return windows.build_window(config)


def fed(feed_class, router_class, states, specs, steps) -> list[tuple]:
    """The calls a feed makes on ``steps``: each event offered, then the windows expired at its time."""
    calls: list[tuple] = []
    made = feed_class(
        [build() for build in states],
        lambda pattern_id, triple, t, seq: calls.append(("insert", pattern_id, tuple(triple), t, seq)),
        lambda pattern_id, seq: calls.append(("expire", pattern_id, seq)),
    )
    router, seqs, now = router_class(specs), itertools.count(), 0
    for step, values in steps:
        now += step
        made.offer(router, array("q", values), now, now, seqs)
        made.expire(now)
    return calls


def read(configs_, specs, steps) -> list[tuple]:
    """The same calls made through lone window readers, as ``ContinuousQuery._on_event`` makes them
    when a window is shared."""
    calls: list[tuple] = []
    registry = SharedWindows()
    readers = [WindowReader(registry, SharedWindow(pattern_id, config)) for pattern_id, config in enumerate(configs_)]
    router, seqs, now = routing.RouterPython(specs), itertools.count(), 0
    for step, values in steps:
        now += step
        for pattern_id, triple, index in router.route(array("q", values)):
            seq, expired = readers[pattern_id].offer("s", now, now, seqs, index)
            if seq is not None:
                calls.append(("insert", pattern_id, triple, now, seq))
            calls.extend(("expire", pattern_id, gone) for gone in expired)
        for pattern_id, reader in enumerate(readers):
            calls.extend(("expire", pattern_id, gone) for gone in reader.expire(now))
    return calls


@settings(max_examples=400)
@given(patterns(), events)
def test_compiled_and_twin_feeds_make_the_readers_calls(drawn, steps):
    specs = [spec for spec, _ in drawn]
    configs_ = [config for _, config in drawn]
    expected = read(configs_, specs, steps)
    with patch.object(windows, "_STATES", TWIN_STATES):
        twin = fed(feed.EventFeedPython, routing.RouterPython, [lambda c=c: windows.build_window(c) for c in configs_], specs, steps)
    compiled = fed(_feed.EventFeed, _routing.Router, [lambda c=c: make_compiled(c) for c in configs_], specs, steps)
    assert twin == expected
    assert compiled == expected


def test_the_engine_feeds_a_lone_query_and_reads_through_the_log_when_shared():
    from cqels_endpoint import Engine

    text = "SELECT ?s WHERE { STREAM <http://s> [RANGE 5ms] { ?s <http://p> ?o } }"
    engine = Engine()
    alone = engine.register(text, name="alone")
    engine.push("http://s", "<http://a> <http://p> 1 .", time=1)
    assert alone._fed() is not None
    a, b = engine.register(text, name="a"), engine.register(text, name="b")  # one window state, two readers
    got = {name: [] for name in ("alone", "a", "b")}
    for query in (alone, a, b):
        query.subscribe(lambda emission, name=query.name: got[name].append([row["s"].value for row in emission.rows]))
    engine.push("http://s", "<http://b> <http://p> 1 .", time=2)
    assert a._fed() is None and b._fed() is None
    assert got == {"alone": [["http://b"]], "a": [["http://b"]], "b": [["http://b"]]}
    engine.unregister("b")
    engine.push("http://s", "<http://c> <http://p> 1 .", time=3)
    assert a._fed() is not None  # alone again: the feed takes over from the reader
    engine.push("http://s", "<http://d> <http://p> 1 .", time=9)
    assert got["a"] == [["http://b"], ["http://c"], ["http://d"]]
    assert got["alone"] == got["a"]
    engine.close()
