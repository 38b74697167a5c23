"""AST → algebra: the translation of SPARQL 1.1 spec §18.2, extended with stream windows.

``to_algebra(query)`` follows the spec step by step:

- §18.2.2.4–5 property paths and basic graph patterns: ``:p`` and ``^:p`` become triples, a
  sequence becomes triples joined by fresh internal variables (``??P0``), anything else a ``Path``
  (over a stream window: an alternative becomes the ``Union`` of its branches, an inverse swaps
  the ends of its path); adjacent triples form one BGP. Triples blocks separated only by FILTERs
  are one BGP (FILTERs are moved to the end of the group anyway, and the W3C suite lets a
  blank-node label cross a FILTER).
- §18.2.2.6 group graph patterns, elements in order: OPTIONAL → ``LeftJoin`` (a top-level FILTER
  of the optional group becomes its condition), MINUS → ``Minus``, BIND → ``Extend``, anything
  else is joined; the group's FILTERs wrap the result; ``Join(Z, A)`` simplifies to ``A`` (§18.2.2.8).
- §18.2.4–5 a query level: grouping and aggregation (one ``Group`` node binding ``?.N`` for each
  distinct aggregate), HAVING, trailing VALUES, SELECT expressions (``Extend``), ORDER BY,
  projection (SELECT only; ``SELECT *`` projects the in-scope non-internal variables), DISTINCT or
  REDUCED, and OFFSET/LIMIT (``Slice``). The spec's ``ToList``/``ToMultiSet`` are identities here
  and are not represented.

Streams:

- inside a CQELS ``STREAM <s> [...] { … }`` every BGP outside ``GRAPH`` becomes a ``StreamPattern``
  over that window (a block of plain triples is one ``StreamPattern``); it ignores any enclosing
  ``GRAPH``;
- inside an RSP-QL ``WINDOW <w> { … }`` every BGP becomes a ``StreamPattern`` over the window that
  ``FROM NAMED WINDOW <w> ON <s> [...]`` declares; ``WINDOW ?w { P }`` is the union, over the
  declared windows in declaration order, of ``P`` on that window joined with ``?w`` bound to its
  name (as ``GRAPH ?g`` ranges over the named graphs);
- CQELS-QL 2.0 ``STREAM <s> { … }`` without a window reads the window of ``FROM STREAM <s> [...]``,
  which then only declares it (it leaves the default graph);
- otherwise, with ``FROM STREAM <s> [...]`` the window is the default graph, so the BGPs outside ``GRAPH``
  (sub-selects and EXISTS included) become ``StreamPattern``s over it. With several
  ``FROM STREAM`` clauses, or with ``FROM <g>`` beside them, the default graph is the RDF merge of
  the windows (and of the static default graph): each triple pattern then matches the set union of
  its matches in every part, ``Distinct(Union(stream₁, stream₂, …, bgp))``, and the triple patterns
  are joined (a triple present in two windows matches once, as in the merged graph);
- in a ``STREAM`` block and over windows, sequences, inverses and alternatives of paths are split
  as above into stream triple patterns and unions of them; what is left, ``*``, ``+``, ``?`` and
  negated property sets, stays one triple pattern whose predicate is the path, inside the
  ``StreamPattern`` (the engine evaluates it over that pattern's window graph,
  ``plan.patterns``). Over the merge of several windows (or of windows and static data) such a
  path is rejected: its steps would have to cross from one window's graph to another's.

Errors are ``QuerySyntaxError``s located at the offending clause (``PlanError`` for a hand-built
AST without source text).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import bottom_up, map_children
from cqels_endpoint.algebra.variables import in_scope
from cqels_endpoint.errors import PlanError, QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query.dialects import Dialect, resolve_dialect
from cqels_endpoint.query.kinds import QueryForm
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import (
    DirectionalWindow,
    NowWindow,
    PolicyWindow,
    RangeWindow,
    TriplesWindow,
    WindowConfig,
    format_window,
    window_extent,
)
from cqels_endpoint.terms import IRI, BlankNode, Node, Var


def to_algebra(query: ast.Query, parameters: tuple[Var, ...] = (), dialect: str | None = None) -> n.AlgebraQuery:
    """The algebra of a parsed query (spec §18.2 plus stream nodes).

    ``parameters`` make it a template: a ``ParameterTable`` of them is the first element of the
    WHERE group, where a one-row ``VALUES`` written there would be (``algebra.parameters``).
    ``dialect`` is the setting ``query.dialects.resolve_dialect`` reads (None: ``auto``); in
    ``cqels2`` a ``[RANGE d]`` is tumbling and a ``[TRIPLES n]`` counts the stream's statements
    (``cqels2_windows``), and HAVING reads SELECT aliases."""
    resolved = resolve_dialect(dialect, query)
    if resolved is Dialect.CQELS2:
        query = cqels2_windows(query)
    return _Translator(query, parameters, resolved).translate()


def cqels2_windows(query: ast.Query) -> ast.Query:
    """CQELS-QL 2.0's windows (§3.1): ``[TRIPLES n]`` holds the last ``n`` statements of the stream
    (``TriplesWindow(n, stream_wide=True)``); ``[RANGE d]`` and its explicit form ``[PAST d]`` are
    tumbling, ``RangeWindow(d, d)``, unless the query's evaluations are set by another window: a
    directional window's anchors (§3.2), beside which a backward window is read at each anchor, or
    a ``[NOW]`` window's "evaluate per arriving statement" (§3.1), beside which ``[RANGE d]`` is
    read at each event (a tumbling window would leave ``[NOW]`` empty at every close)."""
    windowed = [node for node in walk(query) if isinstance(node, (ast.StreamDataset, ast.NamedWindow, ast.StreamPattern))]
    extents = [window_extent(node.window) for node in windowed if node.window is not None]
    evaluated_elsewhere = any(isinstance(extent, (DirectionalWindow, NowWindow)) for extent in extents)

    def meant(window: WindowConfig) -> WindowConfig:
        if isinstance(window, PolicyWindow):
            return replace(window, window=meant(window.window))
        if isinstance(window, TriplesWindow):
            return TriplesWindow(window.count, stream_wide=True)
        if isinstance(window, RangeWindow) and not window.periodic and not evaluated_elsewhere:
            return RangeWindow(window.range_ms, window.range_ms)
        return window

    def rewrite(node):
        if isinstance(node, (ast.StreamDataset, ast.NamedWindow, ast.StreamPattern)) and node.window is not None:
            return replace(node, window=meant(node.window))
        return node

    return bottom_up(query, rewrite)


@dataclass(frozen=True)
class _Window:
    stream: IRI | Var
    window: WindowConfig
    window_name: IRI | None = None

    def __post_init__(self) -> None:
        # EMIT and LATENESS are the query's (``AlgebraQuery.emit``/``lateness_ms``), not the pattern's.
        object.__setattr__(self, "window", window_extent(self.window))


@dataclass(frozen=True)
class _DefaultGraph:
    """What the BGPs of a scope match when it is not the static store alone (``None``): the merge
    of stream windows and, with ``static``, the static default graph."""

    windows: tuple[_Window, ...]
    static: bool = False


def _is_empty(pattern: n.Pattern) -> bool:
    return isinstance(pattern, n.BGP) and not pattern.triples


def _join(left: n.Pattern, right: n.Pattern, span=None) -> n.Pattern:
    """``Join(left, right)`` with the simplification of §18.2.2.8: Z is the identity of join."""
    if _is_empty(left):
        return right
    if _is_empty(right):
        return left
    return n.Join((left, right), span=span)


class _Translator:
    def __init__(self, query: ast.Query, parameters: tuple[Var, ...] = (), dialect: Dialect = Dialect.CQELS):
        self.query = query
        self.dialect = dialect
        self.parameters = parameters
        self.source = query.text
        self._path_vars = itertools.count()
        self._aggregate_vars = itertools.count()
        self._seq_vars = itertools.count()
        self.named_windows: dict[IRI, ast.NamedWindow] = {}

    # ------------------------------------------------------------------ errors

    def _fail(self, message: str, node: Node | None) -> None:
        if node is not None and node.span is not None and self.source:
            raise QuerySyntaxError(message, self.source, node.span)
        raise PlanError(message)

    # ------------------------------------------------------------------ the query

    def translate(self) -> n.AlgebraQuery:
        form = self.query.form
        emit, lateness_ms = self._window_policy()
        default_source = self._dataset(form.datasets, form.where)
        where = form.where if form.where is not None else ast.GroupGraphPattern(())
        first = n.ParameterTable(self.parameters, ()) if self.parameters else n.EMPTY
        pattern = self._group(where, default_source, first)
        projection = form.projection if isinstance(form, ast.SelectQuery) else None
        pattern = self._query_level(form, pattern, projection, default_source)
        common = {
            "datasets": form.datasets,
            "register": self.query.register,
            "base": self.query.prologue.base,
            "prefixes": self.query.prologue.prefixes,
            "source": self.source,
            "span": self.query.span,
            "emit": emit,
            "lateness_ms": lateness_ms,
            "dialect": self.dialect,
        }
        match form:
            case ast.SelectQuery():
                return n.AlgebraQuery(QueryForm.SELECT, pattern, **common)
            case ast.ConstructQuery(template=template):
                return n.AlgebraQuery(QueryForm.CONSTRUCT, pattern, template=template, **common)
            case ast.AskQuery():
                return n.AlgebraQuery(QueryForm.ASK, pattern, **common)
            case ast.DescribeQuery(targets=targets):
                # DESCRIBE * describes every variable the WHERE clause can bind.
                described = targets or tuple(v for v in in_scope(pattern) if not n.is_internal(v))
                return n.AlgebraQuery(QueryForm.DESCRIBE, pattern, describe=described, **common)
        raise TypeError(f"not a query form: {form!r}")

    def _window_policy(self) -> tuple[str | None, int]:
        """The query's CQELS-QL 2.0 ``EMIT`` policy and ``LATENESS`` (the largest of its windows'),
        after the checks of what the engine runs: ``EMIT`` only with directional windows (a backward
        window emits at every evaluation), one policy and one ``STEP`` per query, no periodic window
        beside a directional one (the directional window's anchors are the query's evaluations)."""
        emit: tuple[str, Node] | None = None
        lateness = 0
        directional: list[tuple[DirectionalWindow, Node]] = []
        periodic: Node | None = None
        for node in walk(self.query):
            if not isinstance(node, (ast.StreamDataset, ast.NamedWindow, ast.StreamPattern)) or node.window is None:
                continue
            window = node.window
            extent = window_extent(window)
            if isinstance(extent, DirectionalWindow):
                directional.append((extent, node))
            elif isinstance(extent, RangeWindow) and extent.periodic:
                periodic = node
            if not isinstance(window, PolicyWindow):
                continue
            if window.emit is not None:
                if not isinstance(extent, DirectionalWindow):
                    self._fail(
                        f"EMIT in {format_window(window)} applies to directional windows (PAST … FUTURE, FUTURE, "
                        "TRIPLES PAST … FUTURE); a backward window emits at every evaluation: remove it",
                        node,
                    )
                if emit is not None and emit[0] != window.emit:
                    self._fail(f"EMIT {window.emit} differs from EMIT {emit[0]} of another window: a query has one policy", node)
                emit = (window.emit, node)
            lateness = max(lateness, window.lateness_ms or 0)
        if directional:
            steps = {extent.step_ms for extent, _node in directional}
            if len(steps) > 1:
                self._fail(
                    "the directional windows of a query share their anchors: give them the same STEP (or none)",
                    directional[-1][1],
                )
            if periodic is not None:
                self._fail(
                    "a periodic window (STEP/SLIDE) cannot be read beside a directional window, whose anchors are "
                    "the query's evaluations: use [RANGE d] (read at each anchor) or give the directional window the STEP",
                    periodic,
                )
        return (None if emit is None else emit[0]), lateness

    def _dataset(
        self, datasets: tuple[ast.Dataset, ...], where: ast.GroupGraphPattern | None
    ) -> _DefaultGraph | None:
        """Checks the dataset clauses; returns what the default graph is made of, if not only static.

        A ``FROM STREAM`` whose window a CQELS-QL 2.0 ``STREAM Name { … }`` block reads (one without
        a window of its own) only declares that window, as in CQELS-QL 2.0: it is not part of the
        default graph, so the patterns outside the block read the static data."""
        declared = {
            node.stream for node in walk(where) if isinstance(node, ast.StreamPattern) and node.declared
        }
        stream_defaults = [d for d in datasets if isinstance(d, ast.StreamDataset) and d.stream not in declared]
        static_defaults = [d for d in datasets if isinstance(d, ast.DatasetClause) and not d.named]
        for window in (d for d in datasets if isinstance(d, ast.NamedWindow)):
            if window.name in self.named_windows:
                self._fail(f"window {window.name} is declared twice; give each FROM NAMED WINDOW its own name", window)
            self.named_windows[window.name] = window
        if not stream_defaults:
            return None
        windows = tuple(_Window(d.stream, d.window) for d in stream_defaults)
        return _DefaultGraph(windows, static=bool(static_defaults))

    def _query_level(
        self,
        form: ast.QueryForm,
        pattern: n.Pattern,
        projection: tuple[Var | ast.ProjectionExpression, ...] | None,
        source: _DefaultGraph | None,
    ) -> n.Pattern:
        """§18.2.4 and §18.2.5: aggregation, HAVING, VALUES, SELECT expressions, modifiers."""
        modifiers = form.modifiers
        select_expressions = [p for p in projection or () if isinstance(p, ast.ProjectionExpression)]
        aggregates: dict[ast.Aggregate, Var] = {}
        has_aggregates = any(
            isinstance(x, ast.Aggregate)
            for x in _expression_nodes(
                [p.expr for p in select_expressions]
                + list(modifiers.having)
                + [c.expr for c in modifiers.order_by]
            )
        )

        # Aggregates are numbered in the order of §18.2.4.1: SELECT, then HAVING, then ORDER BY.
        def lifted(expr: ast.Expression) -> n.Expression:
            return self._expr(expr, source, aggregates)

        extends = [(p.var, lifted(p.expr), p) for p in select_expressions]
        having_exprs = modifiers.having
        if self.dialect is Dialect.CQELS2:
            having_exprs = _aliases_in_having(having_exprs, select_expressions, pattern, modifiers.group_by)
        having = tuple(lifted(h) for h in having_exprs)
        order = tuple(
            ast.OrderCondition(lifted(c.expr), c.descending, span=c.span) for c in modifiers.order_by
        )

        if modifiers.group_by or has_aggregates:
            keys = tuple(self._group_key(condition, source) for condition in modifiers.group_by)
            group_aggregates = tuple((var, aggregate) for aggregate, var in aggregates.items())
            pattern = n.Group(keys, group_aggregates, pattern, span=n.cover(modifiers.group_by) or form.span)
        if having:
            pattern = n.Filter(having, pattern, span=n.cover(modifiers.having))
        if form.values is not None:
            pattern = _join(pattern, self._table(form.values), span=form.values.span)
        for var, expr, item in extends:
            pattern = n.Extend(var, expr, pattern, span=item.span)
        if order:
            pattern = n.OrderBy(order, pattern, span=n.cover(modifiers.order_by))
        if projection is not None:
            if projection:
                variables = tuple(p if isinstance(p, Var) else p.var for p in projection)
            else:
                variables = tuple(v for v in in_scope(pattern) if not n.is_internal(v))
            pattern = n.Project(variables, pattern, span=form.span)
            if form.distinct:
                pattern = n.Distinct(pattern, span=form.span)
            elif form.reduced:
                pattern = n.Reduced(pattern, span=form.span)
        if modifiers.limit is not None or modifiers.offset is not None:
            pattern = n.Slice(modifiers.offset or 0, modifiers.limit, pattern, span=modifiers.span)
        return pattern

    def _group_key(self, condition: ast.GroupCondition, source: _DefaultGraph | None) -> tuple[Var | None, n.Expression]:
        expr = self._expr(condition.expr, source)
        if condition.var is not None:
            return condition.var, expr
        if isinstance(expr, Var):
            return expr, expr
        return None, expr

    # ------------------------------------------------------------------ group graph patterns

    def _group(self, group: ast.GroupGraphPattern, source: _DefaultGraph | None, first: n.Pattern = n.EMPTY) -> n.Pattern:
        """§18.2.2.6: the elements of ``{ … }`` in order (after ``first``), FILTERs applied at the end.

        A ``FILTER(SEQ(…))`` takes its steps' event patterns and per-event FILTERs out of the group
        (``_seq``): the ``Seq`` node comes first, the rest of the group is joined with it as usual."""
        seq = self._seq(group, source)
        if seq is not None:
            group, seq_node = seq
            first = _join(first, seq_node, span=seq_node.span)
        result: n.Pattern = first
        filters: list[ast.Filter] = []
        pending: list[ast.TriplePattern] = []

        def flush() -> None:
            nonlocal result
            if pending:
                result = _join(result, self._triples(tuple(pending), source))
                pending.clear()

        for element in group.elements:
            if isinstance(element, ast.TriplesBlock):
                pending.extend(element.triples)
                continue
            if isinstance(element, ast.Filter):
                filters.append(element)
                continue
            flush()
            match element:
                case ast.OptionalPattern(pattern=inner):
                    optional = self._group(inner, source)
                    # Only the optional group's own FILTERs become the condition: a Filter that
                    # surfaced from a nested group by the Join(Z, A) simplification keeps its scope.
                    own_filters = any(isinstance(e, ast.Filter) for e in inner.elements)
                    if own_filters and isinstance(optional, n.Filter):
                        result = n.LeftJoin(result, optional.input, optional.exprs, span=element.span)
                    else:
                        result = n.LeftJoin(result, optional, span=element.span)
                case ast.MinusPattern(pattern=inner):
                    result = n.Minus(result, self._group(inner, source), span=element.span)
                case ast.Bind(expr, var):
                    result = n.Extend(var, self._expr(expr, source), result, span=element.span)
                case _:
                    result = _join(result, self._element(element, source), span=element.span)
        flush()
        if filters:
            exprs = tuple(self._expr(f.constraint, source) for f in filters)
            result = n.Filter(exprs, result, span=n.cover(filters))
        return result

    # ------------------------------------------------------------------ complex event processing

    def _seq(
        self, group: ast.GroupGraphPattern, source: _DefaultGraph | None
    ) -> tuple[ast.GroupGraphPattern, n.Seq] | None:
        """The ``Seq`` node of the group's ``FILTER(SEQ(…))`` and the group without what it took:
        the stream triple patterns whose subject is a step variable (its event patterns), the
        FILTERs over one step's event variables (per-event), those over several bound steps'
        (guards, split into their ``&&`` conjuncts) and the conjuncts over one gap step's and bound
        steps' variables (that gap step's guards). A variable in the event patterns of several
        steps is a join: a bound step keeps it (the step it names, else the first), the others read a
        fresh internal variable each, and ``sameTerm`` of the two is a guard (of the gap step, for a
        gap step). None when the group has no SEQ."""
        seqs = [e for e in group.elements if isinstance(e, ast.Filter) and isinstance(e.constraint, ast.Seq)]
        if not seqs:
            return None
        if len(seqs) > 1:
            self._fail("a group may hold one FILTER(SEQ(…)); put the other sequence in a group of its own", seqs[1])
        seq: ast.Seq = seqs[0].constraint
        kinds = self._seq_kinds(seq)
        step_vars = [step.var for step in seq.steps]
        # The group's stream triple patterns by step variable, and the group without them.
        found: dict[Var, list[tuple[_Window, ast.TriplePattern]]] = {var: [] for var in step_vars}
        elements: list[ast.GroupElement] = []
        for element in group.elements:
            if element is seqs[0]:
                continue
            window, triples = None, ()
            if isinstance(element, ast.TriplesBlock) and source is not None:
                if len(source.windows) == 1 and not source.static:
                    window, triples = source.windows[0], element.triples
            elif isinstance(element, ast.StreamPattern):
                match element.pattern.elements:
                    case (ast.TriplesBlock(block),):
                        window, triples = _Window(element.stream, element.window), block
            taken = [t for t in triples if t.subject in found]
            if not taken:
                elements.append(element)
                continue
            for triple in taken:
                if not isinstance(triple.predicate, (IRI, Var)):
                    self._fail("an event pattern of SEQ takes a plain predicate (an IRI or a variable), not a path", triple)
                if isinstance(triple.object, BlankNode) or isinstance(triple.predicate, BlankNode):
                    self._fail("an event pattern of SEQ cannot hold a blank node; use a variable", triple)
                found[triple.subject].append((window, triple))
            rest = tuple(t for t in triples if t.subject not in found)
            if isinstance(element, ast.StreamPattern):
                if rest:
                    inner = ast.GroupGraphPattern((ast.TriplesBlock(rest, span=element.span),), span=element.span)
                    elements.append(replace(element, pattern=inner))
            elif rest:
                elements.append(ast.TriplesBlock(rest, span=element.span))
        holders: dict[Var, list[int]] = {}  # variable → the steps whose event patterns hold it
        for index, step in enumerate(seq.steps):
            if not found[step.var]:
                self._fail(
                    f"the SEQ step {step.var} must be the subject of a triple pattern read from a stream in the "
                    "same group (its event patterns), e.g. `{step.var} a :Alert`",
                    step,
                )
            for _window, triple in found[step.var]:
                for term in (triple.subject, triple.predicate, triple.object):
                    if isinstance(term, Var) and index not in holders.setdefault(term, []):
                        holders[term].append(index)

        def holding(var: Var, index: int) -> ast.TriplePattern:
            return next(t for _w, t in found[step_vars[index]] if var in (t.subject, t.predicate, t.object))

        equalities: list[ast.Expression] = []
        gap_guards: list[list[ast.Expression]] = [[] for _ in seq.steps]
        for var, indexes in holders.items():
            if len(indexes) < 2:
                continue
            named = step_vars.index(var) if var in step_vars else None
            if named is not None and not kinds[named][0]:
                self._fail(
                    f"{var} is the gap step {var} of SEQ, whose events are not bound in a match, and it is in "
                    "the event patterns of another step; compare a variable of its events instead",
                    holding(var, next(i for i in indexes if i != named)),
                )
            bound_holders = [i for i in indexes if kinds[i][0]]
            if not bound_holders:
                self._fail(
                    f"{var} is in the event patterns of the gap steps {seq.steps[indexes[0]].var} and "
                    f"{seq.steps[indexes[1]].var} of SEQ and of no bound step: a gap's events count one "
                    "at a time against the match's bound events, so two gap steps cannot be joined",
                    holding(var, indexes[1]),
                )
            keeper = named if named is not None else bound_holders[0]
            for index in indexes:
                if index == keeper:
                    continue
                # A join with a bound step: the later bound step's level compares the two
                # (operators/seq.py); for a gap step, it decides which of its events count.
                fresh = Var(f"?S{next(self._seq_vars)}")
                found[step_vars[index]] = [(w, _rename(t, var, fresh)) for w, t in found[step_vars[index]]]
                equality = ast.BuiltinCall("SAMETERM", (var, fresh), span=seq.span)
                (equalities if kinds[index][0] else gap_guards[index]).append(equality)
        variables = [frozenset(v for _w, t in found[s.var] for v in (t.subject, t.predicate, t.object) if isinstance(v, Var))
                     for s in seq.steps]
        per_event: list[list[ast.Expression]] = [[] for _ in seq.steps]
        guards: list[ast.Expression] = []
        kept: list[ast.GroupElement] = []
        bound_vars = frozenset().union(*(v for v, (bound, _, _) in zip(variables, kinds) if bound))
        gap_vars = frozenset().union(*(v for v, (bound, _, _) in zip(variables, kinds) if not bound))
        for element in elements:
            if not isinstance(element, ast.Filter):
                kept.append(element)
                continue
            mentioned = frozenset(x for x in walk(element.constraint) if isinstance(x, Var))
            plain = not any(isinstance(x, ast.Exists) for x in walk(element.constraint))
            home = next((i for i, v in enumerate(variables) if mentioned and mentioned <= v), None)
            if plain and home is not None:
                per_event[home].append(element.constraint)
            elif mentioned & gap_vars:
                # Each conjunct on its own: a gap step's guards are those tying it to bound steps.
                for conjunct in _conjuncts(element.constraint):
                    at = conjunct if conjunct.span is not None else element
                    place, index = self._seq_place(seq, kinds, variables, bound_vars, conjunct, at)
                    if place == "event":
                        per_event[index].append(conjunct)
                    elif place == "gap":
                        gap_guards[index].append(conjunct)
                    elif place == "guard":
                        guards.append(conjunct)
                    else:
                        kept.append(ast.Filter(conjunct, span=at.span))
            elif plain and mentioned and mentioned <= bound_vars:
                guards.extend(_conjuncts(element.constraint))
            else:
                kept.append(element)
        steps = []
        for index, step in enumerate(seq.steps):
            bound, low, high = kinds[index]
            by_window: dict[_Window, list[ast.TriplePattern]] = {}
            for window, triple in found[step.var]:
                by_window.setdefault(window, []).append(triple)
            patterns = tuple(
                n.StreamPattern(w.stream, w.window, tuple(ts), w.window_name, span=n.cover(ts)) for w, ts in by_window.items()
            )
            filters = tuple(self._expr(e, source) for e in per_event[index])
            step_guards = tuple(self._expr(e, source) for e in gap_guards[index])
            steps.append(n.SeqStep(step.var, bound, low, high, patterns, filters, step_guards, span=step.span))
        node = n.Seq(tuple(steps), tuple(self._expr(e, source) for e in (*equalities, *guards)), span=seq.span)
        return ast.GroupGraphPattern(tuple(kept), span=group.span), node

    def _seq_place(
        self, seq: ast.Seq, kinds: list, variables: list[frozenset], bound_vars: frozenset, conjunct: ast.Expression, at: Node
    ) -> tuple[str, int | None]:
        """Where one conjunct of a FILTER reading a gap step's variables goes: ``("event", step)``, a
        per-event filter of the one step it reads; ``("guard", None)``, a guard of the bound steps it
        reads; ``("gap", step)``, a guard of the one gap step it reads with bound steps; ``("group",
        None)``, a FILTER of the group (it reads no step); else a located error."""
        mentioned = frozenset(x for x in walk(conjunct) if isinstance(x, Var))
        gaps = [i for i, (bound, _, _) in enumerate(kinds) if not bound and mentioned & variables[i]]
        if any(isinstance(x, ast.Exists) for x in walk(conjunct)):
            if gaps:
                self._fail(
                    f"this FILTER reads the gap step {seq.steps[gaps[0]].var} of SEQ inside EXISTS; a gap step's "
                    "events are compared with the bound steps' variables by plain expressions only",
                    at,
                )
            return "group", None
        home = next((i for i, v in enumerate(variables) if mentioned and mentioned <= v), None)
        if home is not None:
            return "event", home
        if len(gaps) > 1:
            self._fail(
                f"this FILTER condition reads the gap steps {seq.steps[gaps[0]].var} and {seq.steps[gaps[1]].var} "
                "of SEQ: a gap's events count one at a time against the match's bound events, so a condition "
                "between two gap steps is not supported; compare each with a bound step's variables",
                at,
            )
        if gaps and not mentioned <= variables[gaps[0]] | bound_vars:
            outside = " ".join(str(v) for v in sorted(mentioned - variables[gaps[0]] - bound_vars, key=str))
            self._fail(
                f"this FILTER condition reads the gap step {seq.steps[gaps[0]].var} of SEQ and {outside}, which "
                "no bound step's event patterns bind: a gap step's events can be compared with the bound "
                "steps' variables only",
                at,
            )
        if gaps:
            return "gap", gaps[0]
        return ("guard", None) if mentioned and mentioned <= bound_vars else ("group", None)

    def _seq_kinds(self, seq: ast.Seq) -> list[tuple[bool, int, int | None]]:
        """``(bound, low, high)`` of each step (semantics: a plain ``?e`` is bound, ``NOT ?x`` the gap
        {0,0}, a quantified ``?x`` the gap of its quantifier), after the checks of the steps."""
        for step in seq.steps:
            if step.alias is not None:
                self._fail("AS in a SEQ step is not supported: the step's own variables are bound", step)
        kinds: list[tuple[bool, int, int | None]] = []
        seen: set[Var] = set()
        for step in seq.steps:
            if step.var in seen:
                self._fail(f"{step.var} is two steps of this SEQ; use one variable per step", step)
            seen.add(step.var)
            quantified = self._quantified(step)
            if step.negated:
                if quantified:
                    self._fail("NOT takes no quantifier in SEQ: NOT ?x means no ?x event there", step)
                kinds.append((False, 0, 0))
            elif quantified:
                kinds.append((False, step.minimum, step.maximum))
            else:
                kinds.append((True, 1, 1))
        if not any(bound for bound, _, _ in kinds):
            self._fail(
                "a SEQ needs at least one plain step (?e: one event, bound in the result); NOT and quantified "
                "steps only constrain the events between them",
                seq,
            )
        return kinds

    def _quantified(self, step: ast.SeqStep) -> bool:
        """Whether the step has a quantifier: ``?x{1}`` is a gap step, ``?x`` a bound one, with the
        same bounds in the AST, so the step's text tells them apart."""
        if (step.minimum, step.maximum) != (1, 1):
            return True
        if step.span is None or not self.source:
            return False
        text = self.source[step.span.start : step.span.end]
        return re.match(r"\s*(?:NOT\s+)?[?$][^\s{}+*?;,()]+\s*[{+*?]", text, re.IGNORECASE) is not None

    def _element(self, element: ast.GroupElement, source: _DefaultGraph | None) -> n.Pattern:
        """The translation of a group element that is joined into its group."""
        match element:
            case ast.GroupGraphPattern():
                return self._group(element, source)
            case ast.UnionPattern(alternatives):
                result = self._group(alternatives[0], source)
                for alternative in alternatives[1:]:
                    result = n.Union(result, self._group(alternative, source), span=element.span)
                return result
            case ast.GraphPattern(name, inner):
                # Inside GRAPH the BGPs match the static named graphs, even under FROM STREAM.
                return n.Graph(name, self._group(inner, None), span=element.span)
            case ast.ServicePattern(name, inner, silent):
                return n.Service(name, self._group(inner, None), silent, span=element.span)
            case ast.InlineData():
                return self._table(element)
            case ast.SubSelect(query):
                inner = self._group(query.where, source)
                return self._query_level(query, inner, query.projection, source)
            case ast.StreamPattern(stream, window, inner):
                match inner.elements:
                    case (ast.TriplesBlock(triples),) if all(isinstance(t.predicate, (IRI, Var)) for t in triples):
                        # A block of plain triples is one stream pattern located at the whole block,
                        # so the plan and its errors point at the STREAM clause that names the window.
                        return n.StreamPattern(stream, window_extent(window), triples, span=element.span)
                return self._group(inner, _DefaultGraph((_Window(stream, window),)))
            case ast.WindowPattern(name, inner):
                return self._window(element, name, inner)
        raise TypeError(f"not a group element: {element!r}")

    def _window(self, element: ast.WindowPattern, name: IRI | Var, inner: ast.GroupGraphPattern) -> n.Pattern:
        if isinstance(name, IRI):
            declared = self.named_windows.get(name)
            if declared is None:
                self._fail(
                    f"window {name} is not declared; add FROM NAMED WINDOW {name} ON <stream> [RANGE …] "
                    "to the query",
                    name if name.span is not None else element,
                )
            source = _DefaultGraph((_Window(declared.stream, declared.window, declared.name),))
            return self._group(inner, source)
        if not self.named_windows:
            self._fail("WINDOW ?var ranges over the declared windows, but the query declares none", element)
        result: n.Pattern | None = None
        for declared in self.named_windows.values():
            source = _DefaultGraph((_Window(declared.stream, declared.window, declared.name),))
            binding = n.Table((name,), ((declared.name,),), span=element.span)
            branch = _join(self._group(inner, source), binding, span=element.span)
            result = branch if result is None else n.Union(result, branch, span=element.span)
        return result

    def _table(self, data: ast.InlineData) -> n.Table:
        return n.Table(data.vars, data.rows, span=data.span)

    # ------------------------------------------------------------------ triples and paths

    def _triples(self, triples: tuple[ast.TriplePattern, ...], source: _DefaultGraph | None) -> n.Pattern:
        """§18.2.2.4–5: paths to triples or ``Path`` nodes, adjacent triples into one BGP.

        Over a window (``source`` given) sequences and inverses are triples in disguise and an
        alternative is the union of its branches (§18.4: bag union), so they become stream triple
        patterns; ``*``, ``+``, ``?`` and ``!`` stay stream path patterns.
        """
        if source is not None and any(_has_alternative(t.predicate) for t in triples):
            # An alternative splits the BGP into several stream patterns: a blank node shared
            # between them becomes the internal variable it stands for.
            triples = tuple(_blank_nodes_as_variables(t) for t in triples)
        items: list[ast.TriplePattern | n.Pattern] = []
        for triple in triples:
            items.extend(self._path(triple.subject, triple.predicate, triple.object, triple, source))
        return self._joined(items, source)

    def _joined(self, items: list[ast.TriplePattern | n.Pattern], source: _DefaultGraph | None) -> n.Pattern:
        """The join of ``items`` in order, each run of adjacent triples one BGP (or stream pattern)."""
        result: n.Pattern = n.EMPTY
        run: list[ast.TriplePattern] = []

        def flush() -> None:
            nonlocal result
            if run:
                bgp = n.BGP(tuple(run), span=n.cover(run)) if source is None else self._merged(tuple(run), source)
                result = _join(result, bgp)
                run.clear()

        for item in items:
            if isinstance(item, ast.TriplePattern):
                run.append(item)
                continue
            flush()
            result = _join(result, item)
        flush()
        return result

    def _merged(self, triples: tuple[ast.TriplePattern, ...], source: _DefaultGraph) -> n.Pattern:
        """Triples matched in a default graph that is the merge of windows (and static data).

        One window alone is one ``StreamPattern``. Otherwise each triple pattern matches the
        *set* union of the parts: ``Distinct(Union(…))`` of its matches in each window (and in
        the static store), and the triple patterns are joined.
        """
        if len(source.windows) == 1 and not source.static:
            (window,) = source.windows
            return n.StreamPattern(window.stream, window.window, triples, window.window_name, span=n.cover(triples))
        for triple in triples:
            if not isinstance(triple.predicate, (IRI, Var)):
                merged = "several windows" if len(source.windows) > 1 else "a window and the static default graph"
                self._fail(
                    f"{_path_construct(triple.predicate)} cannot be matched against the merge of {merged}: "
                    "its steps would cross from one graph to another; read the path from one window "
                    "(one FROM STREAM, a STREAM block or a WINDOW block), or move it into the static part "
                    "of the query",
                    triple.predicate if triple.predicate.span is not None else triple,
                )
        # Split apart, the triples can no longer share a blank node (scoped to one BGP): it
        # becomes the internal variable it stands for.
        triples = tuple(_blank_nodes_as_variables(t) for t in triples)
        result: n.Pattern = n.EMPTY
        for triple in triples:
            parts: list[n.Pattern] = [
                n.StreamPattern(w.stream, w.window, (triple,), w.window_name, span=triple.span) for w in source.windows
            ]
            if source.static:
                parts.append(n.BGP((triple,), span=triple.span))
            merged = parts[0]
            for part in parts[1:]:
                merged = n.Union(merged, part, span=triple.span)
            result = _join(result, n.Distinct(merged, span=triple.span), span=triple.span)
        return result

    def _path(
        self, subject, predicate, obj, origin: ast.TriplePattern, source: _DefaultGraph | None
    ) -> list[ast.TriplePattern | n.Pattern]:
        """The triples (and, in general, ``Path`` nodes) that match ``subject predicate obj``.

        Over a window (``source`` given) the inverse of a compound path swaps its ends, an
        alternative becomes the ``Union`` of its branches' stream patterns (§18.4), and ``*``, ``+``,
        ``?`` or a negated set is a triple pattern whose predicate is that path.
        """
        path = _normalise_path(predicate)
        match path:
            case IRI() | Var():
                return [ast.TriplePattern(subject, path, obj, span=origin.span)]
            case ast.PathInverse(path=IRI() as iri):
                return [ast.TriplePattern(obj, iri, subject, span=origin.span)]
            case ast.PathSequence(parts):
                out: list[ast.TriplePattern | n.Pattern] = []
                current = subject
                for part in parts[:-1]:
                    link = Var(f"?P{next(self._path_vars)}")
                    out.extend(self._path(current, part, link, origin, source))
                    current = link
                out.extend(self._path(current, parts[-1], obj, origin, source))
                return out
            case ast.PathInverse(path=inner) if source is not None:
                return self._path(obj, inner, subject, origin, source)
            case ast.PathAlternative(parts) if source is not None:
                branches = [self._joined(self._path(subject, part, obj, origin, source), source) for part in parts]
                union = branches[0]
                for branch in branches[1:]:
                    union = n.Union(union, branch, span=origin.span)
                return [union]
        if source is not None:
            return [ast.TriplePattern(subject, path, obj, span=origin.span)]
        return [n.Path(subject, path, obj, span=origin.span)]

    # ------------------------------------------------------------------ expressions

    def _expr(
        self,
        expr: ast.Expression,
        source: _DefaultGraph | None,
        aggregates: dict[ast.Aggregate, Var] | None = None,
    ) -> n.Expression:
        """An AST expression in the algebra: EXISTS patterns translated, aggregates named.

        With ``aggregates`` given (SELECT expressions, HAVING, ORDER BY of a query level) each
        aggregate is replaced by its internal variable, equal aggregates sharing one.
        """

        def convert(e):
            match e:
                case ast.Exists(pattern, negated):
                    return n.Exists(self._group(pattern, source), negated, span=e.span)
                case ast.Aggregate(name, inner, distinct, separator):
                    if aggregates is None:
                        self._fail(f"aggregate {name} is only allowed in SELECT, HAVING and ORDER BY", e)
                    translated = ast.Aggregate(
                        name, None if inner is None else convert(inner), distinct, separator, span=e.span
                    )
                    if translated not in aggregates:
                        aggregates[translated] = Var(f".{next(self._aggregate_vars)}", span=e.span)
                    return aggregates[translated]
                case ast.BinaryOp(op, left, right):
                    return ast.BinaryOp(op, convert(left), convert(right), span=e.span)
                case ast.UnaryOp(op, operand):
                    return ast.UnaryOp(op, convert(operand), span=e.span)
                case ast.In(inner, values, negated):
                    return ast.In(convert(inner), tuple(convert(v) for v in values), negated, span=e.span)
                case ast.BuiltinCall(name, args):
                    return ast.BuiltinCall(name, tuple(convert(a) for a in args), span=e.span)
                case ast.FunctionCall(iri, args, distinct):
                    return ast.FunctionCall(iri, tuple(convert(a) for a in args), distinct, span=e.span)
                case ast.Seq():
                    self._fail(
                        "SEQ is only allowed as the whole condition of a FILTER in a group: "
                        "write FILTER(SEQ(…)) and the other conditions in FILTERs of their own",
                        e,
                    )
            return e

        return convert(expr)


