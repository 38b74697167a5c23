"""The physical plan: one node per operator the incremental evaluator builds, with its choices.

A plan is compiled once per registered query (``plan.compile.compile_plan``) from the optimised
algebra. Each node knows its output ``schema`` (variable names; blank nodes of stream patterns are
internal columns named ``_:label``), the query line it comes from, and the physical choices made
for it: which leaf buffer a stream triple pattern feeds, which columns a join input is indexed on
and with which index kind, the SPARQL text a static cache was computed from. Nodes carry no run-time
state; the evaluator pairs each with its operator object, whose counters ``explain`` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.errors import Span
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import Named
from cqels_endpoint.query.windows import WindowConfig
from cqels_endpoint.terms import IRI, Var


@dataclass(eq=False)
class PlanNode:
    """Base of the physical nodes: a short id (``S1``, ``C1``, ``J1``…), the output columns, the span."""

    id: str
    schema: tuple[str, ...]
    span: Span | None

    @property
    def line(self) -> int | None:
        return None if self.span is None else self.span.line

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return ()


@dataclass(eq=False)
class UnaryNode(PlanNode):
    """A node with one input (filter, extend, group, project, distinct, top-k, order)."""

    input: PlanNode | None = None

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return (self.input,)


@dataclass(eq=False)
class BinaryNode(PlanNode):
    """A node with a left and a right input (union, optional, negation)."""

    left: PlanNode | None = None
    right: PlanNode | None = None

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return (self.left, self.right)


@dataclass(eq=False)
class StreamLeaf(PlanNode):
    """One stream triple pattern: the window buffer of leaf mappings fed by ``on_insert``/``on_expire``.

    ``pattern_id`` is the id of the pattern in ``plan.patterns.stream_triples`` order.
    ``positions`` names the column bound at subject, predicate and object (None for a constant,
    which the engine already matched); a column named twice (``?x :p ?x``) must get equal terms.
    With ``stream`` a variable (``STREAM ?s``) the last column is the stream's IRI (a triple
    position naming it too must hold it), and ``restricted_by`` lists the caches whose values of it
    are the streams the engine routes to the pattern (none: every stream).
    When the predicate of ``triple`` is a property path (``is_path``) the leaf is a path window
    (``operators/path.py``): it evaluates the path over its window's triples, and matches the
    constants at its ends itself.
    """

    pattern_id: int = 0
    stream: IRI | Var | None = None
    window: WindowConfig | None = None
    triple: ast.TriplePattern | None = None
    positions: tuple[str | None, str | None, str | None] = (None, None, None)
    restricted_by: tuple[StaticCache, ...] = ()

    @property
    def stream_column(self) -> str | None:
        """The column of the stream's IRI (``STREAM ?s``), None for a stream named by its IRI."""
        return self.stream.name if isinstance(self.stream, Var) else None

    @property
    def is_path(self) -> bool:
        return self.triple is not None and not isinstance(self.triple.predicate, (IRI, Var))


@dataclass(eq=False)
class StaticCache(PlanNode):
    """A static sub-pattern materialised with pyoxigraph at registration: its cached mappings.

    ``pattern`` is the algebra of the sub-pattern (wrapped in the ``GRAPH`` it sits in, if any);
    ``join_vars`` the columns it shares with the rest of the query; ``sparql`` the SELECT it is
    computed with (written by the compiler from ``select``, run by ``caches.engines.compute_cache``,
    which writes ``select`` again with the store's named graphs when ``to_sparql.needs_store_graphs``).
    The mappings themselves live in its operator.
    """

    pattern: n.Pattern | None = None
    join_vars: tuple[str, ...] = ()
    sparql: str = ""
    select: n.AlgebraQuery | None = None
    # The instance table of a template's shared plan: rows set by its instances, not computed.
    instances: bool = False


class JoinIndex(Named):
    """The index a multiway join keeps on one input (``explain`` prints the value)."""

    RING = "ring"  # inputs that insert and expire: windows and everything derived from them
    HASH = "hash"  # static caches


class NegationKind(Named):
    """What a negation node keeps of its left rows (``explain`` and operator labels print the value)."""

    NOT_EXISTS = "not exists"  # FILTER NOT EXISTS: the rows no right row matches
    EXISTS = "exists"  # FILTER EXISTS: the rows some right row matches
    MINUS = "minus"  # MINUS: the rows no right row matches on a common bound column


@dataclass(eq=False)
class JoinInput:
    """How a multiway join reads one input: the columns it is probed on and the index kind.

    ``keys`` are the input's columns shared with some other input and bound in every one of its
    mappings (those can be hashed); ``maybe_unbound`` are shared columns that some mappings leave
    unbound, checked for compatibility after the probe instead.
    """

    node: PlanNode
    keys: tuple[str, ...]
    maybe_unbound: tuple[str, ...]
    index: JoinIndex


@dataclass(eq=False)
class MultiwayJoin(PlanNode):
    """The n-ary join of stream leaves, static caches and derived inputs (adaptive probe order)."""

    join_inputs: tuple[JoinInput, ...] = ()

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return tuple(i.node for i in self.join_inputs)


@dataclass(eq=False)
class FilterNode(UnaryNode):
    """Keeps the mappings for which every expression is true (errors and false drop the mapping)."""

    exprs: tuple[n.Expression, ...] = ()


@dataclass(eq=False)
class ExtendNode(UnaryNode):
    """``BIND(expr AS var)`` / a SELECT expression: the new column is unbound when ``expr`` errors."""

    var: str = ""
    expr: n.Expression | None = None


