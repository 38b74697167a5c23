"""The text of ``q.explain()`` for an incremental query: the physical plan with live counters;
and the whole of ``cqels explain`` (``explain_query``).

One line per operator, children indented under their parent, each with its id, what it computes,
the query line it comes from and its operator's counters (inputs, outputs, index sizes, chosen
probe orders, top-k recomputations and skipped ticks…). Join inputs show their probe keys and
index kind; caches show the SPARQL they were computed with and, for a running query, what
``describe_cache`` says about them (size, store version, engine, last rebuild).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cqels_endpoint.algebra import explain as logical
from cqels_endpoint.algebra.nodes import AlgebraQuery
from cqels_endpoint.algebra.passes import RULES
from cqels_endpoint.algebra.passes.split_static import streams_and_caches
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan.compile import compile_plan
from cqels_endpoint.plan.nodes import (
    DistinctNode,
    ExtendNode,
    FilterNode,
    GroupNode,
    JoinInput,
    MultiwayJoin,
    NegationNode,
    OptionalNode,
    OrderNode,
    PhysicalPlan,
    PlanNode,
    ProjectNode,
    SeqNode,
    StaticCache,
    StreamLeaf,
    TopKNode,
    UnionNode,
)
from cqels_endpoint.plan.partitioning import partitioning
from cqels_endpoint.query import ast
from cqels_endpoint.query.dialects import why_dialect
from cqels_endpoint.query.serialize import write_expression as _write_expression
from cqels_endpoint.query.serialize import write_path, write_term
from cqels_endpoint.query.windows import format_window
from cqels_endpoint.terms import Var


def explain_query(query: ast.Query, *, full_iris: bool = False, rules: tuple = RULES, dialect: str | None = None) -> str:
    """``cqels explain``: the algebra, the optimised algebra and the static/stream split, then the
    dialect the query reads in (``query.dialects``), its physical plan and how a Spark job
    partitions it (``plan.partitioning``) when the query reads a stream."""
    sections, optimised = logical.explain(query, full_iris=full_iris, rules=rules, dialect=dialect)
    streams, _caches = streams_and_caches(optimised.pattern)
    if streams:
        sections += ["", "# dialect", why_dialect(dialect, query)]
        sections += ["", "# physical plan", physical_plan_section(optimised)]
        sections += ["", "# spark job (cqels spark-job)", *partitioning(to_algebra(query, dialect=dialect)).describe()]
    return "\n".join(sections)


def physical_plan_section(query: AlgebraQuery) -> str:
    """The physical plan of an optimised query without counters (for ``cqels explain``), or why
    the incremental engine cannot run it (the ``PlanError``)."""
    try:
        return explain_plan(compile_plan(query))
    except PlanError as error:
        return f"no incremental plan: {error}"


def explain_plan(
    plan: PhysicalPlan,
    counters: Callable[[PlanNode], Mapping[str, Any]] | None = None,
    describe_cache: Callable[[StaticCache], list[str]] | None = None,
) -> str:
    """The plan as indented text; ``counters(node)`` gives the live counters of a node's operator,
    ``describe_cache(cache)`` the lines shown under a static cache."""
    tree = plan_tree(plan, counters, describe_cache)
    lines = [tree["what"]]
    lines.extend(f"  {line}" for line in tree["details"])
    for child in tree["children"]:
        _text(child, 1, lines)
    return "\n".join(lines)


def plan_tree(
    plan: PhysicalPlan,
    counters: Callable[[PlanNode], Mapping[str, Any]] | None = None,
    describe_cache: Callable[[StaticCache], list[str]] | None = None,
) -> dict[str, Any]:
    """The plan as a tree of JSON-ready dicts (the web console draws it): each node's ``id``,
    ``what`` it computes (with how a join probes it), its query ``line``, its operator's
    ``counters``, ``details`` lines (a cache's SPARQL and state, a SEQ's steps) and ``children``."""
    details = ["template: " + " ".join(_triple(t) + " ." for t in plan.template)] if plan.template else []
    root = _tree(plan.root, None, counters, describe_cache)
    return {"id": "", "what": f"{plan.form.lower()} (incremental)", "line": None, "counters": {}, "details": details, "children": [root]}


def _tree(node: PlanNode, join_input: JoinInput | None, counters, describe_cache) -> dict[str, Any]:
    what = _what(node)
    if join_input is not None:
        keys = " ".join("?" + k for k in join_input.keys) or "nothing (cross product)"
        what += f"  probed on {keys} via {join_input.index} index"
        if join_input.maybe_unbound:
            what += " (maybe unbound: " + " ".join("?" + k for k in join_input.maybe_unbound) + ")"
    values: dict[str, Any] = {}
    if counters is not None:
        values = dict(counters(node))
        if isinstance(node, MultiwayJoin) and isinstance(values.get("probe_orders"), dict):
            # The join counts orders by input port; name the ports by their plan ids.
            names = [child.id for child in node.inputs]
            values["probe_orders"] = {
                ">".join(names[int(port)] for port in str(order).split(">")): count
                for order, count in values["probe_orders"].items()
            }
    details: list[str] = []
    if isinstance(node, StaticCache) and node.sparql:
        details.append(f"computed by: {node.sparql}")
    if isinstance(node, StaticCache) and describe_cache is not None:
        details.extend(describe_cache(node))
    if isinstance(node, SeqNode):
        for step in node.steps:
            details.append(_seq_step(step))
            for leaf in step.leaves:
                where = f"{write_term(leaf.stream)} {format_window(leaf.window)} {{ {_triple(leaf.triple)} }}"
                details.append(f"  {leaf.id} timed triples of {where}")
    if isinstance(node, MultiwayJoin):
        children = [_tree(child.node, child, counters, describe_cache) for child in node.join_inputs]
    else:
        children = [_tree(child, None, counters, describe_cache) for child in node.inputs]
    return {"id": node.id, "what": what, "line": node.line, "counters": values, "details": details, "children": children}


def _text(node: dict[str, Any], depth: int, lines: list[str]) -> None:
    indent = "  " * depth
    head = f"{indent}{node['id']} {node['what']}"
    if node["line"] is not None:
        head += f"  (line {node['line']})"
    lines.append(head)
    if node["counters"]:
        lines.append(f"{indent}   " + " ".join(f"{key}={_value(value)}" for key, value in node["counters"].items()))
    lines.extend(f"{indent}   {line}" for line in node["details"])
    for child in node["children"]:
        _text(child, depth + 1, lines)


def _what(node: PlanNode) -> str:
    columns = " ".join("?" + c for c in node.schema)
    match node:
        case StreamLeaf(stream=stream, window=window, triple=triple) if node.is_path:
            where = f"{write_term(stream)} {format_window(window)} {{ {_triple(triple)} }}"
            return f"path window {where}, the path re-evaluated over the window at each tick that changed it"
        case StreamLeaf(stream=stream, window=window, triple=triple, restricted_by=restricted_by) if node.stream_column:
            # STREAM ?s: one window buffer per stream, ?s its IRI; the streams it reads.
            reads = f"the streams {' and '.join(c.id for c in restricted_by)} name" if restricted_by else "every stream"
            where = f"{write_term(stream)} {format_window(window)} {{ {_triple(triple)} }}"
            return f"stream windows {where}: a window buffer per stream, {write_term(stream)} its IRI, reading {reads}"
        case StreamLeaf(stream=stream, window=window, triple=triple):
            return f"window buffer {write_term(stream)} {format_window(window)} {{ {_triple(triple)} }}"
        case StaticCache(instances=True):
            return f"instance table [{columns}]: one row per instance of the template, set by the instances"
        case StaticCache(join_vars=join_vars):
            keys = " ".join("?" + k for k in join_vars) or "no join variables"
            return f"static cache [{columns}] joined on {keys}"
        case MultiwayJoin(join_inputs=inputs):
            return f"multiway join of {len(inputs)} inputs [{columns}]"
        case FilterNode(exprs=exprs):
            return "filter " + " && ".join(f"({write_expression(e)})" for e in exprs)
        case ExtendNode(var=var, expr=expr):
            return f"extend ?{var} := {write_expression(expr)}"
        case GroupNode(keys=keys, aggregates=aggregates):
            by = " ".join(_group_key(name, expr) for name, expr in keys)
            computed = " ".join(f"?{name} := {_aggregate(aggregate)}" for name, aggregate in aggregates)
            return f"group by {by or '()'} computing {computed}"
        case ProjectNode():
            return f"project [{columns}]"
        case NegationNode(kind=kind, shared=shared, keys=keys, condition=condition):
            hashed = " ".join("?" + c for c in keys) or "nothing"
            text = f"{kind} [{columns}] probed on {hashed} via hash index"
            checked = " ".join("?" + c for c in shared if c not in keys)
            if checked:
                text += f" (maybe unbound: {checked})"
            if condition:
                text += " where " + " && ".join(f"({write_expression(e)})" for e in condition)
            return text
        case DistinctNode(reduced=reduced):
            # REDUCED runs as DISTINCT: removing every duplicate is one of the answers it allows.
            return f"reduced (as distinct) [{columns}]" if reduced else f"distinct [{columns}]"
        case UnionNode():
            return f"union [{columns}]"
        case TopKNode(conditions=conditions, tie_break=ties, offset=offset, limit=limit):
            rows = "all rows" if limit is None else f"{limit} row{'s' if limit != 1 else ''}"
            return f"top-k: {rows} from position {offset} ordered by {_order(conditions, ties)} then lineage"
        case OrderNode(conditions=conditions, projection=projection):
            return f"order of the emissions: {_order(conditions, projection)}"
        case SeqNode(steps=steps, guards=guards):
            text = f"SEQ({' ; '.join(_seq_pattern(step) for step in steps)}) [{columns}]: events matched in time order"
            if guards:
                text += " where " + " && ".join(f"({write_expression(e)})" for e in guards)
            return text
        case OptionalNode(exprs=exprs):
            condition = " && ".join(f"({write_expression(e)})" for e in exprs)
            return f"optional [{columns}]" + (f" if {condition}" if condition else "")
    return type(node).__name__


def _seq_pattern(step) -> str:
    """How a SEQ step was written: ``?e``, ``NOT ?x``, ``?x+``, ``?x{2,5}``…"""
    if step.bound:
        return "?" + step.var
    if (step.low, step.high) == (0, 0):
        return f"NOT ?{step.var}"
    quantifier = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((step.low, step.high))
    if quantifier is None:
        quantifier = f"{{{step.low}}}" if step.low == step.high else f"{{{step.low},{'' if step.high is None else step.high}}}"
    return f"?{step.var}{quantifier}"


def _seq_step(step) -> str:
    """One step's line under a SEQ: its kind, its event's columns, per-event filter and gap guards."""
    kind = f"event ?{step.var}" if step.bound else f"gap {_seq_pattern(step)}"
    text = f"{kind} [{' '.join('?' + c for c in step.columns)}]"
    if step.filters:
        text += " if " + " && ".join(f"({write_expression(e)})" for e in step.filters)
    if step.guards:
        text += " counted where " + " && ".join(f"({write_expression(e)})" for e in step.guards)
    return text


def _order(conditions, ties: tuple[str, ...]) -> str:
    written = [
        f"DESC({write_expression(c.expr)})" if c.descending else write_expression(c.expr) for c in conditions
    ]
    tie_break = " ".join("?" + name for name in ties)
    if not written:
        return f"the tie-break {tie_break}" if tie_break else "nothing"
    return " ".join(written) + (f", ties by {tie_break}" if tie_break else "")


def _triple(triple) -> str:
    # Variables as the columns are printed: internal ones (path links ``??P0``) have no SPARQL name.
    subject, obj = ("?" + t.name if isinstance(t, Var) else write_term(t) for t in (triple.subject, triple.object))
    predicate = triple.predicate
    return f"{subject} {'?' + predicate.name if isinstance(predicate, Var) else write_path(predicate)} {obj}"


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def write_expression(expr) -> str:
    """An expression as SPARQL text; the internal variables holding aggregate results (``?.0``) too,
    which HAVING and SELECT expressions over a GROUP BY read."""
    return _write_expression(expr, write_var=lambda var: f"?{var.name}")


def _group_key(name: str | None, expr) -> str:
    if name is None:
        return f"({write_expression(expr)})"
    if isinstance(expr, Var) and expr.name == name:
        return f"?{name}"
    return f"({write_expression(expr)} AS ?{name})"


def _aggregate(aggregate) -> str:
    argument = "*" if aggregate.expr is None else write_expression(aggregate.expr)
    distinct = "DISTINCT " if aggregate.distinct else ""
    separator = "" if aggregate.separator is None else f"; SEPARATOR={aggregate.separator!r}"
    return f"{aggregate.name}({distinct}{argument}{separator})"
