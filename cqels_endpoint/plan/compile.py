"""Optimised algebra → physical plan: which operator computes each algebra node, and how.

``compile_plan(query)`` walks the algebra that ``algebra.passes.optimize`` produced (filters pushed
down, joins flattened, static sub-patterns wrapped as ``StaticPattern``) and maps

- each triple pattern of a ``StreamPattern`` to a ``StreamLeaf`` (a window buffer; the triples of
  one stream block are joined, their windows apply per triple pattern);
- each ``StaticPattern`` to a ``StaticCache`` (materialised with pyoxigraph by ``plan.caches``;
  inline data, ``VALUES``, is one too: a constant relation, UNDEF an unbound column);
- each ``Join`` — with the triples of its stream blocks — to one ``MultiwayJoin`` whose inputs are
  indexed on the columns they share (ring indexes for windowed inputs, hash indexes for caches);
- ``Filter``, ``Extend`` (BIND and SELECT expressions) and ``Group`` (GROUP BY, aggregates) to
  their operators;
- ``Distinct`` and ``Reduced`` (run as DISTINCT, which REDUCED allows) to a counting ``DistinctNode``,
  ``Union`` to a ``UnionNode`` (missing columns unbound), ``LeftJoin`` (OPTIONAL with its filter) to
  an ``OptionalNode``; a static-only operand of those becomes a cache;
- ``Minus`` and each (NOT) EXISTS operand of a FILTER's conjunction to a ``NegationNode``; a (NOT)
  EXISTS inside a larger FILTER or BIND expression to a ``MarkNode`` below the filter or extend,
  which reads the mark's internal column (``.existsN``) in its place, projected away above it.

An ``ASK`` query is compiled as ``Distinct(Project((), pattern))``: Γ holds the empty mapping while
the pattern has a solution.

The solution modifiers of the query and of every nested SELECT (``Slice``, ``Distinct``/``Reduced``,
``Project``, ``OrderBy``) are compiled by one method, ``_Compiler._solutions``: the projection drops
the variables a SELECT does not project, ``LIMIT``/``OFFSET`` becomes a ``TopKNode`` (continuous
top-k, ties broken as ``algebra.ties`` says) and a top-level ``ORDER BY`` an ``OrderNode`` that keeps
Γ in order for the emissions; an ``ORDER BY`` without slice in a nested SELECT orders nothing and
is dropped. A nested SELECT is an operand like any other: joined, unioned, negated; one without
streams is a static cache.

A ``STREAM ?s`` block's leaves have the stream's IRI as a column (``StreamLeaf.restricted_by``:
the caches whose ``?s`` values the engine routes it by). The constructs without an incremental
operator (SERVICE or a variable GRAPH around a stream pattern, a property path over ``STREAM ?s``,
EXISTS in an ORDER BY, a GROUP BY key, an aggregate or an
OPTIONAL's filter, NOW()…) raise ``PlanError`` naming the construct and its query line;
``mode="recompute"`` evaluates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import map_children
from cqels_endpoint.algebra.ties import break_ties
from cqels_endpoint.algebra.variables import certainly_bound, contains_stream, in_scope, mentioned, required_by
from cqels_endpoint.errors import PlanError, SharingError
from cqels_endpoint.plan.caches import cache_select, cache_sparql
from cqels_endpoint.plan.nodes import (
    DistinctNode,
    ExtendNode,
    FilterNode,
    GroupNode,
    JoinIndex,
    JoinInput,
    MarkNode,
    MultiwayJoin,
    NegationKind,
    NegationNode,
    OptionalNode,
    OrderNode,
    PhysicalPlan,
    PlanNode,
    ProjectNode,
    SeqNode,
    SeqStepPlan,
    StaticCache,
    StreamLeaf,
    TopKNode,
    UnionNode,
    shared_columns,
)
from cqels_endpoint.plan.patterns import StreamTriple, stream_triples
from cqels_endpoint.query.ast import BuiltinCall
from cqels_endpoint.query.kinds import QueryForm
from cqels_endpoint.query.visit import children, walk
from cqels_endpoint.terms import IRI, BlankNode, Var

INSTANCE = n.INSTANCE.name

# What users wrote, for the algebra nodes this issue has no incremental operator for.
_UNSUPPORTED = {
    n.Service: "SERVICE around a stream pattern",
    n.BGP: "a basic graph pattern over a stream",
}


def compile_plan(query: n.AlgebraQuery, patterns: Sequence[StreamTriple] | None = None) -> PhysicalPlan:
    """The physical plan of an optimised continuous query.

    ``patterns`` (``plan.patterns.stream_triples(query)``), when given, is checked against the
    plan's leaves: leaf ``k`` must read the ``k``-th stream triple pattern, so that the engine's
    ``on_insert(pattern_id, …)`` reaches the right buffer.
    """
    return _Compiler(query).compile(patterns)


def unsupported(query: n.AlgebraQuery, construct: str, node: object) -> PlanError:
    """The ``PlanError`` for a construct the incremental engine cannot evaluate."""
    return PlanError(
        f"{construct}{_where(query, node)} is not supported by incremental continuous queries; "
        'register the query with mode="recompute" to evaluate it by re-evaluation'
    )


def _not_shared(query: n.AlgebraQuery, construct: str, node: object) -> SharingError:
    return SharingError(
        f"{construct}{_where(query, node)} over the parameters of a template is not evaluated by one plan "
        "for all its instances: each instance runs a plan of its own"
    )


def _where(query: n.AlgebraQuery, node: object) -> str:
    span = getattr(node, "span", None)
    if span is None:
        return ""
    lines = query.source.splitlines()
    text = lines[span.line - 1].strip() if 0 < span.line <= len(lines) else ""
    return f" (line {span.line}: `{text}`)" if text else f" (line {span.line})"


def column(term: Var | BlankNode) -> str:
    """The column name of a variable, or of a stream pattern's blank node (an internal column)."""
    return term.name if isinstance(term, Var) else f"_:{term.label}"


