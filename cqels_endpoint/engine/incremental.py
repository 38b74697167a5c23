"""The evaluator of ``mode="incremental"``: the physical plan run as push operators on signed deltas.

The engine (``core.py``) owns time and windows and drives one evaluator per registered query
through the ``Evaluator`` protocol: ``on_insert``/``on_expire`` when a stream triple enters or
leaves the window of one stream triple pattern, ``evaluate(tau)`` at each evaluation time. Here
those calls become leaf deltas of the plan's window buffers, and ``evaluate`` is the punctuation
that closes the tick: every source flushes its pending deltas, the operators push the derived
deltas up to the sink, and the net change of Γ since the previous evaluation comes back decoded.

With a top-level ORDER BY (or LIMIT/OFFSET), the plan's ``OrderNode`` operator keeps Γ sorted:
``evaluate`` lists the rows that entered in ORDER BY order then those that left in their previous
order, and ``snapshot`` lists Γ in order — what the recompute oracle's SPARQL returns.

Static caches are built by the engine's cache engine and rebuilt on the store's change events by
``caches.rebuild``; the engine applies each build as its difference from the content installed
(``stage_cache`` part by part, then ``release_caches``: docs/ARCHITECTURE.md, "Static data and
caches"). ``install_caches`` replaces a cache's content whole (the instance table of a group).

Term ids: a stream triple comes encoded (the engine encodes each event once,
``TermDictionary.encode_triples``) and its window buffer takes one dictionary reference per
position of each copy; each cached mapping is encoded when its cache is installed; the references
are dropped when the triple expires or the mapping leaves the cache — but only after the
``evaluate`` that reports the retraction has decoded it, so a -1 row can always be decoded.

The compiled operators (``operators/_base.pyx``) push batches of id rows to each other through C:
``on_insert``/``on_expire`` is one call into the pattern's window buffer, which queues the delta in
its batch; ``evaluate`` is one call (``operators.punctuate_all``) that punctuates every source, and
the compiled part of the plan runs without a Python frame per operator, up to the compiled sink or
to the first Python operator (ORDER BY, a path window), which receives Deltas.

Rows per tick: an evaluation's size is the number of deltas the plan's operators emitted during it
(the increase of the sum of their ``outputs`` counters, sources flushing included): ``tick_rows``
after each evaluation, ``peak_tick_rows`` the largest so far. With ``max_tick_rows`` set, it is
checked after each source has flushed and ``LimitExceeded`` raised past it (``runtime.limits``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.engine.emission import BindingsWriter, IdRows, RowDecoder, TemplateWriter
from cqels_endpoint.operators import emitted_total, punctuate_all
from cqels_endpoint.operators.base import Operator, Sink
from cqels_endpoint.operators.build import BuiltPlan, build_operators
from cqels_endpoint.operators.order import Order
from cqels_endpoint.operators.path import PathWindow
from cqels_endpoint.operators.shared.join import WindowCopies
from cqels_endpoint.plan.compile import compile_plan
from cqels_endpoint.plan.explain import explain_plan, plan_tree
from cqels_endpoint.plan.nodes import PlanNode, StaticCache
from cqels_endpoint.plan.patterns import StreamTriple
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python
from cqels_endpoint.runtime.limits import LimitExceeded


def release_rows_python(dictionary, rows: Sequence[tuple]) -> None:
    """Drops one reference to each id of ``rows`` (None: an unbound column). The reference version
    of ``release_rows`` (compiled in ``engine/_incremental.pyx`` unless ``CQELS_PURE_PYTHON=1``)."""
    decref = dictionary.decref
    for ids in rows:
        for value in ids:
            if value is not None:
                decref(value)


if use_pure_python():
    WindowEntry = TermDictionary = release_rows = None
else:
    with compiled_imports("incremental evaluator's window entry"):
        from cqels_endpoint.engine._incremental import WindowEntry, release_rows
        from cqels_endpoint.runtime._dictionary import TermDictionary

Term = ox.NamedNode | ox.BlankNode | ox.Literal


class _PathWindowCopies:
    """What a window buffer does itself for a path window: the window is a *set* of triples, so
    only the first copy of a triple enters the path window (as its leaf) and it leaves with the last;
    the references of the other copies are released after the next evaluation."""

    def __init__(self, window: PathWindow, release: Callable[[tuple], None]) -> None:
        self.window = window
        self.release = release
        self.copies = WindowCopies()

    def insert(self, seq: int, ids: tuple[int, int, int]) -> None:
        if self.copies.add(seq, ids):
            self.window.insert(seq, ids)
        else:
            self.release(ids)

    def expire(self, seq: int) -> None:
        left = self.copies.remove(seq)
        if left is not None:
            self.window.expire(left[0])


class IncrementalEvaluator:
    """Γ of one continuous query maintained incrementally, behind the Evaluator protocol.

    ``query`` is the optimised algebra, ``patterns`` the engine's ``plan.patterns.stream_triples``
    of it, ``static`` the static store (a ``StaticStore``, a ``pyoxigraph.Store`` or None) and
    ``dictionary`` the engine's shared ``TermDictionary``. Construction compiles the plan
    (``PlanError`` for constructs without incremental operators yet); the static caches
    (``built.caches``) start empty until the engine installs their first build, before the query's
    first evaluation. ``describe_cache(node)``, set by the engine, gives the lines ``explain``
    shows under a cache (its size, version, engine, rebuild history). ``max_tick_rows``: the
    bound on the rows of one evaluation (module docstring), None for none.
    """

    def __init__(
        self, query: n.AlgebraQuery, patterns: Sequence[StreamTriple], static: object, dictionary, max_tick_rows: int | None = None
    ) -> None:
        self.query = query
        self.max_tick_rows = max_tick_rows
        self.tick_rows = 0
        self.peak_tick_rows = 0
        self.static = static
        self.dictionary = dictionary
        self.plan = compile_plan(query, patterns)
        # Rows whose references are dropped once the current evaluation has decoded its deltas: the
        # operators hand them over through its ``append`` (no Python frame per row), so it stays
        # one list, emptied in place.
        self._releasing: list[tuple] = []
        # NOW() is the evaluation time: rows enter the operators during evaluate(tau).
        self._tau = 0
        self.built: BuiltPlan = build_operators(
            self.plan, dictionary, self._releasing.append, query.source, base_iri=query.base, now=lambda: self._tau
        )
        # Where each stream pattern's copies go: its window buffer (one per stream for STREAM ?s),
        # which keeps the set of triples.
        self._windows = {
            pattern_id: _PathWindowCopies(buffer, self._releasing.append) if isinstance(buffer, PathWindow) else buffer
            for pattern_id, buffer in self.built.buffers.items()
        }
        # STREAM ?s leaves restricted by static data: the (cache operator, column of ?s) of each
        # cache restricting them, and the streams they named when last asked (``streams_read``).
        operators = self.built.operators
        self._restrictions = {
            leaf.pattern_id: [(operators[cache.id], cache.schema.index(leaf.stream_column)) for cache in leaf.restricted_by]
            for leaf in self.plan.leaves.values()
            if leaf.restricted_by
        }
        self._streams_read: dict[int, tuple[tuple[int, ...], frozenset[str]]] = {}
        self._timed = self.built.timed
        compiled = TermDictionary is not None and isinstance(dictionary, TermDictionary)
        self._release_rows = release_rows if compiled else release_rows_python
        if compiled and not self._timed:
            # Without SEQ event patterns the window calls are the compiled twins of the methods
            # below (engine/_incremental.pyx): the event feed reaches the buffers through C.
            entry = WindowEntry(dictionary, self._windows)
            self.on_insert, self.on_expire = entry.insert, entry.expire
        self._operators = list(self.built.operators.values())
        self._sources = self.built.sources
        self.sink: Sink = self.built.sink
        self._order: Order | None = None if self.plan.order is None else self.built.operators[self.plan.order.id]
        self.evaluations = 0
        self._closed = False
        self._rows = RowDecoder(dictionary, self.sink.schema)  # the rows as mappings, for subscribers of terms
        self._writer = BindingsWriter(dictionary, self.sink.schema)
        self._template_writer = (
            TemplateWriter(dictionary, self.sink.schema, query.template) if query.form == QueryForm.CONSTRUCT else None
        )
        self.describe_cache: Callable[[StaticCache], list[str]] | None = None
        # The window buffer it reads with other queries (``adopt_buffer``), which it does not close.
        self._adopted: object | None = None

    # ------------------------------------------------------------------ the Evaluator protocol

    def on_insert(self, pattern_id: int, ids: tuple[int, ...], t: int, seq: int) -> None:
        """The triple of term ids ``ids`` (timestamp ``t``; for a ``STREAM ?s`` pattern, followed by
        the id of its stream) enters the window of stream triple pattern ``pattern_id`` as copy ``seq``.

        A window is a graph, a *set* of triples (Γ is SPARQL over the windows as named graphs:
        docs/ARCHITECTURE.md, "Windows and time"): a triple already in the window does not enter
        it again, and stays until its last copy has left. The window buffer keeps that set
        (``operators.shared.join.WindowBufferBase``) and holds a reference to each id of a copy
        until it hands it back.
        """
        self.dictionary.incref_many(ids)
        timed = self._timed.get(pattern_id)
        if timed is None:
            self._windows[pattern_id].insert(seq, ids)
        else:
            # An event pattern of a SEQ: its events are told apart by their times.
            timed.insert(pattern_id, seq, ids, t)

    def streams_read(self, pattern_id: int) -> frozenset[str] | None:
        """The streams a ``STREAM ?s`` pattern reads: the IRIs its restricting caches hold as ``?s``
        (all of them), as the next evaluation sees the caches; None when nothing restricts it."""
        restriction = self._restrictions.get(pattern_id)
        if restriction is None:
            return None
        version = tuple(operator.replacements for operator, _column in restriction)
        known = self._streams_read.get(pattern_id)
        if known is None or known[0] != version:
            ids = set.intersection(*(operator.released_values(column) for operator, column in restriction))
            decode = self.dictionary.decode
            streams = frozenset(term.value for term in map(decode, ids) if isinstance(term, ox.NamedNode))
            known = self._streams_read[pattern_id] = (version, streams)
        return known[1]

    def on_expire(self, pattern_id: int, seq: int) -> None:
        """The copy inserted as ``seq`` leaves the window of pattern ``pattern_id``."""
        timed = self._timed.get(pattern_id)
        if timed is None:
            self._windows[pattern_id].expire(seq)
        else:
            timed.expire(pattern_id, seq)

    def evaluate(self, tau: int, signs: tuple[int, ...] = (1, -1)) -> list[tuple[dict[str, Term], int]]:
        """Closes the tick at ``tau``: the changes of Γ since the previous evaluation whose sign is
        in ``signs``, one entry per row occurrence with its sign (+1 entered, -1 left), decoded;
        cancelling changes are not reported. With an ORDER BY, the entries are in its order (see
        the module docstring)."""
        changes = [(self.decode(row), sign) for row, sign in self.evaluate_rows(tau) if sign in signs]
        self.release_decoded()
        return changes

    def emitted(self, tau: int, r2s: R2S) -> IdRows:
        """Closes the tick at ``tau`` like ``evaluate``: the rows ``r2s`` emits (the changes of its
        sign, or Γ for RSTREAM) as rows of ids, valid until the returned rows are released."""
        if r2s is R2S.RSTREAM:
            # Γ itself is emitted: the tick's changes are taken (and ORDER BY's previous order
            # forgotten) but not listed row by row.
            taken = self._tick(tau)
            if self._order is not None:
                self._order.arrange(taken)
            rows, decode_all = self.snapshot_rows(), self._rows.snapshot
        else:
            sign = 1 if r2s is R2S.ISTREAM else -1
            rows, decode_all = [row for row, s in self.evaluate_rows(tau) if s == sign], self._rows.decode_all
        return IdRows(rows, decode_all, self._writer, self.release_decoded, self._template_writer)

    def evaluate_rows(self, tau: int) -> list[tuple[tuple, int]]:
        """``evaluate`` before decoding: rows of term ids aligned with ``sink.schema``. The ids of
        rows that left stay decodable until ``release_decoded()``."""
        taken = self._tick(tau)
        if self._order is not None:
            return self._order.arrange(taken)
        changes: list[tuple[tuple, int]] = []
        append = changes.append
        for row, count in taken:
            if count == 1 or count == -1:  # nearly every change: one occurrence
                append((row, count))
            else:
                changes.extend([(row, 1 if count > 0 else -1)] * abs(count))
        return changes

    def _tick(self, tau: int) -> list[tuple[tuple, int]]:
        """Punctuates the plan at ``tau`` (bounded by ``max_tick_rows``): the sink's net changes
        ``(row, signed count)`` since the previous tick."""
        self._tau = tau
        operators = self._operators
        start = emitted_total(operators)
        bound = self.max_tick_rows
        if bound is None:
            punctuate_all(self._sources, tau)
        else:
            for source in self._sources:
                punctuate_all([source], tau)
                if (rows := emitted_total(operators) - start) > bound:
                    msg = f"an evaluation at {tau} produced more than {bound} intermediate rows (max_tick_rows): {rows} so far"
                    raise LimitExceeded(msg)
        self.tick_rows = emitted_total(operators) - start
        self.peak_tick_rows = max(self.peak_tick_rows, self.tick_rows)
        self.evaluations += 1
        return self.sink.take()

    def adopt_buffer(self, pattern_id: int, buffer: Operator) -> tuple[Operator, int]:
        """Reads pattern ``pattern_id`` through ``buffer``, a window buffer other queries read too
        (``engine.shared_plan``), in place of its own, which holds nothing yet; returns where its
        own buffer pushed, which ``buffer`` now feeds (through a ``Fan``). ``explain`` shows the
        shared buffer's counters: those of its own, since each would have had the same calls.
        Its evaluations are then counted, and its sink's changes taken, by the plan
        (``engine._shared_round.Member``)."""
        own = self._windows[pattern_id]
        if len(own):
            msg = f"the window buffer of pattern {pattern_id} holds triples: it cannot be shared now"
            raise ValueError(msg)
        node_id = self.plan.leaves[pattern_id].id
        self._windows[pattern_id] = self.built.buffers[pattern_id] = self.built.operators[node_id] = buffer
        self._sources[self._sources.index(own)] = buffer
        self._operators[self._operators.index(own)] = buffer
        self._adopted = buffer
        target = (own.downstream, own.downstream_port)
        own.close()
        self.release_decoded()  # what it still held of triples gone before
        return target

    def snapshot(self) -> list[dict[str, Term]]:
        """Γ at the last evaluation, a bag of solution mappings (in ORDER BY order if the query has one)."""
        return self._rows.snapshot(self.snapshot_rows())

    def snapshot_rows(self) -> list[tuple]:
        """``snapshot`` before decoding."""
        return self.sink.rows() if self._order is None else self._order.rows()

    def on_static_change(self) -> None:
        """Nothing to do now: the engine's rebuild manager rebuilds the caches that read the
        changed graphs in the background and installs them (``install_caches``)."""

    @property
    def caches(self) -> Sequence[tuple]:
        """The ``(StaticCache node, operator)`` of each static cache of the plan."""
        return self.built.caches

    def install_caches(self, builds: Sequence[tuple[Any, Sequence[tuple]]]) -> None:
        """Makes each ``(operator, rows)`` the content of that static cache operator (rows of
        pyoxigraph terms or None); the differences enter the plan with the next evaluation."""
        encode = self.dictionary.encode
        encoded = [
            (operator, [tuple(None if term is None else encode(term) for term in row) for row in rows])
            for operator, rows in builds
        ]
        for operator, rows in encoded:
            # replace() takes over the reference each encode() returned.
            operator.replace(rows)

    def stage_cache(self, operator: Any, added: Sequence[tuple], removed: Sequence[tuple]) -> None:
        """One part of a change of the static cache ``operator`` (rows of pyoxigraph terms or None):
        ``added`` rows enter, ``removed`` rows (in the cache) leave, at the evaluation after
        ``release_caches``; until then evaluations see the cache as it was."""
        encode, lookup = self.dictionary.encode, self.dictionary.lookup
        operator.stage(
            # stage() takes over the reference each encode() returned; a row leaving holds its own.
            [tuple(None if term is None else encode(term) for term in row) for row in added],
            [tuple(None if term is None else lookup(term) for term in row) for row in removed],
        )

    def release_caches(self, operators: Sequence[Any]) -> None:
        """The changes staged in ``operators`` enter the plan together with the next evaluation."""
        for operator in operators:
            operator.release_staged()

    def discard_caches(self, operators: Sequence[Any]) -> None:
        """Undoes the changes staged in ``operators`` (their install failed part way)."""
        for operator in operators:
            operator.discard_staged()

    def explain(self) -> str:
        """The physical plan with each operator's live counters, and the size of Γ."""
        size = self.sink.counters()["rows"]
        text = explain_plan(self.plan, self._counters, self.describe_cache)
        return text + f"\n  Γ: {size} rows after {self.evaluations} evaluations"

    def explain_tree(self) -> dict[str, Any]:
        """``explain`` as ``plan.explain.plan_tree`` gives it, Γ's size and the evaluations as the
        root's counters."""
        tree = plan_tree(self.plan, self._counters, self.describe_cache)
        tree["counters"] = {"Γ rows": self.sink.counters()["rows"], "evaluations": self.evaluations}
        return tree

    def close(self) -> None:
        """Drops every dictionary reference the plan holds (the query was unregistered)."""
        if self._closed:
            return
        self._closed = True
        for operator in self.built.operators.values():
            if operator is not self._adopted:  # its other readers close it (engine.shared_plan)
                operator.close()
        self.release_decoded()

    # ------------------------------------------------------------------ helpers

    def decode(self, row: tuple) -> dict[str, Term]:
        """A row of ``sink.schema`` as a solution mapping."""
        return self._rows.decode(row)

    def release_decoded(self) -> None:
        """Drops the references of the rows that left with the last evaluation (decoded by now)."""
        releasing = self._releasing.copy()
        self._releasing.clear()
        self._release_rows(self.dictionary, releasing)

    def _counters(self, node: PlanNode) -> dict[str, Any]:
        operator: Operator | None = self.built.operators.get(node.id)
        return {} if operator is None else operator.counters()
