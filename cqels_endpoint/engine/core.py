"""The continuous engine: ``Engine`` registers queries, feeds them stream events and delivers their emissions.

The engine owns time. It converts and orders stream events (``runtime.streams``), keeps one
window state per stream triple pattern of each registered query (``runtime.windows``; per stream
for a ``STREAM ?var`` pattern), routes each event to the queries that read its stream, decides
when a query is evaluated, and turns the signed deltas of ``Γ`` into R2S emissions. How ``Γ`` is
computed is the evaluator's business (``evaluator.Evaluator``): ``mode="incremental"``
(``incremental.IncrementalEvaluator``) or ``mode="recompute"`` (``recompute.RecomputeEvaluator``,
the oracle); the two modes differ in nothing else.

When a query is evaluated:

- *eager* (no periodic window): after every event of any stream it reads, at that event's
  timestamp, and at every ``advance(τ)``. Its clock never goes backwards: an event of a stream that
  lags behind another stream the query reads is evaluated at the query's current time (its triples
  keep their own timestamps, so they may already be outside a ``RANGE`` window);
- *periodic* (any ``RANGE … SLIDE``/``STEP``/``TUMBLING`` window): only at close times
  ``o + kβ`` (the union over its slides), ``o`` its first event's timestamp unless ``origin_ms``
  was given. The first event with ``t ≥ c``, or ``advance(τ ≥ c)``, closes ``c``; a long gap closes
  every missed ``c`` in order. The triggering event is inserted after the closes it triggers.

>>> engine = Engine()
>>> q = engine.register(
...     "SELECT ?who WHERE { STREAM <http://ex.org/s> [RANGE 10ms] { ?who <http://ex.org/at> ?room } }",
...     mode="recompute", r2s="RSTREAM")
>>> seen = []
>>> _ = q.subscribe(seen.append)
>>> engine.push("http://ex.org/s", "<http://ex.org/ann> <http://ex.org/at> <http://ex.org/hall> .", time=5)
>>> engine.advance(15)
>>> [(e.time, [row["who"].value for row in e.rows]) for e in seen]
[(5, ['http://ex.org/ann']), (15, [])]
"""

from __future__ import annotations

import itertools
import logging
import threading
import time as _time
from collections.abc import Callable, Mapping, Sequence

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.parameters import Template, bind_parameters, make_template, with_instance_table
from cqels_endpoint.algebra.passes import optimize
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.caches.delta import CacheDelta
from cqels_endpoint.caches.engines import CacheBuild, CacheEngine
from cqels_endpoint.caches.rebuild import CacheRebuilder, CacheState
from cqels_endpoint.config import DEFAULT_STREAM_BASE
from cqels_endpoint.engine.clocks import ClockStore
from cqels_endpoint.engine.continuous import ContinuousQuery, declared_windows
from cqels_endpoint.engine.directional import EARLY_AND_FINAL, ON_CLOSE, ON_UPDATE, AnchoredEvaluators, DirectionalQuery, directional_windows, query_r2s
from cqels_endpoint.engine.emission import Term
from cqels_endpoint.engine.evaluator import Evaluator, Mode
from cqels_endpoint.engine.fanout import FanOut
from cqels_endpoint.engine.incremental import IncrementalEvaluator
from cqels_endpoint.engine.instances import GroupDriver, InstanceGroup, InstanceQuery
from cqels_endpoint.engine.recompute import RecomputeEvaluator
from cqels_endpoint.errors import ArgumentError, PlanError, SharingError, UnknownQueryError
from cqels_endpoint.oxigraph.requests import CQELS_REQUESTS
from cqels_endpoint.oxigraph.terms import ast_term
from cqels_endpoint.plan.patterns import StreamTriple, stream_triples
from cqels_endpoint.query.dialects import Dialect
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.query.parameters import declared_parameters
from cqels_endpoint.query.parser import parse_query
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.runtime.limits import LimitExceeded, Limits
from cqels_endpoint.runtime.sharing import SharedWindows
from cqels_endpoint.runtime.streams import TIME_MAX_MS, TIME_MIN_MS, Event, Streams, event_triples, to_millis
from cqels_endpoint.spark import cache_engine as make_cache_engine
from cqels_endpoint.terms import IRI, Var
from static_store import StaticStore

