"""Window semantics (docs/ARCHITECTURE.md, "Windows and time") drawn as timelines, in the style of
Bytewax's test_sliding_windower.

One character is one millisecond; a letter is an event at its column. Each test runs a query that
reports one window's contents under RSTREAM (an emission at every evaluation, empty ones included)
and lists, per evaluation time, the letters the window held. The recompute oracle computes Γ, so
these tests check the engine's time handling (streams, windows, evaluation times) on its own.
"""

from __future__ import annotations

import pytest

from cqels_endpoint.errors import LateEventError
from cqels_endpoint.query.windows import AllWindow, NowWindow, RangeWindow, TriplesWindow
from cqels_endpoint.runtime.windows import CloseSchedule, build_window
from cqels_endpoint.testing import TEST_STREAM, Advance, Push, run, seen, timeline, window_query


def contents(window: str, drawing: str, advance_to: int | None = None, **options) -> list[tuple[int, str]]:
    return seen(run(window_query(window), timeline(drawing), r2s="RSTREAM", advance_to=advance_to, **options))


def test_eager_range():
    # events:  a-b--c--
    # window:  [RANGE 3ms] at τ holds τ−3 < t ≤ τ, evaluated at each event and at the advance
    #   τ=0: a   τ=2: a b   τ=5: c (b at 2 ≤ 5−3 left)   τ=8: nothing (c at 5 ≤ 8−3 left)
    assert contents("[RANGE 3ms]", "a-b--c", advance_to=8) == [(0, "a"), (2, "ab"), (5, "c"), (8, "")]


def test_eager_range_boundary_is_exclusive_below():
    # events:  a--b       [RANGE 3ms]: at τ=3, a (t=0) is exactly 3 old and has left
    assert contents("[RANGE 3ms]", "a--b") == [(0, "a"), (3, "b")]
    assert contents("[RANGE 4ms]", "a--b") == [(0, "a"), (3, "ab")]


def test_periodic_range_with_origin_from_first_event():
    # events:  a--b----c-
    # window:  [RANGE 4ms SLIDE 2ms], origin o = 0 (a): closes at 2,4,6,8,10; close c holds c−4 ≤ t < c
    #   c=2: a   c=4: a b   c=6: b   c=8: (c arrives at 8, after the close)   c=10: c
    assert contents("[RANGE 4ms SLIDE 2ms]", "a--b----c", advance_to=10) == [
        (2, "a"),
        (4, "ab"),
        (6, "b"),
        (8, ""),
        (10, "c"),
    ]


def test_periodic_origin_follows_the_first_event():
    # events:  ---a-b----          origin o = 3 (a): closes at 6, 9
    #   c=6: [2,6) a b    c=9: [5,9) b
    assert contents("[RANGE 4ms SLIDE 3ms]", "---a-b", advance_to=9) == [(6, "ab"), (9, "b")]


def test_periodic_origin_given_at_registration():
    # events:  ---a-b----          origin_ms = 0: closes at 3, 6, 9
    #   c=3: [−1,3) nothing (a arrives at 3, after the close)   c=6: [2,6) a b   c=9: [5,9) b
    assert contents("[RANGE 4ms SLIDE 3ms]", "---a-b", advance_to=9, origin_ms=0) == [(3, ""), (6, "ab"), (9, "b")]


def test_tumbling():
    # events:  ab-c-d        [RANGE 2ms TUMBLING] = [RANGE 2ms SLIDE 2ms], o = 0: closes 2, 4, 6
    assert contents("[RANGE 2ms TUMBLING]", "ab-c-d", advance_to=6) == [(2, "ab"), (4, "c"), (6, "d")]


def test_rspql_step_is_a_slide():
    query = (
        "SELECT ?e FROM NAMED WINDOW <urn:w> ON <urn:cqels:test:stream> [RANGE PT0.004S STEP PT0.002S] "
        "WHERE { WINDOW <urn:w> { ?e <urn:cqels:test:at> ?t } }"
    )
    emissions = run(query, timeline("a--b----c"), r2s="RSTREAM", advance_to=10)
    assert seen(emissions) == [(2, "a"), (4, "ab"), (6, "b"), (8, ""), (10, "c")]


def test_long_gap_fires_every_missed_close_in_order():
    # events:  a---------b       [RANGE 2ms SLIDE 2ms], o = 0: b at 10 closes 2, 4, 6, 8, 10 at once
    assert contents("[RANGE 2ms SLIDE 2ms]", "a---------b") == [(2, "a"), (4, ""), (6, ""), (8, ""), (10, "")]
    # Under ISTREAM / DSTREAM only the changes show: a enters at 2, leaves at 4.
    query = window_query("[RANGE 2ms SLIDE 2ms]")
    assert seen(run(query, timeline("a---------b"))) == [(2, "a")]
    assert seen(run(query, timeline("a---------b"), r2s="DSTREAM")) == [(4, "a")]


