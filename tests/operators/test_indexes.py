"""Ring and one-way indexes: behaviour of both implementations, and compiled == twin on random runs."""

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cqels_endpoint.operators import _indexes as compiled
from cqels_endpoint.operators.reference import indexes as twin

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

IMPLEMENTATIONS = pytest.mark.parametrize("impl", [compiled, twin], ids=["compiled", "twin"])


@IMPLEMENTATIONS
def test_ring_probe_is_newest_first_and_counts(impl):
    ring = impl.RingIndex()
    for entry in (10, 11, 12):
        ring.insert(1, entry)
    ring.insert(2, 20)
    assert ring.probe(1) == [12, 11, 10]
    assert ring.probe(2) == [20]
    assert ring.probe(3) == []
    assert (ring.count(1), ring.count(2), ring.count(3)) == (3, 1, 0)
    assert len(ring) == 4
    assert ring.key_count() == 2
    assert sorted(ring.keys()) == [1, 2]
    assert sorted(ring.items()) == [(1, [12, 11, 10]), (2, [20])]
    assert 1 in ring and 3 not in ring


@IMPLEMENTATIONS
def test_ring_remove_takes_the_oldest_live_occurrence(impl):
    ring = impl.RingIndex()
    for entry in (5, 6, 5, 7):
        ring.insert(1, entry)
    assert ring.remove(1, 5) is True
    assert ring.probe(1) == [7, 5, 6]
    assert ring.remove(1, 5) is True
    assert ring.probe(1) == [7, 6]
    assert ring.remove(1, 5) is False  # no live occurrence left
    assert ring.remove(9, 5) is False  # no such key
    assert ring.count(1) == 2 and len(ring) == 2


@IMPLEMENTATIONS
def test_ring_key_disappears_with_its_last_entry(impl):
    ring = impl.RingIndex()
    ring.insert(4, 40)
    ring.insert(4, 41)
    ring.remove(4, 41)
    ring.remove(4, 40)
    assert 4 not in ring
    assert ring.keys() == [] and len(ring) == 0 and ring.key_count() == 0
    ring.insert(4, 42)  # a fresh bucket: no trace of the old dead slots
    assert ring.probe(4) == [42]


