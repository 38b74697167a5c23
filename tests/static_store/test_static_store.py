"""The ``StaticStore`` Python API: queries and their results, timeouts, updates, the GSP operations,
persistence on disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from paths import TESTS
from processes import children, children_settle

from cqels_endpoint.errors import (
    GraphNotFound,
    InvalidGraphName,
    QuerySyntaxError,
    QueryTimeoutError,
    RdfSyntaxError,
    RemoteAccessError,
    StoreError,
    UnsupportedMediaType,
    UpdateError,
)
from cqels_endpoint.oxigraph.requests import open_store
from static_store import GRAPH_MEDIA_TYPES, RESULTS_FORMATS, RESULTS_MEDIA_TYPES
from static_store.formats import RDF_FORMATS
from static_store.timeout import evaluate_in_child

EX = "http://example.org/"
G1, G2 = EX + "g1", EX + "g2"
DATA = f"""PREFIX : <{EX}>
INSERT DATA {{
  :alice :name "Alice" ; :knows :bob .
  :bob :name "Bob"@en .
  GRAPH <{G1}> {{ :alice :age 30 }}
  GRAPH <{G2}> {{ :bob :age 40 }}
}}"""


@pytest.fixture
def store():
    with open_store() as store:
        store.update(DATA)
        yield store


# --------------------------------------------------------------------------- query results


def test_select_result(store):
    result = store.query(f"SELECT ?s ?name WHERE {{ ?s <{EX}name> ?name }} ORDER BY ?name")
    assert result.kind == "SELECT"
    assert [v.value for v in result.variables] == ["s", "name"]
    rows = [(row["s"].value, row["name"].value) for row in result]
    assert rows == [(EX + "alice", "Alice"), (EX + "bob", "Bob")]
    assert list(result) == list(result)  # readable more than once


def test_select_serialisations(store):
    result = store.query(f"SELECT ?name WHERE {{ ?s <{EX}name> ?name }} ORDER BY ?name")
    as_json = json.loads(result.serialize("application/sparql-results+json"))
    assert as_json["head"]["vars"] == ["name"]
    assert [b["name"]["value"] for b in as_json["results"]["bindings"]] == ["Alice", "Bob"]
    assert result.serialize("text/csv") == b"name\r\nAlice\r\nBob\r\n"
    assert result.serialize("text/tab-separated-values") == b'?name\n"Alice"\n"Bob"@en\n'
    assert b"<sparql" in result.serialize("application/sparql-results+xml; charset=utf-8")
    assert set(result.media_types) == set(RESULTS_MEDIA_TYPES)
    with pytest.raises(UnsupportedMediaType):
        result.serialize("text/turtle")


def test_ask_result(store):
    yes = store.query(f"ASK {{ <{EX}alice> <{EX}knows> ?x }}")
    no = store.query(f"ASK {{ <{EX}bob> <{EX}knows> ?x }}")
    assert yes.kind == "ASK" and yes.boolean is True and no.boolean is False
    assert json.loads(no.serialize("application/json")) == {"head": {}, "boolean": False}
    assert yes.to_rdflib().askAnswer is True
    with pytest.raises(TypeError):
        iter(yes)


@pytest.mark.parametrize("media_type", GRAPH_MEDIA_TYPES)
def test_graph_result_in_every_syntax(store, media_type):
    result = store.query(f"CONSTRUCT {{ ?s <{EX}called> ?n }} WHERE {{ ?s <{EX}name> ?n }}")
    assert result.kind == "CONSTRUCT"
    fmt = ox.RdfFormat.from_media_type(media_type)
    parsed = {q.triple for q in ox.parse(result.serialize(media_type), format=fmt)}
    assert parsed == set(result) and len(parsed) == 2


@pytest.mark.parametrize("fmt", [*RDF_FORMATS, *RESULTS_FORMATS], ids=lambda f: f.media_type)
def test_every_media_type_means_the_same_syntax_to_pyoxigraph(fmt):
    # Guards the one media-type table against a typo: pyoxigraph knows these names too.
    read = ox.RdfFormat if isinstance(fmt.syntax, ox.RdfFormat) else ox.QueryResultsFormat
    assert [read.from_media_type(media_type) for media_type in fmt.media_types] == [fmt.syntax] * len(fmt.media_types)


def test_describe_is_a_graph_result(store):
    result = store.query(f"DESCRIBE <{EX}alice>")
    assert result.kind == "DESCRIBE" and result.is_graph
    assert {t.predicate.value for t in result} == {EX + "name", EX + "knows"}


def test_results_as_rdflib(store):
    graph = store.query(f"CONSTRUCT WHERE {{ ?s <{EX}name> ?n }}").to_rdflib()
    assert isinstance(graph, rdflib.Graph) and len(graph) == 2
    table = store.query(f"SELECT ?n WHERE {{ ?s <{EX}name> ?n }}").to_rdflib()
    assert table.type == "SELECT"
    assert sorted(str(row.n) for row in table) == ["Alice", "Bob"]


def test_protocol_dataset_replaces_from(store):
    text = f"SELECT ?age FROM <{G1}> WHERE {{ ?s <{EX}age> ?age }}"
    assert [r["age"].value for r in store.query(text)] == ["30"]
    assert [r["age"].value for r in store.query(text, default_graph_uris=[G2])] == ["40"]
    named = "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert [r["g"].value for r in store.query(named, named_graph_uris=[G2])] == [G2]
    # Only named graphs given: the default graph is empty.
    assert list(store.query("SELECT * WHERE { ?s ?p ?o }", named_graph_uris=[G2])) == []


def test_base_iri_resolves_relative_iris(store):
    assert store.query("ASK { <alice> <knows> <bob> }", base_iri=EX).boolean is True


# --------------------------------------------------------------------------- query errors


def test_syntax_error_is_located(store):
    with pytest.raises(QuerySyntaxError) as raised:
        store.query("SELECT * WHERE {\n  ?s ?p \n}")
    assert raised.value.line == 3


def test_stream_queries_are_refused_with_a_hint(store):
    with pytest.raises(QuerySyntaxError) as raised:
        store.query("SELECT * WHERE { STREAM <http://s> [RANGE 1s] { ?a ?b ?c } }")
    assert "/queries/" in str(raised.value)


def test_relative_iri_without_base_is_located(store):
    with pytest.raises(QuerySyntaxError) as raised:
        store.query("SELECT * WHERE {\n ?s <knows> ?o }")
    assert (raised.value.line, raised.value.column) == (2, 5)
    assert "base" in str(raised.value)


def test_extension_aggregate_is_refused(store):
    with pytest.raises(QuerySyntaxError) as raised:
        store.query("SELECT (MEDIAN(?o) AS ?m) WHERE { ?s ?p ?o }")
    assert "continuous" in str(raised.value) and raised.value.column == 9


@pytest.mark.parametrize("timeout", [None, 10])
def test_unknown_function_is_the_query_fault(store, timeout):
    with pytest.raises(QuerySyntaxError) as raised:
        store.query("SELECT * WHERE { ?s ?p ?o FILTER(<http://ex.org/f>(?o)) }", timeout=timeout)
    assert raised.value.column == 34


def test_service_needs_remote_access(store):
    text = "SELECT * WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }"
    with pytest.raises(RemoteAccessError):
        store.query(text)
    # Allowed, SILENT turns the (refused) call into one empty solution, without any network traffic.
    silent = text.replace("SERVICE", "SERVICE SILENT")
    assert len(list(store.query(silent, allow_remote=True))) == 1


def test_solutions_are_the_query_s_read_one_at_a_time(store):
    # What a cache build reads: the same solutions as the one-shot query, the same checks.
    text = "SELECT ?s ?o WHERE { ?s ?p ?o }"
    rows = {(solution["s"], solution["o"]) for solution in store.query(text)}
    assert rows and {(solution["s"], solution["o"]) for solution in store.solutions(text)} == rows
    with pytest.raises(RemoteAccessError):
        store.solutions("SELECT * WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }")


def test_invalid_dataset_iri(store):
    with pytest.raises(InvalidGraphName, match="invalid graph IRI <not an iri> in the request's dataset"):
        store.query("SELECT * WHERE { ?s ?p ?o }", default_graph_uris=["not an iri"])


# --------------------------------------------------------------------------- timeouts


EXPENSIVE = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f } ORDER BY ?c ?f ?a ?d"


@pytest.fixture
def big_store():
    with open_store() as store:
        values = " ".join(f"<{EX}s{i}>" for i in range(3000))
        store.update(f"INSERT {{ ?s <{EX}p> ?n }} WHERE {{ VALUES ?s {{ {values} }} BIND(STRLEN(STR(?s)) AS ?n) }}")
        yield store


def test_timeout_really_stops_the_query(big_store):
    before = children()
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError):
        big_store.query(EXPENSIVE, timeout=1)
    elapsed = time.monotonic() - started
    assert 1 <= elapsed < 3
    assert children() == before  # killed and reaped: no process, no zombie


ORPHANED_PARENT = f"""
import os, sys, threading, time
sys.path.insert(0, {str(TESTS)!r})
from processes import children, children_settle
from cqels_endpoint.oxigraph.requests import open_store