@dataclass
class _Compiler:
    query: n.AlgebraQuery
    leaves: dict[int, StreamLeaf] = field(default_factory=dict)
    caches: list[StaticCache] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    certain: dict[int, frozenset[str]] = field(default_factory=dict)
    order: OrderNode | None = None
    # The cache compiled from each StaticPattern of the algebra, by id: those restricting a STREAM ?s.
    cache_of: dict[int, StaticCache] = field(default_factory=dict)
    # The variables of the left sides of the (NOT) EXISTS around the one being compiled: a nested
    # (NOT) EXISTS may not read them (``_exists_side``).
    enclosing: frozenset[str] = frozenset()

    def _id(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}{self.counts[prefix]}"

    # ------------------------------------------------------------------ the query level

    def compile(self, patterns: Sequence[StreamTriple] | None) -> PhysicalPlan:
        query = self.query
        if query.form not in (QueryForm.SELECT, QueryForm.CONSTRUCT, QueryForm.ASK):
            raise PlanError(
                f"a continuous query must be a SELECT, CONSTRUCT or ASK, not {query.form}{_where(query, query)}"
            )
        pattern = query.pattern
        if query.form is QueryForm.ASK:
            # Γ of ASK is the empty mapping once while the pattern has a solution.
            pattern = n.Distinct(n.Project((), pattern, span=pattern.span), span=pattern.span)
        root = self._solutions(pattern, None, top=True)
        self._check_patterns(patterns)
        self._restrict(stream_triples(query) if patterns is None else patterns)
        return PhysicalPlan(
            query.form, root, dict(sorted(self.leaves.items())), tuple(self.caches), query.template, self.order
        )

    def _check_patterns(self, patterns: Sequence[StreamTriple] | None) -> None:
        if patterns is None:
            return
        if len(patterns) != len(self.leaves):
            msg = f"the plan has {len(self.leaves)} stream triple patterns, the engine {len(patterns)}"
            raise PlanError(msg)
        for pattern_id, leaf in self.leaves.items():
            theirs = patterns[pattern_id]
            if theirs.triple != leaf.triple or theirs.stream != leaf.stream:
                msg = f"stream triple pattern {pattern_id} of the engine is not leaf {leaf.id} of the plan"
                raise PlanError(msg)

    def _restrict(self, patterns: Sequence[StreamTriple]) -> None:
        """Each ``STREAM ?s`` leaf gets the caches of the static sub-patterns restricting it
        (``plan.patterns``): the engine routes it the streams they name."""
        for st in patterns:
            if not st.restricted_by:
                continue
            leaf = self.leaves[st.id]
            leaf.restricted_by = tuple(self.cache_of[id(static)] for static in st.restricted_by)
            if any(cache.instances for cache in leaf.restricted_by):
                # The instances would read the streams of them all, at every one of their events.
                raise _not_shared(self.query, f"STREAM ?{st.variable.name}", st.source)

    # ------------------------------------------------------------------ solution modifiers

    def _solutions(self, pattern: n.Pattern, graph: IRI | None, top: bool) -> PlanNode:
        """The solution modifiers of a SELECT — the query's own (``top``) or a nested one — over its
        pattern: ``Slice(Distinct|Reduced(Project(OrderBy(pattern))))``, each part optional.

        A slice becomes a ``TopKNode`` over the distinct projected rows under DISTINCT/REDUCED, else
        over the rows before projection, which keep the columns the ORDER BY reads; ties are broken
        by the projected columns (``algebra.ties``). At the top, an ``OrderNode`` keeps Γ in ORDER BY
        order for the emissions. A nested SELECT's ORDER BY without slice orders nothing (the
        sub-query's solutions are a bag) and is dropped.
        """
        slice_ = pattern if isinstance(pattern, n.Slice) else None
        if slice_ is not None:
            pattern = slice_.input
        distinct = pattern if isinstance(pattern, (n.Distinct, n.Reduced)) else None
        if distinct is not None:
            pattern = distinct.input
        project = pattern if isinstance(pattern, n.Project) else None
        if project is not None:
            pattern = project.input
        order = pattern if isinstance(pattern, n.OrderBy) else None
        if order is not None:
            pattern = order.input
        if not contains_stream(pattern) and not _split(pattern):
            pattern = n.StaticPattern(pattern, (), span=pattern.span)
        root = self._node(pattern, graph)
        if project is not None:
            projection = project.vars
        else:
            projection = tuple(v for v in in_scope(pattern) if not n.is_internal(v))
        columns = tuple(v.name for v in projection)
        if top and INSTANCE in root.schema:
            # A template's instances share this plan: each row says whose it is (instances.py).
            columns += (INSTANCE,)
        span = None if top or project is None else project.span
        ordered = slice_ is not None or (top and order is not None)
        conditions = order.conditions if ordered and order is not None else ()
        self._check_expressions(tuple(c.expr for c in conditions))
        read = dict.fromkeys(x.name for c in conditions for x in walk(c.expr) if isinstance(x, Var))
        hidden = tuple(name for name in read if name in root.schema and name not in columns)
        if distinct is not None:
            if hidden:
                variables = " ".join("?" + name for name in hidden if not name.startswith("."))
                what = f"the variables {variables}" if variables else "an aggregate"
                keyword = "REDUCED" if isinstance(distinct, n.Reduced) else "DISTINCT"
                raise PlanError(
                    f"ORDER BY over {what}, which SELECT {keyword} "
                    f"does not project{_where(self.query, order)}, is not supported by incremental continuous "
                    'queries; register the query with mode="recompute" to evaluate it'
                )
            root = self._distinct(distinct, self._project(root, columns, span))
        else:
            root = self._project(root, columns + hidden, span)
        if slice_ is not None:
            if INSTANCE in root.schema:
                raise _not_shared(self.query, "a LIMIT or OFFSET", slice_)
            node = TopKNode(
                self._id("K"), root.schema, slice_.span, conditions=conditions, tie_break=columns,
                offset=slice_.start, limit=slice_.length, input=root,
            )
            self.certain[id(node)] = self._certain(root)
            root = node
        if top and ordered:
            node = OrderNode(
                self._id("R"), root.schema, None if order is None else order.span,
                conditions=conditions, projection=columns, input=root,
            )
            self.certain[id(node)] = self._certain(root)
            root = self.order = node
        return self._project(root, columns, span)

    def _project(self, node: PlanNode, columns: tuple[str, ...], span) -> PlanNode:
        """``node`` narrowed to ``columns`` (a column it lacks is unbound), or ``node`` if it has them."""
        if columns == node.schema:
            return node
        projected = ProjectNode(self._id("P"), columns, span, input=node)
        self.certain[id(projected)] = self._certain(node) & frozenset(columns)
        return projected

    # ------------------------------------------------------------------ patterns

    def _node(self, pattern: n.Pattern, graph: IRI | None) -> PlanNode:
        match pattern:
            case n.StreamPattern():
                leaves = self._stream_leaves(pattern)
                return leaves[0] if len(leaves) == 1 else self._join(leaves, pattern)
            case n.StaticPattern():
                return self._cache(pattern, graph)
            case n.Seq():
                return self._seq(pattern)
            case n.Join(operands):
                inputs: list[PlanNode] = []
                for operand in operands:
                    if isinstance(operand, n.StreamPattern):
                        inputs.extend(self._stream_leaves(operand))
                    else:
                        inputs.append(self._node(operand, graph))
                return self._join(inputs, pattern)
            case n.Filter(exprs, inner) if any(_outer_exists(e) for e in exprs):
                return self._exists_filter(pattern, graph)
            case n.Minus(left, right):
                # The stream triples of ``left`` come first in the engine's pre-order numbering.
                left_node = self._branch(left, graph)
                return self._negation(pattern, NegationKind.MINUS, left_node, self._branch(right, graph), ())
            case n.Filter(exprs, inner):
                self._check_expressions(exprs)
                child = self._node(inner, graph)
                node = FilterNode(self._id("F"), child.schema, pattern.span, exprs=exprs, input=child)
                # A row passes only if every expression is true, which binds the variables they require.
                required = {v.name for e in exprs for v in required_by(e)}
                self.certain[id(node)] = self._certain(child) | (required & set(child.schema))
                return node
            case n.Extend(var, expr, inner) if _outer_exists(expr):
                return self._exists_extend(pattern, graph)
            case n.Extend(var, expr, inner):
                self._check_expressions((expr,))
                child = self._node(inner, graph)
                schema = child.schema + ((var.name,) if var.name not in child.schema else ())
                node = ExtendNode(self._id("B"), schema, pattern.span, var=var.name, expr=expr, input=child)
                # An expression error leaves the new column unbound: it is never certain.
                self.certain[id(node)] = self._certain(child)
                return node
            case n.Distinct(inner) | n.Reduced(inner):
                return self._distinct(pattern, self._node(inner, graph))
            case n.Union(left, right):
                left_node, right_node = self._branch(left, graph), self._branch(right, graph)
                schema = left_node.schema + tuple(c for c in right_node.schema if c not in left_node.schema)
                node = UnionNode(self._id("U"), schema, pattern.span, left=left_node, right=right_node)
                self.certain[id(node)] = self._certain(left_node) & self._certain(right_node)
                return node
            case n.LeftJoin(left, right, exprs):
                self._check_expressions(exprs)
                left_node, right_node = self._branch(left, graph), self._branch(right, graph)
                schema = left_node.schema + tuple(c for c in right_node.schema if c not in left_node.schema)
                node = OptionalNode(
                    self._id("O"), schema, pattern.span, exprs=exprs, left=left_node, right=right_node
                )
                # The right columns are unbound in the padded rows of left rows without a match.
                self.certain[id(node)] = self._certain(left_node)
                return node
            case n.Group(input=inner):
                return self._group(pattern, self._node(inner, graph))
            case n.Slice() | n.Project() | n.OrderBy():
                # A nested SELECT (the translation puts a Project in every one).
                return self._solutions(pattern, graph, top=False)
            case n.Graph(name, inner):
                if isinstance(name, Var):
                    raise unsupported(self.query, f"GRAPH {name} around a stream pattern", pattern)
                return self._node(inner, name)
        for kind, construct in _UNSUPPORTED.items():
            if isinstance(pattern, kind):
                raise unsupported(self.query, construct, pattern)
        raise PlanError(f"cannot compile {type(pattern).__name__}{_where(self.query, pattern)}")

    def _group(self, pattern: n.Group, child: PlanNode) -> GroupNode:
        self._check_expressions(tuple(expr for _var, expr in pattern.keys))
        self._check_expressions(tuple(a.expr for _var, a in pattern.aggregates if a.expr is not None))
        keys = tuple((None if var is None else var.name, expr) for var, expr in pattern.keys)
        if INSTANCE in child.schema:
            if not keys:
                # Without GROUP BY every instance has its one group even when nothing matches it.
                raise _not_shared(self.query, "an aggregate without GROUP BY", pattern)
            keys += ((INSTANCE, n.INSTANCE),)
        aggregates = tuple((var.name, aggregate) for var, aggregate in pattern.aggregates)
        named = tuple(name for name, _expr in keys if name is not None)
        schema = (*named, *(name for name, _aggregate in aggregates))
        node = GroupNode(self._id("G"), schema, pattern.span, keys=keys, aggregates=aggregates, input=child)
        # A key expression may fail and an aggregate may be an error: only COUNT is always bound.
        self.certain[id(node)] = frozenset(name for name, a in aggregates if a.name == "COUNT")
        return node

    def _distinct(self, pattern: n.Distinct | n.Reduced, child: PlanNode) -> DistinctNode:
        reduced = isinstance(pattern, n.Reduced)
        node = DistinctNode(self._id("D"), child.schema, pattern.span, reduced=reduced, input=child)
        # A top-level projection has no entry: claiming no certain column is the safe default.
        self.certain[id(node)] = self.certain.get(id(child), frozenset())
        return node

    def _branch(self, pattern: n.Pattern, graph: IRI | None) -> PlanNode:
        """A UNION or OPTIONAL operand: a static-only one becomes a cache (the optimiser only wraps
        static parts that sit in joins with stream patterns)."""
        if not contains_stream(pattern) and not isinstance(pattern, n.StaticPattern):
            pattern = n.StaticPattern(pattern, (), span=pattern.span)
        return self._node(pattern, graph)

    def _exists_filter(self, pattern: n.Filter, graph: IRI | None) -> PlanNode:
        """A FILTER whose expressions hold (NOT) EXISTS: the operands without one become a filter;
        each (NOT) EXISTS operand of the conjunction a negation operator over it; the operands with
        one inside a larger expression a filter over mark operators (``_marks``)."""
        plain = tuple(e for e in pattern.exprs if not _outer_exists(e))
        marked = tuple(e for e in pattern.exprs if _outer_exists(e) and not isinstance(e, n.Exists))
        self._check_expressions(plain)
        # The engine numbers stream triples in pre-order, FILTER expressions before the FILTER's
        # input: compile the EXISTS patterns first so the leaf ids follow that order.
        outer = self.enclosing | {v.name for v in in_scope(pattern.input)}
        inner_sides = [self._exists_side(x, graph, outer) for e in pattern.exprs for x in _outer_exists(e)]
        node = self._branch(pattern.input, graph)
        if plain:
            filtered = FilterNode(self._id("F"), node.schema, pattern.span, exprs=plain, input=node)
            self.certain[id(filtered)] = self._certain(node)
            node = filtered
        if marked:
            columns = node.schema
            nested = [side for side in inner_sides if not _among(side[0], pattern.exprs)]
            node, marked = self._marks(node, nested, marked)
            filtered = FilterNode(self._id("F"), node.schema, pattern.span, exprs=marked, input=node)
            self.certain[id(filtered)] = self._certain(node)
            node = self._project(filtered, columns, pattern.span)
        for exists, right, condition in inner_sides:
            if _among(exists, pattern.exprs):
                kind = NegationKind.NOT_EXISTS if exists.negated else NegationKind.EXISTS
                node = self._negation(exists, kind, node, right, condition)
        return node

    def _exists_extend(self, pattern: n.Extend, graph: IRI | None) -> PlanNode:
        """A BIND or SELECT expression holding (NOT) EXISTS: an extend over mark operators (``_marks``)."""
        outer = self.enclosing | {v.name for v in in_scope(pattern.input)}
        # Pre-order: the expression's EXISTS patterns before the input (see ``_exists_filter``).
        inner_sides = [self._exists_side(x, graph, outer) for x in _outer_exists(pattern.expr)]
        child = self._branch(pattern.input, graph)
        node, (expr,) = self._marks(child, inner_sides, (pattern.expr,))
        name = pattern.var.name
        schema = node.schema + ((name,) if name not in node.schema else ())
        extended = ExtendNode(self._id("B"), schema, pattern.span, var=name, expr=expr, input=node)
        self.certain[id(extended)] = self._certain(node)
        return self._project(extended, child.schema + ((name,) if name not in child.schema else ()), pattern.span)

    def _marks(
        self, node: PlanNode, sides: list[tuple[n.Exists, PlanNode, tuple]], exprs: tuple[n.Expression, ...]
    ) -> tuple[PlanNode, tuple[n.Expression, ...]]:
        """``node`` with one mark operator per (NOT) EXISTS of ``sides``, each appending the value of
        its (NOT) EXISTS as an internal column, and ``exprs`` reading those columns in their place."""
        columns: dict[int, Var] = {}
        for exists, right, condition in sides:
            kind = NegationKind.NOT_EXISTS if exists.negated else NegationKind.EXISTS
            column = self._id(".exists")
            node = self._negation(exists, kind, node, right, condition, mark=column)
            columns[id(exists)] = Var(column)
        exprs = tuple(_read_marks(e, columns) for e in exprs)
        self._check_expressions(exprs)
        return node, exprs

    def _exists_side(
        self, exists: n.Exists, graph: IRI | None, outer: frozenset[str]
    ) -> tuple[n.Exists, PlanNode, tuple]:
        """The right input of a (NOT) EXISTS and its condition: the FILTERs at the top of the inner
        group, evaluated on the merged row because they may read outer variables (``outer``: the
        left side's and those around it). A (NOT) EXISTS in that condition that reads no outer
        variable the inner group leaves out depends on the inner row alone: an operand of the
        condition's conjunction becomes a negation operator inside the right input, one inside a
        larger expression a mark operator there, whose column the condition reads."""
        inner = exists.pattern
        condition: list[n.Expression] = []
        static_wrapper = None
        if isinstance(inner, n.StaticPattern):
            static_wrapper, inner = inner, inner.pattern
        while isinstance(inner, n.Filter):
            condition.extend(inner.exprs)
            inner = inner.input
        nested = tuple(e for e in condition if isinstance(e, n.Exists))
        in_order = [x for e in condition for x in _outer_exists(e)]
        condition = [e for e in condition if not isinstance(e, n.Exists)]
        scope = {v.name for v in in_scope(inner)}
        correlated = {v.name for e in in_order for v in mentioned(e)} & outer - scope
        if correlated:
            variables = " ".join("?" + name for name in sorted(correlated))
            raise PlanError(
                f"a (NOT) EXISTS nested inside another one, reading the outer variables {variables},"
                f"{_where(self.query, exists)} is not supported by incremental continuous queries; register the "
                'query with mode="recompute" to evaluate it'
            )
        for node in walk(inner):
            exprs = node.exprs if isinstance(node, (n.Filter, n.LeftJoin)) else ()
            exprs += (node.expr,) if isinstance(node, n.Extend) else ()
            for name in (x.name for e in exprs for x in walk(e) if isinstance(x, Var)):
                if name not in scope:
                    raise unsupported(
                        self.query,
                        f"a reference to the outer variable ?{name} nested inside the (NOT) EXISTS pattern "
                        "(only FILTERs at the top of its group may read outer variables)",
                        node,
                    )
        enclosing, self.enclosing = self.enclosing, outer
        try:
            if static_wrapper is not None:
                # One static cache computes the inner group with its nested (NOT) EXISTS operands.
                if nested:
                    inner = n.Filter(nested, inner, span=inner.span)
                right = self._branch(n.StaticPattern(inner, static_wrapper.join_vars, span=static_wrapper.span), graph)
                sides = [self._exists_side(x, graph, outer | scope) for x in in_order if not _among(x, nested)]
            else:
                # Pre-order, as the engine numbers stream triples: the condition's patterns, then the group.
                sides = [self._exists_side(x, graph, outer | scope) for x in in_order]
                right = self._branch(inner, graph)
                for side in [side for side in sides if _among(side[0], nested)]:
                    kind = NegationKind.NOT_EXISTS if side[0].negated else NegationKind.EXISTS
                    right = self._negation(side[0], kind, right, side[1], side[2])
            marks = [side for side in sides if not _among(side[0], nested)]
            right, marked = self._marks(right, marks, tuple(condition))
        finally:
            self.enclosing = enclosing
        return exists, right, marked

    def _negation(
        self, pattern: object, kind: NegationKind, left: PlanNode, right: PlanNode, condition: tuple, mark: str = ""
    ) -> NegationNode:
        shared = shared_columns(left.schema, right.schema)
        maybe_inner = [c for c in shared if c not in self._certain(right)]
        if kind is not NegationKind.MINUS and maybe_inner:
            # (NOT) EXISTS substitutes the outer row into the inner pattern: where the inner
            # pattern may leave a shared variable unbound (OPTIONAL, UNION), that is not a
            # compatibility test on the inner solutions, which is all the operator does.
            variables = " ".join("?" + c for c in maybe_inner)
            raise PlanError(
                f"{kind.value.upper()}{_where(self.query, pattern)} over {variables}, which its inner pattern may "
                "leave unbound, is not supported by incremental continuous queries; register the query "
                'with mode="recompute" to evaluate it'
            )
        # Hashed: the shared columns bound in every row of both sides; the others are checked per candidate.
        keys = tuple(c for c in shared if c in self._certain(left) and c in self._certain(right))
        span = getattr(pattern, "span", None)
        if mark:
            node = MarkNode(
                self._id("M"), (*left.schema, mark), span,
                kind=kind, shared=shared, keys=keys, condition=condition, left=left, right=right, column=mark,
            )
            self.certain[id(node)] = self._certain(left) | {mark}
            return node
        node = NegationNode(
            self._id("N"), left.schema, span,
            kind=kind, shared=shared, keys=keys, condition=condition, left=left, right=right,
        )
        self.certain[id(node)] = self._certain(left)
        return node

    def _check_expressions(self, exprs: tuple[n.Expression, ...]) -> None:
        for node in (x for expr in exprs for x in walk(expr)):
            if isinstance(node, n.Exists):
                construct = "NOT EXISTS" if node.negated else "EXISTS"
                raise PlanError(
                    f"{construct}{_where(self.query, node)} inside this expression is not supported by "
                    "incremental continuous queries: only FILTER and BIND expressions (SELECT expressions and "
                    'HAVING included) may hold one; register the query with mode="recompute" to evaluate it'
                )
            if isinstance(node, BuiltinCall) and node.name == "NOW":
                # Operators evaluate an expression once, when a mapping arrives; a NOW() condition would
                # need re-evaluating every live mapping at every evaluation time.
                raise PlanError(
                    f"NOW(){_where(self.query, node)} is not supported by incremental continuous queries: "
                    "its value changes with every evaluation; compare with a stream timestamp instead, "
                    'or register the query with mode="recompute"'
                )

    def _stream_leaves(self, pattern: n.StreamPattern) -> list[StreamLeaf]:
        # STREAM ?s: the stream's IRI is a column of its own, after the triple's.
        stream_column = pattern.stream.name if isinstance(pattern.stream, Var) else None
        leaves = []
        for triple in pattern.triples:
            if stream_column is not None and not isinstance(triple.predicate, (IRI, Var)):
                raise unsupported(self.query, f"a property path over STREAM ?{stream_column}", triple)
            # A path's predicate position is None: its operator matches the path, not one term.
            positions = tuple(
                column(term) if isinstance(term, (Var, BlankNode)) else None
                for term in (triple.subject, triple.predicate, triple.object)
            )
            columns = tuple(dict.fromkeys(name for name in positions if name is not None and name != stream_column))
            if stream_column is not None:
                columns += (stream_column,)
            pattern_id = len(self.leaves)
            leaf = StreamLeaf(
                f"S{pattern_id + 1}",
                columns,
                triple.span or pattern.span,
                pattern_id=pattern_id,
                stream=pattern.stream,
                window=pattern.window,
                triple=triple,
                positions=positions,
            )
            self.leaves[pattern_id] = leaf
            self.certain[id(leaf)] = frozenset(columns)
            leaves.append(leaf)
        return leaves

    def _seq(self, pattern: n.Seq) -> SeqNode:
        """A ``SeqNode`` whose steps read their event patterns' leaves (numbered in pre-order, as
        the engine numbers stream triples: the steps in order, each step's patterns in order)."""
        steps = []
        for step in pattern.steps:
            self._check_expressions(step.filters)
            self._check_expressions(step.guards)
            leaves = tuple(leaf for stream in step.patterns for leaf in self._stream_leaves(stream))
            columns = tuple(v.name for v in n.event_vars(step))
            steps.append(
                SeqStepPlan(step.var.name, step.bound, step.low, step.high, leaves, columns, step.filters, step.guards)
            )
        self._check_expressions(pattern.guards)
        schema = tuple(c for step in steps if step.bound for c in step.columns)
        node = SeqNode(self._id("Q"), schema, pattern.span, steps=tuple(steps), guards=pattern.guards)
        self.certain[id(node)] = frozenset(schema)
        return node

    def _cache(self, pattern: n.StaticPattern, graph: IRI | None) -> StaticCache:
        if isinstance(pattern.pattern, n.InstanceTable) and graph is None:
            table = pattern.pattern
            schema = tuple(v.name for v in table.vars)
            cache = StaticCache(self._id("C"), schema, pattern.span, pattern=table, instances=True)
            self.certain[id(cache)] = frozenset(schema)  # every parameter of an instance is bound
            self.caches.append(cache)
            self.cache_of[id(pattern)] = cache
            return cache
        if any(isinstance(x, n.InstanceTable) for x in walk(pattern.pattern)):
            raise _not_shared(self.query, "a pattern mixing the parameters with static data or filters", pattern)
        # A static sub-query's LIMIT keeps the solutions the recompute oracle's keeps.
        inner = break_ties(pattern.pattern)
        if graph is not None:
            inner = n.Graph(graph, inner, span=pattern.span)
        schema = tuple(v.name for v in in_scope(inner) if not n.is_internal(v))
        cache = StaticCache(
            self._id("C"),
            schema,
            pattern.span,
            pattern=inner,
            join_vars=tuple(v.name for v in pattern.join_vars),
        )
        cache.select = cache_select(self.query, cache)
        cache.sparql = cache_sparql(self.query, cache)
        self.certain[id(cache)] = frozenset(v.name for v in certainly_bound(inner)) & frozenset(schema)
        self.caches.append(cache)
        self.cache_of[id(pattern)] = cache
        return cache

    def _join(self, inputs: list[PlanNode], pattern: n.Pattern) -> MultiwayJoin:
        schema: list[str] = []
        for node in inputs:
            schema.extend(c for c in node.schema if c not in schema)
        join_inputs = []
        for i, node in enumerate(inputs):
            others = set().union(*(set(o.schema) for j, o in enumerate(inputs) if j != i))
            shared = [c for c in node.schema if c in others]
            certain = self._certain(node)
            keys = tuple(c for c in shared if c in certain)
            maybe = tuple(c for c in shared if c not in certain)
            index = JoinIndex.HASH if isinstance(node, StaticCache) else JoinIndex.RING
            join_inputs.append(JoinInput(node, keys, maybe, index))
        join = MultiwayJoin(self._id("J"), tuple(schema), pattern.span, join_inputs=tuple(join_inputs))
        self.certain[id(join)] = frozenset().union(*(self._certain(node) for node in inputs))
        return join

    def _certain(self, node: PlanNode) -> frozenset[str]:
        """The columns bound in every mapping ``node`` produces."""
        return self.certain[id(node)]


def _split(pattern: n.Pattern) -> bool:
    """``pattern`` already reads its static parts as caches (the global stage of a Spark job
    evaluates the top of a query over the partitions' results as one: streaming.merge)."""
    return any(isinstance(node, n.StaticPattern) for node in walk(pattern))


def _outer_exists(expr: n.Expression) -> list[n.Exists]:
    """The (NOT) EXISTS of ``expr`` not inside another one, in pre-order (``expr`` itself if it is one)."""
    if isinstance(expr, n.Exists):
        return [expr]
    return [exists for child in children(expr) for exists in _outer_exists(child)]


def _among(exists: n.Exists, exprs) -> bool:
    """Whether ``exists`` is one of ``exprs`` itself (by identity: equal EXISTS may sit elsewhere)."""
    return any(exists is e for e in exprs)


def _read_marks(expr: n.Expression, columns: dict[int, Var]) -> n.Expression:
    """``expr`` with each (NOT) EXISTS of ``columns`` (by identity) replaced by its mark column."""
    if isinstance(expr, n.Exists):
        return columns[id(expr)]
    return map_children(expr, lambda child: _read_marks(child, columns))
