# distutils: language = c++
"""The compiled path of a pushed event on a stream read by one query alone (``fanout.EventPath``).

``Engine.push`` hands an event to its stream's ``EventPath`` when the fan-out made one
(``FanOut.event_path``): one unit reads the stream, made of one plain query (no template
instance, no directional query, no ``STREAM ?s``) that feeds its windows alone
(``ContinuousQuery._fed``) and reads only that stream. One call then takes the steps of
``Streams.push_one``, ``Engine._dispatch`` (``FanOut._reached_alone``, ``_note``, ``run``,
``ContinuousQuery._on_event``, the latency observation, ``FanOut.settle``) and ``Engine._deliver``
on the same objects, in the same order, with the same results; the window insertions and the
evaluation are the query's own (``EventFeed.offer``, ``ContinuousQuery._evaluate``).

``take`` refuses an event, before changing anything, whenever one of those steps would do more
than the common case: a stream clock that checks or buffers (a future bound, a lateness, an
event older than the stream's latest), a static change to apply, a unit still fresh, a query that
has not made its router or whose feed is to be decided again, a failed query. The engine then
takes its general path (the twin of this one: ``CQELS_EVENT_PATH=off`` keeps every event there,
and tests/engine/test_event_path.py compares both). The fan-out makes the path again after every
registration or removal (``FanOut.add``/``remove`` mark the old one invalid).
"""

from cpython.array cimport array
from cpython.long cimport PyLong_AsLongLong
from cpython.object cimport Py_SIZE
from cpython.set cimport PySet_Contains, PySet_Discard
from libc.stdint cimport int64_t
from libc.time cimport time_t
from libcpp.unordered_set cimport unordered_set
from libcpp.vector cimport vector

import heapq
import time as _time

from cqels_endpoint.runtime._dictionary cimport TermDictionary
from cqels_endpoint.runtime._feed cimport EventFeed
from cqels_endpoint.runtime._latency cimport observe_latency

cdef extern from "<time.h>" nogil:
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int, timespec*)
    int CLOCK_REALTIME

cdef object _heappop = heapq.heappop
cdef object _heappush = heapq.heappush
cdef object _perf_counter = _time.perf_counter


cdef inline int64_t _wall_clock_ms() noexcept:
    """``core.wall_clock_ms`` (``time.time_ns() // 1_000_000``) without its Python frame."""
    cdef timespec now
    clock_gettime(CLOCK_REALTIME, &now)
    # Cython's ``//`` on C integers floors, as Python's does (no cdivision).
    return (<int64_t>now.tv_sec * 1000000000 + now.tv_nsec) // 1000000


