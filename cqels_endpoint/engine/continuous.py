"""A registered continuous query: its windows, its clock and schedule, and its R2S emissions.

``ContinuousQuery`` is driven by the ``Engine`` (``core.py``): ``_on_event`` offers an event's
triples to the query's window readers and evaluates, ``_on_advance`` evaluates at a time, and the
deltas of Γ that its ``Evaluator`` returns become ``Emission``s held until ``_deliver``.

A query that raises while the engine drives it (past one of its ``Limits``, say) *fails*: the
engine stops it alone, releases its state and keeps it, with ``failure`` set to the error, until it
is unregistered (``Engine.failed``); ``status`` is then ``"failed"``.
"""

from __future__ import annotations

import itertools
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.engine.emission import Emission, EmittedRows, Row, instantiate, new_emission
from cqels_endpoint.engine.evaluator import Evaluator, Mode
from cqels_endpoint.plan.patterns import StreamTriple
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.query.windows import RangeWindow, WindowConfig, stream_wide, window_extent
from cqels_endpoint.runtime.feed import EventFeed
from cqels_endpoint.runtime.latency import LatencyHistogram
from cqels_endpoint.runtime.routing import PatternSpec, Router
from cqels_endpoint.runtime.sharing import WindowReader
from cqels_endpoint.runtime.streams import Event
from cqels_endpoint.runtime.windows import CloseSchedule
from cqels_endpoint.terms import IRI

if TYPE_CHECKING:
    from cqels_endpoint.engine.shared_plan import SharedPlan


