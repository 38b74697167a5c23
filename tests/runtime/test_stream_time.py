"""Stream time (``runtime.streams``, ``engine.clocks``): the range of timestamps the engine holds,
the bound on events ahead of the clock, the counters, resetting a clock, and clocks kept in a
directory across a restart (the engine built again on the same files)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyoxigraph as ox
import pytest

from cqels_endpoint.engine import Engine
from cqels_endpoint.engine.clocks import FILE_NAME, JOURNAL_NAME, ClockFileError
from cqels_endpoint.errors import LateEventError
from cqels_endpoint.runtime.encoding import XSD, inline_id
from cqels_endpoint.runtime.functions import datetime_from_ms
from cqels_endpoint.runtime.streams import (
    TIME_MAX_MS,
    TIME_MIN_MS,
    FutureEventError,
    TimeRangeError,
    UnknownStreamError,
    parse_timestamp,
    to_millis,
)
from cqels_endpoint.testing import ManualClock

S = "http://example.org/streams/s"
P = "http://ex.org/p"
QUERY = f"SELECT ?s ?o WHERE {{ STREAM <{S}> [RANGE 1h] {{ ?s <{P}> ?o }} }}"


def event(n: int | str) -> str:
    return f'<http://ex.org/e{n}> <{P}> "{n}" .'


def seen_by(engine: Engine) -> list[tuple[int, list[str]]]:
    """Every RSTREAM emission of QUERY from now on, as (time, sorted objects)."""
    seen: list = []
    query = engine.register(QUERY, r2s="RSTREAM", mode="recompute")
    query.subscribe(lambda e: seen.append((e.time, sorted(row["o"].value for row in e.rows))))
    return seen


# --------------------------------------------------------------------------- the range


def test_the_range_ends_where_inline_datetime_ids_end():
    def literal(ms: int) -> ox.Literal:
        return datetime_from_ms(ms)

    assert literal(TIME_MAX_MS).value == "4199-11-24T01:22:57.663Z"
    assert literal(TIME_MIN_MS).value == "0001-01-01T00:00:00Z"
    assert inline_id(literal(TIME_MAX_MS)) is not None and inline_id(literal(TIME_MIN_MS)) is not None
    assert inline_id(literal(TIME_MAX_MS + 1)) is None  # one more and NOW() would need the dictionary


@pytest.mark.parametrize("text", ["99999999999999999999999", "-99999999999999999999999", str(TIME_MAX_MS + 1),
                                  str(TIME_MIN_MS - 1), "10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z",
                                  "0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "4199-11-24T01:22:57.664Z"])
def test_a_time_out_of_range_is_a_value_error_naming_it(text):
    with pytest.raises(ValueError) as error:
        parse_timestamp(text)
    assert text in str(error.value) or str(int(text)) in str(error.value)
    assert "4199-11-24T01:22:57.663Z" in str(error.value)


def test_the_ends_of_the_range_and_times_before_1970_are_held():
    assert parse_timestamp("0001-01-01T00:00:00Z") == TIME_MIN_MS == parse_timestamp(str(TIME_MIN_MS))
    assert parse_timestamp("4199-11-24T01:22:57.663Z") == TIME_MAX_MS
    assert parse_timestamp("1969-12-31T23:59:59Z") == -1000 == parse_timestamp("-1000")
    assert to_millis(datetime(1, 1, 1, tzinfo=UTC)) == TIME_MIN_MS
    with pytest.raises(TimeRangeError):
        to_millis(datetime(9999, 1, 1, tzinfo=UTC))
    literal = ox.Literal("5000-01-01T00:00:00Z", datatype=ox.NamedNode(XSD + "dateTime"))
    with pytest.raises(TimeRangeError):
        to_millis(literal)


def test_the_engine_refuses_a_time_out_of_range_and_its_clock_does_not_move():
    engine = Engine()
    seen = seen_by(engine)
    engine.push(S, event(1), time=1000)
    for bad in (99999999999999999999999, -(1 << 70), TIME_MAX_MS + 1):
        with pytest.raises(TimeRangeError):
            engine.push(S, event(2), time=bad)
        with pytest.raises(TimeRangeError):
            engine.advance(bad)
    [stats] = engine.stream_stats(S)
    assert (stats["latest"], stats["events"]) == (1000, 1)
    engine.push(S, event(3), time=2000)  # normal pushes go on
    engine.push(S, event(4), time=TIME_MAX_MS)  # the last instant held is an event like any other
    assert seen == [(1000, ["1"]), (2000, ["1", "3"]), (TIME_MAX_MS, ["4"])]


def test_negative_times_and_year_0001_are_events():
    engine = Engine()
    seen = seen_by(engine)
    engine.push(S, event(1), time=TIME_MIN_MS)
    engine.push(S, event(2), time=-1)
    assert seen == [(TIME_MIN_MS, ["1"]), (-1, ["2"])]


# --------------------------------------------------------------------------- the future bound


def test_events_too_far_ahead_of_the_clock_are_refused_whole_and_counted():
    clock = ManualClock(10_000)
    engine = Engine(clock=clock, max_future_ms=5_000)
    seen = seen_by(engine)
    engine.push(S, event(1), time=15_000)  # exactly the bound: accepted
    with pytest.raises(FutureEventError) as error:
        engine.push_batch(S, [(event(2), 15_000), (event(3), 15_001), (event(4), 20_000)])
    assert (error.value.index, error.value.future_in_batch, error.value.max_future_ms) == (1, 2, 5_000)
    assert "15001" in str(error.value) and "max_future_ms=5000" in str(error.value)
    [stats] = engine.stream_stats(S)
    assert (stats["events"], stats["future"], stats["late"], stats["latest"]) == (1, 2, 0, 15_000)
    clock.set(20_000)  # the clock moved on: the same event is now within the bound
    engine.push(S, event(3), time=15_001)
    assert seen == [(15_000, ["1"]), (15_001, ["1", "3"])]


def test_without_a_bound_a_far_future_event_is_accepted():
    engine = Engine(clock=ManualClock(0))
    engine.push(S, event(1), time=TIME_MAX_MS)
    assert engine.stream_stats(S)[0]["future"] == 0


def test_a_batch_names_whichever_refused_event_comes_first():
    engine = Engine(clock=ManualClock(1000), max_future_ms=100)
    engine.push(S, event(1), time=1000)
    with pytest.raises(LateEventError) as late:
        engine.push_batch(S, [(event(2), 500), (event(3), 5000)])
    assert late.value.index == 0
    with pytest.raises(FutureEventError) as future:
        engine.push_batch(S, [(event(2), 5000), (event(3), 500)])
    assert future.value.index == 0
    [stats] = engine.stream_stats(S)
    assert (stats["late"], stats["future"], stats["events"]) == (2, 2, 1)


def test_out_of_order_counts_the_events_reordered_within_the_lateness():
    engine = Engine(lateness_ms=100)
    engine.push_batch(S, [(event(t), t) for t in (1000, 950, 1000, 1200, 1150)])
    [stats] = engine.stream_stats(S)
    assert (stats["events"], stats["out_of_order"], stats["late"], stats["lateness_ms"]) == (5, 2, 0, 100)


# --------------------------------------------------------------------------- reset


def test_a_reset_releases_the_buffer_in_order_then_forgets_the_clock():
    engine = Engine(lateness_ms=1000)
    seen = seen_by(engine)
    engine.push_batch(S, [(event(t), t) for t in (5000, 4500, 4800)])
    assert seen == [] and engine.stream_stats(S)[0]["buffered"] == 3
    assert engine.reset_clock(S) == 3
    assert [time for time, _ in seen] == [4500, 4800, 5000]
    [stats] = engine.stream_stats(S)
    assert (stats["latest"], stats["watermark"], stats["buffered"], stats["events"]) == (None, None, 0, 3)
    engine.push(S, event(1), time=100)  # older than anything before the reset: accepted
    assert engine.stream_stats(S)[0]["latest"] == 100
    with pytest.raises(UnknownStreamError):
        engine.reset_clock("http://example.org/streams/never")


# --------------------------------------------------------------------------- kept across a restart


def test_clocks_counters_and_buffered_events_come_back(tmp_path: Path):
    first = Engine(lateness_ms=1000, clock=ManualClock(0))
    assert first.keep_clocks(tmp_path) == 0
    first_seen = seen_by(first)
    first.push_batch(S, [(event(t), t) for t in (10_000, 9_500, 12_000)])  # releases 9500 and 10000
    first.push(S, '_:b <http://ex.org/p> "x"@en .', time=11_500)  # buffered: a blank node, a language tag
    with pytest.raises(LateEventError):
        first.push(S, event(1), time=10_999)
    first.reject_malformed(S)
    other = "http://example.org/streams/other"
    first.push(other, event(7), time=700)
    before = first.stream_stats()
    assert [time for time, _ in first_seen] == [9_500, 10_000]
    # No close: the process was killed. The journal alone brings everything back.

    second = Engine(lateness_ms=1000, clock=ManualClock(0))
    assert second.keep_clocks(tmp_path) == 2
    rate = {"last_minute": None}  # the arrival rate is of this process only
    assert [stats | rate for stats in second.stream_stats()] == [stats | rate for stats in before]
    seen = seen_by(second)
    with pytest.raises(LateEventError):
        second.push(S, event(2), time=10_999)  # the past stays closed
    second.push(S, event(3), time=13_000)  # releases what was buffered before the restart, in order
    assert [(time, objects) for time, objects in seen] == [(11_500, ["x"]), (12_000, ["12000", "x"])]
    assert second.stream_stats(S)[0]["late"] == 2
    second.close()
    assert json.loads((tmp_path / FILE_NAME).read_text())["streams"][S]["buffered"] == [[13_000, f"{event(3)}\n"]]


def test_a_closed_engine_leaves_one_snapshot_and_an_empty_journal(tmp_path: Path):
    engine = Engine()
    engine.keep_clocks(tmp_path)
    engine.push(S, event(1), time=1000)
    engine.advance(5000)
    engine.close()
    journal = (tmp_path / JOURNAL_NAME).read_text().splitlines()
    assert len(journal) == 1  # the header of the next generation
    again = Engine()
    again.keep_clocks(tmp_path)
    [stats] = again.stream_stats(S)
    assert (stats["latest"], stats["events"]) == (5000, 1)
    again.push(S, event(2), time=6000)  # a stream first seen after an advance starts at the floor
    again.push("http://example.org/streams/new", event(3), time=5000)
    with pytest.raises(LateEventError):
        again.push("http://example.org/streams/newer", event(4), time=4999)


def test_a_reset_and_an_advance_are_kept(tmp_path: Path):
    engine = Engine(lateness_ms=500)
    engine.keep_clocks(tmp_path)
    engine.push_batch(S, [(event(t), t) for t in (2000, 1800)])
    engine.reset_clock(S)
    engine.push(S, event(1), time=100)
    engine.advance(300)
    again = Engine(lateness_ms=500)
    again.keep_clocks(tmp_path)
    [stats] = again.stream_stats(S)
    # The buffer the reset released does not come back; the event after it waits for the watermark.
    assert (stats["latest"], stats["buffered"], stats["events"]) == (300, 1, 3)


def test_a_last_line_cut_short_is_ignored_other_damage_stops_the_start(tmp_path: Path):
    engine = Engine()
    engine.keep_clocks(tmp_path)
    engine.push(S, event(1), time=1000)
    engine.push(S, event(2), time=2000)
    journal = tmp_path / JOURNAL_NAME
    text = journal.read_bytes()
    journal.write_bytes(text[:-10])  # the crash cut the last write short
    again = Engine()
    again.keep_clocks(tmp_path)
    assert again.stream_stats(S)[0]["latest"] == 1000
    again.push(S, event(3), time=3000)
    again.push(S, event(4), time=4000)
    lines = journal.read_bytes().split(b"\n")
    lines[1] = b"{not json"
    journal.write_bytes(b"\n".join(lines))
    with pytest.raises(ClockFileError, match="line 2"):
        Engine().keep_clocks(tmp_path)
    (tmp_path / FILE_NAME).write_text("[]")
    with pytest.raises(ClockFileError, match=FILE_NAME):
        Engine().keep_clocks(tmp_path)


def test_a_journal_of_an_older_generation_is_not_replayed(tmp_path: Path):
    engine = Engine()
    engine.keep_clocks(tmp_path)
    engine.push(S, event(1), time=1000)
    old_journal = (tmp_path / JOURNAL_NAME).read_bytes()
    engine.close()  # folded into generation 2's snapshot
    # A crash between the snapshot and the new journal: the old journal is still there.
    (tmp_path / JOURNAL_NAME).write_bytes(old_journal)
    again = Engine()
    again.keep_clocks(tmp_path)
    [stats] = again.stream_stats(S)
    assert (stats["latest"], stats["events"]) == (1000, 1)  # once, not twice


def test_keep_clocks_comes_before_any_stream(tmp_path: Path):
    engine = Engine()
    engine.push(S, event(1), time=1)
    with pytest.raises(ValueError, match="before any stream"):
        engine.keep_clocks(tmp_path)


def test_buffered_events_of_every_term_kind_come_back_as_they_were(tmp_path: Path):
    data = [
        '<http://ex.org/a> <http://ex.org/p> <<( <http://ex.org/x> <http://ex.org/y> "z" )>> .',
        r'<http://ex.org/a> <http://ex.org/p> "two\nlines, \"quoted\""@en .',
        '_:b1 <http://ex.org/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .',
    ]
    first = Engine(lateness_ms=1000)
    first.keep_clocks(tmp_path)
    for time, text in enumerate(data, 1):
        first.push(S, text, time=time)
    expected = sorted(str(quad.triple) for text in data for quad in ox.parse(text, format=ox.RdfFormat.N_TRIPLES))
    again = Engine(lateness_ms=1000)
    again.keep_clocks(tmp_path)
    assert again.stream_stats(S)[0]["buffered"] == 3
    decoded = [again.dictionary.decode_row(event.ids) for event in again.streams.buffered_events(S)]
    assert sorted(str(ox.Triple(*terms)) for terms in decoded) == expected