@dataclass(eq=False)
class GroupNode(UnaryNode):
    """GROUP BY + aggregates (algebra ``Group``): one row per group, the named keys then the aggregates.

    ``keys`` are ``(column or None, expr)`` (an unnamed key groups without an output column);
    ``aggregates`` are ``(column, ast.Aggregate)``; the columns of the aggregates are the internal
    variables the Extend/Filter above (SELECT expressions, HAVING) read.
    """

    keys: tuple[tuple[str | None, n.Expression], ...] = ()
    aggregates: tuple[tuple[str, ast.Aggregate], ...] = ()


@dataclass(eq=False)
class ProjectNode(UnaryNode):
    """Keeps the ``schema`` columns of its input (a bag: multiplicities are kept)."""


@dataclass(eq=False)
class DistinctNode(UnaryNode):
    """DISTINCT (REDUCED too: eliminating every duplicate is allowed) with a counter per row,
    emitting a row's +1/-1 once per tick when its count leaves or returns to 0."""

    reduced: bool = False


@dataclass(eq=False)
class TopKNode(UnaryNode):
    """``ORDER BY … LIMIT/OFFSET`` (the ``TopK`` operator): the input rows at positions
    ``[offset, offset + limit)`` (``limit`` None: to the end) in the order of ``conditions``, ties
    broken by the ``tie_break`` columns ascending (``algebra.ties``), then by lineage."""

    conditions: tuple[ast.OrderCondition, ...] = ()
    tie_break: tuple[str, ...] = ()
    offset: int = 0
    limit: int | None = None


@dataclass(eq=False)
class OrderNode(UnaryNode):
    """The emission order of a top-level ORDER BY (or LIMIT/OFFSET): passes its input through and
    keeps it sorted by ``conditions`` then ``projection`` (the tie-break and the columns reported),
    so that the evaluator lists Γ and its changes in that order. The input may carry more columns:
    those the conditions read that the query does not project."""

    conditions: tuple[ast.OrderCondition, ...] = ()
    projection: tuple[str, ...] = ()


@dataclass(eq=False)
class UnionNode(BinaryNode):
    """Bag union of two inputs on the left columns then the right's others (missing ones unbound)."""


@dataclass(eq=False)
class OptionalNode(BinaryNode):
    """OPTIONAL: the left outer join of ``left`` with ``right`` where ``exprs`` hold on the merge."""

    exprs: tuple[n.Expression, ...] = ()


@dataclass(eq=False)
class NegationNode(BinaryNode):
    """``FILTER NOT EXISTS`` / ``FILTER EXISTS`` / ``MINUS`` (``kind``): ``left`` rows kept by how many
    ``right`` rows match them (the ``Negation`` operator); ``shared`` the columns the two sides are
    matched on, of which ``keys`` (bound in every row of both) are hashed and the others checked per
    candidate; ``condition`` the inner group's FILTER expressions, evaluated on the left row merged
    with the right one (they may read outer variables: the correlated NOT EXISTS of DEBS Q2)."""

    kind: NegationKind | None = None
    shared: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    condition: tuple[n.Expression, ...] = ()


@dataclass(eq=False)
class MarkNode(NegationNode):
    """A (NOT) EXISTS inside a larger expression (``FILTER (?x = 1 || NOT EXISTS { … })``, ``BIND
    (EXISTS { … } AS ?b)``): every ``left`` row with the value of the (NOT) EXISTS appended as the
    internal column ``column`` (``true``/``false``), which the FILTER or BIND above reads in its
    place (the ``Mark`` operator); ``kind`` is EXISTS or NOT EXISTS, the rest as for a negation."""

    column: str = ""


@dataclass(eq=False)
class SeqStepPlan:
    """One step of a ``SeqNode``: bound (one event, its ``columns`` in the output) or a gap of
    ``low``..``high`` events (``high`` None: unbounded); ``leaves`` its event patterns (their
    triples reach the SEQ operator with their times, not a window buffer), ``columns`` the
    variables of an event of the step, ``filters`` its per-event FILTERs, ``guards`` a gap step's
    gap guards (which of its events count for a match's gap)."""

    var: str
    bound: bool
    low: int
    high: int | None
    leaves: tuple[StreamLeaf, ...]
    columns: tuple[str, ...]
    filters: tuple[n.Expression, ...] = ()
    guards: tuple[n.Expression, ...] = ()


@dataclass(eq=False)
class SeqNode(PlanNode):
    """``FILTER(SEQ(…))`` (the ``SeqMatch`` operator, a source): the events of each step built
    from its leaves' timed triples, matched by the CEP automaton (``runtime.cep``); one row per
    match, the bound steps' columns in step order; ``guards`` are evaluated on each match."""

    steps: tuple[SeqStepPlan, ...] = ()
    guards: tuple[n.Expression, ...] = ()


@dataclass(eq=False)
class PhysicalPlan:
    """A compiled query: the operator tree, its leaves by pattern id, its caches, its output form.

    ``root`` produces Γ: for SELECT its schema is the projection; for CONSTRUCT it is the in-scope
    variables of the WHERE clause, which ``template`` is instantiated with. ``order`` is the node
    whose operator lists Γ in ORDER BY order (None: the query has no top-level order).
    """

    form: str
    root: PlanNode
    leaves: dict[int, StreamLeaf]
    caches: tuple[StaticCache, ...]
    template: tuple[ast.TriplePattern, ...] = ()
    order: OrderNode | None = None

    def nodes(self) -> list[PlanNode]:
        """Every node, parents before children."""
        found: list[PlanNode] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            found.append(node)
            stack.extend(reversed(node.inputs))
        return found


def shared_columns(left: Sequence[str], right: Sequence[str]) -> tuple[str, ...]:
    """The columns both sides bind, in left order; internal columns (``_:b``, blank nodes of a
    stream pattern) are local to their pattern and never shared."""
    return tuple(c for c in left if c in right and not c.startswith("_:"))
