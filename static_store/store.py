"""``StaticStore``: the one owner of the pyoxigraph store — queries, updates, the Graph Store
Protocol's graph operations, bulk loads — and the source of change events.

Writers take the store's write lock (one at a time, re-entrant so an observer may write);
queries never take it. Every write that changes the content commits, bumps ``version``, and
then, still under the lock so observers see versions in order, emits exactly one ``ChangeEvent``.
A write that changes nothing emits nothing. Observers should be quick (schedule work, do not do it).

Queries go to pyoxigraph unparsed unless they need the request engine's checks (``shape``,
``requests``), in this process under a deadline or, for shapes that compute long before their
first row, in a forked child (``timeout``). Writes avoid holding quads in Python where pyoxigraph can do the work: an
INSERT DATA / DELETE DATA request is parsed by pyoxigraph and applied in one transaction, a large
GSP POST is merged by pyoxigraph and counted by graph sizes, a GSP PUT into an IRI or the default graph is diffed by
pyoxigraph and applied in one transaction (``replace``), a GSP DELETE or an Update request of one
CLEAR/DROP, ADD/COPY/MOVE or LOAD of triples is one pyoxigraph call counted in Rust, a load uses its
bulk loader. In a request of several operations, a graph that a CLEAR/DROP/ADD/COPY/MOVE rewrites is
saved first as pyoxigraph's dump of it, never as Python quads (``WriteBatch``).

Other Update requests run through the store's request engine (``requests``; cqels_endpoint's is
``cqels_endpoint.oxigraph.update``). pyoxigraph's Python API has no multi-statement transaction, so
such a request is applied operation by operation (and undone as a whole if one fails): a query
running meanwhile may see the state between two of its operations.

A crash never leaves half a request: a write made of one pyoxigraph transaction (INSERT DATA,
DELETE DATA, a large GSP POST, a GSP PUT into an IRI or the default graph, a GSP DELETE, an Update
request of one graph operation, a load of bytes) is atomic in RocksDB, and a write of several
(other Update requests, a GSP PUT into a blank-node graph, small GSP POSTs) journals the
inverse of each step first (``journal``), so the store undoes it when it opens again. Only ``load``
of a file uses pyoxigraph's bulk loader, which has no transaction: ``cqels load`` killed midway
leaves part of the file loaded.

On disk, ``path`` is a directory the store owns: the pyoxigraph (RocksDB) database lives in
``path/oxigraph``, the version counters in ``path/versions.json`` and ``path/versions.log``
(``versions``), so versions keep growing across restarts, and the undo journal of the write in
progress in ``path/undo.journal``. After a crash every graph gets a new version: the last write may
have committed without its version line, or been undone.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import pyoxigraph as ox

from static_store.convert import GraphTerm, graph_name, graph_term
from static_store.errors import GraphNotFound, InvalidGraphName, StoreError
from static_store.events import ChangeEvent, Observer, Observers, WriteBatch, sorted_changes
from static_store.formats import rdf_format, rdf_format_for_path, serialize_graph
from static_store.journal import UndoJournal
from static_store.load import bulk_load, graph_sizes, growth, parse_graph, rdf_syntax_error
from static_store.replace import replace_graph
from static_store.requests import PYOXIGRAPH_ONLY, RequestEngine
from static_store.results import QueryResult, serialize_evaluation
from static_store.shape import UpdateShape, query_shape, update_shape
from static_store.timeout import DeadlineWriter, EvaluationFailed, evaluate_in_child, timeout_message
from static_store.versions import VersionLog

T = TypeVar("T")

#: A write changing this many quads is followed by a flush of the store's in-memory tables.
LARGE_WRITE_QUADS = 100_000


def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()

#: A Graph Store Protocol body of triples this large is parsed by pyoxigraph into a store, not a
#: Python list: a POST is merged in one go and counted by graph sizes (two Rust COUNTs, ~0.2 s at
#: 250k quads), a PUT (of a blank-node graph: others go to ``replace``) compared with the graph it
#: replaces quad by quad.
LARGE_BODY_BYTES = 4 << 20

class StaticStore:
    """The static RDF store: in memory (``path=None``) or on disk in the directory ``path``.

    ``requests``: the SPARQL engine that checks requests and runs Update requests (``requests``);
    without one, what pyoxigraph alone runs exactly (``requests.PyoxigraphOnly``).
    """

    def __init__(self, path: str | os.PathLike | None = None, *, requests: RequestEngine | None = None):
        self._requests = requests or PYOXIGRAPH_ONLY
        self._lock = threading.RLock()
        self._observers = Observers()
        self._counted: tuple[int, int] | None = None  # (version, quads) of the last count
        self.path = None if path is None else Path(path)
        if self.path is None:
            self._store: ox.Store | None = ox.Store()
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            try:
                self._store = ox.Store(str(self.path / "oxigraph"))
            except OSError as error:
                msg = (
                    f"cannot open the store in {self.path}: {error}; if another cqels process "
                    "(a running server?) uses this data directory, stop it or go through its HTTP endpoint"
                )
                raise StoreError(msg) from error
        self._versions = VersionLog(self.path)
        self._journal = UndoJournal(self.path)
        if self._journal.recover(self._store) or self._versions.unclean:
            touched = {None, *self._versions.graph_versions, *self.named_graphs()}
            self._versions.record(self._versions.version + 1, sorted(touched, key=lambda g: (g is not None, g or "")))

    @classmethod
    def wrap(cls, store: ox.Store, *, requests: RequestEngine | None = None) -> StaticStore:
        """A StaticStore over an existing in-memory or on-disk ``pyoxigraph.Store``, read and written in place.

        Writes made to ``store`` directly (not through the wrapper) emit no change event.
        """
        wrapper = cls(requests=requests)
        wrapper._store = store
        wrapper._versions = VersionLog(None)
        wrapper._journal = UndoJournal(None)
        return wrapper

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Flush and release the database (an on-disk store can then be reopened)."""
        with self._lock:
            if self._store is not None and self.path is not None:
                self._store.flush()
            self._store = None
            self._versions.close()

    def __enter__(self) -> StaticStore:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def _ox(self) -> ox.Store:
        if self._store is None:
            raise StoreError("the store is closed")
        return self._store

    # ------------------------------------------------------------------ change events

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(event)`` after every committed write that changed something; returns unsubscribe."""
        return self._observers.subscribe(observer)

    @property
    def version(self) -> int:
        """Bumped by every write that changed the content; never decreases, also across restarts."""
        return self._versions.version

    def graph_version(self, graph: str | None) -> int:
        """The version of the last write that changed ``graph`` (0 if none did)."""
        return self._versions.graph_versions.get(graph, 0)

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self._ox)

    def quad_count(self) -> int:
        """``len(store)``, counted again only once a write changed the store (a count visits every
        quad: ~0.2 s per million). Writes made around the wrapper of ``wrap`` are not noticed."""
        version = self.version
        if self._counted is None or self._counted[0] != version:
            self._counted = (version, len(self._ox))
        return self._counted[1]

    def __iter__(self) -> Iterator[ox.Quad]:
        """Every quad of every graph, as pyoxigraph quads."""
        return iter(self._ox)

    def named_graphs(self) -> list[str]:
        return sorted(graph_name(g) for g in self._ox.named_graphs())

    def has_graph(self, graph: str | None) -> bool:
        """The default graph always exists; a named graph once written to or created, until dropped."""
        return graph is None or self._ox.contains_named_graph(self._graph(graph))

    def get_graph(self, graph: str | None, media_type: str) -> bytes:
        """The triples of ``graph`` in ``media_type`` (N-Quads/TriG keep the graph name)."""
        fmt = rdf_format(media_type)
        term = self._graph(graph)
        if not self.has_graph(graph):
            raise GraphNotFound(f"the store has no graph <{graph}>")
        return serialize_graph(self._ox.quads_for_pattern(None, None, None, term), fmt)

    def dump(self, media_type: str) -> tuple[int, bytes]:
        """The store version and every quad of that version in ``media_type`` (N-Quads or TriG)."""
        fmt = rdf_format(media_type)
        with self._lock:
            return self.version, ox.serialize(self._ox.quads_for_pattern(None, None, None, None), format=fmt)

    def query(
        self,
        text: str,
        *,
        base_iri: str | None = None,
        default_graph_uris: Sequence[str] | None = None,
        named_graph_uris: Sequence[str] | None = None,
        timeout: float | None = None,
        allow_remote: bool = False,
        custom_functions: Mapping[ox.NamedNode, Callable[..., object]] | None = None,
    ) -> QueryResult:
        """Evaluate a one-shot SPARQL query (no STREAM/WINDOW: those are registered, not run once).

        ``default_graph_uris``/``named_graph_uris`` (the protocol's dataset) replace the query's
        FROM/FROM NAMED. With ``timeout`` (seconds; ``None``/0: none) the query is stopped at its
        deadline with ``QueryTimeoutError``, in this process or in a forked child (``timeout``).
        ``custom_functions`` is pyoxigraph's: the extension functions the query may call by IRI
        (cqels_endpoint passes ``runtime.functions.extensions.custom_functions()``).

        Plain SPARQL goes to pyoxigraph unparsed; the request engine's parser and checks see a query
        first when it needs them (``SERVICE``), and explain any query pyoxigraph refuses, with its position.
        """
        shape = query_shape(text)
        if shape.parse_first:
            self._requests.check_query(text, base_iri, allow_remote=allow_remote)
        options: dict = {"base_iri": base_iri, "custom_functions": custom_functions}
        if default_graph_uris or named_graph_uris:
            options["default_graph"] = [self._protocol_graph(iri) for iri in default_graph_uris or ()]
            options["named_graphs"] = [self._protocol_graph(iri) for iri in named_graph_uris or ()]
        store = self._ox

        def evaluate(output=None) -> bytes | None:
            return serialize_evaluation(store.query(text, **options), output)

        try:
            if not timeout:
                payload = evaluate()
            elif shape.blocking:
                payload = evaluate_in_child(evaluate, timeout)
            else:
                sink = DeadlineWriter(time.monotonic() + timeout, timeout_message(timeout))
                evaluate(sink)
                payload = sink.getvalue()
        except EvaluationFailed as failure:
            raise self._requests.refusal(failure.kind, failure.message, text, base_iri, allow_remote=allow_remote, update=False) from None
        except (SyntaxError, OSError, RuntimeError, ValueError) as error:
            message = error.msg if isinstance(error, SyntaxError) else str(error)
            raise self._requests.refusal(type(error).__name__, message, text, base_iri, allow_remote=allow_remote, update=False) from None
        return QueryResult(shape.form, payload)

    def solutions(self, text: str, **options) -> ox.QuerySolutions:
        """The solutions of the SELECT ``text`` (``pyoxigraph.Store.query`` options), computed as
        they are read: for a large result consumed in this process (a static cache's build), which
        ``query`` would serialise whole in one call holding the GIL, every other thread of the
        process waiting (half a second for a million rows); here the GIL is free between two
        solutions. Checked as ``query`` checks it (no remote ``SERVICE``)."""
        if query_shape(text).parse_first:
            self._requests.check_query(text, None, allow_remote=False)
        return self._ox.query(text, **options)

    # ------------------------------------------------------------------ writing

    def update(
        self,
        text: str,
        *,
        base_iri: str | None = None,
        using_graph_uris: Sequence[str] | None = None,
        using_named_graph_uris: Sequence[str] | None = None,
        allow_remote: bool = False,
        allow_files: bool = False,
        custom_functions: Mapping[ox.NamedNode, Callable[..., object]] | None = None,
    ) -> ChangeEvent | None:
        """Run a SPARQL Update request, all or nothing; its change event, or None if nothing changed.

        ``LOAD``/``SERVICE`` of http(s) IRIs need ``allow_remote``, ``LOAD <file:…>`` needs
        ``allow_files`` (``RemoteAccessError`` otherwise, unless the LOAD is SILENT).
        ``custom_functions``: the extension functions its WHERE clauses may call, as in ``query``.
        """
        for iri in (*(using_graph_uris or ()), *(using_named_graph_uris or ())):
            self._protocol_graph(iri)
        shape = update_shape(text)
        if shape.data_kind is not None:
            return self._data_update(text, shape, base_iri, allow_remote)
        prepared = self._requests.prepare_update(text, base_iri, allow_remote=allow_remote)

        def run(batch: WriteBatch) -> None:
            prepared.run(
                self._ox,
                batch,
                using_graph_uris=using_graph_uris,
                using_named_graph_uris=using_named_graph_uris,
                allow_remote=allow_remote,
                allow_files=allow_files,
                custom_functions=custom_functions,
            )

        return self._write(run, undoable=not prepared.one_step)[1]

    def put_graph(
        self, graph: str | None, data: bytes | str, media_type: str, base_iri: str | None = None
    ) -> tuple[bool, ChangeEvent | None]:
        """Replace ``graph`` by the RDF in ``data``; ``(created, event)``, created when the graph is new
        (for the default graph, which always exists: when it was empty)."""
        return self._write_graph(graph, data, media_type, base_iri, replace=True)

    def post_graph(
        self, graph: str | None, data: bytes | str, media_type: str, base_iri: str | None = None
    ) -> tuple[bool, ChangeEvent | None]:
        """Merge the RDF in ``data`` into ``graph``; ``(created, event)``, created when the graph is new
        (for the default graph, which always exists: when it was empty)."""
        return self._write_graph(graph, data, media_type, base_iri, replace=False)

    def delete_graph(self, graph: str | None) -> ChangeEvent | None:
        """Drop a named graph, or empty the default graph; ``GraphNotFound`` for a missing named graph."""
        term = self._graph(graph)

        def drop(batch: WriteBatch) -> None:
            if not self.has_graph(graph):
                raise GraphNotFound(f"the store has no graph <{graph}>")
            batch.drop(term)

        return self._write(drop, undoable=False)[1]

    def load(
        self,
        source: str | os.PathLike | bytes,
        *,
        media_type: str | None = None,
        graph: str | None = None,
        base_iri: str | None = None,
        progress: bool = False,
    ) -> ChangeEvent | None:
        """Bulk-load a file (syntax from ``media_type`` or the extension) or bytes (``media_type`` needed).

        N-Triples, N-Quads, Turtle, TriG, RDF/XML, JSON-LD (and N3). Malformed data
        (``RdfSyntaxError`` with line/column) writes nothing. Triples go into ``graph``; the named
        graphs of TriG/N-Quads keep their names. Relative IRIs in a file resolve against the file's
        own ``file:`` IRI unless ``base_iri`` is given. ``progress`` shows a tqdm bar (files only).

        Bytes (a request's body, already in memory) are written in one transaction, so a crash
        writes all or nothing; a file goes through pyoxigraph's bulk loader, which streams it
        without holding it in memory but without a transaction: a crash midway leaves part of it.
        """
        if isinstance(source, bytes):
            if media_type is None:
                raise StoreError("loading bytes needs a media_type: there is no file name to guess from")
            document: Path | bytes = source
        else:
            document = Path(source)
            if not document.is_file():
                raise FileNotFoundError(f"no such file: {document}")
            if base_iri is None:
                base_iri = document.resolve().as_uri()
        fmt = rdf_format(media_type) if media_type is not None else rdf_format_for_path(document)
        term = self._graph(graph)
        with self._lock:
            if isinstance(document, bytes):
                touched = None if fmt.supports_datasets else [term]
                before = graph_sizes(self._ox, touched)
                _load_triples(self._ox, document, fmt, term, base_iri)
                counts = growth(before, graph_sizes(self._ox, touched))
            else:
                counts = bulk_load(self._ox, document, fmt, term, base_iri, progress)
            if not isinstance(term, ox.DefaultGraph) and not self._ox.contains_named_graph(term):
                self._ox.add_graph(term)  # an empty document still makes the graph exist
            # The bulk loader writes files directly; a transaction's quads stay in memory tables.
            return self._commit(counts, in_memory_tables=isinstance(document, bytes))

    def load_quads(self, quads: Iterable[ox.Quad], graphs: Iterable[str | None] | None = None) -> ChangeEvent | None:
        """Add ``quads`` (any iterable, consumed once) in one transaction, with one change event.

        If iterating ``quads`` raises, nothing is written. ``graphs``, when given, must name every
        graph the quads are in (None for the default graph): then only those graphs are counted
        for the event, instead of every graph of the store.
        """
        touched = None if graphs is None else [self._graph(g) for g in graphs]
        with self._lock:
            before = graph_sizes(self._ox, touched)
            self._ox.extend(quads)
            return self._commit(growth(before, graph_sizes(self._ox, touched)))

    # ------------------------------------------------------------------ internals

    def _data_update(self, text: str, shape: UpdateShape, base_iri: str | None, allow_remote: bool) -> ChangeEvent | None:
        """An INSERT DATA or DELETE DATA request, parsed by pyoxigraph alone and applied in one transaction.

        pyoxigraph runs the request on an empty in-memory store first (a DELETE DATA as the INSERT
        DATA of the same quads), which yields exactly the quads it names; those not yet in the store
        (or those in it) are the change.
        """
        scratch = ox.Store()
        as_insert = text
        for start, end in shape.data_keywords:
            as_insert = as_insert[:start] + "INSERT" + as_insert[end:]  # same length: positions hold
        try:
            scratch.update(as_insert, base_iri=base_iri)
        except (SyntaxError, OSError, ValueError) as error:
            message = error.msg if isinstance(error, SyntaxError) else str(error)
            raise self._requests.refusal(type(error).__name__, message, text, base_iri, allow_remote=allow_remote, update=True) from None
        quads = list(scratch)
        with self._lock:
            store = self._ox
            if shape.data_kind == "INSERT":
                changed = [quad for quad in quads if quad not in store]
                if changed:
                    store.extend(changed)
            else:
                changed = [quad for quad in quads if quad in store]
                if changed:
                    store.update(text, base_iri=base_iri)
            counts: dict[str | None, list[int]] = {}
            for quad in changed:
                counts.setdefault(graph_name(quad.graph_name), [0, 0])[shape.data_kind == "DELETE"] += 1
            return self._commit({graph: (added, removed) for graph, (added, removed) in counts.items()})

    def _write(self, action: Callable[[WriteBatch], T], *, undoable: bool = True) -> tuple[T, ChangeEvent | None]:
        """Run ``action`` on a fresh batch under the write lock; undo it all if it raises (see
        ``WriteBatch`` for an action of one operation, which need not be ``undoable``). The batch
        journals each step; committing the journal is the point from which a crash keeps the write."""
        with self._lock:
            batch = WriteBatch(self._ox, undoable=undoable, journal=self._journal)
            try:
                outcome = action(batch)
            except BaseException:
                batch.rollback()
                self._journal.commit()  # rolled back: nothing left to undo
                raise
            self._journal.commit()
            return outcome, self._commit(batch.counts())

    def _write_graph(
        self, graph: str | None, data: bytes | str, media_type: str, base_iri: str | None, *, replace: bool
    ) -> tuple[bool, ChangeEvent | None]:
        """Write one graph. The default graph always exists, so writing into it while it is empty
        counts as creating it: the Graph Store Protocol answers 201 then, as for a new named graph."""
        fmt = rdf_format(media_type)
        term = self._graph(graph)
        if replace and not isinstance(term, ox.BlankNode):
            if fmt.supports_datasets:
                # A dataset syntax's body holds one graph (``parse_graph`` refuses a named one,
                # naming its line); its triples are replaced as a triple syntax's are.
                triples = ox.Store()
                triples.extend(parse_graph(data, fmt, ox.DefaultGraph(), base_iri))
            else:
                triples = _load_triples(ox.Store(), data, fmt, ox.DefaultGraph(), base_iri)
            return self._put_triples(term, triples)
        large = not fmt.supports_datasets and len(data) >= LARGE_BODY_BYTES
        if large and not replace:
            return self._merge_large(term, data, fmt, base_iri)
        # Parsed before the lock: a bad body never waits nor writes. A large one goes into an
        # in-memory pyoxigraph store, not a Python list.
        quads = _load_triples(ox.Store(), data, fmt, term, base_iri) if large else set(parse_graph(data, fmt, term, base_iri))

        def write(batch: WriteBatch) -> bool:
            created = self._is_new(term)
            batch.create(term)
            if replace:
                batch.replace(term, quads)
            else:
                batch.add(quads)
            return created

        return self._write(write)

    def _put_triples(self, term: ox.NamedNode | ox.DefaultGraph, triples: ox.Store) -> tuple[bool, ChangeEvent | None]:
        """Replace a graph by ``triples`` (the PUT's body, parsed by pyoxigraph into the default graph
        of an in-memory store before the lock: a bad body never waits nor writes) in one
        transaction, its quads never in Python (``replace``)."""
        with self._lock:
            created = self._is_new(term)
            counts = replace_graph(self._ox, term, triples)
            return created, self._commit({graph_name(term): counts})

    def _merge_large(
        self, term: GraphTerm, data: bytes | str, fmt: ox.RdfFormat, base_iri: str | None
    ) -> tuple[bool, ChangeEvent | None]:
        """Merge a large body of triples without holding its quads in Python: pyoxigraph parses and
        writes it in one transaction (malformed data writes nothing, blank nodes are fresh), and the
        graph's size before and after, counted in Rust under the write lock, is the exact change."""
        with self._lock:
            created = self._is_new(term)
            before = graph_sizes(self._ox, [term])
            _load_triples(self._ox, data, fmt, term, base_iri)
            if not isinstance(term, ox.DefaultGraph) and not self._ox.contains_named_graph(term):
                self._ox.add_graph(term)  # a body of comments only still makes the graph exist
            return created, self._commit(growth(before, graph_sizes(self._ox, [term])))

    def _is_new(self, term: GraphTerm) -> bool:
        """Whether a GSP write creates ``term``; asked under the write lock, so two concurrent writers
        cannot both report created."""
        if isinstance(term, ox.DefaultGraph):
            return next(iter(self._ox.quads_for_pattern(None, None, None, term)), None) is None
        return not self._ox.contains_named_graph(term)

    def _commit(self, counts: dict[str | None, tuple[int, int]], *, in_memory_tables: bool = True) -> ChangeEvent | None:
        """Record a write's version and tell the observers; ``in_memory_tables``: the write went
        through pyoxigraph transactions, whose memory a large write should give back."""
        changes = sorted_changes(counts)
        if not changes:
            return None
        version = self._versions.version + 1
        self._versions.record(version, [change.graph for change in changes])
        event = ChangeEvent(version, changes)
        self._observers.notify(event)
        large = sum(c.added + c.removed for c in changes) >= LARGE_WRITE_QUADS
        if large and in_memory_tables and self.path is not None:
            self._release_memory()
        return event

    def _release_memory(self) -> None:
        """Give back the memory a large write leaves behind: pyoxigraph keeps a transaction's quads in
        RocksDB's in-memory tables until they are flushed (900 MB after 1M triples; 40 MB after a
        flush, ~1.6 s per 250k quads), and glibc keeps freed pages until asked to trim them."""
        self._ox.flush()
        if _MALLOC_TRIM is not None:
            _MALLOC_TRIM(0)

    def _graph(self, graph: str | None) -> GraphTerm:
        try:
            return graph_term(graph)
        except ValueError as error:
            raise InvalidGraphName(f"invalid graph IRI <{graph}>: {error}") from None

    def _protocol_graph(self, iri: str) -> ox.NamedNode:
        try:
            return ox.NamedNode(iri)
        except ValueError as error:
            raise InvalidGraphName(f"invalid graph IRI <{iri}> in the request's dataset: {error}") from None


def _load_triples(target: ox.Store, data: bytes | str, fmt: ox.RdfFormat, term: GraphTerm, base_iri: str | None) -> ox.Store:
    """``target`` with the triples of ``data`` added into ``term`` (the named graphs of a dataset
    syntax keep their names) in one transaction, blank nodes fresh; ``RdfSyntaxError`` with line and
    column, and nothing written, for malformed data."""
    try:
        target.load(data, format=fmt, base_iri=base_iri, to_graph=term)
    except SyntaxError as error:
        raise rdf_syntax_error(error, fmt) from None
    return target