cdef class EventPath:
    """One stream's compiled event path (module docstring). ``engine``: the engine; ``index``,
    ``unit``: the fan-out's index of the stream and its one unit; ``wall_clock``:
    ``core.wall_clock_ms``, read here without its frame while it is the engine's arrival clock;
    ``triple_types``, ``forms``, ``event_triples``: what ``streams.event_triples`` takes as it
    is, and that function for anything else."""

    cdef public bint valid  # False once the fan-out changed: the engine makes the path again
    cdef str stream
    cdef object engine, acquire, release, streams, clock, arrivals, arrival_numbers, kept
    cdef TermDictionary dictionary
    cdef object fanout, index, unit, query, schedule, registry, seqs, latency, triple_types, forms
    cdef object event_triples, wall_clock
    cdef EventFeed feed  # the query's feed and its router for the stream, once ``_ready``
    cdef object router
    # Containers the path reads or changes in place, which their owners never replace: the index's
    # timer heap and always-reached set, the unit's serials by stream, the arrival buckets, the
    # latency counts, and the schedule's next closes (replaced only when the origin is set).
    cdef list timers, counts, closes
    cdef set always
    cdef dict seen
    cdef object buckets
    cdef bint periodic, any_predicate, always_reached
    cdef unordered_set[int64_t] predicates  # the predicate ids the stream's index keys for the unit
    cdef vector[double] bounds  # the latency histogram's

    def __init__(self, engine, str stream, fanout, index, unit, query, *, wall_clock, triple_types, forms, event_triples):
        self.valid = True
        self.stream = stream
        self.engine = engine
        # The engine's lock, taken through its bound methods (no context manager looked up per event).
        self.acquire, self.release = engine._lock.acquire, engine._lock.release
        self.streams = engine.streams
        self.clock = engine.streams.clocks[stream]
        self.arrivals = self.clock.arrivals
        self.arrival_numbers = engine.streams._arrivals
        self.dictionary = engine.dictionary
        self.kept = fanout.kept_predicates(stream)
        self.fanout = fanout
        self.index = index
        self.unit = unit
        self.query = query
        self.schedule = query.schedule
        self.periodic = query.schedule is not None
        self.registry = query.windows[0].registry
        self.seqs = engine._seqs
        self.latency = query.latency
        self.wall_clock = wall_clock
        self.triple_types = triple_types
        self.forms = forms
        self.event_triples = event_triples
        self.any_predicate = unit in index.any_predicate
        self.always_reached = unit.always  # fixed until a query joins the unit
        for predicate, units in index.by_predicate.items():
            if units:
                self.predicates.insert(predicate)
        self.timers, self.always, self.seen = index.timers, index.always, unit.seen
        self.buckets, self.counts = self.arrivals._buckets, query.latency._counts
        for bound in query.latency.bounds:
            self.bounds.push_back(bound)

    def take(self, triples, time):
        """Takes the event ``(triples, time)`` (``Engine.push``'s arguments) and returns None, or
        refuses it, having changed nothing, and returns its triples as ``event_triples`` reads
        them, for the engine's general path (``RdfSyntaxError``, ``TypeError``: as that path)."""
        data = triples
        cdef type kind = type(triples)
        if kind is list or kind is tuple:
            for item in <object>triples:
                if type(item) not in self.triple_types:
                    data = self.event_triples(triples)
                    break
        elif self.forms is None or not isinstance(triples, self.forms):
            data = self.event_triples(triples)
        cdef int64_t t = 0
        if time is not None:
            # Today's path converts or refuses any other time (``to_millis``).
            if type(time) is not int or not -62_135_596_800_000 <= time <= (1 << 46) - 1:  # TIME_MIN_MS … TIME_MAX_MS
                return data
            t = PyLong_AsLongLong(time)
        self.acquire()
        try:
            if not self._takes(data, time, &t):
                return data
        finally:
            self.release()
        return None

    cdef bint _takes(self, data, object time, int64_t* t) except -1:
        """Under the engine's lock: the event's whole path, or False before any change."""
        cdef bint reached = False
        engine, clock, index, unit, query = self.engine, self.clock, self.index, self.unit, self.query
        if not self.valid or engine._static_changed or self.fanout._reach_all:
            return False
        if clock.lateness_ms != 0 or clock._buffer or self.streams.max_future_ms is not None:
            return False
        if query._feed_generation != self.registry.generation:
            self.feed = self.router = None  # a reader joined or left: the feed is decided again
            return False
        if self.feed is None and not self._ready():
            return False
        feed, router = self.feed, self.router
        arrival_clock = engine.clock
        cdef int64_t now = _wall_clock_ms() if arrival_clock is self.wall_clock else arrival_clock()
        if time is None:
            t[0] = now
        latest = clock.latest
        if latest is not None and t[0] < <int64_t>latest:
            return False  # it may be late: the stream clock checks and counts it
        latest = index.latest
        if latest is not None and t[0] < <int64_t>latest:
            return False  # after a reset_clock: the readers are caught up first

        # Streams.push_one, accepted at once (lateness 0, nothing buffered).
        ids = self.dictionary.encode_triples(data) if self.kept is None else self.dictionary.encode_triples(data, self.kept)
        cdef object when = t[0] if time is None else time
        clock.accepted_events += 1
        self._arrived(now)
        clock.latest = when
        next(self.arrival_numbers)
        received = _perf_counter()
        try:
            engine._epoch += 1
            reached = self._reached(ids, t[0])
            self._note(reached, when)
            if reached:
                self._run(feed, router, ids, when, t[0], received)
                if not unit.removed:  # FanOut.settle
                    self._classify(feed)
        finally:
            # The windows took their own references to what they keep (``decref_many`` in C).
            self._release_ids(ids)
        if reached:
            self._deliver()
        elif engine._driven:
            engine._deliver()
        return True

    cdef void _release_ids(self, array ids) except *:
        cdef Py_ssize_t i
        for i in range(Py_SIZE(ids)):
            self.dictionary._decref(ids.data.as_longlongs[i])

    cdef bint _ready(self) except -1:
        """Whether the query has what the path takes as settled (its feed decided at this
        generation, its router, its origin, its unit settled or always reached), all of which
        stay until a query comes or goes (the path is dropped then); keeps its feed and router."""
        unit, query = self.unit, self.query
        if query.failure is not None or unit.removed or not (unit.settled or self.always_reached):
            return False
        feed, router = query._feed, query._routes.get(self.stream)
        if feed is None or router is None or (self.periodic and self.schedule.origin is None):
            return False
        self.feed, self.router = feed, router
        if self.periodic:
            self.closes = self.schedule._next
        return True

    cdef void _arrived(self, int64_t now) except *:
        """``ArrivalRate.record(now)``: inline while the newest bucket takes it."""
        buckets = self.buckets
        cdef int64_t start = now - now % 1000
        if buckets:
            newest = buckets[len(buckets) - 1]
            if <int64_t>newest[0] >= start:
                newest[1] += 1
                return
        self.arrivals.record(now)

    cdef bint _reached(self, ids, int64_t t) except -1:
        """``FanOut._reached_alone``: the due timers popped; whether the event reaches the unit."""
        cdef list timers = self.timers
        cdef bint reached = False
        while timers and <int64_t>timers[0][0] <= t:
            entry = _heappop(timers)
            due = entry[3]
            if entry[2] == due.version and not due.removed:
                reached = True
                due.timer_at = None  # due: pushed again when settled
        if reached or self.any_predicate or PySet_Contains(self.always, self.unit):
            return True
        cdef array triples = ids  # encode_triples' array('q'), read without a buffer view
        cdef Py_ssize_t start
        if self.predicates.empty():
            return False
        for start in range(1, Py_SIZE(triples), 3):
            if self.predicates.count(triples.data.as_longlongs[start]):
                return True
        return False

    cdef void _note(self, bint reached, object when) except *:
        """``FanOut._note`` of the stream's event, reaching the unit or nothing."""
        fanout, index, unit = self.fanout, self.index, self.unit
        serial = fanout._serial
        if reached and unit.synced != serial:  # else no event came since it was last caught up
            fanout._catch_up(unit)
        serial += 1
        fanout._serial = serial
        index.latest = when
        index.serial += 1
        if reached:
            self.seen[self.stream] = index.serial
            unit.synced = serial

    cdef void _run(self, EventFeed feed, router, ids, object when, int64_t t, object received) except *:
        """``Engine._dispatch``'s call of the query (``ContinuousQuery._on_event``), its latency
        observed, its failure isolated (``Engine._fail``)."""
        query = self.query
        started = _perf_counter()
        try:
            query._received = received
            if self.periodic:
                schedule = self.schedule
                if self._next_close() <= t:
                    for close in schedule.closes_through(when):
                        query._evaluate(close)
                tau = when if query._clock is None else query._clock
            else:
                tau = query._clock  # caught up by _note, and set: the unit is settled or always reached
                if tau is None or <int64_t>tau < t:
                    tau = when
            feed.offer(router, ids, when, tau, self.seqs)
            if not self.periodic:
                query._evaluate(tau)
        except Exception as error:  # one query's failure must not stop the others
            self.engine._fail(query, error)
            return
        self._observe(_perf_counter() - started)

    cdef void _observe(self, double seconds) except *:
        observe_latency(self.latency, self.counts, self.bounds, seconds)

    cdef void _classify(self, EventFeed feed) except *:
        """``FanOut._classify`` of the settled (or always reached) unit of one stream."""
        unit = self.unit
        cdef bint fresh = not unit.settled and (self.always_reached or unit.fresh())
        timer = None if fresh else self._timer(feed)
        timer_at = unit.timer_at
        if timer != timer_at:
            unit.version += 1  # the entries pushed for another time are stale
        if fresh:
            self.always.add(unit)
        else:
            PySet_Discard(self.always, unit)
            if timer is not None and timer != timer_at:
                _heappush(self.timers, (timer, unit.ordinal, unit.version, unit))
        unit.timer_at = timer

    cdef object _timer(self, EventFeed feed):
        """``_Unit.timer``: the next close, or the earliest time something leaves the windows (the
        feed's states are the windows' only ones: each pattern reads one named stream)."""
        if self.periodic:
            return self._next_close()
        earliest = None
        for state in feed.states:
            time = state.expiry()
            if time is not None and (earliest is None or time < earliest):
                earliest = time
        return earliest

    cdef object _next_close(self):
        """``CloseSchedule.next_close`` (its origin is set)."""
        earliest = None
        for close in self.closes:
            if earliest is None or close < earliest:
                earliest = close
        return earliest

    cdef void _deliver(self) except *:
        """``Engine._deliver`` after an event that reached this path's query alone."""
        engine, query = self.engine, self.query
        if engine._driven:  # not after a delivery: the general one, with this query in it
            engine._driven[query] = None
            engine._deliver()
            return
        if query._outbox and engine.queries.get(query.name) is query:
            failure = query._deliver()
            if failure is not None:
                raise failure