def _expression_nodes(exprs: list[ast.Expression]):
    """Every node of the expressions, not descending into EXISTS (its aggregates are its own)."""
    stack = list(exprs)
    while stack:
        e = stack.pop()
        yield e
        match e:
            case ast.BinaryOp(_, left, right):
                stack += [left, right]
            case ast.UnaryOp(_, operand):
                stack.append(operand)
            case ast.In(inner, values):
                stack += [inner, *values]
            case ast.BuiltinCall(_, args) | ast.FunctionCall(_, args):
                stack += list(args)
            case ast.Aggregate(_, inner) if inner is not None:
                stack.append(inner)


def _aliases_in_having(
    having: tuple[ast.Expression, ...],
    select_expressions: list[ast.ProjectionExpression],
    where: n.Pattern,
    group_by: tuple[ast.GroupCondition, ...],
) -> tuple[ast.Expression, ...]:
    """CQELS-QL 2.0 §9: ``HAVING`` may name a SELECT alias (``HAVING(?cnt > 1)`` over
    ``(COUNT(*) AS ?cnt)``); the alias stands for its expression, over the group as the SELECT
    list reads it. A variable the WHERE clause or a GROUP BY key binds keeps its SPARQL meaning;
    an alias naming an earlier alias is expanded in turn (SELECT expressions read only earlier ones)."""
    bound = set(in_scope(where)) | {c.var for c in group_by if c.var is not None}
    bound |= {c.expr for c in group_by if c.var is None and isinstance(c.expr, Var)}
    aliases: dict[Var, ast.Expression] = {}
    for item in select_expressions:
        if item.var not in bound:
            aliases[item.var] = _substituted(item.expr, aliases)
    return tuple(_substituted(expr, aliases) for expr in having)


