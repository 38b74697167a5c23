"""The snapshot a Spark cache build reads: the graphs of one static sub-pattern, encoded as Parquet.

``export_snapshot`` reads the quads of the graphs the sub-pattern's dataset reads from one iteration
of the store (pyoxigraph iterates a consistent snapshot) and writes two Parquet files with pyarrow
(the quads in row groups of ``EXPORT_BATCH``, so the driver holds the dictionary, not the quads):

- ``quads.parquet``: int64 columns ``s, p, o, g``; ``g`` is 0 for the default graph. With ``FROM``
  clauses the default graph is the union of the ``FROM`` graphs' triples as pyoxigraph reads it (a
  triple in two of them counts twice, where SPARQL's RDF merge would count it once: the local cache
  engine and the recompute oracle are pyoxigraph, and caches must agree with them), with ``FROM
  NAMED`` the named graphs are exactly those listed (SPARQL §13.2).
- ``dictionary.parquet``: ``id`` (int64) → ``term`` (N-Triples text) for every dictionary id.

The dictionary belongs to the snapshot (``SnapshotDictionary``), and a build returns pyoxigraph
terms. Literals that ``runtime.encoding`` inlines keep their inline (negative) id and have no
dictionary row; every other term gets a positive 62-bit hash of itself (``caches.delta.term_key``),
so 0 is free for the default graph and a term has the same id in every snapshot of this process:
the Parquet rows of two builds then sort alike, and a rebuild diffs them by merging
(``caches.delta.MergedDelta``). A term whose hash another term of the snapshot already has takes
the next free id, and the dictionary is no longer ``stable`` (its rows no longer sort by key).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.caches.delta import KEY_MASK, term_key
from cqels_endpoint.caches.engines import parse_terms
from cqels_endpoint.caches.graphs import graphs_read
from cqels_endpoint.runtime.encoding import decode_inline, inline_id
from static_store.convert import graph_name

DEFAULT_GRAPH = 0
EXPORT_BATCH = 1_000_000  # quads per Parquet row group written


class SnapshotDictionary:
    """Term ↔ int64 id for one snapshot: inline ids for inlinable literals, ``term_key`` hashes
    otherwise (the next free id after a collision, which clears ``stable``).

    Not ``runtime.encoding.TermDictionary``: that one numbers serially from 0 (the default graph's
    id here) and counts references, which a snapshot thrown away after one build has no use for.
    """

    def __init__(self) -> None:
        self._ids: dict[object, int] = {}
        self._terms: dict[int, object] = {}
        self._order: list[int] = []  # ids in the order their terms came (``entries``)
        self.stable = True

    def encode(self, term) -> int:
        term_id = self._ids.get(term)
        if term_id is not None:
            return term_id
        term_id = term_key(term)
        if term_id < 0:
            return term_id
        while term_id in self._terms:
            self.stable = False
            term_id = term_id % KEY_MASK + 1
        self._ids[term] = term_id
        self._terms[term_id] = term
        self._order.append(term_id)
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
        """The dictionary rows from the ``start``-th term encoded (from 1) on: ids and N-Triples texts."""
        ids = self._order[start - 1 :]
        return ids, [str(self._terms[i]) for i in ids]

    def __len__(self) -> int:
        return len(self._order)


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


def work_directory(data_dir: str | Path | None, folder: str, prefix: str) -> Path:
    """A new directory for one build's files: under ``data_dir/folder`` (a temporary directory
    without ``data_dir``), named after this process, so that the leftovers of a process killed in
    the middle of a build can be told from the files of a live one (``remove_leftovers``)."""
    parent = None
    if data_dir is not None:
        parent = Path(data_dir) / folder
        parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(parent, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}-{os.getpid()}-", dir=parent))


def remove_leftovers(parent: Path, prefix: str) -> list[Path]:
    """Removes the ``work_directory``s in ``parent`` whose process is gone; returns them."""
    removed = []
    for path in parent.glob(f"{prefix}-*-*"):
        pid = path.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def export_snapshot(static, pattern: n.Pattern, query: n.AlgebraQuery, data_dir: str | Path | None = None) -> Snapshot:
    """Write the graphs ``pattern`` reads (within ``query``'s dataset) from ``static`` as Parquet."""
    reads = graphs_read(pattern, query)
    directory = work_directory(data_dir, "spark-snapshots", "snapshot")
    dictionary = SnapshotDictionary()
    encode = dictionary.encode
    columns: tuple[list[int], ...] = ([], [], [], [])
    s_col, p_col, o_col, g_col = columns
    named_seen: dict[int, None] = {}
    quads_path = directory / "quads.parquet"
    int64 = pa.int64()
    writer = pq.ParquetWriter(quads_path, pa.schema([(name, int64) for name in "spog"]))
    count = 0

    def flush() -> None:
        writer.write_table(pa.table({name: pa.array(col, int64) for name, col in zip("spog", columns, strict=True)}))
        for col in columns:
            col.clear()

    def add(triple: tuple[int, int, int], g: int) -> None:
        nonlocal count
        s_col.append(triple[0])
        p_col.append(triple[1])
        o_col.append(triple[2])
        g_col.append(g)
        count += 1
        if len(s_col) >= EXPORT_BATCH:
            flush()

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

    flush()
    writer.close()
    dictionary_path = directory / "dictionary.parquet"
    snapshot = Snapshot(directory, quads_path, dictionary_path, dictionary, list(named_seen), count)
    write_dictionary(dictionary, dictionary_path)
    return snapshot


def write_dictionary(dictionary: SnapshotDictionary, path: Path, start: int = 1) -> None:
    ids, texts = dictionary.entries(start)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "term": pa.array(texts, pa.string())}), path)


def parse_term(text: str):
    """The pyoxigraph term written as ``text`` (N-Triples), as the dictionary stores it."""
    return parse_terms([text])[0]
