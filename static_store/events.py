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
from static_store.journal import UndoJournal
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
    drops a graph by counting it in Rust and emptying it in one call, one pyoxigraph transaction, so
    neither its quads in Python nor a journal record: a crash leaves the graph whole or gone.

    Each write of several calls first appends its inverse to ``journal`` (``UndoJournal``), so that
    a request cut by a crash is undone when the store opens again; the caller commits the journal
    once the request is done.
    """

    def __init__(self, store: ox.Store, *, undoable: bool = True, journal: UndoJournal | None = None):
        self._store = store
        self._undoable = undoable
        self._journal = journal or UndoJournal(None)
        self._added: dict[GraphTerm, set[ox.Quad]] = {}
        self._removed: dict[GraphTerm, set[ox.Quad]] = {}
        # (added, removed) counted in Rust, not kept as quads, by a batch not undoable.
        self._counted: dict[GraphTerm, tuple[int, int]] = {}
        # Named graphs whose existence this batch may have changed → whether they existed before.
        self._existed: dict[GraphTerm, bool] = {}

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
        if not self._undoable:
            count = graph_sizes(self._store, [graph])[graph]
            if count:
                self._store.clear_graph(graph)
                self._count(graph, 0, count)
            return count
        quads = list(self._store.quads_for_pattern(None, None, None, graph))
        if quads:
            self._journal.removing(quads)
            self._store.clear_graph(graph)  # one call rather than one removal per quad
            for quad in quads:
                self._record_removed(quad)
        return len(quads)

    def create(self, graph: GraphTerm) -> None:
        """Record an empty named graph (CREATE, or a GSP write of no triples to a new graph)."""
        if isinstance(graph, ox.DefaultGraph) or self._store.contains_named_graph(graph):
            return
        self._note_existence(graph)
        self._store.add_graph(graph)

    def drop(self, graph: GraphTerm) -> int:
        """Delete every quad of ``graph`` and forget the named graph (DROP); the default graph is cleared."""
        named = not isinstance(graph, ox.DefaultGraph) and self._store.contains_named_graph(graph)
        if named and not self._undoable:
            count = graph_sizes(self._store, [graph])[graph]
            self._store.remove_graph(graph)  # its quads and its name in one transaction
            self._count(graph, 0, count)
            return count
        removed = self.clear(graph)
        if named:
            self._note_existence(graph)
            self._store.remove_graph(graph)
        return removed

    def replace(self, graph: GraphTerm, quads: Collection[ox.Quad]) -> None:
        """Make ``graph`` hold exactly ``quads`` (a set, or an in-memory pyoxigraph store, of quads in
        ``graph``), touching only what differs; the graph's current quads are read, not kept."""
        self.remove([quad for quad in self._store.quads_for_pattern(None, None, None, graph) if quad not in quads])
        self.add(quads)

    # ------------------------------------------------------------------ outcome

    def counts(self) -> dict[str | None, tuple[int, int]]:
        """``{graph: (added, removed)}`` of the net effect so far, unchanged graphs included as (0, 0)."""
        graphs = set(self._added) | set(self._removed) | set(self._counted)
        return {
            graph_name(g): (
                len(self._added.get(g, ())) + self._counted.get(g, (0, 0))[0],
                len(self._removed.get(g, ())) + self._counted.get(g, (0, 0))[1],
            )
            for g in graphs
        }

    def rollback(self) -> None:
        """Undo the batch: remove what it added, restore what it removed, then graph existence."""
        for quads in self._added.values():
            for quad in quads:
                self._store.remove(quad)
        restored = [quad for quads in self._removed.values() for quad in quads]
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

    def _count(self, graph: GraphTerm, added: int, removed: int) -> None:
        previous_added, previous_removed = self._counted.get(graph, (0, 0))
        self._counted[graph] = (previous_added + added, previous_removed + removed)

    def _record_added(self, quad: ox.Quad) -> None:
        removed = self._removed.get(quad.graph_name)
        if removed is not None and quad in removed:
            removed.discard(quad)  # back to how it was before the batch
        else:
            self._added.setdefault(quad.graph_name, set()).add(quad)

    def _record_removed(self, quad: ox.Quad) -> None:
        added = self._added.get(quad.graph_name)
        if added is not None and quad in added:
            added.discard(quad)
        else:
            self._removed.setdefault(quad.graph_name, set()).add(quad)

    def _note_existence(self, graph: GraphTerm) -> None:
        if not isinstance(graph, ox.DefaultGraph) and graph not in self._existed:
            self._existed[graph] = self._store.contains_named_graph(graph)
            self._journal.graph(graph, self._existed[graph])
