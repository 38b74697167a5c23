"""Bulk load: every RDF syntax, exact counts, all-or-nothing, progress bar, and ``cqels load``."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from cqels_endpoint.cli import EXIT_BAD_INPUT, EXIT_OK, main
from cqels_endpoint.errors import RdfSyntaxError, StoreError, UnsupportedMediaType
from cqels_endpoint.oxigraph.requests import open_store
from static_store.convert import graph_name

EX = "http://example.org/"
G = EX + "g"

# One dataset: two default-graph triples (one with a blank node) and one triple in <g>.
QUADS = [
    ox.Quad(ox.NamedNode(EX + "a"), ox.NamedNode(EX + "p"), ox.Literal("1")),
    ox.Quad(ox.NamedNode(EX + "a"), ox.NamedNode(EX + "q"), ox.BlankNode("b")),
    ox.Quad(ox.NamedNode(EX + "a"), ox.NamedNode(EX + "p"), ox.Literal("2"), ox.NamedNode(G)),
]
TRIPLE_SYNTAXES = {".nt": ox.RdfFormat.N_TRIPLES, ".ttl": ox.RdfFormat.TURTLE, ".rdf": ox.RdfFormat.RDF_XML,
                   ".owl": ox.RdfFormat.RDF_XML, ".xml": ox.RdfFormat.RDF_XML, ".jsonld": ox.RdfFormat.JSON_LD}
DATASET_SYNTAXES = {".nq": ox.RdfFormat.N_QUADS, ".trig": ox.RdfFormat.TRIG}


def write(path: Path, quads, fmt: ox.RdfFormat) -> Path:
    path.write_bytes(ox.serialize(quads, format=fmt) if fmt.supports_datasets else
                     ox.serialize([q.triple for q in quads], format=fmt))
    return path


def canonical(quads) -> ox.Dataset:
    dataset = ox.Dataset(quads)
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return dataset


def counts(event) -> dict:
    return {c.graph: (c.added, c.removed) for c in event.changes}


@pytest.fixture
def store():
    with open_store() as store:
        yield store


@pytest.mark.parametrize("extension", list(TRIPLE_SYNTAXES))
def test_triple_syntaxes_by_extension(store, tmp_path, extension):
    default_triples = QUADS[:2]
    path = write(tmp_path / f"data{extension}", default_triples, TRIPLE_SYNTAXES[extension])
    assert counts(store.load(path)) == {None: (2, 0)}
    assert canonical(store) == canonical(default_triples)
    # Into a named graph: the same triples again, now in <g>.
    assert counts(store.load(path, graph=G)) == {G: (2, 0)}
    assert len(store) == 4


@pytest.mark.parametrize("extension", list(DATASET_SYNTAXES))
def test_dataset_syntaxes_keep_their_graphs(store, tmp_path, extension):
    path = write(tmp_path / f"data{extension}", QUADS, DATASET_SYNTAXES[extension])
    assert counts(store.load(path)) == {None: (2, 0), G: (1, 0)}
    assert canonical(store) == canonical(QUADS)


def test_graph_option_takes_only_the_default_graph_of_a_dataset(store, tmp_path):
    path = write(tmp_path / "data.nq", QUADS, ox.RdfFormat.N_QUADS)
    other = EX + "other"
    assert counts(store.load(path, graph=other)) == {G: (1, 0), other: (2, 0)}
    assert store.named_graphs() == [G, other]


def test_counts_are_exact(store, tmp_path):
    path = tmp_path / "dups.nt"
    path.write_text(f'<{EX}a> <{EX}p> "1" .\n' * 3 + f'<{EX}a> <{EX}p> "2" .\n', encoding="utf-8")
    store.update(f'INSERT DATA {{ <{EX}a> <{EX}p> "2" }}')
    assert counts(store.load(path)) == {None: (1, 0)}  # one duplicated line, one already present
    assert store.load(path) is None


def test_blank_nodes_are_fresh_per_load(store, tmp_path):
    path = write(tmp_path / "b.nt", QUADS[1:2], ox.RdfFormat.N_TRIPLES)
    store.load(path)
    assert counts(store.load(path)) == {None: (1, 0)}


def test_relative_iris_resolve_against_the_file(store, tmp_path):
    path = tmp_path / "rel.ttl"
    path.write_text('<#me> <#name> "me" .', encoding="utf-8")
    store.load(path)
    assert store.query(f'ASK {{ <{path.resolve().as_uri()}#me> ?p "me" }}').boolean
    store.load(path, base_iri=EX)
    assert store.query(f'ASK {{ <{EX}#me> ?p "me" }}').boolean


def test_malformed_file_writes_nothing(store, tmp_path):
    path = tmp_path / "bad.nt"
    path.write_text("".join(f'<{EX}s{i}> <{EX}p> "{i}" .\n' for i in range(1000)) + f"<{EX}x> <{EX}p> .\n",
                    encoding="utf-8")
    with pytest.raises(RdfSyntaxError) as raised:
        store.load(path)
    assert raised.value.line == 1001 and raised.value.column is not None
    assert "bad.nt" in str(raised.value) and "line 1001" in str(raised.value)
    assert len(store) == 0 and store.version == 0


class _WritesThenFails:
    """A pyoxigraph store whose bulk loader writes the quads before a document's first bad line and
    then fails, as pyoxigraph's loader may (it writes as it parses, without a transaction); every
    other call goes to the real store. ``loads`` counts its bulk loads."""

    def __init__(self, store: ox.Store):
        self._store = store
        self.loads = 0

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self):
        return iter(self._store)

    def bulk_load(self, input, format, base_iri, to_graph):
        self.loads += 1
        good = input.read().split(b"<bad>")[0]
        self._store.bulk_load(good, format=format, base_iri=base_iri, to_graph=to_graph)
        line = good.count(b"\n") + 1
        raise SyntaxError(f"Parser error at line {line} column 1: bad")


def _failing_document(tmp_path: Path, extension: str, quads: str) -> Path:
    path = tmp_path / f"bad.{extension}"
    path.write_text(quads + "<bad> .\n", encoding="utf-8")
    return path


def test_a_load_into_empty_graphs_that_fails_midway_is_emptied_again(store, tmp_path):
    store.update(f"CREATE GRAPH <{EX}empty> ; INSERT DATA {{ GRAPH <{EX}other> {{ <{EX}a> <{EX}p> 1 }} }}")
    before, version = frozenset(store), store.version
    loader = store._store = _WritesThenFails(store._store)
    triples = _failing_document(tmp_path, "nt", f"<{EX}s> <{EX}p> <{EX}o> .\n")
    for graph in (EX + "empty", EX + "new", None):
        with pytest.raises(RdfSyntaxError, match="line 2"):
            store.load(triples, graph=graph)
    assert loader.loads == 3  # parsed once each, by the loader
    assert frozenset(store) == before and store.version == version
    assert store.named_graphs() == [EX + "empty", EX + "other"]


def test_a_dataset_load_into_an_empty_store_that_fails_midway_is_emptied_again(store, tmp_path):
    store.update(f"CREATE GRAPH <{EX}empty>")
    loader = store._store = _WritesThenFails(store._store)
    quads = f"<{EX}s> <{EX}p> <{EX}o> <{EX}empty> .\n<{EX}s> <{EX}p> <{EX}o> <{EX}new> .\n<{EX}s> <{EX}p> <{EX}o> .\n"
    with pytest.raises(RdfSyntaxError, match="line 4"):
        store.load(_failing_document(tmp_path, "nq", quads))
    assert loader.loads == 1
    assert len(store) == 0 and store.named_graphs() == [EX + "empty"] and store.version == 0


def test_a_load_into_a_graph_holding_data_is_parsed_before_it_writes(store, tmp_path):
    store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}")
    before = frozenset(store)
    loader = store._store = _WritesThenFails(store._store)
    with pytest.raises(RdfSyntaxError, match="line 2"):
        store.load(_failing_document(tmp_path, "nt", f"<{EX}s> <{EX}p> <{EX}o> .\n"))
    assert loader.loads == 0 and frozenset(store) == before  # the first parse found the bad line


def test_bytes_need_a_media_type(store):
    data = f'<{EX}a> <{EX}p> "1" .'.encode()
    assert counts(store.load(data, media_type="text/turtle", graph=G)) == {G: (1, 0)}
    with pytest.raises(StoreError):
        store.load(data)


def test_unknown_extension_and_missing_file(store, tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n", encoding="utf-8")
    with pytest.raises(UnsupportedMediaType) as raised:
        store.load(path)
    assert ".ttl" in str(raised.value)
    with pytest.raises(RdfSyntaxError):
        store.load(path, media_type="application/n-triples")  # the media type wins over the extension
    with pytest.raises(FileNotFoundError):
        store.load(tmp_path / "missing.ttl")


def test_empty_file_into_a_graph_creates_it(store, tmp_path):
    path = tmp_path / "empty.ttl"
    path.write_text("", encoding="utf-8")
    assert store.load(path, graph=G) is None
    assert store.has_graph(G)


def test_progress_bar(store, tmp_path, capsys):
    path = write(tmp_path / "data.nt", QUADS[:2], ox.RdfFormat.N_TRIPLES)
    store.load(path, progress=True)
    assert "loading data.nt" in capsys.readouterr().err


def test_loaded_data_survives_restart(tmp_path):
    path = write(tmp_path / "data.nq", QUADS, ox.RdfFormat.N_QUADS)
    with open_store(tmp_path / "store") as store:
        store.load(path)
    with open_store(tmp_path / "store") as reopened:
        assert canonical(reopened) == canonical(QUADS)


# --------------------------------------------------------------------------- cqels load


def test_cli_load(tmp_path, capsys):
    path = write(tmp_path / "data.ttl", QUADS[:2], ox.RdfFormat.TURTLE)
    data_dir = tmp_path / "data-dir"
    assert main(["load", str(path), "--graph", G, "--data-dir", str(data_dir)]) == EXIT_OK
    assert f"2 new quads into <{G}>" in capsys.readouterr().out
    with open_store(data_dir) as store:
        assert store.named_graphs() == [G] and len(store) == 2


def test_cli_load_env_twin_and_default_directory(tmp_path, monkeypatch):
    path = write(tmp_path / "data.nt", QUADS[:1], ox.RdfFormat.N_TRIPLES)
    monkeypatch.setenv("CQELS_DATA_DIR", str(tmp_path / "from-env"))
    assert main(["load", str(path), "--quiet"]) == EXIT_OK
    monkeypatch.delenv("CQELS_DATA_DIR")
    monkeypatch.chdir(tmp_path)
    assert main(["load", str(path), "--quiet"]) == EXIT_OK
    for directory in (tmp_path / "from-env", tmp_path / "cqels-data"):
        with open_store(directory) as store:
            assert len(store) == 1


def test_cli_load_reports_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.ttl"
    bad.write_text(f'<{EX}a> <{EX}p> "1 .\n', encoding="utf-8")
    assert main(["load", str(bad), "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    assert "line 1" in capsys.readouterr().err
    assert main(["load", str(tmp_path / "missing.ttl"), "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    with open_store(tmp_path / "d") as store:
        assert len(store) == 0


@pytest.mark.parametrize("into", [None, EX + "target"])
@pytest.mark.parametrize("blank_graph", [False, True])
def test_a_dataset_load_into_a_store_holding_data_counts_exactly_what_it_added(store, tmp_path, into, blank_graph):
    # Only the graphs the first parse saw are counted (the whole store when a graph is a blank
    # node, which the loader may rename); the event must still be the exact set difference.
    store.update(f"INSERT DATA {{ <{EX}a> <{EX}p> 1 . GRAPH <{EX}g1> {{ <{EX}a> <{EX}p> 1 }} GRAPH <{EX}g3> {{ <{EX}z> <{EX}p> 9 }} }}")
    before = {(q.subject, q.predicate, q.object, q.graph_name) for q in store}
    extra = f"_:g {{ <{EX}b> <{EX}p> 5 }}\n" if blank_graph else ""
    data = tmp_path / "data.trig"
    data.write_text(f"<{EX}a> <{EX}p> 1, 2 .\n<{EX}g1> {{ <{EX}a> <{EX}p> 1, 3 }}\n<{EX}g2> {{ <{EX}c> <{EX}p> 4 }}\n{extra}")
    event = store.load(data, graph=into)
    after = {(q.subject, q.predicate, q.object, q.graph_name) for q in store}
    added: dict[str | None, int] = {}
    for *_, graph in after - before:
        added[graph_name(graph)] = added.get(graph_name(graph), 0) + 1
    assert {change.graph: (change.added, change.removed) for change in event.changes} == {
        graph: (count, 0) for graph, count in added.items()
    }
    assert EX + "g3" not in added