def test_slides_that_differ_report_at_the_union_of_their_closes():
    # Two periodic windows on two patterns, slides 2 and 3 (o = 0): the query reports at 2,3,4,6.
    query = (
        "SELECT ?e ?f WHERE { STREAM <urn:cqels:test:stream> [RANGE 6ms SLIDE 2ms] { ?e <urn:cqels:test:at> ?t } "
        "STREAM <urn:cqels:test:stream> [RANGE 6ms SLIDE 3ms] { ?f <urn:cqels:test:at> ?u } }"
    )
    times = [e.time for e in run(query, timeline("a-b"), r2s="RSTREAM", advance_to=6)]
    assert times == [2, 3, 4, 6]


def test_now_holds_the_current_instant():
    # events:  ab-c       [NOW] at τ holds t = τ: one event per instant here; an advance past them sees nothing
    assert contents("[NOW]", "ab-c", advance_to=5) == [(0, "a"), (1, "b"), (3, "c"), (5, "")]


def test_now_holds_every_event_of_the_instant():
    # CQELS: three events at t = 1000 are all in [NOW] at 1000; an advance to 1000 keeps them, a
    # later instant (an event or an advance) empties the window of them.
    events = [Push(TEST_STREAM, 1000, f'<urn:cqels:test:{x}> <urn:cqels:test:at> "1000" .') for x in "abc"]
    events += [Advance(1000), Push(TEST_STREAM, 2000, '<urn:cqels:test:d> <urn:cqels:test:at> "2000" .'), Advance(2001)]
    expected = [(1000, "a"), (1000, "ab"), (1000, "abc"), (1000, "abc"), (2000, "d"), (2001, "")]
    assert seen(run(window_query("[NOW]"), events, r2s="RSTREAM")) == expected


def test_now_never_takes_a_lagging_stream():
    # <urn:other> lags behind the query's clock (6): its event at 2 is in the past there, and one at 6 is not.
    query = (
        "SELECT ?e WHERE { { STREAM <urn:cqels:test:stream> [NOW] { ?e <urn:cqels:test:at> ?t } } "
        "UNION { STREAM <urn:other> [NOW] { ?e <urn:cqels:test:at> ?t } } }"
    )
    events = timeline("------a") + timeline("--b", stream="urn:other") + timeline("------c", stream="urn:other")
    assert seen(run(query, events, r2s="RSTREAM")) == [(6, "a"), (6, "a"), (6, "ac")]


def test_now_is_empty_at_periodic_closes():
    query = (
        "SELECT ?e ?f WHERE { STREAM <urn:cqels:test:stream> [NOW] { ?e <urn:cqels:test:at> ?t } "
        "OPTIONAL { STREAM <urn:cqels:test:stream> [RANGE 2ms SLIDE 2ms] { ?f <urn:cqels:test:at> ?u } } }"
    )
    emissions = run(query, timeline("a-b-c"), r2s="RSTREAM", advance_to=6)
    assert [(e.time, e.rows) for e in emissions] == [(2, []), (4, []), (6, [])]


def test_all_keeps_everything_since_registration():
    assert contents("[ALL]", "a--b-c", advance_to=100) == [(0, "a"), (3, "ab"), (5, "abc"), (100, "abc")]


def test_triples_n_keeps_the_last_n_matching_triples():
    # events:  abc-d       [TRIPLES 2]
    assert contents("[TRIPLES 2]", "abc-d", advance_to=50) == [(0, "a"), (1, "ab"), (2, "bc"), (4, "cd"), (50, "cd")]


def test_triples_n_counts_per_triple_pattern():
    # The pattern matches only ?e <urn:cqels:test:at> …: other triples of the stream do not count.
    query = window_query("[TRIPLES 1]")
    events = [
        Push("urn:cqels:test:stream", 0, '<urn:cqels:test:a> <urn:cqels:test:at> "0" .'),
        Push("urn:cqels:test:stream", 1, '<urn:cqels:test:b> <urn:cqels:test:other> "1" .'),
    ]
    assert seen(run(query, events, r2s="RSTREAM")) == [(0, "a"), (1, "a")]


def test_equal_timestamps_are_separate_ticks_in_arrival_order():
    events = [
        Push("urn:cqels:test:stream", 5, '<urn:cqels:test:a> <urn:cqels:test:at> "5" .'),
        Push("urn:cqels:test:stream", 5, '<urn:cqels:test:b> <urn:cqels:test:at> "5" .'),
    ]
    # Each is evaluated on its own, and [NOW] at 5 holds both once the second has come.
    assert seen(run(window_query("[NOW]"), events, r2s="RSTREAM")) == [(5, "a"), (5, "ab")]
    assert seen(run(window_query("[RANGE 1ms]"), events, r2s="RSTREAM")) == [(5, "a"), (5, "ab")]


