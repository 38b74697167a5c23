"""Physical plan → operator objects, built once per registered query and wired for pushing.

Every plan node becomes one operator labelled with the node id and the query line it comes from
(so that operator errors and ``explain`` point at the query text), connected to its parent's input
port. Window buffers and static caches are the sources; the plan's root feeds the ``Sink`` that
holds Γ. The twin-or-compiled operators come from the package's loader (``operators/__init__``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from cqels_endpoint.errors import PlanError
from cqels_endpoint.operators import (
    Distinct,
    Extend,
    Filter,
    GroupAggregate,
    Mark,
    MultiwayJoin,
    Negation,
    OptionalJoin,
    Project,
    Sink,
    TopK,
    Union,
    WindowBuffer,
)
from cqels_endpoint.operators.base import Operator
from cqels_endpoint.operators.order import Order
from cqels_endpoint.operators.path import PathWindow
from cqels_endpoint.operators.seq import SeqInput, SeqMatch
from cqels_endpoint.operators.shared.schemas import union_schema
from cqels_endpoint.operators.static_cache import StaticCache as StaticCacheSource
from cqels_endpoint.operators.stream_variable import StreamWindows
from cqels_endpoint.plan import nodes as p
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.expressions import compile_filter


@dataclass
class BuiltPlan:
    """The operators of a plan: by node id, the window buffers (and path windows) by pattern id, the
    caches, the sink, and the SEQ operators by the pattern ids of their event patterns (``timed``:
    those patterns' triples go to them with their times, not to a window buffer)."""

    operators: dict[str, Operator]
    buffers: dict[int, WindowBuffer | PathWindow | StreamWindows]
    caches: list[tuple[p.StaticCache, StaticCacheSource]]
    sink: Sink
    timed: dict[int, SeqMatch] = field(default_factory=dict)

    @property
    def sources(self) -> list[Operator]:
        """Every source, in plan order: each gets one punctuation per tick."""
        seqs = list({id(operator): operator for operator in self.timed.values()}.values())
        return [*self.buffers.values(), *seqs, *(cache for _, cache in self.caches)]


def label(node: p.PlanNode, kind: str, source: str = "") -> str:
    """``join J1 (line 4: ?s :p ?o)``: how errors and explain name an operator."""
    text = f"{kind} {node.id}"
    if node.span is None:
        return text
    lines = source.splitlines()
    quoted = lines[node.line - 1].strip() if source and 0 < node.line <= len(lines) else ""
    return f"{text} (line {node.line}: {quoted})" if quoted else f"{text} (line {node.line})"


def build_operators(
    plan: p.PhysicalPlan,
    dictionary,
    on_release: Callable[[tuple], None],
    source: str = "",
    **context,
) -> BuiltPlan:
    """The operators of ``plan``; ``on_release(ids)`` gets the term ids of every leaf that left.

    ``context`` goes to the expression compiler of FILTER and BIND (``base_iri``, ``now``, ``rng``).
    """
    built = BuiltPlan({}, {}, [], Sink(plan.root.schema, "sink"))
    decoder = TermDecoder(dictionary)

    def make(node: p.PlanNode) -> Operator:
        match node:
            case p.StreamLeaf() if node.is_path:
                operator = PathWindow(
                    node.positions, node.triple, dictionary, label(node, "path window", source), on_release=on_release
                )
                built.buffers[node.pattern_id] = operator
            case p.StreamLeaf() if node.stream_column is not None:
                name = label(node, "stream windows", source)
                operator = StreamWindows(
                    node.positions, node.stream_column,
                    lambda positions: WindowBuffer(positions, name, on_release=on_release), name, on_release=on_release,
                )
                built.buffers[node.pattern_id] = operator
            case p.StreamLeaf():
                operator = WindowBuffer(node.positions, label(node, "window buffer", source), on_release=on_release)
                built.buffers[node.pattern_id] = operator
            case p.SeqNode():
                steps = [
                    SeqInput(
                        step.bound,
                        step.low,
                        step.high,
                        tuple((leaf.pattern_id, leaf.positions) for leaf in step.leaves),
                        step.columns,
                        step.filters,
                        step.guards,
                    )
                    for step in node.steps
                ]
                operator = SeqMatch(
                    steps, node.guards, decoder, label(node, "seq", source), on_release=on_release, **context
                )
                built.timed.update((leaf.pattern_id, operator) for step in node.steps for leaf in step.leaves)
            case p.StaticCache():
                kind = "instance table" if node.instances else "static cache"
                operator = StaticCacheSource(node.schema, label(node, kind, source), on_release=on_release)
                built.caches.append((node, operator))
            case p.MultiwayJoin():
                operator = MultiwayJoin([child.schema for child in node.inputs], label(node, "join", source))
            case p.FilterNode():
                operator = Filter(node.input.schema, node.exprs, decoder, label(node, "filter", source), **context)
            case p.ExtendNode():
                operator = Extend(
                    node.input.schema, node.var, node.expr, decoder, label(node, "extend", source), **context
                )
            case p.GroupNode():
                operator = GroupAggregate(
                    node.input.schema, node.keys, node.aggregates, decoder, label(node, "group", source), **context
                )
            case p.ProjectNode():
                operator = Project(node.input.schema, node.schema, label(node, "project", source))
            case p.DistinctNode():
                kind = "reduced" if node.reduced else "distinct"
                operator = Distinct(node.input.schema, label(node, kind, source))
            case p.TopKNode():
                operator = TopK(
                    node.input.schema,
                    node.conditions,
                    node.tie_break,
                    decoder,
                    _slice_bound(node.offset),
                    None if node.limit is None else _slice_bound(node.limit),
                    label(node, "top-k", source),
                    **context,
                )
            case p.OrderNode():
                operator = Order(
                    node.input.schema,
                    node.conditions,
                    node.projection,
                    decoder,
                    label(node, "order", source),
                    **context,
                )
            case p.UnionNode():
                operator = Union(node.left.schema, node.right.schema, label(node, "union", source))
            case p.OptionalNode():
                operator = OptionalJoin(
                    node.left.schema,
                    node.right.schema,
                    node.exprs,
                    decoder,
                    label(node, "optional", source),
                    **context,
                )
            case p.MarkNode():
                operator = Mark(
                    node.left.schema,
                    node.right.schema,
                    node.kind,
                    _merged_condition(node, decoder, context),
                    label(node, f"{node.kind} mark", source),
                    keys=node.keys,
                    column=node.column,
                )
            case p.NegationNode():
                operator = Negation(
                    node.left.schema,
                    node.right.schema,
                    node.kind,
                    _merged_condition(node, decoder, context),
                    label(node, node.kind, source),
                    keys=node.keys,
                )
            case _:
                raise TypeError(f"no operator for plan node {node!r}")
        if tuple(operator.schema) != node.schema:
            msg = f"{operator.label}: operator schema {operator.schema} differs from the plan's {node.schema}"
            raise PlanError(msg)
        built.operators[node.id] = operator
        for port, child in enumerate(node.inputs):
            make(child).connect(operator, port)
        return operator

    make(plan.root).connect(built.sink)
    built.buffers = dict(sorted(built.buffers.items()))
    return built


def _merged_condition(node: p.NegationNode, decoder: TermDecoder, context: dict) -> Callable[[tuple], bool] | None:
    """The inner FILTER of a (NOT) EXISTS as a test on the left row merged with a right row."""
    if not node.condition:
        return None
    passes = compile_filter(node.condition, **context)
    positions = {name: i for i, name in enumerate(union_schema(node.left.schema, node.right.schema))}
    return lambda row: passes(DecodedRow(positions, row, decoder))


def _slice_bound(value: int) -> int:
    """An OFFSET or LIMIT the compiled top-k holds (offset + limit must fit a Py_ssize_t): no bag
    has more rows than half of it, so a larger bound selects the same rows."""
    return min(value, sys.maxsize // 2)
