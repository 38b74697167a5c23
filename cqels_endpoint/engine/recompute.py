"""``mode="recompute"``: the oracle of the continuous engine.

At every evaluation ``Γ(τ)`` is what pyoxigraph returns for the query over a store that holds the
static data plus one named graph per stream triple pattern, ``urn:cqels:window:<query>:<id>``,
holding exactly the triples of that pattern's window. The store is kept up to date incrementally
(``on_insert``/``on_expire`` add and remove window triples; a triple pushed twice stays until both
copies have left), and the static part is copied again after a change event.

The query text is the optimised algebra written by ``algebra.to_sparql``, after two rewrites:

- each stream triple pattern becomes ``GRAPH <its window graph> { triple }`` (a ``StreamPattern`` of
  several triples the join of those, which is what its BGP means with one window per triple), a
  stream path pattern ``GRAPH <its window graph> { s path o }`` over the triples its window holds;
- each static ``GRAPH ?g`` gets ``FILTER (?g NOT IN (<window graphs>))``, so that the windows stay
  invisible to the static patterns; with ``FROM``/``FROM NAMED`` the window graphs are added as
  ``FROM NAMED`` so that the query's own dataset is otherwise kept as written.

A static ``GRAPH ?g`` over a VALUES, a sub-select or a MINUS is written graph by graph over the
static named graphs (``to_sparql.graph_by_graph``, as the static caches are), so the text is
written again at each copy of the static data.

A CONSTRUCT query's ``Γ`` is the bag of solutions of its WHERE clause over its in-scope variables
(what ``SELECT *`` would return, modifiers kept); the engine instantiates the template on them.
Every ORDER BY and LIMIT/OFFSET is run with the tie-break of ``algebra.ties`` (the projected
variables, ascending), the order the incremental operators use: ``evaluate`` and ``snapshot`` list
rows in that order. An ASK query runs as an ASK: ``Γ`` is one empty mapping when pyoxigraph
answers true, else empty.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from urllib.parse import quote

import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import bottom_up
from cqels_endpoint.algebra.ties import break_ties
from cqels_endpoint.algebra.to_sparql import needs_store_graphs, to_sparql
from cqels_endpoint.algebra.variables import in_scope
from cqels_endpoint.caches.engines import store_graph_iris
from cqels_endpoint.engine.emission import EmittedRows
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan.patterns import StreamTriple, map_stream_triples
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.runtime.aggregates import CUSTOM_AGGREGATES
from cqels_endpoint.runtime.functions.extensions import custom_functions
from cqels_endpoint.terms import IRI, Var

Row = dict[str, ox.NamedNode | ox.BlankNode | ox.Literal]


def window_graph_iri(query_name: str, pattern_id: int) -> str:
    """The IRI of the named graph holding the window of stream triple pattern ``pattern_id``."""
    return f"urn:cqels:window:{quote(query_name, safe='')}:{pattern_id}"


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
        self._rewritten = _rewrite(query, [g.value for g in self.graphs])
        # Rewritten with the static named graphs at every copy when a GRAPH ?g is spelled graph by graph.
        self._by_graph = needs_store_graphs(self._rewritten)
        self.sparql = to_sparql(self._rewritten)
        self._window_triples: list[dict[int, ox.Triple]] = [{} for _ in patterns]
        self._copies: list[Counter] = [Counter() for _ in patterns]
        # Copied now: a query sees the static data of its registration from its first evaluation.
        self._copy_static()
        self._rows: list[Row] = []
        self._counts: Counter = Counter()
        self.evaluations = 0

    # ------------------------------------------------------------------ the Evaluator protocol

    def on_insert(self, pattern_id: int, ids: tuple[int, int, int], t: int, seq: int) -> None:
        triple = ox.Triple(*self.dictionary.decode_row(ids))
        self._window_triples[pattern_id][seq] = triple
        copies = self._copies[pattern_id]
        copies[triple] += 1
        if copies[triple] == 1:
            self.store.add(ox.Quad(triple.subject, triple.predicate, triple.object, self.graphs[pattern_id]))

    def on_expire(self, pattern_id: int, seq: int) -> None:
        triple = self._window_triples[pattern_id].pop(seq)
        copies = self._copies[pattern_id]
        copies[triple] -= 1
        if copies[triple] == 0:
            del copies[triple]
            self.store.remove(ox.Quad(triple.subject, triple.predicate, triple.object, self.graphs[pattern_id]))

    def on_static_change(self) -> None:
        # Re-read at the next evaluation: a change alone emits nothing (docs/ARCHITECTURE.md, "Static data and caches").
        self._static_dirty = True

    def evaluate(self, tau: int, signs: tuple[int, ...] = (1, -1)) -> list[tuple[Row, int]]:
        if self._static_dirty:
            self._copy_static()
        self.evaluations += 1
        solutions = self.store.query(self.sparql, custom_aggregate_functions=CUSTOM_AGGREGATES, custom_functions=custom_functions())
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
        lines = [f"recompute {self.name}: pyoxigraph re-evaluation at every evaluation time", f"  query: {self.sparql}"]
        for st, graph in zip(self.patterns, self.graphs):
            size = len(self._window_triples[st.id])
            lines.append(f"  window {st.id} <{graph.value}>: {size} triple(s) on <{st.stream.value}>")
        lines.append(f"  evaluations: {self.evaluations}, |Γ| = {len(self._rows)}")
        return "\n".join(lines)

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
        windows = set(self.graphs)
        for graph in list(self.store.named_graphs()):
            if graph not in windows:
                self.store.remove_graph(graph)
        self.store.clear_graph(ox.DefaultGraph())
        if self.static is not None:
            self.store.extend(iter(self.static))
        self._static_dirty = False
        if self._by_graph:
            graphs = store_graph_iris(self.static)
            windows = {g.value for g in self.graphs}
            static_graphs = None if graphs is None else tuple(g for g in graphs if g.value not in windows)
            self.sparql = to_sparql(self._rewritten, store_graphs=static_graphs)


def _rewrite(query: n.AlgebraQuery, graphs: list[str]) -> n.AlgebraQuery:
    """The query over the recompute store (see the module docstring); CONSTRUCT becomes SELECT."""
    if query.form not in (QueryForm.SELECT, QueryForm.CONSTRUCT, QueryForm.ASK):
        msg = f"a continuous query is a SELECT, a CONSTRUCT or an ASK, not {query.form}"
        raise PlanError(msg)
    if query.form is QueryForm.CONSTRUCT:
        # Projected before the windows are mapped: the tie-break follows the query's own scope order.
        query = replace(query, form=QueryForm.SELECT, template=(), pattern=_project_in_scope(query.pattern))
    window_iris = tuple(IRI(g) for g in graphs)
    if window_iris:
        hide = n.Graph  # static GRAPH ?g nodes, which must not range over the window graphs

        def hide_windows(node):
            if isinstance(node, hide) and isinstance(node.name, Var):
                return n.Filter((ast.In(node.name, window_iris, negated=True),), node, span=node.span)
            return node

        query = replace(query, pattern=bottom_up(query.pattern, hide_windows))
    query = map_stream_triples(query, lambda st: n.Graph(IRI(graphs[st.id]), st.pattern))
    if any(isinstance(d, ast.DatasetClause) for d in query.datasets):
        query = replace(query, datasets=query.datasets + tuple(ast.DatasetClause(iri, named=True) for iri in window_iris))
    # Ties of ORDER BY and LIMIT broken as the incremental operators break them (algebra.ties).
    return replace(query, pattern=break_ties(query.pattern))


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
