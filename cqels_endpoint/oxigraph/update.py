"""SPARQL 1.1 Update executed operation by operation on top of pyoxigraph, with exact deltas.

``Store.update`` would say nothing about what it changed, so each operation is carried out here:
data operations write their quads; ``DELETE WHERE`` and ``DELETE/INSERT … WHERE`` evaluate the
WHERE clause with pyoxigraph as a ``SELECT *`` (text written by ``query.serialize``, dataset from
WITH/USING or the protocol's ``using-graph-uri``) and instantiate the templates per solution;
graph management (CLEAR, DROP, CREATE, ADD, MOVE, COPY, LOAD) follows the spec's definitions.
All writes go through one ``WriteBatch``, so each operation sees the previous ones, the counts are
the request's net effect, and a failing operation lets the caller undo the whole request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyoxigraph as ox

from cqels_endpoint.errors import QuerySyntaxError, RdfSyntaxError, RemoteAccessError, Span, StoreError, UpdateError
from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.query import ast
from cqels_endpoint.query.serialize import serialize_query, write_term
from cqels_endpoint.terms import IRI, BlankNode, Literal, Var
from static_store.convert import GraphTerm
from static_store.events import WriteBatch
from static_store.load import fetch_document, parse_graph, rdf_syntax_error

_SUBJECTS = (ox.NamedNode, ox.BlankNode, ox.Triple)
_GRAPH_NAMES = (ox.NamedNode, ox.DefaultGraph)


@dataclass(frozen=True)
class _Dataset:
    """The RDF dataset a WHERE clause is evaluated on, as pyoxigraph ``query`` keywords.

    ``default`` None: the store's default graph; ``named`` None: every named graph of the store.
    """

    default: tuple[ox.NamedNode, ...] | None = None
    named: tuple[ox.NamedNode, ...] | None = None

    def query_options(self) -> dict:
        options = {}
        if self.default is not None:
            options["default_graph"] = list(self.default)
        if self.named is not None:
            options["named_graphs"] = list(self.named)
        return options


# A template position compiled once per operation: a pyoxigraph constant, a variable to look up,
# or a blank node to mint per solution.
_Slot = ox.NamedNode | ox.Literal | ox.DefaultGraph | Var | BlankNode


class UpdateRequest:
    """One parsed Update request, run against ``store`` through ``batch``.

    ``using_graph_uris``/``using_named_graph_uris`` are the protocol's dataset parameters; a request
    that also says WITH/USING is refused, as the SPARQL 1.1 Protocol requires.
    """

    def __init__(
        self,
        store: ox.Store,
        batch: WriteBatch,
        update: ast.Update,
        *,
        using_graph_uris: Sequence[str] | None = None,
        using_named_graph_uris: Sequence[str] | None = None,
        allow_remote: bool = False,
        allow_files: bool = False,
        custom_functions: Mapping[ox.NamedNode, Callable[..., object]] | None = None,
    ):
        self._store = store
        self._custom_functions = custom_functions
        self._batch = batch
        self._update = update
        self._allow_remote = allow_remote
        self._allow_files = allow_files
        self._insert_data_bnodes: dict[str, ox.BlankNode] = {}  # labels are fresh per request
        self._protocol_dataset: _Dataset | None = None
        if using_graph_uris or using_named_graph_uris:
            self._protocol_dataset = _Dataset(
                tuple(ox.NamedNode(iri) for iri in using_graph_uris or ()),
                tuple(ox.NamedNode(iri) for iri in using_named_graph_uris or ()),
            )

    def run(self) -> None:
        self._check_request()
        for operation in self._update.operations:
            self._run(operation)

    # ------------------------------------------------------------------ request checks

    def _check_request(self) -> None:
        if self._protocol_dataset is None:
            return
        for operation in self._update.operations:
            if isinstance(operation, ast.Modify) and (operation.with_graph is not None or operation.using):
                clause = "WITH" if operation.with_graph is not None else "USING"
                raise self._error(
                    f"the request gives its dataset twice: using-graph-uri/using-named-graph-uri and {clause}; "
                    "drop one of them",
                    operation,
                )

    # ------------------------------------------------------------------ dispatch

    def _run(self, operation: ast.UpdateOperation) -> None:
        match operation:
            case ast.InsertData(quads):
                self._batch.add(self._data_quads(quads, self._insert_data_bnodes))
            case ast.DeleteData(quads):
                self._batch.remove(self._data_quads(quads, {}))
            case ast.DeleteWhere(quads):
                self._delete_where(operation, quads)
            case ast.Modify():
                self._modify(operation)
            case ast.Clear(target) | ast.Drop(target) if target.keyword in ("NAMED", "ALL"):
                self._batch.empty_all(target.keyword, drop=isinstance(operation, ast.Drop))
            case ast.Clear(target, silent):
                for graph in self._targets(operation, target, silent):
                    self._batch.clear(graph)
            case ast.Drop(target, silent):
                for graph in self._targets(operation, target, silent):
                    self._batch.drop(graph)
            case ast.Create(graph, silent):
                self._create(operation, self._iri(graph, operation), silent)
            case ast.GraphTransfer():
                self._transfer(operation)
            case ast.Load():
                self._load(operation)
            case _:
                raise TypeError(f"not an update operation: {operation!r}")

    # ------------------------------------------------------------------ data and pattern operations

    def _data_quads(self, quads: Iterable[ast.QuadPattern], bnodes: dict[str, ox.BlankNode]) -> list[ox.Quad]:
        """The concrete quads of INSERT DATA / DELETE DATA (no variables there, the parser checked)."""
        found = []
        for quad in quads:
            graph = ox.DefaultGraph() if quad.graph is None else self._iri(quad.graph, quad)
            terms = [self._data_term(term, bnodes, quad) for term in (quad.subject, quad.predicate, quad.object)]
            found.append(ox.Quad(*terms, graph))
        return found

    def _data_term(self, term, bnodes: dict[str, ox.BlankNode], where: ast.Node):
        if isinstance(term, BlankNode):
            return bnodes.setdefault(term.label, ox.BlankNode())
        return self._constant(term, where)

    def _delete_where(self, operation: ast.DeleteWhere, quads: tuple[ast.QuadPattern, ...]) -> None:
        where = _group_of_quads(quads)
        dataset = self._protocol_dataset or _Dataset()
        solutions = self._solutions(operation, where, dataset)
        templates = self._compile(quads, None, operation)
        self._batch.remove(_instantiate_all(templates, solutions))

    def _modify(self, operation: ast.Modify) -> None:
        with_graph = self._iri(operation.with_graph, operation) if operation.with_graph is not None else None
        if self._protocol_dataset is not None:
            dataset = self._protocol_dataset
        elif operation.using:
            dataset = _Dataset(
                tuple(self._iri(u.iri, u) for u in operation.using if not u.named),
                tuple(self._iri(u.iri, u) for u in operation.using if u.named),
            )
        elif with_graph is not None:
            dataset = _Dataset(default=(with_graph,))  # WITH replaces only the default graph
        else:
            dataset = _Dataset()
        solutions = self._solutions(operation, operation.where, dataset)
        deletes = _instantiate_all(self._compile(operation.delete, with_graph, operation), solutions)
        inserts = _instantiate_all(self._compile(operation.insert, with_graph, operation), solutions)
        # The WHERE clause was evaluated before any change, then all deletions, then all insertions.
        self._batch.remove(deletes)
        self._batch.add(inserts)

    def _solutions(self, operation: ast.Node, where: ast.GroupGraphPattern, dataset: _Dataset) -> list:
        text = serialize_query(ast.Query(ast.SelectQuery(projection=(), where=where)))
        try:
            return list(self._store.query(text, custom_functions=self._custom_functions, **dataset.query_options()))
        except SyntaxError as error:
            # Our own serialisation was refused: a construct pyoxigraph does not support.
            raise self._error(f"pyoxigraph cannot evaluate this WHERE clause: {error.msg}", operation) from None
        except OSError as error:
            raise StoreError(f"evaluating the WHERE clause failed: {error}") from error

    def _compile(
        self, templates: Iterable[ast.QuadPattern], default_graph: ox.NamedNode | None, operation: ast.Node
    ) -> list[tuple[_Slot, _Slot, _Slot, _Slot]]:
        """Templates with their constants converted once; ``default_graph`` is WITH's graph."""
        compiled = []
        for quad in templates:
            if quad.graph is None:
                graph: _Slot = default_graph if default_graph is not None else ox.DefaultGraph()
            else:
                graph = self._slot(quad.graph, operation)
            compiled.append(
                (
                    self._slot(quad.subject, operation),
                    self._slot(quad.predicate, operation),
                    self._slot(quad.object, operation),
                    graph,
                )
            )
        return compiled

    def _slot(self, term, operation: ast.Node) -> _Slot:
        if isinstance(term, Var | BlankNode):
            return term
        return self._constant(term, operation)

    # ------------------------------------------------------------------ graph management

    def _targets(self, operation: ast.Clear | ast.Drop, target: ast.GraphTarget, silent: bool) -> list[GraphTerm]:
        """The graph a CLEAR/DROP of DEFAULT or GRAPH names; a missing named graph fails unless SILENT."""
        if target.keyword == "DEFAULT":
            return [ox.DefaultGraph()]
        graph = self._iri(target.iri, operation)
        if self._store.contains_named_graph(graph):
            return [graph]
        if silent:
            return []
        verb = type(operation).__name__.upper()
        raise self._error(f"{verb} GRAPH <{graph.value}>: the store has no such graph (add SILENT to ignore)", operation)

    def _create(self, operation: ast.Create, graph: ox.NamedNode, silent: bool) -> None:
        if self._store.contains_named_graph(graph):
            if silent:
                return
            raise self._error(f"CREATE GRAPH <{graph.value}>: the graph already exists (add SILENT to ignore)", operation)
        self._batch.create(graph)

    def _transfer(self, operation: ast.GraphTransfer) -> None:
        """ADD, COPY and MOVE (SPARQL 1.1 Update §3.2.5–3.2.7)."""
        source = self._graph_target(operation.source, operation)
        destination = self._graph_target(operation.destination, operation)
        if source == destination:
            return  # the spec makes all three a no-op on one graph
        if isinstance(source, ox.NamedNode) and not self._store.contains_named_graph(source):
            if operation.silent:
                return
            raise self._error(
                f"{operation.op} <{source.value}>: the store has no such graph (add SILENT to ignore)", operation
            )
        self._batch.transfer(operation.op, source, destination)

    def _load(self, operation: ast.Load) -> None:
        graph = ox.DefaultGraph() if operation.into is None else self._iri(operation.into, operation)
        source = f"document <{operation.source.value}>"
        try:
            data, fmt = fetch_document(
                operation.source.value, allow_remote=self._allow_remote, allow_files=self._allow_files
            )
            if not self._batch.undoable and not fmt.supports_datasets:
                # One operation of triples: pyoxigraph parses and writes it in one transaction.
                try:
                    self._batch.load(graph, data, fmt, operation.source.value)
                except SyntaxError as error:
                    raise rdf_syntax_error(error, fmt, source) from None
                return
            quads = parse_graph(data, fmt, graph, base_iri=operation.source.value, source=source)
        except (StoreError, OSError, ValueError) as error:
            if operation.silent:
                return  # SILENT: a failing LOAD is a successful no-op
            if isinstance(error, RemoteAccessError | RdfSyntaxError):
                raise
            raise self._error(f"LOAD <{operation.source.value}> failed: {error}", operation) from error
        self._batch.create(graph)
        self._batch.add(quads)

    # ------------------------------------------------------------------ terms and errors

    def _graph_target(self, target: ast.GraphTarget, operation: ast.Node) -> GraphTerm:
        return ox.DefaultGraph() if target.keyword == "DEFAULT" else self._iri(target.iri, operation)

    def _iri(self, iri: IRI, where: ast.Node) -> ox.NamedNode:
        return self._constant(iri, where)

    def _constant(self, term: IRI | Literal, where: ast.Node):
        try:
            return constant_term(term)
        except ValueError as error:
            span = term.span or where.span or Span.at(self._update.text, 0)
            raise QuerySyntaxError(f"invalid term {write_term(term)}: {error}", self._update.text, span) from None

    def _error(self, message: str, operation: ast.Node) -> UpdateError:
        span = operation.span
        return UpdateError(message, span.line if span else None, span.column if span else None)