@dataclass(eq=False)
class ContinuousQuery:
    """A registered continuous query; build it with ``Engine.register``."""

    name: str
    text: str
    algebra: n.AlgebraQuery
    r2s: R2S
    mode: Mode
    patterns: list[StreamTriple]
    evaluator: Evaluator
    origin_ms: int | None = None
    # One reader per stream pattern of the engine's shared window states (runtime.sharing).
    windows: list[WindowReader] = field(default_factory=list)
    # An instance of a template that runs a plan of its own: why it shares none (instances.py).
    unshared: str | None = None
    schedule: CloseSchedule | None = field(init=False)
    # ``clock`` and ``evaluations`` (properties below): those of the events the engine did not
    # hand it are added when they are read (``engine.fanout``).
    _clock: int | None = field(init=False, default=None, repr=False)
    _evaluations: int = field(init=False, default=0, repr=False)
    _behind: Callable[[], None] | None = field(init=False, default=None, repr=False)
    emitted: int = field(init=False, default=0)
    # Seconds the engine spent on each event (and advance) of this query: windows and evaluation.
    latency: LatencyHistogram = field(init=False, default_factory=LatencyHistogram)
    # Seconds from the engine accepting an event (``Event.received``) to each emission it causes,
    # lateness waits included: the push-to-emission latency the web console plots.
    emission_latency: LatencyHistogram = field(init=False, default_factory=LatencyHistogram)
    _received: float | None = field(init=False, default=None, repr=False)
    # Why the engine stopped the query (it raised while driven), None while it runs.
    failure: Exception | None = field(init=False, default=None)
    # Set: each evaluation hands Γ's signed changes ``(tau, [(row, ±1), …])`` here instead of making
    # R2S emissions (a partition of a Spark job, whose global stage applies the R2S: streaming/).
    on_changes: Callable[[int, list[tuple[Row, int]]], None] | None = field(init=False, default=None)
    # The window buffer, feed and fan it shares with the other queries of its unit (engine.shared_plan).
    _shared: SharedPlan | None = field(init=False, default=None, repr=False)
    _shareable: bool | None = field(init=False, default=None, repr=False)  # its shape allows one (None: not asked yet)

    def __post_init__(self) -> None:
        self.r2s, self.mode = R2S(self.r2s), Mode(self.mode)
        # A window declared in the dataset is a window of the query even where no pattern reads it
        # (a query whose patterns all read named static graphs reports on its stream's events).
        windows = [st.window for st in self.patterns] + [window for _stream, window in declared_windows(self.algebra)]
        slides = [w.slide_ms for w in windows if isinstance(w, RangeWindow) and w.periodic]
        self.schedule = CloseSchedule(slides, self.origin_ms) if slides else None
        # The streams it names; a ``STREAM ?s`` pattern reads others too (``reads``).
        self.streams = frozenset(st.stream.value for st in self.patterns if st.variable is None) | frozenset(
            stream.value for stream, _window in declared_windows(self.algebra)
        )
        self._variable = [st for st in self.patterns if st.variable is not None]
        self._variable_ids = frozenset(st.id for st in self._variable)
        # Each pattern's routing spec, made at the first event (``_route``), the router of each
        # stream, made at its first event, and the ids the specs and the stream columns hold, each
        # with a dictionary reference until the query closes. ``_allowed``: the streams each
        # ``STREAM ?s`` pattern read when the routers were made (they are made again when it changes).
        self._specs: list[PatternSpec] | None = None
        self._routes: dict[str, Router] = {}
        self._allowed: tuple[frozenset[str] | None, ...] = ()
        self._stream_ids: dict[str, int] = {}
        # The stream-wide count windows (cqels2 ``[TRIPLES n]``), made at the first event (an
        # instance group's driver gets its windows after it is made): each counts every statement
        # of every event of a stream it reads.
        self._counting: list[tuple[StreamTriple, WindowReader]] | None = None
        # The feed of the windows while the query reads them alone (``_fed``), and the generation
        # of the shared-window registry it was decided at.
        self._feed: EventFeed | None = None
        self._feed_generation = -1
        self._route_constants: list[int] = []
        self._subscribers: list[Callable[[Emission], None]] = []
        self._json_only: list[Callable[[Emission], None]] = []  # those of the subscribers that read only JSON
        self.variables = _projection(self.algebra)
        self._outbox: list[Emission] = []
        # An evaluation whose R2S selects no row still emits: RSTREAM (Γ is empty), and every
        # evaluation of a cqels2 directional query (DirectionalQuery).
        self._emits_empty = self.r2s is R2S.RSTREAM

    @property
    def clock(self) -> int | None:
        """The time of its last evaluation (None before the first)."""
        if self._behind is not None:
            self._behind()
        return self._clock

    @clock.setter
    def clock(self, tau: int | None) -> None:
        self._clock = tau

    @property
    def evaluations(self) -> int:
        if self._behind is not None:
            self._behind()
        return self._evaluations

    @evaluations.setter
    def evaluations(self, count: int) -> None:
        self._evaluations = count

    @property
    def form(self) -> str:
        return self.algebra.form

    @property
    def periodic(self) -> bool:
        return self.schedule is not None

    @property
    def dialect(self) -> str:
        """What its constructs mean, "cqels" or "cqels2" (``query.dialects``)."""
        return self.algebra.dialect

    @property
    def status(self) -> str:
        """``running``, or ``failed`` once the engine stopped it (``failure`` says why)."""
        return "running" if self.failure is None else "failed"

    @property
    def shed(self) -> int:
        """Triples its windows did not take because they were full (``Limits.max_window_triples``)."""
        return sum(window.shed for window in self.windows)

    def subscribe(self, callback: Callable[[Emission], None], *, json_only: bool = False) -> Callable[[], None]:
        """Calls ``callback(emission)`` on every emission of this query; returns an unsubscribe function.

        ``json_only``: the callback reads the emissions only as JSON (``json_text()``,
        ``to_json()``): while every subscriber says so, a SELECT's rows are written as JSON from
        their term ids and never decoded (``Emission.rows`` is None).
        """
        self._subscribers.append(callback)
        if json_only:
            self._json_only.append(callback)

        def unsubscribe() -> None:
            for subscribers in (self._subscribers, self._json_only):
                if callback in subscribers:
                    subscribers.remove(callback)

        return unsubscribe

    def snapshot(self) -> list[Row]:
        """Γ at the last evaluation (a bag, as a list of ``{var: term}``)."""
        return self.evaluator.snapshot()

    def explain(self) -> str:
        """The evaluator's plan with live counters, after the query's windows and their sizes."""
        head, lines = self._explain_head()
        return "\n".join([head, *(f"  {line}" for line in lines)]) + "\n" + self.evaluator.explain()

    def explain_tree(self) -> dict:
        """``explain`` as a tree (``plan.explain.plan_tree``'s shape): the query, its windows as
        details, the evaluator's plan as its child."""
        head, lines = self._explain_head()
        return {"id": "", "what": head, "line": None, "counters": {}, "details": lines, "children": [self.evaluator.explain_tree()]}

    def _explain_head(self) -> tuple[str, list[str]]:
        """The first line of ``explain`` and the lines under it (shed triples, windows)."""
        head = f"query {self.name} ({self.mode}, {self.r2s}, {self.dialect}, {self._schedule_text()}; clock {self.clock}, "
        head += f"{self.evaluations} evaluations, {self.emitted} emissions)"
        lines = [f"{self.shed} triple(s) shed by full windows (max_window_triples)"] if self.shed else []
        lines += self._window_lines()
        if self.unshared is not None:
            lines.append(f"a plan of its own: {self.unshared}")
        return head, lines

    def _schedule_text(self) -> str:
        """When the query is evaluated, for ``explain``."""
        if self.schedule is None:
            return "eager"
        return f"periodic, origin {self.schedule.origin}, next close {self.schedule.next_close}"

    def _window_lines(self) -> list[str]:
        return [
            f"window {st.id} on {_stream_text(st)} {window.state_name}: {len(window)} triple(s)"
            f"{'' if st.variable is None else f' of {window.streams} stream(s)'}, state {self._readers(window)}"
            for st, window in zip(self.patterns, self.windows)
        ]

    def _readers(self, window: WindowReader) -> str:
        return f"shared by {window.shared_by} quer{'y' if window.shared_by == 1 else 'ies'}"

    # ------------------------------------------------------------------ driven by the engine

    def _on_event(self, event: Event, seqs: itertools.count, step: int) -> None:
        # ``step`` numbers the engine's dispatches and advances (the instances of a template use it).
        self._received = event.received
        schedule = self.schedule
        if schedule is not None:
            if schedule.origin is None:
                schedule.set_origin(event.time)
            if schedule.next_close <= event.time:
                for close in schedule.closes_through(event.time):
                    self._evaluate(close)
            # ``_clock``, not ``clock``: the fan-out catches up eager queries only.
            tau = event.time if self._clock is None else self._clock
        else:
            tau = event.time if self.clock is None else max(event.time, self.clock)
        evaluator = self.evaluator
        feed = self._fed()
        if feed is not None:  # one call routes, inserts and expires (runtime.feed)
            # The stream's router as ``_router`` keeps it (made there at the stream's first event).
            router = None if self._variable else self._routes.get(event.stream)
            feed.offer(router or self._router(event.stream), event.ids, event.time, tau, seqs)
            if self.schedule is None:
                self._evaluate(tau)
            return
        matched = self._route(event)
        if self._counting is None:
            self._counting = [(st, window) for st, window in zip(self.patterns, self.windows) if stream_wide(st.window)]
        if self._counting:
            statements = len(event.ids) // 3
            for st, window in self._counting:
                if self._reads_stream(st, event.stream):
                    for gone in window.statements(event.stream, statements):
                        evaluator.on_expire(st.id, gone)
        self._offer(event, matched, tau, seqs)
        if self.schedule is None:
            self._evaluate(tau)

    def _offer(self, event: Event, matched: list[tuple[int, tuple[int, ...], int]], tau: int, seqs: itertools.count) -> None:
        """Offers each ``(pattern id, ids, index)`` of ``_route(event)`` to its window reader at
        clock ``tau``, and what enters and leaves to the evaluator."""
        evaluator = self.evaluator
        windows = self.windows
        stream, t = event.stream, event.time
        for pattern_id, ids, index in matched:
            seq, expired = windows[pattern_id].offer(stream, t, tau, seqs, index)
            if seq is not None:  # None: already out of the window at the query's clock, or shed
                evaluator.on_insert(pattern_id, ids, t, seq)
            for gone in expired:
                evaluator.on_expire(pattern_id, gone)

    def reads(self, stream: str) -> bool:
        """Whether the events of ``stream`` go to this query: a stream it names, or one a ``STREAM
        ?s`` pattern reads (every stream, or those the static data restricting it names)."""
        if stream in self.streams:
            return True
        if not self._variable:
            return False
        streams_read = self.evaluator.streams_read
        return any((allowed := streams_read(st.id)) is None or stream in allowed for st in self._variable)

    def _route(self, event: Event) -> list[tuple[int, tuple[int, ...], int]]:
        """``(pattern id, ids, index of the triple in the event)`` for each triple of ``event`` and
        each pattern it matches, in order
        (``runtime.routing``); the ids of a ``STREAM ?s`` pattern's triple end with the id of the
        event's stream, the value of ``?s``."""
        dictionary = self.evaluator.dictionary
        matched = self._router(event.stream).route(event.ids)
        if not self._variable:
            return matched
        stream_id = self._stream_ids.get(event.stream)
        if stream_id is None:
            stream_id = self._stream_ids[event.stream] = dictionary.encode(ox.NamedNode(event.stream))
            self._route_constants.append(stream_id)
        variable = self._variable_ids
        return [
            (pattern_id, (*ids, stream_id) if pattern_id in variable else ids, index) for pattern_id, ids, index in matched
        ]

    def _router(self, stream: str) -> Router:
        """The router of the patterns reading ``stream`` now, made at its first event (and again
        when the streams a ``STREAM ?s`` reads changed)."""
        if self._specs is None:
            self._specs = [_spec(st, self.evaluator.dictionary, self._route_constants) for st in self.patterns]
        if self._variable:
            allowed = tuple(self.evaluator.streams_read(st.id) for st in self._variable)
            if allowed != self._allowed:  # the static data restricting a STREAM ?s changed
                self._routes, self._allowed = {}, allowed
        router = self._routes.get(stream)
        if router is None:
            reading = {st.id for st, streams in zip(self._variable, self._allowed) if streams is None or stream in streams}
            router = self._routes[stream] = Router([
                spec for st, spec in zip(self.patterns, self._specs)
                if st.id in reading or (st.variable is None and st.stream.value == stream)
            ])
        return router

    def _fed(self) -> EventFeed | None:
        """The feed of this query's windows (``runtime.feed``) while it may bypass its window
        readers: every pattern reads one named stream through a window no other query reads, with
        no size bound and no stream-wide count; None otherwise (each reader makes the calls)."""
        if not self.windows:
            return None
        registry = self.windows[0].registry
        if self._feed_generation == registry.generation:
            return self._feed
        self._feed_generation, self._feed = registry.generation, None
        if all(window.alone() and not stream_wide(st.window) for st, window in zip(self.patterns, self.windows)):
            states = [window.state(st.stream.value) for st, window in zip(self.patterns, self.windows)]
            self._feed = EventFeed(states, self.evaluator.on_insert, self.evaluator.on_expire)
        return self._feed

    def _reads_stream(self, st: StreamTriple, stream: str) -> bool:
        """Whether pattern ``st`` reads ``stream`` now (after ``_route`` made the event's router)."""
        if st.variable is None:
            return st.stream.value == stream
        allowed = self._allowed[self._variable.index(st)]
        return allowed is None or stream in allowed

    def _on_advance(self, time: int, step: int) -> None:
        self._received = None
        if self.schedule is not None:
            for close in self.schedule.closes_through(time):
                self._evaluate(close)
            return
        tau = time if self.clock is None else max(time, self.clock)
        if self._shared is not None:
            self._shared.start(step, tau)
            self._evaluate_shared(tau)
        else:
            self._evaluate(tau)

    def _evaluate(self, tau: int) -> None:
        feed = self._fed()
        if feed is not None:
            feed.expire(tau)
        else:
            for st, window in zip(self.patterns, self.windows):
                for gone in window.expire(tau):
                    self.evaluator.on_expire(st.id, gone)
        if self.on_changes is not None:
            self.clock = tau
            self.evaluations += 1
            self.on_changes(tau, self.evaluator.evaluate(tau))
            return
        with self.evaluator.emitted(tau, self.r2s) as rows:
            self._emit(tau, rows)

    def _evaluate_shared(self, tau: int) -> None:
        """``_evaluate`` once its unit's shared buffer has fed and punctuated its plan at ``tau``
        (``SharedPlan.start``): nothing more to do than an evaluation's counts when its sink took
        no change of its R2S's sign (it would emit nothing), else its emission as ``_evaluate``
        makes it."""
        self._shared.evaluate(self, tau)

    def evaluate_at(self, tau: int) -> list[Emission]:
        """Evaluates at ``tau`` without an engine and returns the emissions, delivered to nobody: a
        query over no window whose evaluator's inputs its driver changes (the global stage of a
        Spark job, streaming/merge.py)."""
        self._on_advance(tau, 0)
        made, self._outbox = self._outbox, []
        self.emitted += len(made)
        return made

    def _emit(self, tau: int, rows: EmittedRows, **phase: object) -> None:
        """The evaluation at ``tau`` is done and emits ``rows``: Γ's changes of the R2S's sign, or Γ
        (RSTREAM). ``phase``: the ``anchor`` and ``final`` of a directional query's emissions."""
        self.clock = tau
        self._evaluations += 1  # a sum: the evaluations a catch-up adds may come before or after
        emitted = len(self._outbox)
        form = self.algebra.form
        if form == QueryForm.ASK:
            # Γ is one empty mapping or nothing: ISTREAM sees it enter (true), DSTREAM leave (false).
            if self.r2s is R2S.RSTREAM:
                self._outbox.append(Emission(self.name, tau, self.r2s, boolean=bool(len(rows)), **phase))
            elif len(rows):
                self._outbox.append(Emission(self.name, tau, self.r2s, boolean=self.r2s is R2S.ISTREAM, **phase))
        elif form == QueryForm.CONSTRUCT:
            # Terms for the subscribers that read terms; N-Triples written from ids when all read JSON.
            if self._reads_terms():
                triples = instantiate(self.algebra.template, rows.mappings())
                if triples or self._emits_empty:
                    self._outbox.append(Emission(self.name, tau, self.r2s, triples=triples, **phase))
            else:
                text = rows.constructed(self.algebra.template)
                if text or self._emits_empty:
                    self._outbox.append(Emission(self.name, tau, self.r2s, ntriples=text, **phase))
        elif len(rows) or self._emits_empty:
            # Decoded for the subscribers that read terms, written as JSON for those that read JSON.
            decoded = rows.mappings() if self._reads_terms() else None
            bindings = rows.bindings_json() if self._json_only else None
            self._outbox.append(new_emission(self.name, tau, self.r2s, variables=self.variables, rows=decoded, bindings=bindings, **phase))
        if len(self._outbox) > emitted and self._received:
            self.emission_latency.observe(_time.perf_counter() - self._received)

    def _reads_terms(self) -> bool:
        """Some subscriber reads emissions as terms (or none is there yet to say it does not)."""
        return not self._subscribers or len(self._json_only) < len(self._subscribers)

    def _close(self) -> None:
        """Releases the windows and the plan (the query was unregistered)."""
        if self._shared is not None:
            self._shared.leave(self)
        for window in self.windows:
            window.close()
        self.evaluator.dictionary.decref_many(self._route_constants)
        self._route_constants = []
        self.evaluator.close()

    def _deliver(self) -> BaseException | None:
        """Hands the pending emissions to the subscribers; returns the first callback error."""
        if not self._outbox:  # the engine asks every query after every push: most have nothing
            return None
        outbox, self._outbox = self._outbox, []
        failure = None
        for emission in outbox:
            self.emitted += 1
            for callback in list(self._subscribers):
                try:
                    callback(emission)
                except Exception as error:  # one failing subscriber must not starve the others
                    failure = failure or error
        return failure


