"""Change events: exactly one per write that changed something, naming the right graphs with exact counts."""

from __future__ import annotations

import logging
import threading

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_update_eval import differences, snapshot

from cqels_endpoint.errors import UpdateError
from cqels_endpoint.oxigraph.requests import open_store
from static_store import ChangeEvent, GraphChange, StaticStore

EX = "http://example.org/"
G1, G2 = EX + "g1", EX + "g2"


@pytest.fixture
def store():
    with open_store() as store:
        yield store


@pytest.fixture
def events(store):
    received: list[ChangeEvent] = []
    store.subscribe(received.append)
    return received


def counts(event: ChangeEvent | None) -> dict[str | None, tuple[int, int]]:
    return {} if event is None else {c.graph: (c.added, c.removed) for c in event.changes}


def run(store: StaticStore, events: list[ChangeEvent], request: str) -> dict[str | None, tuple[int, int]]:
    """Run ``request``; assert it emitted exactly the returned event (or none) and the real differences."""
    before, seen = snapshot(store), len(events)
    returned = store.update(f"PREFIX : <{EX}>\n{request}")
    real = differences(before, snapshot(store))
    assert events[seen:] == ([returned] if returned is not None else [])
    assert counts(returned) == real
    return real


SEED = f"INSERT DATA {{ :a :p 1 . :b :p 2 . GRAPH <{G1}> {{ :a :p 1 . :c :p 3 }} }}"


# --------------------------------------------------------------------------- every kind of Update operation


def test_insert_data_counts_only_new_quads(store, events):
    assert run(store, events, SEED) == {None: (2, 0), G1: (2, 0)}
    assert run(store, events, "INSERT DATA { :a :p 1 . :z :p 9 }") == {None: (1, 0)}


def test_delete_data_counts_only_present_quads(store, events):
    run(store, events, SEED)
    assert run(store, events, f"DELETE DATA {{ :a :p 1 . :nope :p 0 . GRAPH <{G1}> {{ :c :p 3 }} }}") == {
        None: (0, 1),
        G1: (0, 1),
    }


def test_delete_where(store, events):
    run(store, events, SEED)
    assert run(store, events, f"DELETE WHERE {{ GRAPH <{G1}> {{ ?s :p ?o }} }}") == {G1: (0, 2)}


def test_delete_insert_where_with_graph(store, events):
    run(store, events, SEED)
    request = f"WITH <{G1}> DELETE {{ ?s :p ?o }} INSERT {{ GRAPH <{G2}> {{ ?s :q ?o }} }} WHERE {{ ?s :p ?o }}"
    assert run(store, events, request) == {G1: (0, 2), G2: (2, 0)}


def test_insert_where_makes_fresh_blank_nodes_per_solution(store, events):
    run(store, events, SEED)
    assert run(store, events, "INSERT { _:n :of ?s } WHERE { ?s :p ?o }") == {None: (2, 0)}
    subjects = {q.subject for q in store if q.predicate == ox.NamedNode(EX + "of")}
    assert len(subjects) == 2 and all(isinstance(s, ox.BlankNode) for s in subjects)


def test_clear_and_drop(store, events):
    run(store, events, SEED)
    assert run(store, events, f"CLEAR GRAPH <{G1}>") == {G1: (0, 2)}
    assert store.has_graph(G1)  # CLEAR keeps the (now empty) graph
    assert run(store, events, f"DROP GRAPH <{G1}>") == {}  # nothing left to remove: no event
    assert not store.has_graph(G1)
    assert run(store, events, "CLEAR DEFAULT") == {None: (0, 2)}


def test_clear_all_and_drop_named(store, events):
    run(store, events, SEED)
    assert run(store, events, "DROP NAMED") == {G1: (0, 2)}
    run(store, events, SEED)
    assert run(store, events, "CLEAR ALL") == {None: (0, 2), G1: (0, 2)}


def test_create_changes_no_content_so_emits_nothing(store, events):
    assert run(store, events, f"CREATE GRAPH <{G2}>") == {}
    assert store.has_graph(G2) and events == []


