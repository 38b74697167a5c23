"""Algebra → SPARQL 1.1 text that any SPARQL engine evaluates to the same solutions.

The recompute mode of the engine (docs/ARCHITECTURE.md, "The oracle") evaluates a continuous query on
pyoxigraph with each window's contents stored as a named graph: ``to_sparql(query, window_graph)``
writes every ``StreamPattern`` as ``GRAPH <window graph> { … }``. The tests use it without streams
to check that the optimizer passes preserve results.

Each algebra node becomes group-pattern text whose §18.2 translation is that node again:
``Join(A, B)`` is ``{A} {B}``, ``LeftJoin(A, B, e)`` is ``{A} OPTIONAL {{B} FILTER(e)}``,
``Extend`` a ``BIND`` after a nested group, ``Group`` its own sub-select projecting its named keys
and aggregates, ``Project``/``Distinct``/``OrderBy``/``Slice`` a sub-select (the top ones the query's
own clauses). Internal variables get legal names (``?.0`` → ``?__agg0``, ``??P0`` → ``?__pathP0``), and
blank nodes of patterns become variables ``?__bnode_<label>``: in a pattern a blank node *is* an
existential variable, and as a variable it may be shared by the pieces (a BGP and a ``Path``) that
one triples block was split into. ``MEDIAN(e)`` (our extension) is written as the pyoxigraph custom
aggregate ``<MEDIAN_IRI>(e)``: the evaluator passes ``runtime.aggregates.CUSTOM_AGGREGATES`` to
``Store.query``. Five forms are spelled so that pyoxigraph, which deviates on them, gives the spec's
answer too: ``GROUP_CONCAT(…)`` as ``STR(GROUP_CONCAT(…))`` (a simple literal), the argument of a
``COUNT``/``AVG`` bound by a ``BIND`` before the grouping and ``AVG(a)`` as ``IF(COUNT(a) = 0, 0,
AVG(a))`` (errors in aggregates, ``runtime.aggregates``), a ``GRAPH ?g``
whose pattern mentions ?g over a fresh graph variable (``scoped_graph``), a ``GRAPH ?g`` over a
VALUES, a sub-select or a MINUS graph by graph (``graph_by_graph``), when the caller gives the
named graphs of the store the text runs on (``store_graphs``), and a GRAPH holding another one
joined with its named graphs (``graph``). Terms, expressions and
property paths are written by the AST serializer's writers
(``query.serialize``), so IRIs are written in full; the prologue is only the query's BASE (which
``IRI()`` resolves against).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.aggregates import MEDIAN_IRI
from cqels_endpoint.algebra.variables import in_scope, mentioned
from cqels_endpoint.errors import PlanError
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import QueryForm
from cqels_endpoint.query.serialize import write_expression, write_path, write_term, write_var
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import IRI, BlankNode, Var

WindowGraph = Callable[[n.StreamPattern], IRI]


def to_sparql(
    query: n.AlgebraQuery, window_graph: WindowGraph | None = None, store_graphs: Sequence[IRI] | None = None
) -> str:
    """SPARQL text for ``query``; ``window_graph`` names the graph holding a stream pattern's window.

    Without ``window_graph`` a query with stream patterns raises ``PlanError``. ``store_graphs`` are
    the named graphs of the store the text is for (None: unknown, or not all nameable by an IRI);
    only a query for which ``needs_store_graphs`` holds reads them, and its text is then valid for
    that store content only.
    """
    return _Writer(window_graph, store_graphs).query(query)


def needs_store_graphs(query: n.AlgebraQuery) -> bool:
    """Whether ``to_sparql(query, …, store_graphs)`` writes a ``GRAPH ?g`` graph by graph."""
    return any(
        isinstance(x, n.Graph) and isinstance(x.name, Var) and _misscoped(x.pattern) for x in walk(query.pattern)
    )


class _Writer:
    def __init__(self, window_graph: WindowGraph | None, store_graphs: Sequence[IRI] | None = None):
        self.window_graph = window_graph
        self.store_graphs = store_graphs
        # The named graphs a GRAPH ?g ranges over (``_query`` sets them), when the text can name them.
        self.named_graphs: tuple[IRI, ...] | None = None
        self._exists_depth = 0
        self._graphs = 0  # the GRAPH patterns written over a fresh variable (``scoped_graph``)

    # ------------------------------------------------------------------ terms and expressions

    def var(self, var: Var) -> str:
        # Internal names start with a character no SPARQL variable name can start with.
        if var.name.startswith("."):
            return f"?__agg{_safe(var.name[1:])}"
        if var.name.startswith("?"):
            return f"?__path{_safe(var.name[1:])}"
        return write_var(var)

    def term(self, term: object, in_pattern: bool = True) -> str:
        match term:
            case BlankNode(label) if in_pattern:
                return f"?__bnode_{_safe(label)}"
            case None:
                return "UNDEF"
        return write_term(term, self.var)

    def expr(self, e: object) -> str:
        return write_expression(e, write_exists=self.exists_pattern, write_var=self.var)

    def exists_pattern(self, pattern: n.Pattern) -> str:
        """The ``{ … }`` of an EXISTS: its joins with a triple-matching right operand as ``LATERAL``.

        pyoxigraph evaluates the pattern of an EXISTS once per outer solution and does not reorder
        the joins inside it, so ``{ ?t :taxi ?x } { ?t :pickupTime ?p }`` re-scans the second
        pattern for every solution of the first (DEBS Q2's NOT EXISTS went from 5 ms to 263 ms per
        evaluation on a 1,000-trip window). ``A LATERAL B`` evaluates B with A's bindings, which
        for a B that only matches triples (every variable it has gets bound) is the same join.
        """
        self._exists_depth += 1
        try:
            return self.braced(pattern)
        finally:
            self._exists_depth -= 1

    def triples(self, triples: tuple[ast.TriplePattern, ...], in_pattern: bool = True) -> str:
        return " ".join(
            f"{self.term(t.subject, in_pattern)} {self.predicate(t.predicate)} {self.term(t.object, in_pattern)} ."
            for t in triples
        )

    def predicate(self, predicate: object) -> str:
        # A stream pattern's triple may have a property path as its predicate.
        return self.term(predicate) if isinstance(predicate, (IRI, Var)) else write_path(predicate)

    # ------------------------------------------------------------------ patterns

    def braced(self, pattern: n.Pattern) -> str:
        """``{ … }`` whose translation is ``pattern``."""
        return f"{{ {self.group(pattern)} }}"

    def group(self, pattern: n.Pattern) -> str:
        """The inside of a ``{ … }`` whose translation is ``pattern``."""
        match pattern:
            case n.BGP(triples):
                return self.triples(triples)
            case n.Path(subject, path, obj):
                return f"{self.term(subject)} {write_path(path)} {self.term(obj)} ."
            case n.Join((first, *rest)) if self._exists_depth and all(map(_matches_triples, rest)):
                return self.braced(first) + "".join(f" LATERAL {self.braced(o)}" for o in rest)
            case n.Join(operands):
                return " ".join(self.braced(o) for o in operands)
            case n.Union(left, right):
                return f"{self.braced(left)} UNION {self.braced(right)}"
            case n.LeftJoin(left, right, exprs):
                condition = "".join(f" FILTER ({self.expr(e)})" for e in exprs)
                return f"{self.braced(left)} OPTIONAL {{ {self.braced(right)}{condition} }}"
            case n.Minus(left, right):
                return f"{self.braced(left)} MINUS {self.braced(right)}"
            case n.Filter(exprs, inner):
                return self.braced(inner) + "".join(f" FILTER ({self.expr(e)})" for e in exprs)
            case n.Extend(var, expr, inner):
                return f"{self.braced(inner)} BIND ({self.expr(expr)} AS {self.var(var)})"
            case n.Table(variables, rows):
                names = " ".join(self.var(v) for v in variables)
                body = " ".join("(" + " ".join(self.term(x) for x in row) + ")" for row in rows)
                return f"VALUES ({names}) {{ {body} }}"
            case n.Graph(name, inner) if isinstance(name, Var) and self.named_graphs is not None and _misscoped(inner):
                return self.graph_by_graph(name, inner)
            case n.Graph(name, inner) if isinstance(name, Var) and _needs_scoping(name, inner):
                return self.scoped_graph(name, inner)
            case n.Graph(name, inner):
                return self.graph(self.term(name), inner)
            case n.Service(name, inner, silent):
                return f"SERVICE {'SILENT ' if silent else ''}{self.term(name)} {self.braced(inner)}"
            case n.StreamPattern(triples=triples):
                if self.window_graph is None:
                    msg = "a stream pattern has no SPARQL form without a graph holding its window"
                    raise PlanError(msg)
                return f"GRAPH {self.term(self.window_graph(pattern))} {{ {self.triples(triples)} }}"
            case n.StaticPattern(pattern=inner):
                return self.group(inner)
            case n.Seq():
                # Its matches depend on the events' times, which no graph holds: the recompute
                # evaluator computes its rows and writes them as a VALUES in its place.
                raise PlanError("SEQ has no SPARQL form: its matches are computed from the events' times")
            case n.Group():
                return f"{{ {self.group_select(pattern)} }}"
            case n.Project() | n.Distinct() | n.Reduced() | n.OrderBy() | n.Slice():
                return f"{{ {self.select(pattern)} }}"
        raise TypeError(f"not an algebra pattern: {pattern!r}")

    def graph(self, name: str, inner: n.Pattern) -> str:
        """``GRAPH name { inner }``, joined with ``GRAPH name { }`` when ``inner`` nests a GRAPH.

        pyoxigraph binds the graph name only through the triple patterns read in the active graph:
        the rows of a nested GRAPH (which does not read it) come once, with the name unbound, where
        SPARQL (§18.6) has them once per named graph, the name bound. The join with each named
        graph once gives SPARQL's answer in both readings.
        """
        block = f"GRAPH {name} {self.braced(inner)}"
        if any(isinstance(x, (n.Graph, n.StreamPattern)) for x in walk(inner)):
            return f"GRAPH {name} {{ }} {block}"
        return block

    def scoped_graph(self, name: Var, inner: n.Pattern) -> str:
        """``GRAPH ?g { P }`` where P mentions ?g, with ?g bound only outside P as SPARQL scopes it.

        pyoxigraph binds ?g before it evaluates P, so inside P ``BOUND(?g)`` is true and an
        ``OPTIONAL`` joins on the graph name. Written over a fresh graph variable instead: P's own
        ?g must then be unbound or the graph name (compatibility), which becomes ?g.
        """
        number = self._graphs
        self._graphs += 1
        graph, own = f"?__graph{number}", f"?__graphvar{number}"
        visible = " ".join(self.var(v) for v in in_scope(inner) if v != name)
        g = self.var(name)
        return (
            f"{{ SELECT {visible} {g} WHERE {{ {{ SELECT {visible} ({g} AS {own}) {graph} WHERE "
            f"{{ {self.graph(graph, inner)} }} }} FILTER (!BOUND({own}) || sameTerm({own}, {graph})) "
            f"BIND ({graph} AS {g}) }} }}"
        )

    def graph_by_graph(self, name: Var, inner: n.Pattern) -> str:
        """``GRAPH ?g { P }`` where P holds a VALUES, a sub-select or a MINUS, as SPARQL §18.6 defines
        it: the union, over the named graphs G of the dataset, of ``GRAPH G { P }`` joined with
        ``?g = G`` (P's own ?g, if it binds one, must be compatible with G).

        pyoxigraph evaluates ``GRAPH ?g`` by binding ?g inside P: a sub-select or a VALUES then binds
        no ?g at all (``SELECT (COUNT(*) …)`` counts over every graph at once), and a MINUS shares ?g
        between its sides, so it removes what it should not; with a constant graph name it scopes
        P right. The text lists the graphs, so it holds for the store content it was written for.
        """
        g = self.var(name)
        if not self.named_graphs:
            return f"VALUES {g} {{ }}"
        return " UNION ".join(
            f"{{ {self.graph(self.term(graph), inner)} VALUES {g} {{ {self.term(graph)} }} }}"
            for graph in self.named_graphs
        )

    def group_select(self, group: n.Group) -> str:
        """A ``Group`` as a sub-select projecting its named keys and its aggregates."""
        # A named key is bound by GROUP BY (expr AS ?v) itself: the projection just names it.
        projection = [self.var(var) for var, _ in group.keys if var is not None]
        binds: list[str] = []
        projection += [f"({self.aggregate(aggregate, binds)} AS {self.var(var)})" for var, aggregate in group.aggregates]
        if not projection:
            msg = "a GROUP BY without named keys or aggregates has no SPARQL sub-select form"
            raise PlanError(msg)
        keys = []
        for var, expr in group.keys:
            if var is None:
                keys.append(f"({self.expr(expr)})")
            elif var == expr:
                keys.append(self.var(var))
            else:
                keys.append(f"({self.expr(expr)} AS {self.var(var)})")
        group_by = f" GROUP BY {' '.join(keys)}" if keys else ""
        where = f"{{ {self.braced(group.input)} {' '.join(binds)} }}" if binds else self.braced(group.input)
        return f"SELECT {' '.join(projection)} WHERE {where}{group_by}"

    def aggregate(self, aggregate: ast.Aggregate, binds: list[str]) -> str:
        """The text of ``aggregate``; a ``BIND`` it needs before the grouping goes to ``binds``."""
        if aggregate.name in ("COUNT", "AVG") and aggregate.expr is not None:
            # §18.5.1.2/4: COUNT leaves the arguments in error out, AVG is 0 when all are. pyoxigraph
            # makes COUNT(e) unbound when e fails and AVG unbound over only errors, but counts the
            # bound values of a variable: the argument is bound by a BIND (an error leaves it unbound).
            argument = self.var(aggregate.expr) if isinstance(aggregate.expr, Var) else f"?__aggarg{len(binds)}"
            if not isinstance(aggregate.expr, Var):
                binds.append(f"BIND ({self.expr(aggregate.expr)} AS {argument})")
            distinct = "DISTINCT " if aggregate.distinct else ""
            if aggregate.name == "COUNT":
                return f"COUNT({distinct}{argument})"
            return f"IF(COUNT({argument}) = 0, 0, AVG({distinct}{argument}))"
        if aggregate.name == "GROUP_CONCAT":
            # A simple literal, as the engine computes it: pyoxigraph keeps a common language tag.
            return f"STR({self.expr(aggregate)})"
        if aggregate.name != "MEDIAN":
            return self.expr(aggregate)
        if aggregate.distinct:
            # pyoxigraph's custom aggregate call has no DISTINCT form (its grammar rejects it).
            where = f" (line {aggregate.span.line})" if aggregate.span is not None else ""
            msg = f"MEDIAN(DISTINCT …){where} has no SPARQL form for pyoxigraph: recompute mode cannot evaluate it"
            raise PlanError(msg)
        return f"<{MEDIAN_IRI}>({self.expr(aggregate.expr)})"

    def _modifiers(self, pattern: n.Pattern) -> tuple[str, n.Pattern, str]:
        """Peels Slice, Distinct/Reduced, Project and OrderBy off ``pattern`` (in the order the
        translation stacks them): the SELECT head, the WHERE pattern, the trailing modifiers."""
        limit = ""
        if isinstance(pattern, n.Slice):
            limit = (f" LIMIT {pattern.length}" if pattern.length is not None else "") + (
                f" OFFSET {pattern.start}" if pattern.start else ""
            )
            pattern = pattern.input
        keyword = ""
        if isinstance(pattern, (n.Distinct, n.Reduced)):
            keyword = "DISTINCT " if isinstance(pattern, n.Distinct) else "REDUCED "
            pattern = pattern.input
        head = "*"
        if isinstance(pattern, n.Project):
            if pattern.vars:
                head = " ".join(self.var(v) for v in pattern.vars)
            pattern = pattern.input
        order = ""
        if isinstance(pattern, n.OrderBy):
            keys = [f"DESC({self.expr(c.expr)})" if c.descending else f"ASC({self.expr(c.expr)})" for c in pattern.conditions]
            order = " ORDER BY " + " ".join(keys)
            pattern = pattern.input
        return keyword + head, pattern, order + limit

    def select(self, pattern: n.Pattern) -> str:
        head, where, tail = self._modifiers(pattern)
        return f"SELECT {head} WHERE {self.braced(where)}{tail}"

    # ------------------------------------------------------------------ the query

    def query(self, query: n.AlgebraQuery) -> str:
        return (f"BASE <{query.base}> " if query.base is not None else "") + self._query(query)

    def _query(self, query: n.AlgebraQuery) -> str:
        clauses = [d for d in query.datasets if isinstance(d, ast.DatasetClause)]
        # A dataset clause replaces the store's graphs: GRAPH ?g then ranges over the FROM NAMED ones.
        self.named_graphs = tuple(d.iri for d in clauses if d.named) if clauses else self.store_graphs
        datasets = "".join(f" FROM {'NAMED ' if d.named else ''}{self.term(d.iri)}" for d in clauses)
        if clauses and self.window_graph is not None:
            # A dataset clause replaces the whole dataset: the window graphs must be named in it.
            windows = {self.window_graph(x) for x in walk(query.pattern) if isinstance(x, n.StreamPattern)}
            datasets += "".join(f" FROM NAMED {self.term(g)}" for g in sorted(windows, key=lambda g: g.value))
        match query.form:
            case QueryForm.SELECT:
                head, where, tail = self._modifiers(query.pattern)
                return f"SELECT {head}{datasets} WHERE {self.braced(where)}{tail}"
            case QueryForm.CONSTRUCT:
                _, where, tail = self._modifiers(query.pattern)
                template = self.triples(query.template, in_pattern=False)
                return f"CONSTRUCT {{ {template} }}{datasets} WHERE {self.braced(where)}{tail}"
            case QueryForm.ASK:
                _, where, tail = self._modifiers(query.pattern)
                return f"ASK{datasets} WHERE {self.braced(where)}{tail}"
            case QueryForm.DESCRIBE:
                _, where, tail = self._modifiers(query.pattern)
                targets = " ".join(self.term(t) for t in query.describe) or "*"
                return f"DESCRIBE {targets}{datasets} WHERE {self.braced(where)}{tail}"
        raise TypeError(f"not a query form: {query.form!r}")


_BINDS_NO_GRAPH = (n.Table, n.Group, n.Project, n.Distinct, n.Reduced, n.OrderBy, n.Slice)


def _misscoped(inner: n.Pattern) -> bool:
    """Whether pyoxigraph's ``GRAPH ?g { inner }`` differs from SPARQL's even over a fresh graph
    variable: ``inner`` holds a VALUES or a sub-select (no ?g bound) or a MINUS (?g shared)."""
    return any(isinstance(x, (*_BINDS_NO_GRAPH, n.Minus)) for x in walk(inner))


def _needs_scoping(name: Var, inner: n.Pattern) -> bool:
    """Whether ``GRAPH ?name { inner }`` is written by ``scoped_graph``: ``inner`` mentions ?name
    and has no VALUES or sub-select, inside which pyoxigraph's ``GRAPH ?h`` binds no ?h at all."""
    return name in mentioned(inner) and not any(isinstance(x, _BINDS_NO_GRAPH) for x in walk(inner))


def _matches_triples(pattern: n.Pattern) -> bool:
    """Whether ``pattern`` only matches triples: every solution binds all of its variables."""
    match pattern:
        case n.BGP() | n.StreamPattern():
            return True
        case n.Graph(name, inner):
            return isinstance(name, IRI) and _matches_triples(inner)
    return False


def _safe(label: str) -> str:
    """A label as the tail of a variable name: other characters become ``_`` plus their code point."""
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"_{ord(c):x}_" for c in label)
