"""Change events and the write batch that computes them.

pyoxigraph has no triggers, so the ``StaticStore`` is the only writer and learns what a write did
by doing it itself: a ``WriteBatch`` applies quads one request at a time and keeps the *net* effect
per graph (a quad added then removed in the same request counts for nothing). Its counts are
therefore exactly the set difference between the store before and after the request, and the same
sets undo the request when one of its operations fails.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

import pyoxigraph as ox

from static_store.convert import GraphTerm, graph_name
from static_store.journal import UndoJournal, in_graph, restore_graph
from static_store.load import graph_sizes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphChange:
    """What one write did to one graph: ``graph`` None is the default graph."""

    graph: str | None
    added: int
    removed: int


@dataclass(frozen=True)
class ChangeEvent:
    """One committed write that changed the store's content (one per Update request, GSP call or load).

    ``changes`` lists only the graphs whose content changed, the default graph first, then by IRI.
    """

    version: int
    changes: tuple[GraphChange, ...]

    @property
    def graphs(self) -> frozenset[str | None]:
        return frozenset(change.graph for change in self.changes)

    def change(self, graph: str | None) -> GraphChange | None:
        """The change to ``graph``, or None if this write left it alone."""
        return next((c for c in self.changes if c.graph == graph), None)


Observer = Callable[[ChangeEvent], None]


class Observers:
    """Subscribed callbacks, called in subscription order; one failing never stops the others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observers: tuple[Observer, ...] = ()

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Add ``observer``; returns the function that removes it again (safe to call twice)."""
        with self._lock:
            self._observers = (*self._observers, observer)

        def unsubscribe() -> None:
            with self._lock:
                remaining = list(self._observers)
                if observer in remaining:
                    remaining.remove(observer)
                self._observers = tuple(remaining)

        return unsubscribe

    def notify(self, event: ChangeEvent) -> None:
        for observer in self._observers:  # a snapshot: (un)subscribing inside a callback is safe
            try:
                observer(event)
            except Exception:
                # An observer's bug must not undo or fail a committed write.
                log.exception("change-event observer %r failed on version %d", observer, event.version)


def sorted_changes(counts: dict[str | None, tuple[int, int]]) -> tuple[GraphChange, ...]:
    """GraphChanges from ``{graph: (added, removed)}``, dropping unchanged graphs, default graph first."""
    return tuple(
        GraphChange(graph, added, removed)
        for graph, (added, removed) in sorted(counts.items(), key=lambda item: (item[0] is not None, item[0] or ""))
        if added or removed
    )


class WriteBatch:
    """The writes of one request, applied to ``store`` as they come, with their net effect kept.

    Every method returns how many quads it really changed. ``rollback()`` restores the store
    (content and the existence of named graphs) as it was when the batch began.

    A batch that is not ``undoable`` (one operation: nothing after it can fail and undo it) clears or
    drops graphs, or adds, copies or moves one to another, by counting the change in Rust and making
    it in one pyoxigraph call, one transaction, so neither its quads in Python nor a journal record:
    a crash leaves the write whole or absent.

    An undoable batch makes such a step in Rust too, after saving the graphs it rewrites: pyoxigraph
    dumps each one once, as N-Triples bytes, into the journal and the batch (``_Saved``). The net
    counts of a saved graph are computed at the end, in Rust, from its saved and its final triples;
    its undo makes it hold the saved triples again. Time proportional to the data, in Rust.

    Each write of several calls first appends its inverse to ``journal`` (``UndoJournal``), so that
    a request cut by a crash is undone when the store opens again; the caller commits the journal
    once the request is done.
    """

    def __init__(self, store: ox.Store, *, undoable: bool = True, journal: UndoJournal | None = None):
        self._store = store
        self.undoable = undoable
        self._journal = journal or UndoJournal(None)
        self._added: dict[GraphTerm, set[ox.Quad]] = {}
        self._removed: dict[GraphTerm, set[ox.Quad]] = {}
        # (added, removed) counted in Rust, not kept as quads, by a batch not undoable.
        self._counted: dict[GraphTerm, tuple[int, int]] = {}
        # Named graphs whose existence this batch may have changed → whether they existed before.
        self._existed: dict[GraphTerm, bool] = {}
        # Graphs rewritten in Rust by an undoable batch → their triples when first rewritten.
        self._saved: dict[GraphTerm, _Saved] = {}

    # ------------------------------------------------------------------ writes

    def add(self, quads: Iterable[ox.Quad]) -> int:
        """Insert the quads not yet in the store (one pyoxigraph transaction)."""
        new = [quad for quad in dict.fromkeys(quads) if quad not in self._store]
        if not new:
            return 0
        for graph in {quad.graph_name for quad in new}:
            self._note_existence(graph)
        self._journal.adding(new)
        self._store.extend(new)
        for quad in new:
            self._record_added(quad)
        return len(new)

    def remove(self, quads: Iterable[ox.Quad]) -> int:
        """Delete the quads that are in the store."""
        present = [quad for quad in dict.fromkeys(quads) if quad in self._store]
        if present:
            self._journal.removing(present)
        for quad in present:
            self._store.remove(quad)
            self._record_removed(quad)
        return len(present)

    def clear(self, graph: GraphTerm) -> int:
        """Delete every quad of ``graph``; a named graph keeps existing (CLEAR)."""
        if not self.undoable:
            count = graph_sizes(self._store, [graph])[graph]
            if count:
                self._store.clear_graph(graph)
                self._count(graph, 0, count)
            return count
        count = graph_sizes(self._store, [graph])[graph]
        if count:
            self._save(graph)
            self._store.clear_graph(graph)
        return count

    def empty_all(self, keyword: str, *, drop: bool) -> None:
        """CLEAR or DROP (``drop``) of ``keyword`` NAMED or ALL graphs: graph by graph in an undoable
        batch, otherwise in one pyoxigraph update, counted in Rust first (one GROUP BY)."""
        if self.undoable:
            named = list(self._store.named_graphs())
            for graph in [ox.DefaultGraph(), *named] if keyword == "ALL" else named:
                if drop:
                    self.drop(graph)
                else:
                    self.clear(graph)
            return
        sizes = graph_sizes(self._store)
        if keyword == "NAMED":
            del sizes[ox.DefaultGraph()]
        if not any(sizes.values()) and not (drop and next(iter(self._store.named_graphs()), None) is not None):
            return  # nothing to empty, no graph to forget: no write
        self._store.update(f"{'DROP' if drop else 'CLEAR'} {keyword}")
        for graph, count in sizes.items():
            self._count(graph, 0, count)

    def transfer(self, op: str, source: ox.NamedNode | ox.DefaultGraph, destination: ox.NamedNode | ox.DefaultGraph) -> None:
        """ADD, COPY or MOVE (``op``) of ``source``, which exists, to another graph, ``destination``,
        created if new, as one pyoxigraph update (SPARQL 1.1 Update §3.2.5–3.2.7)."""
        create = isinstance(destination, ox.NamedNode) and not self._store.contains_named_graph(destination)
        sizes = graph_sizes(self._store, [source, destination])
        if self.undoable:
            self._save(destination)
            if create:
                self._note_existence(destination)
            if op == "MOVE":
                self._save(source)
                self._note_existence(source)
        else:
            if not sizes[destination]:
                added, removed = sizes[source], 0
            else:
                added = _missing(self._store, source, destination)
                removed = 0 if op == "ADD" else _missing(self._store, destination, source)
            self._count(destination, added, removed)
            if op == "MOVE":
                self._count(source, 0, sizes[source])
        # pyoxigraph's ADD of an empty graph makes no destination: CREATE it, in the same transaction.
        steps = [f"CREATE GRAPH {destination}"] if create else []
        if op == "ADD" or not sizes[destination]:
            steps.append(f"ADD {source} TO {destination}")  # into an empty graph, a COPY: 2/3 of its cost
        else:
            # pyoxigraph's COPY rewrites the whole graph: only what differs, blank nodes kept.
            source_triples, destination_triples = _pattern(source), _pattern(destination)
            steps += [f"DELETE {{ {destination_triples} }} WHERE {{ {destination_triples} FILTER NOT EXISTS {{ {source_triples} }} }}",
                      f"INSERT {{ {destination_triples} }} WHERE {{ {source_triples} FILTER NOT EXISTS {{ {destination_triples} }} }}"]
        if op == "MOVE":
            steps.append("DROP DEFAULT" if isinstance(source, ox.DefaultGraph) else f"DROP GRAPH {source}")
        self._store.update(" ;\n".join(steps))

    def create(self, graph: GraphTerm) -> None:
        """Record an empty named graph (CREATE, or a GSP write of no triples to a new graph)."""
        if isinstance(graph, ox.DefaultGraph) or self._store.contains_named_graph(graph):
            return
        self._note_existence(graph)
        self._store.add_graph(graph)

    def drop(self, graph: GraphTerm) -> int:
        """Delete every quad of ``graph`` and forget the named graph (DROP); the default graph is cleared."""
        named = not isinstance(graph, ox.DefaultGraph) and self._store.contains_named_graph(graph)
        if named and not self.undoable:
            count = graph_sizes(self._store, [graph])[graph]
            self._store.remove_graph(graph)  # its quads and its name in one transaction
            self._count(graph, 0, count)
            return count
        removed = self.clear(graph)
        if named:
            self._note_existence(graph)
            self._store.remove_graph(graph)
        return removed

    def load(self, graph: GraphTerm, data: bytes, fmt: ox.RdfFormat, base_iri: str | None) -> None:
        """Add the triples of ``data`` (a triple syntax, blank nodes fresh) to ``graph``, created if
        new, as pyoxigraph's one load, by a batch that is not undoable: counted by graph sizes."""
        before = graph_sizes(self._store, [graph])[graph]
        self._store.load(data, format=fmt, base_iri=base_iri, to_graph=graph)
        self.create(graph)  # a document of no triples still makes the graph (a write only then)
        self._count(graph, graph_sizes(self._store, [graph])[graph] - before, 0)

    def replace(self, graph: GraphTerm, quads: Collection[ox.Quad]) -> None:
        """Make ``graph`` hold exactly ``quads`` (a set, or an in-memory pyoxigraph store, of quads in
        ``graph``), touching only what differs; the graph's current quads are read, not kept."""
        self.remove([quad for quad in self._store.quads_for_pattern(None, None, None, graph) if quad not in quads])
        self.add(quads)

    # ------------------------------------------------------------------ outcome

    def counts(self) -> dict[str | None, tuple[int, int]]:
        """``{graph: (added, removed)}`` of the net effect so far, unchanged graphs included as (0, 0)."""
        counted = dict(self._counted)
        for graph, saved in self._saved.items():
            counted[graph] = saved.changes(self._store, graph)
        graphs = set(self._added) | set(self._removed) | set(counted)
        return {
            graph_name(g): (
                len(self._added.get(g, ())) + counted.get(g, (0, 0))[0],
                len(self._removed.get(g, ())) + counted.get(g, (0, 0))[1],
            )
            for g in graphs
        }

    def rollback(self) -> None:
        """Undo the batch: the saved graphs as saved, then remove what it added before (or without)
        saving, restore what it removed, then graph existence."""
        for graph, saved in self._saved.items():
            restore_graph(self._store, graph, saved.triples)
        added = [*self._added.values(), *(saved.added for saved in self._saved.values())]
        removed = [*self._removed.values(), *(saved.removed for saved in self._saved.values())]
        for quads in added:
            for quad in quads:
                self._store.remove(quad)
        restored = [quad for quads in removed for quad in quads]
        if restored:
            self._store.extend(restored)
        for graph, existed in self._existed.items():
            exists = self._store.contains_named_graph(graph)
            if existed and not exists:
                self._store.add_graph(graph)
            elif exists and not existed:
                self._store.remove_graph(graph)
        self._added.clear()
        self._removed.clear()
        self._counted.clear()
        self._existed.clear()
        self._saved.clear()

    def _count(self, graph: GraphTerm, added: int, removed: int) -> None:
        previous_added, previous_removed = self._counted.get(graph, (0, 0))
        self._counted[graph] = (previous_added + added, previous_removed + removed)

    def _save(self, graph: GraphTerm) -> None:
        """Before the batch first rewrites ``graph`` in Rust: its triples dumped by pyoxigraph into the
        journal and kept, with the quads the batch added to it and removed from it so far."""
        if graph in self._saved:
            return
        triples = self._store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
        self._journal.saving(graph, triples)
        self._saved[graph] = _Saved(triples, self._added.pop(graph, set()), self._removed.pop(graph, set()))

    def _record_added(self, quad: ox.Quad) -> None:
        if quad.graph_name in self._saved:
            return  # counted at the end, undone by the save
        removed = self._removed.get(quad.graph_name)
        if removed is not None and quad in removed:
            removed.discard(quad)  # back to how it was before the batch
        else:
            self._added.setdefault(quad.graph_name, set()).add(quad)

    def _record_removed(self, quad: ox.Quad) -> None:
        if quad.graph_name in self._saved:
            return
        added = self._added.get(quad.graph_name)
        if added is not None and quad in added:
            added.discard(quad)
        else:
            self._removed.setdefault(quad.graph_name, set()).add(quad)

    def _note_existence(self, graph: GraphTerm) -> None:
        if not isinstance(graph, ox.DefaultGraph) and graph not in self._existed:
            self._existed[graph] = self._store.contains_named_graph(graph)
            self._journal.graph(graph, self._existed[graph])