def test_add_copy_move(store, events):
    run(store, events, SEED)
    assert run(store, events, f"ADD <{G1}> TO DEFAULT") == {None: (1, 0)}  # :a :p 1 was already there
    assert run(store, events, f"COPY <{G1}> TO <{G2}>") == {G2: (2, 0)}
    assert run(store, events, "DELETE DATA { :c :p 3 }") == {None: (0, 1)}
    assert run(store, events, f"COPY DEFAULT TO <{G2}>") == {G2: (1, 1)}  # keeps :a, drops :c, adds :b
    assert run(store, events, f"MOVE <{G2}> TO <{G1}>") == {G1: (1, 1), G2: (0, 2)}
    assert not store.has_graph(G2)
    assert run(store, events, f"COPY <{G1}> TO <{G1}>") == {}


def test_load_operation(store, events, tmp_path):
    document = tmp_path / "doc.ttl"
    document.write_text(f"<{EX}a> <{EX}p> 1, 2 .", encoding="utf-8")
    before = snapshot(store)
    event = store.update(f"LOAD <{document.as_uri()}> INTO GRAPH <{G2}>", allow_files=True)
    assert counts(event) == differences(before, snapshot(store)) == {G2: (2, 0)}
    assert events == [event]


def test_one_event_per_request_with_net_counts(store, events):
    # Three operations, one event; a quad inserted then deleted in the same request counts for nothing.
    assert run(store, events, "INSERT DATA { :a :p 1 } ; INSERT DATA { :t :p 0 } ; DELETE DATA { :t :p 0 }") == {
        None: (1, 0)
    }
    assert len(events) == 1
    assert run(store, events, "DELETE DATA { :a :p 1 } ; INSERT DATA { :a :p 1 }") == {}
    assert len(events) == 1


def test_a_failing_request_is_undone_and_emits_nothing(store, events):
    run(store, events, SEED)
    before = snapshot(store)
    graphs_before = store.named_graphs()
    version = store.version
    request = (
        f"PREFIX : <{EX}> DELETE DATA {{ :a :p 1 }} ; CREATE GRAPH <{G2}> ; "
        f"INSERT DATA {{ GRAPH <{EX}g3> {{ :x :p 1 }} }} ; DROP GRAPH <{G1}> ; CREATE GRAPH <{G2}>"
    )
    with pytest.raises(UpdateError) as raised:
        store.update(request)
    assert "already exists" in str(raised.value) and raised.value.line == 1
    assert snapshot(store) == before
    assert store.named_graphs() == graphs_before  # G2 and g3 gone again, G1 back
    assert store.version == version and len(events) == 1


# --------------------------------------------------------------------------- GSP operations and bulk load


def test_graph_store_operations(store, events):
    created, event = store.put_graph(G1, f"<{EX}a> <{EX}p> 1, 2 .".encode(), "text/turtle")
    assert created and counts(event) == {G1: (2, 0)}
    created, event = store.put_graph(G1, f"<{EX}a> <{EX}p> 2, 3 .".encode(), "text/turtle")
    assert not created and counts(event) == {G1: (1, 1)}
    created, event = store.put_graph(G1, f"<{EX}a> <{EX}p> 2, 3 .".encode(), "text/turtle")
    assert not created and event is None  # same content: nothing changed
    created, event = store.post_graph(None, f'<{EX}a> <{EX}p> "4" .'.encode(), "application/n-triples")
    assert created and counts(event) == {None: (1, 0)}  # the default graph was empty: content created
    assert counts(store.delete_graph(G1)) == {G1: (0, 2)}
    created, event = store.post_graph(G2, b"", "text/turtle")
    assert created and event is None and store.has_graph(G2)
    assert [e.version for e in events] == [1, 2, 3, 4]


def test_bulk_load_event(store, events, tmp_path):
    data = tmp_path / "data.nq"
    line = f'<{EX}a> <{EX}p> "1"'
    data.write_text(f"{line} .\n{line} <{G1}> .\n{line} <{G1}> .\n", encoding="utf-8")
    event = store.load(data)
    assert counts(event) == {None: (1, 0), G1: (1, 0)}
    assert store.load(data) is None  # everything already there
    assert events == [event]


# --------------------------------------------------------------------------- versions and observers


def test_versions_are_monotonic_and_per_graph(store, events):
    assert store.version == 0 and store.graph_version(G1) == 0
    store.update(f"INSERT DATA {{ GRAPH <{G1}> {{ <{EX}a> <{EX}p> 1 }} }}")
    store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}")
    store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}")  # no-op: no version
    assert store.version == 2
    assert store.graph_version(G1) == 1 and store.graph_version(None) == 2
    assert [e.version for e in events] == [1, 2]