def die():
    time.sleep(0.5)
    print(" ".join(map(str, children())), flush=True)
    os.kill(os.getpid(), 9)

store = open_store()
values = " ".join(f"<{EX}s{{i}}>" for i in range(3000))
store.update(f"INSERT {{{{ ?s <{EX}p> 1 }}}} WHERE {{{{ VALUES ?s {{{{ {{values}} }}}} }}}}")
threading.Thread(target=die).start()
store.query({EXPENSIVE!r}, timeout=1)
"""


def test_a_child_outliving_its_parent_ends_itself(tmp_path):
    # The server is SIGKILLed while a query runs: the child must not run on past its deadline.
    output = tmp_path / "children.txt"
    with output.open("w") as sink:  # a file, not a pipe: an orphan holding a pipe would block the read
        subprocess.run([sys.executable, "-c", ORPHANED_PARENT], stdout=sink, timeout=60)
    orphans = [int(pid) for pid in output.read_text().split()]
    assert len(orphans) == 1
    try:
        give_up = time.monotonic() + 5
        while time.monotonic() < give_up and _alive(orphans[0]):
            time.sleep(0.1)
        assert not _alive(orphans[0])
    finally:
        if _alive(orphans[0]):
            os.kill(orphans[0], signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its reaping is left to init


def test_timeout_result_equals_in_process_result(store):
    before = children()
    text = f"SELECT ?s ?name WHERE {{ ?s <{EX}name> ?name }} ORDER BY ?name"
    forked = store.query(text, timeout=10)
    local = store.query(text)
    for media_type in RESULTS_MEDIA_TYPES:
        assert forked.serialize(media_type) == local.serialize(media_type)
    assert store.query("ASK { ?s ?p ?o }", timeout=10).boolean is True
    graph = f"CONSTRUCT WHERE {{ ?s <{EX}name> ?n }}"
    assert set(store.query(graph, timeout=10)) == set(store.query(graph))
    assert children_settle(before) == before


def test_timeout_on_disk_store(tmp_path):
    with open_store(tmp_path / "data") as store:
        store.update(DATA)
        assert len(list(store.query("SELECT * WHERE { ?s ?p ?o }", timeout=10))) == 3
        store.update(f"INSERT DATA {{ <{EX}x> <{EX}p> 1 }}")
        assert len(list(store.query("SELECT * WHERE { ?s ?p ?o }", timeout=10))) == 4


def test_a_child_deadlocked_on_an_inherited_lock_is_forked_again():
    # A lock another thread holds at fork time stays held forever in the child (as a RocksDB
    # background thread's mutex would): the child is replaced until the lock is free at fork time.
    before = children()
    held = threading.Lock()
    held.acquire()
    threading.Timer(0.3, held.release).start()

    def evaluate() -> bytes:
        with held:
            return b"evaluated"

    started = time.monotonic()
    assert evaluate_in_child(evaluate, 5) == b"evaluated"
    assert time.monotonic() - started < 2
    assert children_settle(before) == before


STREAMING_RUNAWAY = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # 3000^3 rows, produced as it goes


def test_a_streaming_query_is_stopped_in_process(big_store, monkeypatch):
    def no_fork():
        raise AssertionError("a query whose rows stream must not fork")

    monkeypatch.setattr(os, "fork", no_fork)
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError, match="longer than 1 s"):
        big_store.query(STREAMING_RUNAWAY, timeout=1)
    assert 1 <= time.monotonic() - started < 2


def test_lookups_answer_while_a_runaway_runs(big_store):
    # The runaway (ORDER BY: nothing before its end) runs in a child; lookups never wait for it.
    before = children()
    outcome = []

    def runaway():
        started = time.monotonic()
        try:
            big_store.query(EXPENSIVE, timeout=2)
        except QueryTimeoutError:
            outcome.append(time.monotonic() - started)

    thread = threading.Thread(target=runaway)
    thread.start()
    lookups = []
    while thread.is_alive():
        started = time.monotonic()
        assert big_store.query(f"ASK {{ <{EX}s7> <{EX}p> ?n }}", timeout=2).boolean is True
        lookups.append(time.monotonic() - started)
        time.sleep(0.02)
    thread.join()
    assert outcome and 2 <= outcome[0] < 3
    assert len(lookups) > 20
    assert max(lookups) < 0.5  # far from the runaway's 2 s: nothing queued behind it
    assert children() == before


def test_zero_timeout_means_none(store):
    assert store.query("ASK { ?s ?p ?o }", timeout=0).boolean is True


# --------------------------------------------------------------------------- update


def test_update_errors_are_located(store):
    with pytest.raises(UpdateError) as raised:
        store.update(f"CLEAR GRAPH <{G1}> ;\nDROP GRAPH <{EX}missing>")
    assert (raised.value.line, raised.value.column) == (2, 1)
    assert raised.value.to_json()["line"] == 2
    assert store.query(f"ASK {{ GRAPH <{G1}> {{ ?s ?p ?o }} }}").boolean  # the CLEAR was undone
    assert store.update(f"DROP SILENT GRAPH <{EX}missing>") is None


def test_update_syntax_and_relative_iris(store):
    with pytest.raises(QuerySyntaxError):
        store.update("INSERT DATA { <http://a> <http://b> }")
    with pytest.raises(QuerySyntaxError) as raised:
        store.update("INSERT DATA { <a> <http://b> <http://c> }")
    assert "base" in str(raised.value)
    event = store.update("INSERT DATA { <a> <b> <c> }", base_iri=EX)
    assert event is not None and store.query(f"ASK {{ <{EX}a> <{EX}b> <{EX}c> }}").boolean


def test_insert_data_blank_nodes_are_fresh_per_request(store):
    for _ in range(2):
        store.update(f"INSERT DATA {{ _:b <{EX}tag> 1 }}")
    assert len({row["s"] for row in store.query(f"SELECT ?s WHERE {{ ?s <{EX}tag> 1 }}")}) == 2


def test_ill_formed_or_unbound_template_quads_are_skipped(store):
    # ?name is a literal (cannot be a subject), ?friend is unbound for :bob: only :alice's quad is made.
    request = f"""INSERT {{ ?name <{EX}of> ?s . ?s <{EX}friend> ?friend }}
                  WHERE {{ ?s <{EX}name> ?name OPTIONAL {{ ?s <{EX}knows> ?friend }} }}"""
    event = store.update(request)
    assert [(c.graph, c.added) for c in event.changes] == [(None, 1)]
    assert store.query(f"ASK {{ <{EX}alice> <{EX}friend> <{EX}bob> }}").boolean


def test_update_with_protocol_dataset(store):
    request = f"INSERT {{ GRAPH <{EX}out> {{ ?s <{EX}had> ?age }} }} WHERE {{ ?s <{EX}age> ?age }}"
    event = store.update(request, using_graph_uris=[G2])
    assert [(c.graph, c.added) for c in event.changes] == [(EX + "out", 1)]
    with pytest.raises(UpdateError) as raised:
        store.update(f"WITH <{G1}> DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}", using_named_graph_uris=[G2])
    assert "twice" in str(raised.value)


def test_update_using_and_with(store):
    # WITH names the graph of the templates and the WHERE; USING overrides it for the WHERE only.
    request = f"WITH <{G1}> INSERT {{ ?s <{EX}copied> ?age }} USING <{G2}> WHERE {{ ?s <{EX}age> ?age }}"
    event = store.update(request)
    assert [(c.graph, c.added) for c in event.changes] == [(G1, 1)]
    assert store.query(f"ASK {{ GRAPH <{G1}> {{ <{EX}bob> <{EX}copied> 40 }} }}").boolean


def test_load_policies(store, tmp_path):
    document = tmp_path / "more.nt"
    document.write_text(f'<{EX}x> <{EX}p> "1" .\n', encoding="utf-8")
    with pytest.raises(RemoteAccessError):
        store.update(f"LOAD <{document.as_uri()}>")
    with pytest.raises(RemoteAccessError):
        store.update("LOAD <http://127.0.0.1:1/data.ttl>")
    assert store.update("LOAD SILENT <http://127.0.0.1:1/data.ttl>") is None
    with pytest.raises(UpdateError):
        store.update("LOAD <ftp://example.org/data.ttl>")
    event = store.update(f"LOAD <{document.as_uri()}> INTO GRAPH <{EX}loaded>", allow_files=True)
    assert [(c.graph, c.added) for c in event.changes] == [(EX + "loaded", 1)]


def test_load_of_malformed_document_is_undone(store, tmp_path):
    document = tmp_path / "bad.ttl"
    document.write_text(f"<{EX}x> <{EX}p> .\n", encoding="utf-8")
    size = len(store)
    with pytest.raises(RdfSyntaxError) as raised:
        store.update(f"INSERT DATA {{ <{EX}y> <{EX}p> 1 }} ; LOAD <{document.as_uri()}>", allow_files=True)
    assert raised.value.line == 1 and len(store) == size


@pytest.mark.parametrize("graph", [None, EX + "loaded"])
def test_a_malformed_document_loaded_alone_writes_nothing(store, tmp_path, graph):
    # One LOAD of triples is pyoxigraph's one transaction: the error names the line, nothing is written.
    document = tmp_path / "bad.nt"
    document.write_text(f"<{EX}x> <{EX}p> \"1\" .\n<{EX}x> <{EX}p> .\n", encoding="utf-8")
    before, named = set(store), store.named_graphs()
    into = "" if graph is None else f" INTO GRAPH <{graph}>"
    with pytest.raises(RdfSyntaxError) as raised:
        store.update(f"LOAD <{document.as_uri()}>{into}", allow_files=True)
    assert raised.value.line == 2 and f"document <{document.as_uri()}>" in str(raised.value)
    assert store.update(f"LOAD SILENT <{document.as_uri()}>{into}", allow_files=True) is None
    assert set(store) == before and store.named_graphs() == named


def test_a_document_of_no_triples_loaded_alone_makes_the_graph(store, tmp_path):
    document = tmp_path / "empty.ttl"
    document.write_text("# nothing\n", encoding="utf-8")
    assert store.update(f"LOAD <{document.as_uri()}> INTO GRAPH <{EX}empty>", allow_files=True) is None
    assert store.has_graph(EX + "empty")


def test_service_in_update_needs_remote_access(store):
    with pytest.raises(RemoteAccessError):
        store.update("INSERT { ?s ?p ?o } WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }")


# --------------------------------------------------------------------------- Graph Store Protocol operations


def test_gsp_get_and_has(store):
    assert store.has_graph(None) and store.has_graph(G1) and not store.has_graph(EX + "nope")
    assert store.named_graphs() == [G1, G2]
    turtle = store.get_graph(G1, "text/turtle")
    assert {q.triple for q in ox.parse(turtle, format=ox.RdfFormat.TURTLE)} == {
        ox.Triple(ox.NamedNode(EX + "alice"), ox.NamedNode(EX + "age"), ox.Literal("30", datatype=ox.NamedNode(
            "http://www.w3.org/2001/XMLSchema#integer")))
    }
    quads = list(ox.parse(store.get_graph(G1, "application/n-quads"), format=ox.RdfFormat.N_QUADS))
    assert [q.graph_name for q in quads] == [ox.NamedNode(G1)]
    with pytest.raises(GraphNotFound):
        store.get_graph(EX + "nope", "text/turtle")
    with pytest.raises(UnsupportedMediaType):
        store.get_graph(G1, "image/png")


def test_gsp_put_post_delete(store):
    created, _ = store.put_graph(EX + "new", b"<a> <b> <c> .", "text/turtle", base_iri=EX)
    assert created and store.query(f"ASK {{ GRAPH <{EX}new> {{ <{EX}a> <{EX}b> <{EX}c> }} }}").boolean
    created, _ = store.post_graph(EX + "new", b"<a> <b> <d> .", "text/turtle", base_iri=EX)
    assert not created and len(list(store.query(f"SELECT * {{ GRAPH <{EX}new> {{ ?s ?p ?o }} }}"))) == 2
    created, event = store.put_graph(None, b"", "text/turtle")
    assert not created and event.changes[0].removed == 3  # the default graph had content
    created, _ = store.post_graph(None, b"<a> <b> <c> .", "text/turtle", base_iri=EX)
    assert created  # the default graph always exists, but was empty: its content is new
    created, _ = store.post_graph(None, b"<a> <b> <d> .", "text/turtle", base_iri=EX)
    assert not created
    created, _ = store.put_graph(None, b"<a> <b> <e> .", "text/turtle", base_iri=EX)
    assert not created
    store.delete_graph(EX + "new")
    assert not store.has_graph(EX + "new")
    with pytest.raises(GraphNotFound):
        store.delete_graph(EX + "new")


def test_gsp_blank_nodes_are_fresh_per_request(store):
    store.post_graph(G1, b"_:x <http://p> <http://o> .", "application/n-triples")
    store.post_graph(G1, b"_:x <http://p> <http://o> .", "application/n-triples")
    assert len(list(store.query(f"SELECT * {{ GRAPH <{G1}> {{ ?s <http://p> ?o }} }}"))) == 2


def test_gsp_malformed_rdf_writes_nothing(store):
    version, size = store.version, len(store)
    body = b'<http://a> <http://p> "1" .\n<http://a> <http://p> "2 .\n'
    with pytest.raises(RdfSyntaxError) as raised:
        store.put_graph(G1, body, "text/turtle")
    assert raised.value.line == 2 and raised.value.column is not None
    assert "line 2" in str(raised.value)
    assert raised.value.to_json()["line"] == 2
    assert (store.version, len(store)) == (version, size)


def test_gsp_refuses_named_graphs_in_a_graph_body(store):
    with pytest.raises(RdfSyntaxError) as raised:
        store.post_graph(G1, b"<http://g> { <http://a> <http://p> <http://o> }", "application/trig")
    assert "named graphs" in str(raised.value)


def test_gsp_unsupported_body_and_invalid_graph(store):
    with pytest.raises(UnsupportedMediaType):
        store.post_graph(G1, b"{}", "application/x-unknown")
    with pytest.raises(InvalidGraphName, match="invalid graph IRI <not an iri>"):
        store.has_graph("not an iri")


# --------------------------------------------------------------------------- on disk


def test_disk_store_survives_reopen(tmp_path):
    path = tmp_path / "data"
    with open_store(path) as store:
        store.update(DATA)
        store.update(f"CREATE GRAPH <{EX}empty>")
        version = store.version
    with open_store(path) as reopened:
        assert len(reopened) == 5
        assert reopened.named_graphs() == [EX + "empty", G1, G2]
        assert reopened.version == version == 1 and reopened.graph_version(G1) == 1
        event = reopened.update(f"INSERT DATA {{ <{EX}x> <{EX}p> 1 }}")
        assert event.version == version + 1  # versions keep growing across restarts


def test_one_process_at_a_time_per_data_directory(tmp_path):
    with open_store(tmp_path / "data"):
        with pytest.raises(StoreError) as raised:
            open_store(tmp_path / "data")
        assert "another cqels process" in str(raised.value)


def test_closed_store_refuses_work(tmp_path):
    store = open_store()
    store.close()
    with pytest.raises(StoreError):
        len(store)