def _spec(st: StreamTriple, dictionary, held: list[int]) -> PatternSpec:
    """The routing spec of a stream pattern (``runtime.routing``). The routers list them in pattern
    order: the order the windows are offered a triple in, which numbers their entries. The ids of
    the pattern's constants are appended to ``held``, each holding a reference (the router compares
    ids, and a released id would no longer be its term's)."""

    def encode(term) -> int:
        term_id = dictionary.encode(term)
        held.append(term_id)
        return term_id

    predicates = None if st.predicates is None else tuple(encode(p) for p in st.predicates)
    # A constant predicate is matched by the lookup itself.
    constants = tuple((i, encode(term)) for i, term in st.constants if i != 1)
    return PatternSpec(st.id, predicates, constants, st.repeats)


def _stream_text(st: StreamTriple) -> str:
    """How ``explain`` names a pattern's stream: its IRI, or its variable and what restricts it."""
    if st.variable is None:
        return f"<{st.stream.value}>"
    if not st.restricted_by:
        return f"?{st.variable.name} (every stream)"
    return f"?{st.variable.name} (the streams its static data names)"


def declared_windows(algebra: n.AlgebraQuery) -> list[tuple[IRI, WindowConfig]]:
    """The (stream, window) of each ``FROM STREAM`` / ``FROM NAMED WINDOW`` clause of the query."""
    return [
        (d.stream, window_extent(d.window))
        for d in algebra.datasets
        if isinstance(d, (ast.StreamDataset, ast.NamedWindow))
    ]


def _projection(algebra: n.AlgebraQuery) -> tuple[str, ...]:
    pattern = algebra.pattern
    while isinstance(pattern, (n.Slice, n.Distinct, n.Reduced)):
        pattern = pattern.input
    if algebra.form == QueryForm.SELECT and isinstance(pattern, n.Project):
        return tuple(v.name for v in pattern.vars)
    return ()