def test_lateness_buffers_and_reorders():
    # Pushed in the order a@0, b@3, c@1 with lateness 2: the watermark (latest − 2) releases
    # a when b arrives, c at once (1 ≤ 1), and b at the advance to 10: as if in order, 2 ms later.
    events = [
        Push("urn:cqels:test:stream", 0, '<urn:cqels:test:a> <urn:cqels:test:at> "0" .'),
        Push("urn:cqels:test:stream", 3, '<urn:cqels:test:b> <urn:cqels:test:at> "3" .'),
        Push("urn:cqels:test:stream", 1, '<urn:cqels:test:c> <urn:cqels:test:at> "1" .'),
    ]
    emissions = run(window_query("[ALL]"), events, r2s="RSTREAM", advance_to=10, lateness_ms=2)
    assert seen(emissions) == [(0, "a"), (1, "ac"), (3, "abc"), (10, "abc")]


def test_lateness_equal_timestamps_keep_arrival_order():
    events = [
        Push("urn:cqels:test:stream", 4, '<urn:cqels:test:b> <urn:cqels:test:at> "4" .'),
        Push("urn:cqels:test:stream", 2, '<urn:cqels:test:a> <urn:cqels:test:at> "2" .'),
        Push("urn:cqels:test:stream", 4, '<urn:cqels:test:c> <urn:cqels:test:at> "4" .'),
    ]
    emissions = run(window_query("[NOW]"), events, r2s="RSTREAM", advance_to=10, lateness_ms=5)
    assert seen(emissions) == [(2, "a"), (4, "b"), (4, "bc"), (10, "")]


def test_too_late_event_raises_and_nothing_is_applied():
    with pytest.raises(LateEventError) as caught:
        run(window_query("[ALL]"), [*timeline("--a"), Push("urn:cqels:test:stream", 0, "<urn:x> <urn:y> <urn:z> .")])
    assert (caught.value.stream, caught.value.time, caught.value.watermark) == ("urn:cqels:test:stream", 0, 2)
    with pytest.raises(LateEventError):
        run(window_query("[ALL]"), [Advance(10), Push("urn:cqels:test:stream", 9, "<urn:x> <urn:y> <urn:z> .")])


def test_eager_query_evaluates_on_events_of_every_stream_it_reads():
    # A second stream the window does not read still drives the evaluation of the query.
    query = (
        "SELECT ?e WHERE { STREAM <urn:cqels:test:stream> [RANGE 3ms] { ?e <urn:cqels:test:at> ?t } "
        "OPTIONAL { STREAM <urn:other> [NOW] { ?e <urn:cqels:test:seen> ?u } } }"
    )
    events = [*timeline("a"), Push("urn:other", 4, "<urn:x> <urn:y> <urn:z> .")]
    assert seen(run(query, events, r2s="RSTREAM")) == [(0, "a"), (4, "")]


def test_lagging_stream_is_evaluated_at_the_query_clock():
    # <urn:other> lags: its event at 2 is processed at the query's clock 6, where [RANGE 3ms] (3,6] excludes it.
    query = (
        "SELECT ?e WHERE { { STREAM <urn:cqels:test:stream> [RANGE 3ms] { ?e <urn:cqels:test:at> ?t } } "
        "UNION { STREAM <urn:other> [RANGE 3ms] { ?e <urn:cqels:test:at> ?t } } }"
    )
    events = timeline("------a") + timeline("--b", stream="urn:other") + timeline("-------c", stream="urn:other")
    assert seen(run(query, events, r2s="RSTREAM")) == [(6, "a"), (6, "a"), (7, "ac")]


# --------------------------------------------------------------------------- the state objects alone


def test_state_objects_never_scan_on_expiry():
    # FIFO by time: expiry pops from the left and stops at the first entry still in the window.
    state = build_window(RangeWindow(10))
    for seq in range(1000):
        state.insert(seq, seq)
    assert state.expire(1005) == list(range(996))
    assert state.contents()[0] == 996


@pytest.mark.parametrize(
    ("config", "inserts", "tau", "expected_left"),
    [
        (RangeWindow(3), [0, 1, 2, 3], 4, [0, 1]),
        (RangeWindow(3, 1), [0, 1, 2, 3], 4, [0]),
        (AllWindow(), [0, 1, 2], 100, []),
        (TriplesWindow(2), [0, 1, 2], 100, []),
    ],
)
def test_state_expiry(config, inserts, tau, expected_left):
    state = build_window(config)
    for seq, t in enumerate(inserts):
        state.insert(t, seq)
    assert state.expire(tau) == expected_left


def test_now_state_expires_the_previous_instants():
    state = build_window(NowWindow())
    assert state.admits(1, 1) and not state.admits(0, 1)
    state.insert(0, 0)
    state.insert(0, 1)
    state.insert(1, 2)
    state.insert(1, 3)
    assert state.expire(1) == [0, 1]
    assert state.expire(1) == []
    assert state.expire(2) == [2, 3]


def test_close_schedule_with_given_origin_and_union_of_slides():
    schedule = CloseSchedule([4, 6], origin=-2)
    assert list(schedule.closes_through(10)) == [2, 4, 6, 10]
    assert schedule.next_close == 14
