"""``mode="recompute"``: the oracle of the continuous engine.

At every evaluation ``Γ(τ)`` is what pyoxigraph returns for the query over a store that holds the
static data plus one named graph per stream triple pattern, ``urn:cqels:window:<query>:<id>``,
holding exactly the triples of that pattern's window — for a pattern of a ``STREAM ?s`` block one
per stream it has read, ``urn:cqels:window:<query>:<id>:<stream>``. The store is kept up to date
incrementally (``on_insert``/``on_expire`` add and remove window triples; a triple pushed twice
stays until both copies have left), and the static part is copied again after a change event.
pyoxigraph's in-memory store keeps what a removed quad took, so the store is built again from the
quads it holds once the removals outnumber twice those (``_compact``).

The query text is the optimised algebra written by ``algebra.to_sparql``, after two rewrites:

- each stream triple pattern becomes ``GRAPH <its window graph> { triple }`` (a ``StreamPattern`` of
  several triples the join of those, which is what its BGP means with one window per triple), a
  stream path pattern ``GRAPH <its window graph> { s path o }`` over the triples its window holds;
  a ``STREAM ?s`` pattern ``VALUES (?g ?s) { (<window graph> <stream>) … } GRAPH ?g { triple }``
  over the window graphs of its streams (``?g`` internal), so the text is written again when a
  stream is read for the first time;
- each static ``GRAPH ?g`` gets ``FILTER (?g NOT IN (<window graphs>))``, so that the windows stay
  invisible to the static patterns; with ``FROM``/``FROM NAMED`` the window graphs are added as
  ``FROM NAMED`` so that the query's own dataset is otherwise kept as written.

A static ``GRAPH ?g`` over a VALUES, a sub-select or a MINUS is written graph by graph over the
static named graphs (``to_sparql.graph_by_graph``, as the static caches are), so the text is
written again at each copy of the static data.

The streams a restricted ``STREAM ?s`` reads (``streams_read``) are the ``?s`` of the solutions of
its restricting static sub-patterns over the static data, asked of pyoxigraph at each copy of it.

A ``FILTER(SEQ(…))`` (an algebra ``Seq``) has no SPARQL form: its event patterns read their window
graphs like any other, and at each evaluation its rows are computed from the windows' timed triples
(``_SeqRows``: the events of each step, their per-event FILTERs asked of pyoxigraph over a VALUES of
them, the matches enumerated by ``runtime.cep.all_matches`` with the guards and gap guards asked at
their levels) and written as a ``VALUES`` in its place.

A CONSTRUCT query's ``Γ`` is the bag of solutions of its WHERE clause over its in-scope variables
(what ``SELECT *`` would return, modifiers kept); the engine instantiates the template on them.
Every ORDER BY and LIMIT/OFFSET is run with the tie-break of ``algebra.ties`` (the projected
variables, ascending), the order the incremental operators use: ``evaluate`` and ``snapshot`` list
rows in that order. An ASK query runs as an ASK: ``Γ`` is one empty mapping when pyoxigraph
answers true, else empty.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from urllib.parse import quote

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import bottom_up
from cqels_endpoint.algebra.ties import break_ties
from cqels_endpoint.algebra.to_sparql import needs_store_graphs, to_sparql
from cqels_endpoint.algebra.variables import in_scope
from cqels_endpoint.caches.engines import static_solutions, store_graph_iris
from cqels_endpoint.engine.emission import EmittedRows
from cqels_endpoint.errors import PlanError
from cqels_endpoint.operators.seq import gap_guard_level, guard_levels, join_columns
from cqels_endpoint.plan.patterns import StreamTriple, map_stream_triples
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.query.serialize import write_expression, write_var
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.aggregates import CUSTOM_AGGREGATES
from cqels_endpoint.runtime.cep import GapGuards, GapTest, Guard, SeqSpec, SeqStep, all_matches
from cqels_endpoint.runtime.functions import CASTS
from cqels_endpoint.runtime.functions.extensions import custom_functions
from cqels_endpoint.terms import IRI, Var

Row = dict[str, ox.NamedNode | ox.BlankNode | ox.Literal]

# Window quads removed before the store is first rebuilt (``RecomputeEvaluator._compact``).
COMPACT_FLOOR = 4096


def seq_graph_iri(query_name: str, index: int) -> str:
    """The IRI of the named graph holding the matches of SEQ ``index`` of the query."""
    return f"urn:cqels:seq:{quote(query_name, safe='')}:{index}"


def window_graph_iri(query_name: str, pattern_id: int) -> str:
    """The IRI of the named graph holding the window of stream triple pattern ``pattern_id``."""
    return f"urn:cqels:window:{quote(query_name, safe='')}:{pattern_id}"


def stream_graph_iri(query_name: str, pattern_id: int, stream: str) -> str:
    """The IRI of the named graph holding the window of ``STREAM ?s`` pattern ``pattern_id`` on ``stream``."""
    return f"{window_graph_iri(query_name, pattern_id)}:{quote(stream, safe='')}"


def row_key(row: Row) -> frozenset:
    """A hashable form of a solution mapping, for bag differences."""
    return frozenset(row.items())


class RecomputeEvaluator:
    """Re-evaluates the whole query with pyoxigraph at every evaluation time (the Evaluator protocol).

    ``static`` is a ``StaticStore`` (anything iterable as pyoxigraph quads) or None; ``dictionary``
    decodes the window triples, which come as term ids (Γ is computed on terms); ``name`` names the
    window graphs.
    """

    def __init__(self, query: n.AlgebraQuery, patterns: list[StreamTriple], static=None, dictionary=None, *, name: str = "q"):
        self.query = query
        self.patterns = patterns
        self.static = static
        self.dictionary = dictionary
        self.name = name
        self.store = ox.Store()
        self.graphs = [ox.NamedNode(window_graph_iri(name, st.id)) for st in patterns]
        # The window graph of each stream a STREAM ?s pattern has read, by pattern id and stream.
        self._stream_graphs: dict[int, dict[str, ox.NamedNode]] = {st.id: {} for st in patterns if st.variable is not None}
        # The restricted ones: the SELECT of each restricting static sub-pattern's ?s, and the
        # streams they named at the last copy of the static data (``streams_read``).
        self._restrictions = {st.id: [_restriction(query, static, st.variable) for static in st.restricted_by] for st in patterns if st.restricted_by}
        self._streams_read: dict[int, frozenset[str]] = {}
        # One named graph per SEQ holding its matches at each evaluation (``_SeqRows``).
        self._seq_graphs = [seq_graph_iri(name, i) for i, _ in enumerate(x for x in walk(query.pattern) if isinstance(x, n.Seq))]
        # The extension functions it calls: one unregistered at an evaluation is an expression error there.
        self._extensions = sorted({
            e.iri.value for e in walk(query) if isinstance(e, ast.FunctionCall) and e.iri.value not in CASTS
        })
        self._store_graphs: tuple | None = None
        self._write()
        self._window_triples: list[dict[int, ox.Quad]] = [{} for _ in patterns]
        self._copies: list[Counter] = [Counter() for _ in patterns]
        # The timed triples of each window, as the SEQ operator keeps them: (triple, t) → [arrival, copies].
        self._times: list[dict[int, int]] = [{} for _ in patterns]
        self._timed: list[dict[tuple, list[int]]] = [{} for _ in patterns]
        self._arrivals = itertools.count()
        # Copied now: a query sees the static data of its registration from its first evaluation.
        self._copy_static()
        self._rows: list[Row] = []
        self._counts: Counter = Counter()
        self.evaluations = 0
        self._removed = 0  # window quads removed from the store since it was built (``_compact``)
        self._built = 0  # the quads it was built with

    # ------------------------------------------------------------------ the Evaluator protocol

    def on_insert(self, pattern_id: int, ids: tuple[int, ...], t: int, seq: int) -> None:
        terms = self.dictionary.decode_row(ids)
        graph = self.graphs[pattern_id] if len(terms) == 3 else self._stream_graph(pattern_id, terms[3].value)
        quad = ox.Quad(*terms[:3], graph)
        self._window_triples[pattern_id][seq] = quad
        copies = self._copies[pattern_id]
        copies[quad] += 1
        if copies[quad] == 1:
            self.store.add(quad)
        self._times[pattern_id][seq] = t
        timed = self._timed[pattern_id].setdefault((quad.triple, t), [next(self._arrivals), 0])
        timed[1] += 1

    def on_expire(self, pattern_id: int, seq: int) -> None:
        quad = self._window_triples[pattern_id].pop(seq)
        key = (quad.triple, self._times[pattern_id].pop(seq))
        timed = self._timed[pattern_id]
        timed[key][1] -= 1
        if not timed[key][1]:
            del timed[key]
        copies = self._copies[pattern_id]
        copies[quad] -= 1
        if copies[quad] == 0:
            del copies[quad]
            self.store.remove(quad)
            self._removed += 1
            if self._removed >= max(COMPACT_FLOOR, 2 * self._built):
                self._compact()

    def _compact(self) -> None:
        """The store built again from the quads it holds: pyoxigraph's in-memory store keeps what a
        removed quad took (about 420 bytes, its new terms included), so a window sliding over new
        subjects grew it without end (issue 31: ~0.8 KB per event of ``load.py``'s sample query).
        Rebuilt once the removals outnumber twice the quads of the last build, it holds at most
        that much dead weight, for O(1) copying per removal amortised."""
        quads = list(self.store)
        self.store = ox.Store()
        self.store.extend(quads)
        self._removed, self._built = 0, len(quads)

    def _stream_graph(self, pattern_id: int, stream: str) -> ox.NamedNode:
        """The window graph of ``STREAM ?s`` pattern ``pattern_id`` on ``stream``; the first time,
        the query text is written again to read it."""
        graphs = self._stream_graphs[pattern_id]
        graph = graphs.get(stream)
        if graph is None:
            graph = graphs[stream] = ox.NamedNode(stream_graph_iri(self.name, pattern_id, stream))
            self._write()
        return graph

    def _write(self) -> None:
        """The rewritten query (module docstring) over the window graphs known now, and its text."""
        stream_graphs = {pid: [(graph.value, stream) for stream, graph in graphs.items()] for pid, graphs in self._stream_graphs.items()}
        self._rewritten = _rewrite(self.query, [g.value for g in self.graphs], self._seq_graphs, stream_graphs)
        # Rewritten with the static named graphs at every copy when a GRAPH ?g is spelled graph by graph.
        self._by_graph = needs_store_graphs(self._rewritten)
        graph_ids = {g.value: i for i, g in enumerate(self.graphs)}
        self._seqs = [
            _SeqRows(node, graph_ids, ox.NamedNode(graph))
            for node, graph in zip((x for x in walk(self._rewritten.pattern) if isinstance(x, n.Seq)), self._seq_graphs)
        ]
        self.sparql = self._text({})

    def _window_graphs(self) -> set[ox.NamedNode]:
        """Every window graph: each pattern's, and each stream's of a ``STREAM ?s`` pattern."""
        return {*self.graphs, *(graph for graphs in self._stream_graphs.values() for graph in graphs.values())}

    def streams_read(self, pattern_id: int) -> frozenset[str] | None:
        selects = self._restrictions.get(pattern_id)
        if selects is None:
            return None
        if self._static_dirty:
            self._copy_static()
        streams = self._streams_read.get(pattern_id)
        if streams is None:
            streams = self._streams_read[pattern_id] = frozenset.intersection(*(self._streams(select) for select in selects))
        return streams

    def _streams(self, select: n.AlgebraQuery) -> frozenset[str]:
        """The stream IRIs that ``select`` (a SELECT of one variable) gives over the static data."""
        store_graphs = store_graph_iris(self.static) if needs_store_graphs(select) else None
        solutions = static_solutions(self.static, to_sparql(select, store_graphs=store_graphs))
        return frozenset(term.value for solution in solutions if isinstance(term := solution[0], ox.NamedNode))

    def on_static_change(self) -> None:
        # Re-read at the next evaluation: a change alone emits nothing (docs/ARCHITECTURE.md, "Static data and caches").
        self._static_dirty = True

    def evaluate(self, tau: int, signs: tuple[int, ...] = (1, -1)) -> list[tuple[Row, int]]:
        if self._static_dirty:
            self._copy_static()
        self.evaluations += 1
        if self._seqs:
            self.sparql = self._text({seq.node: seq.table(self) for seq in self._seqs})
        functions = custom_functions(self._extensions)
        solutions = self.store.query(self.sparql, custom_aggregate_functions=CUSTOM_AGGREGATES, custom_functions=functions)
        if isinstance(solutions, ox.QueryBoolean):
            rows = [{}] if solutions else []
        else:
            names = [variable.value for variable in solutions.variables]
            rows = [{name: solution[name] for name in names if solution[name] is not None} for solution in solutions]
        counts = Counter(row_key(row) for row in rows)
        deltas: list[tuple[Row, int]] = []
        # Bag difference, walking each side in its own order so that ORDER BY shows in the deltas.
        if 1 in signs:
            remaining = counts - self._counts
            for row in rows:
                key = row_key(row)
                if remaining[key] > 0:
                    remaining[key] -= 1
                    deltas.append((row, +1))
        if -1 in signs:
            gone = self._counts - counts
            for row in self._rows:
                key = row_key(row)
                if gone[key] > 0:
                    gone[key] -= 1
                    deltas.append((row, -1))
        self._rows, self._counts = rows, counts
        return deltas

    def emitted(self, tau: int, r2s: R2S) -> EmittedRows:
        if r2s is R2S.RSTREAM:
            self.evaluate(tau, ())
            return EmittedRows(self.snapshot())
        sign = 1 if r2s is R2S.ISTREAM else -1
        return EmittedRows([row for row, _sign in self.evaluate(tau, (sign,))])

    def snapshot(self) -> list[Row]:
        return [dict(row) for row in self._rows]

    def explain(self) -> str:
        tree = self.explain_tree()
        lines = [tree["what"], *(f"  {line}" for line in tree["details"])]
        lines += [f"  {child['what']}: {child['counters']['triples']} triple(s)" for child in tree["children"]]
        lines.append(f"  evaluations: {self.evaluations}, |Γ| = {len(self._rows)}")
        return "\n".join(lines)

    def explain_tree(self) -> dict:
        """``explain`` as a tree (``plan.explain.plan_tree``'s shape): the query pyoxigraph runs,
        one child per window graph."""
        windows = [
            {
                "id": f"W{st.id}", "what": self._window_text(st, graph), "line": None,
                "counters": {"triples": len(self._window_triples[st.id])}, "details": [], "children": [],
            }
            for st, graph in zip(self.patterns, self.graphs)
        ]
        return {
            "id": "", "what": f"recompute {self.name}: pyoxigraph re-evaluation at every evaluation time", "line": None,
            "counters": {"evaluations": self.evaluations, "Γ rows": len(self._rows)}, "details": [f"query: {self.sparql}"],
            "children": windows,
        }

    def _window_text(self, st: StreamTriple, graph: ox.NamedNode) -> str:
        if st.variable is None:
            return f"window {st.id} <{graph.value}> on <{st.stream.value}>"
        streams = len(self._stream_graphs[st.id])
        reads = "the streams its static data names" if st.restricted_by else "every stream"
        return f"window {st.id} <{graph.value}:…> on ?{st.variable.name} ({reads}; {streams} read so far)"

    # Re-evaluation reads the static data itself: no caches for the engine to build or describe.
    caches: tuple = ()
    describe_cache = None

    def close(self) -> None:
        """Drops the window copies and the static copy (the in-memory store)."""
        self.store = ox.Store()
        for triples in self._window_triples:
            triples.clear()

    # ------------------------------------------------------------------ static data

    def _copy_static(self) -> None:
        windows = self._window_graphs()
        for graph in list(self.store.named_graphs()):
            if graph not in windows:
                self.store.remove_graph(graph)
        self.store.clear_graph(ox.DefaultGraph())
        if self.static is not None:
            self.store.extend(iter(self.static))
        self._static_dirty = False
        self._streams_read = {}
        if self._by_graph:
            graphs = store_graph_iris(self.static)
            windows = {g.value for g in self.graphs}
            self._store_graphs = None if graphs is None else tuple(g for g in graphs if g.value not in windows)
            self.sparql = self._text({})

    def _text(self, tables: dict[n.Seq, n.Pattern]) -> str:
        """The query text, each SEQ written as its rows in ``tables`` (none: no rows)."""
        pattern = self._rewritten.pattern
        if self._seqs:

            def rows_of(node):
                return tables.get(node, _EMPTY_SEQ) if isinstance(node, n.Seq) else node

            pattern = bottom_up(pattern, rows_of)
        return to_sparql(replace(self._rewritten, pattern=pattern), store_graphs=self._store_graphs)

    def timed_triples(self, pattern_id: int) -> dict[tuple, list[int]]:
        """The window of ``pattern_id`` as timed triples: ``(triple, t)`` → ``[arrival, copies]``."""
        return self._timed[pattern_id]


_EMPTY_SEQ = n.Table((), ())  # a SEQ's rows before its first evaluation: none
_MATCH = "urn:cqels:match:"  # the nodes of a SEQ's graph: its events (per-event FILTERs), then its matches
_MATCH_VAR = Var("cqelsMatch")


class _Prefix:
    """The row of a prefix of a match, read lazily: variable → the term of its bound event (or of
    the gap event ``key``, for a gap guard)."""

    __slots__ = ("events", "gap", "keys", "position")

    def __init__(self, keys: tuple[int, ...], events: list, position: dict[Var, int], key: int | None = None) -> None:
        self.keys, self.events, self.position = keys, events, position
        self.gap = {} if key is None else events[key][3]

    def __getitem__(self, var: Var):
        if var in self.gap:
            return self.gap[var]
        return self.events[self.keys[self.position[var]]][3][var]


class _SeqRows:
    """The rows of one SEQ of the rewritten query over the windows' timed triples (module docstring).

    Events are numbered as the incremental operator numbers them: by the arrival of their last
    triple, then by the arrivals of their triples pattern by pattern, so that simultaneous events
    are ordered alike in both modes. The guards are asked by ``all_matches`` at their levels (as
    ``operators.seq`` asks them): a variable shared by two steps compares the store's terms, the
    other guards of a level are asked of pyoxigraph over the prefixes of that length (the matches of
    the SEQ cut after that bound step, ``_prefixes``) and the prefixes it keeps are those extended; a
    gap step's guards of that level over those prefixes, each with every event of the step that may
    fall in its gap, and the pairs it keeps are the events that count."""

    def __init__(self, node: n.Seq, graph_ids: dict[str, int], graph: ox.NamedNode) -> None:
        self.node = node
        self.graph = graph
        self.spec = SeqSpec(tuple(SeqStep(step.bound, step.low, step.high) for step in node.steps))
        # Per step: (pattern id, triple pattern) of its event patterns, now GRAPH <window> { triple }.
        self.slots = [
            [
                (graph_ids[g.name.value], g.pattern.triples[0])
                for pattern in step.patterns
                for g in walk(pattern)
                if isinstance(g, n.Graph)
            ]
            for step in node.steps
        ]
        self.columns = [
            tuple(dict.fromkeys(x for _, tp in slots for x in (tp.subject, tp.predicate, tp.object) if isinstance(x, Var)))
            for slots in self.slots
        ]
        self.bound = [index for index, step in enumerate(node.steps) if step.bound]
        self.position = {v: i for i, index in enumerate(self.bound) for v in self.columns[index]}  # var → bound step
        # Per level: the variables a shared variable's join compares, and the other guards.
        bound_columns = [[v.name for v in self.columns[i]] for i in self.bound]
        self.levels = {
            level: ([(Var(a), Var(b)) for a, b in filter(None, map(join_columns, exprs))],
                    tuple(e for e in exprs if join_columns(e) is None))
            for level, exprs in guard_levels(bound_columns, node.guards).items()
        }
        # Per gap step with guards: their level, the (bound, own) variables of their joins, the others.
        self.gap_levels: dict[int, tuple[int, list[tuple[Var, Var]], tuple]] = {}
        for index, step in enumerate(node.steps):
            if step.guards:
                own = self.columns[index]
                joins = [(Var(b), Var(a)) if Var(a) in own else (Var(a), Var(b)) for a, b in filter(None, map(join_columns, step.guards))]
                rest = tuple(e for e in step.guards if join_columns(e) is None)
                self.gap_levels[index] = (gap_guard_level(bound_columns, [v.name for v in own], step.guards), joins, rest)
        # Per gap: the last bound step its guards read (0: none).
        self.reads = [max((self.gap_levels[s][0] for s in gap if s in self.gap_levels), default=0) for gap in self.spec.gaps]

    def table(self, evaluator: RecomputeEvaluator) -> n.Pattern:
        """The SEQ's matches now, written into its graph (a node per match, a triple per column: terms
        stay the store's, blank nodes included), and the pattern reading them in the SEQ's place."""
        events: list[tuple[tuple, int, int, dict]] = []  # (order, step, t, binding)
        for index, step in enumerate(self.node.steps):
            found = self._events(index, evaluator)
            if step.filters:
                found = self._filtered(index, found, evaluator)
            events.extend((order, index, t, binding) for order, t, binding in found)
        events.sort(key=lambda event: event[0])
        entries = [(step, key, t) for key, (_order, step, t, _b) in enumerate(events)]
        guards: dict[int, Guard] = {}
        gap_guards: GapGuards = {}
        for level in range(1, len(self.bound) + 1):
            joins, rest = self.levels.get(level, ([], ()))
            if joins:
                guards[level] = self._joined(joins, events)
            here = {step: guard[1:] for step, guard in self.gap_levels.items() if guard[0] == level}
            for step, (gap_joins, _rest) in here.items():
                gap_guards[step] = (level, self._gap_joined(gap_joins, events))
            if not rest and not any(gap_rest for _joins, gap_rest in here.values()):
                continue
            prefixes = self._prefixes(level, entries, guards, gap_guards)
            if rest:
                rows = [_Prefix(keys, events, self.position) for keys in prefixes]
                prefixes = [prefixes[i] for i in self._kept(rows, rest, evaluator)]
                guards[level] = set(prefixes).__contains__
            for step, (_joins, gap_rest) in here.items():
                if gap_rest:
                    joined = gap_guards[step][1]
                    pairs = [(keys, key) for keys in prefixes for s, key, t in entries
                             if s == step and self._may_count(step, keys, t, events) and joined(keys, key)]
                    rows = [_Prefix(keys, events, self.position, key) for keys, key in pairs]
                    counted = {pairs[i] for i in self._kept(rows, gap_rest, evaluator)}
                    gap_guards[step] = (level, lambda keys, key, counted=counted: (keys, key) in counted)
        matches = all_matches(self.spec, entries, prefix_guards=guards, gap_guards=gap_guards)
        variables = tuple(v for index, step in enumerate(self.node.steps) if step.bound for v in self.columns[index])
        evaluator.store.remove_graph(self.graph)
        number = itertools.count()
        for keys, count in matches.items():
            values = [events[key][3][v] for key in keys for v in self.columns[events[key][1]]]
            for _ in range(count):
                match = ox.NamedNode(f"{_MATCH}{next(number)}")
                evaluator.store.extend(
                    ox.Quad(match, ox.NamedNode(_column(v)), term, self.graph) for v, term in zip(variables, values)
                )
        triples = tuple(ast.TriplePattern(_MATCH_VAR, IRI(_column(v)), v) for v in variables)
        return n.Graph(IRI(self.graph.value), n.BGP(triples))

    def _joined(self, joins: list[tuple[Var, Var]], events: list) -> Callable[[tuple[int, ...]], bool]:
        """The test of a prefix: the same term for each pair of ``joins``."""
        position = self.position

        def test(keys: tuple[int, ...]) -> bool:
            return all(events[keys[position[a]]][3][a] == events[keys[position[b]]][3][b] for a, b in joins)

        return test

    def _gap_joined(self, joins: list[tuple[Var, Var]], events: list) -> GapTest:
        """The test of a prefix and a gap event: the same term for each (bound, own) pair of ``joins``."""
        position = self.position

        def test(keys: tuple[int, ...], key: int) -> bool:
            return all(events[keys[position[a]]][3][a] == events[key][3][b] for a, b in joins)

        return test

    def _prefixes(self, level: int, entries: list, guards: dict[int, Guard], gap_guards: GapGuards) -> list[tuple[int, ...]]:
        """The prefixes of ``level`` bound events that may be extended: the matches of the SEQ cut
        after that bound step, its gaps checked but those whose guards read that step or a later one
        (a superset of the prefixes whose guards of that level ``all_matches`` will ask)."""
        last = self.bound[level - 1]
        gap_of = self.spec.automaton.step_gap
        kept = [i for i in range(last + 1) if gap_of[i] < 0 or self.reads[gap_of[i]] < level]
        renumbered = {step: i for i, step in enumerate(kept)}
        cut = SeqSpec(tuple(self.spec.steps[i] for i in kept))
        return list(all_matches(
            cut,
            [(renumbered[step], key, t) for step, key, t in entries if step in renumbered],
            prefix_guards=guards,
            gap_guards={renumbered[step]: guard for step, guard in gap_guards.items() if step in renumbered},
        ))

    def _may_count(self, step: int, keys: tuple[int, ...], t: int, events: list) -> bool:
        """Whether an event of gap step ``step`` at ``t`` can be in its gap in a match extending ``keys``."""
        gap = self.spec.automaton.step_gap[step]
        if gap >= len(keys):
            return t > events[keys[-1]][2]
        return (gap == 0 or events[keys[gap - 1]][2] < t) and t < events[keys[gap]][2]

    def _events(self, index: int, evaluator: RecomputeEvaluator) -> list[tuple[tuple, int, dict]]:
        """``(order, t, binding)`` of each event of step ``index`` in the windows."""
        slots = self.slots[index]
        by_subject: list[dict[tuple, list]] = []
        for pattern_id, _tp in slots:
            here: dict[tuple, list] = {}
            for (triple, t), (arrival, _copies) in evaluator.timed_triples(pattern_id).items():
                here.setdefault((triple.subject, t), []).append((arrival, triple))
            by_subject.append(here)
        found = []
        for subject, t in set.intersection(*(set(here) for here in by_subject)):
            for combination in itertools.product(*(sorted(here[subject, t]) for here in by_subject)):
                binding: dict[Var, object] = {}
                consistent = all(
                    binding.setdefault(x, term) == term
                    for (_id, tp), (_arrival, triple) in zip(slots, combination)
                    for x, term in zip((tp.subject, tp.predicate, tp.object), (triple.subject, triple.predicate, triple.object))
                    if isinstance(x, Var)
                )
                if consistent:
                    arrivals = tuple(arrival for arrival, _triple in combination)
                    found.append(((max(arrivals), arrivals), t, binding))
        return found

    def _filtered(self, index: int, found: list, evaluator: RecomputeEvaluator) -> list:
        """The events of step ``index`` its per-event FILTERs keep."""
        kept = self._kept([binding for _o, _t, binding in found], self.node.steps[index].filters, evaluator)
        return [found[i] for i in kept]

    def _kept(self, rows: Sequence, exprs: Sequence, evaluator: RecomputeEvaluator) -> list[int]:
        """The indexes of the ``rows`` (mappings from variables to terms) the FILTERs ``exprs``
        keep, asked of pyoxigraph over the rows written into the SEQ's graph (one node per row, a
        triple per variable the FILTERs read)."""
        if not rows:
            return []
        columns = tuple(dict.fromkeys(x for e in exprs for x in walk(e) if isinstance(x, Var)))
        evaluator.store.remove_graph(self.graph)
        evaluator.store.extend(
            ox.Quad(ox.NamedNode(f"{_MATCH}{number}"), ox.NamedNode(_column(v)), row[v], self.graph)
            for number, row in enumerate(rows)
            for v in columns
        )
        reads = " ".join(f"{write_var(_MATCH_VAR)} <{_column(v)}> {write_var(v)} ." for v in columns)
        conditions = " ".join(f"FILTER ({write_expression(e)})" for e in exprs)
        text = f"SELECT {write_var(_MATCH_VAR)} WHERE {{ GRAPH <{self.graph.value}> {{ {reads} }} {conditions} }}"
        kept = evaluator.store.query(text, base_iri=evaluator.query.base, custom_functions=custom_functions(evaluator._extensions))
        return [int(solution[_MATCH_VAR.name].value[len(_MATCH):]) for solution in kept]


def _column(var: Var) -> str:
    return f"urn:cqels:column:{quote(var.name, safe='')}"


def _rewrite(
    query: n.AlgebraQuery, graphs: list[str], seq_graphs: Sequence[str] = (), stream_graphs: dict[int, list[tuple[str, str]]] | None = None
) -> n.AlgebraQuery:
    """The query over the recompute store (see the module docstring); CONSTRUCT becomes SELECT.
    ``seq_graphs``: the graphs holding the matches of its SEQs, hidden like the window graphs;
    ``stream_graphs``: the ``(window graph, stream)`` of each ``STREAM ?s`` pattern, by id."""
    stream_graphs = stream_graphs or {}
    if query.form not in (QueryForm.SELECT, QueryForm.CONSTRUCT, QueryForm.ASK):
        msg = f"a continuous query is a SELECT, a CONSTRUCT or an ASK, not {query.form}"
        raise PlanError(msg)
    if query.form is QueryForm.CONSTRUCT:
        # Projected before the windows are mapped: the tie-break follows the query's own scope order.
        query = replace(query, form=QueryForm.SELECT, template=(), pattern=_project_in_scope(query.pattern))
    read = tuple(graph for found in stream_graphs.values() for graph, _stream in found)
    window_iris = tuple(IRI(g) for g in (*graphs, *read, *seq_graphs))
    if window_iris:
        hide = n.Graph  # static GRAPH ?g nodes, which must not range over the window graphs

        def hide_windows(node):
            if isinstance(node, hide) and isinstance(node.name, Var):
                return n.Filter((ast.In(node.name, window_iris, negated=True),), node, span=node.span)
            return node

        query = replace(query, pattern=bottom_up(query.pattern, hide_windows))
    def window(st: StreamTriple) -> n.Pattern:
        if st.variable is None:
            return n.Graph(IRI(graphs[st.id]), st.pattern)
        # GRAPH ?g over the windows of its streams, ?g paired with the stream, the value of ?s.
        graph = Var(f".window{st.id}")
        rows = tuple((IRI(g), IRI(stream)) for g, stream in stream_graphs.get(st.id, ()))
        return n.Join((n.Table((graph, st.variable), rows), n.Graph(graph, st.pattern)))

    query = map_stream_triples(query, window)
    if any(isinstance(d, ast.DatasetClause) for d in query.datasets):
        query = replace(query, datasets=query.datasets + tuple(ast.DatasetClause(iri, named=True) for iri in window_iris))
    # Ties of ORDER BY and LIMIT broken as the incremental operators break them (algebra.ties).
    return replace(query, pattern=break_ties(query.pattern))


def _restriction(query: n.AlgebraQuery, static: n.StaticPattern, var: Var) -> n.AlgebraQuery:
    """The SELECT of the values of ``var`` in the solutions of ``static`` over the query's static dataset."""
    datasets = tuple(d for d in query.datasets if isinstance(d, ast.DatasetClause))
    return n.AlgebraQuery(QueryForm.SELECT, n.Distinct(n.Project((var,), static.pattern)), datasets=datasets, base=query.base)


def _project_in_scope(pattern: n.Pattern) -> n.Pattern:
    """``pattern`` with a projection on its in-scope variables under its Slice/Distinct/Reduced."""
    match pattern:
        case n.Slice(start, length, inner):
            return n.Slice(start, length, _project_in_scope(inner), span=pattern.span)
        case n.Distinct(inner):
            return n.Distinct(_project_in_scope(inner), span=pattern.span)
        case n.Reduced(inner):
            return n.Reduced(_project_in_scope(inner), span=pattern.span)
    visible = tuple(v for v in in_scope(pattern) if not n.is_internal(v))
    return n.Project(visible, pattern)
