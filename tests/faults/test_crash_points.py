"""A write killed at any point is applied whole or not at all once the store opens again.

Each test writes once to count the pyoxigraph write calls of a request (GSP PUT, a multi-operation
Update, GSP DELETE…), then, on a fresh copy of the same store each time, kills a child after 0, 1, …
all of those calls (the last: every step done, the journal not yet committed) and opens the store
again: it must hold exactly the content before the request (blank nodes included), as the request
was never answered. Without the undo journal these fail from the second crash point on.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox
import pytest

from cqels_endpoint.oxigraph.requests import open_store
from static_store import StaticStore
from static_store.journal import FILE_NAME
from tests.faults.crashing import NO_KILL, recover_killed_after, snapshot, write_killed_after

EX = "http://example.org/"
G = EX + "g"


def graph_version(k: int, size: int = 8) -> str:
    """Graph G at version ``k``: ``size`` triples, two of them on blank nodes, one shared by every version."""
    lines = [f'<{EX}s{i}> <{EX}value> "{k}-{i}" .' for i in range(size - 3)]
    lines += [f'_:a <{EX}value> "{k}-a" .', f'_:b <{EX}value> "{k}-b" .', f'<{EX}s> <{EX}value> "shared" .']
    return "\n".join(lines) + "\n"


# The writes, module-level: each goes to its child process by name.


def put_version_1(store: StaticStore) -> None:
    store.put_graph(G, graph_version(1), "text/turtle")


def put_version_2(store: StaticStore) -> None:
    store.put_graph(G, graph_version(2), "text/turtle")


def put_other_graph(store: StaticStore) -> None:
    store.put_graph(EX + "other", graph_version(1), "text/turtle")


def delete_g(store: StaticStore) -> None:
    store.delete_graph(G)


def put_g_and_other_sharing_a_blank_node(store: StaticStore) -> None:
    store.update(f'INSERT DATA {{ GRAPH <{G}> {{ _:shared <{EX}value> "g" . <{EX}s> <{EX}value> "kept" }} '
                 f'GRAPH <{EX}other> {{ _:shared <{EX}value> "other" }} }}')


def put_default_version_1(store: StaticStore) -> None:
    store.put_graph(None, graph_version(1), "application/n-triples")


def put_default_version_2(store: StaticStore) -> None:
    store.put_graph(None, graph_version(2), "application/n-triples")


def drop_all(store: StaticStore) -> None:
    store.update("DROP ALL")


def insert_state_a(store: StaticStore) -> None:
    store.update(
        f'INSERT DATA {{ <{EX}s> <{EX}state> "a" . <{EX}c> <{EX}count> 1 . '
        f"GRAPH <{EX}g2> {{ <{EX}x> <{EX}y> 1, 2, 3 . _:b <{EX}y> 4 }} }}"
    )


def update_several_operations(store: StaticStore) -> None:
    store.update(
        f'DELETE DATA {{ <{EX}s> <{EX}state> "a" }} ; INSERT DATA {{ <{EX}s> <{EX}state> "b" }} ; '
        f"DROP GRAPH <{EX}g2> ; INSERT DATA {{ GRAPH <{EX}g3> {{ <{EX}x> <{EX}y> 5 }} }} ; "
        f"DELETE {{ ?c <{EX}count> ?n }} INSERT {{ ?c <{EX}count> ?m }} WHERE {{ ?c <{EX}count> ?n BIND(?n + 1 AS ?m) }}"
    )


def update_graph_management(store: StaticStore) -> None:
    # Each of CLEAR, COPY, MOVE, ADD and DROP rewrites whole graphs in Rust, after saving them once.
    store.update(
        f'INSERT DATA {{ GRAPH <{EX}g2> {{ <{EX}x> <{EX}y> 6 }} }} ; CLEAR DEFAULT ; COPY <{G}> TO <{EX}g3> ; '
        f"MOVE <{EX}g2> TO <{G}> ; ADD <{EX}g3> TO DEFAULT ; INSERT DATA {{ <{EX}x> <{EX}y> 7 }} ; DROP NAMED"
    )


def drop_all_and_insert(store: StaticStore) -> None:
    store.update(f"DROP ALL ; INSERT DATA {{ GRAPH <{G}> {{ <{EX}s> <{EX}value> \"shared\" }} }}")


def copy_default_to_g(store: StaticStore) -> None:
    store.update(f"COPY DEFAULT TO <{G}>")


def move_g_to_new_graph(store: StaticStore) -> None:
    store.update(f"MOVE <{G}> TO <{EX}moved>")


def add_g_to_default(store: StaticStore) -> None:
    store.update(f"ADD <{G}> TO DEFAULT")


def clear_named(store: StaticStore) -> None:
    store.update("CLEAR NAMED")


def load_into_g(store: StaticStore) -> None:
    document = store.path / "document.nt"
    document.write_text(graph_version(3))
    store.update(f"LOAD <{document.as_uri()}> INTO GRAPH <{G}>", allow_files=True)


def post_dataset(store: StaticStore) -> None:
    store.load(ox.serialize(DATASET, format=ox.RdfFormat.TRIG), media_type="application/trig")


DATASET = [ox.Quad(ox.NamedNode(f"{EX}s{i}"), ox.NamedNode(EX + "p"), ox.Literal(str(i)), ox.NamedNode(f"{EX}g{i % 3}")) for i in range(9)]


def crash_everywhere(tmp_path: Path, prepare: Callable[[StaticStore], object], write: Callable[[StaticStore], object]) -> int:
    """Kills ``write`` after each of its write calls in turn; the store must come back as ``prepare``
    left it every time. Returns the number of crash points tried."""
    prepared = tmp_path / "prepared"
    with open_store(prepared) as store:
        prepare(store)
    *before, version = snapshot(prepared)
    counting = tmp_path / "counting"
    shutil.copytree(prepared, counting)
    calls = write_killed_after(counting, write, NO_KILL)
    assert calls is not None and calls >= 2, "a write of one call needs no journal"
    assert snapshot(counting)[:2] != tuple(before), "the write must change the store"
    for kill_after in range(calls + 1):
        crashed = tmp_path / f"crashed-{kill_after}"
        shutil.copytree(prepared, crashed)
        assert write_killed_after(crashed, write, kill_after) is None
        assert (crashed / FILE_NAME).exists()  # written before the first step
        *after, recovered_version = snapshot(crashed)
        assert after == before, f"killed after {kill_after} of {calls} write calls"
        assert not (crashed / FILE_NAME).exists()
        assert recovered_version > version  # the content may have moved: a new version
    return calls + 1


def one_transaction(tmp_path: Path, prepare: Callable[[StaticStore], object], write: Callable[[StaticStore], object]):
    """``write`` is one pyoxigraph call: killed before it the store is as ``prepare`` left it, and no
    journal was needed. Returns the content (quads, named graphs) after it."""
    prepared = tmp_path / "prepared"
    with open_store(prepared) as store:
        prepare(store)
    before = snapshot(prepared)[:2]
    killed = tmp_path / "killed"
    shutil.copytree(prepared, killed)
    assert write_killed_after(killed, write, 0) is None
    assert snapshot(killed)[:2] == before
    assert write_killed_after(prepared, write, NO_KILL) == 1
    after = snapshot(prepared)[:2]
    assert after != before, "the write must change the store"
    return after


@pytest.mark.slow  # the first test of the module also starts the fork server
def test_a_gsp_put_of_triples_is_one_transaction(tmp_path: Path) -> None:
    with open_store(tmp_path / "expected") as store:
        put_version_2(store)
        expected = {q for q in store if not isinstance(q.subject, ox.BlankNode)}
    quads, graphs = one_transaction(tmp_path, put_version_1, put_version_2)
    assert {q for q in quads if not isinstance(q.subject, ox.BlankNode)} == expected and graphs == {G}
    assert len(quads) == 8


def test_a_put_that_creates_a_graph_is_one_transaction(tmp_path: Path) -> None:
    assert one_transaction(tmp_path, put_other_graph, put_version_1)[1] == {G, EX + "other"}


def test_a_put_of_the_default_graph_is_one_transaction(tmp_path: Path) -> None:
    one_transaction(tmp_path, put_default_version_1, put_default_version_2)


def test_a_put_leaves_a_blank_node_shared_with_another_graph(tmp_path: Path) -> None:
    quads, _ = one_transaction(tmp_path, put_g_and_other_sharing_a_blank_node, put_version_1)
    shared = {q.subject for q in quads if q.graph_name == ox.NamedNode(EX + "other")}
    assert len(shared) == 1 and isinstance(next(iter(shared)), ox.BlankNode)
    assert not any(q.subject in shared for q in quads if q.graph_name == ox.NamedNode(G))
    assert ox.Quad(ox.NamedNode(EX + "s"), ox.NamedNode(EX + "value"), ox.Literal("shared"), ox.NamedNode(G)) in quads


def every_graph(store: StaticStore) -> None:
    """Version 1 of G, of another graph and of the default graph, blank nodes in each, an empty graph."""
    put_version_1(store)
    put_other_graph(store)
    put_default_version_1(store)
    store.update(f"CREATE GRAPH <{EX}empty>")


def test_a_drop_all_is_one_transaction(tmp_path: Path) -> None:
    assert one_transaction(tmp_path, every_graph, drop_all) == (frozenset(), frozenset())


@pytest.mark.parametrize("write", [copy_default_to_g, move_g_to_new_graph, add_g_to_default, clear_named, load_into_g])
def test_one_graph_management_operation_is_one_transaction(tmp_path: Path, write) -> None:
    # The operation is pyoxigraph's own (LOAD: its parse), counted in Rust: no journal, no quad in Python.
    one_transaction(tmp_path, every_graph, write)


def test_a_killed_drop_all_among_several_operations_leaves_every_graph(tmp_path: Path) -> None:
    assert crash_everywhere(tmp_path, every_graph, drop_all_and_insert) >= 5


def test_killed_graph_management_operations_leave_the_store_as_before(tmp_path: Path) -> None:
    def prepare(store: StaticStore) -> None:
        every_graph(store)
        insert_state_a(store)

    assert crash_everywhere(tmp_path, prepare, update_graph_management) >= 10


def test_a_killed_multi_operation_update_leaves_the_store_as_before(tmp_path: Path) -> None:
    tried = crash_everywhere(tmp_path, insert_state_a, update_several_operations)
    assert tried >= 8


def test_a_graph_delete_is_one_transaction(tmp_path: Path) -> None:
    # A DELETE (and a one-graph DROP/CLEAR) is one pyoxigraph call, its quads never in Python.
    assert one_transaction(tmp_path, put_version_1, delete_g) == (frozenset(), frozenset())


@pytest.mark.parametrize("write", [update_several_operations, update_graph_management])
def test_a_recovery_killed_midway_recovers_on_the_next_open(tmp_path: Path, write) -> None:
    prepared = tmp_path / "prepared"
    with open_store(prepared) as store:
        insert_state_a(store)
        every_graph(store)
    before = snapshot(prepared)[:2]
    counting = tmp_path / "counting"
    shutil.copytree(prepared, counting)
    calls = write_killed_after(counting, write, NO_KILL)
    crashed = tmp_path / "crashed"
    shutil.copytree(prepared, crashed)
    assert write_killed_after(crashed, write, calls) is None  # every step done, never committed
    template = tmp_path / "template"
    shutil.copytree(crashed, template)
    recovery_calls = recover_killed_after(template, NO_KILL)
    assert recovery_calls is not None and recovery_calls >= 2
    for kill_after in range(1, recovery_calls + 1):
        again = tmp_path / f"again-{kill_after}"
        shutil.copytree(crashed, again)
        assert recover_killed_after(again, kill_after) is None
        assert (again / FILE_NAME).exists()
        assert snapshot(again)[:2] == before, f"recovery killed after {kill_after} of {recovery_calls} calls"


def test_a_journal_record_cut_short_is_ignored(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    with open_store(directory) as store:
        put_version_1(store)
    before = snapshot(directory)[:2]
    quad = ox.Quad(ox.NamedNode(EX + "s0"), ox.NamedNode(EX + "value"), ox.Literal("1-0"), ox.NamedNode(G))
    # A record whose step never ran (it is written first): its quads must not be removed.
    (directory / FILE_NAME).write_bytes(b"@remove\n" + str(quad).encode() + b" .\n@en")
    assert snapshot(directory)[:2] == before
    assert not (directory / FILE_NAME).exists()


def test_a_dataset_posted_as_bytes_is_one_transaction(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    assert write_killed_after(directory, post_dataset, NO_KILL) == 1
    assert snapshot(directory)[0] == frozenset(DATASET)
