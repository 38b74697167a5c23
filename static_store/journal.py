"""The undo journal: what makes a write of several pyoxigraph transactions all or nothing across a crash.

pyoxigraph commits each call (``extend``, ``remove``, ``clear_graph``…) as its own transaction and
offers no transaction spanning several, so a Graph Store Protocol write or an Update request that a
``WriteBatch`` applies in steps would be left half done by a process killed between two steps.
Before each step the batch appends that step's inverse here — the quads it is about to add, the
quads it is about to remove, whether a named graph existed, or, before a step that rewrites a whole
graph in Rust (CLEAR, DROP, ADD/COPY/MOVE of a request of several operations), the graph's triples as
pyoxigraph dumps them, never as Python quads — and flushes it to the operating system; once the
request is complete the file is deleted, which is its commit point. A journal found when the store
opens belongs to a request that never completed (never answered): its records are undone, last
first, and the store is as it was before that request.

Undoing is idempotent, so a crash during recovery is recovered from again: a batch adds only quads
that are absent and removes only quads that are present, and notes a graph's existence only the
first time it touches it, and saves a graph's triples only the first time it rewrites it, so the
earliest record about a quad or a graph states how it was before the request (a saved graph as it
was when saved, the records before the save undoing the rest); replayed last first, that record is
applied last and wins, whatever state the crash left.

The file is flushed, not fsynced: a killed process cannot lose what it handed to the kernel, and
an fsync per step (~5 ms here) would not buy safety against an OS crash or power loss, where
RocksDB, as pyoxigraph opens it, may lose its last commits anyway (its WAL is not synced per commit).

The format is text: a record is a header line, then for quads an N-Quads block (for a saved graph,
``@restore <graph>`` then its N-Triples) and an ``@end`` line (such a line never starts with ``@``). A record cut short by the crash was never applied
(its step runs only after the record is written), so it is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import pyoxigraph as ox

from static_store.convert import GraphTerm

FILE_NAME = "undo.journal"

_REMOVE = b"@remove\n"  # quads the step adds: removed on undo
_READD = b"@readd\n"  # quads the step removes: added back on undo
_GRAPH = "@graph"  # "@graph existed|absent <iri>|_:id": a named graph's existence before the request
_RESTORE = b"@restore "  # "@restore <iri>|_:id|DEFAULT": the graph's triples as a step is about to rewrite it
_END = b"@end\n"


class UndoJournal:
    """The undo records of the request being written; records nothing when ``directory`` is None
    (an in-memory store has nothing to recover)."""

    def __init__(self, directory: Path | None):
        self.path = None if directory is None else directory / FILE_NAME
        self._file: BinaryIO | None = None

    def adding(self, quads: Iterable[ox.Quad]) -> None:
        """Before a step adds ``quads`` (none of them in the store)."""
        self._quads(_REMOVE, quads)

    def removing(self, quads: Iterable[ox.Quad]) -> None:
        """Before a step removes ``quads`` (all of them in the store); any iterable, streamed."""
        self._quads(_READD, quads)

    def graph(self, graph: GraphTerm, existed: bool) -> None:
        """Before a step first changes whether the named graph ``graph`` exists."""
        file = self._open()
        if file is not None:
            file.write(f"{_GRAPH} {'existed' if existed else 'absent'} {graph}\n".encode())
            file.flush()

    def saving(self, graph: GraphTerm, triples: bytes) -> None:
        """Before a step rewrites ``graph`` whose triples are ``triples`` (N-Triples, as pyoxigraph
        dumps them): undone by making the graph hold exactly those triples again."""
        file = self._open()
        if file is not None:
            file.write(_RESTORE + str(graph).encode() + b"\n")
            file.write(triples)
            file.write(_END)
            file.flush()

    def commit(self) -> None:
        """The request is complete (or was rolled back in process): forget its records."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self.path.unlink()

    def recover(self, store: ox.Store) -> bool:
        """Undo the request a crash interrupted, if any; whether there was one."""
        if self.path is None or not self.path.exists():
            return False
        for header, block in reversed(_records(self.path.read_bytes())):
            if header == _REMOVE:
                for quad in ox.parse(block, format=ox.RdfFormat.N_QUADS):
                    store.remove(quad)
            elif header == _READD:
                store.extend(ox.parse(block, format=ox.RdfFormat.N_QUADS))
            elif header.startswith(_RESTORE):
                restore_graph(store, _term(header[len(_RESTORE) :].decode()), block)
            else:
                _, state, term = header.decode().split(" ", 2)
                graph = _term(term)
                if state == "existed" and not store.contains_named_graph(graph):
                    store.add_graph(graph)
                elif state == "absent" and store.contains_named_graph(graph):
                    store.remove_graph(graph)
        self.path.unlink()
        return True

    def _quads(self, header: bytes, quads: Iterable[ox.Quad]) -> None:
        file = self._open()
        if file is not None:
            file.write(header)
            ox.serialize(quads, file, format=ox.RdfFormat.N_QUADS)
            file.write(_END)
            file.flush()

    def _open(self) -> BinaryIO | None:
        if self._file is None and self.path is not None:
            self._file = self.path.open("wb")
        return self._file


def restore_graph(store: ox.Store, graph: GraphTerm, triples: bytes) -> None:
    """Make ``graph`` hold exactly ``triples`` (N-Triples dumped from ``store``), blank nodes as
    labelled there (``Store.load`` would rename them): undoing a step that rewrote the graph."""
    store.clear_graph(graph)
    if triples:
        store.extend(ox.parse(in_graph(triples, graph), format=ox.RdfFormat.N_QUADS))


def in_graph(triples: bytes, graph: GraphTerm) -> bytes:
    """N-Triples as pyoxigraph writes them (one triple a line, ending `` .``; a literal's line break is
    escaped) turned into N-Quads in ``graph``, in one pass in C."""
    if isinstance(graph, ox.DefaultGraph):
        return triples
    return triples.replace(b" .\n", b" " + str(graph).encode() + b" .\n")


def _term(text: str) -> GraphTerm:
    if text.startswith("<"):
        return ox.NamedNode(text[1:-1])
    return ox.BlankNode(text[2:]) if text.startswith("_:") else ox.DefaultGraph()


def _records(data: bytes) -> list[tuple[bytes, bytes]]:
    """The complete records of a journal, in order: ``(header, block)``, the header of a graph record
    being its whole line (its block empty), a saved graph's header its line without the line break."""
    records: list[tuple[bytes, bytes]] = []
    position = 0
    while (line_end := data.find(b"\n", position)) >= 0:
        header = data[position : line_end + 1]
        position = line_end + 1
        if header in (_REMOVE, _READD) or header.startswith(_RESTORE):
            close = data.find(b"\n" + _END, position - 1)
            if close < 0:
                break  # cut short: its step never ran
            block = data[position : close + 1]
            position = close + 1 + len(_END)
            records.append((header if header in (_REMOVE, _READD) else header.rstrip(b"\n"), block))
        elif header.startswith(_GRAPH.encode()):
            records.append((header.rstrip(b"\n"), b""))
        else:
            break
    return records
