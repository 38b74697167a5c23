"""The snapshot a Spark cache build reads: the graphs of one static sub-pattern, encoded as Parquet.

``export_snapshot`` reads the quads of the graphs the sub-pattern's dataset reads from one iteration
of the store (pyoxigraph iterates a consistent snapshot) and writes two Parquet files with pyarrow:

- ``quads.parquet``: int64 columns ``s, p, o, g``; ``g`` is 0 for the default graph. With ``FROM``
  clauses the default graph is the union of the ``FROM`` graphs' triples as pyoxigraph reads it (a
  triple in two of them counts twice, where SPARQL's RDF merge would count it once: the local cache
  engine and the recompute oracle are pyoxigraph, and caches must agree with them), with ``FROM
  NAMED`` the named graphs are exactly those listed (SPARQL §13.2).
- ``dictionary.parquet``: ``id`` (int64) → ``term`` (N-Triples text) for every dictionary id.

The dictionary is local to the snapshot (``SnapshotDictionary``): ids are stable within it and
mean nothing outside it, which is all a cache build needs, since the build returns pyoxigraph
terms. Literals that ``runtime.encoding`` inlines keep their inline (negative) id and have no
dictionary row; every other term gets a serial id from 1, so 0 is free for the default graph.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.caches.graphs import graphs_read
from cqels_endpoint.runtime.encoding import decode_inline, inline_id
from cqels_endpoint.static_store.convert import graph_name

DEFAULT_GRAPH = 0


class SnapshotDictionary:
    """Term ↔ int64 id for one snapshot: inline ids for inlinable literals, serials from 1 otherwise.

    Not ``runtime.encoding.TermDictionary``: that one numbers from 0 (the default graph's id here)
    and counts references, which a snapshot thrown away after one build has no use for.
    """

    def __init__(self) -> None:
        self._ids: dict[object, int] = {}
        self._terms: list[object] = [None]  # serial 0 is the default graph, never a term

    def encode(self, term) -> int:
        term_id = self._ids.get(term)
        if term_id is not None:
            return term_id
        if type(term) is ox.Literal:
            inline = inline_id(term)
            if inline is not None:
                return inline
        term_id = self._ids[term] = len(self._terms)
        self._terms.append(term)
        return term_id

    def lookup(self, term) -> int | None:
        """The id of ``term`` if the snapshot has it (inline literals always do)."""
        if type(term) is ox.Literal:
            inline = inline_id(term)
            if inline is not None:
                return inline
        return self._ids.get(term)

    def decode(self, term_id: int):
        return decode_inline(term_id) if term_id < 0 else self._terms[term_id]

    def entries(self, start: int = 1) -> tuple[list[int], list[str]]:
        """The dictionary rows from serial ``start`` on: ids and N-Triples texts."""
        ids = list(range(start, len(self._terms)))
        return ids, [str(self._terms[i]) for i in ids]

    def __len__(self) -> int:
        return len(self._terms) - 1


@dataclass
class Snapshot:
    """The exported graphs of one build: Parquet paths, the dictionary, the named graphs' ids."""

    directory: Path
    quads_path: Path
    dictionary_path: Path
    dictionary: SnapshotDictionary
    named_graph_ids: list[int] = field(default_factory=list)
    quad_count: int = 0

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def export_snapshot(static, pattern: n.Pattern, query: n.AlgebraQuery, data_dir: str | Path | None = None) -> Snapshot:
    """Write the graphs ``pattern`` reads (within ``query``'s dataset) from ``static`` as Parquet."""
    reads = graphs_read(pattern, query)
    parent = None
    if data_dir is not None:
        parent = Path(data_dir) / "spark-snapshots"
        parent.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="snapshot-", dir=parent))
    dictionary = SnapshotDictionary()
    encode = dictionary.encode
    columns: tuple[list[int], ...] = ([], [], [], [])
    s_col, p_col, o_col, g_col = columns
    named_seen: dict[int, None] = {}

    def add(triple: tuple[int, int, int], g: int) -> None:
        s_col.append(triple[0])
        p_col.append(triple[1])
        o_col.append(triple[2])
        g_col.append(g)

    for quad in () if static is None else iter(static):
        graph = quad.graph_name
        key = graph_name(graph)  # as change events and dataset clauses name graphs
        to_default = reads.in_default(key)
        to_named = reads.in_named(key)
        if reads.all_named and reads.is_named(key):
            named_seen.setdefault(encode(graph), None)
        if not (to_default or to_named):
            continue
        triple = (encode(quad.subject), encode(quad.predicate), encode(quad.object))
        if to_default:
            # Several FROM graphs make a default graph of each graph's triples, a triple held by two
            # graphs counted twice, as pyoxigraph (the local cache engine and the recompute oracle)
            # evaluates them; SPARQL's RDF merge would keep it once.
            add(triple, DEFAULT_GRAPH)
        if to_named:
            add(triple, encode(graph))

    quads_path = directory / "quads.parquet"
    int64 = pa.int64()
    pq.write_table(
        pa.table({name: pa.array(col, int64) for name, col in zip("spog", columns, strict=True)}),
        quads_path,
    )
    dictionary_path = directory / "dictionary.parquet"
    snapshot = Snapshot(directory, quads_path, dictionary_path, dictionary, list(named_seen), len(s_col))
    write_dictionary(dictionary, dictionary_path)
    return snapshot


def write_dictionary(dictionary: SnapshotDictionary, path: Path, start: int = 1) -> None:
    ids, texts = dictionary.entries(start)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "term": pa.array(texts, pa.string())}), path)


def parse_term(text: str):
    """The pyoxigraph term written as ``text`` (N-Triples), as the dictionary stores it."""
    quad = next(ox.parse(f"<urn:x-cqels:s> <urn:x-cqels:p> {text} .", format=ox.RdfFormat.N_TRIPLES))
    return quad.object