@IMPLEMENTATIONS
def test_ring_survives_expiry_and_compaction_in_window_order(impl):
    # A sliding window over one key: insert newest, expire oldest, with out-of-order removals mixed in.
    ring = impl.RingIndex()
    live = []
    for step in range(2000):
        ring.insert(7, step)
        live.append(step)
        if step % 3 == 0 and len(live) > 5:
            victim = live[len(live) // 2]  # an arbitrary middle entry: marked dead, not at the head
            assert ring.remove(7, victim)
            live.remove(victim)
        while len(live) > 50:
            assert ring.remove(7, live.pop(0))
        assert ring.count(7) == len(live)
    assert ring.probe(7) == live[::-1]


@IMPLEMENTATIONS
def test_ring_extreme_keys_and_entries(impl):
    ring = impl.RingIndex()
    ring.insert(INT64_MIN, INT64_MAX)
    ring.insert(INT64_MAX, INT64_MIN)
    assert ring.probe(INT64_MIN) == [INT64_MAX]
    assert ring.probe(INT64_MAX) == [INT64_MIN]
    with pytest.raises(OverflowError):
        ring.insert(INT64_MAX + 1, 0)
    with pytest.raises(OverflowError):
        ring.insert(0, INT64_MIN - 1)
    assert 0 not in ring  # the failed insert left nothing behind


@IMPLEMENTATIONS
def test_ring_clear_and_memory(impl):
    ring = impl.RingIndex()
    empty = ring.memory_bytes()
    for key in range(100):
        ring.insert(key, key)
    assert ring.memory_bytes() > empty
    ring.clear()
    assert len(ring) == 0 and ring.keys() == []


@IMPLEMENTATIONS
def test_one_way_counter_and_state(impl):
    index = impl.OneWayIndex()
    assert index.add(3) == 1
    assert index.add(3, 4) == 5
    index.set_state(3, ["aggregate"])
    assert index.get_state(3) == ["aggregate"]
    assert index.get_state(8, "none") == "none"
    assert index.count(3) == 5 and index.count(8) == 0
    assert len(index) == 1 and index.keys() == [3] and index.items() == [(3, 5)]
    assert index.add(3, -5) == 0
    assert 3 not in index and index.get_state(3) is None  # the state goes with the key
    assert index.add(3, 0) == 0 and 3 not in index


@IMPLEMENTATIONS
def test_one_way_refuses_negative_counters_and_stateless_keys(impl):
    index = impl.OneWayIndex()
    index.add(1, 2)
    with pytest.raises(ValueError, match="more removals than insertions"):
        index.add(1, -3)
    assert index.count(1) == 2  # unchanged
    with pytest.raises(KeyError, match="add"):
        index.set_state(2, object())
    with pytest.raises(OverflowError):
        index.add(1, INT64_MAX)
    assert index.count(1) == 2


@IMPLEMENTATIONS
def test_key_of(impl):
    assert impl.key_of([42]) == 42  # one id is its own key
    assert impl.key_of([-5]) == -5
    assert impl.key_of([1, 2]) != impl.key_of([2, 1])
    assert impl.key_of([1, 2]) != impl.key_of([1, 2, 0])
    assert impl.key_of([]) == impl.key_of(())
    keys = {impl.key_of([a, b]) for a in range(100) for b in range(100)}
    assert len(keys) == 10_000  # no collision on a dense grid
    assert all(INT64_MIN <= key <= INT64_MAX for key in keys)
    with pytest.raises(OverflowError):
        impl.key_of([1, INT64_MAX + 1])


def test_docstring_examples():
    results = doctest.testmod(twin)
    assert results.attempted > 0 and results.failed == 0


int64s = st.integers(INT64_MIN, INT64_MAX)


@settings(max_examples=300)
@given(st.lists(int64s, max_size=5))
def test_key_of_agrees(ids):
    assert compiled.key_of(ids) == twin.key_of(ids)


# Few keys and entries, so that duplicates, removals of present entries and compactions are common;
# plus the int64 extremes.
keys = st.one_of(st.integers(0, 5), st.sampled_from([INT64_MIN, INT64_MAX, -1]))
entries = st.one_of(st.integers(0, 8), st.sampled_from([INT64_MIN, INT64_MAX]))


class CompiledMatchesTwin(RuleBasedStateMachine):
    """Drives a compiled and a pure-Python index with the same operations and compares every answer."""

    def __init__(self):
        super().__init__()
        self.rings = (compiled.RingIndex(), twin.RingIndex())
        self.one_ways = (compiled.OneWayIndex(), twin.OneWayIndex())
        self.inserted: list[tuple[int, int]] = []

    def same(self, call):
        results = [call(index) for index in self.rings]
        assert results[0] == results[1]
        return results[0]

    @rule(key=keys, entry=entries)
    def insert(self, key, entry):
        self.same(lambda ring: ring.insert(key, entry))
        self.inserted.append((key, entry))

    @rule(key=keys, entry=entries)
    def remove_anything(self, key, entry):
        self.same(lambda ring: ring.remove(key, entry))

    @precondition(lambda self: self.inserted)
    @rule(data=st.data())
    def remove_something_inserted(self, data):
        key, entry = data.draw(st.sampled_from(self.inserted))
        self.same(lambda ring: ring.remove(key, entry))

    @precondition(lambda self: self.inserted)
    @rule()
    def expire_oldest(self):
        key, entry = self.inserted.pop(0)
        self.same(lambda ring: ring.remove(key, entry))

    @rule(key=keys)
    def probe(self, key):
        found = self.same(lambda ring: ring.probe(key))
        assert len(found) == self.same(lambda ring: ring.count(key))

    @rule(key=keys, delta=st.integers(-3, 3), state=st.none() | st.integers())
    def one_way(self, key, delta, state):
        outcomes = []
        for index in self.one_ways:
            try:
                outcomes.append(("count", index.add(key, delta)))
            except ValueError:
                outcomes.append(("refused", index.count(key)))
            if state is not None:
                try:
                    index.set_state(key, state)
                except KeyError:
                    outcomes.append("no key")
            outcomes.append(index.get_state(key))
        assert outcomes[: len(outcomes) // 2] == outcomes[len(outcomes) // 2 :]

    @rule()
    def clear(self):
        self.same(lambda ring: ring.clear())
        self.inserted.clear()

    @invariant()
    def same_contents(self):
        keys_now = self.same(lambda ring: sorted(ring.keys()))
        assert self.same(len) == sum(self.same(lambda ring, key=key: ring.count(key)) for key in keys_now)
        self.same(lambda ring: sorted(ring.items()))
        self.same(lambda ring: ring.key_count())
        counts = [sorted(index.items()) for index in self.one_ways]
        assert counts[0] == counts[1]
        assert len(self.one_ways[0]) == len(self.one_ways[1])


TestCompiledMatchesTwin = CompiledMatchesTwin.TestCase
TestCompiledMatchesTwin.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