log = logging.getLogger("cqels_endpoint.engine")


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the timestamp of an event pushed without one."""
    return _time.time_ns() // 1_000_000


class Engine:
    """Registers continuous queries and feeds them stream events.

    ``store``: a ``static_store.StaticStore``, a ``pyoxigraph.Store`` (read through a wrapper, so
    writes made to it directly raise no change events) or None (no static data).
    ``lateness_ms``: how far behind its stream's latest timestamp an event may be
    (docs/ARCHITECTURE.md, "Windows and time"); ``max_future_ms``: how far ahead of the arrival
    clock an event may be (None: no bound; ``runtime.streams``). ``keep_clocks`` keeps the stream
    clocks in a data directory across restarts.
    ``clock``: the arrival clock for events pushed without a time (wall clock by default;
    ``testing.ManualClock`` in tests). Thread-safe: calls are serialised by one lock.
    ``cache_engine``: what computes the static caches of incremental queries, "local" (pyoxigraph),
    "spark" or a ``caches.CacheEngine``; ``rebuild_debounce_ms``: how long the store must stay
    quiet after a change before the caches reading it are rebuilt (``caches.rebuild``);
    ``cache_install_rows``: how many changed rows of a cache are applied per hold of the lock, so
    that installing a large cache never holds up pushes for long (``_stage_caches``).
    ``limits``: what one query may hold or compute (``runtime.limits.Limits``; none by default).
    A query that goes past them, or raises otherwise while it is driven, fails alone: it is
    stopped, its state released, its observers told (``observe``) and it is kept in ``failed``,
    with its ``failure``, until ``unregister``; ``push`` and ``advance`` go on for the others.
    """

    def __init__(
        self,
        store=None,
        lateness_ms: int = 0,
        *,
        clock: Callable[[], int] | None = None,
        cache_engine: str | CacheEngine = "local",
        rebuild_debounce_ms: int = 200,
        limits: Limits | None = None,
        cache_install_rows: int = 1000,
        max_future_ms: int | None = None,
        stream_base: str = DEFAULT_STREAM_BASE,
        dialect: str = Dialect.AUTO,
    ):
        if cache_install_rows < 1:
            msg = f"cache_install_rows must be ≥ 1, not {cache_install_rows}"
            raise ArgumentError(msg)
        self.cache_install_rows = cache_install_rows
        self.stream_base = stream_base  # what a bare stream name in a query stands under (parse_query)
        self.dialect = Dialect.choose(dialect, "dialect")  # what a query registered without one reads as
        self.store = _static_store(store)
        self.limits = limits or Limits()
        # A cache engine made here from its name is this Engine's to close; one passed in is the caller's.
        self._owns_cache_engine = isinstance(cache_engine, str)
        if isinstance(cache_engine, str):
            cache_engine = make_cache_engine(cache_engine)
        self.caches = CacheRebuilder(self.store, cache_engine, self._swap_caches, rebuild_debounce_ms)
        self.streams = Streams(lateness_ms, max_future_ms)
        self.clock_store: ClockStore | None = None  # keep_clocks: the clocks' files in a data directory
        self.clock = clock or wall_clock_ms
        self.queries: dict[str, ContinuousQuery] = {}
        self.failed: dict[str, ContinuousQuery] = {}  # stopped by a failure, until unregistered
        self.dictionary = TermDictionary()
        self.fanout = FanOut(self.dictionary)  # which queries an event reaches (engine.fanout)
        self._driven: dict[ContinuousQuery | None, None] = {}  # reached since the last delivery (None: all)
        self._lock = threading.RLock()
        self._seqs = itertools.count()
        self._numbers = itertools.count(1)
        self._static_changed = False
        self._registering: set[str] = set()  # names taken by registrations building their caches
        self._observers: list[Callable[[ContinuousQuery, bool], None]] = []
        self.shared_windows = SharedWindows(self.limits)
        # Instance groups (instances.py): by (template, R2S, origin, epoch) while they take new
        # instances, and by name for their caches.
        self._instance_groups: dict[tuple, InstanceGroup] = {}
        self._groups_by_name: dict[str, InstanceGroup] = {}
        self._group_numbers = itertools.count(1)
        # Bumped at every event dispatched and every advance: queries registered at one epoch
        # start from the same window history and may share window states (runtime.sharing).
        self._epoch = 0
        self._unsubscribe_store = self.store.subscribe(self._on_static_change) if self.store is not None else None

    @property
    def lateness_ms(self) -> int:
        return self.streams.lateness_ms

    def keep_clocks(self, directory: object) -> int:
        """Keeps every stream's clock in ``directory`` (``engine.clocks``) from now on, after putting
        back the clocks and buffered events saved there; returns how many streams it restored.
        Called once, before the first push (``ClockFileError`` for unreadable files)."""
        with self._lock:
            if self.clock_store is not None or self.streams.clocks:
                msg = "keep_clocks is called once, before any stream is seen"
                raise ArgumentError(msg)
            store = ClockStore(directory, self.streams, self.dictionary)
            restored = store.restore()
            self.clock_store = store
            return restored

    def register(
        self,
        text: str,
        name: str | None = None,
        r2s: str | None = None,
        mode: str = "incremental",
        origin_ms: int | None = None,
        dialect: str | None = None,
    ) -> ContinuousQuery:
        """Parses, plans and starts a continuous query (SELECT, CONSTRUCT or ASK reading at least one stream).

        ``name`` defaults to the REGISTER name, else ``q1``, ``q2``, …; ``r2s`` to the REGISTER
        keyword, else ISTREAM (RSTREAM for a directional query in the cqels2 dialect: one result
        per anchor, ``directional.query_r2s``); ``dialect`` ("auto", "cqels", "cqels2",
        ``query.dialects``) to the engine's. Raises ``QuerySyntaxError`` for bad text,
        ``PlanError`` for a query the engine cannot run, ``ArgumentError`` (a ``ValueError``) for a
        bad argument or a name already in use.
        """
        return self.register_algebra(self.translate(text, dialect), text, name, r2s, mode, origin_ms)

    def translate(self, text: str, dialect: str | None = None) -> n.AlgebraQuery:
        """The algebra of ``text`` as this engine reads it: bare stream names under its
        ``stream_base``, in ``dialect`` (None: the engine's)."""
        return to_algebra(parse_query(text, stream_base=self.stream_base), dialect=dialect or self.dialect)

    def register_algebra(
        self,
        algebra: n.AlgebraQuery,
        text: str,
        name: str | None = None,
        r2s: str | None = None,
        mode: str = "incremental",
        origin_ms: int | None = None,
    ) -> ContinuousQuery:
        """``register`` of a query already translated (``text`` is what error messages and
        ``explain`` quote): a partition of a Spark job runs the part of a query below its global
        stage (``plan.partitioning``)."""
        mode = Mode.choose(mode, "mode")
        return self._register(text, self._prepare(algebra, r2s), name, mode, origin_ms)

    def _register(
        self, text: str, planned: tuple[n.AlgebraQuery, R2S, list[StreamTriple]], name: str | None, mode: Mode, origin_ms: int | None
    ) -> ContinuousQuery:
        algebra, r2s, patterns = planned
        with self._lock:
            name = self._name(name, algebra.register)
            evaluator = self._evaluator(mode, algebra, patterns, name)
            self._registering.add(name)
        # The initial caches are built outside the lock so that a slow cache engine does not hold
        # up the running queries; the query is not visible before they are installed.
        try:
            states, builds, version = self.caches.build(name, algebra, evaluator.caches)
            self._stage_initial(evaluator, states, builds)
        except BaseException:
            with self._lock:
                self._registering.discard(name)
                evaluator.close()  # drops the dictionary references its plan took
            raise
        with self._lock:
            self._registering.discard(name)
            self._adopt_caches(name, evaluator, states)
            if isinstance(evaluator, AnchoredEvaluators):
                query = DirectionalQuery(name, text, algebra, r2s, mode, patterns, evaluator, origin_ms, limits=self.limits)
            else:
                windows = self.shared_windows.readers(patterns, origin_ms, self._epoch)
                query = ContinuousQuery(name, text, algebra, r2s, mode, patterns, evaluator, origin_ms, windows)
            self.queries[name] = query
            self.fanout.add(query)
            self._set_lateness()
            self.caches.install(name, algebra, states, version)
            for observer in list(self._observers):
                observer(query, True)
        return query

    def template(self, text: str, parameters: Sequence[str] = (), dialect: str | None = None) -> Template:
        """A parameterised query: ``text`` parsed once, its parameters those its ``# @param ?var``
        lines declare followed by ``parameters`` (names without ``?``), read in ``dialect`` (None:
        the engine's). Raises what ``register`` would for the template, and ``QuerySyntaxError``
        for a bad or unused parameter."""
        parsed = parse_query(text, stream_base=self.stream_base)
        return make_template(parsed, (*declared_parameters(text), *parameters), dialect or self.dialect)

    def check_template(self, template: Template, r2s: str | None = None, mode: str = "incremental") -> None:
        """Raises what registering an instance of ``template`` would for its query, ``r2s`` and ``mode``."""
        self._check(template.algebra, r2s, mode)

    def register_instances(
        self,
        template: Template,
        instances: Sequence[tuple[str, Mapping[str, Term]]],
        r2s: str | None = None,
        mode: str = "incremental",
        origin_ms: int | None = None,
        group: str = "instances",
    ) -> list[ContinuousQuery]:
        """Registers instances of ``template`` (``Engine.template``), all or none; returns their
        queries in order. ``instances`` holds ``(name, {parameter: pyoxigraph term})`` per instance.

        An instance is the template's algebra with its parameters bound (``algebra.parameters``).
        The incremental instances registered at one epoch share one plan (``instances.py``, named
        ``{group}#k`` in cache statistics); where they cannot, or in recompute mode, each instance
        is registered with a plan of its own, and its ``unshared`` says why.
        """
        mode = Mode.choose(mode, "mode")
        for name, bindings in instances:
            missing = [p for p in template.parameters if p not in bindings]
            extra = [p for p in bindings if p not in template.parameters]
            if missing or extra:
                msg = f"instance {name!r} binds {', '.join(map(repr, bindings))}, not the parameters {', '.join(template.parameters)}"
                raise ArgumentError(msg)
        reason = "recompute mode evaluates each instance on its own" if mode is not Mode.INCREMENTAL else None
        if reason is None and directional_windows(template.algebra, stream_triples(template.algebra)):
            reason = "a directional window is read at each instance's own anchors"
        if reason is None:
            algebra, r2s_kind, patterns = self._prepare(with_instance_table(template.algebra), r2s)
            try:
                queries = self._register_shared(template, algebra, r2s_kind, patterns, instances, origin_ms, group)
            except SharingError as error:
                reason = str(error)
            else:
                return queries
        queries = []
        try:
            for name, bindings in instances:
                bound = bind_parameters(template.algebra, {p: ast_term(term) for p, term in bindings.items()})
                queries.append(self._register(template.text, self._prepare(bound, r2s), name, mode, origin_ms))
                queries[-1].unshared = reason
        except BaseException:
            for query in queries:
                self.unregister(query.name)
            raise
        return queries

    def _register_shared(self, template, algebra, r2s, patterns, instances, origin_ms, group) -> list[ContinuousQuery]:
        with self._lock:
            names = [name for name, _bindings in instances]
            for number, name in enumerate(names):
                self._name(name, None)
                if name in names[:number]:
                    raise ArgumentError(f"two instances are named {name!r}")
            key = (template.text, template.parameters, r2s, origin_ms, self._epoch)
            existing = self._instance_groups.get(key)
            if existing is not None:
                return self._start_instances(existing, instances)
            instance_group = self._new_group(group, template, algebra, r2s, patterns, origin_ms)
            self._registering.update(names)
        try:
            states, builds, version = self.caches.build(instance_group.name, algebra, instance_group.caches)
            self._stage_initial(instance_group.evaluator, states, builds)
        except BaseException:
            with self._lock:
                self._registering.difference_update(names)
                instance_group.close()
            raise
        with self._lock:
            self._registering.difference_update(names)
            self._adopt_caches(instance_group.name, instance_group.evaluator, states)
            # The windows are joined now, at the epoch the instances start (events may have come
            # during the build), as ``register`` joins them.
            instance_group.driver.windows = self.shared_windows.readers(patterns, origin_ms, self._epoch)
            self._groups_by_name[instance_group.name] = instance_group
            # Only instances of this epoch may join it later: later ones start from another history.
            self._instance_groups.setdefault(key, instance_group)
            self.caches.install(instance_group.name, algebra, states, version)
            return self._start_instances(instance_group, instances)

    def _new_group(
        self, group: str, template: Template, algebra: n.AlgebraQuery, r2s: R2S, patterns: list[StreamTriple], origin_ms: int | None
    ) -> InstanceGroup:
        """A group whose driver has no windows yet (``_register_shared`` joins them when it starts)."""
        evaluator = IncrementalEvaluator(algebra, patterns, self.store, self.dictionary, self.limits.max_tick_rows)
        name = f"{group}#{next(self._group_numbers)}"
        driver = GroupDriver(name, template.text, algebra, r2s, Mode.INCREMENTAL, patterns, evaluator, origin_ms)
        instance_group = InstanceGroup(driver, self._drop_group)
        instance_group.on_taken = lambda queries: self._driven.update(dict.fromkeys(queries))
        return instance_group

    def _stage_initial(self, evaluator: Evaluator, states: list[CacheState], builds: list[CacheBuild]) -> None:
        """Stages the initial builds of a query not registered yet (``_adopt_caches`` releases them)."""
        self._stage_caches(lambda: evaluator, [(state.operator, CacheDelta(build.rows, [])) for state, build in zip(states, builds)])

    def _adopt_caches(self, name: str, evaluator: Evaluator, states: list[CacheState]) -> None:
        """Releases the staged initial builds of the caches of ``name`` (a query or an instance
        group), before its first evaluation. Under the lock."""
        if states:
            evaluator.release_caches([state.operator for state in states])
            evaluator.describe_cache = lambda node: self.caches.describe(name, node.id)

    def _start_instances(self, instance_group: InstanceGroup, instances) -> list[ContinuousQuery]:
        views = instance_group.add(bindings for _name, bindings in instances)
        queries = []
        for (name, _bindings), view in zip(instances, views):
            query = InstanceQuery.of(instance_group.driver, name, instance_group.driver.text, view)
            self.queries[name] = query
            self.fanout.add(query)
            queries.append(query)
        for query in queries:
            for observer in list(self._observers):
                observer(query, True)
        return queries

    def _drop_group(self, instance_group: InstanceGroup) -> None:
        self.caches.forget(instance_group.name)
        self._groups_by_name.pop(instance_group.name, None)
        for key, held in list(self._instance_groups.items()):
            if held is instance_group:
                del self._instance_groups[key]

    def plan_sharing(self) -> dict[str, int]:
        """``plans``: instance groups running; ``instances``: the queries they evaluate."""
        with self._lock:
            groups = self._groups_by_name.values()
            return {"plans": len(groups), "instances": sum(len(g) for g in groups)}

    def check(self, text: str, r2s: str | None = None, mode: str = "incremental", dialect: str | None = None) -> None:
        """Raises what ``register`` would for ``text``, ``r2s``, ``mode`` and ``dialect`` (bad text,
        a plan the engine cannot run, a bad argument) without registering anything or building a cache."""
        self._check(self.translate(text, dialect), r2s, mode)

    def _check(self, algebra: n.AlgebraQuery, r2s: str | None, mode: str) -> None:
        mode = Mode.choose(mode, "mode")
        algebra, _, patterns = self._prepare(algebra, r2s)
        with self._lock:  # a plan takes references in the shared term dictionary
            self._evaluator(mode, algebra, patterns, "check").close()

    def _prepare(self, algebra: n.AlgebraQuery, r2s: str | None) -> tuple[n.AlgebraQuery, R2S, list[StreamTriple]]:
        """The optimised algebra of a query to register, its R2S operator and its stream patterns."""
        algebra = optimize(algebra)
        if algebra.form not in (QueryForm.SELECT, QueryForm.CONSTRUCT, QueryForm.ASK):
            msg = (
                f"a continuous query must be a SELECT, a CONSTRUCT or an ASK, not {algebra.form}: "
                "run it once on the static store"
            )
            raise PlanError(msg)
        patterns = stream_triples(algebra)
        r2s_kind = query_r2s(r2s, algebra, patterns)
        if not patterns and not declared_windows(algebra):
            msg = "a continuous query reads at least one stream (STREAM, FROM STREAM or WINDOW): run it once on the static store"
            raise PlanError(msg)
        variable = next((st for st in patterns if st.variable is not None), None)
        if variable is not None:
            _check_stream_variable(algebra, patterns, variable)
        return algebra, r2s_kind, patterns

    def unregister(self, name: str) -> None:
        """Stops the query ``name``, or forgets it if it failed (``UnknownQueryError`` if there is none)."""
        with self._lock:
            query = self.queries.pop(name, None)
            if query is None:
                if self.failed.pop(name, None) is not None:
                    return  # stopped when it failed
                raise UnknownQueryError(f"no continuous query is registered as {name!r}")
            self._stop(query)
            self._set_lateness()
            self._deliver()

    def _stop(self, query: ContinuousQuery) -> None:
        self.caches.forget(query.name)
        self.fanout.remove(query)
        query._close()
        for observer in list(self._observers):
            observer(query, False)

    def _fail(self, query: ContinuousQuery, error: Exception) -> None:
        """``query`` raised ``error`` while driven: it stops alone (the instances of a shared plan
        together), after what it emitted before is delivered."""
        if isinstance(error, LimitExceeded):
            log.warning("continuous query %r failed: %s", query.name, error)
        else:
            log.error("continuous query %r failed", query.name, exc_info=error)
        failing = [query]
        if isinstance(query, InstanceQuery):
            group = query.view.group
            failing = [q for q in self.queries.values() if isinstance(q, InstanceQuery) and q.view.group is group]
        for failed in failing:
            failed.failure = error
            del self.queries[failed.name]
            self.failed[failed.name] = failed
            failed._deliver()  # what it emitted before still reaches its subscribers (their errors ignored: it stops anyway)
            self._stop(failed)

    def observe(self, observer: Callable[[ContinuousQuery, bool], None]) -> Callable[[], None]:
        """Calls ``observer(query, True)`` for every query registered now and whenever one is
        registered, ``observer(query, False)`` when one is unregistered; always under the engine's
        lock, so a subscription made then sees every emission of the query. The observer must not
        wait. Returns a function to stop observing."""
        with self._lock:
            for query in list(self.queries.values()):
                observer(query, True)
            self._observers.append(observer)

        def stop() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return stop

    def push(self, stream: object, triples: object, time: object = None) -> None:
        """One event on ``stream``: ``triples`` as N-Triples/Turtle text, pyoxigraph or rdflib
        triples; ``time`` in ms, a datetime (naive = UTC) or None for the arrival time.

        Raises ``RdfSyntaxError`` (bad text), ``LateEventError`` (older than the watermark);
        either way nothing was applied.
        """
        # The per-event call of every client. Where the fan-out made the stream a compiled path
        # (``FanOut.event_path``), that one call takes the event (such a stream was seen, so no
        # clocks are kept on disk: ``keep_clocks`` comes first); else, or when the path refuses
        # it, ``push_batch``'s steps for one event on a stream already seen (its IRI checked
        # then), without its lists and closures (nothing to journal).
        path = self.fanout.paths.get(stream) if type(stream) is str else None
        if path is not None:
            data = path.take(triples, time)
            if data is None:
                return
        elif type(stream) is not str or self.clock_store is not None or stream not in self.streams.clocks:
            self.push_batch(stream, [(triples, time)])
            return
        else:
            data = event_triples(triples)
        millis = time if type(time) is int and TIME_MIN_MS <= time <= TIME_MAX_MS else None if time is None else to_millis(time)
        with self._lock:
            now = self.clock()
            if self._static_changed:
                self._apply_static_change()
            for event in self.streams.push_one(
                stream, data, now if millis is None else millis, now,
                encode=self.dictionary.encode_triples, kept_predicates=self.fanout.kept_predicates,
            ):
                self._dispatch(event)
            if stream not in self.fanout.paths:
                self.fanout.event_path(stream, self, wall_clock_ms)
            self._deliver()

    def push_batch(self, stream: object, events: Sequence[tuple[object, object]]) -> int:
        """Events ``(triples, time)`` on ``stream``, as ``push`` takes them, applied in order, all
        or none: every event is converted and the lateness of the whole batch checked before the
        first is applied. Events without a time get one arrival time. Returns the stream's latest
        timestamp after the batch.

        Raises ``RdfSyntaxError``/``ValueError``/``TypeError`` (a bad event, a time out of range:
        ``runtime.streams.TimeRangeError``), ``LateEventError`` or ``FutureEventError`` (``index``:
        the first refused event; every refused one is counted); nothing was applied.
        """
        # A stream with a clock was checked when it first came (checking builds an IRI, every push).
        iri = stream if type(stream) is str and stream in self.streams.clocks else _stream_iri(stream)
        # Read and checked before the lock; turned into term ids under it (the dictionary is shared).
        converted = [(event_triples(data), None if time is None else to_millis(time)) for data, time in events]
        with self._lock:
            now = self.clock()
            self._apply_static_change()
            batch = [(data, now if millis is None else millis) for data, millis in converted]
            accepted: list[Event] = []
            try:
                released = self.streams.push_batch(
                    iri, batch, now, encode=self.dictionary.encode_triples, accepted=accepted,
                    kept_predicates=self.fanout.kept_predicates,
                )
            finally:  # accepted or refused (and counted): journaled before the events' ids are released
                self._keep_clocks(lambda kept: kept.record(iri, accepted, released=bool(accepted)))
            for event in released:
                self._dispatch(event)
            latest = self.streams.clocks[iri].latest
            self._deliver()
        return latest

    def reject_malformed(self, stream: object) -> None:
        """Counts a push to ``stream`` rejected before it reached the engine because its body or a
        timestamp did not parse (the HTTP layer parses bodies itself, to name the bad line)."""
        iri = _stream_iri(stream)
        with self._lock:
            self.streams.clock(iri).malformed_pushes += 1
            self._keep_clocks(lambda kept: kept.record(iri))

    def reset_clock(self, stream: object) -> int:
        """Forgets the latest timestamp of ``stream`` (an operator's repair: the next event starts its
        clock again, whatever its time); its buffered events are released first, in order, so no
        accepted event is lost. Returns how many were released; ``UnknownStreamError`` for a stream
        never seen. Counters stay."""
        iri = _stream_iri(stream)
        with self._lock:
            self._apply_static_change()
            released = self.streams.reset(iri)
            self._keep_clocks(lambda kept: kept.record(iri, reset=True))
            for event in released:
                self._dispatch(event)
            self._deliver()
        return len(released)

    def _keep_clocks(self, record: Callable[[ClockStore], None]) -> None:
        """Journals a change of the stream clocks (``keep_clocks``), under the lock."""
        if self.clock_store is None:
            return
        try:
            record(self.clock_store)
        except OSError:
            # The change stands (its events are in the engine); only its record on disk failed.
            log.exception("could not journal the stream clocks: a restart may reopen their past")

    def stream_stats(self, stream: object | None = None) -> list[dict]:
        """One dict per stream seen, in IRI order (only ``stream``'s, when given and seen):
        ``stream``, ``events`` (accepted), ``out_of_order`` (accepted though older than the stream's
        latest: reordered within the lateness), ``late`` (events rejected as older than the
        watermark), ``future`` (events rejected as too far ahead of the clock), ``malformed`` (pushes
        rejected as malformed), ``last_minute`` (events accepted in the last minute of the arrival
        clock), ``latest`` and ``watermark`` (ms, None before the first event), ``lateness_ms`` and
        ``buffered`` (accepted, waiting for the watermark)."""
        with self._lock:
            now = self.clock()
            if stream is None:
                clocks = sorted(self.streams.clocks.items())
            else:
                iri = _stream_iri(stream)
                clocks = [(iri, self.streams.clocks[iri])] if iri in self.streams.clocks else []
            return [
                {
                    "stream": iri,
                    "events": clock.accepted_events,
                    "out_of_order": clock.out_of_order_events,
                    "late": clock.late_events,
                    "future": clock.future_events,
                    "malformed": clock.malformed_pushes,
                    "last_minute": clock.arrivals.count(now),
                    "latest": clock.latest,
                    "watermark": clock.watermark,
                    "lateness_ms": clock.lateness_ms,
                    "buffered": clock.buffered,
                }
                for iri, clock in clocks
            ]

    def advance(self, time: object) -> None:
        """Moves the clock to ``time``: releases buffered events the watermark now passes, evaluates
        each eager query once at ``time`` and closes every periodic window with ``c ≤ time``."""
        millis = to_millis(time)
        with self._lock:
            self._apply_static_change()
            released = self.streams.advance(millis)
            self._keep_clocks(lambda kept: kept.record_floor(millis))
            for event in released:
                self._dispatch(event)
            self._epoch += 1
            units = self.fanout.before_advance()
            self._driven[None] = None  # every query is evaluated
            for query in list(self.queries.values()):
                if query.failure is not None:  # failed with its shared plan during this advance
                    continue
                started = _time.perf_counter()
                try:
                    query._on_advance(millis, self._epoch)
                except Exception as error:  # one query's failure must not stop the others
                    self._fail(query, error)
                    continue
                query.latency.observe(_time.perf_counter() - started)
            self.fanout.settle(units)
            self._deliver()

    def explain(self, name: str) -> str:
        """``ContinuousQuery.explain`` of ``name``, between two events (it reads live operator state)."""
        with self._lock:
            return self._registered(name).explain()

    def explain_tree(self, name: str) -> dict:
        """``ContinuousQuery.explain_tree`` of ``name`` (JSON-ready), between two events."""
        with self._lock:
            return self._registered(name).explain_tree()

    def _registered(self, name: str) -> ContinuousQuery:
        query = self.queries.get(name)
        if query is None:
            raise UnknownQueryError(f"no continuous query is registered as {name!r}")
        return query

    def late_events(self, stream: object) -> int:
        """How many events of ``stream`` were rejected as late."""
        clock = self.streams.clocks.get(_stream_iri(stream))
        return 0 if clock is None else clock.late_events

    def cache_stats(self) -> list[dict]:
        """One dict per static cache of every incremental query: ``query, cache, engine, rows,
        version, built_at_ms, duration_ms, stale, rebuilds, failures, last_error, notes``."""
        return self.caches.stats()

    def wait_for_caches(self, timeout_s: float | None = None) -> bool:
        """Waits until every scheduled cache rebuild is done (swapped in, or failed with no retry
        due before ``timeout_s``); False on timeout. Must not be called while holding the engine."""
        return self.caches.wait(timeout_s)

    def close(self) -> None:
        """Unregisters every query, stops listening to the static store, stops the rebuilds and
        releases the cache engine it made from a name (a Spark session)."""
        with self._lock:
            for name in [*self.queries, *self.failed]:
                self.unregister(name)
            if self._unsubscribe_store is not None:
                self._unsubscribe_store()
                self._unsubscribe_store = None
            if self.clock_store is not None:  # folds the journal, so the next start reads one file
                self.clock_store.compact()
                self.clock_store.close()
                self.clock_store = None
        # Outside the lock: a rebuild under way may be waiting for it to swap (and is then dropped).
        self.caches.close()
        if self._owns_cache_engine:
            self.caches.engine.close()  # e.g. stops the Spark session cache_engine("spark") started

    # ------------------------------------------------------------------ internals

    def _dispatch(self, event: Event) -> None:
        self._epoch += 1
        fanout = self.fanout
        try:
            # Only the queries the event gives work (engine.fanout); the others are not called.
            reached, units = fanout.reached(event, self.queries)
            driven, seqs, epoch, clock = self._driven, self._seqs, self._epoch, _time.perf_counter
            for query in reached:
                driven[query] = None
            audited = fanout.skipped(event, units) if fanout.mode == "audit" else ()
            for query in reached:
                if query.failure is None:
                    shared = query._shared
                    if shared is not None and not audited:
                        # A unit sharing a plan runs once for all its queries (engine.shared_plan);
                        # on the plan's first event, made by its first query, each runs alone.
                        if shared.evaluated == epoch:
                            continue
                        if shared.round != epoch:
                            shared.run(event, seqs, epoch, self._fail)
                            continue
                    check = fanout.audit(query, event) if audited and query in audited else None
                    started = clock()
                    try:
                        fanout.run(query, event, seqs, epoch)
                    except Exception as error:  # one query's failure must not stop the others
                        self._fail(query, error)
                        continue
                    query.latency.observe(clock() - started)
                    if check is not None:
                        check()
            if units:
                fanout.settle(units)
        finally:
            # The windows took their own references to what they keep.
            self.dictionary.decref_many(event.ids)

    def _deliver(self) -> None:
        # Only the queries driven since the last delivery can have emissions (all after an advance).
        if not self._driven:
            return
        driven, self._driven = self._driven, {}
        failure = None
        for query in list(self.queries.values()) if None in driven else driven:
            if query._outbox and self.queries.get(query.name) is query:  # most have nothing
                failure = query._deliver() or failure
        if failure is not None:
            raise failure

    def _on_static_change(self, event) -> None:
        # Called by the store's writer with the store's lock held: taking the engine lock here could
        # deadlock against a push that reads the store, so the change is only noted and handed to
        # the evaluators at the start of the next push or advance (it shows with the next
        # evaluation anyway: docs/ARCHITECTURE.md, "Static data and caches"), and the caches it
        # touches are scheduled for a rebuild.
        self._static_changed = True
        self.caches.on_change(event)

    def _swap_caches(self, name: str, changes: list[tuple[CacheState, CacheDelta]]) -> bool:
        # The rebuild worker's installer. The differences are staged part by part, pushes and
        # evaluations running in between on the caches as they were; then all of a query's rebuilt
        # caches are released at once, and the operators emit the difference at the next evaluation.
        operators = [state.operator for state, _ in changes]

        def owner() -> Evaluator | None:
            query = self.queries.get(name)
            instance_group = self._groups_by_name.get(name)
            evaluator = query.evaluator if query is not None else instance_group.evaluator if instance_group is not None else None
            # The name may have been unregistered and taken again meanwhile: only its own caches.
            owned = {id(operator) for _, operator in evaluator.caches} if evaluator is not None else set()
            return evaluator if all(id(operator) in owned for operator in operators) else None

        try:
            staged = self._stage_caches(owner, [(state.operator, delta) for state, delta in changes])
        except BaseException:
            # A part failed (memory, say): the caches go back to the rows the rebuilder diffed
            # against, so that its retry starts from them.
            with self._lock:
                evaluator = owner()
                if evaluator is not None:
                    evaluator.discard_caches(operators)
            raise
        if not staged:
            return False
        with self._lock:
            evaluator = owner()
            if evaluator is None:
                return False
            evaluator.release_caches(operators)
            self.fanout.static_changed()
            return True

    def _stage_caches(self, owner: Callable[[], Evaluator | None], changes: list[tuple[object, CacheDelta]]) -> bool:
        """Stages each ``(cache operator, delta)`` in parts of at most ``cache_install_rows`` rows,
        each under one hold of the lock (the term dictionary is shared and not thread-safe, so rows
        are encoded under it), letting waiting pushes run between parts. ``owner()``, called under
        the lock, is the evaluator of the operators, or None once they are gone: then nothing more
        is staged and the answer is False (the query's ``close`` released what was staged)."""
        for operator, delta in changes:
            for added, removed in delta.steps(self.cache_install_rows):
                with self._lock:
                    evaluator = owner()
                    if evaluator is None:
                        return False
                    evaluator.stage_cache(operator, added, removed)
                # Hands the GIL over, so that a push waiting for the lock takes it before the next part.
                _time.sleep(0)
        return True

    def _apply_static_change(self) -> None:
        if self._static_changed:
            self._static_changed = False
            self.fanout.static_changed()
            for query in self.queries.values():
                query.evaluator.on_static_change()

    def _name(self, name: str | None, register) -> str:
        if name is None and register is not None:
            name = register.name.value if isinstance(register.name, IRI) else str(register.name)
        if name is None:
            name = f"q{next(self._numbers)}"
            while name in self.queries or name in self.failed or name in self._registering:
                name = f"q{next(self._numbers)}"
        if name in self.queries or name in self.failed or name in self._registering:
            msg = f"a continuous query named {name!r} is already registered: unregister it first or pick another name"
            raise ArgumentError(msg)
        return name

    def _set_lateness(self) -> None:
        """Each stream's lateness: the largest LATENESS of the queries reading it, at least the
        engine's; a smaller one releases buffered events now, a larger one holds the watermark."""
        lateness: dict[str, int] = {}
        for query in self.queries.values():
            if query.algebra.lateness_ms > self.streams.lateness_ms:
                for stream in query.streams:
                    lateness[stream] = max(lateness.get(stream, 0), query.algebra.lateness_ms)
        for event in self.streams.set_lateness(lateness):
            self._dispatch(event)

    def _evaluator(self, mode: Mode, algebra: n.AlgebraQuery, patterns: list[StreamTriple], name: str) -> Evaluator:
        if directional_windows(algebra, patterns):
            emit = algebra.emit or ON_CLOSE
            final = self._plain_evaluator(mode, algebra, patterns, name) if emit in (ON_CLOSE, EARLY_AND_FINAL) else None
            early = self._plain_evaluator(mode, algebra, patterns, f"{name}#early") if emit in (ON_UPDATE, EARLY_AND_FINAL) else None
            return AnchoredEvaluators(final, early)
        return self._plain_evaluator(mode, algebra, patterns, name)

    def _plain_evaluator(self, mode: Mode, algebra: n.AlgebraQuery, patterns: list[StreamTriple], name: str) -> Evaluator:
        if mode is Mode.RECOMPUTE:
            return RecomputeEvaluator(algebra, patterns, self.store, self.dictionary, name=name)
        return IncrementalEvaluator(algebra, patterns, self.store, self.dictionary, self.limits.max_tick_rows)


def _check_stream_variable(algebra: n.AlgebraQuery, patterns: list[StreamTriple], st: StreamTriple) -> None:
    """Refuses what a query reading ``STREAM ?s`` cannot be: the streams it reads are known only
    as their events come, one window state per stream."""
    where = f"STREAM ?{st.variable.name}"
    events = (p for x in walk(algebra.pattern) if isinstance(x, n.Seq) for step in x.steps for p in step.patterns)
    if any(isinstance(p.stream, Var) for p in events):
        msg = f"a SEQ step over {where} is not supported: its window keeps each stream apart; name the stream by its IRI"
        raise PlanError(msg)
    if directional_windows(algebra, patterns):
        msg = f"a directional window in a query reading {where} is not supported; name the streams by their IRIs"
        raise PlanError(msg)
    if algebra.lateness_ms:
        msg = f"LATENESS in a query reading {where} is not supported: it would hold back streams not known yet; name the streams by their IRIs"
        raise PlanError(msg)


def _stream_iri(stream: object) -> str:
    iri = getattr(stream, "value", stream) if not isinstance(stream, str) else stream
    iri = str(iri)
    try:
        ox.NamedNode(iri)
    except ValueError:
        msg = f"a stream is named by an absolute IRI, not {iri!r}"
        raise ValueError(msg) from None
    return iri


def _static_store(store) -> StaticStore | None:
    if store is None or isinstance(store, StaticStore):
        return store
    if isinstance(store, ox.Store):
        return StaticStore.wrap(store, requests=CQELS_REQUESTS)
    msg = f"store must be a StaticStore, a pyoxigraph.Store or None, not {type(store).__name__}"
    raise TypeError(msg)


