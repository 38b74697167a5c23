"""AST → SPARQL 1.1 (+ CQELS / RSP-QL) text that parses back to an equal AST.

Used to show queries, in the parse → serialise → parse round-trip tests, and to rewrite continuous
queries into plain SPARQL for pyoxigraph (re-evaluation mode), so a query without stream
constructs must come out as text any SPARQL 1.1 engine accepts. Choices that keep this robust:

- IRIs are written in full (``<…>``); the prologue is written back so that it round-trips, but
  no IRI depends on it. Relative IRIs (no base) stay relative.
- Every compound expression is written in parentheses, so precedence never matters.
- Numbers and booleans are written bare when their lexical form is a SPARQL token of their
  datatype, otherwise as ``"lexical"^^<datatype>``; strings use only the ECHAR escapes
  (``\\t \\n \\r \\b \\f \\" \\\\``), never ``\\u`` (which SPARQL decodes before tokenising).
- Blank nodes, including those the parser generated for ``[]`` and collections, are written as
  ``_:label``, so the expanded triples come back unchanged.

The writers of terms, expressions and property paths (``write_term``, ``write_expression``,
``write_path``, …) are public: ``algebra.to_sparql`` writes algebra back as SPARQL with them, passing
hooks for what the algebra holds differently (its internal variables, the translated pattern of
an ``EXISTS``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from cqels_endpoint.query import ast
from cqels_endpoint.query.windows import (
    AllWindow,
    DirectionalWindow,
    NowWindow,
    PolicyWindow,
    RangeWindow,
    TriplesWindow,
    WindowConfig,
    format_duration,
    format_window,
    written_window,
)
from cqels_endpoint.terms import XSD_BOOLEAN, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, BlankNode, Literal, Var

INDENT = "  "


def serialize_query(query: ast.Query) -> str:
    """The SPARQL text of ``query``: prologue, optional REGISTER prefix, then the query form."""
    lines = _prologue(query.prologue)
    if query.register is not None:
        lines.append(f"REGISTER {query.register.kind} {_register_name(query.register.name)} AS")
    lines.append(_query_form(query.form, ""))
    return "\n".join(lines) + "\n"


def serialize_update(update: ast.Update) -> str:
    """The SPARQL Update text of ``update``: operations separated by ``;``.

    The prologue of an operation is the one in force there (declarations accumulate over the
    request), so each operation declares only what changed since the previous one.
    """
    parts = []
    previous = ast.Prologue()
    for index, operation in enumerate(update.operations):
        prologue = update.prologues[index] if index < len(update.prologues) else previous
        parts.append("\n".join([*_prologue(prologue, since=previous), _operation(operation)]))
        previous = prologue
    return " ;\n".join(parts) + "\n"


# --------------------------------------------------------------------------- terms


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?[0-9]*\.[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+")
_BARE_NUMBER = {XSD_INTEGER: _INTEGER, XSD_DECIMAL: _DECIMAL, XSD_DOUBLE: _DOUBLE}
_ECHAR = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_ECHAR_PATTERN = re.compile("[\\\\\"\n\r\t\b\f]")
# IRIREF ::= '<' ([^<>"{}|^`\]-[#x00-#x20])* '>'
_IRI_FORBIDDEN = re.compile(r'[<>"{}|^`\\\x00-\x20]')
# BLANK_NODE_LABEL ::= '_:' ( PN_CHARS_U | [0-9] ) ((PN_CHARS|'.')* PN_CHARS)?
# and VARNAME, with PN_CHARS approximated by \w, '-', '·' and the combining marks.
_LABEL = re.compile(r"[\w][\w\-\u00B7\u0300-\u036F\u203F-\u2040.]*(?<!\.)")
_VARNAME = re.compile(r"[\w][\w\u00B7\u0300-\u036F\u203F-\u2040]*")


def write_iri(iri: ast.IRI) -> str:
    """``<iri>``, written in full; ``ValueError`` if the IRI holds a character IRIREF forbids."""
    if _IRI_FORBIDDEN.search(iri.value):
        msg = f"IRI {iri.value!r} contains characters that SPARQL cannot write inside <…>"
        raise ValueError(msg)
    return f"<{iri.value}>"


def _string(value: str) -> str:
    return '"' + _ECHAR_PATTERN.sub(lambda m: _ECHAR[m.group()], value) + '"'


def write_literal(literal: Literal) -> str:
    """A number or boolean bare when its lexical form is a token of its datatype, else quoted."""
    if literal.language is not None:
        return f"{_string(literal.value)}@{literal.language}"
    if literal.datatype is None:
        return _string(literal.value)
    bare = _BARE_NUMBER.get(literal.datatype)
    if bare is not None and bare.fullmatch(literal.value):
        return literal.value
    if literal.datatype == XSD_BOOLEAN and literal.value in ("true", "false"):
        return literal.value
    return f"{_string(literal.value)}^^{write_iri(ast.IRI(literal.datatype))}"


def write_var(var: Var) -> str:
    """``?name``; ``ValueError`` if the name is not a SPARQL VARNAME."""
    if not _VARNAME.fullmatch(var.name):
        msg = f"variable name {var.name!r} cannot be written in SPARQL"
        raise ValueError(msg)
    return f"?{var.name}"


def _blank_node(node: BlankNode) -> str:
    if not _LABEL.fullmatch(node.label):
        msg = f"blank node label {node.label!r} cannot be written as _:label"
        raise ValueError(msg)
    return f"_:{node.label}"


VarWriter = Callable[[Var], str]


def write_term(term: object, write_var: VarWriter = write_var) -> str:
    """An IRI, literal, blank node (``_:label``) or variable; ``write_var`` writes the variables."""
    match term:
        case Var():
            return write_var(term)
        case ast.IRI():
            return write_iri(term)
        case Literal():
            return write_literal(term)
        case BlankNode():
            return _blank_node(term)
    raise TypeError(f"not an RDF term or variable: {term!r}")


def _register_name(name: ast.IRI | str) -> str:
    return write_iri(name) if isinstance(name, ast.IRI) else name


# --------------------------------------------------------------------------- windows


def _iso_duration(ms: int) -> str:
    """RSP-QL writes durations in ISO 8601: ``PT1H30M``, ``PT0.5S``."""
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    text = "PT"
    if hours:
        text += f"{hours}H"
    if minutes:
        text += f"{minutes}M"
    if seconds or millis or text == "PT":
        text += f"{seconds}.{millis:03d}".rstrip("0").rstrip(".") + "S"
    return text


def _rspql_window(window: WindowConfig) -> str:
    """The RSP-QL form ``[RANGE PT… STEP PT…]`` / ``[COUNT n]`` for ``FROM NAMED WINDOW``."""
    written = written_window(window)
    match written:
        case RangeWindow(range_ms, None):
            return f"[RANGE {_iso_duration(range_ms)}]"
        case RangeWindow(range_ms, slide_ms):
            return f"[RANGE {_iso_duration(range_ms)} STEP {_iso_duration(slide_ms)}]"
        case TriplesWindow(count):
            return f"[COUNT {count}]"
        case NowWindow() | AllWindow() | DirectionalWindow() | PolicyWindow():
            return format_window(written)
    raise TypeError(f"not a window configuration: {window!r}")


def _stream_dataset_window(window: WindowConfig) -> str:
    """The C-SPARQL form ``[RANGE d STEP d]`` for ``FROM STREAM``."""
    match window:
        case RangeWindow(range_ms, slide_ms) if slide_ms is not None:
            return f"[RANGE {format_duration(range_ms)} STEP {format_duration(slide_ms)}]"
    return format_window(written_window(window))


# --------------------------------------------------------------------------- expressions


def _is_bracketed(expr: object) -> bool:
    """Whether ``_expression`` already writes ``expr`` inside its own parentheses."""
    return isinstance(expr, ast.BinaryOp | ast.UnaryOp | ast.In)


def _bracketed(expr: ast.Expression, indent: str) -> str:
    """``expr`` as a BrackettedExpression ``( … )``."""
    text = _expression(expr, indent)
    return text if _is_bracketed(expr) else f"({text})"


def _constraint(expr: ast.Expression, indent: str) -> str:
    """A FILTER / HAVING Constraint: a bracketed expression, a built-in call or a function call."""
    if isinstance(expr, ast.BuiltinCall | ast.FunctionCall | ast.Exists | ast.Aggregate | ast.Seq):
        return _expression(expr, indent)
    return _bracketed(expr, indent)


def _expression(expr: ast.Expression, indent: str) -> str:
    """``expr`` with the groups of its ``EXISTS`` laid out at ``indent``."""
    return write_expression(expr, write_exists=lambda group: _group(group, indent))


@runtime_checkable
class ExistsExpression(Protocol):
    """``EXISTS``/``NOT EXISTS`` whatever its pattern is: ``ast.Exists`` holds a group, the algebra's
    ``Exists`` a translated pattern. Matching the shape keeps this module free of the algebra."""

    pattern: Any
    negated: bool


def write_expression(
    expr: object,
    *,
    write_exists: Callable[[Any], str] | None = None,
    write_var: VarWriter = write_var,
) -> str:
    """The SPARQL text of an expression, every compound part in parentheses.

    ``write_exists`` writes the pattern of an ``EXISTS`` as ``{ … }`` (by default an AST group,
    laid out at the top level); ``write_var`` writes the variables.
    """

    def write(e: object) -> str:
        match e:
            case Var() | ast.IRI() | Literal():
                return write_term(e, write_var)
            case ast.BinaryOp(op, left, right):
                return f"({write(left)} {op} {write(right)})"
            case ast.UnaryOp(op, operand):
                # The space keeps ``-(1)`` from coming out as the single token ``-1``, a literal.
                return f"({op} {write(operand)})"
            case ast.In(subject, values, negated):
                keyword = "NOT IN" if negated else "IN"
                return f"({write(subject)} {keyword} {arguments(values)})"
            case ast.BuiltinCall(name, args):
                return name + arguments(args)
            case ast.FunctionCall(iri, args, distinct):
                return write_iri(iri) + arguments(args, distinct)
            case ast.Aggregate(name, argument, distinct, separator):
                inner = "DISTINCT " if distinct else ""
                inner += "*" if argument is None else write(argument)
                if separator is not None:
                    inner += f"; SEPARATOR = {_string(separator)}"
                return f"{name}({inner})"
            case ast.Seq(steps):
                return "SEQ(" + " ; ".join(seq_step(step) for step in steps) + ")"
            case ExistsExpression():
                keyword = "NOT EXISTS " if e.negated else "EXISTS "
                return keyword + (write_exists or _top_level_group)(e.pattern)
        raise TypeError(f"not an expression: {e!r}")

    def seq_step(step: ast.SeqStep) -> str:
        quantifier = {(1, 1): "", (1, None): "+", (0, None): "*", (0, 1): "?"}.get((step.minimum, step.maximum))
        if quantifier is None:
            bounds = step.minimum if step.minimum == step.maximum else f"{step.minimum},{step.maximum}"
            quantifier = f"{{{bounds}}}"
        alias = f" AS {write(step.alias)}" if step.alias is not None else ""
        return ("NOT " if step.negated else "") + write(step.var) + quantifier + alias

    def arguments(args: tuple[object, ...], distinct: bool = False) -> str:
        return "(" + ("DISTINCT " if distinct else "") + ", ".join(write(a) for a in args) + ")"

    return write(expr)


# --------------------------------------------------------------------------- paths and triples


def _path_primary(path: ast.Path) -> str:
    """A path as a PathPrimary: an IRI, a negated set, or a parenthesised path."""
    match path:
        case ast.IRI():
            return write_iri(path)
        case ast.PathNegatedSet(iris, inverse_iris):
            items = [write_iri(i) for i in iris] + ["^" + write_iri(i) for i in inverse_iris]
            return "!(" + " | ".join(items) + ")"
    return f"({write_path(path)})"


def write_path(path: ast.Path) -> str:
    """A property path, parenthesised only where a part is not a PathPrimary."""
    match path:
        case ast.IRI() | ast.PathNegatedSet():
            return _path_primary(path)
        case ast.PathSequence(parts):
            return " / ".join(_path_primary(p) for p in parts)
        case ast.PathAlternative(parts):
            return " | ".join(_path_primary(p) for p in parts)
        case ast.PathInverse(inner):
            return "^" + _path_primary(inner)
        case ast.PathMod(inner, modifier):
            return _path_primary(inner) + modifier
    raise TypeError(f"not a property path: {path!r}")


def _triple(triple: ast.TriplePattern | ast.QuadPattern) -> str:
    predicate = triple.predicate
    written = write_var(predicate) if isinstance(predicate, Var) else write_path(predicate)
    return f"{write_term(triple.subject)} {written} {write_term(triple.object)} ."


def _triples_block(triples: tuple[ast.TriplePattern, ...], indent: str) -> str:
    """``{ s p o . … }`` on its own lines."""
    if not triples:
        return "{ }"
    inner = indent + INDENT
    return "{\n" + "".join(f"{inner}{_triple(t)}\n" for t in triples) + indent + "}"


# --------------------------------------------------------------------------- graph patterns


def _top_level_group(group: ast.GroupGraphPattern) -> str:
    return _group(group, "")


def _group(group: ast.GroupGraphPattern, indent: str) -> str:
    if not group.elements:
        return "{ }"
    inner = indent + INDENT
    if len(group.elements) == 1 and isinstance(group.elements[0], ast.SubSelect):
        # ``{ SELECT … }``: the parser makes the group's only element the sub-select.
        return "{\n" + inner + _select(group.elements[0].query, inner) + "\n" + indent + "}"
    body = "".join(f"{inner}{_element(e, inner)}\n" for e in group.elements)
    return "{\n" + body + indent + "}"


def _element(element: ast.GroupElement, indent: str) -> str:
    match element:
        case ast.TriplesBlock(triples):
            return f"\n{indent}".join(_triple(t) for t in triples)
        case ast.Filter(constraint):
            return "FILTER " + _constraint(constraint, indent)
        case ast.Bind(expr, var):
            return f"BIND ({_expression(expr, indent)} AS {write_var(var)})"
        case ast.OptionalPattern(pattern):
            return "OPTIONAL " + _group(pattern, indent)
        case ast.MinusPattern(pattern):
            return "MINUS " + _group(pattern, indent)
        case ast.UnionPattern(alternatives):
            return " UNION ".join(_group(a, indent) for a in alternatives)
        case ast.GraphPattern(name, pattern):
            return f"GRAPH {write_term(name)} {_group(pattern, indent)}"
        case ast.ServicePattern(name, pattern, silent):
            return f"SERVICE {'SILENT ' if silent else ''}{write_term(name)} {_group(pattern, indent)}"
        case ast.InlineData():
            return _inline_data(element)
        case ast.GroupGraphPattern():
            return _group(element, indent)
        case ast.SubSelect():
            # Among other elements a sub-select needs braces of its own (which parse as a group).
            return _group(ast.GroupGraphPattern((element,)), indent)
        case ast.StreamPattern(stream, window, pattern, declared):
            # A declared block reads its FROM STREAM window; writing the window would make it its own.
            written = "" if declared else f" {format_window(written_window(window))}"
            return f"STREAM {write_term(stream)}{written} {_group(pattern, indent)}"
        case ast.WindowPattern(name, pattern):
            return f"WINDOW {write_term(name)} {_group(pattern, indent)}"
    raise TypeError(f"not a group element: {element!r}")


def _inline_data(data: ast.InlineData) -> str:
    header = "(" + " ".join(write_var(v) for v in data.vars) + ")"
    rows = " ".join("(" + " ".join("UNDEF" if v is None else write_term(v) for v in row) + ")" for row in data.rows)
    return f"VALUES {header} {{ {rows} }}" if rows else f"VALUES {header} {{ }}"


# --------------------------------------------------------------------------- queries


def _prologue(prologue: ast.Prologue, since: ast.Prologue | None = None) -> list[str]:
    """BASE and PREFIX declarations; with ``since``, only those that differ from that prologue."""
    lines = []
    if prologue.base is not None and (since is None or prologue.base != since.base):
        lines.append(f"BASE {write_iri(ast.IRI(prologue.base))}")
    declared = dict(since.prefixes) if since is not None else {}
    lines.extend(
        f"PREFIX {name}: {write_iri(ast.IRI(iri))}" for name, iri in prologue.prefixes if declared.get(name) != iri
    )
    return lines


def _dataset(dataset: ast.Dataset) -> str:
    match dataset:
        case ast.DatasetClause(iri, named, static, depth, cache_ms):
            keyword = "NAMED " if named else "STATIC " if static else ""
            depth_option = f" WITH DEPTH {depth}" if depth is not None else ""
            cache_option = f" CACHE {format_duration(cache_ms)}" if cache_ms is not None else ""
            return f"FROM {keyword}{write_iri(iri)}{depth_option}{cache_option}"
        case ast.StreamDataset(stream, window):
            return f"FROM STREAM {write_iri(stream)} {_stream_dataset_window(window)}"
        case ast.NamedWindow(name, stream, window):
            return f"FROM NAMED WINDOW {write_iri(name)} ON {write_iri(stream)} {_rspql_window(window)}"
    raise TypeError(f"not a dataset clause: {dataset!r}")


def _group_condition(condition: ast.GroupCondition, indent: str) -> str:
    if condition.var is not None:
        return f"({_expression(condition.expr, indent)} AS {write_var(condition.var)})"
    if isinstance(condition.expr, Var | ast.BuiltinCall | ast.FunctionCall):
        return _expression(condition.expr, indent)
    return _bracketed(condition.expr, indent)


def _modifiers(modifiers: ast.Modifiers, indent: str) -> list[str]:
    lines = []
    if modifiers.group_by:
        lines.append("GROUP BY " + " ".join(_group_condition(c, indent) for c in modifiers.group_by))
    if modifiers.having:
        lines.append("HAVING " + " ".join(_constraint(c, indent) for c in modifiers.having))
    if modifiers.order_by:
        keys = [("DESC" if o.descending else "ASC") + _bracketed(o.expr, indent) for o in modifiers.order_by]
        lines.append("ORDER BY " + " ".join(keys))
    if modifiers.limit is not None:
        lines.append(f"LIMIT {modifiers.limit}")
    if modifiers.offset is not None:
        lines.append(f"OFFSET {modifiers.offset}")
    return lines


def _tail(form: ast.QueryForm, indent: str) -> list[str]:
    """Solution modifiers and the trailing VALUES clause."""
    lines = _modifiers(form.modifiers, indent)
    if form.values is not None:
        lines.append(_inline_data(form.values))
    return lines


def _select(select: ast.SelectQuery, indent: str) -> str:
    head = "SELECT"
    if select.distinct:
        head += " DISTINCT"
    if select.reduced:
        head += " REDUCED"
    items = [
        write_var(item) if isinstance(item, Var) else f"({_expression(item.expr, indent)} AS {write_var(item.var)})"
        for item in select.projection
    ]
    head += " " + (" ".join(items) if items else "*")
    lines = [head, *(_dataset(d) for d in select.datasets), "WHERE " + _group(select.where, indent)]
    return f"\n{indent}".join(lines + _tail(select, indent))


def _query_form(form: ast.QueryForm, indent: str) -> str:
    match form:
        case ast.SelectQuery():
            return _select(form, indent)
        case ast.ConstructQuery():
            datasets = [_dataset(d) for d in form.datasets]
            if form.short_form:
                triples = tuple(t for e in form.where.elements for t in e.triples)
                lines = ["CONSTRUCT", *datasets, "WHERE " + _triples_block(triples, indent)]
            else:
                template = "CONSTRUCT " + _triples_block(form.template, indent)
                lines = [template, *datasets, "WHERE " + _group(form.where, indent)]
            return f"\n{indent}".join(lines + _tail(form, indent))
        case ast.AskQuery():
            lines = ["ASK", *(_dataset(d) for d in form.datasets), "WHERE " + _group(form.where, indent)]
            return f"\n{indent}".join(lines + _tail(form, indent))
        case ast.DescribeQuery():
            targets = " ".join(write_term(t) for t in form.targets) if form.targets else "*"
            lines = [f"DESCRIBE {targets}", *(_dataset(d) for d in form.datasets)]
            if form.where is not None:
                lines.append("WHERE " + _group(form.where, indent))
            return f"\n{indent}".join(lines + _tail(form, indent))
    raise TypeError(f"not a query form: {form!r}")


# --------------------------------------------------------------------------- updates


def _graph_target(target: ast.GraphTarget, graph_keyword: bool) -> str:
    """GraphRefAll (``GRAPH <g>``, DEFAULT, NAMED, ALL) or GraphOrDefault (``<g>``, DEFAULT)."""
    if target.keyword is not None:
        return target.keyword
    return ("GRAPH " if graph_keyword else "") + write_iri(target.iri)


def _quads(quads: tuple[ast.QuadPattern, ...], indent: str) -> str:
    """``{ … }`` of quads: consecutive quads of one named graph go into one ``GRAPH g { … }``."""
    if not quads:
        return "{ }"
    inner = indent + INDENT
    lines = []
    run: list[ast.QuadPattern] = []

    def flush() -> None:
        if run and run[0].graph is not None:
            lines.append(f"{inner}GRAPH {write_term(run[0].graph)} {_triples_block(tuple(run), inner)}")
        else:
            lines.extend(f"{inner}{_triple(q)}" for q in run)
        run.clear()

    for quad in quads:
        if run and quad.graph != run[0].graph:
            flush()
        run.append(quad)
    flush()
    return "{\n" + "\n".join(lines) + "\n" + indent + "}"


def _operation(operation: ast.UpdateOperation) -> str:
    match operation:
        case ast.Load(source, into, silent):
            text = f"LOAD {'SILENT ' if silent else ''}{write_iri(source)}"
            return text + (f" INTO GRAPH {write_iri(into)}" if into is not None else "")
        case ast.Clear(target, silent):
            return f"CLEAR {'SILENT ' if silent else ''}{_graph_target(target, True)}"
        case ast.Drop(target, silent):
            return f"DROP {'SILENT ' if silent else ''}{_graph_target(target, True)}"
        case ast.Create(graph, silent):
            return f"CREATE {'SILENT ' if silent else ''}GRAPH {write_iri(graph)}"
        case ast.GraphTransfer(op, source, destination, silent):
            silent_text = "SILENT " if silent else ""
            return f"{op} {silent_text}{_graph_target(source, False)} TO {_graph_target(destination, False)}"
        case ast.InsertData(quads):
            return "INSERT DATA " + _quads(quads, "")
        case ast.DeleteData(quads):
            return "DELETE DATA " + _quads(quads, "")
        case ast.DeleteWhere(quads):
            return "DELETE WHERE " + _quads(quads, "")
        case ast.Modify(delete, insert, where, with_graph, using):
            lines = []
            if with_graph is not None:
                lines.append(f"WITH {write_iri(with_graph)}")
            if delete or not insert:
                lines.append("DELETE " + _quads(delete, ""))
            if insert:
                lines.append("INSERT " + _quads(insert, ""))
            lines.extend(f"USING {'NAMED ' if u.named else ''}{write_iri(u.iri)}" for u in using)
            lines.append("WHERE " + _group(where, ""))
            return "\n".join(lines)
    raise TypeError(f"not an update operation: {operation!r}")
