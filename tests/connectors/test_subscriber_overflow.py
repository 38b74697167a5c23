"""Subscriber overflow policies (``connectors/subscriptions.py``) against a plain model: each
subscriber is a bounded deque that, when full, disconnects, discards its oldest entry or refuses
the new one. Random sequences of emissions and takes, over subscribers of every policy and size
sharing one hub, must give the same entries, the same gaps (``skipped``), the same counts of
discarded emissions (per subscriber and per policy) and the same disconnections.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cqels_endpoint.connectors.subscriptions import (
    DISCONNECT,
    DROP_NEWEST,
    DROP_OLDEST,
    OVERFLOW_POLICIES,
    SLOW,
    QueryHub,
    SubscriptionEnded,
)


class Query:
    """What a hub reads of a ``ContinuousQuery``: its name, emission count and subscription. The
    test emits by calling the hub's callback, as the engine does inside a push."""

    form = "SELECT"

    def __init__(self, emitted: int = 0):
        self.name = "q"
        self.emitted = emitted
        self.deliver = None

    def subscribe(self, callback, json_only: bool):
        self.deliver = callback
        return lambda: None


@dataclass
class Model:
    capacity: int
    overflow: str
    items: deque = field(default_factory=deque)
    expected: int = 1
    dropped: int = 0
    ended: bool = False

    def offer(self, seq: int) -> str | None:
        """What the hub must count for this subscriber: a disconnection, a discard, or nothing."""
        if self.ended:
            return None
        if len(self.items) < self.capacity:
            self.items.append(seq)
            return None
        if self.overflow == DISCONNECT:
            self.ended = True
            self.items.clear()
            return "disconnect"
        self.dropped += 1
        if self.overflow == DROP_OLDEST:
            self.items.popleft()
            self.items.append(seq)
        return "discard"

    def take(self) -> tuple[int, int] | str | None:
        if self.ended:
            return "ended"
        if not self.items:
            return None
        seq = self.items.popleft()
        skipped, self.expected = seq - self.expected, seq + 1
        return seq, skipped


subscribers = st.lists(st.tuples(st.integers(1, 4), st.sampled_from(OVERFLOW_POLICIES)), min_size=1, max_size=4)
# None: an emission, offered to every subscriber; i: subscriber i takes one entry.
operations = st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=80)


@given(subscribers, operations, st.integers(0, 5))
def test_policies_match_a_model_of_bounded_deques(specs, ops, emitted_before):
    disconnects: Counter = Counter()
    discarded: Counter = Counter()
    query = Query(emitted_before)
    hub = QueryHub(query, replay=3, queue=64,
                   on_disconnect=lambda name, reason: disconnects.update([(name, reason)]),
                   on_discard=lambda name, policy, count: discarded.update({(name, policy): count}))
    subs = [hub.subscribe(None, capacity, overflow)[0] for capacity, overflow in specs]
    models = [Model(capacity, overflow, expected=emitted_before + 1) for capacity, overflow in specs]
    want_disconnects: Counter = Counter()
    want_discarded: Counter = Counter()
    seq = emitted_before
    for op in ops:
        if op is None:
            seq += 1
            query.deliver(seq)  # the hub takes any object as the emission: the seq itself here
            for model in models:
                outcome = model.offer(seq)
                if outcome == "disconnect":
                    want_disconnects["q", SLOW] += 1
                elif outcome == "discard":
                    want_discarded["q", model.overflow] += 1
            continue
        if op >= len(subs):
            continue
        want = models[op].take()
        if want == "ended":
            with pytest.raises(SubscriptionEnded) as ended:
                subs[op].next(timeout=0)
            assert ended.value.reason == SLOW
            continue
        entry = subs[op].next(timeout=0)
        if want is None:
            assert entry is None
        else:
            assert (entry.seq, subs[op].skipped) == want
            assert entry.emission == entry.seq  # the emission offered under that number
    assert [sub.dropped for sub in subs] == [model.dropped for model in models]
    assert disconnects == want_disconnects
    assert discarded == want_discarded
    assert hub.subscriber_count() == sum(not model.ended for model in models)


def test_the_default_is_the_hubs_queue_and_disconnect():
    hub = QueryHub(Query(), replay=3, queue=5, on_disconnect=lambda *a: None, on_discard=lambda *a: None)
    subscriber, _, _ = hub.subscribe(None)
    assert (subscriber.capacity, subscriber.overflow) == (5, DISCONNECT)


@pytest.mark.parametrize(("capacity", "overflow", "message"), [
    (0, DROP_NEWEST, "at least 1 emission, not 0"),
    (2, "drop-middle", "unknown overflow policy 'drop-middle'; use one of disconnect, drop-oldest, drop-newest"),
])
def test_a_bad_capacity_or_policy_is_refused(capacity, overflow, message):
    hub = QueryHub(Query(), replay=3, queue=5, on_disconnect=lambda *a: None, on_discard=lambda *a: None)
    with pytest.raises(ValueError, match=message):
        hub.subscribe(None, capacity, overflow)
    assert hub.subscriber_count() == 0


def test_a_reader_is_woken_for_a_queued_entry_only():
    """drop-oldest queues the new entry (the reader is woken), drop-newest does not (nothing new)."""
    hub = QueryHub(Query(), replay=3, queue=5, on_disconnect=lambda *a: None, on_discard=lambda *a: None)
    wakes: Counter = Counter()
    for overflow in (DROP_OLDEST, DROP_NEWEST):
        subscriber, _, _ = hub.subscribe(None, 1, overflow)
        subscriber.wake = lambda overflow=overflow: wakes.update([overflow])
    hub.query.deliver("first")
    hub.query.deliver("second")
    assert wakes == {DROP_OLDEST: 2, DROP_NEWEST: 1}