_SAVED = ox.NamedNode("urn:cqels-endpoint:saved")
_FINAL = ox.NamedNode("urn:cqels-endpoint:final")
_MISSING = "SELECT (COUNT(*) AS ?n) WHERE { %s FILTER NOT EXISTS { %s } }"


@dataclass(frozen=True)
class _Saved:
    """A graph as an undoable batch first rewrote it in Rust: ``triples``, dumped by pyoxigraph, and
    the quads the batch had added to it (``added``) and removed from it (``removed``) before."""

    triples: bytes
    added: set[ox.Quad]
    removed: set[ox.Quad]

    def changes(self, store: ox.Store, graph: GraphTerm) -> tuple[int, int]:
        """``(added, removed)``: the graph now against the graph before the batch, which is the saved
        triples without ``added`` and with ``removed``. The saved and the final triples are compared
        in a scratch store, loaded as one document so that a blank node keeps one identity."""
        final = store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
        if final == self.triples:
            new = gone = 0
        elif not final or not self.triples:
            new, gone = final.count(b"\n"), self.triples.count(b"\n")  # one triple a line
        else:
            scratch = ox.Store()
            scratch.load(in_graph(self.triples, _SAVED) + in_graph(final, _FINAL), format=ox.RdfFormat.N_QUADS)
            new, gone = _missing(scratch, _FINAL, _SAVED), _missing(scratch, _SAVED, _FINAL)
        # A quad in ``removed`` is absent from the saved triples, one in ``added`` present there.
        new += sum(quad in store for quad in self.added) - sum(quad in store for quad in self.removed)
        gone += sum(quad not in store for quad in self.removed) - sum(quad not in store for quad in self.added)
        return new, gone


def _missing(store: ox.Store, graph: GraphTerm, other: GraphTerm) -> int:
    """How many triples of ``graph`` ``other`` lacks, counted by pyoxigraph."""
    return int(next(iter(store.query(_MISSING % (_pattern(graph), _pattern(other)))))["n"].value)


def _pattern(graph: GraphTerm) -> str:
    return "?s ?p ?o" if isinstance(graph, ox.DefaultGraph) else f"GRAPH {graph} {{ ?s ?p ?o }}"
