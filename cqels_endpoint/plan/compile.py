"""Optimised algebra → physical plan: which operator computes each algebra node, and how.

``compile_plan(query)`` walks the algebra that ``algebra.passes.optimize`` produced (filters pushed
down, joins flattened, static sub-patterns wrapped as ``StaticPattern``) and maps

- each triple pattern of a ``StreamPattern`` to a ``StreamLeaf`` (a window buffer; the triples of
  one stream block are joined, their windows apply per triple pattern);
- each ``StaticPattern`` to a ``StaticCache`` (materialised with pyoxigraph by ``plan.caches``);
- each ``Join`` — with the triples of its stream blocks — to one ``MultiwayJoin`` whose inputs are
  indexed on the columns they share (ring indexes for windowed inputs, hash indexes for caches);
- ``Filter``, ``Extend`` (BIND and SELECT expressions) and the top ``Project`` to their operators.

A top-level ``ORDER BY`` without ``LIMIT`` does not change the bag Γ and is dropped. Every other
construct (aggregation, DISTINCT, OPTIONAL, UNION, MINUS, EXISTS, sub-queries, LIMIT/OFFSET…)
raises ``PlanError`` naming it and its query line: the incremental operators for those come with
issue 5, and ``mode="recompute"`` evaluates them meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.variables import certainly_bound, contains_stream, in_scope
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan.caches import cache_sparql
from cqels_endpoint.plan.nodes import (
    ExtendNode,
    FilterNode,
    JoinInput,
    MultiwayJoin,
    PhysicalPlan,
    PlanNode,
    ProjectNode,
    StaticCache,
    StreamLeaf,
)
from cqels_endpoint.query.ast import BuiltinCall
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.patterns import StreamTriple
from cqels_endpoint.terms import IRI, BlankNode, Var

# What users wrote, for the algebra nodes this issue has no incremental operator for.
_UNSUPPORTED = {
    n.Group: "aggregation (GROUP BY or an aggregate function)",
    n.Distinct: "DISTINCT",
    n.Reduced: "REDUCED",
    n.LeftJoin: "OPTIONAL",
    n.Union: "UNION",
    n.Minus: "MINUS",
    n.Slice: "LIMIT/OFFSET",
    n.Project: "a sub-query",
    n.OrderBy: "ORDER BY in a sub-query",
    n.Service: "SERVICE around a stream pattern",
    n.Path: "a property path over a stream",
    n.BGP: "a basic graph pattern over a stream",
    n.Table: "VALUES",
}


def compile_plan(query: n.AlgebraQuery, patterns: Sequence[StreamTriple] | None = None) -> PhysicalPlan:
    """The physical plan of an optimised continuous query.

    ``patterns`` (``runtime.patterns.stream_triples(query)``), when given, is checked against the
    plan's leaves: leaf ``k`` must read the ``k``-th stream triple pattern, so that the engine's
    ``on_insert(pattern_id, …)`` reaches the right buffer.
    """
    return _Compiler(query).compile(patterns)


def unsupported(query: n.AlgebraQuery, construct: str, node: object) -> PlanError:
    """The ``PlanError`` for a construct the incremental engine cannot evaluate yet."""
    return PlanError(
        f"{construct}{_where(query, node)} is not supported by incremental continuous queries yet "
        '(it comes with issue 5); register the query with mode="recompute" to evaluate it by re-evaluation'
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

    def _id(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}{self.counts[prefix]}"

    # ------------------------------------------------------------------ the query level

    def compile(self, patterns: Sequence[StreamTriple] | None) -> PhysicalPlan:
        query = self.query
        if query.form not in ("SELECT", "CONSTRUCT"):
            raise PlanError(
                f"a continuous query must be a SELECT or a CONSTRUCT, not {query.form}{_where(query, query)}"
            )
        pattern = query.pattern
        if isinstance(pattern, n.Slice):
            raise unsupported(query, "LIMIT/OFFSET (continuous top-k)", pattern)
        if isinstance(pattern, (n.Distinct, n.Reduced)):
            raise unsupported(query, _UNSUPPORTED[type(pattern)], pattern)
        projection: tuple[Var, ...] | None = None
        if isinstance(pattern, n.Project):
            projection, pattern = pattern.vars, pattern.input
        ignored_order = isinstance(pattern, n.OrderBy)
        if ignored_order:
            # Γ is a bag: without LIMIT/OFFSET the order of the solutions is not part of it.
            pattern = pattern.input
        if not contains_stream(pattern):
            pattern = n.StaticPattern(pattern, (), span=pattern.span)
        root = self._node(pattern, None)
        if projection is None:
            projection = tuple(v for v in in_scope(pattern) if not n.is_internal(v))
        schema = tuple(v.name for v in projection)
        if schema != root.schema:
            root = ProjectNode(self._id("P"), schema, None, input=root)
        self._check_patterns(patterns)
        return PhysicalPlan(
            query.form, root, dict(sorted(self.leaves.items())), tuple(self.caches), query.template, ignored_order
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

    # ------------------------------------------------------------------ patterns

    def _node(self, pattern: n.Pattern, graph: IRI | None) -> PlanNode:
        match pattern:
            case n.StreamPattern():
                leaves = self._stream_leaves(pattern)
                return leaves[0] if len(leaves) == 1 else self._join(leaves, pattern)
            case n.StaticPattern():
                return self._cache(pattern, graph)
            case n.Join(operands):
                inputs: list[PlanNode] = []
                for operand in operands:
                    if isinstance(operand, n.StreamPattern):
                        inputs.extend(self._stream_leaves(operand))
                    else:
                        inputs.append(self._node(operand, graph))
                return self._join(inputs, pattern)
            case n.Filter(exprs, inner):
                self._check_expressions(exprs)
                child = self._node(inner, graph)
                node = FilterNode(self._id("F"), child.schema, pattern.span, exprs=exprs, input=child)
                self.certain[id(node)] = self._certain(child)
                return node
            case n.Extend(var, expr, inner):
                self._check_expressions((expr,))
                child = self._node(inner, graph)
                schema = child.schema + ((var.name,) if var.name not in child.schema else ())
                node = ExtendNode(self._id("B"), schema, pattern.span, var=var.name, expr=expr, input=child)
                # An expression error leaves the new column unbound: it is never certain.
                self.certain[id(node)] = self._certain(child)
                return node
            case n.Graph(name, inner):
                if isinstance(name, Var):
                    raise unsupported(self.query, f"GRAPH {name} around a stream pattern", pattern)
                return self._node(inner, name)
        for kind, construct in _UNSUPPORTED.items():
            if isinstance(pattern, kind):
                raise unsupported(self.query, construct, pattern)
        raise PlanError(f"cannot compile {type(pattern).__name__}{_where(self.query, pattern)}")

    def _check_expressions(self, exprs: tuple[n.Expression, ...]) -> None:
        for node in (x for expr in exprs for x in walk(expr)):
            if isinstance(node, n.Exists):
                construct = "FILTER NOT EXISTS" if node.negated else "FILTER EXISTS"
                raise unsupported(self.query, construct, node)
            if isinstance(node, BuiltinCall) and node.name == "NOW":
                # Operators evaluate an expression once, when a mapping arrives; a NOW() condition would
                # need re-evaluating every live mapping at every evaluation time.
                raise PlanError(
                    f"NOW(){_where(self.query, node)} is not supported by incremental continuous queries: "
                    "its value changes with every evaluation; compare with a stream timestamp instead, "
                    'or register the query with mode="recompute"'
                )

    def _stream_leaves(self, pattern: n.StreamPattern) -> list[StreamLeaf]:
        if isinstance(pattern.stream, Var):
            raise unsupported(self.query, f"a stream named by the variable {pattern.stream}", pattern)
        leaves = []
        for triple in pattern.triples:
            if not isinstance(triple.predicate, (IRI, Var)):
                raise unsupported(self.query, "a property path over a stream", triple)
            positions = tuple(
                column(term) if isinstance(term, (Var, BlankNode)) else None
                for term in (triple.subject, triple.predicate, triple.object)
            )
            columns = tuple(dict.fromkeys(name for name in positions if name is not None))
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

    def _cache(self, pattern: n.StaticPattern, graph: IRI | None) -> StaticCache:
        inner = pattern.pattern if graph is None else n.Graph(graph, pattern.pattern, span=pattern.span)
        schema = tuple(v.name for v in in_scope(inner) if not n.is_internal(v))
        cache = StaticCache(
            self._id("C"),
            schema,
            pattern.span,
            pattern=inner,
            join_vars=tuple(v.name for v in pattern.join_vars),
        )
        cache.sparql = cache_sparql(self.query, cache)
        self.certain[id(cache)] = frozenset(v.name for v in certainly_bound(inner)) & frozenset(schema)
        self.caches.append(cache)
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
            index = "hash" if isinstance(node, StaticCache) else "ring"
            join_inputs.append(JoinInput(node, keys, maybe, index))
        join = MultiwayJoin(self._id("J"), tuple(schema), pattern.span, join_inputs=tuple(join_inputs))
        self.certain[id(join)] = frozenset().union(*(self._certain(node) for node in inputs))
        return join

    def _certain(self, node: PlanNode) -> frozenset[str]:
        """The columns bound in every mapping ``node`` produces."""
        return self.certain[id(node)]

