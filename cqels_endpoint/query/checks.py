"""The static rules of SPARQL 1.1 (and of the CQELS / RSP-QL layer) that the grammar cannot express.

The parser calls ``check_query`` / ``check_update`` right after it has built the AST; every broken
rule raises ``QuerySyntaxError`` located at the offending node (or, when a node has no span, at the
nearest enclosing one). The rules, with their place in the SPARQL 1.1 Query spec:

- §18.2.1 variable scope: ``BIND (e AS ?v)`` with ``?v`` already in scope in its group; ``(e AS ?v)``
  in SELECT with ``?v`` in scope in WHERE or already projected;
- §11.4 / §18.2.4.1 grouping: in a grouped query (GROUP BY, or an aggregate in SELECT, HAVING or
  ORDER BY) a projected variable must be a group key, an earlier alias or inside an aggregate, and
  ``SELECT *`` is not allowed; aggregates appear only in SELECT, HAVING and ORDER BY, never nested;
- §19.6 blank-node labels: one label may not be used in two basic graph patterns, nor in two
  INSERT DATA operations of one request; DELETE DATA / DELETE WHERE / DELETE templates hold none;
- §19.8 note 8 / §10.2: VALUES rows as long as the variable list, no variable listed twice; no
  variables in INSERT DATA / DELETE DATA;
- CQELS / RSP-QL: ``WINDOW <w>`` names a window declared by ``FROM NAMED WINDOW``, declared once;
  STREAM and WINDOW blocks are not nested inside SERVICE, inside each other, or used in updates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from cqels_endpoint.errors import QuerySyntaxError, Span
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import children
from cqels_endpoint.terms import BlankNode, Var


def check_query(query: ast.Query) -> None:
    """Raise ``QuerySyntaxError`` if ``query`` breaks a static rule of SPARQL 1.1 or CQELS."""
    _Checker(query.text, query.span).query(query)


def check_update(update: ast.Update) -> None:
    """Raise ``QuerySyntaxError`` if ``update`` breaks a static rule of SPARQL 1.1 Update."""
    _Checker(update.text, update.span).update(update)


def in_scope_variables(node: object) -> dict[str, Var]:
    """The variables in scope after a group element, group or sub-select (§18.2.1), by name.

    Each name maps to its first occurrence (so errors can point at it). MINUS and FILTER add
    nothing; a sub-select adds only what it projects.
    """
    found: dict[str, Var] = {}
    _collect_scope(node, found)
    return found


def _collect_scope(node: object, found: dict[str, Var]) -> None:
    match node:
        case Var():
            found.setdefault(node.name, node)
        case ast.TriplePattern(subject=subject, predicate=predicate, object=obj):
            for term in (subject, predicate, obj):
                if isinstance(term, Var):
                    found.setdefault(term.name, term)
        case ast.TriplesBlock(triples=triples):
            for triple in triples:
                _collect_scope(triple, found)
        case ast.GroupGraphPattern(elements=elements):
            for element in elements:
                _collect_scope(element, found)
        case ast.Bind(var=var):
            found.setdefault(var.name, var)
        case ast.OptionalPattern(pattern=pattern):
            _collect_scope(pattern, found)
        case ast.UnionPattern(alternatives=alternatives):
            for alternative in alternatives:
                _collect_scope(alternative, found)
        case ast.GraphPattern(name=name, pattern=pattern) | ast.ServicePattern(name=name, pattern=pattern):
            _collect_scope(name, found)
            _collect_scope(pattern, found)
        case ast.StreamPattern(stream=name, pattern=pattern) | ast.WindowPattern(name=name, pattern=pattern):
            _collect_scope(name, found)
            _collect_scope(pattern, found)
        case ast.InlineData(vars=variables):
            for var in variables:
                found.setdefault(var.name, var)
        case ast.SubSelect(query=select):
            if select.projection:
                for item in select.projection:
                    var = item if isinstance(item, Var) else item.var
                    found.setdefault(var.name, var)
            else:
                _collect_scope(select.where, found)
                if select.values is not None:
                    _collect_scope(select.values, found)
        case _:
            # FILTER and MINUS bind nothing visible outside (§18.2.1); terms bind nothing.
            pass


def _aggregates_in(expr: object) -> Iterator[ast.Aggregate]:
    """The outermost aggregates of an expression (not those inside EXISTS, which are errors anyway)."""
    if isinstance(expr, ast.Aggregate):
        yield expr
    elif not isinstance(expr, ast.Exists):
        for child in children(expr):
            yield from _aggregates_in(child)


def _free_variables(expr: object) -> Iterator[Var]:
    """The variables an expression reads outside aggregates and EXISTS: those grouping constrains."""
    if isinstance(expr, Var):
        yield expr
    elif not isinstance(expr, ast.Aggregate | ast.Exists):
        for child in children(expr):
            yield from _free_variables(child)


# Leaves of expressions and patterns: nothing below them to check (and the generic traversal is slow).
_TERMS = (Var, ast.IRI, ast.Literal, BlankNode)

# `SELECT [DISTINCT|REDUCED] *`, allowing comments between the keywords, to put a caret on the `*`.
_SELECT_STAR = re.compile(r"SELECT(?:\s|#[^\n]*)*(?:(?:DISTINCT|REDUCED)(?:\s|#[^\n]*)*)?\*", re.IGNORECASE)


class _Checker:
    """One check of one query or update; ``source`` is its text, for the error messages."""

    def __init__(self, source: str, root_span: Span | None):
        self.source = source
        self.root_span = root_span
        self.windows: dict[str, ast.NamedWindow] = {}

    # ------------------------------------------------------------------ helpers

    def error(self, message: str, node: object, near: Span | None) -> QuerySyntaxError:
        span = getattr(node, "span", None) or near or self.root_span or Span.at(self.source, 0, 0)
        return QuerySyntaxError(message, self.source, span)

    def located(self, node: object) -> str:
        """``line N`` of a node, for messages that refer back to an earlier occurrence."""
        span = getattr(node, "span", None)
        return f"line {span.line}, column {span.column}" if span is not None else "an earlier position"

    # ------------------------------------------------------------------ queries

    def query(self, query: ast.Query) -> None:
        form = query.form
        near = form.span or query.span
        for dataset in form.datasets:
            if isinstance(dataset, ast.NamedWindow):
                first = self.windows.get(dataset.name.value)
                if first is not None:
                    msg = (
                        f"window <{dataset.name.value}> is declared twice (first at {self.located(first)}); "
                        "give each FROM NAMED WINDOW its own name"
                    )
                    raise self.error(msg, dataset.name, dataset.span or near)
                self.windows[dataset.name.value] = dataset
        match form:
            case ast.SelectQuery():
                self.select(form, near, inside=None)
            case ast.ConstructQuery():
                if form.short_form:
                    self.construct_where(form, near)
                self.solution_query(form, near)
            case ast.AskQuery() | ast.DescribeQuery():
                self.solution_query(form, near)
        _BlankNodeScopes(self).query(form)

    def solution_query(self, form: ast.ConstructQuery | ast.AskQuery | ast.DescribeQuery, near: Span | None) -> None:
        """CONSTRUCT, ASK and DESCRIBE: WHERE, modifiers and VALUES, without projection rules."""
        if form.where is not None:
            self.group(form.where, form.where.span or near, inside=None)
        self.modifiers(form.modifiers, near)
        if form.values is not None:
            self.inline_data(form.values, near)

    def construct_where(self, form: ast.ConstructQuery, near: Span | None) -> None:
        """``CONSTRUCT WHERE { … }`` takes a template, so its pattern may only hold plain triples (§16.2.4)."""
        for element in form.where.elements:
            if not isinstance(element, ast.TriplesBlock):
                msg = (
                    "CONSTRUCT WHERE { … } only allows triple patterns; "
                    "write CONSTRUCT { template } WHERE { … } to use FILTER, GRAPH or other patterns"
                )
                raise self.error(msg, element, form.where.span or near)
            for triple in element.triples:
                if not isinstance(triple.predicate, Var | ast.IRI):
                    msg = (
                        "CONSTRUCT WHERE { … } does not allow property paths; "
                        "write CONSTRUCT { template } WHERE { … }"
                    )
                    raise self.error(msg, triple.predicate, triple.span or element.span or near)

    def modifiers(self, modifiers: ast.Modifiers, near: Span | None) -> None:
        near = modifiers.span or near
        for condition in modifiers.group_by:
            self.expression(condition.expr, condition.span or near, forbid="in GROUP BY", inside=None)
        for constraint in modifiers.having:
            self.expression(constraint, near, forbid=None, inside=None)
        for order in modifiers.order_by:
            self.expression(order.expr, order.span or near, forbid=None, inside=None)

    def select(self, select: ast.SelectQuery, near: Span | None, inside: str | None) -> None:
        near = select.span or near
        self.group(select.where, select.where.span or near, inside)
        if select.values is not None:
            self.inline_data(select.values, near)
        self.modifiers(select.modifiers, near)
        modifiers = select.modifiers
        aggregated = [
            aggregate
            for expr in (
                *(item.expr for item in select.projection if isinstance(item, ast.ProjectionExpression)),
                *modifiers.having,
                *(order.expr for order in modifiers.order_by),
            )
            for aggregate in _aggregates_in(expr)
        ]
        grouped = bool(modifiers.group_by) or bool(aggregated)
        group_keys: dict[str, object] = {}
        for condition in modifiers.group_by:
            if condition.var is not None:
                group_keys[condition.var.name] = condition.var
            elif isinstance(condition.expr, Var):
                group_keys[condition.expr.name] = condition.expr
        group_aliases = {c.var.name: c.var for c in modifiers.group_by if c.var is not None}

        if grouped and not select.projection:
            raise self.select_star_error(select, near, aggregated)

        where_scope = in_scope_variables(select.where)
        if select.values is not None:
            where_scope.update({v.name: v for v in select.values.vars if v.name not in where_scope})
        projected: dict[str, Var] = {}
        aliases: set[str] = set()
        for item in select.projection:
            if isinstance(item, Var):
                if grouped and item.name not in group_keys and item.name not in aliases:
                    raise self.error(self.ungrouped_message(item, modifiers), item, near)
                projected.setdefault(item.name, item)
                continue
            item_near = item.span or near
            self.expression(item.expr, item_near, forbid=None, inside=None)
            if grouped:
                for var in _free_variables(item.expr):
                    if var.name not in group_keys and var.name not in aliases:
                        raise self.error(self.ungrouped_message(var, modifiers), var, item_near)
            name = item.var.name
            if name in projected:
                msg = (
                    f"?{name} is assigned twice in SELECT (already projected at {self.located(projected[name])}); "
                    "choose another name for (… AS ?" + name + ")"
                )
                raise self.error(msg, item.var, item_near)
            if name in where_scope:
                msg = (
                    f"(… AS ?{name}): ?{name} is already in scope in WHERE (at {self.located(where_scope[name])}); "
                    "choose a new variable name"
                )
                raise self.error(msg, item.var, item_near)
            if grouped and name in group_aliases:
                msg = f"(… AS ?{name}): ?{name} is already assigned in GROUP BY; choose a new variable name"
                raise self.error(msg, item.var, item_near)
            projected[name] = item.var
            aliases.add(name)

    def ungrouped_message(self, var: Var, modifiers: ast.Modifiers) -> str:
        if modifiers.group_by:
            return (
                f"?{var.name} is used in SELECT but is neither in GROUP BY nor inside an aggregate; "
                f"add ?{var.name} to GROUP BY or wrap it in an aggregate such as SAMPLE(?{var.name})"
            )
        return (
            f"?{var.name} is used in SELECT of an aggregate query (no GROUP BY: one group) but is not "
            f"inside an aggregate; add GROUP BY ?{var.name} or wrap it in an aggregate such as SAMPLE(?{var.name})"
        )

    def select_star_error(
        self, select: ast.SelectQuery, near: Span | None, aggregated: list[ast.Aggregate]
    ) -> QuerySyntaxError:
        reason = "GROUP BY" if select.modifiers.group_by else "aggregates"
        msg = f"SELECT * cannot be used with {reason}; list the grouped variables and aggregates to project"
        if select.span is not None:
            match = _SELECT_STAR.match(self.source, select.span.start)
            if match is not None:
                return QuerySyntaxError(msg, self.source, Span.at(self.source, match.end() - 1, match.end()))
        culprit = select.modifiers.group_by[0] if select.modifiers.group_by else aggregated[0]
        return self.error(msg, culprit, near)

    # ------------------------------------------------------------------ patterns

    def group(self, group: ast.GroupGraphPattern, near: Span | None, inside: str | None) -> None:
        """Check a ``{ … }``; ``inside`` names an enclosing construct that forbids STREAM/WINDOW blocks."""
        near = group.span or near
        in_scope: dict[str, Var] = {}
        for element in group.elements:
            element_near = element.span or near
            match element:
                case ast.TriplesBlock():
                    pass
                case ast.Filter(constraint=constraint):
                    self.expression(constraint, element_near, forbid="in FILTER", inside=inside)
                case ast.Bind(expr=expr, var=var):
                    self.expression(expr, element_near, forbid="in BIND", inside=inside)
                    if var.name in in_scope:
                        msg = (
                            f"BIND (… AS ?{var.name}): ?{var.name} is already in scope in this group "
                            f"(at {self.located(in_scope[var.name])}); BIND must introduce a new variable"
                        )
                        raise self.error(msg, var, element_near)
                case ast.OptionalPattern(pattern=pattern) | ast.MinusPattern(pattern=pattern):
                    self.group(pattern, element_near, inside)
                case ast.GraphPattern(pattern=pattern):
                    self.group(pattern, element_near, inside)
                case ast.UnionPattern(alternatives=alternatives):
                    for alternative in alternatives:
                        self.group(alternative, element_near, inside)
                case ast.ServicePattern(pattern=pattern):
                    self.group(pattern, element_near, inside="SERVICE")
                case ast.InlineData():
                    self.inline_data(element, element_near)
                case ast.GroupGraphPattern():
                    self.group(element, element_near, inside)
                case ast.SubSelect(query=select):
                    self.select(select, element_near, inside)
                case ast.StreamPattern(stream=stream, pattern=pattern):
                    if inside is not None:
                        raise self.error(self.nested_message("STREAM", inside), element, near)
                    label = f"STREAM <{stream.value}>" if isinstance(stream, ast.IRI) else f"STREAM ?{stream.name}"
                    self.group(pattern, element_near, inside=label)
                case ast.WindowPattern(name=name, pattern=pattern):
                    if inside is not None:
                        raise self.error(self.nested_message("WINDOW", inside), element, near)
                    self.window_reference(name, element_near)
                    label = f"WINDOW <{name.value}>" if isinstance(name, ast.IRI) else f"WINDOW ?{name.name}"
                    self.group(pattern, element_near, inside=label)
            for name, var in in_scope_variables(element).items():
                in_scope.setdefault(name, var)

    def nested_message(self, construct: str, inside: str) -> str:
        if inside == "an update":
            return f"{construct} blocks are not allowed in an update; updates only read the static store"
        return (
            f"{construct} blocks cannot be nested inside {inside}; "
            f"move the {construct} block out to the query's WHERE clause"
        )

    def window_reference(self, name: ast.IRI | Var, near: Span | None) -> None:
        if isinstance(name, ast.IRI):
            if name.value not in self.windows:
                msg = (
                    f"window <{name.value}> is not declared; "
                    f"add FROM NAMED WINDOW <{name.value}> ON <stream> [RANGE …]"
                )
                raise self.error(msg, name, near)
        elif not self.windows:
            msg = (
                f"WINDOW ?{name.name} ranges over the declared windows, but there are none; "
                "add FROM NAMED WINDOW <w> ON <stream> [RANGE …]"
            )
            raise self.error(msg, name, near)

    def inline_data(self, data: ast.InlineData, near: Span | None) -> None:
        near = data.span or near
        seen: dict[str, Var] = {}
        for var in data.vars:
            if var.name in seen:
                msg = f"?{var.name} is listed twice in the VALUES variables (first at {self.located(seen[var.name])})"
                raise self.error(msg, var, near)
            seen[var.name] = var
        width = len(data.vars)
        names = " ".join(f"?{v.name}" for v in data.vars)
        for row in data.rows:
            if len(row) != width:
                culprit = row[width] if len(row) > width else next((v for v in reversed(row) if v is not None), None)
                msg = (
                    f"VALUES row has {len(row)} value{'s' if len(row) != 1 else ''} but {width} "
                    f"variable{'s' if width != 1 else ''} ({names}); write one value (or UNDEF) per variable"
                )
                raise self.error(msg, culprit, near)

    # ------------------------------------------------------------------ expressions

    def expression(self, expr: object, near: Span | None, forbid: str | None, inside: str | None) -> None:
        """Check an expression; ``forbid`` says where it stands when aggregates are not allowed there."""
        if isinstance(expr, _TERMS):
            return
        near = getattr(expr, "span", None) or near
        match expr:
            case ast.Aggregate():
                if forbid is not None:
                    if forbid.startswith("inside the aggregate"):
                        msg = f"aggregate {expr.name} cannot be nested {forbid}; aggregates cannot contain aggregates"
                    else:
                        msg = (
                            f"aggregate {expr.name} is not allowed {forbid}; "
                            "aggregates belong in SELECT, HAVING or ORDER BY"
                        )
                    raise self.error(msg, expr, near)
                if expr.expr is not None:
                    self.expression(expr.expr, near, forbid=f"inside the aggregate {expr.name}", inside=inside)
            case ast.Exists(pattern=pattern):
                self.group(pattern, near, inside)
            case _:
                for child in children(expr):
                    self.expression(child, near, forbid, inside)

    # ------------------------------------------------------------------ updates

    def update(self, update: ast.Update) -> None:
        # §19.6: a label in INSERT DATA names one new blank node, so two INSERT DATA operations of
        # one request may not share it (labels in templates and WHERE clauses are local).
        data_labels: dict[str, tuple[int, BlankNode]] = {}
        for index, operation in enumerate(update.operations, start=1):
            near = operation.span or update.span
            match operation:
                case ast.InsertData(quads=quads):
                    self.ground_quads(quads, "INSERT DATA", near)
                    self.unshared_labels(quads, index, data_labels, near)
                case ast.DeleteData(quads=quads):
                    self.ground_quads(quads, "DELETE DATA", near)
                    self.no_blank_nodes(quads, "DELETE DATA", near)
                case ast.DeleteWhere(quads=quads):
                    self.no_blank_nodes(quads, "DELETE WHERE", near)
                case ast.Modify(delete=delete, where=where):
                    self.no_blank_nodes(delete, "a DELETE template", near)
                    self.group(where, where.span or near, inside="an update")
                    _BlankNodeScopes(self).pattern(where)

    def unshared_labels(
        self,
        quads: tuple[ast.QuadPattern, ...],
        index: int,
        data_labels: dict[str, tuple[int, BlankNode]],
        near: Span | None,
    ) -> None:
        for quad in quads:
            for term in (quad.subject, quad.object):
                if not isinstance(term, BlankNode):
                    continue
                first = data_labels.setdefault(term.label, (index, term))
                if first[0] != index:
                    msg = (
                        f"blank node _:{term.label} is already used by INSERT DATA in operation {first[0]} of this "
                        f"request (at {self.located(first[1])}); two INSERT DATA operations cannot share a label"
                    )
                    raise self.error(msg, term, quad.span or near)

    def ground_quads(self, quads: tuple[ast.QuadPattern, ...], where: str, near: Span | None) -> None:
        for quad in quads:
            for term in (quad.subject, quad.predicate, quad.object, quad.graph):
                if isinstance(term, Var):
                    msg = (
                        f"variables are not allowed in {where} (found ?{term.name}); "
                        f"use {where.split()[0]} {{ … }} WHERE {{ … }} to bind them"
                    )
                    raise self.error(msg, term, quad.span or near)

    def no_blank_nodes(self, quads: tuple[ast.QuadPattern, ...], where: str, near: Span | None) -> None:
        for quad in quads:
            for term in (quad.subject, quad.object):
                if isinstance(term, BlankNode):
                    label = "[]" if term.generated else f"_:{term.label}"
                    msg = f"blank nodes are not allowed in {where} (found {label}); use a variable instead"
                    raise self.error(msg, term, quad.span or near)


class _BlankNodeScopes:
    """§19.6: a blank-node label may not be used in two different basic graph patterns.

    A BGP is a run of triple blocks in one group, interrupted only by FILTERs (which the algebra
    lifts out of the group); every other element ends it. A STREAM block, a group of its own, starts
    a new one.
    CONSTRUCT templates are not BGPs and are not scanned.
    """

    def __init__(self, checker: _Checker):
        self.checker = checker
        self.first_use: dict[str, tuple[int, BlankNode]] = {}
        self.units = 0

    def new_unit(self) -> int:
        self.units += 1
        return self.units

    def use(self, term: object, unit: int, near: Span | None) -> None:
        if not isinstance(term, BlankNode):
            return
        first = self.first_use.setdefault(term.label, (unit, term))
        if first[0] != unit:
            msg = (
                f"blank node _:{term.label} is used in two different basic graph patterns "
                f"(first at {self.checker.located(first[1])}); use a variable to join the two patterns"
            )
            raise self.checker.error(msg, term, near)

    def query(self, form: ast.QueryForm) -> None:
        parts: list[object] = [form.where, form.modifiers, form.values]
        if isinstance(form, ast.SelectQuery):
            parts.append(form.projection)
        for part in parts:
            if part is not None:
                self.pattern(part)

    def pattern(self, node: object) -> None:
        match node:
            case Var() | ast.IRI() | ast.Literal() | BlankNode():
                pass
            case ast.GroupGraphPattern():
                self.group(node)
            case tuple():
                for item in node:
                    self.pattern(item)
            case _:
                for child in children(node):
                    self.pattern(child)

    def group(self, group: ast.GroupGraphPattern) -> None:
        unit: int | None = None
        for element in group.elements:
            if isinstance(element, ast.TriplesBlock):
                if unit is None:
                    unit = self.new_unit()
                for triple in element.triples:
                    for term in (triple.subject, triple.object):
                        self.use(term, unit, triple.span or element.span)
            elif isinstance(element, ast.Filter):
                self.pattern(element.constraint)
            else:
                unit = None
                self.pattern(element)
