"""Killing a writer at an exact point: a child process opens the on-disk store, runs one write through
a pyoxigraph store that SIGKILLs the child after its k-th write call, and the parent opens the store
again (which recovers) to see what is left. Every k from 0 (before the first call) to the last call
of the write is a distinct crash point."""

from __future__ import annotations

import multiprocessing
import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint.engine.registry import QueryRegistry, StoredQuery
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.query.parser import parse_update
from static_store import StaticStore
from static_store.journal import UndoJournal

# The pyoxigraph calls that change a store, each its own transaction.
WRITE_CALLS = frozenset({"add", "extend", "remove", "clear", "clear_graph", "add_graph", "remove_graph", "load", "bulk_load", "update"})
CHILD_TIMEOUT_S = 60

# The fork server imports this module before forking any child (``_context``): parsing here the
# forms of Update the tests write builds the parser's lexers (a second or two on first use) once,
# not in every child.
parse_update(
    'DELETE DATA { <a:s> <a:p> "x" } ; INSERT DATA { GRAPH <a:g> { <a:s> <a:p> 1, 2 . _:b <a:p> 4 } } ; '
    "DROP GRAPH <a:g> ; DELETE { ?s ?p ?o } INSERT { ?s ?p ?m } WHERE { ?s ?p ?o BIND(?o + 1 AS ?m) }"
)
NO_KILL = -1


class KillAfter:
    """A pyoxigraph store whose ``kill_after``-th write call (0: the first, before it runs) is the last
    thing its process does; ``calls`` counts the write calls made."""

    def __init__(self, store: ox.Store, kill_after: int):
        self._store = store
        self._kill_after = kill_after
        self.calls = 0

    def __getattr__(self, name: str):
        method = getattr(self._store, name)
        if name not in WRITE_CALLS:
            return method

        def call(*args, **kwargs):
            if self._kill_after == 0:
                os.kill(os.getpid(), signal.SIGKILL)
            result = method(*args, **kwargs)
            self.calls += 1
            if self.calls == self._kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return call

    def __iter__(self):
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)

    def __contains__(self, quad) -> bool:
        return quad in self._store


def _context():
    """Children forked from a fresh server process that never opened a store: a child forked from a
    process that had opened RocksDB (as the test runner has) hangs opening one, its thread pool gone."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def in_child(target: Callable[..., int], *args) -> int | None:
    """``target(*args)`` in a child process; the number of write calls it returned when the child
    was not killed, None when it was."""
    count_file = Path(tempfile.mkstemp(prefix="calls-")[1])
    try:
        child = _context().Process(target=_counted, args=(count_file, target, *args))
        child.start()
        child.join(CHILD_TIMEOUT_S)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise AssertionError(f"the writer did not finish within {CHILD_TIMEOUT_S} s")
        exitcode = child.exitcode
        child.close()
        if exitcode == -signal.SIGKILL:
            return None
        assert exitcode == 0, f"the writer failed (exit {exitcode})"
        return int(count_file.read_text())
    finally:
        count_file.unlink()


def _counted(count_file: Path, target: Callable[..., int], *args) -> None:
    count_file.write_text(str(target(*args)))


def write_killed_after(directory: Path, write: Callable[[StaticStore], object], kill_after: int) -> int | None:
    """``write`` (a module-level function: it goes to the child by name) on the on-disk store in
    ``directory``, in a child killed after ``kill_after`` write calls (``NO_KILL``: never); the calls
    made when it finished, None when it was killed."""
    return in_child(_write, directory, write, kill_after)


def _write(directory: Path, write: Callable[[StaticStore], object], kill_after: int) -> int:
    """Opens the store as a server does (recovering an earlier crash), then writes through ``KillAfter``."""
    store = open_store(directory)
    killing = KillAfter(store._store, kill_after)
    store._store = killing  # the one seam: every write of the StaticStore goes through it
    write(store)
    store.close()
    return killing.calls


def recover_killed_after(directory: Path, kill_after: int) -> int | None:
    """The recovery of a journal left in ``directory``, in a child killed after ``kill_after`` write calls."""
    return in_child(_recover, directory, kill_after)


def _recover(directory: Path, kill_after: int) -> int:
    killing = KillAfter(ox.Store(str(directory / "oxigraph")), kill_after)
    UndoJournal(directory).recover(killing)
    return killing.calls


def snapshot(directory: Path) -> tuple[frozenset, frozenset, int]:
    """The store's quads, named graphs and version, opened as a server opens it (recovering an
    interrupted write)."""
    with open_store(directory) as store:
        return frozenset(store), frozenset(store.named_graphs()), store.version


def save_queries_killed_after(path: Path, names: list[str], kill_after: int) -> int | None:
    """``QueryRegistry`` saving queries ``names`` to ``path``, in a child killed after ``kill_after``
    of the file system calls that make the save atomic (fsync, link, rename)."""
    return in_child(_save_queries, path, names, kill_after)


def _save_queries(path: Path, names: list[str], kill_after: int) -> int:
    registry = QueryRegistry(None, path)  # saving reads the stored queries only, never the engine
    registry.stored = {name: StoredQuery(name, f"# {name}", None, "incremental") for name in names}
    calls = 0
    for name in ("fsync", "link", "replace"):
        real = getattr(os, name)

        def call(*args, _real=real):
            nonlocal calls
            result = _real(*args)
            calls += 1
            if calls == kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        setattr(os, name, call)  # in this child only
    registry._save()
    return calls
