# distutils: language = c++
"""A shared plan's round in C (``engine.shared_plan``): what each query does once the shared
buffer fed and punctuated every plan of its unit.

A :class:`Member` is one query of a ``SharedPlan``: it counts an evaluation as
``IncrementalEvaluator._tick`` counts one (the rows its operators emitted, its evaluations) and
takes its sink's changes of its R2S's sign. Most queries of a unit take none in a round (their
FILTER rejected what entered, nothing of theirs left): ``run_round`` counts their evaluation and
moves their clock in C, with no Python frame, no ``Emission`` and no outbox work, and calls Python
(``ContinuousQuery._emit``) only for the queries that emit. ``Engine._dispatch`` runs one round per
unit and event (``SharedPlan.run``); an advance, and a plan's first event, evaluate each query on
its own through the same ``Member.evaluate``.
"""

from libc.stdint cimport int64_t
from libc.time cimport time_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Node
from cqels_endpoint.operators._sink cimport _SinkNode
from cqels_endpoint.runtime._latency cimport observe_latency

from cqels_endpoint.engine.emission import IdRows, new_emission
from cqels_endpoint.query.kinds import R2S, QueryForm

cdef object _ISTREAM = R2S.ISTREAM

cdef extern from "<time.h>" nogil:
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int, timespec*)
    int CLOCK_MONOTONIC


cdef inline double _perf_counter() noexcept:
    """``time.perf_counter()`` (CLOCK_MONOTONIC on Linux) without a Python call or float."""
    cdef timespec now
    clock_gettime(CLOCK_MONOTONIC, &now)
    return <double>now.tv_sec + <double>now.tv_nsec * 1e-9


def _nothing():
    """What a member's emitted rows release: the shared buffer releases what it holds itself."""


cdef class _Latency:
    """A ``LatencyHistogram`` observed in C: ``observe`` without its Python frame, its bounds read
    once (a histogram's bounds and bucket list are fixed at its making)."""

    cdef object histogram
    cdef list counts
    cdef vector[double] bounds

    def __init__(self, histogram):
        self.histogram = histogram
        self.counts = histogram._counts
        for bound in histogram.bounds:
            self.bounds.push_back(bound)

    cdef int observe(self, double seconds) except -1:
        return observe_latency(self.histogram, self.counts, self.bounds, seconds)