def test_a_failing_observer_is_logged_and_the_write_stands(store, caplog):
    def broken(event: ChangeEvent) -> None:
        raise RuntimeError("observer bug")

    later: list[ChangeEvent] = []
    store.subscribe(broken)
    store.subscribe(later.append)
    with caplog.at_level(logging.ERROR, logger="static_store.events"):
        event = store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}")
    assert event is not None and len(store) == 1
    assert later == [event]
    assert "observer" in caplog.text and "observer bug" in caplog.text


def test_unsubscribe(store, events):
    other: list[ChangeEvent] = []
    unsubscribe = store.subscribe(other.append)
    store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}")
    unsubscribe()
    unsubscribe()  # harmless twice
    store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 2 }}")
    assert len(other) == 1 and len(events) == 2


def test_concurrent_writers_get_distinct_versions_delivered_in_order(store, events):
    def writer(n: int) -> None:
        for i in range(20):
            store.update(f"INSERT DATA {{ <{EX}w{n}> <{EX}p> {i} }}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.version for e in events] == list(range(1, 81))
    assert all(e.changes == (GraphChange(None, 1, 0),) for e in events)
    assert len(store) == 80


# --------------------------------------------------------------------------- property: counts == set differences

_subjects = st.sampled_from([f":s{i}" for i in range(3)])
_objects = st.sampled_from(["1", "2", '"x"', ":o"])
_graphs = st.sampled_from([None, G1, G2])


@st.composite
def _data_block(draw) -> str:
    triples = draw(st.lists(st.tuples(_graphs, _subjects, _objects), min_size=1, max_size=4))
    parts = []
    for graph, subject, obj in triples:
        triple = f"{subject} :p {obj} ."
        parts.append(triple if graph is None else f"GRAPH <{graph}> {{ {triple} }}")
    return "{ " + " ".join(parts) + " }"


_operation = st.one_of(
    _data_block().map(lambda block: "INSERT DATA " + block),
    _data_block().map(lambda block: "DELETE DATA " + block),
    st.sampled_from(["CLEAR DEFAULT", "CLEAR ALL", "CLEAR NAMED", f"CLEAR GRAPH <{G1}>", f"CLEAR SILENT GRAPH <{G2}>",
                     "DROP DEFAULT", "DROP ALL", "DROP NAMED", f"DROP GRAPH <{G1}>", f"DROP SILENT GRAPH <{G2}>",
                     # ADD/COPY/MOVE: pyoxigraph's own update, counted in Rust (one operation) or from
                     # the graphs the batch saved (several); from a missing graph they fail.
                     f"ADD <{G1}> TO DEFAULT", f"ADD DEFAULT TO <{G2}>", f"COPY <{G1}> TO <{G2}>",
                     f"COPY SILENT DEFAULT TO <{G1}>", f"MOVE <{G2}> TO <{G1}>", f"MOVE SILENT <{G1}> TO DEFAULT",
                     # Blank nodes, which a saved graph must keep as labelled in the store.
                     f"INSERT DATA {{ _:b :p 1 . _:c :p _:b . GRAPH <{G1}> {{ _:b :p 2 }} }}", "DELETE WHERE { ?s :p 1 }"]),
)
_request = st.lists(_operation, min_size=1, max_size=3).map(" ;\n".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_request, min_size=1, max_size=8))
def test_event_counts_equal_set_differences(requests):
    with open_store() as store:
        events: list[ChangeEvent] = []
        store.subscribe(events.append)
        for request in requests:
            before, version, seen, named = snapshot(store), store.version, len(events), store.named_graphs()
            try:
                returned = store.update(f"PREFIX : <{EX}>\n{request}")
            except UpdateError:
                # CLEAR GRAPH, COPY or MOVE of a graph that does not exist yet: the whole request is undone.
                assert snapshot(store) == before and store.version == version and len(events) == seen
                assert store.named_graphs() == named
                continue
            real = differences(before, snapshot(store))
            assert counts(returned) == real
            assert events[seen:] == ([returned] if real else [])
            assert store.version == version + (1 if real else 0)
