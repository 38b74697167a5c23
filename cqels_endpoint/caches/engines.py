"""Cache engines: what computes the mappings of one static sub-pattern.

A cache engine takes a compiled ``plan.nodes.StaticCache`` (its sub-pattern and schema), the query
it belongs to and the static store, and returns the complete new rows of that cache. Two engines
must give identical caches: ``LocalCacheEngine`` evaluates the sub-pattern with pyoxigraph (the
oracle, and enough for small deployments); ``spark.job.SparkCacheEngine`` runs it as a Spark job.
The rebuild manager (``caches.rebuild``) decides when a cache is built; an engine only builds.

A build's rows are a list, or for a large Spark build a ``ParquetRows``: the rows stay in Parquet
files and are decoded a part at a time wherever they are read (installing, diffing a rebuild), so
the driver never holds them all as terms; the files are deleted with the last reference to it.
"""

from __future__ import annotations

import itertools
import shutil
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pyarrow.parquet as pq
import pyoxigraph as ox

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.aggregates import MEDIAN_IRI
from cqels_endpoint.algebra.to_sparql import needs_store_graphs, to_sparql
from cqels_endpoint.errors import PlanError
from cqels_endpoint.plan.nodes import StaticCache
from cqels_endpoint.runtime.aggregates import CUSTOM_AGGREGATES
from cqels_endpoint.runtime.encoding import decode_inline
from cqels_endpoint.runtime.functions.extensions import custom_functions
from cqels_endpoint.runtime.untracked import untrack_row, untrack_tuple
from cqels_endpoint.terms import IRI
from static_store import StaticStore

StaticSource = object
"""A ``static_store.StaticStore``, a ``pyoxigraph.Store``, or None (no static data)."""

CACHE_ENGINES = ("local", "spark")

# The key of an unbound value: below every int64, as Spark sorts nulls first.
NULL_KEY = -(1 << 64)


class ParquetRows:
    """The rows of a large cache build, kept in Parquet files and read in parts.

    ``directory`` holds ``rows/part-*.parquet``, int64 term-id columns (null: unbound) in file-name
    order, and ``terms/``, the N-Triples text of every dictionary id they use (inline ids decode
    on their own). When ``sorted_by_key``, the ids are the terms' ``caches.delta.term_key`` and the
    rows ascend by them (a rebuild then diffs against it by merging). ``len`` reads the files'
    footers only. Reading a part decodes that part; the driver holds the terms of ``terms/``
    (the result's distinct terms, not its rows) while it reads. The directory is removed when the
    object is collected (the last build or installed cache referring to it gone) or at exit.
    """

    def __init__(self, directory: str | Path, width: int, *, sorted_by_key: bool):
        self.directory = Path(directory)
        self.width = width
        self.sorted_by_key = sorted_by_key
        self._files = sorted((self.directory / "rows").glob("part-*.parquet"))
        self._len = sum(pq.ParquetFile(path).metadata.num_rows for path in self._files)
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.directory), True)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[tuple]:
        for part in self.chunks(10_000):
            yield from part

    def chunks(self, size: int) -> Iterator[list[tuple]]:
        """The rows as lists of at most ``size`` rows of terms."""
        for _keys, rows in self.keyed(size):
            yield rows

    def keyed(self, size: int) -> Iterator[tuple[list[tuple], list[tuple]]]:
        """``(keys, rows)`` per part of at most ``size`` rows: the id tuples and the decoded rows."""
        terms: dict[int, object] = {}
        for path in sorted((self.directory / "terms").glob("part-*.parquet")):
            table = pq.read_table(path)
            terms.update(zip(table.column("id").to_pylist(), parse_terms(table.column("term").to_pylist()), strict=True))

        def decode(term_id):
            if term_id is None:
                return None
            return decode_inline(term_id) if term_id < 0 else terms[term_id]

        for path in self._files:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=size):
                columns = [batch.column(i).to_pylist() for i in range(self.width)]
                keys = list(zip(*([NULL_KEY if v is None else v for v in column] for column in columns), strict=True))
                rows = list(zip(*(list(map(decode, column)) for column in columns), strict=True))
                yield keys, rows

    def close(self) -> None:
        """Removes the files now (reading afterwards fails)."""
        self._finalizer()