cdef class Member:
    """One query of a shared plan (module docstring). ``first``: the first operator of its plan,
    which the plan's ``Fan`` pushes to; ``errors``: the fan's, by ``id`` of that operator;
    ``decode_all``: what decodes its emitted rows (the plan's, once per row and round)."""

    cdef readonly object query
    cdef _SinkNode sink
    cdef _Latency latency, emission_latency
    cdef readonly bint left              # it left the plan (``leave``): the round skips it
    cdef object evaluator, operators, errors, first_id, writer, template_writer
    cdef dict decoded                    # the plan's rows decoded in this round, for its sink's schema
    cdef object decode                   # a row of ids → its mapping
    cdef bint entered                    # ISTREAM: it emits the rows that entered Γ; DSTREAM: those that left
    cdef bint select                     # a SELECT: its emission made here (``_emit_select``)
    cdef int64_t mark                    # its operators' emitted total after its last evaluation
    cdef int64_t tick_rows, peak         # the evaluator's ``tick_rows`` and ``peak_tick_rows``, as last written

    def __init__(self, query, first, dict errors, dict decoded):
        evaluator = query.evaluator
        self.query = query
        self.evaluator = evaluator
        self.sink = evaluator.sink  # compiled: the plan's only source is a compiled buffer
        self.latency = _Latency(query.latency)
        self.emission_latency = _Latency(query.emission_latency)
        self.operators = list(evaluator._operators)
        self.errors = errors
        self.first_id = id(first)
        self.decoded = decoded
        self.decode = evaluator._rows.decode
        self.writer = evaluator._writer
        self.template_writer = evaluator._template_writer
        self.entered = query.r2s is _ISTREAM
        self.select = query.algebra.form == QueryForm.SELECT
        self.mark = self._emitted()
        self.tick_rows = evaluator.tick_rows
        self.peak = evaluator.peak_tick_rows

    def leave(self):
        """It left its plan (unregistered or failed), perhaps during a round."""
        self.left = True

    cpdef list decode_all(self, list rows):
        """Its emitted rows as mappings, each row decoded once per round for the plan's queries
        of its schema (the queries that emit one row, the triple that entered, say); each
        emission gets its own copy of the mapping."""
        cdef dict decoded = self.decoded
        cdef list mappings = []
        for row in rows:
            mapping = decoded.get(row)
            if mapping is None:
                mapping = decoded[row] = self.decode(row)
            mappings.append((<dict>mapping).copy())
        return mappings

    cdef int64_t _emitted(self) except? -1:
        """``operators.emitted_total`` of its plan (read in C for a ``Node``)."""
        cdef int64_t total = 0
        for operator in self.operators:
            if isinstance(operator, Node):
                total += (<Node>operator).outputs_emitted
            else:
                total += operator.outputs_emitted
        return total

    cdef list _take(self):
        """The evaluation counted (its rows, ``tick_rows``, ``peak_tick_rows``, ``evaluations``)
        and the sink's changes taken: the rows of ids it emits, or None when none has its R2S's
        sign. A shared plan has no ORDER BY, so the sink's changes are what it emits."""
        evaluator = self.evaluator
        cdef int64_t total = self._emitted()
        cdef int64_t tick = total - self.mark
        self.mark = total
        if tick != self.tick_rows:  # written only when it changes: most rounds repeat the last
            self.tick_rows = tick
            evaluator.tick_rows = tick
            if tick > self.peak:
                self.peak = tick
                evaluator.peak_tick_rows = tick
        evaluator.evaluations += 1
        pending = self.sink._pending
        if not pending:
            return None
        cdef list rows = []
        cdef int64_t count
        cdef bint entered = self.entered
        for row, value in (<dict>pending).items():
            count = value
            if (count > 0) == entered:
                if count == 1 or count == -1:  # nearly every change: one occurrence
                    rows.append(row)
                else:
                    rows.extend([row] * abs(count))
        (<dict>pending).clear()  # what ``Sink.take`` does, keeping the sink's counter
        if not rows:
            return None
        return rows

    def evaluate(self, tau):
        """``ContinuousQuery._evaluate`` at ``tau`` once the round fed and punctuated its plan:
        raises what its plan raised in the round; with no change of its R2S's sign, counts the
        evaluation and moves its clock; else emits as an evaluation does."""
        self._evaluate(tau, None, False)

    cdef int _evaluate(self, tau, received, bint arrived) except -1:
        """``evaluate``; ``arrived``: the round's event arrived at ``received`` (the emission
        latency's start), set on the query when it emits."""
        errors = self.errors
        if errors:
            error = errors.get(self.first_id)
            if error is not None:
                raise error
        cdef list rows = self._take()
        query = self.query
        if rows is None:
            query._clock = tau  # caught up by the fan-out before the round (``engine.fanout``)
            query._evaluations += 1
        else:
            if arrived:
                query._received = received
            if self.select:
                self._emit_select(query, tau, rows)
            else:
                query._emit(tau, IdRows(rows, self.decode_all, self.writer, _nothing, self.template_writer))
        return 0

    cdef int _emit_select(self, query, tau, list rows) except -1:
        """``ContinuousQuery._emit`` of a SELECT's rows (nonempty), without ``IdRows``: decoded
        for the subscribers that read terms (or none yet), written as JSON for those that read
        JSON, the emission latency observed."""
        query._clock = tau
        query._evaluations += 1
        subscribers, json_only = query._subscribers, query._json_only
        decoded = self.decode_all(rows) if not subscribers or len(json_only) < len(subscribers) else None
        bindings = self.writer.write(rows) if json_only else None
        query._outbox.append(
            new_emission(query.name, tau, query.r2s, variables=query.variables, rows=decoded, bindings=bindings)
        )
        received = query._received
        if received:
            self.emission_latency.observe(_perf_counter() - received)
        return 0


def run_round(list members, object when, object received, object fail, double started):
    """Evaluates every live member at the event time ``when`` (or its clock, when later), as
    ``Engine._dispatch`` runs a query: its time observed in its latency (the first's from
    ``started``, so with the shared feed), its failure handed to ``fail(query, error)``, which
    stops it alone. ``received``: the event's arrival, for the emission latency."""
    cdef Member member
    cdef double last = started, now
    for member in members:
        if member.left:  # failed in this round
            continue
        query = member.query
        clock = query._clock
        tau = when if clock is None or clock < when else clock
        try:
            member._evaluate(tau, received, True)
        except Exception as error:  # one query's failure must not stop the others
            fail(query, error)
            last = _perf_counter()
            continue
        now = _perf_counter()
        member.latency.observe(now - last)
        last = now
