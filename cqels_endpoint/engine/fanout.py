"""Which registered queries an event reaches: those it gives work, not every query reading its stream.

An event of stream ``s`` at ``t`` changes nothing in a query reading ``s`` when none of its triples
matches a pattern of the query and

- the query is *periodic* (``engine.continuous``), its origin set and its next close after ``t``:
  it is evaluated at closes only, so the event would neither close nor insert anything; or
- the query is *eager*, evaluated before (its Γ is what its inputs made it), emits only changes
  (ISTREAM or DSTREAM: RSTREAM emits Γ at every evaluation), and nothing leaves its windows at
  ``τ = max(t, clock)``: its evaluation at ``τ`` would change no input of Γ, so Γ stays and
  nothing is emitted. Only its clock moves to ``τ``, which ``FanOut`` applies when the query is
  next reached (``_catch_up``), before anything reads it.

A query whose windows count every statement of a stream (cqels2 ``[TRIPLES n]``, stream-wide), a
``STREAM ?s`` query, a query with ``SEQ`` (its operators keep time of their own), a directional
query, a query calling ``NOW()``, a query whose changes go to a Spark stage (``on_changes``) and
every query after a change of the static data or of a cache are reached by every event of the
streams they read, as before. The instances of a template are reached through one of them, which
runs their group's driver, itself indexed like a query (``InstanceGroup.hand``).

``FanOut`` keeps, per stream: the *units* reading it by the predicate ids their patterns can match
(all of a pattern with a variable predicate or an open path), those reached by every event, and a
heap of timers — each unit's next close (periodic) or the earliest time anything leaves its
windows (eager, ``WindowState.expiry``). A unit is the queries reading one set of shared window
states (``runtime.sharing``): they make identical window calls in lockstep, so they are reached
together (one of them reached by every event makes the whole unit so). An event reaches the units
its predicates name, those always reached and those whose timer is due, in registration order;
the others are not called at all, so an event costs the queries it gives work.

Skipped eager queries keep the clock and evaluation count they had until read (their ``clock`` and
``evaluations`` properties call ``_catch_up``): each stream's dispatched times never decrease
(every reader is caught up first when one does, after ``reset_clock``), so the clock a skipped
query would have is its stream's latest time when events came since it was last reached, and each
such event is one evaluation.

The queries of a unit read the same stream patterns, so an event's matches are the same for all:
in a unit of eager queries that route and window like any other (``_batched``), ``run`` routes an
event once and each query offers the matches to its window readers and evaluates, what its
``_on_event`` does, without the checks that cannot apply to it.

``CQELS_FANOUT=all`` reaches every reader with every event through its own ``_on_event`` (today's
path, for comparison);
``CQELS_FANOUT=audit`` also does, and checks that each query the index would have skipped emitted
nothing, kept its windows and moved its clock only as ``_catch_up`` would (the tests run it).

Where one unit of one plain query reads a stream (and only it), ``event_path`` makes the stream a
compiled *event path* (``engine/_eventpath.pyx``) that takes ``Engine.push``'s event in one call:
the steps of ``reached``, ``_note``, ``run`` and ``settle`` below on the same objects, with the
stream clock's and the engine's around them. It is dropped when a query comes or goes
(``CQELS_EVENT_PATH=off``: never made; the general path is its twin).

The same index gives each stream's *predicate filter* (``kept_predicates``): the ids of the
predicates its readers' patterns can match, which is all a query reads of an event, so the other
triples of an event released at once are never encoded (``Streams.push_batch``). It keeps every
triple (None) while a reader has a variable predicate, counts the stream's statements (a
stream-wide count window, a directional query), on every stream while a ``STREAM ?s`` query has
such a pattern (its predicates are kept on every stream otherwise: any stream may be one it reads),
and with ``CQELS_PREDICATE_FILTER=off``. It is worked out again after each registration or removal.
"""

from __future__ import annotations

import heapq
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.engine.continuous import ContinuousQuery
from cqels_endpoint.engine.instances import GroupDriver, InstanceQuery
from cqels_endpoint.engine.shared_plan import SharedPlan
from cqels_endpoint.query.kinds import R2S
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import stream_wide
from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python
from cqels_endpoint.runtime.streams import ENCODED_AS_THEY_ARE, Event, TripleForms, event_triples

