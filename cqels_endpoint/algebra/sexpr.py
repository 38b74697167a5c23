"""A deterministic, indented S-expression printer for the algebra, in the style of Jena's SSE.

``to_sexpr(node)`` prints a pattern, an expression or a whole ``AlgebraQuery``::

    (select
      (prefix (lv: <http://deri.org/floorplan/>))
      (project (?person ?name)
        (join
          (stream <http://deri.org/streams/rfid> [RANGE 30s SLIDE 5s] (triple ?person lv:detectedAt ?loc))
          (static (?loc)
            (graph lv:
              (bgp (triple ?loc lv:name ?name)))))))

Layout rule: a pattern puts each sub-pattern on its own line, indented two spaces; everything else
(expressions, variable lists, a BGP of one triple) stays on the line of its head unless it holds a
pattern (``EXISTS``). IRIs are abbreviated with the query's prefixes when the local part is plain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import QueryForm
from cqels_endpoint.query.windows import format_window
from cqels_endpoint.terms import (
    IRI,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    BlankNode,
    Literal,
    Var,
)


class _List:
    """One parenthesised S-expression; items from ``block_from`` on go on lines of their own."""

    __slots__ = ("_breaks", "block_from", "items")

    def __init__(self, items: Iterable[object], block_from: int | None = None):
        self.items = list(items)
        self.block_from = block_from
        self._breaks: bool | None = None

    def breaks(self) -> bool:
        if self._breaks is None:
            own = self.block_from is not None and self.block_from < len(self.items)
            self._breaks = own or any(isinstance(i, _List) and i.breaks() for i in self.items)
        return self._breaks


def _flat(item: object) -> str:
    if isinstance(item, _List):
        return "(" + " ".join(_flat(i) for i in item.items) + ")"
    return str(item)


def _render(item: object, indent: str, out: list[str]) -> None:
    if not isinstance(item, _List) or not item.breaks():
        out.append(indent + _flat(item))
        return
    cut = len(item.items)
    for i, child in enumerate(item.items):
        if (item.block_from is not None and i >= item.block_from) or (isinstance(child, _List) and child.breaks()):
            cut = i
            break
    out.append(indent + "(" + " ".join(_flat(i) for i in item.items[:cut]))
    for child in item.items[cut:]:
        _render(child, indent + "  ", out)
    out[-1] += ")"


def to_sexpr(node: object, prefixes: Mapping[str, str] | Iterable[tuple[str, str]] | None = None) -> str:
    """The S-expression of an algebra node or ``AlgebraQuery`` (no trailing newline).

    ``prefixes`` (prefix → namespace) abbreviate IRIs; for an ``AlgebraQuery`` they default to the
    query's own PREFIX declarations, which are then printed in a ``(prefix …)`` line. Pass ``{}``
    to print every IRI in full.
    """
    if prefixes is None and isinstance(node, n.AlgebraQuery):
        prefixes = node.prefixes
    printer = Printer(dict(prefixes or {}))
    out: list[str] = []
    _render(printer.node(node), "", out)
    return "\n".join(out)


_LOCAL_NAME = re.compile(r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_-])?)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?[0-9]*\.[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+")
_SHORT_LITERALS = {XSD_INTEGER: _INTEGER, XSD_DECIMAL: _DECIMAL, XSD_DOUBLE: _DOUBLE}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class Printer:
    """Turns algebra nodes into ``_List`` trees; ``term``/``iri`` also serve one-line listings."""

    def __init__(self, prefixes: dict[str, str]):
        self.prefixes = prefixes
        # Longest namespace first, so that nested namespaces pick the most specific prefix.
        self._namespaces = sorted(prefixes.items(), key=lambda item: (-len(item[1]), item[0]))

    # ------------------------------------------------------------------ atoms

    def iri(self, iri: IRI | str) -> str:
        value = iri.value if isinstance(iri, IRI) else iri
        for prefix, namespace in self._namespaces:
            if namespace and value.startswith(namespace) and _LOCAL_NAME.fullmatch(value[len(namespace) :]):
                return f"{prefix}:{value[len(namespace):]}"
        return f"<{value}>"

    def literal(self, literal: Literal) -> str:
        if (
            literal.language is None
            and literal.datatype in _SHORT_LITERALS
            and _SHORT_LITERALS[literal.datatype].fullmatch(literal.value)
        ):
            return literal.value
        if literal.language is None and literal.datatype == XSD_BOOLEAN and literal.value in ("true", "false"):
            return literal.value
        text = '"' + "".join(_ESCAPES.get(c, c) for c in literal.value) + '"'
        if literal.language is not None:
            return f"{text}@{literal.language}"
        if literal.datatype is not None:
            return f"{text}^^{self.iri(literal.datatype)}"
        return text

    def term(self, term: object) -> str:
        match term:
            case Var(name):
                return f"?{name}"
            case IRI():
                return self.iri(term)
            case Literal():
                return self.literal(term)
            case BlankNode(label):
                return f"_:{label}"
            case None:
                return "UNDEF"
        raise TypeError(f"not an RDF term or variable: {term!r}")

    # ------------------------------------------------------------------ expressions and paths

    def expr(self, e: object) -> object:
        match e:
            case Var() | IRI() | Literal() | BlankNode():
                return self.term(e)
            case ast.BinaryOp(op, left, right):
                return _List([op, self.expr(left), self.expr(right)])
            case ast.UnaryOp(op, operand):
                return _List([op, self.expr(operand)])
            case ast.In(inner, values, negated):
                return _List(["notin" if negated else "in", self.expr(inner), *(self.expr(v) for v in values)])
            case ast.BuiltinCall(name, args):
                return _List([name.lower(), *(self.expr(a) for a in args)])
            case ast.FunctionCall(iri, args, distinct):
                return _List([self.iri(iri), *(["distinct"] if distinct else []), *(self.expr(a) for a in args)])
            case n.Exists(pattern, negated):
                return _List(["notexists" if negated else "exists", self.node(pattern)], block_from=1)
            case ast.Aggregate(name, inner, distinct, separator):
                items: list[object] = [name.lower()]
                if distinct:
                    items.append("distinct")
                if separator is not None:
                    items.append(_List(["separator", self.literal(Literal(separator))]))
                if inner is not None:
                    items.append(self.expr(inner))
                return _List(items)
        raise TypeError(f"not an algebra expression: {e!r}")

    def exprs(self, exprs: tuple[object, ...]) -> object:
        if len(exprs) == 1:
            return self.expr(exprs[0])
        return _List(["exprlist", *(self.expr(e) for e in exprs)])

    def path(self, p: object) -> object:
        match p:
            case IRI() | Var():
                return self.term(p)
            case ast.PathInverse(inner):
                return _List(["reverse", self.path(inner)])
            case ast.PathSequence(parts):
                return _List(["seq", *(self.path(x) for x in parts)])
            case ast.PathAlternative(parts):
                return _List(["alt", *(self.path(x) for x in parts)])
            case ast.PathMod(inner, modifier):
                return _List([f"path{modifier}", self.path(inner)])
            case ast.PathNegatedSet(iris, inverse_iris):
                inverse = [_List(["reverse", self.iri(i)]) for i in inverse_iris]
                return _List(["notoneof", *(self.iri(i) for i in iris), *inverse])
        raise TypeError(f"not a property path: {p!r}")

    def triple(self, t: ast.TriplePattern) -> _List:
        # ``path`` writes an IRI or a variable as a term, and the paths of stream patterns as paths.
        return _List(["triple", self.term(t.subject), self.path(t.predicate), self.term(t.object)])

    def triples(self, head: list[object], triples: tuple[ast.TriplePattern, ...]) -> _List:
        """``(head… (triple …) …)``: one triple stays on the head's line, several get a line each."""
        return _List(head + [self.triple(t) for t in triples], block_from=len(head) if len(triples) > 1 else None)

    def var_list(self, variables: Iterable[Var]) -> _List:
        return _List([self.term(v) for v in variables])

    # ------------------------------------------------------------------ patterns

    def node(self, node: object) -> object:
        match node:
            case n.AlgebraQuery():
                return self.query(node)
            case n.BGP(triples):
                return self.triples(["bgp"], triples)
            case ast.TriplePattern():
                return self.triple(node)
            case n.Path(subject, path, obj):
                return _List(["path", self.term(subject), self.path(path), self.term(obj)])
            case n.Join(operands):
                return _List(["join", *(self.node(o) for o in operands)], block_from=1)
            case n.LeftJoin(left, right, exprs):
                tail = [self.exprs(exprs)] if exprs else []
                return _List(["leftjoin", self.node(left), self.node(right), *tail], block_from=1)
            case n.Filter(exprs, inner):
                return _List(["filter", self.exprs(exprs), self.node(inner)], block_from=2)
            case n.Union(left, right):
                return _List(["union", self.node(left), self.node(right)], block_from=1)
            case n.Graph(name, inner):
                return _List(["graph", self.term(name), self.node(inner)], block_from=2)
            case n.Extend(var, expr, inner):
                binding = _List([_List([self.term(var), self.expr(expr)])])
                return _List(["extend", binding, self.node(inner)], block_from=2)
            case n.Minus(left, right):
                return _List(["minus", self.node(left), self.node(right)], block_from=1)
            case n.Group(keys, aggregates, inner):
                return _List(["group", self.group_keys(keys), self.aggregates(aggregates), self.node(inner)], block_from=3)
            case n.Table(variables, rows):
                return self.table(variables, rows)
            case n.Service(name, inner, silent):
                head = ["service", *(["silent"] if silent else []), self.term(name)]
                return _List([*head, self.node(inner)], block_from=len(head))
            case n.Project(variables, inner):
                return _List(["project", self.var_list(variables), self.node(inner)], block_from=2)
            case n.Distinct(inner):
                return _List(["distinct", self.node(inner)], block_from=1)
            case n.Reduced(inner):
                return _List(["reduced", self.node(inner)], block_from=1)
            case n.OrderBy(conditions, inner):
                keys = _List(
                    [_List(["desc", self.expr(c.expr)]) if c.descending else self.expr(c.expr) for c in conditions]
                )
                return _List(["order", keys, self.node(inner)], block_from=2)
            case n.Slice(start, length, inner):
                return _List(["slice", str(start), "_" if length is None else str(length), self.node(inner)], block_from=3)
            case n.StreamPattern(stream, window, triples, window_name):
                head = ["stream", self.term(stream), format_window(window)]
                if window_name is not None:
                    head.append(_List(["window", self.iri(window_name)]))
                return self.triples(head, triples)
            case n.StaticPattern(inner, join_vars):
                return _List(["static", self.var_list(join_vars), self.node(inner)], block_from=2)
            case n.Seq(steps, guards):
                head: list[object] = ["seq"]
                if guards:
                    head.append(_List(["guard", self.exprs(guards)]))
                return _List([*head, *(self.seq_step(step) for step in steps)], block_from=len(head))
        return self.expr(node)

    def seq_step(self, step: n.SeqStep) -> _List:
        """``(event ?e (filter …) (stream …))`` for a bound step, ``(gap ?x low high (filter …)
        (guard …) …)`` for a gap."""
        head: list[object] = ["event", self.term(step.var)]
        if not step.bound:
            head = ["gap", self.term(step.var), str(step.low), "_" if step.high is None else str(step.high)]
        if step.filters:
            head.append(_List(["filter", self.exprs(step.filters)]))
        if step.guards:
            head.append(_List(["guard", self.exprs(step.guards)]))
        return _List([*head, *(self.node(p) for p in step.patterns)], block_from=len(head))

    def group_keys(self, keys: tuple[tuple[Var | None, object], ...]) -> _List:
        items: list[object] = []
        for var, expr in keys:
            if var is None:
                items.append(self.expr(expr))
            elif var == expr:
                items.append(self.term(var))
            else:
                items.append(_List([self.term(var), self.expr(expr)]))
        return _List(items)

    def aggregates(self, aggregates: tuple[tuple[Var, ast.Aggregate], ...]) -> _List:
        return _List([_List([self.term(var), self.expr(aggregate)]) for var, aggregate in aggregates])

    def table(self, variables: tuple[Var, ...], rows: tuple[tuple[object, ...], ...]) -> _List:
        if not variables and len(rows) == 1:
            return _List(["table", "unit"])
        row_lists = [
            _List(["row", *(_List([self.term(v), self.term(value)]) for v, value in zip(variables, row) if value is not None)])
            for row in rows
        ]
        return _List(["table", _List(["vars", *(self.term(v) for v in variables)]), *row_lists],
                     block_from=2 if len(rows) > 1 else None)

    def dataset(self, dataset: ast.Dataset) -> _List:
        match dataset:
            case ast.DatasetClause(iri, named):
                return _List(["from", *(["named"] if named else []), self.iri(iri)])
            case ast.StreamDataset(stream, window):
                return _List(["from", "stream", self.iri(stream), format_window(window)])
            case ast.NamedWindow(name, stream, window):
                return _List(["from", "named", "window", self.iri(name), "on", self.iri(stream), format_window(window)])
        raise TypeError(f"not a dataset clause: {dataset!r}")

    def query(self, query: n.AlgebraQuery) -> _List:
        items: list[object] = [query.form.lower()]
        if query.form is QueryForm.DESCRIBE:
            items.append(_List([self.term(t) for t in query.describe]))
        block_from = len(items)
        if self.prefixes:
            declared = [_List([f"{prefix}:", f"<{namespace}>"]) for prefix, namespace in self.prefixes.items()]
            items.append(_List(["prefix", *declared], block_from=1 if len(declared) > 1 else None))
        if query.base is not None:
            items.append(_List(["base", f"<{query.base}>"]))
        if query.register is not None:
            name = query.register.name
            items.append(_List(["register", query.register.kind, self.iri(name) if isinstance(name, IRI) else name]))
        items.extend(self.dataset(d) for d in query.datasets)
        if query.form is QueryForm.CONSTRUCT:
            items.append(self.triples(["template"], query.template))
        items.append(self.node(query.pattern))
        return _List(items, block_from=block_from)