def _substituted(expr: ast.Expression, values: dict[Var, ast.Expression]) -> ast.Expression:
    """``expr`` with each variable of ``values`` replaced by its expression (not inside EXISTS, a scope of its own)."""
    if isinstance(expr, Var):
        return values.get(expr, expr)
    if isinstance(expr, ast.Exists) or not values:
        return expr
    return map_children(expr, lambda child: _substituted(child, values))


def _has_alternative(path: ast.Path | Var) -> bool:
    """Whether a path holds an alternative outside ``*``/``+``/``?`` (which splits its BGP over a
    window); a negated set with forward and inverse members is one (§18.2.2.4)."""
    match path:
        case ast.PathAlternative():
            return True
        case ast.PathNegatedSet(iris, inverse_iris):
            return bool(iris and inverse_iris)
        case ast.PathInverse(inner):
            return _has_alternative(inner)
        case ast.PathSequence(parts):
            return any(_has_alternative(part) for part in parts)
    return False


_PATH_MODIFIERS = {"*": "zero or more", "+": "one or more", "?": "zero or one"}


def _path_construct(path: ast.PathMod | ast.PathNegatedSet) -> str:
    """How an error names a path that is neither a sequence, an inverse nor an alternative."""
    if isinstance(path, ast.PathMod):
        return f"the property path operator `{path.modifier}` ({_PATH_MODIFIERS[path.modifier]})"
    return "the negated property set `!(…)`"