class RowChunks(Sequence):
    """The rows of a build kept by the rebuild manager, in tuples of ``size`` rows (the last fewer).

    A list of a million rows is one GC-tracked object whose million items every full collection of
    the cyclic collector visits (about 25 ms each here, as long as the rest of the process); a chunk
    of untracked rows is untracked as it is made (``runtime.untracked.untrack_tuple``), so these
    chunks cost the collector nothing. Left to CPython, the next young collection, on whichever
    thread (a push's), would walk the million rows of a new build's chunks to untrack them (20–40 ms).
    ``rows`` is read once, a chunk at a time, so a build made as an iterator is never a list.
    ``release`` frees the rows a chunk at a time (``caches.rebuild._free``).
    """

    def __init__(self, rows: Iterable[tuple], size: int = 10_000):
        self._size = size
        self._chunks: list[tuple] = []
        rows = iter(rows)
        while chunk := tuple(itertools.islice(rows, size)):
            self._chunks.append(untrack_tuple(chunk))
        self._len = sum(map(len, self._chunks))

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[tuple]:
        return itertools.chain.from_iterable(self._chunks)

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            rows: list[tuple] = []
            while start < stop:
                offset = start % self._size
                part = self._chunks[start // self._size][offset : offset + stop - start]
                rows.extend(part)
                start += len(part)
            return rows
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            msg = "row index out of range"
            raise IndexError(msg)
        return self._chunks[index // self._size][index % self._size]

    def release(self) -> None:
        """Empties it a chunk at a time, so that other threads get the GIL between two chunks."""
        while self._chunks:
            self._len -= len(self._chunks.pop())


Rows = Sequence[tuple] | ParquetRows
"""The rows of a build: tuples of pyoxigraph terms (None: unbound), in a ``RowChunks`` (pyoxigraph's
builds; any list once the rebuild manager keeps it), a list, or Parquet files."""


def parse_terms(texts: list[str], batch: int = 100_000) -> list:
    """The pyoxigraph terms written as ``texts`` (N-Triples), parsed as documents of ``batch``
    lines: one parser call per batch, not per term."""
    terms: list = []
    for start in range(0, len(texts), batch):
        document = "".join(f"<urn:x-cqels:s> <urn:x-cqels:p> {text} .\n" for text in texts[start : start + batch])
        terms.extend(quad.object for quad in ox.parse(document, format=ox.RdfFormat.N_TRIPLES))
    return terms


@dataclass(frozen=True)
class CacheBuild:
    """The complete content of one cache as one engine computed it.

    ``rows``: pyoxigraph terms, or None for unbound, aligned with the cache's schema (a bag), in a
    ``RowChunks`` (a local build), a list or, for a large Spark build, a ``ParquetRows``.
    ``notes``: how parts of it were computed, shown by ``explain`` (e.g. "FILTER by a Python UDF").
    """

    rows: Rows
    engine: str
    notes: tuple[str, ...] = ()


class CacheEngine(Protocol):
    """Computes the rows of a static cache; ``build`` raises on failure and never returns part of a cache.

    ``close()`` releases what the engine holds (the Spark engine's session); the ``Engine`` calls
    it on close when it made the cache engine itself from a name (``spark.cache_engine``).
    """

    name: str

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild: ...
    def close(self) -> None: ...


class LocalCacheEngine:
    """Evaluates the cache's SELECT (``plan.caches.cache_sparql``) with pyoxigraph on the driver."""

    name = "local"

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild:
        # cache.sparql already carries the query's FROM/FROM NAMED (written by the compiler).
        return CacheBuild(compute_cache(cache, static), self.name, ("evaluated by pyoxigraph on the driver",))

    def close(self) -> None:
        """Nothing to release: pyoxigraph evaluates in this process."""


def static_solutions(static: StaticSource, text: str) -> Iterator[ox.QuerySolution]:
    """The solutions of the SELECT ``text`` over the static data."""
    store = ox.Store() if static is None else static
    # The extension functions (runtime.functions.extensions) a FILTER or BIND of the cache may call.
    options: dict = {"custom_functions": custom_functions()}
    if MEDIAN_IRI in text:
        # MEDIAN is a pyoxigraph custom aggregate in to_sparql text, which a StaticStore's one-shot
        # query cannot take: evaluate on a pyoxigraph copy of its quads instead.
        if not isinstance(store, ox.Store):
            copy = ox.Store()
            copy.extend(iter(store))
            store = copy
        options["custom_aggregate_functions"] = CUSTOM_AGGREGATES
    # A StaticStore's one-shot query serialises the whole result in one call holding the GIL (half
    # a second for a million rows, stalling every push meanwhile); its solutions come one at a time.
    solve = store.solutions if isinstance(store, StaticStore) else store.query
    try:
        yield from solve(text, **options)
    except (SyntaxError, OSError, RuntimeError, ValueError) as error:
        msg = f"the static sub-pattern query failed: {error}\n  {text}"
        raise PlanError(msg) from error


def compute_cache(cache: StaticCache, static: StaticSource) -> RowChunks:
    """The mappings of ``cache`` as tuples of pyoxigraph terms (None for unbound) aligned with its schema.

    A cache whose text depends on the store's named graphs (``to_sparql.needs_store_graphs``: a
    ``GRAPH ?g`` pyoxigraph must evaluate graph by graph) is written again for the graphs ``static``
    has now.
    """
    text = cache.sparql
    if cache.select is not None and needs_store_graphs(cache.select):
        text = to_sparql(cache.select, store_graphs=store_graph_iris(static))
    # Each row leaves the cyclic collector as it is made (runtime.untracked): a cache is long-lived,
    # and a million tracked rows would make every full collection, during this build and after, a
    # pause of the whole process. Chunked as they come: a list of a million rows would be walked by
    # each collection of its generation while the build runs.
    return RowChunks(untrack_row(tuple(solution[name] for name in cache.schema)) for solution in static_solutions(static, text))


def store_graph_iris(store: StaticSource) -> tuple[IRI, ...] | None:
    """The named graphs of ``store`` as IRIs, sorted; None when one is a blank node, which query text
    cannot name (``to_sparql`` then keeps pyoxigraph's own ``GRAPH ?g``)."""
    if store is None:
        return ()
    names = [g if isinstance(g, str) else g.value if isinstance(g, ox.NamedNode) else None for g in store.named_graphs()]
    if any(name is None or name.startswith("_:") for name in names):
        return None
    return tuple(IRI(name) for name in sorted(names))

