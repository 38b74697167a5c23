"""The store's fast write paths against its general ones, which the W3C update suites check.

INSERT DATA / DELETE DATA requests parsed by pyoxigraph alone, and large Graph Store Protocol POSTs
merged by pyoxigraph and counted by graph sizes, must leave the same store and report the same
change events as the project's own update engine and its quad-by-quad merge. The version log must
give back after a restart what the store reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import static_store.store as store_module
from cqels_endpoint.errors import QuerySyntaxError, RdfSyntaxError
from cqels_endpoint.oxigraph.requests import open_store
from static_store import StaticStore
from static_store.events import GraphChange
from static_store.shape import UpdateShape

EX = "http://example.org/"
SUBJECTS = [f"<{EX}s{i}>" for i in range(3)] + ["ex:s3"]
OBJECTS = [f"<{EX}o{i}>" for i in range(2)] + ['"x"', '"x"@en', "42", "4.2e1", "true", "ex:o2"]
GRAPHS = [None, f"<{EX}g1>", "ex:g2"]


@st.composite
def data_requests(draw):
    """An INSERT DATA or DELETE DATA request of one to three operations over a small vocabulary."""
    kind = draw(st.sampled_from(["INSERT", "DELETE"]))
    operations = []
    for _ in range(draw(st.integers(1, 3))):
        blocks: dict = {}
        for _ in range(draw(st.integers(0, 4))):
            subject = draw(st.sampled_from(SUBJECTS + (["_:b", "[]"] if kind == "INSERT" else [])))
            triple = f"{subject} ex:p{draw(st.integers(0, 1))} {draw(st.sampled_from(OBJECTS))} ."
            blocks.setdefault(draw(st.sampled_from(GRAPHS)), []).append(triple)
        body = " ".join(
            " ".join(triples) if graph is None else f"GRAPH {graph} {{ {' '.join(triples)} }}"
            for graph, triples in blocks.items()
        )
        operations.append(f"{kind} DATA {{ {body} }}")
    return f"PREFIX ex: <{EX}>\n" + " ;\n".join(operations)


def _without_blank_labels(store: StaticStore) -> list[str]:
    return sorted(str(q) if not isinstance(q.subject, ox.BlankNode) else f"_ {q.predicate} {q.object} {q.graph_name}"
                  for q in store)


def _summary(event):
    return None if event is None else (event.version, event.changes)


def _outcome(store: StaticStore, text: str):
    """The change event of an update, or the error it raised."""
    try:
        return _summary(store.update(text))
    except QuerySyntaxError as error:
        return str(error)


@settings(max_examples=150, deadline=None)
@given(st.lists(data_requests(), min_size=1, max_size=6))
def test_data_requests_match_the_update_engine(requests):
    with open_store() as fast, open_store() as general:
        for text in requests:
            fast_outcome = _outcome(fast, text)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(store_module, "update_shape", lambda _: UpdateShape(None, ()))
                assert _outcome(general, text) == fast_outcome
        assert _without_blank_labels(fast) == _without_blank_labels(general)
        assert fast.named_graphs() == general.named_graphs()


def test_a_bad_data_request_is_located_and_writes_nothing():
    with open_store() as store:
        with pytest.raises(QuerySyntaxError) as raised:
            store.update(f"INSERT DATA {{\n  <{EX}a> <{EX}p> 1 .\n  <{EX}a> <{EX}p> ?x }}")
        assert raised.value.lineno == 3
        with pytest.raises(QuerySyntaxError):
            store.update(f"DELETE DATA {{ _:b <{EX}p> 1 }}")  # no blank nodes in DELETE DATA
        assert len(store) == 0 and store.version == 0


def _ntriples(count: int, offset: int = 0) -> bytes:
    lines = (f'<{EX}s{i}> <{EX}p> "value {i}" .\n' for i in range(offset, offset + count))
    return ("".join(lines) + f'_:b <{EX}p> "blank" .\n').encode()


WRITES = {
    "post": [_ntriples(500), _ntriples(500, 250), _ntriples(0), _ntriples(500)],
}


@pytest.mark.parametrize("verb", sorted(WRITES))
@pytest.mark.parametrize("graph", [None, EX + "g"])
def test_large_bodies_match_the_quad_by_quad_writes(verb, graph, monkeypatch):
    def write_all(store: StaticStore):
        write = store.post_graph if verb == "post" else store.put_graph
        return [(created, _summary(event)) for created, event in
                (write(graph, body, "application/n-triples") for body in WRITES[verb])]

    with open_store() as general:
        expected = write_all(general)
        contents = _without_blank_labels(general)
    monkeypatch.setattr(store_module, "LARGE_BODY_BYTES", 0)
    with open_store() as large:
        assert write_all(large) == expected
        assert _without_blank_labels(large) == contents


# Literals N-Triples escapes (quote, backslash, line breaks, a control character, non-ASCII) that the
# SPARQL Update built from them must read back the same.
_PUT_OBJECTS = [f"<{EX}o0>", f"<{EX}é/ü>", '"x"', '"x"@en', '"say \\"hi\\" \\\\ done"', '"two\\nlines\\r\\t"',
                '"bell\\u0007"', '"日本 ✓"', f'"1"^^<{EX}type>', '"%s"']
_put_triples = st.lists(
    st.tuples(st.sampled_from([f"<{EX}s0>", f"<{EX}s1>", "_:b"]), st.sampled_from(_PUT_OBJECTS)),
    max_size=6,
).map(lambda triples: "".join(f"{s} <{EX}p> {o} .\n" for s, o in triples).encode())


@pytest.mark.parametrize("media_type", ["application/n-triples", "application/n-quads"])
@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, EX + "g"]), _put_triples), min_size=1, max_size=6))
def test_puts_replace_a_graph_as_a_model_of_sets_says(media_type, puts):
    """PUTs of triples, in a triple syntax or as a dataset syntax's default graph, both taken by
    ``replace.replace_graph`` in one transaction, against a model: a graph is a set of triples, blank
    nodes fresh in each body; a PUT creates a named graph it does not find (the default graph: when
    it is empty) and changes ``new - old`` in, ``old - new`` out, one change event if any."""
    prelude = f"<{EX}s0> <{EX}p> <{EX}o0> .".encode()
    with open_store() as store:
        store.post_graph(EX + "other", prelude, "application/n-triples")
        outcomes = [(created, _summary(event)) for created, event in
                    (store.put_graph(graph, body, media_type) for graph, body in puts)]
        expected_outcomes, graphs = _modelled_puts(prelude, puts)
        assert outcomes == expected_outcomes
        assert _without_blank_labels(store) == sorted(
            _label_free(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph() if g is None else ox.NamedNode(g)))
            for g, triples in graphs.items() for t in triples
        )
        assert set(store.named_graphs()) == {g for g in graphs if g is not None}


def _label_free(quad: ox.Quad) -> str:
    """A quad as ``_without_blank_labels`` writes it."""
    return f"_ {quad.predicate} {quad.object} {quad.graph_name}" if isinstance(quad.subject, ox.BlankNode) else str(quad)


def _triples(body: bytes) -> set[ox.Triple]:
    return set(ox.parse(body, format=ox.RdfFormat.N_TRIPLES, rename_blank_nodes=True))


def _modelled_puts(prelude: bytes, puts) -> tuple[list, dict[str | None, set[ox.Triple]]]:
    """The outcome of each PUT, and the graphs' contents after them, by the model."""
    graphs: dict[str | None, set[ox.Triple]] = {None: set(), EX + "other": _triples(prelude)}
    version, outcomes = 1, []  # the POST of the prelude made version 1
    for graph, body in puts:
        old, new = graphs.get(graph, set()), _triples(body)
        created = graph not in graphs if graph is not None else not old
        graphs[graph] = new
        added, removed = len(new - old), len(old - new)
        if added or removed:
            version += 1
            outcomes.append((created, (version, (GraphChange(graph, added, removed),))))
        else:
            outcomes.append((created, None))
    return outcomes, graphs