if use_pure_python():
    EventPath = None  # every event takes the general path, the compiled one's twin
else:
    with compiled_imports("event path"):
        from cqels_endpoint.engine._eventpath import EventPath

MODES = ("index", "all", "audit")
_NOW = re.compile(r"\bNOW\s*\(", re.IGNORECASE)


class _Unit:
    """The queries reading one set of window states (registration order), reached together."""

    __slots__ = (
        "always", "batched", "held", "key", "members", "ordinal", "predicates", "queries", "removed",
        "routed", "seen", "settled", "streams", "synced", "targets", "timer_at", "version",
    )

    def __init__(self, query: ContinuousQuery, ordinal: int, predicates: dict[str, set[int] | None], held: list[int]) -> None:
        self.queries = [query]  # what it classifies and catches up: its queries, an instance group's driver
        # What the engine calls: its queries and the first instance of each group (which runs the
        # driver and hands the others their part: ``InstanceGroup.hand``), and each group's instances.
        self.targets: list[ContinuousQuery] = []
        self.members: dict[object, list[InstanceQuery]] = {}
        self.held = held  # the predicate ids it keys, each with a dictionary reference
        self.key: object = None  # its window states' keys (``FanOut._units``)
        self.ordinal = ordinal
        self.streams = tuple(sorted(query.streams))
        self.predicates = predicates  # by stream: the ids its patterns can match, None for any
        self.always = _always(query)  # reached by every event of its streams, whatever it holds
        self.seen: dict[str, int] = {}  # by stream: the serial of the last event when last reached
        self.version = 0  # bumped when its timer changes: the entries pushed before are stale
        self.timer_at: int | None = None  # the time of its live timer entries (None: none live)
        self.settled = False  # ``fresh`` said no: it stays so until a query joins
        self.synced = -1  # ``FanOut._serial`` when last caught up: nothing to catch up while equal
        self.removed = False
        # Whether its targets share the routing of an event (``FanOut.run``), and the event last
        # routed with its matches, until ``settle``.
        self.batched = False
        self.routed: tuple[Event, list] | None = None

    def fresh(self) -> bool:
        """Whether an event must reach it whatever it matches: never evaluated yet (an eager
        query's first evaluation may emit Γ's first rows, COUNT over nothing), no origin yet, or a
        query that must always be reached."""
        if self.settled:
            return False
        if self.always:
            return True
        for query in self.queries:
            if query.on_changes is not None or query.failure is not None:
                return True
            if query.schedule is None:
                if query.clock is None:
                    return True
            elif query.schedule.origin is None:
                return True
        self.settled = True
        return False

    def timer(self) -> int | None:
        """When it has work with no event matching: its next close (periodic) or the earliest
        time something leaves its windows (eager); None: not before a match."""
        query = self.queries[0]
        if query.schedule is not None:
            return query.schedule.next_close
        times = [time for window in query.windows if (time := window.expiry()) is not None]
        return min(times) if times else None


class _StreamIndex:
    """The units reading one stream (module docstring)."""

    __slots__ = ("always", "any_predicate", "by_predicate", "latest", "name", "serial", "timers", "units")

    def __init__(self, name: str) -> None:
        self.name = name
        self.units: set[_Unit] = set()
        self.by_predicate: dict[int, set[_Unit]] = {}
        self.any_predicate: set[_Unit] = set()
        self.always: set[_Unit] = set()
        self.timers: list[tuple[int, int, int, _Unit]] = []  # (time, ordinal, version, unit)
        self.serial = 0  # events dispatched
        self.latest: int | None = None  # the latest dispatched time (never decreasing: ``FanOut._note``)


