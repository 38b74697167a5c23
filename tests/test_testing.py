"""cqels_endpoint.testing: its documented examples run, and its helpers do what they say."""

from __future__ import annotations

from cqels_endpoint.testing import Advance, ListStream, ManualClock, Push, run, seen, timeline, window_query


def test_timeline_columns_are_milliseconds():
    assert [(p.stream, p.time) for p in timeline("a-b--c", stream="urn:s", unit_ms=10, start=5)] == [
        ("urn:s", 5),
        ("urn:s", 25),
        ("urn:s", 55),
    ]


def test_list_streams_merge_by_time_stably():
    first = ListStream("urn:cqels:test:stream")
    second = ListStream("urn:other")
    for time, who in [(0, "a"), (3, "c")]:
        first.append(time, f'<urn:cqels:test:{who}> <urn:cqels:test:at> "{time}" .')
    for time, who in [(0, "b"), (2, "d")]:
        second.append(time, f'<urn:cqels:test:{who}> <urn:cqels:test:at> "{time}" .')
    query = (
        "SELECT ?e WHERE { { STREAM <urn:cqels:test:stream> [ALL] { ?e <urn:cqels:test:at> ?t } } "
        "UNION { STREAM <urn:other> [ALL] { ?e <urn:cqels:test:at> ?t } } }"
    )
    emissions = run(query, [first, second, Advance(9)], r2s="RSTREAM")
    # Ties keep the order of the streams: a (first) before b (second), both at 0.
    assert seen(emissions) == [(0, "a"), (0, "ab"), (2, "abd"), (3, "abcd"), (9, "abcd")]


def test_tuples_and_arrival_times_from_the_manual_clock():
    events = [
        ("urn:cqels:test:stream", 4, '<urn:cqels:test:a> <urn:cqels:test:at> "4" .'),
        Push("urn:cqels:test:stream", None, '<urn:cqels:test:b> <urn:cqels:test:at> "x" .'),
    ]
    # The push without a time is stamped with the manual clock, which reads the last time seen.
    assert seen(run(window_query("[RANGE 1ms]"), events, r2s="RSTREAM")) == [(4, "a"), (4, "ab")]


def test_static_text_is_loaded_as_trig():
    static = "<urn:cqels:test:a> <urn:cqels:test:label> 'A' . GRAPH <urn:g> { <urn:cqels:test:a> <urn:cqels:test:label> 'GA' }"
    query = (
        "SELECT ?e ?l ?gl WHERE { STREAM <urn:cqels:test:stream> [NOW] { ?e <urn:cqels:test:at> ?t } "
        "?e <urn:cqels:test:label> ?l GRAPH <urn:g> { ?e <urn:cqels:test:label> ?gl } }"
    )
    emissions = run(query, timeline("a"), static=static)
    assert [(row["l"].value, row["gl"].value) for row in emissions[0].rows] == [("A", "GA")]


def test_manual_clock():
    clock = ManualClock()
    assert clock() == 0
    assert clock.set(10) == 10 and clock.advance(5) == 15 and clock() == 15