def test_a_malformed_large_post_writes_nothing(monkeypatch):
    monkeypatch.setattr(store_module, "LARGE_BODY_BYTES", 0)
    with open_store() as store:
        with pytest.raises(RdfSyntaxError) as raised:
            store.post_graph(EX + "g", _ntriples(100) + b"<oops> .\n", "application/n-triples")
        assert raised.value.line == 102
        assert len(store) == 0 and store.version == 0 and not store.has_graph(EX + "g")


# --------------------------------------------------------------------------- the version log


def test_versions_survive_a_restart_through_the_log(tmp_path):
    with open_store(tmp_path) as store:
        store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}")
        store.update(f"INSERT DATA {{ GRAPH <{EX}g> {{ <{EX}a> <{EX}p> 2 }} }}")
        store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 3 }}")
        # Opening and each commit appended a line; the snapshot is written when the store opens and closes only.
        assert len((tmp_path / "versions.log").read_text().splitlines()) == 4
        assert json.loads((tmp_path / "versions.json").read_text())["version"] == 0
    with open_store(tmp_path) as store:
        assert (store.version, store.graph_version(None), store.graph_version(EX + "g")) == (3, 3, 2)


def test_a_line_cut_short_by_a_crash_is_ignored(tmp_path):
    with open_store(tmp_path) as store:
        store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}")
    (tmp_path / "versions.log").write_text('{"v": 2, "g": [null]}\n{"v": 3, "g"')
    with open_store(tmp_path) as store:
        # Version 2 from the log, then a new version for every graph: the store was not closed.
        assert (store.version, store.graph_version(None)) == (3, 3)


def test_a_log_older_than_the_snapshot_moves_nothing_back(tmp_path):
    # A crash between writing the snapshot and emptying the log leaves lines the snapshot holds.
    with open_store(tmp_path) as store:
        for value in range(3):
            store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> {value} }}")
    (tmp_path / "versions.log").write_text('{"v": 1, "g": [null]}\n')
    with open_store(tmp_path) as store:
        # 3 from the snapshot, then a new version: a log left behind means the store was not closed.
        assert (store.version, store.graph_version(None)) == (4, 4)


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="resident memory is read from Linux /proc")
def test_memory_goes_back_after_a_large_write(tmp_path):
    body = _ntriples(300_000)
    with open_store(tmp_path / "data") as store:
        store.post_graph(EX + "g", b"", "application/n-triples")  # the store's own baseline allocations
        before = _rss_mib()
        event = store.post_graph(EX + "g", body, "application/n-triples")[1]
        assert event.changes[0].added == 300_001
        # Unflushed, pyoxigraph keeps the transaction's 300k quads in memory: ~270 MiB more.
        assert _rss_mib() - before < 100