class FanOut:
    """The index of the queries an event reaches (module docstring). ``dictionary``: the engine's
    term dictionary (the index holds a reference on each predicate id it keys)."""

    def __init__(self, dictionary, mode: str | None = None) -> None:
        mode = mode or os.environ.get("CQELS_FANOUT") or "index"
        if mode not in MODES:
            msg = f"CQELS_FANOUT is one of {', '.join(MODES)}, not {mode!r}"
            raise ValueError(msg)
        self.mode = mode
        self._dictionary = dictionary
        self._ordinals = itertools.count()
        self._streams: dict[str, _StreamIndex] = {}
        self._units: dict[object, _Unit] = {}
        self._unit_of: dict[ContinuousQuery, _Unit] = {}
        self._everywhere: list[ContinuousQuery] = []  # STREAM ?s queries: any stream may be theirs
        # The predicate ids each STREAM ?s query's patterns can match, on whichever stream (None: any).
        self._everywhere_predicates: dict[ContinuousQuery, tuple[set[int] | None, list[int]]] = {}
        self._order: dict[ContinuousQuery, int] = {}
        self._reach_all = False  # the next event reaches every unit (static data changed)
        self._serial = 0  # events dispatched on any stream
        filtering = os.environ.get("CQELS_PREDICATE_FILTER") or "on"
        if filtering not in ("on", "off"):
            msg = f"CQELS_PREDICATE_FILTER is on or off, not {filtering!r}"
            raise ValueError(msg)
        self.filtering = filtering == "on"
        self._kept: dict[str, frozenset[int] | None] = {}  # kept_predicates by stream, until a query comes or goes
        paths = os.environ.get("CQELS_EVENT_PATH") or "on"
        if paths not in ("on", "off"):
            msg = f"CQELS_EVENT_PATH is on or off, not {paths!r}"
            raise ValueError(msg)
        self._making_paths = paths == "on" and EventPath is not None and mode == "index"
        # By stream: its compiled event path (``event_path``; None: it has none), until a query comes or goes.
        self.paths: dict[str, EventPath | None] = {}

    # ------------------------------------------------------------------ registration

    def add(self, query: ContinuousQuery) -> None:
        """``query`` now reads its streams (an instance: its group's driver does)."""
        self._order[query] = next(self._ordinals)
        self._kept.clear()
        self._drop_paths()
        if query._variable:
            self._everywhere.append(query)
            held: list[int] = []
            predicates = self._predicates(query, held).values()
            wanted = None if None in predicates or not _reads_matches_only(query) else set().union(*predicates)
            self._everywhere_predicates[query] = (wanted, held)
            return
        driven = query.view.group.driver if isinstance(query, InstanceQuery) else query
        key = tuple(window.state_key for window in query.windows) if query.windows else object()
        unit = self._units.get(key)
        if unit is None:
            held: list[int] = []
            unit = self._units[key] = _Unit(driven, self._order[query], self._predicates(driven, held), held)
            unit.key = key
            for stream in unit.streams:
                index = self._streams.get(stream)
                if index is None:
                    index = self._streams[stream] = _StreamIndex(stream)
                unit.seen[stream] = index.serial
                index.units.add(unit)
                predicates = unit.predicates.get(stream, set())
                if predicates is None:
                    index.any_predicate.add(unit)
                else:
                    for predicate in predicates:
                        index.by_predicate.setdefault(predicate, set()).add(unit)
        unit.settled = False
        if unit.queries and driven not in unit.queries:
            unit.queries.append(driven)
            unit.always = unit.always or _always(driven)
        if driven is query:
            unit.targets.append(query)
        else:
            members = unit.members.setdefault(driven, [])
            if not members:
                unit.targets.append(query)
            members.append(query)
        self._unit_of[query] = unit
        unit.batched = self.mode != "all" and _batched(unit.targets)
        driven._behind = lambda: unit.synced == self._serial or self._catch_up(unit)
        self._classify(unit)

    def remove(self, query: ContinuousQuery) -> None:
        """``query`` was unregistered or failed."""
        self._order.pop(query, None)
        self._kept.clear()
        self._drop_paths()
        if query in self._everywhere:
            self._everywhere.remove(query)
            self._dictionary.decref_many(self._everywhere_predicates.pop(query)[1])
            return
        unit = self._unit_of.pop(query, None)
        if unit is None:
            return
        self._catch_up(unit)
        if isinstance(query, InstanceQuery):
            driver = query.view.group.driver
            members = unit.members[driver]
            members.remove(query)
            if query in unit.targets:
                unit.targets.remove(query)
                if members:
                    unit.targets.append(members[0])
            if not members:
                del unit.members[driver]
                unit.queries.remove(driver)
        else:
            query._behind = None
            unit.targets.remove(query)
            unit.queries.remove(query)
        unit.batched = self.mode != "all" and _batched(unit.targets)
        if unit.queries:
            return
        unit.removed = True
        del self._units[unit.key]
        for stream in unit.streams:
            index = self._streams[stream]
            for group in (index.units, index.any_predicate, index.always, *index.by_predicate.values()):
                group.discard(unit)
            for predicate in unit.predicates.get(stream) or ():
                if not index.by_predicate.get(predicate, True):
                    del index.by_predicate[predicate]
        self._dictionary.decref_many(unit.held)

    def _predicates(self, query: ContinuousQuery, held: list[int]) -> dict[str, set[int] | None]:
        predicates: dict[str, set[int] | None] = {}
        for st in query.patterns:
            stream = st.stream.value if st.variable is None else f"?{st.variable}"
            if st.predicates is None:
                predicates[stream] = None
            elif predicates.get(stream, set()) is not None:
                ids = [self._dictionary.encode(term) for term in st.predicates]
                held.extend(ids)
                predicates.setdefault(stream, set()).update(ids)
        return predicates

    def kept_predicates(self, stream: str) -> frozenset[int] | None:
        """The predicate filter of ``stream`` (module docstring): the ids of the predicates some
        registered query's patterns on it can match; None when every triple must be kept."""
        if stream in self._kept:
            return self._kept[stream]
        kept: set[int] | None = set()
        index = self._streams.get(stream)
        if not self.filtering:
            kept = None
        else:
            for wanted, _held in self._everywhere_predicates.values():
                if wanted is None:
                    kept = None
                    break
                kept.update(wanted)
        if kept is not None and index is not None:
            for unit in index.units:
                predicates = unit.predicates.get(stream, set())
                if predicates is None or not all(map(_reads_matches_only, unit.queries)):
                    kept = None
                    break
                kept.update(predicates)
        self._kept[stream] = None if kept is None else frozenset(kept)
        return self._kept[stream]

    def event_path(self, stream: str, engine, wall_clock) -> EventPath | None:
        """Makes and keeps in ``paths`` the compiled path of ``stream``'s events
        (``engine/_eventpath.pyx``) where one unit reads it, made of one plain query (no template
        instance, directional query, ``STREAM ?s`` or stream-wide count window) reading only that
        stream; None elsewhere. ``engine``: the ``Engine``; ``wall_clock``: its default arrival clock."""
        path = None
        index = self._streams.get(stream)
        if self._making_paths and index is not None and len(index.units) == 1 and not self._everywhere:
            (unit,) = index.units
            (query, *others) = unit.targets
            if (
                not others and unit.queries == [query] and type(query) is ContinuousQuery and unit.streams == (stream,)
                and query.windows and not query._variable and not any(stream_wide(st.window) for st in query.patterns)
            ):
                path = EventPath(
                    engine, stream, self, index, unit, query,
                    wall_clock=wall_clock, triple_types=ENCODED_AS_THEY_ARE, forms=TripleForms, event_triples=event_triples,
                )
        self.paths[stream] = path
        return path

    def _drop_paths(self) -> None:
        """A query comes or goes: each stream's event path is made again (``event_path``)."""
        for path in self.paths.values():
            if path is not None:
                path.valid = False
        self.paths.clear()

    def static_changed(self) -> None:
        """The static data or a query's caches changed: every query shows it at its next evaluation."""
        self._reach_all = True

    # ------------------------------------------------------------------ dispatch

    def reached(self, event: Event, queries: Mapping[str, ContinuousQuery]) -> tuple[list[ContinuousQuery], list[_Unit]]:
        """The queries ``event`` reaches, in registration order (``queries``: the registered ones
        by name, in that order), caught up, and the units they form (``settle`` them after)."""
        index = self._streams.get(event.stream)
        if index is not None and index.latest is not None and event.time < index.latest:
            # Only after a reset_clock: the readers catch up first, so that ``latest`` stays the
            # largest time of the events a skipped query missed.
            for unit in index.units:
                self._catch_up(unit)
        if self.mode != "index" or self._reach_all:
            self._reach_all = False
            units = list(self._units.values())
            self._note(index, event.time, units)
            return [q for q in list(queries.values()) if q.reads(event.stream)], units
        if index is not None and len(index.units) == 1 and not self._everywhere:
            return self._reached_alone(index, event)
        units: set[_Unit] = set()
        if index is not None:
            units.update(index.always)
            units.update(index.any_predicate)
            by_predicate = index.by_predicate
            ids = event.ids
            for start in range(1, len(ids), 3):
                found = by_predicate.get(ids[start])
                if found is not None:
                    units.update(found)
            timers = index.timers
            while timers and timers[0][0] <= event.time:
                _time, _ordinal, version, unit = heapq.heappop(timers)
                if version == unit.version and not unit.removed:
                    units.add(unit)
                    unit.timer_at = None  # due: pushed again when settled
        self._note(index, event.time, units)
        reached = [query for unit in units for query in unit.targets]
        reached.extend(query for query in self._everywhere if query.reads(event.stream))
        order = self._order
        reached.sort(key=order.__getitem__)
        return reached, list(units)

    def _reached_alone(self, index: _StreamIndex, event: Event) -> tuple[list[ContinuousQuery], list[_Unit]]:
        """``reached`` where one unit reads the stream and no ``STREAM ?s`` query any: the same
        answer and timer pops, without the sets and the sort (a lone query, or queries sharing
        all their windows)."""
        (unit,) = index.units
        reached = False
        timers = index.timers
        while timers and timers[0][0] <= event.time:
            _time, _ordinal, version, due = heapq.heappop(timers)
            if version == due.version and not due.removed:  # the stream's only live unit
                reached = True
                due.timer_at = None  # due: pushed again when settled
        if not reached:
            reached = unit in index.always or unit in index.any_predicate
        if not reached:
            by_predicate, ids = index.by_predicate, event.ids
            for start in range(1, len(ids), 3):
                if by_predicate.get(ids[start]):
                    reached = True
                    break
        if not reached:
            self._note(index, event.time, ())
            return [], []
        self._note(index, event.time, (unit,))
        targets = list(unit.targets)
        if len(targets) > 1:
            targets.sort(key=self._order.__getitem__)
        return targets, [unit]

    def run(self, query: ContinuousQuery, event: Event, seqs: Iterator[int], step: int) -> None:
        """Hands ``event`` to ``query``, one of those ``reached`` gave. The queries of a unit read
        the same stream patterns through the same window states: in a unit of eager queries, each
        with routers and windows like any other (``_batched``), the event is routed once for all
        (``ContinuousQuery._route``, kept until ``settle``) and each query offers the matches to its
        windows and evaluates, the calls of its ``_on_event`` without the checks that cannot apply."""
        shared = query._shared
        if shared is None:
            unit = self._unit_of.get(query)
            if unit is None or not unit.batched or query.on_changes is not None:
                query._on_event(event, seqs, step)
                return
            routed = unit.routed
            if routed is None or routed[0] is not event:
                # The unit's first query in this event: from its first event on, its queries
                # share one window buffer where they can (``engine.shared_plan``).
                shared = SharedPlan.make(unit.targets, _always)
                if shared is None:
                    unit.routed = (event, query._route(event))
        query._received = event.received
        clock = query._clock  # caught up by ``reached``
        tau = event.time if clock is None or clock < event.time else clock
        if shared is not None:
            if shared.round != step:  # the unit's first query in this event feeds and punctuates for all
                shared.start(step, tau, event, query, seqs)
            query._evaluate_shared(tau)
            return
        query._offer(event, unit.routed[1], tau, seqs)
        query._evaluate(tau)

    def skipped(self, event: Event, units: list[_Unit]) -> set[ContinuousQuery]:
        """In ``audit`` mode, the queries of ``units`` that the index would not have reached."""
        index = self._streams.get(event.stream)
        if index is None:
            return set()
        predicates = {event.ids[start] for start in range(1, len(event.ids), 3)}
        skipped = set()
        for unit in units:
            if event.stream not in unit.streams or unit.fresh():
                continue
            wanted = unit.predicates.get(event.stream, set())
            if wanted is None or wanted & predicates:
                continue
            timer = unit.timer()
            if timer is None or timer > event.time:
                skipped.update(unit.targets)
        return skipped

    def audit(self, query: ContinuousQuery, event: Event):
        """For a query ``skipped`` would skip: a check, to call after the event ran it, that it
        emitted nothing, kept its windows and moved its clock only as ``_catch_up`` does."""
        outbox, sizes, clock = len(query._outbox), [len(window) for window in query.windows], query.clock
        expected = clock if query.schedule is not None else max(clock, event.time)

        def check() -> None:
            after = (len(query._outbox), [len(window) for window in query.windows], query.clock)
            if after != (outbox, sizes, expected):
                msg = f"query {query.name!r} skipped at {event.time} on <{event.stream}>: {after} after, not {(outbox, sizes, expected)}"
                raise AssertionError(msg)

        return check

    def settle(self, units: Iterable[_Unit]) -> None:
        """``units`` were reached (by an event or an advance): their timers and classes anew."""
        for unit in units:
            unit.routed = None
            if not unit.removed:
                self._classify(unit)

    def before_advance(self) -> list[_Unit]:
        """An advance reaches every query: all are caught up first; returns the units to settle."""
        units = list(self._units.values())
        for unit in units:
            self._catch_up(unit)
        return units

    def _classify(self, unit: _Unit) -> None:
        fresh = unit.fresh()
        timer = None if fresh else unit.timer()
        if timer != unit.timer_at:
            unit.version += 1  # the entries pushed for another time are stale
        for stream in unit.streams:
            index = self._streams[stream]
            if fresh:
                index.always.add(unit)
                continue
            index.always.discard(unit)
            if timer is not None and timer != unit.timer_at:
                heapq.heappush(index.timers, (timer, unit.ordinal, unit.version, unit))
        unit.timer_at = timer

    def _note(self, index: _StreamIndex | None, time: int, reached: Iterable[_Unit]) -> None:
        """An event at ``time`` is dispatched on ``index``'s stream (None: no unit reads it) and
        reaches the ``reached`` units, caught up to the event before it."""
        serial = self._serial
        for unit in reached:
            if unit.synced != serial:  # else no event came since it was last caught up
                self._catch_up(unit)
        self._serial += 1
        if index is not None:
            index.latest = time
            index.serial += 1
        for unit in reached:
            if index is not None and unit in index.units:
                unit.seen[index.name] = index.serial
            unit.synced = self._serial

    def _catch_up(self, unit: _Unit) -> None:
        """Counts the evaluations of the events an eager unit's queries skipped (their evaluator's
        too, which ``explain`` shows) and moves their clocks where those evaluations would have."""
        unit.synced = self._serial
        for stream in unit.streams:
            index = self._streams[stream]
            skipped = index.serial - unit.seen[stream]
            if skipped:
                unit.seen[stream] = index.serial
                for query in unit.queries:
                    if query.schedule is None and query._clock is not None:
                        query._evaluations += skipped
                        query.evaluator.evaluations += skipped
                        query._clock = max(query._clock, index.latest)