def _group_of_quads(quads: tuple[ast.QuadPattern, ...]) -> ast.GroupGraphPattern:
    """The WHERE clause of ``DELETE WHERE { quads }``: default-graph triples, then one GRAPH block per name."""
    default: list[ast.TriplePattern] = []
    named: dict[IRI | Var, list[ast.TriplePattern]] = {}
    for quad in quads:
        triple = ast.TriplePattern(quad.subject, quad.predicate, quad.object)
        (default if quad.graph is None else named.setdefault(quad.graph, [])).append(triple)
    elements: list = [ast.TriplesBlock(tuple(default))] if default else []
    elements.extend(
        ast.GraphPattern(name, ast.GroupGraphPattern((ast.TriplesBlock(tuple(triples)),)))
        for name, triples in named.items()
    )
    return ast.GroupGraphPattern(tuple(elements))


def _instantiate_all(templates: list[tuple[_Slot, _Slot, _Slot, _Slot]], solutions: list) -> list[ox.Quad]:
    """Every well-formed quad the templates give over the solutions; blank nodes fresh per solution."""
    found = []
    for solution in solutions:
        bnodes: dict[str, ox.BlankNode] = {}
        for template in templates:
            quad = _instantiate(template, solution, bnodes)
            if quad is not None:
                found.append(quad)
    return found


def _instantiate(template, solution, bnodes: dict[str, ox.BlankNode]) -> ox.Quad | None:
    """The quad of one template under one solution, or None if a variable is unbound or the quad
    would be ill-formed (a literal subject, a blank-node predicate or graph…): the spec skips those."""
    subject, predicate, obj, graph = (_value(slot, solution, bnodes) for slot in template)
    if (
        not isinstance(subject, _SUBJECTS)
        or not isinstance(predicate, ox.NamedNode)
        or obj is None
        or not isinstance(graph, _GRAPH_NAMES)
    ):
        return None
    return ox.Quad(subject, predicate, obj, graph)


def _value(slot: _Slot, solution, bnodes: dict[str, ox.BlankNode]):
    if isinstance(slot, Var):
        return solution[slot.name]
    if isinstance(slot, BlankNode):
        return bnodes.setdefault(slot.label, ox.BlankNode())
    return slot