def _blank_nodes_as_variables(triple: ast.TriplePattern) -> ast.TriplePattern:
    def term(t):
        return Var(f"?_{t.label}", span=t.span) if isinstance(t, BlankNode) else t

    return ast.TriplePattern(term(triple.subject), triple.predicate, term(triple.object), span=triple.span)


def _normalise_path(path: ast.Path | Var) -> ast.Path | Var:
    """The path algebra of §18.2.2.4: negated sets keep forward IRIs only, inverses wrap them."""
    match path:
        case ast.PathNegatedSet(iris, inverse_iris) if inverse_iris:
            inverse = ast.PathInverse(ast.PathNegatedSet(inverse_iris, span=path.span), span=path.span)
            if not iris:
                return inverse
            forward = ast.PathNegatedSet(iris, span=path.span)
            return ast.PathAlternative((forward, inverse), span=path.span)
        case ast.PathInverse(inner):
            return ast.PathInverse(_normalise_path(inner), span=path.span)
        case ast.PathSequence(parts):
            return ast.PathSequence(tuple(_normalise_path(p) for p in parts), span=path.span)
        case ast.PathAlternative(parts):
            return ast.PathAlternative(tuple(_normalise_path(p) for p in parts), span=path.span)
        case ast.PathMod(inner, modifier):
            return ast.PathMod(_normalise_path(inner), modifier, span=path.span)
    return path


def _conjuncts(expr: ast.Expression) -> list[ast.Expression]:
    """The operands of a chain of ``&&`` (a FILTER of ``A && B`` keeps what FILTER(A) FILTER(B) keep)."""
    if isinstance(expr, ast.BinaryOp) and expr.op == "&&":
        return [*_conjuncts(expr.left), *_conjuncts(expr.right)]
    return [expr]


def _rename(triple: ast.TriplePattern, var: Var, fresh: Var) -> ast.TriplePattern:
    """``triple`` with ``var`` replaced by ``fresh``."""
    def swap(term):
        return fresh if term == var else term

    return replace(triple, subject=swap(triple.subject), predicate=swap(triple.predicate), object=swap(triple.object))