def _batched(targets: list[ContinuousQuery]) -> bool:
    """Whether ``FanOut.run`` routes an event once for ``targets``, the queries of one unit: two or
    more (so no query feeds its windows alone, ``ContinuousQuery._fed``), each a plain eager query
    naming its streams, with no stream-wide count window (those count every statement first)."""
    return len(targets) > 1 and all(
        type(query) is ContinuousQuery and query.schedule is None and not query._variable
        and not any(stream_wide(st.window) for st in query.patterns)
        for query in targets
    )


def _always(query: ContinuousQuery) -> bool:
    """Whether every event of its streams must reach ``query`` (module docstring)."""
    if type(query) not in (ContinuousQuery, GroupDriver):
        return True  # directional queries: their own anchors and closes
    if query.schedule is None and query.r2s is R2S.RSTREAM:
        return True
    if any(stream_wide(st.window) for st in query.patterns):
        return True
    if _NOW.search(query.text):
        return True  # its re-evaluation (recompute mode) reads the wall clock again each time
    return any(isinstance(node, n.Seq) for node in walk(query.algebra.pattern))


def _reads_matches_only(query: ContinuousQuery) -> bool:
    """Whether ``query`` reads nothing of an event but the triples its patterns match: not when a
    window counts every statement of the stream (cqels2 ``[TRIPLES n]``, stream-wide), nor a
    directional query (its anchors count statements)."""
    return type(query) in (ContinuousQuery, GroupDriver) and not any(stream_wide(st.window) for st in query.patterns)
