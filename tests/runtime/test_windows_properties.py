"""Random timelines against the window definitions (docs/ARCHITECTURE.md, "Windows and time"),
written out directly.

Each example draws non-decreasing timestamps (equal ones and long gaps included) and a final
advance, runs a window query under RSTREAM and compares, at every evaluation, the letters the
window held with the set the definition gives.
"""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.testing import TEST_STREAM, Push, run, seen, window_query

LETTERS = string.ascii_lowercase


@st.composite
def timelines(draw):
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 5, 17]), min_size=1, max_size=10))
    times, now = [], draw(st.integers(0, 5))
    for gap in gaps:
        now += gap
        times.append(now)
    advance = times[-1] + draw(st.sampled_from([0, 1, 4, 9, 30]))
    return times, advance


def pushes(times):
    return [
        Push(TEST_STREAM, t, f'<urn:cqels:test:{LETTERS[i]}> <urn:cqels:test:at> "{i}" .') for i, t in enumerate(times)
    ]


def letters(indices) -> str:
    return "".join(sorted(LETTERS[i] for i in indices))


def observed(window, times, advance, **options):
    return seen(run(window_query(window), pushes(times), r2s="RSTREAM", advance_to=advance, **options))


def eager_expected(times, advance, holds):
    """Evaluations at each event (seeing the events so far) and at the advance."""
    result = [(t, letters(j for j in range(i + 1) if holds(i, j, t))) for i, t in enumerate(times)]
    last = len(times) - 1
    result.append((advance, letters(j for j in range(len(times)) if holds(last + 1, j, advance))))
    return result


@settings(max_examples=40, deadline=None)
@given(timelines(), st.integers(1, 8))
def test_eager_range(timeline, range_ms):
    times, advance = timeline
    expected = eager_expected(times, advance, lambda i, j, tau: tau - range_ms < times[j] <= tau)
    assert observed(f"[RANGE {range_ms}ms]", times, advance) == expected


@settings(max_examples=40, deadline=None)
@given(timelines(), st.integers(1, 8), st.integers(1, 6), st.none() | st.integers(-5, 5))
def test_periodic_range(timeline, range_ms, slide_ms, origin_ms):
    times, advance = timeline
    slide_ms = min(slide_ms, range_ms)  # the parser rejects a slide longer than the range
    origin = times[0] if origin_ms is None else origin_ms
    closes = [origin + k * slide_ms for k in range(1, (advance - origin) // slide_ms + 1)] if advance > origin else []
    expected = [(c, letters(j for j, t in enumerate(times) if c - range_ms <= t < c)) for c in closes]
    assert observed(f"[RANGE {range_ms}ms SLIDE {slide_ms}ms]", times, advance, origin_ms=origin_ms) == expected


@settings(max_examples=30, deadline=None)
@given(timelines())
def test_now(timeline):
    times, advance = timeline
    # At τ the window holds the events so far at the instant τ (several when timestamps repeat).
    expected = eager_expected(times, advance, lambda i, j, tau: times[j] == tau)
    assert observed("[NOW]", times, advance) == expected


@settings(max_examples=30, deadline=None)
@given(timelines(), st.integers(1, 4))
def test_triples(timeline, count):
    times, advance = timeline
    expected = eager_expected(times, advance, lambda i, j, tau: min(i, len(times) - 1) - count < j)
    assert observed(f"[TRIPLES {count}]", times, advance) == expected


@settings(max_examples=20, deadline=None)
@given(timelines())
def test_all(timeline):
    times, advance = timeline
    assert observed("[ALL]", times, advance) == eager_expected(times, advance, lambda i, j, tau: True)


@settings(max_examples=30, deadline=None)
@given(timelines(), st.integers(1, 6), st.randoms(use_true_random=False))
def test_lateness_reorders_into_the_in_order_result(timeline, lateness_ms, random):
    # Shuffle each event within what the lateness allows; the result must be the in-order one.
    times, advance = timeline
    # Offsets below the lateness never make an event late.
    arrival = sorted(range(len(times)), key=lambda i: times[i] + random.uniform(0, lateness_ms - 0.5))
    events = [pushes(times)[i] for i in arrival]
    result = seen(run(window_query("[NOW]"), events, r2s="RSTREAM", advance_to=advance + lateness_ms, lateness_ms=lateness_ms))
    # Released in timestamp order, equal timestamps in arrival order, each its own tick; [NOW]
    # holds the instant's events released so far.
    released = sorted(range(len(times)), key=lambda i: (times[i], arrival.index(i)))
    expected = [(times[i], letters(j for j in released[: k + 1] if times[j] == times[i])) for k, i in enumerate(released)]
    assert result == [*expected, (advance + lateness_ms, "")]
